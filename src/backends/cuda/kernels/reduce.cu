// Device code of Reduce* and ArgMax/ArgMin (Softmax: softmax.cu; TopK and CumSum:
// topk_cumsum.cu). Both share one scheme over an outer x len x inner view: contiguous rows
// (inner = 1) are folded by a thread, a warp or a block per row depending on the row length;
// other axes by blocks that tile neighbouring columns, so reads stay coalesced. Long reductions
// with few outputs are split into chunks whose partials a second pass folds. Reduced dims that
// do not form one block take a strided path (a group of threads per output). Every fold runs in
// an order fixed by the shape alone (no atomics), so the same input always gives the same bits.
#include "backends/cuda/kernels/reduce_device.cuh"

namespace switchyard::cuda {
namespace {

using namespace reduction;  // NOLINT: the family's shared device helpers

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

}  // namespace switchyard::cuda
