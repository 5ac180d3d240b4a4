// Device code of the reduction family. Reduce* and ArgMax/ArgMin share one scheme over an
// outer x len x inner view: contiguous rows (inner = 1) are folded by a thread, a warp or a block
// per row depending on the row length; other axes by blocks that tile neighbouring columns, so
// reads stay coalesced. Long reductions with few outputs are split into chunks whose partials a
// second pass folds. Reduced dims that do not form one block take a strided path (a group of
// threads per output). Every fold runs in an order fixed by the shape alone (no atomics), so the
// same input always gives the same bits. Softmax: a warp per row held in registers, a block per
// long row, column tiles otherwise. TopK: a thread per slice for small slices, else a CUB radix
// sort of order-preserving keys. CumSum: a block scan per row, or a thread per column.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda/std/limits>

#include <algorithm>
#include <climits>
#include <cstring>
#include <type_traits>

#include "common.cuh"
#include "reduce_impl.h"

namespace switchyard::cuda {
namespace {

using dev::from_float;
using dev::to_float;

constexpr int kBlock = 256;
constexpr unsigned kFullMask = 0xffffffffu;
// Blocks that keep every SM of a large GPU busy; fewer outputs than this split long reductions.
constexpr int64_t kTargetBlocks = 1024;

__host__ __device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

unsigned grid_for(int64_t blocks) {
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

// ---- reducers ------------------------------------------------------------------------------
// A reducer folds elements (In) into an accumulator (Acc) and finishes it into Out:
// init() is the identity of combine(); step(a, x, r) folds element x at reduced index r.

template <ReduceOp kOp, typename T>
struct SumLike {  // Sum, Mean, Prod, L1, SumSquare
  using In = T;
  using Out = T;
  using Acc = wide_t<T>;
  __device__ static Acc init() { return kOp == ReduceOp::Prod ? Acc(1) : Acc(0); }
  __device__ static Acc step(Acc a, T v, int64_t) {
    Acc x = load<Acc>(v);
    if constexpr (kOp == ReduceOp::L1) {
      if constexpr (std::is_integral_v<T>) {
        x = static_cast<int64_t>(x) < 0 ? Acc(0) - x : x;
      } else {
        x = x < Acc(0) ? -x : x;
      }
    }
    if constexpr (kOp == ReduceOp::SumSquare) x = x * x;
    return combine(a, x);
  }
  __device__ static Acc combine(Acc a, Acc b) { return kOp == ReduceOp::Prod ? a * b : a + b; }
  __device__ static T finish(Acc a, int64_t n) {
    if constexpr (kOp == ReduceOp::Mean) {
      if constexpr (std::is_integral_v<T>) {
        return n == 0 ? T(0) : static_cast<T>(static_cast<int64_t>(a) / n);
      } else {
        return store<T>(a / static_cast<Acc>(n));
      }
    } else {
      return store<T>(a);
    }
  }
};

template <bool kMax, typename T>
struct MaxMin {
  using In = T;
  using Out = T;
  using Acc = compute_t<T>;
  __device__ static Acc init() {
    if constexpr (std::is_floating_point_v<Acc>) {
      return kMax ? Acc(-INFINITY) : Acc(INFINITY);
    } else {
      return kMax ? ::cuda::std::numeric_limits<T>::lowest()
                  : ::cuda::std::numeric_limits<T>::max();
    }
  }
  __device__ static Acc step(Acc a, T v, int64_t) { return combine(a, load<Acc>(v)); }
  // A NaN wins over numbers (and stays), as in the cpu kernels.
  __device__ static Acc combine(Acc a, Acc x) {
    return (kMax ? x > a : x < a) || is_nan(x) ? x : a;
  }
  __device__ static T finish(Acc a, int64_t) { return store<T>(a); }
};

template <ReduceOp kOp, typename T>
struct RealSum {  // L2, LogSum
  using In = T;
  using Out = T;
  using Acc = real_t<T>;
  __device__ static Acc init() { return Acc(0); }
  __device__ static Acc step(Acc a, T v, int64_t) {
    Acc x = load<Acc>(v);
    return kOp == ReduceOp::L2 ? a + x * x : a + x;
  }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  __device__ static T finish(Acc a, int64_t) {
    return from_real<T>(kOp == ReduceOp::L2 ? sqrt_of(a) : log_of(a));
  }
};

template <typename R>
struct MaxSum {
  R max;
  R sum;  // of exp(x - max)
};

// Streaming log-sum-exp: a running maximum and the sum of exp(x - max), as in the cpu kernel.
template <typename T>
struct LogSumExp {
  using In = T;
  using Out = T;
  using R = real_t<T>;
  using Acc = MaxSum<R>;
  __device__ static Acc init() { return {R(-INFINITY), R(0)}; }
  __device__ static Acc add_scaled(Acc a, R m, R s) {
    if (m > a.max) {
      a.sum = a.sum * exp_of(a.max - m) + s;
      a.max = m;
    } else if (m == a.max) {
      a.sum += s;
    } else {
      a.sum += s * exp_of(m - a.max);
    }
    return a;
  }
  __device__ static Acc step(Acc a, T v, int64_t) { return add_scaled(a, load<R>(v), R(1)); }
  __device__ static Acc combine(Acc a, Acc b) {
    return b.sum != R(0) || isnan(b.sum) ? add_scaled(a, b.max, b.sum) : a;
  }
  __device__ static T finish(Acc a, int64_t) { return from_real<T>(a.max + log_of(a.sum)); }
};

template <typename V>
struct ValueIndex {
  V value;
  int64_t index;  // -1: nothing folded yet
};

// ArgMax/ArgMin: the best value and its index; equal values keep the lower (kLast: higher)
// index, so the result does not depend on the folding order.
template <bool kMax, bool kLast, typename T>
struct ArgReducer {
  using In = T;
  using Out = int64_t;
  using V = compute_t<T>;
  using Acc = ValueIndex<V>;
  // NaN ranks above every number for ArgMax and below for ArgMin.
  __device__ static bool better(V a, V b) {
    if (is_nan(a)) return !is_nan(b);
    if (is_nan(b)) return false;
    return kMax ? a > b : a < b;
  }
  __device__ static Acc init() { return {V(0), -1}; }
  __device__ static Acc step(Acc a, T v, int64_t r) { return combine(a, Acc{load<V>(v), r}); }
  __device__ static Acc combine(Acc a, Acc b) {
    if (b.index < 0) return a;
    if (a.index < 0 || better(b.value, a.value)) return b;
    if (better(a.value, b.value)) return a;
    return (kLast ? b.index > a.index : b.index < a.index) ? b : a;
  }
  __device__ static int64_t finish(Acc a, int64_t) { return a.index; }
};

// Elements (stage 1) are stepped; partials of an earlier pass are combined.
template <class R, bool kPartialIn>
using elem_t = std::conditional_t<kPartialIn, typename R::Acc, typename R::In>;
template <class R, bool kPartialOut>
using dest_t = std::conditional_t<kPartialOut, typename R::Acc, typename R::Out>;

template <class R, bool kPartialIn>
__device__ __forceinline__ typename R::Acc fold(typename R::Acc a, elem_t<R, kPartialIn> x,
                                                int64_t r) {
  if constexpr (kPartialIn) {
    return R::combine(a, x);
  } else {
    return R::step(a, x, r);
  }
}

template <class R, bool kPartialOut>
__device__ __forceinline__ void put(dest_t<R, kPartialOut>* out, int64_t at, typename R::Acc a,
                                    int64_t n) {
  if constexpr (kPartialOut) {
    out[at] = a;
  } else {
    out[at] = R::finish(a, n);
  }
}

// Folds the accumulators of an aligned group of `group` threads (1, 32 or the whole block, at
// most 32 warps) in a fixed order; the result is valid in the group's first thread.
template <class R>
__device__ typename R::Acc group_reduce(typename R::Acc a, int group, typename R::Acc* shared) {
  if (group == 1) return a;
  for (int o = 16; o > 0; o /= 2) a = R::combine(a, shfl_down(a, o));
  if (group == 32) return a;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = lane < static_cast<int>(blockDim.x / 32) ? shared[lane] : R::init();
    for (int o = 16; o > 0; o /= 2) a = R::combine(a, shfl_down(a, o));
  }
  __syncthreads();
  return a;
}

// ---- reduction kernels ---------------------------------------------------------------------

// Rows of `len` contiguous elements, each split in `chunks` pieces of `chunk_len`: a group of
// `group` threads folds one (row, chunk) and writes out[row * chunks + chunk].
template <class R, bool kPartialIn, bool kPartialOut>
__global__ void reduce_rows(const elem_t<R, kPartialIn>* in, dest_t<R, kPartialOut>* out,
                            int64_t rows, int64_t len, int64_t chunks, int64_t chunk_len, int64_t n,
                            int group) {
  using Acc = typename R::Acc;
  __shared__ __align__(16) unsigned char shared[32 * sizeof(Acc)];
  const int per_block = static_cast<int>(blockDim.x) / group;
  const int lane = static_cast<int>(threadIdx.x) % group;
  const int64_t tasks = rows * chunks;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / group; t < tasks;
       t += static_cast<int64_t>(gridDim.x) * per_block) {
    int64_t row = t / chunks;
    int64_t begin = (t - row * chunks) * chunk_len;
    int64_t end = begin + chunk_len < len ? begin + chunk_len : len;
    const elem_t<R, kPartialIn>* p = in + row * len;
    Acc a = R::init();
    for (int64_t r = begin + lane; r < end; r += group) a = fold<R, kPartialIn>(a, p[r], r);
    a = group_reduce<R>(a, group, reinterpret_cast<Acc*>(shared));
    if (lane == 0) put<R, kPartialOut>(out, t, a, n);
  }
}

// The middle dim of outer x len x inner (inner > 1), len split in `chunks` pieces: a block
// takes `tile` neighbouring columns of one (outer, chunk); kBlock / tile threads per column
// stride over the rows, then the column's first thread folds their partials in order and writes
// out[(o * chunks + chunk) * inner + column].
template <class R, bool kPartialIn, bool kPartialOut>
__global__ void reduce_columns(const elem_t<R, kPartialIn>* in, dest_t<R, kPartialOut>* out,
                               int64_t outer, int64_t len, int64_t inner, int64_t chunks,
                               int64_t chunk_len, int64_t n, int tile) {
  using Acc = typename R::Acc;
  __shared__ __align__(16) unsigned char shared_bytes[kBlock * sizeof(Acc)];
  Acc* shared = reinterpret_cast<Acc*>(shared_bytes);
  const int lanes = kBlock / tile;
  const int lane = static_cast<int>(threadIdx.x) / tile;
  const int column = static_cast<int>(threadIdx.x) % tile;
  const int64_t tiles = ceil_div(inner, tile);
  for (int64_t t = blockIdx.x; t < outer * tiles * chunks; t += gridDim.x) {
    int64_t chunk = t % chunks;
    int64_t o = t / chunks / tiles;
    int64_t col = (t / chunks % tiles) * tile + column;
    int64_t begin = chunk * chunk_len;
    int64_t end = begin + chunk_len < len ? begin + chunk_len : len;
    Acc a = R::init();
    if (lane < lanes && col < inner) {
      const elem_t<R, kPartialIn>* p = in + o * len * inner + col;
      for (int64_t r = begin + lane; r < end; r += lanes)
        a = fold<R, kPartialIn>(a, p[r * inner], r);
    }
    shared[threadIdx.x] = a;
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < tile && col < inner) {
      for (int j = 1; j < lanes; ++j) a = R::combine(a, shared[threadIdx.x + j * tile]);
      put<R, kPartialOut>(out, (o * chunks + chunk) * inner + col, a, n);
    }
    __syncthreads();
  }
}

