// Helpers of the launch-level CUDA kernel tests (tests/backends/cuda/*_kernel_test.cc): device
// buffers filled from and read back into host tensors, and the skip where no CUDA device is
// usable. These tests call a kernel family's launch functions (src/backends/cuda/kernels/
// <family>_impl.h) directly, built with its device code, for forms no graph reaches yet and for
// the launch shapes a kernel chooses between.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/op_test_util.h"

namespace switchyard::testing {

/// "" when a CUDA device is usable, else why not.
inline std::string cuda_device_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess)
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status);
  if (count == 0) return "no CUDA device";
  return "";
}

/// Throws naming `what` when `status` is not cudaSuccess (GoogleTest reports the exception).
inline void check_cuda(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess)
    throw std::runtime_error(what + ": " + cudaGetErrorName(status) + " (" +
                             cudaGetErrorString(status) + ")");
}

/// Device memory for `bytes` bytes starting `offset` bytes into its allocation (an offset that
/// is not a multiple of 16 makes the kernels take their unaligned path). Every byte starts as
/// 0xFF (NaN in every float type), and kGuardBytes after the buffer and the offset's bytes
/// before it must keep it: no kernel may write there.
class DeviceBuffer {
 public:
  static constexpr size_t kGuardBytes = 256;

  explicit DeviceBuffer(size_t bytes, size_t offset = 0) : bytes_(bytes), offset_(offset) {
    check_cuda(cudaMalloc(&base_, offset + bytes + kGuardBytes), "cudaMalloc");
    check_cuda(cudaMemset(base_, 0xFF, offset + bytes + kGuardBytes), "poison");
  }
  /// A copy of t's bytes.
  explicit DeviceBuffer(const ir::Tensor& t, size_t offset = 0) : DeviceBuffer(t.nbytes(), offset) {
    check_cuda(cudaMemcpy(get(), t.raw(), t.nbytes(), cudaMemcpyHostToDevice), "upload");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(base_); }

  void* get() const { return static_cast<char*>(base_) + offset_; }
  /// The buffer's bytes as a host tensor of `dtype` and `shape`.
  ir::Tensor download(ir::DType dtype, std::vector<int64_t> shape) const {
    ir::Tensor t(dtype, std::move(shape));
    if (t.nbytes() > bytes_) throw std::runtime_error("download larger than the buffer");
    check_cuda(cudaMemcpy(t.raw(), get(), t.nbytes(), cudaMemcpyDeviceToHost), "download");
    return t;
  }
  /// Whether the bytes before and after the buffer still hold their 0xFF.
  bool guards_intact() const {
    std::vector<unsigned char> before(offset_), after(kGuardBytes);
    if (offset_ > 0)
      check_cuda(cudaMemcpy(before.data(), base_, offset_, cudaMemcpyDeviceToHost), "guard");
    check_cuda(cudaMemcpy(after.data(), static_cast<char*>(get()) + bytes_, kGuardBytes,
                          cudaMemcpyDeviceToHost),
               "guard");
    for (unsigned char b : before)
      if (b != 0xFF) return false;
    for (unsigned char b : after)
      if (b != 0xFF) return false;
    return true;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_;
  size_t offset_;
};

/// Waits for the launches so far and throws on an error they raised.
inline void sync_device() { check_cuda(cudaDeviceSynchronize(), "kernel"); }

struct Tolerance {
  double rtol;
  double atol;
};

/// One rounding of the storage type, as the op harness's elementwise cases allow
/// (tests/harness/cases/elementwise.cc): for kernels that compute in float (double for float64)
/// and round once.
inline Tolerance elementwise_tolerance(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::Float16:
      return {2e-3, 2e-3};
    case ir::DType::BFloat16:
      return {1.6e-2, 1e-2};
    case ir::DType::Float64:
      return {1e-12, 1e-12};
    default:
      return {1e-5, 1e-6};
  }
}

}  // namespace switchyard::testing

/// First statement of every test that launches a kernel.
#define SY_SKIP_WITHOUT_CUDA_DEVICE()                                                      \
  do {                                                                                     \
    std::string sy_why_ = ::switchyard::testing::cuda_device_unavailable_reason();         \
    if (!sy_why_.empty()) GTEST_SKIP() << "no GPU, CUDA kernel test skipped: " << sy_why_; \
  } while (0)
