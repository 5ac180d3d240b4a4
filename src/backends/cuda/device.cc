#include "backends/cuda/device.h"

#include "backends/cuda/kernels/data_impl.h"

#include <omp.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>

#include "ir/check.h"

namespace switchyard::cuda {

namespace {
constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLASLt / cuDNN scratch per stream
constexpr size_t kStagingBytes = size_t{32} << 20;    // per pinned staging buffer
constexpr size_t kCopyPiece = size_t{4} << 20;        // the least one copy thread moves

// memcpy of one staging chunk, split over up to half the host's cores for large chunks: one
// core moves pageable memory at ~8 GB/s, the DMA from pinned memory several times that.
void parallel_memcpy(void* dst, const void* src, size_t n) {
  static const int max_threads = std::clamp(omp_get_num_procs() / 2, 1, 8);
  const int pieces = static_cast<int>(std::min<size_t>(max_threads, n / kCopyPiece));
  if (pieces <= 1) {
    std::memcpy(dst, src, n);
    return;
  }
#pragma omp parallel for num_threads(pieces) schedule(static)
  for (int i = 0; i < pieces; ++i) {
    const size_t b = n * static_cast<size_t>(i) / static_cast<size_t>(pieces);
    const size_t e = n * static_cast<size_t>(i + 1) / static_cast<size_t>(pieces);
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, e - b);
  }
}

std::string format_uuid(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", b[i]);
  }
  return s;
}

// Stream captures in progress in the process, and the releases waiting for the last one to end.
struct CaptureGate {
  std::mutex mutex;
  std::condition_variable idle;  // notified when `captures` drops to 0
  int captures = 0;
  std::vector<std::function<void()>> deferred;
};

CaptureGate& capture_gate() {
  static CaptureGate* gate = new CaptureGate;  // never destroyed: releases may come at exit
  return *gate;
}

thread_local int t_captures = 0;  // CaptureScopes the calling thread holds

// Runs `f` while no capture is in progress in the process and none begins (waiting for those in
// progress, unless the calling thread holds one itself: it would wait for itself).
template <typename F>
void outside_captures(F&& f) {
  CaptureGate& gate = capture_gate();
  std::unique_lock<std::mutex> lock(gate.mutex);
  if (t_captures == 0) gate.idle.wait(lock, [&] { return gate.captures == 0; });
  f();
}
}  // namespace

void release_outside_captures(std::function<void()> release) {
  CaptureGate& gate = capture_gate();
  std::unique_lock<std::mutex> lock(gate.mutex);
  if (gate.captures > 0) {
    gate.deferred.push_back(std::move(release));
    return;
  }
  release();  // under the lock: no capture begins while it synchronises
}

CaptureScope::CaptureScope() {
  CaptureGate& gate = capture_gate();
  std::lock_guard<std::mutex> lock(gate.mutex);
  ++gate.captures;
  ++t_captures;
}

CaptureScope::~CaptureScope() {
  CaptureGate& gate = capture_gate();
  std::vector<std::function<void()>> due;
  {
    std::lock_guard<std::mutex> lock(gate.mutex);
    --t_captures;
    if (--gate.captures == 0) {
      due.swap(gate.deferred);
      gate.idle.notify_all();
    }
  }
  for (std::function<void()>& release : due) release_outside_captures(std::move(release));
}

CudaRunStream::CudaRunStream(int device)
    : device_(device), lease_(device_state(device).lease_stream()) {}

CudaRunStream::~CudaRunStream() {
  // Best effort (a run that failed, or the process ending): what is held may still be read by
  // queued work, so that work ends first.
  if (queued_ && !device_lost(device_)) {
    cudaSetDevice(device_);
    cudaStreamSynchronize(lease_->stream);
    cudaGetLastError();
  }
  held_.clear();
}

void CudaRunStream::defer_fault_check(const int32_t* device_word,
                                      std::function<void(int32_t)> raise) {
  if (checks_.size() == kErrorWordsPerStream) synchronize();
  const size_t word = checks_.size();
  queued_ = true;
  // A kernel writes the pinned word (launch_device_copy): no copy-engine wait after the work.
  SY_CUDA_CHECK(data::launch_device_copy(&lease_->error_host[word], device_word, sizeof(int32_t),
                                         lease_->stream));
  checks_.push_back({word, std::move(raise)});
}