__device__ __forceinline__ int64_t offset_of(int64_t i, int rank, const int64_t* dims,
                                             const int64_t* strides) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    int64_t q = i / dims[d];
    off += (i - q * dims[d]) * strides[d];
    i = q;
  }
  return off;
}

// Reduced dims that are not one block: a group of `group` threads per output element.
template <class R>
__global__ void reduce_generic(const typename R::In* in, typename R::Out* out, ReduceShape s,
                               int group) {
  using Acc = typename R::Acc;
  __shared__ __align__(16) unsigned char shared[32 * sizeof(Acc)];
  const int per_block = static_cast<int>(blockDim.x) / group;
  const int lane = static_cast<int>(threadIdx.x) % group;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / group;
       o < s.num_out; o += static_cast<int64_t>(gridDim.x) * per_block) {
    const typename R::In* base = in + offset_of(o, s.kept_rank, s.kept_dims, s.kept_strides);
    Acc a = R::init();
    for (int64_t r = lane; r < s.num_reduced; r += group)
      a = R::step(a, base[offset_of(r, s.reduced_rank, s.reduced_dims, s.reduced_strides)], r);
    a = group_reduce<R>(a, group, reinterpret_cast<Acc*>(shared));
    if (lane == 0) out[o] = R::finish(a, s.num_reduced);
  }
}

