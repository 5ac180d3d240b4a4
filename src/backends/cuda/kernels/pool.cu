// Device code of the pool family (launch API in pool_impl.h). Windowed pools run one thread per
// output element and visit the window's taps in row-major order, so ties and NaNs resolve like
// the CPU kernel (the first maximum wins; a NaN beats every number). Global pools reduce each
// (n, c) plane with one warp (planes up to 1024 values) or one 256-thread block.
#include <cmath>
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/pool_impl.h"

namespace switchyard::cuda {

namespace {

using dev::kThreads;

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Type in which max pooling compares: float for the half types, else the storage type.
template <typename T>
using cmp_t = std::conditional_t<kIsHalf<T>, float, T>;
// Accumulator of sums: double for double, float otherwise.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename C, typename T>
__device__ __forceinline__ C load(const T* p, int64_t i) {
  if constexpr (kIsHalf<T>) {
    return static_cast<C>(dev::to_float(p[i]));
  } else {
    return static_cast<C>(p[i]);
  }
}

template <typename T, typename C>
__device__ __forceinline__ T store_cast(C v) {
  if constexpr (kIsHalf<T>) {
    return dev::from_float<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// The most negative finite value (the CPU kernel's start value of a maximum).
template <typename C>
__device__ __forceinline__ C lowest() {
  if constexpr (std::is_same_v<C, double>) {
    return -1.7976931348623157e308;
  } else if constexpr (std::is_same_v<C, float>) {
    return -3.402823466e38f;
  } else {
    static_assert(std::is_same_v<C, int8_t> || std::is_same_v<C, uint8_t>);
    return std::is_signed_v<C> ? static_cast<C>(-128) : C(0);
  }
}

template <typename C>
__device__ __forceinline__ bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return isnan(v);
  } else {
    return false;
  }
}

template <typename A>
__device__ __forceinline__ A acc_pow(A base, A e) {
  if constexpr (std::is_same_v<A, double>) {
    return pow(base, e);
  } else {
    return powf(base, e);
  }
}

template <typename A>
__device__ __forceinline__ A acc_abs(A v) {
  if constexpr (std::is_same_v<A, double>) {
    return fabs(v);
  } else {
    return fabsf(v);
  }
}

// Flat offset `off` (row-major over the input's spatial dims) rewritten column-major.
__device__ __forceinline__ int64_t column_major(int64_t off, const PoolWindow& w) {
  int64_t coords[kPoolMaxSpatial];
  for (int d = w.spatial - 1; d >= 0; --d) {
    coords[d] = off % w.in[d];
    off /= w.in[d];
  }
  int64_t r = 0, stride = 1;
  for (int d = 0; d < w.spatial; ++d) {
    r += coords[d] * stride;
    stride *= w.in[d];
  }
  return r;
}

enum Tap : int { kData = 0, kPadding = 1, kOutside = 2 };

template <PoolMode kMode, typename T>
__global__ void pool_kernel(const T* x, T* y, int64_t* indices, PoolWindow w, int64_t total,
                            bool column_major_indices, bool count_include_pad, int64_t p,
                            int64_t channels, bool channels_last) {
  using C = cmp_t<T>;
  using A = acc_t<T>;
  SY_GRID_STRIDE(i, total) {
    // The plane (n, c) and output position o of element i; a tap at spatial offset `off` reads
    // xs[off * step].
    int64_t plane, o;
    const T* xs;
    int64_t step = 1;
    if (channels_last) {
      const int64_t c = i % channels;
      const int64_t r = i / channels;
      const int64_t n = r / w.out_size;
      o = r - n * w.out_size;
      plane = n * channels + c;
      xs = x + n * w.in_size * channels + c;
      step = channels;
    } else {
      plane = i / w.out_size;
      o = i - plane * w.out_size;
      xs = x + plane * w.in_size;
    }
    int64_t start[kPoolMaxSpatial];
    for (int d = w.spatial - 1; d >= 0; --d) {
      const int64_t q = o / w.out[d];
      start[d] = (o - q * w.out[d]) * w.strides[d] - w.pad_begin[d];
      o = q;
    }
    C best = lowest<C>();
    int64_t best_off = -1;
    A sum = 0;
    int64_t count = 0;
    int64_t kc[kPoolMaxSpatial] = {};
    for (int64_t k = 0; k < w.ksize; ++k) {
      int64_t off = 0;
      int tap = kData;
      for (int d = 0; d < w.spatial; ++d) {
        const int64_t pos = start[d] + kc[d] * w.dilations[d];
        if (pos >= 0 && pos < w.in[d]) {
          off = off * w.in[d] + pos;
        } else if (pos < w.in[d] + w.explicit_end[d]) {
          if (tap == kData) tap = kPadding;
        } else {
          tap = kOutside;
        }
      }
      if (tap == kData) {
        if constexpr (kMode == PoolMode::Max) {
          const C v = load<C>(xs, off * step);
          if (best_off < 0 || v > best || (is_nan(v) && !is_nan(best))) {
            best = v;
            best_off = off;
          }
        } else if constexpr (kMode == PoolMode::Average) {
          sum += load<A>(xs, off * step);
          ++count;
        } else {
          sum += acc_pow(acc_abs(load<A>(xs, off * step)), static_cast<A>(p));
        }
      } else if (tap == kPadding && count_include_pad) {
        ++count;
      }
      for (int d = w.spatial - 1; d >= 0; --d) {
        if (++kc[d] < w.kernel[d]) break;
        kc[d] = 0;
      }
    }
    if constexpr (kMode == PoolMode::Max) {
      y[i] = store_cast<T>(best);
      if (indices) {
        const int64_t spatial = best_off < 0           ? 0
                                : column_major_indices ? column_major(best_off, w)
                                                       : best_off;
        indices[i] = plane * w.in_size + spatial;
      }
    } else if constexpr (kMode == PoolMode::Average) {
      y[i] = store_cast<T>(count ? sum / static_cast<A>(count) : A(0));
    } else {
      y[i] = store_cast<T>(acc_pow(sum, A(1) / static_cast<A>(p)));
    }
  }
}

template <typename T>
cudaError_t pool_typed(const PoolArgs& a, cudaStream_t stream) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const int64_t total = a.planes * a.window.out_size;
  const unsigned blocks = dev::blocks_for(total);
  if (a.channels_last && (a.indices || a.channels < 1)) return cudaErrorInvalidValue;
  if (a.mode == PoolMode::Max) {
    pool_kernel<PoolMode::Max, T>
        <<<blocks, kThreads, 0, stream>>>(x, y, a.indices, a.window, total, a.column_major_indices,
                                          a.count_include_pad, a.p, a.channels, a.channels_last);
  } else if constexpr (std::is_integral_v<T>) {
    return cudaErrorInvalidValue;  // integer pooling is max pooling only
  } else if (a.mode == PoolMode::Average) {
    pool_kernel<PoolMode::Average, T>
        <<<blocks, kThreads, 0, stream>>>(x, y, nullptr, a.window, total, false,
                                          a.count_include_pad, a.p, a.channels, a.channels_last);
  } else {
    pool_kernel<PoolMode::Lp, T><<<blocks, kThreads, 0, stream>>>(
        x, y, nullptr, a.window, total, false, false, a.p, a.channels, a.channels_last);
  }
  return cudaGetLastError();
}

// Global pools. R is the reduction type: the max's comparison type (int for the 8-bit integers,
// which warp shuffles do not move) or the sum's accumulator.
template <PoolMode kMode, typename T>
using reduce_t =
    std::conditional_t<kMode == PoolMode::Max,
                       std::conditional_t<std::is_integral_v<T>, int, cmp_t<T>>, acc_t<T>>;

template <PoolMode kMode, typename R>
__device__ __forceinline__ R combine(R a, R b) {
  if constexpr (kMode == PoolMode::Max) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b > a ? b : a;
  } else {
    return a + b;
  }
}

