// Shared helpers for CPU kernels: dtype dispatch over type lists, parallel loops, strides and
// broadcasting index math.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_kernels.h"
#include "backends/executor.h"
#include "ops/shape_inference.h"

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
using compute_t = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>,
                                     float, T>;

/// Runs fn(begin, end) over [0, n) in chunks on up to `threads` OpenMP threads. Work below
/// `grain` items runs inline.
template <typename F>
void parallel_for(int64_t n, int64_t grain, int threads, F&& fn) {
  if (n <= 0) return;
  int64_t chunks = std::min<int64_t>(threads, (n + std::max<int64_t>(grain, 1) - 1) /
                                                  std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
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

/// Broadcast output shape of concrete inputs; throws InvalidArgument naming the node.
inline std::vector<int64_t> broadcast_or_fail(const backends::KernelContext& ctx,
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