void CudaRunStream::hold(std::shared_ptr<void> resource) {
  queued_ = true;
  held_.push_back(std::move(resource));
}

bool CudaRunStream::synchronize() {
  if (!queued_) return false;
  use_device(device_);
  const cudaError_t done = cudaStreamSynchronize(lease_->stream);
  queued_ = false;
  std::vector<FaultCheck> checks;
  checks.swap(checks_);
  held_.clear();
  SY_CUDA_CHECK(done);
  for (const FaultCheck& check : checks)
    if (const int32_t word = lease_->error_host[check.word]; word != 0) check.raise(word);
  return true;
}

void use_device(int device) {
  check_device_alive(device);
  SY_CUDA_CHECK(cudaSetDevice(device));
}

StreamSlot::~StreamSlot() {
  // Best effort: the context may be gone (process exit) or lost.
  cudaSetDevice(device);
  if (workspace) cudaFree(workspace);
  if (error_word) cudaFree(error_word);
  if (error_host) cudaFreeHost(error_host);
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cudnn) cudnnDestroy(cudnn);
  if (stream) cudaStreamDestroy(stream);
}

StreamLease::~StreamLease() {
  if (slot_) device_.return_stream(std::move(slot_));
}

DeviceState::DeviceState(int index) : index_(index) {
  use_device(index);
  SY_CUDA_CHECK(cudaGetDeviceProperties(&props_, index));
  uuid_ = format_uuid(props_.uuid);
  cudaDeviceGetAttribute(&memory_clock_khz_, cudaDevAttrMemoryClockRate, index);
  cudaDeviceGetAttribute(&sm_clock_khz_, cudaDevAttrClockRate, index);
  // Peer access to every GPU that allows it, for direct device-to-device copies.
  int count = 0;
  cudaGetDeviceCount(&count);
  for (int other = 0; other < count; ++other) {
    int can = 0;
    if (other == index || cudaDeviceCanAccessPeer(&can, index, other) != cudaSuccess || !can)
      continue;
    cudaError_t e = cudaDeviceEnablePeerAccess(other, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) SY_CUDA_CHECK(e);
    cudaGetLastError();  // clear "already enabled"
  }
}

StreamLease DeviceState::lease_stream() {
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    if (!idle_streams_.empty()) {
      auto slot = std::move(idle_streams_.back());
      idle_streams_.pop_back();
      return StreamLease(*this, std::move(slot));
    }
  }
  use_device(index_);
  auto slot = std::make_unique<StreamSlot>();
  slot->device = index_;
  // Creating the library handles may synchronise: not while another thread captures a graph.
  outside_captures([&] {
    SY_CUDA_CHECK(cudaStreamCreateWithFlags(&slot->stream, cudaStreamNonBlocking));
    SY_CUDA_CHECK(cudnnCreate(&slot->cudnn));
    SY_CUDA_CHECK(cudnnSetStream(slot->cudnn, slot->stream));
    SY_CUDA_CHECK(cublasLtCreate(&slot->cublaslt));
    SY_CUDA_CHECK(cudaMalloc(&slot->workspace, kWorkspaceBytes));
    slot->workspace_bytes = kWorkspaceBytes;
    SY_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&slot->error_word), sizeof(int32_t)));
    SY_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&slot->error_host),
                                 sizeof(int32_t) * kErrorWordsPerStream));
  });
  {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    slot->index = streams_made_++;
  }
  return StreamLease(*this, std::move(slot));
}

void DeviceState::return_stream(std::unique_ptr<StreamSlot> slot) {
  std::lock_guard<std::mutex> lock(streams_mutex_);
  idle_streams_.push_back(std::move(slot));
}

void DeviceState::ensure_staging() {
  if (copy_stream_) return;
  SY_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  for (int i = 0; i < 2; ++i) {
    SY_CUDA_CHECK(cudaMallocHost(&pinned_[i], kStagingBytes));
    SY_CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
  }
}

