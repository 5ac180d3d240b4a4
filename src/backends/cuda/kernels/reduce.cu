// Device code of the reduction family: one block per output element for Reduce* (threads stride
// over the reduced elements, then a shuffle + shared-memory block reduction — the combining
// order is fixed, so results are deterministic); a block per row for Softmax along a contiguous
// axis, a thread per column otherwise; a thread per output for ArgMax/ArgMin.
#include <cfloat>
#include <cmath>

#include "common.cuh"
#include "reduce_impl.h"

namespace switchyard::cuda {
namespace {

using dev::from_float;
using dev::to_float;

template <typename T>
struct Acc {
  using type = float;
};
template <>
struct Acc<double> {
  using type = double;
};
template <>
struct Acc<int32_t> {
  using type = int64_t;
};
template <>
struct Acc<int64_t> {
  using type = int64_t;
};

template <typename A, typename T>
__device__ __forceinline__ A load(T v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<A>(to_float(v));
  } else {
    return static_cast<A>(v);
  }
}

template <typename T, typename A>
__device__ __forceinline__ T store(A v) {
  if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return from_float<T>(static_cast<float>(v));
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

template <typename A>
__device__ __forceinline__ A lowest() {
  if constexpr (std::is_floating_point_v<A>) {
    return -INFINITY;
  } else {
    return static_cast<A>(INT64_MIN);
  }
}
template <typename A>
__device__ __forceinline__ A highest() {
  if constexpr (std::is_floating_point_v<A>) {
    return INFINITY;
  } else {
    return static_cast<A>(INT64_MAX);
  }
}

// Each op: init, step (fold one input value), combine (fold a partial), finish.
template <ReduceOp kOp, typename A>
struct Op {
  __device__ static A init() {
    if constexpr (kOp == ReduceOp::Prod) return A(1);
    if constexpr (kOp == ReduceOp::Max) return lowest<A>();
    if constexpr (kOp == ReduceOp::Min) return highest<A>();
    return A(0);
  }
  __device__ static A step(A acc, A x) {
    if constexpr (kOp == ReduceOp::L1) return acc + (x < A(0) ? A(0) - x : x);
    if constexpr (kOp == ReduceOp::L2 || kOp == ReduceOp::SumSquare) return acc + x * x;
    return combine(acc, x);
  }
  __device__ static A combine(A a, A b) {
    if constexpr (kOp == ReduceOp::Prod) return a * b;
    if constexpr (kOp == ReduceOp::Max) return (b > a || is_nan(b) || is_nan(a)) ? (is_nan(a) ? a : b) : a;
    if constexpr (kOp == ReduceOp::Min) return (b < a || is_nan(b) || is_nan(a)) ? (is_nan(a) ? a : b) : a;
    return a + b;
  }
  __device__ static A finish(A a, int64_t n) {
    if constexpr (kOp == ReduceOp::Mean) {
      if constexpr (std::is_floating_point_v<A>) {
        return a / static_cast<A>(n);
      } else {
        return n == 0 ? A(0) : a / static_cast<A>(n);
      }
    }
    if constexpr (kOp == ReduceOp::L2) return sqrt(a);
    if constexpr (kOp == ReduceOp::LogSum) return log(a);
    return a;
  }
};

template <typename A, typename F>
__device__ A block_reduce(A v, F combine, A* shared) {
  for (int o = 16; o > 0; o /= 2) v = combine(v, __shfl_down_sync(0xffffffffu, v, o));
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) / 32;
  if (warp == 0) {
    // A tree over the `warps` partials; lanes past them take part in the shuffles only.
    v = lane < warps ? shared[lane] : shared[0];
    for (int o = 16; o > 0; o /= 2) {
      A other = __shfl_down_sync(0xffffffffu, v, o);
      if (lane + o < warps) v = combine(v, other);
    }
  }
  __syncthreads();
  return v;  // valid in thread 0
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

template <ReduceOp kOp, typename T>
__global__ void reduce_kernel(const T* in, T* out, ReduceShape s) {
  using A = typename Acc<T>::type;
  __shared__ A shared[32];
  using O = Op<kOp, A>;
  for (int64_t o = blockIdx.x; o < s.num_out; o += gridDim.x) {
    int64_t base = offset_of(o, s.kept_rank, s.kept_dims, s.kept_strides);
    A acc = O::init();
    for (int64_t r = threadIdx.x; r < s.num_reduced; r += blockDim.x)
      acc = O::step(acc, load<A>(in[base + offset_of(r, s.reduced_rank, s.reduced_dims,
                                                      s.reduced_strides)]));
    acc = block_reduce(acc, [](A a, A b) { return O::combine(a, b); }, shared);
    if (threadIdx.x == 0) out[o] = store<T>(O::finish(acc, s.num_reduced));
  }
}

// log(sum(exp(x))) with the maximum taken out first (two passes over the reduced elements).
template <typename T>
__global__ void logsumexp_kernel(const T* in, T* out, ReduceShape s) {
  using A = typename Acc<T>::type;
  __shared__ A shared[32];
  __shared__ A row_max;
  using Max = Op<ReduceOp::Max, A>;
  for (int64_t o = blockIdx.x; o < s.num_out; o += gridDim.x) {
    int64_t base = offset_of(o, s.kept_rank, s.kept_dims, s.kept_strides);
    A m = Max::init();
    for (int64_t r = threadIdx.x; r < s.num_reduced; r += blockDim.x)
      m = Max::combine(m, load<A>(in[base + offset_of(r, s.reduced_rank, s.reduced_dims,
                                                      s.reduced_strides)]));
    m = block_reduce(m, [](A a, A b) { return Max::combine(a, b); }, shared);
    if (threadIdx.x == 0) row_max = m;
    __syncthreads();
    m = row_max;
    A sum = 0;
    bool finite = !is_nan(m) && !isinf(m);
    if (finite) {
      for (int64_t r = threadIdx.x; r < s.num_reduced; r += blockDim.x)
        sum += exp(load<A>(in[base + offset_of(r, s.reduced_rank, s.reduced_dims,
                                                s.reduced_strides)]) - m);
    }
    sum = block_reduce(sum, [](A a, A b) { return a + b; }, shared);
    if (threadIdx.x == 0) out[o] = store<T>(finite ? m + log(sum) : m);
    __syncthreads();
  }
}

template <typename T>
cudaError_t reduce_typed(ReduceOp op, const T* in, T* out, const ReduceShape& s,
                         cudaStream_t stream) {
  int threads = s.num_reduced >= 256 ? 256 : static_cast<int>(((s.num_reduced + 31) / 32) * 32);
  if (threads < 32) threads = 32;
  unsigned blocks = static_cast<unsigned>(s.num_out < 65535 * 8 ? s.num_out : 65535 * 8);
  switch (op) {
#define SY_REDUCE_CASE(name)                                                   \
  case ReduceOp::name:                                                         \
    reduce_kernel<ReduceOp::name, T><<<blocks, threads, 0, stream>>>(in, out, s); \
    break;
    SY_REDUCE_CASE(Sum)
    SY_REDUCE_CASE(Mean)
    SY_REDUCE_CASE(Max)
    SY_REDUCE_CASE(Min)
    SY_REDUCE_CASE(Prod)
    SY_REDUCE_CASE(L1)
    SY_REDUCE_CASE(SumSquare)
#undef SY_REDUCE_CASE
    case ReduceOp::L2:
    case ReduceOp::LogSum:
    case ReduceOp::LogSumExp:
      if constexpr (std::is_integral_v<T>) {
        return cudaErrorInvalidValue;
      } else {
        if (op == ReduceOp::L2)
          reduce_kernel<ReduceOp::L2, T><<<blocks, threads, 0, stream>>>(in, out, s);
        else if (op == ReduceOp::LogSum)
          reduce_kernel<ReduceOp::LogSum, T><<<blocks, threads, 0, stream>>>(in, out, s);
        else
          logsumexp_kernel<T><<<blocks, threads, 0, stream>>>(in, out, s);
      }
      break;
  }
  return cudaGetLastError();
}

template <bool kMax, typename A>
__device__ __forceinline__ bool better(A a, A b) {
  if (is_nan(a)) return !is_nan(b);
  if (is_nan(b)) return false;
  return kMax ? a > b : a < b;
}

template <bool kMax, typename T>
__global__ void arg_kernel(const T* in, int64_t* out, int64_t outer, int64_t len, int64_t inner,
                           bool last) {
  using A = typename Acc<T>::type;
  SY_GRID_STRIDE(i, outer * inner) {
    int64_t o = i / inner, k = i - o * inner;
    const T* p = in + o * len * inner + k;
    A best = load<A>(p[0]);
    int64_t at = 0;
    for (int64_t j = 1; j < len; ++j) {
      A v = load<A>(p[j * inner]);
      if (last ? !better<kMax>(best, v) : better<kMax>(v, best)) {
        best = v;
        at = j;
      }
    }
    out[i] = at;
  }
}

// One block per row of a contiguous axis.
template <bool kLog, typename T>
__global__ void softmax_rows(const T* in, T* out, int64_t rows, int64_t len) {
  using A = typename Acc<T>::type;
  __shared__ A shared[32];
  __shared__ A bcast;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * len;
    T* y = out + row * len;
    A m = -INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) m = fmax(m, load<A>(x[j]));
    m = block_reduce(m, [](A a, A b) { return fmax(a, b); }, shared);
    if (threadIdx.x == 0) bcast = m;
    __syncthreads();
    m = bcast;
    A sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += exp(load<A>(x[j]) - m);
    sum = block_reduce(sum, [](A a, A b) { return a + b; }, shared);
    if (threadIdx.x == 0) bcast = sum;
    __syncthreads();
    sum = bcast;
    A log_sum = log(sum);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A v = load<A>(x[j]) - m;
      y[j] = store<T>(kLog ? v - log_sum : exp(v) / sum);
    }
    __syncthreads();
  }
}

