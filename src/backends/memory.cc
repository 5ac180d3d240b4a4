#include "backends/memory.h"

#include <cstdlib>
#include <cstring>

#include "ir/check.h"
#include "ir/tensor.h"

namespace switchyard::backends {

namespace {
constexpr size_t kAlign = 64;
// Cached free blocks beyond this are returned to the system.
constexpr size_t kMaxCachedBytes = size_t{2} << 30;
size_t round_up(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
}
}  // namespace

std::shared_ptr<HostPool> HostPool::create(bool poison, int memory_space) {
  return std::shared_ptr<HostPool>(new HostPool(poison, memory_space));
}

void PoolDeleter::operator()(void* p) const {
  if (auto owner = pool.lock()) {
    owner->release(p, size);
  } else {
    std::free(p);
  }
}

int memory_space_of(const Tensor& tensor) {
  const PoolDeleter* d = std::get_deleter<PoolDeleter>(tensor.storage());
  return d ? d->memory_space : kHostMemorySpace;
}

HostPool::~HostPool() {
  for (auto& [size, p] : free_) std::free(p);
}

std::shared_ptr<void> HostPool::allocate(size_t bytes) {
  size_t size = round_up(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Best fit, but never hand out a block more than twice the request.
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= size * 2) {
      size = it->first;
      p = it->second;
      free_.erase(it);
      cached_ -= size;
    }
    live_ += size;
    peak_ = std::max(peak_, live_);
  }
  if (!p) {
    p = std::aligned_alloc(kAlign, size);
    if (!p) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_ -= size;
      SY_THROW(OutOfMemory, "host allocation of {} bytes failed", size);
    }
  }
  if (poison_) std::memset(p, 0xFF, size);
  return std::shared_ptr<void>(p, PoolDeleter{weak_from_this(), size, memory_space_});
}

void HostPool::release(void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_ -= bytes;
  if (cached_ + bytes > kMaxCachedBytes) {
    std::free(p);
    return;
  }
  free_.emplace(bytes, p);
  cached_ += bytes;
}

size_t HostPool::live_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}
size_t HostPool::peak_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}
void HostPool::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = live_;
}
size_t HostPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

}  // namespace switchyard::backends