// ---- planning and launching ----------------------------------------------------------------

// Threads per row: one for short rows, a warp, or the whole block for long ones.
int group_for(int64_t len) { return len <= 16 ? 1 : len <= 2048 ? 32 : kBlock; }

// How one outer x len x inner reduction runs; a function of the shape alone.
struct AxisPlan {
  int group = 1;  // rows: threads per (row, chunk)
  int tile = 0;   // columns per block (0: rows)
  int64_t chunks = 1;
  int64_t chunk_len = 0;
};

AxisPlan plan_axis(int64_t outer, int64_t len, int64_t inner) {
  AxisPlan p;
  int64_t want = 1;
  if (inner == 1) {
    p.group = group_for(len);
    // Long rows and too few of them to fill the GPU: chunks of at least 4096 elements.
    if (p.group == kBlock && outer < kTargetBlocks)
      want = std::min(ceil_div(kTargetBlocks, outer), ceil_div(len, 4096));
  } else {
    p.tile = static_cast<int>(inner < 32 ? inner : 32);
    int64_t tasks = outer * ceil_div(inner, p.tile);
    // At least 16 rows per thread in a chunk.
    if (tasks < kTargetBlocks)
      want = std::min(ceil_div(kTargetBlocks, tasks), ceil_div(len, 16 * (kBlock / p.tile)));
  }
  p.chunk_len = ceil_div(len, std::max<int64_t>(want, 1));
  p.chunks = p.chunk_len == 0 ? 1 : ceil_div(len, p.chunk_len);
  return p;
}

template <class R>
size_t axis_workspace_bytes(int64_t outer, int64_t len, int64_t inner) {
  AxisPlan p = plan_axis(outer, len, inner);
  return p.chunks > 1 ? static_cast<size_t>(outer * inner * p.chunks) * sizeof(typename R::Acc) : 0;
}

template <class R, bool kPartialIn, bool kPartialOut>
void launch_rows(const void* in, void* out, int64_t rows, int64_t len, int64_t chunks,
                 int64_t chunk_len, int64_t n, int group, cudaStream_t stream) {
  int64_t blocks = ceil_div(rows * chunks, kBlock / group);
  reduce_rows<R, kPartialIn, kPartialOut><<<grid_for(blocks), kBlock, 0, stream>>>(
      static_cast<const elem_t<R, kPartialIn>*>(in), static_cast<dest_t<R, kPartialOut>*>(out),
      rows, len, chunks, chunk_len, n, group);
}

