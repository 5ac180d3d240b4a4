#include "backends/cuda/cuda_check.h"

#include <atomic>

#include "ir/check.h"

namespace switchyard::cuda {

namespace {

constexpr int kMaxDevices = 64;
std::atomic<bool> g_lost[kMaxDevices];

int current_device() {
  int d = 0;
  return cudaGetDevice(&d) == cudaSuccess ? d : 0;
}

// Errors after which the CUDA context is unusable ("sticky"): every later call fails too.
bool is_sticky(cudaError_t s) {
  switch (s) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorTooManyPeers:
    case cudaErrorContextIsDestroyed:
    case cudaErrorDevicesUnavailable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

[[noreturn]] void lost(int device, const std::string& what) {
  if (device >= 0 && device < kMaxDevices) g_lost[device] = true;
  SY_THROW(DeviceLost, "cuda:{} had a fatal fault and can no longer be used: {}", device, what);
}

}  // namespace

bool device_lost(int device) { return device >= 0 && device < kMaxDevices && g_lost[device]; }

void check_device_alive(int device) {
  SY_CHECK(!device_lost(device), DeviceLost,
           "cuda:{} had a fatal fault earlier in this process and can no longer be used", device);
}

void throw_status(cudaError_t status, const char* expr, const char* file, int line) {
  std::string what = fmt::format("{} ({}) from {} at {}:{}", cudaGetErrorString(status),
                                 cudaGetErrorName(status), expr, file, line);
  if (status == cudaErrorMemoryAllocation)
    SY_THROW(OutOfMemory, "cuda:{}: out of device memory: {}", current_device(), what);
  if (is_sticky(status)) lost(current_device(), what);
  SY_THROW(Internal, "cuda:{}: {}", current_device(), what);
}

void throw_status(cublasStatus_t status, const char* expr, const char* file, int line) {
  std::string what = fmt::format("cuBLAS status {} ({}) from {} at {}:{}", static_cast<int>(status),
                                 cublasLtGetStatusString(status), expr, file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    SY_THROW(OutOfMemory, "cuda:{}: {}", current_device(), what);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED)
    SY_THROW(Unsupported, "cuda:{}: {}", current_device(), what);
  if (status == CUBLAS_STATUS_EXECUTION_FAILED) {
    // The launch failed: a sticky fault if the context is now broken.
    cudaError_t e = cudaDeviceSynchronize();
    if (is_sticky(e)) lost(current_device(), what + "; " + cudaGetErrorString(e));
  }
  SY_THROW(Internal, "cuda:{}: {}", current_device(), what);
}

void throw_status(cudnnStatus_t status, const char* expr, const char* file, int line) {
  char detail[1024] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string what = fmt::format("cuDNN {} from {} at {}:{}{}{}", cudnnGetErrorString(status), expr,
                                 file, line, detail[0] ? ": " : "", detail);
  int code = static_cast<int>(status);
  if (status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    SY_THROW(OutOfMemory, "cuda:{}: {}", current_device(), what);
  if (code >= 3000 && code < 4000) SY_THROW(Unsupported, "cuda:{}: {}", current_device(), what);
  if (code >= 5000 && code < 6000) {
    cudaError_t e = cudaDeviceSynchronize();
    if (is_sticky(e)) lost(current_device(), what + "; " + cudaGetErrorString(e));
  }
  SY_THROW(Internal, "cuda:{}: {}", current_device(), what);
}

}  // namespace switchyard::cuda