void DeviceState::copy_from_host(void* dst, const void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(staging_mutex_);
  use_device(index_);
  ensure_staging();
  size_t offset = 0;
  int k = 0;
  bool used[2] = {false, false};
  while (offset < bytes) {
    size_t n = std::min(kStagingBytes, bytes - offset);
    // Wait until the DMA that last read this buffer is done, then refill it.
    if (used[k]) SY_CUDA_CHECK(cudaEventSynchronize(done_[k]));
    parallel_memcpy(pinned_[k], static_cast<const char*>(src) + offset, n);
    SY_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + offset, pinned_[k], n,
                                  cudaMemcpyHostToDevice, copy_stream_));
    SY_CUDA_CHECK(cudaEventRecord(done_[k], copy_stream_));
    used[k] = true;
    offset += n;
    k ^= 1;
  }
  SY_CUDA_CHECK(cudaStreamSynchronize(copy_stream_));
}

void DeviceState::copy_from_device(void* dst, const void* src, int from, size_t bytes) {
  std::lock_guard<std::mutex> lock(staging_mutex_);
  use_device(index_);
  ensure_staging();
  SY_CUDA_CHECK(cudaMemcpyPeerAsync(dst, index_, src, from, bytes, copy_stream_));
  SY_CUDA_CHECK(cudaStreamSynchronize(copy_stream_));
}

void DeviceState::copy_to_host(void* dst, const void* src, size_t bytes) {
  std::lock_guard<std::mutex> lock(staging_mutex_);
  use_device(index_);
  ensure_staging();
  // Chunk k+1's DMA runs while chunk k is copied out of its pinned buffer.
  size_t offset = 0;
  int k = 0;
  size_t pending[2] = {0, 0};
  size_t pending_at[2] = {0, 0};
  auto drain = [&](int b) {
    if (!pending[b]) return;
    SY_CUDA_CHECK(cudaEventSynchronize(done_[b]));
    parallel_memcpy(static_cast<char*>(dst) + pending_at[b], pinned_[b], pending[b]);
    pending[b] = 0;
  };
  while (offset < bytes) {
    size_t n = std::min(kStagingBytes, bytes - offset);
    drain(k);
    SY_CUDA_CHECK(cudaMemcpyAsync(pinned_[k], static_cast<const char*>(src) + offset, n,
                                  cudaMemcpyDeviceToHost, copy_stream_));
    SY_CUDA_CHECK(cudaEventRecord(done_[k], copy_stream_));
    pending[k] = n;
    pending_at[k] = offset;
    offset += n;
    k ^= 1;
  }
  drain(k);
  drain(k ^ 1);
}

int device_count(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why)
      *why = fmt::format("no CUDA device: {} ({})", cudaGetErrorString(e), cudaGetErrorName(e));
    return 0;
  }
  if (count == 0 && why) *why = "no CUDA device: the driver reports none";
  return count;
}

DeviceState& device_state(int index) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<DeviceState>> states;
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = states[index];
  if (!s) s = std::make_unique<DeviceState>(index);
  return *s;
}

void* DeviceAllocator::allocate(size_t bytes) {
  use_device(device_);
  void* p = nullptr;
  cudaError_t e = cudaMalloc(&p, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();  // an allocation failure is not sticky; clear it
    if (e == cudaErrorMemoryAllocation) {
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      SY_THROW(OutOfMemory, "cuda:{}: out of device memory allocating {} bytes ({} of {} free)",
               device_, bytes, free_b, total_b);
    }
    SY_CUDA_CHECK(e);
  }
  return p;
}

void DeviceAllocator::release(void* p, size_t) {
  if (device_lost(device_)) return;  // the context is gone; nothing to give back
  release_outside_captures([device = device_, p] {
    if (device_lost(device)) return;
    // Maybe on another thread (one ending a capture): its current device is left as it was.
    int current = device;
    cudaGetDevice(&current);
    cudaSetDevice(device);
    cudaFree(p);
    cudaSetDevice(current);
  });
}

void DeviceAllocator::fill(void* p, int byte, size_t bytes) {
  // Poisoning is for tests: wait for all queued work (a reused block may still be read by a
  // queued kernel), fill, and wait again, so no stream sees a half-filled block.
  use_device(device_);
  SY_CUDA_CHECK(cudaDeviceSynchronize());
  SY_CUDA_CHECK(cudaMemset(p, byte, bytes));
  SY_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace switchyard::cuda
