// Shared helpers for CPU kernels: dtype dispatch over type lists or by element size, parallel
// loops, strides, broadcasting and reduction index math.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "ops/reduce_geometry.h"
#include "ops/shape_inference.h"
#include "runtime/graph_program.h"

namespace switchyard::cpu {

using ir::BFloat16;
using ir::DType;
using ir::Float16;

template <typename... Ts>
struct TypeList {};

using FloatTypes = TypeList<float, double, Float16, BFloat16>;
using SignedIntTypes = TypeList<int8_t, int16_t, int32_t, int64_t>;
using UnsignedIntTypes = TypeList<uint8_t, uint16_t, uint32_t, uint64_t>;
using IntTypes = TypeList<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using NumericTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t,
                              uint8_t, uint16_t, uint32_t, uint64_t>;
using AllPodTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t,
                             uint8_t, uint16_t, uint32_t, uint64_t, bool>;

/// DTypes of a type list, for KernelRegistry::add.
template <typename... Ts>
std::vector<DType> dtypes_of(TypeList<Ts...>) {
  return {ir::DTypeOf<Ts>::value...};
}

/// Calls f(T{}) for the T of `dtype` in the list; throws Unsupported naming the node otherwise.
template <typename... Ts, typename F>
void dispatch(TypeList<Ts...>, DType dtype, const ir::Node& node, F&& f) {
  bool done = ((ir::DTypeOf<Ts>::value == dtype ? (f(Ts{}), true) : false) || ...);
  SY_CHECK(done, Unsupported, "{}: dtype {} is not supported by this CPU kernel", node.describe(),
           ir::dtype_name(dtype));
}

/// Calls f(T{}) with T an unsigned integer of the element's size, or std::string for strings.
template <typename F>
void dispatch_by_size(DType dtype, const ir::Node& node, F&& f) {
  if (dtype == DType::String) {
    f(std::string{});
    return;
  }
  switch (ir::dtype_size(dtype)) {
    case 1:
      f(uint8_t{});
      return;
    case 2:
      f(uint16_t{});
      return;
    case 4:
      f(uint32_t{});
      return;
    case 8:
      f(uint64_t{});
      return;
    default:
      SY_THROW(Unsupported, "{}: dtype {} is not supported by this CPU kernel", node.describe(),
               ir::dtype_name(dtype));
  }
}

/// Converts through float for half types, static_cast otherwise.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, Float16> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Float16> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

/// Compute type for a storage type: float for half types, else itself.
template <typename T>
using compute_t =
    std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

/// Runs fn(begin, end) over [0, n) in chunks on up to `threads` OpenMP threads. Work below
/// `grain` items runs inline.
template <typename F>
void parallel_for(int64_t n, int64_t grain, int threads, F&& fn) {
  if (n <= 0) return;
  int64_t chunks = std::min<int64_t>(
      threads, (n + std::max<int64_t>(grain, 1) - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  // clang-format off
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  // clang-format on
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = n * c / chunks;
    int64_t e = n * (c + 1) / chunks;
    fn(b, e);
  }
}

/// Row-major strides of a shape.
inline std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  return s;
}

/// Strides of `shape` broadcast to `out_shape` (0 where the dim is broadcast).
inline std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& shape,
                                              const std::vector<int64_t>& out_shape) {
  std::vector<int64_t> s(out_shape.size(), 0);
  std::vector<int64_t> own = strides_of(shape);
  size_t off = out_shape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) s[off + i] = shape[i] == 1 ? 0 : own[i];
  return s;
}

/// Walks the rows (every dim but the last) of a row-major index space of `shape` in order from
/// row `first`, tracking where each row starts under `strides` (one per dim). shape and strides
/// must outlive the walk.
class RowWalk {
 public:
  RowWalk(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, int64_t first)
      : shape_(shape), strides_(strides), idx_(shape.empty() ? 0 : shape.size() - 1, 0) {
    for (size_t k = idx_.size(); k-- > 0;) {
      idx_[k] = first % shape[k];
      first /= shape[k];
      offset_ += idx_[k] * strides[k];
    }
  }
  /// The offset of the current row's first element.
  int64_t offset() const { return offset_; }
  /// Moves to the next row.
  void next() {
    for (size_t k = idx_.size(); k-- > 0;) {
      offset_ += strides_[k];
      if (++idx_[k] < shape_[k]) break;
      offset_ -= idx_[k] * strides_[k];
      idx_[k] = 0;
    }
  }