template <PoolMode kMode, typename T>
__device__ __forceinline__ reduce_t<kMode, T> identity() {
  using R = reduce_t<kMode, T>;
  if constexpr (kMode != PoolMode::Max) {
    return R(0);
  } else if constexpr (std::is_floating_point_v<R>) {
    return -static_cast<R>(INFINITY);
  } else {
    return static_cast<R>(lowest<T>());
  }
}

// Reduction over a group of kWidth threads (a warp, or the whole kThreads block); every thread
// of the group gets the result. Block groups use `smem` (kThreads / 32 values).
template <PoolMode kMode, int kWidth, typename R>
__device__ __forceinline__ R group_reduce(R v, R id, R* smem) {
  for (int o = 16; o > 0; o >>= 1) v = combine<kMode>(v, __shfl_xor_sync(0xffffffffu, v, o));
  if constexpr (kWidth > 32) {
    constexpr int kWarps = kWidth / 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    __syncthreads();  // smem may still be read from the previous plane
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < kWarps ? smem[lane] : id;
    for (int o = 16; o > 0; o >>= 1) v = combine<kMode>(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  return v;
}

// One tap of a global pool folded into the running value v.
template <PoolMode kMode, typename R>
__device__ __forceinline__ R accumulate(R v, R x, int64_t p) {
  if constexpr (kMode == PoolMode::Lp) {
    return v + acc_pow(acc_abs(x), static_cast<R>(p));
  } else {
    return combine<kMode>(v, x);
  }
}

// A global pool's result from the reduction v over `size` taps.
template <PoolMode kMode, typename T, typename R>
__device__ __forceinline__ T global_result(R v, int64_t size, int64_t p) {
  if constexpr (kMode == PoolMode::Max) {
    return store_cast<T>(v);
  } else if constexpr (kMode == PoolMode::Average) {
    return store_cast<T>(v / static_cast<R>(size));
  } else {
    return store_cast<T>(acc_pow(v, R(1) / static_cast<R>(p)));
  }
}

template <PoolMode kMode, int kWidth, typename T>
__global__ void __launch_bounds__(kThreads)
    global_pool_kernel(const T* x, T* y, int64_t planes, int64_t size, int64_t p) {
  using R = reduce_t<kMode, T>;
  __shared__ R smem[kThreads / 32];
  constexpr int kPerBlock = kThreads / kWidth;
  const int lane = static_cast<int>(threadIdx.x) % kWidth;
  const R id = identity<kMode, T>();
  for (int64_t plane = static_cast<int64_t>(blockIdx.x) * kPerBlock + threadIdx.x / kWidth;
       plane < planes; plane += static_cast<int64_t>(gridDim.x) * kPerBlock) {
    const T* xs = x + plane * size;
    R v = id;
    for (int64_t j = lane; j < size; j += kWidth) v = accumulate<kMode>(v, load<R>(xs, j), p);
    v = group_reduce<kMode, kWidth>(v, id, smem);
    if (lane == 0) y[plane] = global_result<kMode, T>(v, size, p);
  }
}

// Channels-last global pool: one thread per (n, c), reading x[n, :, c]; neighbouring threads
// read neighbouring channels, so every load of the loop is coalesced.
template <PoolMode kMode, typename T>
__global__ void global_pool_channels_last_kernel(const T* x, T* y, int64_t planes, int64_t size,
                                                 int64_t channels, int64_t p) {
  using R = reduce_t<kMode, T>;
  SY_GRID_STRIDE(i, planes) {
    const int64_t n = i / channels;
    const T* xs = x + n * size * channels + (i - n * channels);
    R v = identity<kMode, T>();
    for (int64_t j = 0; j < size; ++j) v = accumulate<kMode>(v, load<R>(xs, j * channels), p);
    y[i] = global_result<kMode, T>(v, size, p);
  }
}

template <PoolMode kMode, typename T>
cudaError_t launch_global_mode(const GlobalPoolArgs& a, cudaStream_t stream) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  if (a.channels_last) {
    if (a.channels < 1) return cudaErrorInvalidValue;
    global_pool_channels_last_kernel<kMode, T><<<dev::blocks_for(a.planes), kThreads, 0, stream>>>(
        x, y, a.planes, a.plane_size, a.channels, a.p);
  } else if (a.plane_size <= 1024) {
    global_pool_kernel<kMode, 32, T>
        <<<dev::blocks_for(a.planes, kThreads / 32), kThreads, 0, stream>>>(x, y, a.planes,
                                                                            a.plane_size, a.p);
  } else {
    global_pool_kernel<kMode, kThreads, T>
        <<<dev::blocks_for(a.planes, 1), kThreads, 0, stream>>>(x, y, a.planes, a.plane_size, a.p);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t global_pool_typed(const GlobalPoolArgs& a, cudaStream_t stream) {
  if (a.mode == PoolMode::Max) return launch_global_mode<PoolMode::Max, T>(a, stream);
  if constexpr (std::is_integral_v<T>) {
    return cudaErrorInvalidValue;  // integer pooling is max pooling only
  } else {
    if (a.mode == PoolMode::Average) return launch_global_mode<PoolMode::Average, T>(a, stream);
    return launch_global_mode<PoolMode::Lp, T>(a, stream);
  }
}

}  // namespace

cudaError_t launch_pool(const PoolArgs& a, cudaStream_t stream) {
  switch (a.dtype) {
    case DType::Int8:
      return pool_typed<int8_t>(a, stream);
    case DType::UInt8:
      return pool_typed<uint8_t>(a, stream);
    default:
      return SY_DISPATCH_FLOAT(a.dtype, T, { return pool_typed<T>(a, stream); });
  }
}

cudaError_t launch_global_pool(const GlobalPoolArgs& a, cudaStream_t stream) {
  switch (a.dtype) {
    case DType::Int8:
      return global_pool_typed<int8_t>(a, stream);
    case DType::UInt8:
      return global_pool_typed<uint8_t>(a, stream);
    default:
      return SY_DISPATCH_FLOAT(a.dtype, T, { return global_pool_typed<T>(a, stream); });
  }
}

}  // namespace switchyard::cuda
