// Host memory for kernel outputs: a per-run pool that recycles buffers by size, so values freed
// after their last use (liveness) are reused by later nodes, and reports peak bytes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace switchyard {
class Tensor;
}

namespace switchyard::runtime {

/// Memory space of plain host memory (the cpu). Other devices' pools use their own ids.
constexpr int kHostMemorySpace = 0;

/// Where a pool's blocks come from: plain host memory by default; a device backend supplies
/// its own (cudaMalloc). Shared by a pool and the blocks it handed out.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  /// At least `bytes` bytes, 64-byte aligned; throws OutOfMemory naming the device.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p, size_t bytes) = 0;
  /// Fills a block with `byte` (poisoning fresh buffers).
  virtual void fill(void* p, int byte, size_t bytes) = 0;
};

/// The plain host-memory allocator every pool uses unless given another.
std::shared_ptr<RawAllocator> host_allocator();

/// The bytes one executable may hold on one device (`--memory-limit DEVICE=BYTES`, any device
/// but the cpu): shared by every pool the executable makes there — its compiled partitions'
/// state and every run's values, concurrent runs and cached blocks included — so it bounds what
/// the executable takes from the device, as a device-wide allocator limit would, without being
/// device state.
class MemoryBudget {
 public:
  MemoryBudget(uint64_t limit, std::string device) : limit_(limit), device_(std::move(device)) {}
  /// Takes `bytes` from the budget, or throws OutOfMemory naming the device and the limit.
  void charge(size_t bytes);
  void credit(size_t bytes) { used_ -= bytes; }
  uint64_t used() const { return used_; }
  uint64_t limit() const { return limit_; }
  const std::string& device() const { return device_; }

 private:
  uint64_t limit_;
  std::string device_;
  std::atomic<uint64_t> used_{0};
};

/// `raw` with every block it hands out charged to `budget` (`raw` itself when there is none).
std::shared_ptr<RawAllocator> budgeted(std::shared_ptr<RawAllocator> raw,
                                       std::shared_ptr<MemoryBudget> budget);

/// A pool of blocks from a RawAllocator (host memory unless one is given), recycled by size.
/// The name is historical: device pools are HostPools with a device allocator.
class HostPool : public std::enable_shared_from_this<HostPool> {
 public:
  /// Creates a pool; `poison` fills fresh buffers with 0xFF bytes (NaN for floats) so tests
  /// catch kernels that read outputs before writing them. `memory_space` tags every block,
  /// so a device can tell its values from others' (memory_space_of).
  static std::shared_ptr<HostPool> create(bool poison = false, int memory_space = kHostMemorySpace,
                                          std::shared_ptr<RawAllocator> raw = nullptr);
  int memory_space() const { return memory_space_; }
  ~HostPool();

  /// Storage of at least `bytes` (64-byte aligned). The block returns to the pool when the
  /// last shared_ptr to it is dropped, which may happen after the run (outputs) or from
  /// another thread. Throws OutOfMemory.
  std::shared_ptr<void> allocate(size_t bytes);

  size_t live_bytes() const;
  /// Largest sum of live bytes since the last reset_peak().
  size_t peak_bytes() const;
  void reset_peak();
  /// Bytes held in the free list (cached for reuse).
  size_t cached_bytes() const;
  /// Returns every cached block to the allocator (after an allocation failed, say).
  void trim();
  /// Cached free blocks beyond this go back to the allocator (2 GiB by default). Device pools
  /// lift it: a block a captured CUDA graph still addresses must never be freed mid-capture,
  /// and the device's memory limit bounds them anyway.
  void set_max_cached_bytes(size_t bytes);
  /// Caps the live bytes of this pool at `bytes` (0 = none): an allocation that would pass it
  /// throws OutOfMemory naming `device` and the limit, before anything is allocated.
  void set_limit(size_t bytes, std::string device);

 private:
  HostPool(bool poison, int memory_space, std::shared_ptr<RawAllocator> raw)
      : poison_(poison), memory_space_(memory_space), raw_(std::move(raw)) {}
  friend struct PoolDeleter;
  void release(void* p, size_t bytes);
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t live_ = 0;
  size_t peak_ = 0;
  size_t cached_ = 0;
  bool poison_ = false;
  int memory_space_ = kHostMemorySpace;
  std::shared_ptr<RawAllocator> raw_;
  size_t max_cached_ = size_t{2} << 30;
  size_t limit_ = 0;
  std::string limit_device_;
};

/// The deleter of pool blocks: returns the block to its pool (or frees it once the pool is
/// gone) and remembers the block's memory space.
struct PoolDeleter {
  std::weak_ptr<HostPool> pool;
  size_t size = 0;
  int memory_space = kHostMemorySpace;
  std::shared_ptr<RawAllocator> raw;  ///< frees the block once the pool is gone
  void operator()(void* p) const;
};

/// The memory space a tensor's storage was allocated in (kHostMemorySpace for plain host
/// memory and for tensors neither allocated from a pool nor tagged by in_memory_space).
int memory_space_of(const Tensor& tensor);

/// `data`, memory of `memory_space` kept alive by `owner` (a caller's device buffer), as storage
/// memory_space_of tells apart: a run reads it in place on the device that owns the space.
std::shared_ptr<void> in_memory_space(int memory_space, std::shared_ptr<void> owner, void* data);

}  // namespace switchyard::runtime