template <class R, bool kPartialIn, bool kPartialOut>
void launch_columns(const void* in, void* out, int64_t outer, int64_t len, int64_t inner,
                    int64_t chunks, int64_t chunk_len, int64_t n, int tile, cudaStream_t stream) {
  int64_t blocks = outer * ceil_div(inner, tile) * chunks;
  reduce_columns<R, kPartialIn, kPartialOut><<<grid_for(blocks), kBlock, 0, stream>>>(
      static_cast<const elem_t<R, kPartialIn>*>(in), static_cast<dest_t<R, kPartialOut>*>(out),
      outer, len, inner, chunks, chunk_len, n, tile);
}

// Reduces the middle dim of outer x len x inner; `n` is what finish() divides by (Mean).
template <class R>
cudaError_t reduce_axis(const void* in, void* out, int64_t outer, int64_t len, int64_t inner,
                        int64_t n, void* workspace, cudaStream_t stream) {
  AxisPlan p = plan_axis(outer, len, inner);
  if (p.tile == 0) {
    if (p.chunks == 1) {
      launch_rows<R, false, false>(in, out, outer, len, 1, len, n, p.group, stream);
    } else {
      launch_rows<R, false, true>(in, workspace, outer, len, p.chunks, p.chunk_len, n, p.group,
                                  stream);
      launch_rows<R, true, false>(workspace, out, outer, p.chunks, 1, p.chunks, n,
                                  group_for(p.chunks), stream);
    }
  } else {
    if (p.chunks == 1) {
      launch_columns<R, false, false>(in, out, outer, len, inner, 1, len, n, p.tile, stream);
    } else {
      launch_columns<R, false, true>(in, workspace, outer, len, inner, p.chunks, p.chunk_len, n,
                                     p.tile, stream);
      launch_columns<R, true, false>(workspace, out, outer, p.chunks, inner, 1, p.chunks, n, p.tile,
                                     stream);
    }
  }
  return cudaGetLastError();
}

template <class R>
cudaError_t reduce_any(const void* in, void* out, const ReduceShape& s, void* workspace,
                       cudaStream_t stream) {
  if (!s.generic)
    return reduce_axis<R>(in, out, s.outer, s.len, s.inner, s.num_reduced, workspace, stream);
  int group = group_for(s.num_reduced);
  reduce_generic<R><<<grid_for(ceil_div(s.num_out, kBlock / group)), kBlock, 0, stream>>>(
      static_cast<const typename R::In*>(in), static_cast<typename R::Out*>(out), s, group);
  return cudaGetLastError();
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
template <typename T, typename F>
cudaError_t visit_reducer(ReduceOp op, F&& f) {
  switch (op) {
    case ReduceOp::Sum:
      return f(SumLike<ReduceOp::Sum, T>{});
    case ReduceOp::Mean:
      return f(SumLike<ReduceOp::Mean, T>{});
    case ReduceOp::Prod:
      return f(SumLike<ReduceOp::Prod, T>{});
    case ReduceOp::L1:
      return f(SumLike<ReduceOp::L1, T>{});
    case ReduceOp::SumSquare:
      return f(SumLike<ReduceOp::SumSquare, T>{});
    case ReduceOp::Max:
      return f(MaxMin<true, T>{});
    case ReduceOp::Min:
      return f(MaxMin<false, T>{});
    case ReduceOp::L2:
      return f(RealSum<ReduceOp::L2, T>{});
    case ReduceOp::LogSum:
      return f(RealSum<ReduceOp::LogSum, T>{});
    case ReduceOp::LogSumExp:
      // Integer log-sum-exp truncates a rounded real: its folding order could show.
      if constexpr (std::is_integral_v<T>) {
        return cudaErrorInvalidValue;
      } else {
        return f(LogSumExp<T>{});
      }
  }
  return cudaErrorInvalidValue;
}

template <typename T, typename F>
cudaError_t visit_arg_reducer(bool is_max, bool select_last, F&& f) {
  if (is_max) return select_last ? f(ArgReducer<true, true, T>{}) : f(ArgReducer<true, false, T>{});
  return select_last ? f(ArgReducer<false, true, T>{}) : f(ArgReducer<false, false, T>{});
}

// ---- Softmax -------------------------------------------------------------------------------

// Rows of up to 32 * kPer elements: a warp per row, the row held in registers. The maximum
// ignores NaN as the cpu kernel's does (a NaN still turns the row to NaN through the sum).
template <bool kLog, int kPer, typename T>
__global__ void softmax_warp_rows(const T* in, T* out, int64_t rows, int len) {
  using A = compute_t<T>;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       row < rows; row += warps) {
    const T* x = in + row * len;
    T* y = out + row * len;
    A v[kPer];
    A m = A(-INFINITY);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      int j = lane + 32 * i;
      v[i] = j < len ? load<A>(x[j]) : A(-INFINITY);
      m = fmax(m, v[i]);
    }
    for (int o = 16; o > 0; o /= 2) m = fmax(m, shfl_xor(m, o));
    A sum = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      v[i] -= m;
      if (lane + 32 * i < len) sum += exp_of(v[i]);
    }
    // A butterfly: every lane ends with the same bits (addition commutes exactly).
    for (int o = 16; o > 0; o /= 2) sum += shfl_xor(sum, o);
    A scale = kLog ? log_of(sum) : A(1) / sum;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      int j = lane + 32 * i;
      if (j < len) y[j] = store<T>(kLog ? v[i] - scale : exp_of(v[i]) * scale);
    }
  }
}

