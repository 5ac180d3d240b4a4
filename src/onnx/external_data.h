// Path-safe reading of ONNX external tensor data (TensorProto.data_location == EXTERNAL).
// Internal to src/onnx.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

namespace switchyard::onnx_import::detail {

/// A tensor's external data reference, parsed: `location`, and `offset` / `length` as
/// non-negative integers (offset 0 when absent; length, when present, must equal
/// `expected_bytes`). Throws InvalidModel with `context`.
struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  uint64_t length = 0;
};
ExternalRef parse_external_ref(const onnx::TensorProto& tensor, size_t expected_bytes,
                               const std::string& context);

/// An opened, validated region of an external data file. Construction checks everything that
/// can be checked without reading: the location stays inside `base_dir` (no absolute path, no
/// `..` escape, no symlink in any component below `base_dir`), the file is a regular file, and
/// offset/length lie within it and cover exactly `expected_bytes`. Throws InvalidModel with
/// `context` (e.g. "initializer 'w'") and the path in the message.
class ExternalRegion {
 public:
  ExternalRegion(const onnx::TensorProto& tensor, const std::string& base_dir,
                 size_t expected_bytes, const std::string& context);
  ~ExternalRegion();
  ExternalRegion(const ExternalRegion&) = delete;
  ExternalRegion& operator=(const ExternalRegion&) = delete;

  /// Reads the region into `dst` (expected_bytes bytes). Throws InvalidModel on a short read.
  void read_into(void* dst) const;

 private:
  int fd_ = -1;
  uint64_t offset_ = 0;
  size_t bytes_ = 0;
  std::string path_;
  std::string context_;
};

}  // namespace switchyard::onnx_import::detail