// One thread per (outer, inner) column of a strided axis.
template <bool kLog, typename T>
__global__ void softmax_columns(const T* in, T* out, int64_t outer, int64_t len, int64_t inner) {
  using A = typename Acc<T>::type;
  SY_GRID_STRIDE(i, outer * inner) {
    int64_t o = i / inner, k = i - o * inner;
    const T* x = in + o * len * inner + k;
    T* y = out + o * len * inner + k;
    A m = -INFINITY;
    for (int64_t j = 0; j < len; ++j) m = fmax(m, load<A>(x[j * inner]));
    A sum = 0;
    for (int64_t j = 0; j < len; ++j) sum += exp(load<A>(x[j * inner]) - m);
    A log_sum = log(sum);
    for (int64_t j = 0; j < len; ++j) {
      A v = load<A>(x[j * inner]) - m;
      y[j * inner] = store<T>(kLog ? v - log_sum : exp(v) / sum);
    }
  }
}

}  // namespace

cudaError_t launch_reduce(ReduceOp op, DType dtype, const void* in, void* out,
                          const ReduceShape& s, cudaStream_t stream) {
  if (s.num_out == 0) return cudaSuccess;
  switch (dtype) {
    case DType::Int32:
      return reduce_typed(op, static_cast<const int32_t*>(in), static_cast<int32_t*>(out), s,
                          stream);
    case DType::Int64:
      return reduce_typed(op, static_cast<const int64_t*>(in), static_cast<int64_t*>(out), s,
                          stream);
    default:
      return SY_DISPATCH_FLOAT(dtype, T, {
        return reduce_typed(op, static_cast<const T*>(in), static_cast<T*>(out), s, stream);
      });
  }
}

