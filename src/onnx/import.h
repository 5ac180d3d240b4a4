// The ONNX importer: ModelProto files → ir::Graph. The only code of the project that sees
// protobuf. Every error is a switchyard::Error whose message starts with "model '<file>': " and
// then names the graph, node, initializer or value involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "ir/type.h"
#include "switchyard/error.hpp"

namespace switchyard::onnx_import {

/// The newest default-domain opset whose semantics the importer knows; every node is rewritten
/// to it (see normalize_opsets). Models that import a newer default opset are refused.
inline constexpr int64_t kLatestOpset = 21;

/// Limits applied while importing untrusted files.
/// Where the bytes of one external tensor are (ImportOptions::external_data).
struct ExternalBytes {
  std::shared_ptr<void> owner;  ///< keeps `data` alive
  void* data = nullptr;
};

/// Resolves external tensor data by the model's `location`, `offset` and `length` (parsed and
/// non-negative; `length` is the tensor's byte size). Returns where the bytes are, or throws
/// InvalidModel saying why they are not there (the caller prefixes the tensor's name).
using ExternalDataResolver =
    std::function<ExternalBytes(const std::string& location, uint64_t offset, uint64_t length)>;

struct ImportOptions {
  /// Deepest allowed nesting of subgraphs (If/Loop/Scan bodies); the main graph is depth 0.
  /// Values above 1000 count as 1000, which bounds the parser's recursion.
  int max_subgraph_depth = 64;
  /// Set: external tensor data comes from here (a saved executable's weights, mapped from its
  /// file) instead of files beside the model, and the tensors wrap those bytes without a copy.
  ExternalDataResolver external_data;
};

/// What the model file says about itself.
struct ModelInfo {
  int64_t ir_version = 0;
  /// Imported opsets, domain → version; the default domain is "" ("ai.onnx" is folded into it).
  std::map<std::string, int64_t> opsets;
  /// producer_name, followed by a space and producer_version when that is present.
  std::string producer;
  /// import_model: XXH3-64 of the model file's bytes (0 for a model imported from memory).
  uint64_t file_hash = 0;
  /// The external data files the model's tensors name (locations relative to its folder),
  /// each once, in first-use order.
  std::vector<std::string> external_files;
};

/// Parses the ONNX model file at `path` into a verified, topologically sorted graph whose nodes
/// all carry opset-21 semantics. External data is resolved relative to the file's folder and
/// may not leave it. Fills `info` when given. Throws InvalidArgument when the file cannot be
/// read, InvalidModel for malformed content, Unsupported for valid constructs this build does
/// not handle (custom domains, sparse tensors, map types, opsets newer than kLatestOpset).
std::unique_ptr<ir::Graph> import_model(const std::string& path, ModelInfo* info = nullptr,
                                        const ImportOptions& options = {});

/// Same as import_model for a serialized ModelProto in memory. `base_dir` resolves external data
/// ("" refuses any external data); `what` names the model in error messages.
std::unique_ptr<ir::Graph> import_model_from_bytes(const void* data, size_t size,
                                                   const std::string& base_dir,
                                                   const std::string& what,
                                                   ModelInfo* info = nullptr,
                                                   const ImportOptions& options = {});

/// Reads a file holding one serialized TensorProto (the ONNX backend tests' input_0.pb and
/// output_0.pb). External data is resolved relative to the file's folder. Throws
/// InvalidArgument when the file cannot be read, InvalidModel when it is malformed.
ir::Tensor read_tensor_proto_file(const std::string& path);

/// Reads a test-data file holding a TensorProto, SequenceProto or OptionalProto; which one is
/// decided by `expected` (Tensor or Unknown: TensorProto; Sequence: SequenceProto; Optional:
/// OptionalProto). An optional without a value gives a Datum of kind Empty. Throws like
/// read_tensor_proto_file, and Unsupported for nested sequences and maps.
ir::Datum read_value_file(const std::string& path, const ir::Type& expected);

/// Rewrites every default-domain node of `graph` and of its subgraphs from opset
/// `default_opset` to the semantics of kLatestOpset: attributes that became inputs turn into
/// constant inputs, renamed or removed ops are replaced (Upsample → Resize, Scatter →
/// ScatterElements), legacy broadcasting and 2-D-coercing softmax are made explicit with extra
/// nodes. Output value names and the names of rewritten nodes are kept. Throws InvalidModel
/// for malformed legacy attributes and Unsupported for legacy forms with no opset-21 equivalent.
void normalize_opsets(ir::Graph& graph, int64_t default_opset);

}  // namespace switchyard::onnx_import
