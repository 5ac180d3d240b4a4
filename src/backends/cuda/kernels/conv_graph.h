// A small C++ layer over cuDNN's backend graph API (cudnnBackend*): an owning descriptor,
// tensor descriptors, operation graphs and the engine search that turns an operation graph into
// a finalized execution plan. Building a plan may legitimately fail (an engine or a graph
// pattern cuDNN does not support); those failures throw CudnnGraphError carrying cuDNN's
// reason, which the caller collects and reports — they never leave the kernel as such.
// Host-only header (g++).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace switchyard::cuda {

/// A cuDNN backend call that failed while building a graph or a plan; the message names the
/// step and carries cuDNN's status and last error text.
class CudnnGraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// "CUDNN_STATUS_NOT_SUPPORTED (cuDNN's last error message)".
std::string cudnn_status_text(cudnnStatus_t status);

/// An owning cudnnBackendDescriptor_t (move-only). Setters and finalize() throw
/// CudnnGraphError naming `what` on a failed status.
class CudnnDescriptor {
 public:
  CudnnDescriptor() = default;
  explicit CudnnDescriptor(cudnnBackendDescriptorType_t type);
  ~CudnnDescriptor();
  CudnnDescriptor(CudnnDescriptor&& other) noexcept : desc_(other.desc_) { other.desc_ = nullptr; }
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  explicit operator bool() const { return desc_ != nullptr; }

  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
           const void* values, const char* what);
  void set_int64(cudnnBackendAttributeName_t name, int64_t value, const char* what);
  void set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values,
                  const char* what);
  void set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value, const char* what);
  void set_descriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& value,
                      const char* what);
  void finalize(const char* what);

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

/// A finalized tensor descriptor: `dims` in the logical (N, C, spatial...) order with the
/// physical `strides` of the chosen layout, in elements.
CudnnDescriptor make_tensor_descriptor(int64_t uid, cudnnDataType_t dtype,
                                       const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& strides, int64_t alignment,
                                       bool is_virtual);

/// A finalized operation graph of `ops` for `handle`.
CudnnDescriptor make_operation_graph(cudnnHandle_t handle,
                                     const std::vector<const CudnnDescriptor*>& ops);

/// A finalized execution plan and what it needs to run.
struct ExecutionPlan {
  CudnnDescriptor plan;
  CudnnDescriptor engine_config;  ///< kept alive with the plan that was made from it
  int64_t workspace_bytes = 0;
  int64_t engine_index = -1;  ///< cuDNN's global engine index, for messages
};

/// Asks cuDNN's heuristics (mode A, then the fallback list) for engine configurations of
/// `graph` and returns the first that finalizes into a plan for `handle`, skipping engines
/// that carry any of `excluded_notes` and plans that need more than `max_workspace_bytes`.
/// Returns nullopt when none does; `failures` then gets one line per reason (heuristics
/// errors, skipped engines, finalize statuses).
std::optional<ExecutionPlan> find_execution_plan(
    cudnnHandle_t handle, const CudnnDescriptor& graph,
    const std::vector<cudnnBackendNumericalNote_t>& excluded_notes, int64_t max_workspace_bytes,
    std::vector<std::string>& failures);

}  // namespace switchyard::cuda