cudaError_t launch_arg_reduce(bool is_max, bool select_last, DType dtype, const void* in,
                              int64_t* out, int64_t outer, int64_t len, int64_t inner,
                              cudaStream_t stream) {
  int64_t n = outer * inner;
  if (n == 0) return cudaSuccess;
  auto go = [&](auto* typed) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(typed)>>;
    if (is_max)
      arg_kernel<true, T><<<dev::blocks_for(n), dev::kThreads, 0, stream>>>(
          static_cast<const T*>(in), out, outer, len, inner, select_last);
    else
      arg_kernel<false, T><<<dev::blocks_for(n), dev::kThreads, 0, stream>>>(
          static_cast<const T*>(in), out, outer, len, inner, select_last);
    return cudaGetLastError();
  };
  switch (dtype) {
    case DType::Int32:
      return go(static_cast<const int32_t*>(nullptr));
    case DType::Int64:
      return go(static_cast<const int64_t*>(nullptr));
    default:
      return SY_DISPATCH_FLOAT(dtype, T, { return go(static_cast<const T*>(nullptr)); });
  }
}

cudaError_t launch_softmax(bool log, DType dtype, const void* in, void* out, int64_t outer,
                           int64_t len, int64_t inner, cudaStream_t stream) {
  if (outer * len * inner == 0) return cudaSuccess;
  return SY_DISPATCH_FLOAT(dtype, T, {
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (inner == 1) {
      int threads = len >= 256 ? 256 : static_cast<int>(((len + 31) / 32) * 32);
      unsigned blocks = static_cast<unsigned>(outer < 65535 * 8 ? outer : 65535 * 8);
      if (log)
        softmax_rows<true, T><<<blocks, threads, 0, stream>>>(x, y, outer, len);
      else
        softmax_rows<false, T><<<blocks, threads, 0, stream>>>(x, y, outer, len);
    } else {
      unsigned blocks = dev::blocks_for(outer * inner);
      if (log)
        softmax_columns<true, T><<<blocks, dev::kThreads, 0, stream>>>(x, y, outer, len, inner);
      else
        softmax_columns<false, T><<<blocks, dev::kThreads, 0, stream>>>(x, y, outer, len, inner);
    }
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda
