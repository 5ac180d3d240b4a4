// Per-GPU process state: properties, a pool of streams (each with its own cuDNN and cuBLASLt
// handles and workspace), each run's stream on the device (CudaRunStream), a caching device
// allocator with an optional byte limit, and pinned staging buffers for host<->device copies.
// Also the one rule for CUDA calls that synchronise implicitly while a stream capture may be in
// progress on another thread (release_outside_captures).
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <functional>
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

/// Error words one stream reads back between two waits (CudaRunStream: one per partition run).
constexpr size_t kErrorWordsPerStream = 64;

/// A stream with its own library handles and workspace.
struct StreamSlot {
  int device = 0;
  int index = 0;  ///< the device's streams in order of creation (the trace's track of its work)
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  int32_t* error_word = nullptr;  ///< device: CudaRunContext::device_error of eager runs
  /// Pinned: kErrorWordsPerStream words where error words are read back (the first for eager
  /// runs on a stream of their own).
  int32_t* error_host = nullptr;
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

/// One run's stream on cuda:N (runtime::RunStream, CudaBackend::open_run_stream): a leased slot
/// on which the run's partitions on the device queue their work in turn (the runtime runs one at
/// a time). None of them waits for the device: each leaves the read-back of its error word queued
/// (defer_fault_check) and what its queued work still uses held here (hold); synchronize() waits
/// once for all of it, lets go of what was held and throws the first fault.
class CudaRunStream : public runtime::RunStream {
 public:
  explicit CudaRunStream(int device);
  ~CudaRunStream() override;
  int device() const { return device_; }
  StreamSlot& slot() const { return *lease_; }
  /// Queues the read-back of `device_word`, the error word of the work a partition just queued,
  /// and keeps `raise`, which throws the fault a nonzero word stands for (naming the node). When
  /// every read-back word is taken it first waits for the work before (and may throw its fault).
  void defer_fault_check(const int32_t* device_word, std::function<void(int32_t)> raise);
  /// Keeps `resource` (a pinned buffer a queued copy reads, a graph a queued replay uses) until
  /// the work queued so far is done.
  void hold(std::shared_ptr<void> resource);
  /// Waits for the queued work and throws the first fault its error words hold, in the order the
  /// partitions queued them; false (without a wait) when nothing was queued since the last one.
  bool synchronize() override;

 private:
  struct FaultCheck {
    size_t word = 0;  // index into the slot's error_host
    std::function<void(int32_t)> raise;
  };
  int device_;
  StreamLease lease_;
  bool queued_ = false;  // work was queued since the last synchronize()
  std::vector<FaultCheck> checks_;
  std::vector<std::shared_ptr<void>> held_;
};

/// Runs `release` (a cudaFree, cudaFreeHost, cudaGraphExecDestroy: calls that may synchronise
/// implicitly, which a stream capture in progress on another thread may not survive) now, or,
/// while a capture is in progress anywhere in the process (CaptureScope), when the last one ends.
void release_outside_captures(std::function<void()> release);

/// Held by a thread from its cudaStreamBeginCapture to its cudaStreamEndCapture: meanwhile
/// release_outside_captures defers its calls, and new stream slots (whose library handles'
/// creation may synchronise) wait.
class CaptureScope {
 public:
  CaptureScope();
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
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
  int streams_made_ = 0;  // under streams_mutex_
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
