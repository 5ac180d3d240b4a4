// Device-side helpers shared by the reduction family's .cu files (reduce.cu, softmax.cu,
// topk_cumsum.cu): element types and their accumulation types, math overloads, warp shuffles,
// grid sizing and dtype dispatch. Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cuda/std/limits>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/reduce_impl.h"

namespace switchyard::cuda::reduction {

using dev::from_float;
using dev::to_float;

constexpr int kBlock = 256;
constexpr unsigned kFullMask = 0xffffffffu;
// Blocks that keep every SM of a large GPU busy; fewer outputs than this split long reductions.
constexpr int64_t kTargetBlocks = 1024;

__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

inline unsigned grid_for(int64_t blocks) {
  if (blocks < 1) return 1;
  return static_cast<unsigned>(blocks < 65535LL * 32 ? blocks : 65535LL * 32);
}

// ---- element types -------------------------------------------------------------------------

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// float for the 16-bit types, else T.
template <typename T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;
/// Sums and products: compute_t for floats, 64-bit two's complement (wrapping) for integers.
template <typename T>
using wide_t = std::conditional_t<std::is_integral_v<T>, uint64_t, compute_t<T>>;
/// L2, LogSum, LogSumExp: compute_t for floats, double for integers.
template <typename T>
using real_t = std::conditional_t<std::is_integral_v<T>, double, compute_t<T>>;

template <typename A, typename T>
__device__ __forceinline__ A load(T v) {
  if constexpr (kIsHalf<T>) {
    return static_cast<A>(to_float(v));
  } else if constexpr (std::is_integral_v<T> && std::is_same_v<A, uint64_t>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  } else {
    return static_cast<A>(v);
  }
}

template <typename T, typename A>
__device__ __forceinline__ T store(A v) {
  if constexpr (kIsHalf<T>) {
    return from_float<T>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<T> && std::is_same_v<A, uint64_t>) {
    return static_cast<T>(static_cast<int64_t>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <typename A>
__device__ __forceinline__ bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) {
    return isnan(v);
  } else {
    return false;
  }
}

__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return exp(x); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return log(x); }
__device__ __forceinline__ float sqrt_of(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_of(double x) { return sqrt(x); }

// A real result to T; integers saturate and NaN gives 0, as in the cpu kernels.
template <typename T, typename R>
__device__ __forceinline__ T from_real(R v) {
  if constexpr (std::is_integral_v<T>) {
    using L = ::cuda::std::numeric_limits<T>;
    if (isnan(v)) return T(0);
    if (v >= static_cast<R>(L::max())) return L::max();
    if (v <= static_cast<R>(L::lowest())) return L::lowest();
    return static_cast<T>(v);
  } else {
    return store<T>(v);
  }
}

// Warp shuffles of any accumulator (a number or a small struct), word by word.
template <typename A>
__device__ __forceinline__ A shfl_down(A v, int delta) {
  static_assert(sizeof(A) % 4 == 0, "accumulators are whole 32-bit words");
  int w[sizeof(A) / 4];
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(A) / 4); ++i)
    w[i] = __shfl_down_sync(kFullMask, w[i], delta);
  memcpy(&v, w, sizeof(A));
  return v;
}
template <typename A>
__device__ __forceinline__ A shfl_up(A v, int delta) {
  int w[sizeof(A) / 4];
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(A) / 4); ++i)
    w[i] = __shfl_up_sync(kFullMask, w[i], delta);
  memcpy(&v, w, sizeof(A));
  return v;
}
template <typename A>
__device__ __forceinline__ A shfl_xor(A v, int mask) {
  int w[sizeof(A) / 4];
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(A) / 4); ++i)
    w[i] = __shfl_xor_sync(kFullMask, w[i], mask);
  memcpy(&v, w, sizeof(A));
  return v;
}

// Calls f(T{}) with T the CUDA storage type of dtype (floats, int32, int64).
template <typename F>
cudaError_t visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    default:
      return SY_DISPATCH_FLOAT(dtype, T, { return f(T{}); });
  }
}

// Calls f(R{}) with R the reducer of op over T.

}  // namespace switchyard::cuda::reduction