// Folds v across the block (blockDim a multiple of 32) in a fixed order; every thread gets the
// result.
template <bool kMax, typename A>
__device__ A block_all_reduce(A v, A* shared) {
  for (int o = 16; o > 0; o /= 2) v = kMax ? fmax(v, shfl_xor(v, o)) : v + shfl_xor(v, o);
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
    v = kMax ? fmax(v, shared[w]) : v + shared[w];
  __syncthreads();
  return v;
}

// Long rows: a block per row, three passes (max, sum, write); kCache keeps the row in shared
// memory so it is read from global memory once.
template <bool kLog, bool kCache, typename T>
__global__ void softmax_block_rows(const T* in, T* out, int64_t rows, int64_t len) {
  using A = compute_t<T>;
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  A* cache = reinterpret_cast<A*>(dynamic_shared);
  __shared__ A shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * len;
    T* y = out + row * len;
    auto value = [&](int64_t j) { return kCache ? cache[j] : load<A>(x[j]); };
    A m = A(-INFINITY);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A v = load<A>(x[j]);
      if constexpr (kCache) cache[j] = v;
      m = fmax(m, v);
    }
    m = block_all_reduce<true>(m, shared);
    A sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += exp_of(value(j) - m);
    sum = block_all_reduce<false>(sum, shared);
    A scale = kLog ? log_of(sum) : A(1) / sum;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A v = value(j) - m;
      y[j] = store<T>(kLog ? v - scale : exp_of(v) * scale);
    }
    __syncthreads();  // the cache is refilled by the next row
  }
}

// A strided axis (inner > 1): a block per `tile` neighbouring columns of one outer index,
// kBlock / tile threads per column, three passes.
template <bool kLog, typename T>
__global__ void softmax_columns(const T* in, T* out, int64_t outer, int64_t len, int64_t inner,
                                int tile) {
  using A = compute_t<T>;
  __shared__ A partial[kBlock];
  __shared__ A column_value[32];
  const int lanes = kBlock / tile;
  const int lane = static_cast<int>(threadIdx.x) / tile;
  const int column = static_cast<int>(threadIdx.x) % tile;
  const int64_t tiles = ceil_div(inner, tile);
  // Folds the lanes' partials of each column in order; every thread gets its column's value.
  auto fold_lanes = [&](A v, bool is_max) {
    partial[threadIdx.x] = v;
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < tile) {
      for (int j = 1; j < lanes; ++j) {
        A p = partial[threadIdx.x + j * tile];
        v = is_max ? fmax(v, p) : v + p;
      }
      column_value[threadIdx.x] = v;
    }
    __syncthreads();
    v = column_value[column];
    __syncthreads();
    return v;
  };
  for (int64_t t = blockIdx.x; t < outer * tiles; t += gridDim.x) {
    int64_t o = t / tiles;
    int64_t col = (t % tiles) * tile + column;
    bool active = lane < lanes && col < inner;
    const T* x = in + o * len * inner + col;
    T* y = out + o * len * inner + col;
    A m = A(-INFINITY);
    if (active)
      for (int64_t r = lane; r < len; r += lanes) m = fmax(m, load<A>(x[r * inner]));
    m = fold_lanes(m, true);
    A sum = 0;
    if (active)
      for (int64_t r = lane; r < len; r += lanes) sum += exp_of(load<A>(x[r * inner]) - m);
    sum = fold_lanes(sum, false);
    A scale = kLog ? log_of(sum) : A(1) / sum;
    if (active)
      for (int64_t r = lane; r < len; r += lanes) {
        A v = load<A>(x[r * inner]) - m;
        y[r * inner] = store<T>(kLog ? v - scale : exp_of(v) * scale);
      }
  }
}

template <bool kLog, int kPer, typename T>
void launch_softmax_warp(const T* x, T* y, int64_t rows, int64_t len, cudaStream_t stream) {
  softmax_warp_rows<kLog, kPer, T><<<grid_for(ceil_div(rows, kBlock / 32)), kBlock, 0, stream>>>(
      x, y, rows, static_cast<int>(len));
}

