// A deliberate sticky fault, for the device-lost test only (tests/gpu/device_lost_test.cc):
// a kernel that writes through an invalid address. Exported as a C symbol the test looks up.
#include <cuda_runtime.h>

namespace {
__global__ void write_through_bad_pointer(int* p) { *p = 1; }
}  // namespace

extern "C" __attribute__((visibility("default"))) int switchyard_cuda_test_fault_launch(
    int device) {
  if (cudaSetDevice(device) != cudaSuccess) return -1;
  write_through_bad_pointer<<<1, 1>>>(reinterpret_cast<int*>(0x10));
  return static_cast<int>(cudaGetLastError());
}
