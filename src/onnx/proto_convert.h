// Conversions from ONNX protobuf messages to ir values, shared by the importer and the
// test-data readers. Internal to src/onnx.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include <google/protobuf/message_lite.h>
#include <onnx/onnx_pb.h>

#include "ir/check.h"
#include "ir/dtype.h"
#include "ir/tensor.h"
#include "ir/type.h"
#include "onnx/import.h"

namespace switchyard::onnx_import::detail {

/// Maps a TensorProto.DataType number to a DType. Throws Unsupported, prefixed by `context`,
/// for numbers this build does not know (float8, int4, ... from newer ONNX versions).
ir::DType dtype_from_proto(int32_t data_type, const std::string& context);

/// Converts a TensorProto into a host tensor. Dims and the byte counts of raw_data, typed
/// fields and external data are all checked, overflow-safe, before anything is allocated.
/// External data is read below `base_dir` ("" refuses it). Errors start with `context`
/// (e.g. "initializer 'w'").
/// With `external` set, external data comes from it instead of files below `base_dir`.
ir::Tensor tensor_from_proto(const onnx::TensorProto& tensor, const std::string& base_dir,
                             const std::string& context,
                             const ExternalDataResolver* external = nullptr);

/// Converts a TypeProto (tensor, sequence, optional; unset = Unknown). Map and sparse types
/// throw Unsupported prefixed by `context`.
ir::Type type_from_proto(const onnx::TypeProto& type, const std::string& context);

/// Parses `message` from `size` bytes allowing `recursion_limit` levels of nested messages.
/// Returns false when the bytes are not a complete, valid message.
bool parse_proto(google::protobuf::MessageLite& message, const void* data, size_t size,
                 int recursion_limit);

/// Reads a whole regular file. Throws InvalidArgument naming `what` (e.g. "model 'x.onnx'").
std::string read_file(const std::string& path, const std::string& what);

/// Parses `message` straight from the regular file at `path`, read in chunks (the file's bytes
/// are never all in memory beside the parsed message), and stores the XXH3-64 hash of the
/// file's bytes in `*hash`. Returns false when they are not one complete, valid message (a
/// file over 2 GiB included); throws InvalidArgument naming `what` when the file cannot be
/// opened or read.
bool parse_proto_file(google::protobuf::MessageLite& message, const std::string& path,
                      const std::string& what, int recursion_limit, uint64_t* hash);

/// The folder that holds `path` ("." for a bare file name).
std::string parent_folder(const std::string& path);

/// Runs `body`; a switchyard::Error it throws is rethrown with the same code and "`prefix`: "
/// in front of its message.
template <typename F>
auto with_context(const std::string& prefix, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& e) {
    throw Error(e.code(), prefix + ": " + e.message());
  }
}

}  // namespace switchyard::onnx_import::detail