template <bool kLog, typename T>
void softmax_typed(const T* x, T* y, int64_t outer, int64_t len, int64_t inner,
                   cudaStream_t stream) {
  using A = compute_t<T>;
  constexpr size_t kCacheBytes = 48 * 1024;  // dynamic shared memory without an opt-in
  if (inner > 1) {
    int tile = static_cast<int>(inner < 32 ? inner : 32);
    softmax_columns<kLog, T><<<grid_for(outer * ceil_div(inner, tile)), kBlock, 0, stream>>>(
        x, y, outer, len, inner, tile);
  } else if (len <= 32) {
    launch_softmax_warp<kLog, 1>(x, y, outer, len, stream);
  } else if (len <= 64) {
    launch_softmax_warp<kLog, 2>(x, y, outer, len, stream);
  } else if (len <= 128) {
    launch_softmax_warp<kLog, 4>(x, y, outer, len, stream);
  } else if (len <= 256) {
    launch_softmax_warp<kLog, 8>(x, y, outer, len, stream);
  } else if (len <= 512) {
    launch_softmax_warp<kLog, 16>(x, y, outer, len, stream);
  } else if (len <= 1024) {
    launch_softmax_warp<kLog, 32>(x, y, outer, len, stream);
  } else {
    int threads = len >= 16384 ? 1024 : len >= 4096 ? 512 : kBlock;
    size_t bytes = static_cast<size_t>(len) * sizeof(A);
    if (bytes <= kCacheBytes)
      softmax_block_rows<kLog, true, T>
          <<<grid_for(outer), threads, bytes, stream>>>(x, y, outer, len);
    else
      softmax_block_rows<kLog, false, T><<<grid_for(outer), threads, 0, stream>>>(x, y, outer, len);
  }
}

// ---- TopK ----------------------------------------------------------------------------------

template <typename T>
using sort_key_t = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

// An unsigned key whose ascending order is the cpu kernel's value order: -0 equals 0, NaN
// (any payload) ranks above +inf. `largest` flips it, so an ascending sort puts the largest
// first.
template <typename T>
__device__ __forceinline__ sort_key_t<T> order_key(T v, bool largest) {
  sort_key_t<T> key;
  if constexpr (std::is_integral_v<T>) {
    key = static_cast<sort_key_t<T>>(v) ^ (sort_key_t<T>(1) << (sizeof(T) * 8 - 1));
  } else if constexpr (std::is_same_v<T, double>) {
    uint64_t bits = isnan(v)   ? 0x7ff8000000000000ull
                    : v == 0.0 ? 0ull
                               : static_cast<uint64_t>(__double_as_longlong(v));
    key = bits >> 63 ? ~bits : bits | (1ull << 63);
  } else {
    float f = load<float>(v);
    uint32_t bits = isnan(f) ? 0x7fc00000u : f == 0.0f ? 0u : __float_as_uint(f);
    key = bits >> 31 ? ~bits : bits | 0x80000000u;
  }
  return largest ? ~key : key;
}

// Small slices: a thread per (outer, inner) slice picks the k first elements in (key, index)
// order, each pick scanning the slice for the smallest pair above the previous pick.
template <typename T>
__global__ void topk_small(const T* in, T* values, int64_t* indices, int64_t outer, int64_t len,
                           int64_t inner, int64_t k, bool largest) {
  using K = sort_key_t<T>;
  SY_GRID_STRIDE(s, outer * inner) {
    int64_t o = s / inner, i = s - o * inner;
    const T* x = in + o * len * inner + i;
    K prev_key = 0;
    int64_t prev = -1;
    for (int64_t j = 0; j < k; ++j) {
      K best_key = 0;
      int64_t best = -1;
      for (int64_t c = 0; c < len; ++c) {
        K key = order_key(x[c * inner], largest);
        bool after_prev = prev < 0 || key > prev_key || (key == prev_key && c > prev);
        if (after_prev && (best < 0 || key < best_key)) {
          best_key = key;
          best = c;
        }
      }
      int64_t at = (o * k + j) * inner + i;
      values[at] = x[best * inner];
      indices[at] = best;
      prev_key = best_key;
      prev = best;
    }
  }
}

// Keys and indices of slices [first, first + count) (slice s = o * inner + i), slice after
// slice.
template <typename T>
__global__ void topk_keys(const T* in, sort_key_t<T>* keys, int32_t* order, int64_t first,
                          int64_t count, int64_t len, int64_t inner, bool largest) {
  SY_GRID_STRIDE(e, count * len) {
    int64_t s = first + e / len, j = e % len;
    int64_t o = s / inner, i = s - o * inner;
    keys[e] = order_key(in[(o * len + j) * inner + i], largest);
    order[e] = static_cast<int32_t>(j);
  }
}

// The first k of the sorted slices [first, first + count): `sorted` holds their indices.
template <typename T>
__global__ void topk_gather(const T* in, const int32_t* sorted, T* values, int64_t* indices,
                            int64_t first, int64_t count, int64_t len, int64_t inner, int64_t k) {
  SY_GRID_STRIDE(e, count * k) {
    int64_t s = first + e / k, j = e % k;
    int64_t o = s / inner, i = s - o * inner;
    int64_t from = sorted[(e / k) * len + j];
    int64_t at = (o * k + j) * inner + i;
    values[at] = in[(o * len + from) * inner + i];
    indices[at] = from;
  }
}

struct SliceStart {
  int len;
  __host__ __device__ int operator()(int s) const { return s * len; }
};

// Small slices are picked by one thread each, larger ones sorted.
bool topk_is_small(int64_t len, int64_t k) { return len * k <= 4096; }

// Slices per sort call: each call sorts fewer than 2^31 elements.
int64_t slices_per_sort(int64_t slices, int64_t len) {
  return std::min<int64_t>(slices, INT_MAX / std::max<int64_t>(len, 1));
}

