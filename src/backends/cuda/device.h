// Per-GPU process state: properties, a pool of streams (each with its own cuDNN and cuBLASLt
// handles and workspace), a caching device allocator with an optional byte limit, and pinned
// staging buffers for host<->device copies.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "runtime/memory.h"

namespace switchyard::cuda {

/// Memory-space tag of cuda:N's pool blocks (runtime::memory_space_of).
constexpr int kCudaMemorySpaceBase = 2000;
inline int memory_space_of_device(int device) { return kCudaMemorySpaceBase + device; }
/// The CUDA device a memory space belongs to, or -1.
inline int device_of_memory_space(int space) {
  return space >= kCudaMemorySpaceBase && space < kCudaMemorySpaceBase + 64
             ? space - kCudaMemorySpaceBase
             : -1;
}

/// Sets the calling thread's current device (every entry point calls it first) and fails
/// fast with DeviceLost when the device had a sticky fault.
void use_device(int device);

/// A stream with its own library handles and workspace.
struct StreamSlot {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int32_t* error_word = nullptr;  ///< device: CudaRunContext::device_error of eager runs
  int32_t* error_host = nullptr;  ///< pinned: where the error word is read back
  ~StreamSlot();
};

class DeviceState;

/// A stream slot borrowed for one partition run; returns to the pool on destruction.
class StreamLease {
 public:
  StreamLease(DeviceState& device, std::unique_ptr<StreamSlot> slot)
      : device_(device), slot_(std::move(slot)) {}
  ~StreamLease();
  StreamLease(const StreamLease&) = delete;
  StreamLease& operator=(const StreamLease&) = delete;
  StreamSlot& operator*() const { return *slot_; }
  StreamSlot* operator->() const { return slot_.get(); }

 private:
  DeviceState& device_;
  std::unique_ptr<StreamSlot> slot_;
};

class DeviceState {
 public:
  explicit DeviceState(int index);
  int index() const { return index_; }
  const cudaDeviceProp& props() const { return props_; }
  const std::string& uuid() const { return uuid_; }
  /// Memory clock (kHz) and bus width (bits), for the cost model.
  int memory_clock_khz() const { return memory_clock_khz_; }
  int sm_clock_khz() const { return sm_clock_khz_; }

  /// A stream slot (new or idle); thread-safe.
  StreamLease lease_stream();
  void return_stream(std::unique_ptr<StreamSlot> slot);

  /// Host→device copy of `bytes` from pageable host memory through pinned staging buffers
  /// (double-buffered, so the host memcpy overlaps the DMA; a large chunk's memcpy is split over
  /// several host threads). Synchronous.
  void copy_from_host(void* dst, const void* src, size_t bytes);
  /// Copy from another GPU's memory (`from`) into this one's, on this device's copy stream.
  /// Synchronous: partitions run on non-blocking streams, which would not wait for a copy on
  /// the legacy default stream (what plain cudaMemcpyPeer uses).
  void copy_from_device(void* dst, const void* src, int from, size_t bytes);
  /// Device→host copy through pinned staging. Synchronous.
  void copy_to_host(void* dst, const void* src, size_t bytes);

 private:
  int index_;
  cudaDeviceProp props_{};
  std::string uuid_;
  int memory_clock_khz_ = 0;
  int sm_clock_khz_ = 0;
  std::mutex streams_mutex_;
  std::vector<std::unique_ptr<StreamSlot>> idle_streams_;
  // Staging: two pinned buffers and a copy stream, used under staging_mutex_.
  std::mutex staging_mutex_;
  cudaStream_t copy_stream_ = nullptr;
  void* pinned_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {nullptr, nullptr};
  void ensure_staging();
};

/// Devices visible to this process (0 when the driver or GPU is missing); `why` says why none.
int device_count(std::string* why);
/// The state of cuda:N, created on first use; lives for the process.
DeviceState& device_state(int index);

/// Device memory for a pool: cudaMalloc / cudaFree on one device. A --memory-limit is the
/// executable's runtime::MemoryBudget, charged by a budgeted wrapper (runtime::budgeted).
class DeviceAllocator : public runtime::RawAllocator {
 public:
  explicit DeviceAllocator(int device) : device_(device) {}
  void* allocate(size_t bytes) override;
  void release(void* p, size_t bytes) override;
  void fill(void* p, int byte, size_t bytes) override;

 private:
  int device_;
};

}  // namespace switchyard::cuda
