#include "runtime/memory.h"

#include <cstdlib>
#include <cstring>

#include "ir/check.h"
#include "ir/tensor.h"

namespace switchyard::runtime {

namespace {
constexpr size_t kAlign = 64;
size_t round_up(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
}

class MallocAllocator : public RawAllocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(kAlign, bytes);
    if (!p) SY_THROW(OutOfMemory, "host allocation of {} bytes failed", bytes);
    return p;
  }
  void release(void* p, size_t) override { std::free(p); }
  void fill(void* p, int byte, size_t bytes) override { std::memset(p, byte, bytes); }
};

class BudgetedAllocator : public RawAllocator {
 public:
  BudgetedAllocator(std::shared_ptr<RawAllocator> raw, std::shared_ptr<MemoryBudget> budget)
      : raw_(std::move(raw)), budget_(std::move(budget)) {}
  void* allocate(size_t bytes) override {
    budget_->charge(bytes);
    try {
      return raw_->allocate(bytes);
    } catch (...) {
      budget_->credit(bytes);
      throw;
    }
  }
  void release(void* p, size_t bytes) override {
    raw_->release(p, bytes);
    budget_->credit(bytes);
  }
  void fill(void* p, int byte, size_t bytes) override { raw_->fill(p, byte, bytes); }

 private:
  std::shared_ptr<RawAllocator> raw_;
  std::shared_ptr<MemoryBudget> budget_;
};
}  // namespace

std::shared_ptr<RawAllocator> host_allocator() {
  static const std::shared_ptr<RawAllocator> host = std::make_shared<MallocAllocator>();
  return host;
}

void MemoryBudget::charge(size_t bytes) {
  uint64_t held = used_.fetch_add(bytes) + bytes;
  if (held > limit_) {
    used_ -= bytes;
    SY_THROW(OutOfMemory, "{}: --memory-limit {}={} reached: {} bytes held, {} more requested",
             device_, device_, limit_, held - bytes, bytes);
  }
}

std::shared_ptr<RawAllocator> budgeted(std::shared_ptr<RawAllocator> raw,
                                       std::shared_ptr<MemoryBudget> budget) {
  if (!budget) return raw;
  return std::make_shared<BudgetedAllocator>(std::move(raw), std::move(budget));
}

std::shared_ptr<HostPool> HostPool::create(bool poison, int memory_space,
                                           std::shared_ptr<RawAllocator> raw) {
  return std::shared_ptr<HostPool>(
      new HostPool(poison, memory_space, raw ? raw : host_allocator()));
}

void PoolDeleter::operator()(void* p) const {
  if (auto owner = pool.lock()) {
    owner->release(p, size);
  } else {
    raw->release(p, size);
  }
}

namespace {
// The storage of a caller's buffer tagged with its memory space: holds the caller's owner.
struct ForeignDeleter {
  std::shared_ptr<void> owner;
  int memory_space = kHostMemorySpace;
  void operator()(void*) { owner.reset(); }
};
}  // namespace

int memory_space_of(const Tensor& tensor) {
  if (const PoolDeleter* d = std::get_deleter<PoolDeleter>(tensor.storage()))
    return d->memory_space;
  if (const ForeignDeleter* f = std::get_deleter<ForeignDeleter>(tensor.storage()))
    return f->memory_space;
  return kHostMemorySpace;
}

std::shared_ptr<void> in_memory_space(int memory_space, std::shared_ptr<void> owner, void* data) {
  return std::shared_ptr<void>(data, ForeignDeleter{std::move(owner), memory_space});
}

HostPool::~HostPool() {
  for (auto& [size, p] : free_) raw_->release(p, size);
}

void HostPool::set_max_cached_bytes(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  max_cached_ = bytes;
}

void HostPool::set_limit(size_t bytes, std::string device) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = bytes;
  limit_device_ = std::move(device);
}

void HostPool::trim() {
  std::multimap<size_t, void*> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_);
    cached_ = 0;
  }
  for (auto& [size, p] : blocks) raw_->release(p, size);
}

std::shared_ptr<void> HostPool::allocate(size_t bytes) {
  size_t size = round_up(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Best fit, but never hand out a block more than twice the request.
    SY_CHECK(limit_ == 0 || (size <= limit_ && live_ <= limit_ - size), OutOfMemory,
             "{}: the run needs {} more bytes with {} held, over its --memory-limit {}={}",
             limit_device_, bytes, live_, limit_device_, limit_);
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= size * 2 &&
        (limit_ == 0 || live_ + it->first <= limit_)) {
      size = it->first;
      p = it->second;
      free_.erase(it);
      cached_ -= size;
    }
    live_ += size;
    peak_ = std::max(peak_, live_);
  }
  if (!p) {
    try {
      try {
        p = raw_->allocate(size);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::OutOfMemory) throw;
        trim();  // cached blocks of other sizes may make room
        p = raw_->allocate(size);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_ -= size;
      throw;
    }
  }
  if (poison_) raw_->fill(p, 0xFF, size);
  return std::shared_ptr<void>(p, PoolDeleter{weak_from_this(), size, memory_space_, raw_});
}

void HostPool::release(void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_ -= bytes;
  if (cached_ + bytes > max_cached_) {
    raw_->release(p, bytes);
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

}  // namespace switchyard::runtime