 private:
  const std::vector<int64_t>& shape_;
  const std::vector<int64_t>& strides_;
  std::vector<int64_t> idx_;
  int64_t offset_ = 0;
};

/// For a window op (conv, pool) with output spatial dims `out` and kernel dims `kernel`: calls
/// f(tap, oc, kc) for each output position (row-major) and, within it, each kernel position
/// (row-major), where oc and kc are their coordinates and tap counts the pairs from 0.
template <typename F>
void for_each_window_tap(const std::vector<int64_t>& out, const std::vector<int64_t>& kernel,
                         F&& f) {
  const size_t rank = out.size();
  int64_t out_size = 1, ksize = 1;
  for (int64_t d : out) out_size *= d;
  for (int64_t d : kernel) ksize *= d;
  std::vector<int64_t> oc(rank, 0);
  int64_t tap = 0;
  for (int64_t p = 0; p < out_size; ++p) {
    std::vector<int64_t> kc(rank, 0);
    for (int64_t k = 0; k < ksize; ++k, ++tap) {
      f(tap, std::as_const(oc), std::as_const(kc));
      for (size_t s = rank; s-- > 0;) {
        if (++kc[s] < kernel[s]) break;
        kc[s] = 0;
      }
    }
    for (size_t s = rank; s-- > 0;) {
      if (++oc[s] < out[s]) break;
      oc[s] = 0;
    }
  }
}

/// The dims of a rank-`rank` input that `axes` selects (negative axes count from the end); fails
/// (InvalidArgument naming the node) on an axis out of range or given twice.
inline std::vector<bool> axes_mask(const runtime::KernelContext& ctx,
                                   const std::vector<int64_t>& axes, int64_t rank) {
  return ops::axes_mask(ctx.node(), axes, rank);
}

/// A row-major tensor split into reduced and kept dims: the offsets of the elements of one
/// reduction relative to its base (row-major over the reduced dims), and each reduction's base.
struct ReductionWalk {
  std::vector<int64_t> offsets;
  std::vector<int64_t> kept_sizes, kept_strides;

  /// The offset of the first element of reduction k (row-major over the kept dims).
  int64_t base(int64_t k) const {
    int64_t base = 0;
    for (size_t u = kept_sizes.size(); u-- > 0;) {
      base += (k % kept_sizes[u]) * kept_strides[u];
      k /= kept_sizes[u];
    }
    return base;
  }
};

/// The walk of `shape` reducing the dims flagged in `reduced`.
inline ReductionWalk reduction_walk(const std::vector<int64_t>& shape,
                                    const std::vector<bool>& reduced) {
  std::vector<int64_t> strides = strides_of(shape);
  std::vector<int64_t> red_sizes, red_strides;
  ReductionWalk walk;
  int64_t count = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reduced[i]) {
      red_sizes.push_back(shape[i]);
      red_strides.push_back(strides[i]);
      count *= shape[i];
    } else {
      walk.kept_sizes.push_back(shape[i]);
      walk.kept_strides.push_back(strides[i]);
    }
  }
  walk.offsets.resize(static_cast<size_t>(count));
  std::vector<int64_t> idx(red_sizes.size(), 0);
  int64_t off = 0;
  for (int64_t r = 0; r < count; ++r) {
    walk.offsets[static_cast<size_t>(r)] = off;
    for (size_t u = red_sizes.size(); u-- > 0;) {
      off += red_strides[u];
      if (++idx[u] < red_sizes[u]) break;
      off -= red_strides[u] * red_sizes[u];
      idx[u] = 0;
    }
  }
  return walk;
}

/// Broadcast output shape of concrete inputs; throws InvalidArgument naming the node.
inline std::vector<int64_t> broadcast_or_fail(const runtime::KernelContext& ctx,
                                              const std::vector<std::vector<int64_t>>& shapes) {
  auto out = ops::broadcast_dims(shapes);
  if (!out) {
    std::string all;
    for (const auto& s : shapes) all += ir::shape_to_string(s) + " ";
    ctx.fail("input shapes {}cannot be broadcast together", all);
  }
  return *out;
}

}  // namespace switchyard::cpu
