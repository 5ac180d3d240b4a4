// Device code of Gather/GatherElements/GatherND, ScatterElements/ScatterND and OneHot
// (data_impl.h). An index out of range is never followed: it is recorded in the partition's
// error word instead. Duplicate scatter targets resolve as on the CPU (last update wins, or an
// atomic reduction).
#include "backends/cuda/kernels/data_device.cuh"

namespace switchyard::cuda::data {

namespace {

// ---- gathers -----------------------------------------------------------------------------

// An index value normalised into [0, dim), or -1 when it lies outside [-dim, dim).
__device__ __forceinline__ int64_t wrap_index(int64_t v, int64_t dim) {
  if (v < -dim || v >= dim) return -1;
  return v < 0 ? v + dim : v;
}

// Records an out-of-range index in the partition's error word (the first code wins).
__device__ __forceinline__ void report_index_error(int32_t* error, int32_t code) {
  if (error) atomicCAS(error, 0, code);
}

template <typename T, typename I>
__global__ void gather_kernel(const T* data, const I* indices, T* dst, int64_t n, int64_t dim,
                              int64_t num_indices, int64_t inner, int32_t* error,
                              int32_t error_code) {
  SY_GRID_STRIDE(e, n) {
    int64_t t = e / inner, j = e - t * inner;
    int64_t o = t / num_indices, i = t - o * num_indices;
    int64_t v = wrap_index(static_cast<int64_t>(indices[i]), dim);
    if (v < 0) report_index_error(error, error_code);
    dst[e] = v < 0 ? T(0) : data[(o * dim + v) * inner + j];
  }
}

// Data offset of index position p with the axis coordinate taken from the index value; -1 for
// an index out of range.
template <typename I>
__device__ __forceinline__ int64_t element_offset(const ElementsParams& p, const I* indices,
                                                  int64_t pos) {
  int64_t rem = pos, offset = 0;
  for (int a = p.rank - 1; a >= 0; --a) {
    int64_t q = rem / p.idx_dims[a];
    if (a != p.axis) offset += (rem - q * p.idx_dims[a]) * p.data_strides[a];
    rem = q;
  }
  int64_t v = wrap_index(static_cast<int64_t>(indices[pos]), p.axis_dim);
  if (v < 0) report_index_error(p.error, p.error_code);
  return v < 0 ? -1 : offset + v * p.data_strides[p.axis];
}

template <typename T, typename I>
__global__ void gather_elements_kernel(const T* data, const I* indices, T* dst, int64_t n,
                                       ElementsParams p) {
  SY_GRID_STRIDE(e, n) {
    int64_t offset = element_offset(p, indices, e);
    dst[e] = offset < 0 ? T(0) : data[offset];
  }
}

// Offset of tuple t's slice (its batch base included); -1 when an index is out of range.
template <typename I>
__device__ __forceinline__ int64_t tuple_offset(const TupleParams& p, const I* indices, int64_t t) {
  int64_t offset = (t / p.tuples_per_batch) * p.batch_stride;
  for (int q = 0; q < p.m; ++q) {
    int64_t v = wrap_index(static_cast<int64_t>(indices[t * p.m + q]), p.dims[q]);
    if (v < 0) {
      report_index_error(p.error, p.error_code);
      return -1;
    }
    offset += v * p.strides[q];
  }
  return offset;
}

template <typename T, typename I>
__global__ void gather_nd_kernel(const T* data, const I* indices, T* dst, int64_t n,
                                 TupleParams p) {
  SY_GRID_STRIDE(e, n) {
    int64_t t = e / p.slice;
    int64_t offset = tuple_offset(p, indices, t);
    dst[e] = offset < 0 ? T(0) : data[offset + (e - t * p.slice)];
  }
}

// ---- scatters ----------------------------------------------------------------------------

// dst ∘ v under a reduction, computed as the CPU computes it (half types in float).
template <typename T>
__device__ __forceinline__ T reduce_pair(T dst, T v, Reduction r) {
  using C = compute_t<T>;
  C a = widen(dst), b = widen(v);
  switch (r) {
    case Reduction::Add:
      return narrow<T>(static_cast<C>(a + b));
    case Reduction::Mul:
      return narrow<T>(static_cast<C>(a * b));
    case Reduction::Max:
      return narrow<T>(a < b ? b : a);
    case Reduction::Min:
      return narrow<T>(b < a ? b : a);
    case Reduction::None:
      break;
  }
  return v;
}

// Atomically dst = reduce_pair(dst, v) by compare-and-swap on the aligned word holding dst
// (1- and 2-byte elements share a 32-bit word with their neighbours, which stay unchanged).
template <typename T>
__device__ void atomic_reduce(T* dst, T v, Reduction r) {
  if constexpr (sizeof(T) == 8) {
    auto* word = reinterpret_cast<unsigned long long*>(dst);
    unsigned long long old = *word, assumed;
    do {
      assumed = old;
      T next = reduce_pair(bit_cast<T>(assumed), v, r);
      old = atomicCAS(word, assumed, bit_cast<unsigned long long>(next));
    } while (assumed != old);
  } else if constexpr (sizeof(T) == 4) {
    auto* word = reinterpret_cast<unsigned int*>(dst);
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      T next = reduce_pair(bit_cast<T>(assumed), v, r);
      old = atomicCAS(word, assumed, bit_cast<unsigned int>(next));
    } while (assumed != old);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint8_t>;
    const uintptr_t address = reinterpret_cast<uintptr_t>(dst);
    auto* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(address & 3) * 8;
    const unsigned mask = ((1u << (8 * sizeof(T))) - 1) << shift;
    unsigned int old = *word, assumed;
    do {
      assumed = old;
      T current = bit_cast<T>(static_cast<Bits>((assumed & mask) >> shift));
      unsigned next = bit_cast<Bits>(reduce_pair(current, v, r));
      old = atomicCAS(word, assumed, (assumed & ~mask) | (next << shift));
    } while (assumed != old);
  }
}

// Reduction None, pass 1: the last update (highest position) aiming at each destination wins.
template <typename I>
__global__ void scatter_elements_claim_kernel(const I* indices, int64_t n, ElementsParams p,
                                              int32_t* winners) {
  SY_GRID_STRIDE(pos, n) {
    int64_t offset = element_offset(p, indices, pos);
    if (offset >= 0) atomicMax(winners + offset, static_cast<int32_t>(pos));
  }
}

template <typename T, typename I>
__global__ void scatter_elements_write_kernel(T* out, const I* indices, const T* updates, int64_t n,
                                              ElementsParams p, const int32_t* winners) {
  SY_GRID_STRIDE(pos, n) {
    int64_t offset = element_offset(p, indices, pos);
    if (offset >= 0 && winners[offset] == static_cast<int32_t>(pos)) out[offset] = updates[pos];
  }
}

template <typename T, typename I>
__global__ void scatter_elements_reduce_kernel(T* out, const I* indices, const T* updates,
                                               int64_t n, ElementsParams p, Reduction r) {
  SY_GRID_STRIDE(pos, n) {
    int64_t offset = element_offset(p, indices, pos);
    if (offset >= 0) atomic_reduce(out + offset, updates[pos], r);
  }
}

template <typename I>
__global__ void scatter_nd_claim_kernel(const I* indices, TupleParams p, int32_t* winners) {
  SY_GRID_STRIDE(t, p.num_tuples) {
    int64_t offset = tuple_offset(p, indices, t);
    if (offset >= 0) atomicMax(winners + offset / p.slice, static_cast<int32_t>(t));
  }
}

template <typename T, typename I>
__global__ void scatter_nd_write_kernel(T* out, const I* indices, const T* updates, int64_t n,
                                        TupleParams p, const int32_t* winners) {
  SY_GRID_STRIDE(e, n) {
    int64_t t = e / p.slice;
    int64_t offset = tuple_offset(p, indices, t);
    if (offset >= 0 && winners[offset / p.slice] == static_cast<int32_t>(t))
      out[offset + (e - t * p.slice)] = updates[e];
  }
}

template <typename T, typename I>
__global__ void scatter_nd_reduce_kernel(T* out, const I* indices, const T* updates, int64_t n,
                                         TupleParams p, Reduction r) {
  SY_GRID_STRIDE(e, n) {
    int64_t t = e / p.slice;
    int64_t offset = tuple_offset(p, indices, t);
    if (offset >= 0) atomic_reduce(out + offset + (e - t * p.slice), updates[e], r);
  }
}

// ---- OneHot ------------------------------------------------------------------------------

template <typename I, typename T>
__global__ void one_hot_kernel(const I* indices, const T* values, T* dst, int64_t n, int64_t depth,
                               double depth_value, int64_t inner) {
  SY_GRID_STRIDE(e, n) {
    int64_t t = e / inner, j = e - t * inner;
    int64_t o = t / depth, d = t - o * depth;
    double v = to_double(indices[o * inner + j]);
    // Out of [-depth, depth) gives an all-off row, as the spec says.
    int64_t hot = v >= -depth_value && v < depth_value ? static_cast<int64_t>(v) : depth;
    if (hot < 0) hot += depth;
    dst[e] = values[hot == d ? 1 : 0];
  }
}

}  // namespace

