// The host side of the deliberate fault (fault.cu): launches it and reports the result through
// the one status path every CUDA call takes, so the test sees what users would see.
#include "backends/cuda/cuda_check.h"

extern "C" int switchyard_cuda_test_fault_launch(int device);

extern "C" __attribute__((visibility("default"))) void switchyard_cuda_test_fault(int device) {
  SY_CUDA_CHECK(static_cast<cudaError_t>(switchyard_cuda_test_fault_launch(device)));
  SY_CUDA_CHECK(cudaDeviceSynchronize());
}
