// One way to turn every CUDA runtime, cuBLAS(Lt) and cuDNN status into a switchyard::Error:
//
//   SY_CUDA_CHECK(cudaMemcpyAsync(...));
//   SY_CUDA_CHECK(cublasLtMatmul(...));
//   SY_CUDA_CHECK(cudnnBackendExecute(...));
//   SY_CUDA_CHECK(launch_softmax(...));   // our launchers return cudaGetLastError()
//
// Out-of-memory statuses become ErrorCode::OutOfMemory. A sticky device fault (illegal address,
// launch failure, ...) becomes ErrorCode::DeviceLost and marks the current device lost: every
// later use of that device fails fast with DeviceLost while other devices keep working.
// Host-only header (g++); .cu files do not include it.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace switchyard::cuda {

[[noreturn]] void throw_status(cudaError_t status, const char* expr, const char* file, int line);
[[noreturn]] void throw_status(cublasStatus_t status, const char* expr, const char* file, int line);
[[noreturn]] void throw_status(cudnnStatus_t status, const char* expr, const char* file, int line);

inline bool failed(cudaError_t s) { return s != cudaSuccess; }
inline bool failed(cublasStatus_t s) { return s != CUBLAS_STATUS_SUCCESS; }
inline bool failed(cudnnStatus_t s) { return s != CUDNN_STATUS_SUCCESS; }

/// Whether `device` had a sticky fault (then nothing more may run there).
bool device_lost(int device);
/// Throws DeviceLost when `device` had a sticky fault.
void check_device_alive(int device);

}  // namespace switchyard::cuda

#define SY_CUDA_CHECK(expr)                                                         \
  do {                                                                              \
    auto sy_cuda_status_ = (expr);                                                  \
    if (::switchyard::cuda::failed(sy_cuda_status_))                                \
      ::switchyard::cuda::throw_status(sy_cuda_status_, #expr, __FILE__, __LINE__); \
  } while (0)