cudaError_t launch_gather(const void* data, const void* indices, DType index_dtype, void* dst,
                          int elem_size, int64_t outer, int64_t dim, int64_t num_indices,
                          int64_t inner, int32_t* error, int32_t error_code, cudaStream_t stream) {
  const int64_t n = outer * num_indices * inner;
  if (n == 0) return cudaSuccess;
  return dispatch_index(index_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_size(elem_size, [&](auto tag) {
      using T = decltype(tag);
      gather_kernel<T, I><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const T*>(data), static_cast<const I*>(indices), static_cast<T*>(dst), n, dim,
          num_indices, inner, error, error_code);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_gather_elements(const void* data, const void* indices, DType index_dtype,
                                   void* dst, int elem_size, const ElementsParams& params,
                                   cudaStream_t stream) {
  const int64_t n = product(params.idx_dims, params.rank);
  if (n == 0) return cudaSuccess;
  return dispatch_index(index_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_size(elem_size, [&](auto tag) {
      using T = decltype(tag);
      gather_elements_kernel<T, I><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const T*>(data), static_cast<const I*>(indices), static_cast<T*>(dst), n,
          params);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_gather_nd(const void* data, const void* indices, DType index_dtype, void* dst,
                             int elem_size, const TupleParams& params, cudaStream_t stream) {
  const int64_t n = params.num_tuples * params.slice;
  if (n == 0) return cudaSuccess;
  return dispatch_index(index_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_size(elem_size, [&](auto tag) {
      using T = decltype(tag);
      gather_nd_kernel<T, I><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const T*>(data), static_cast<const I*>(indices), static_cast<T*>(dst), n,
          params);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_scatter_elements(void* out, int64_t out_numel, const void* indices,
                                    DType index_dtype, const void* updates, DType dtype,
                                    Reduction reduction, const ElementsParams& params,
                                    int32_t* winners, cudaStream_t stream) {
  const int64_t n = product(params.idx_dims, params.rank);
  if (n == 0 || out_numel == 0) return cudaSuccess;
  return dispatch_index(index_dtype, [&](auto itag) -> cudaError_t {
    using I = decltype(itag);
    const I* idx = static_cast<const I*>(indices);
    if (reduction == Reduction::None) {
      cudaError_t status =
          cudaMemsetAsync(winners, 0xFF, static_cast<size_t>(out_numel) * sizeof(int32_t), stream);
      if (status != cudaSuccess) return status;
      scatter_elements_claim_kernel<I>
          <<<blocks_for(n), kThreads, 0, stream>>>(idx, n, params, winners);
      status = cudaGetLastError();
      if (status != cudaSuccess) return status;
      return dispatch_size(static_cast<int>(dtype_size(dtype)), [&](auto tag) {
        using T = decltype(tag);
        scatter_elements_write_kernel<T, I><<<blocks_for(n), kThreads, 0, stream>>>(
            static_cast<T*>(out), idx, static_cast<const T*>(updates), n, params, winners);
        return cudaGetLastError();
      });
    }
    return dispatch_numeric(dtype, [&](auto tag) {
      using T = decltype(tag);
      scatter_elements_reduce_kernel<T, I><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<T*>(out), idx, static_cast<const T*>(updates), n, params, reduction);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_scatter_nd(void* out, int64_t out_numel, const void* indices, DType index_dtype,
                              const void* updates, DType dtype, Reduction reduction,
                              const TupleParams& params, int32_t* winners, cudaStream_t stream) {
  const int64_t n = params.num_tuples * params.slice;
  if (n == 0 || out_numel == 0) return cudaSuccess;
  return dispatch_index(index_dtype, [&](auto itag) -> cudaError_t {
    using I = decltype(itag);
    const I* idx = static_cast<const I*>(indices);
    if (reduction == Reduction::None) {
      const int64_t slots = out_numel / params.slice;
      cudaError_t status =
          cudaMemsetAsync(winners, 0xFF, static_cast<size_t>(slots) * sizeof(int32_t), stream);
      if (status != cudaSuccess) return status;
      scatter_nd_claim_kernel<I>
          <<<blocks_for(params.num_tuples), kThreads, 0, stream>>>(idx, params, winners);
      status = cudaGetLastError();
      if (status != cudaSuccess) return status;
      return dispatch_size(static_cast<int>(dtype_size(dtype)), [&](auto tag) {
        using T = decltype(tag);
        scatter_nd_write_kernel<T, I><<<blocks_for(n), kThreads, 0, stream>>>(
            static_cast<T*>(out), idx, static_cast<const T*>(updates), n, params, winners);
        return cudaGetLastError();
      });
    }
    return dispatch_numeric(dtype, [&](auto tag) {
      using T = decltype(tag);
      scatter_nd_reduce_kernel<T, I><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<T*>(out), idx, static_cast<const T*>(updates), n, params, reduction);
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_one_hot(const void* indices, DType index_dtype, const void* values, void* dst,
                           int elem_size, int64_t outer, int64_t depth, double depth_value,
                           int64_t inner, cudaStream_t stream) {
  const int64_t n = outer * depth * inner;
  if (n == 0) return cudaSuccess;
  return dispatch_numeric(index_dtype, [&](auto itag) {
    using I = decltype(itag);
    return dispatch_size(elem_size, [&](auto tag) {
      using T = decltype(tag);
      one_hot_kernel<I, T><<<blocks_for(n), kThreads, 0, stream>>>(
          static_cast<const I*>(indices), static_cast<const T*>(values), static_cast<T*>(dst), n,
          depth, depth_value, inner);
      return cudaGetLastError();
    });
  });
}

}  // namespace switchyard::cuda::data
