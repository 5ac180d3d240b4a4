// oneDNN helpers for CPU kernels: the engine, dtype mapping, zero-copy memory views of tensors,
// per-call execution with the run's thread count, and a small LRU cache of shape-specific plans.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "runtime/kernel.h"

namespace switchyard::cpu {

/// The process-wide oneDNN CPU engine (created on first use, thread-safe).
const dnnl::engine& dnnl_engine();

/// The oneDNN data type of a dtype, or nullopt when oneDNN has none for it.
std::optional<dnnl::memory::data_type> dnnl_data_type(ir::DType dtype);

/// Dims in oneDNN's type.
dnnl::memory::dims dnnl_dims(const std::vector<int64_t>& dims);

/// The plain row-major format tag for a rank (a, ab, abc, ...; rank 1..6).
dnnl::memory::format_tag plain_format(size_t rank);

/// A plain row-major memory descriptor.
dnnl::memory::desc plain_desc(const std::vector<int64_t>& dims, dnnl::memory::data_type type);

/// A oneDNN memory object viewing a tensor's storage (no copy). The tensor must outlive it.
dnnl::memory wrap_memory(const ir::Tensor& tensor, const dnnl::memory::desc& desc);
/// The same for raw storage.
dnnl::memory wrap_memory(const void* data, const dnnl::memory::desc& desc);

/// Sets the calling thread's OpenMP thread count (which oneDNN uses) for its lifetime.
class OmpThreadScope {
 public:
  explicit OmpThreadScope(int threads);
  ~OmpThreadScope();
  OmpThreadScope(const OmpThreadScope&) = delete;
  OmpThreadScope& operator=(const OmpThreadScope&) = delete;

 private:
  int previous_;
};

/// Attributes every cached primitive is created with: a user-managed scratchpad. Debian's
/// oneDNN is built with DNNL_ENABLE_CONCURRENT_EXEC, where a library-managed scratchpad belongs
/// to the primitive, so two runs executing one cached primitive at once would share it (wrong
/// results under concurrent run()). With this mode each execution brings its own scratchpad.
dnnl::primitive_attr user_scratchpad_attr();

/// A reorder between two layouts, with a user-managed scratchpad.
dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

/// Executes a primitive (created with user_scratchpad_attr) on a fresh stream of its own and
/// waits for it; its scratchpad comes from the run's pool. dnnl::error becomes a
/// switchyard::Error (Internal) naming the node.
void execute_primitive(const runtime::KernelContext& ctx, const dnnl::primitive& primitive,
                       const std::unordered_map<int, dnnl::memory>& args);

/// Copies `from` into `to` (layouts may differ) through a reorder primitive; a oneDNN failure
/// becomes a switchyard::Error (Internal).
void reorder_memory(const dnnl::memory& from, const dnnl::memory& to);

/// Hash of a shape signature (a flat list of integers).
struct SignatureHash {
  size_t operator()(const std::vector<int64_t>& key) const;
};

/// A bounded cache of plans keyed by shape signature, least recently used entries evicted.
/// Thread-safe: plans are built under the lock and shared by pointer, so an evicted plan lives
/// on while a running call still holds it.
template <typename Plan>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 8) : capacity_(capacity) {}

  /// The plan for `key`, built by `make()` on first sight.
  std::shared_ptr<const Plan> get(const std::vector<int64_t>& key,
                                  const std::function<std::shared_ptr<const Plan>()>& make) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    std::shared_ptr<const Plan> plan = make();
    order_.emplace_front(key, plan);
    index_[key] = order_.begin();
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return plan;
  }

 private:
  using Entry = std::pair<std::vector<int64_t>, std::shared_ptr<const Plan>>;
  size_t capacity_;
  mutable std::mutex mutex_;
  mutable std::list<Entry> order_;
  mutable std::unordered_map<std::vector<int64_t>, typename std::list<Entry>::iterator,
                             SignatureHash>
      index_;
};

/// True when the node's input i is a graph initializer (its data never changes).
bool input_is_constant(const ir::Node& node, size_t i);

/// A tensor of `shape` in the run's scratch memory (counted against --memory-limit).
ir::Tensor scratch_tensor(runtime::KernelContext& ctx, ir::DType dtype,
                          const std::vector<int64_t>& shape);

/// Channels-last kernels (backends/fusion/payload.h: fusion::ChannelsLast): dim orders.
inline constexpr std::array<size_t, 4> kNhwcToNchw = {0, 3, 1, 2};
inline constexpr std::array<size_t, 4> kNchwToNhwc = {0, 2, 3, 1};
/// out dim i = in dim perm[i].
std::vector<int64_t> permute4(const std::vector<int64_t>& dims, const std::array<size_t, 4>& perm);
/// A 4-D tensor with its dims permuted as `perm` says, copied into scratch memory (the NCHW loops
/// of channels-last kernels on the paths oneDNN does not take).
ir::Tensor transposed_scratch(runtime::KernelContext& ctx, const ir::Tensor& in,
                              const std::array<size_t, 4>& perm);

}  // namespace switchyard::cpu