// A CUB radix sort of `count` slices of `len` keys (`single`: the only slice of the tensor,
// which the plain device sort spreads over the whole GPU).
template <typename K>
cudaError_t sort_slices(bool single, void* temp, size_t& temp_bytes, cub::DoubleBuffer<K>& keys,
                        cub::DoubleBuffer<int32_t>& order, int64_t count, int64_t len,
                        cudaStream_t stream) {
  if (single)
    return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, order, len, 0,
                                           static_cast<int>(sizeof(K) * 8), stream);
  auto starts = thrust::make_transform_iterator(thrust::make_counting_iterator<int>(0),
                                                SliceStart{static_cast<int>(len)});
  return cub::DeviceSegmentedRadixSort::SortPairs(
      temp, temp_bytes, keys, order, static_cast<int>(count * len), static_cast<int>(count), starts,
      starts + 1, 0, static_cast<int>(sizeof(K) * 8), stream);
}

// Workspace of a sorted TopK: keys and indices twice (the sort's double buffers) for one batch
// of slices, then CUB's temporary storage at *temp_offset. 0 when the sort cannot be sized.
template <typename T>
size_t topk_sort_bytes(int64_t outer, int64_t len, int64_t inner, size_t* temp_offset) {
  using K = sort_key_t<T>;
  if (len > INT_MAX) return 0;
  int64_t slices = outer * inner;
  int64_t batch = slices_per_sort(slices, len);
  size_t elems = static_cast<size_t>(batch * len);
  size_t offset = (2 * elems * (sizeof(K) + sizeof(int32_t)) + 255) / 256 * 256;
  size_t temp = 0;
  cub::DoubleBuffer<K> keys(nullptr, nullptr);
  cub::DoubleBuffer<int32_t> order(nullptr, nullptr);
  if (sort_slices<K>(slices == 1, nullptr, temp, keys, order, batch, len, nullptr) != cudaSuccess)
    return 0;
  *temp_offset = offset;
  return offset + temp;
}

template <typename T>
cudaError_t topk_typed(bool largest, const T* in, T* values, int64_t* indices, int64_t outer,
                       int64_t len, int64_t inner, int64_t k, void* workspace,
                       size_t workspace_bytes, cudaStream_t stream) {
  using K = sort_key_t<T>;
  int64_t slices = outer * inner;
  if (topk_is_small(len, k)) {
    topk_small<T><<<dev::blocks_for(slices), dev::kThreads, 0, stream>>>(in, values, indices, outer,
                                                                         len, inner, k, largest);
    return cudaGetLastError();
  }
  size_t temp_offset = 0;
  size_t needed = topk_sort_bytes<T>(outer, len, inner, &temp_offset);
  if (needed == 0 || needed > workspace_bytes) return cudaErrorInvalidValue;
  int64_t batch = slices_per_sort(slices, len);
  size_t elems = static_cast<size_t>(batch * len);
  auto* base = static_cast<unsigned char*>(workspace);
  K* keys0 = reinterpret_cast<K*>(base);
  K* keys1 = keys0 + elems;
  int32_t* order0 = reinterpret_cast<int32_t*>(keys1 + elems);
  int32_t* order1 = order0 + elems;
  for (int64_t first = 0; first < slices; first += batch) {
    int64_t count = std::min(batch, slices - first);
    topk_keys<T><<<dev::blocks_for(count * len), dev::kThreads, 0, stream>>>(
        in, keys0, order0, first, count, len, inner, largest);
    cub::DoubleBuffer<K> keys(keys0, keys1);
    cub::DoubleBuffer<int32_t> order(order0, order1);
    size_t temp_bytes = workspace_bytes - temp_offset;
    cudaError_t e = sort_slices<K>(slices == 1, base + temp_offset, temp_bytes, keys, order, count,
                                   len, stream);
    if (e != cudaSuccess) return e;
    topk_gather<T><<<dev::blocks_for(count * k), dev::kThreads, 0, stream>>>(
        in, order.Current(), values, indices, first, count, len, inner, k);
  }
  return cudaGetLastError();
}

// ---- CumSum --------------------------------------------------------------------------------

// A thread per (outer, inner) column walking the axis in order: the cpu kernel's order.
template <typename T>
__global__ void cumsum_columns(const T* in, T* out, int64_t outer, int64_t len, int64_t inner,
                               bool exclusive, bool reverse) {
  using A = wide_t<T>;
  SY_GRID_STRIDE(c, outer * inner) {
    int64_t o = c / inner;
    int64_t base = o * len * inner + (c - o * inner);
    A acc = 0;
#pragma unroll 4
    for (int64_t step = 0; step < len; ++step) {
      int64_t at = base + (reverse ? len - 1 - step : step) * inner;
      A v = load<A>(in[at]);
      if (exclusive) out[at] = store<T>(acc);
      acc = acc + v;
      if (!exclusive) out[at] = store<T>(acc);
    }
  }
}

