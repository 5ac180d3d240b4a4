// What a CUDA kernel sees of its device while it runs: the stream of the running partition, the
// library handles bound to that stream, scratch workspace and the partition's precision.
// Kernels enqueue work on `stream` and never synchronise it (no host syncs inside a GPU
// partition); values they read on the host arrive as host tensors (KernelDef::host_inputs).
// Host-only header (g++).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_check.h"
#include "runtime/kernel.h"

namespace switchyard::cuda {

/// Arithmetic precision of a partition (--precision). Fp16/Bf16 retype the partition's float32
/// values; Tf32 keeps float32 storage and lets matrix units round operands to tf32.
using backends::Precision;  // the seam's (backends/backend.h)
using backends::precision_name;

/// A CUDA event as the seam's Event.
class CudaEvent : public runtime::Event {
 public:
  explicit CudaEvent(cudaStream_t stream);  ///< recorded on `stream`
  ~CudaEvent() override;
  void synchronize() const override;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// A CUDA stream as the seam's Stream: record and wait.
struct CudaStream : runtime::Stream {
  cudaStream_t stream = nullptr;
  std::unique_ptr<runtime::Event> record() override;
  void wait(const runtime::Event& event) override;
};

/// One stream with its own library handles and workspace (a slot of the backend's pool).
struct CudaRunContext : CudaStream {
  int device = 0;
  int stream_index = 0;  ///< which of the device's streams (StreamSlot::index): the trace's track
  cublasLtHandle_t cublaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;  ///< already bound to `stream`
  void* workspace = nullptr;      ///< scratch for cuBLASLt / cuDNN, `workspace_bytes` long
  size_t workspace_bytes = 0;
  Precision precision = Precision::Fp32;
  /// True while the stream is being captured into a CUDA graph: no allocation-order surprises,
  /// no syncs (a kernel that must sync throws, and the partition runs uncaptured).
  bool capturing = false;
  /// The partition's error word in device memory: kernels that find bad data they cannot
  /// report on the host without a sync (an out-of-range Gather index) store `error_code` there
  /// (atomicCAS from 0); the partition reads it once its work is done and fails naming the node.
  int32_t* device_error = nullptr;
  /// The running step's code (its index + 1), set by the partition before each kernel. A
  /// kernel stores it as is for an index out of range, or through fault_code() for other faults.
  int32_t error_code = 0;
  /// Host buffers that queued copies still read: released after the partition's final sync.
  std::vector<std::shared_ptr<void>>* pending = nullptr;
  /// While capturing: buffers a captured graph reads at every replay (kept with the graph).
  std::vector<std::shared_ptr<void>>* keepalive = nullptr;
};

/// What a kernel found in device data, kept in the error word's top byte (the step's code is in
/// the low 24 bits); the partition's message names the node and says which.
enum class KernelFault : int32_t { IndexOutOfRange = 0, IntegerDivisionByZero = 1 };
constexpr int32_t kFaultShift = 24;
inline int32_t fault_code(int32_t step_code, KernelFault fault) {
  return step_code | (static_cast<int32_t>(fault) << kFaultShift);
}

/// The running partition's context; throws Internal when the kernel runs outside a CUDA
/// partition.
CudaRunContext& run_context(const runtime::KernelContext& ctx);
inline cudaStream_t stream_of(const runtime::KernelContext& ctx) { return run_context(ctx).stream; }

/// Whether TF32 tensor-core math is allowed for float32 matrix work.
inline bool allow_tf32(const runtime::KernelContext& ctx) {
  return run_context(ctx).precision == Precision::Tf32;
}

/// Integer values of input `i` (a host input), as int64. Throws InvalidArgument naming the node
/// if the input is not an integer tensor. A device tensor is read back with a sync (only when
/// a value could not be routed to the host; never while capturing).
std::vector<int64_t> read_ints(const runtime::KernelContext& ctx, size_t i);
/// Input `i` in host memory: the tensor itself when it is there (a host input), else read back
/// with a sync (never while capturing).
ir::Tensor host_copy(const runtime::KernelContext& ctx, size_t i);
/// Float values of input `i` (a host input: Resize scales).
std::vector<double> read_doubles(const runtime::KernelContext& ctx, size_t i);

/// Copies host data into device memory on the partition's stream (for small per-launch
/// parameter arrays such as shapes and strides); the returned block stays valid until the
/// stream has passed this point, which the caller ensures by holding it until run() returns.
std::shared_ptr<void> upload(runtime::KernelContext& ctx, const void* data, size_t bytes);

}  // namespace switchyard::cuda