// Long contiguous rows: a block per row scans tiles of kBlock * kItems elements (each thread
// kItems neighbours, then a warp scan and the warps' totals in order) carrying the running sum.
template <typename T>
__global__ void cumsum_rows(const T* in, T* out, int64_t rows, int64_t len, bool exclusive,
                            bool reverse) {
  using A = wide_t<T>;
  constexpr int kItems = 4;
  __shared__ A warp_total[kBlock / 32];
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * len;
    T* y = out + row * len;
    A carry = 0;
    for (int64_t tile = 0; tile < len; tile += kBlock * kItems) {
      int64_t first = tile + static_cast<int64_t>(threadIdx.x) * kItems;
      A incl[kItems];
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        int64_t p = first + i;
        A v = p < len ? load<A>(x[reverse ? len - 1 - p : p]) : A(0);
        incl[i] = i == 0 ? v : incl[i - 1] + v;
      }
      A scan = incl[kItems - 1];
      for (int o = 1; o < 32; o *= 2) {
        A up = shfl_up(scan, o);
        if (lane >= o) scan = up + scan;
      }
      A before_lane = shfl_up(scan, 1);
      if (lane == 0) before_lane = A(0);
      if (lane == 31) warp_total[warp] = scan;
      __syncthreads();
      A before_warp = 0, tile_total = 0;
      for (int w = 0; w < kBlock / 32; ++w) {
        if (w == warp) before_warp = tile_total;
        tile_total = tile_total + warp_total[w];
      }
      A before = carry + (before_warp + before_lane);
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        int64_t p = first + i;
        if (p < len)
          y[reverse ? len - 1 - p : p] =
              store<T>(exclusive ? (i == 0 ? before : before + incl[i - 1]) : before + incl[i]);
      }
      carry = carry + tile_total;
      __syncthreads();
    }
  }
}

}  // namespace

size_t reduce_workspace_bytes(ReduceOp op, DType dtype, const ReduceShape& s) {
  if (s.generic || s.num_out == 0) return 0;
  size_t bytes = 0;
  visit_dtype(dtype, [&](auto tag) {
    return visit_reducer<decltype(tag)>(op, [&](auto r) {
      bytes = axis_workspace_bytes<decltype(r)>(s.outer, s.len, s.inner);
      return cudaSuccess;
    });
  });
  return bytes;
}

cudaError_t launch_reduce(ReduceOp op, DType dtype, const void* in, void* out, const ReduceShape& s,
                          void* workspace, cudaStream_t stream) {
  if (s.num_out == 0) return cudaSuccess;
  return visit_dtype(dtype, [&](auto tag) {
    return visit_reducer<decltype(tag)>(
        op, [&](auto r) { return reduce_any<decltype(r)>(in, out, s, workspace, stream); });
  });
}

size_t arg_reduce_workspace_bytes(DType dtype, int64_t outer, int64_t len, int64_t inner) {
  size_t bytes = 0;
  visit_dtype(dtype, [&](auto tag) {
    bytes = axis_workspace_bytes<ArgReducer<true, false, decltype(tag)>>(outer, len, inner);
    return cudaSuccess;
  });
  return bytes;
}

cudaError_t launch_arg_reduce(bool is_max, bool select_last, DType dtype, const void* in,
                              int64_t* out, int64_t outer, int64_t len, int64_t inner,
                              void* workspace, cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  return visit_dtype(dtype, [&](auto tag) {
    return visit_arg_reducer<decltype(tag)>(is_max, select_last, [&](auto r) {
      return reduce_axis<decltype(r)>(in, out, outer, len, inner, len, workspace, stream);
    });
  });
}

cudaError_t launch_softmax(bool log, DType dtype, const void* in, void* out, int64_t outer,
                           int64_t len, int64_t inner, cudaStream_t stream) {
  if (outer * len * inner == 0) return cudaSuccess;
  return SY_DISPATCH_FLOAT(dtype, T, {
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (log)
      softmax_typed<true>(x, y, outer, len, inner, stream);
    else
      softmax_typed<false>(x, y, outer, len, inner, stream);
    return cudaGetLastError();
  });
}

size_t topk_workspace_bytes(DType dtype, int64_t outer, int64_t len, int64_t inner, int64_t k) {
  if (outer * inner * k == 0 || topk_is_small(len, k)) return 0;
  size_t bytes = 0;
  visit_dtype(dtype, [&](auto tag) {
    size_t offset = 0;
    bytes = topk_sort_bytes<decltype(tag)>(outer, len, inner, &offset);
    return cudaSuccess;
  });
  return bytes;
}

cudaError_t launch_topk(bool largest, DType dtype, const void* in, void* values, int64_t* indices,
                        int64_t outer, int64_t len, int64_t inner, int64_t k, void* workspace,
                        size_t workspace_bytes, cudaStream_t stream) {
  if (outer * inner * k == 0) return cudaSuccess;
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    return topk_typed<T>(largest, static_cast<const T*>(in), static_cast<T*>(values), indices,
                         outer, len, inner, k, workspace, workspace_bytes, stream);
  });
}

cudaError_t launch_cumsum(bool exclusive, bool reverse, DType dtype, const void* in, void* out,
                          int64_t outer, int64_t len, int64_t inner, cudaStream_t stream) {
  if (outer * len * inner == 0) return cudaSuccess;
  return visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (inner == 1 && len > 64)
      cumsum_rows<T><<<grid_for(outer), kBlock, 0, stream>>>(x, y, outer, len, exclusive, reverse);
    else
      cumsum_columns<T><<<dev::blocks_for(outer * inner), dev::kThreads, 0, stream>>>(
          x, y, outer, len, inner, exclusive, reverse);
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda
