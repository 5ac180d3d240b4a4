// Device code of Softmax and LogSoftmax: a warp per row held in registers for rows up to 1024,
// a block per longer row (cached in shared memory while it fits), column tiles for other axes;
// the row maximum is subtracted and sums accumulate in float32 (float64 for float64). Rows along
// the last axis may add a broadcast mask first (the fused Add -> Softmax, SoftmaxMask).
#include "backends/cuda/kernels/reduce_device.cuh"

namespace switchyard::cuda {
namespace {

using namespace reduction;  // NOLINT: the family's shared device helpers

// ---- Softmax -------------------------------------------------------------------------------

// Element offset of row `row`'s mask values (SoftmaxMask).
__device__ __forceinline__ int64_t mask_row_offset(const SoftmaxMask& m, int64_t row) {
  int64_t offset = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    const int64_t q = row / m.dims[d];
    offset += (row - q * m.dims[d]) * m.strides[d];
    row = q;
  }
  return offset;
}

// x[j] of a row, plus the row's mask value when there is a mask, rounded to T as the Add leaves
// it.
template <typename A, typename T>
__device__ __forceinline__ A masked_value(const T* x, const T* mask, int64_t step, int64_t j) {
  if (!mask) return load<A>(x[j]);
  return load<A>(store<T>(load<A>(x[j]) + load<A>(mask[j * step])));
}

// Rows of up to 32 * kPer elements: a warp per row, the row held in registers. The maximum
// ignores NaN as the cpu kernel's does (a NaN still turns the row to NaN through the sum).
template <bool kLog, int kPer, typename T>
__global__ void softmax_warp_rows(const T* in, T* out, int64_t rows, int len, SoftmaxMask mask) {
  using A = compute_t<T>;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       row < rows; row += warps) {
    const T* x = in + row * len;
    T* y = out + row * len;
    const T* mrow =
        mask.data ? static_cast<const T*>(mask.data) + mask_row_offset(mask, row) : nullptr;
    A v[kPer];
    A m = A(-INFINITY);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      int j = lane + 32 * i;
      v[i] = j < len ? masked_value<A>(x, mrow, mask.step, j) : A(-INFINITY);
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
__global__ void softmax_block_rows(const T* in, T* out, int64_t rows, int64_t len,
                                   SoftmaxMask mask) {
  using A = compute_t<T>;
  extern __shared__ __align__(16) unsigned char dynamic_shared[];
  A* cache = reinterpret_cast<A*>(dynamic_shared);
  __shared__ A shared[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * len;
    T* y = out + row * len;
    const T* mrow =
        mask.data ? static_cast<const T*>(mask.data) + mask_row_offset(mask, row) : nullptr;
    auto value = [&](int64_t j) {
      return kCache ? cache[j] : masked_value<A>(x, mrow, mask.step, j);
    };
    A m = A(-INFINITY);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A v = masked_value<A>(x, mrow, mask.step, j);
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
void launch_softmax_warp(const T* x, T* y, int64_t rows, int64_t len, const SoftmaxMask& mask,
                         cudaStream_t stream) {
  softmax_warp_rows<kLog, kPer, T><<<grid_for(ceil_div(rows, kBlock / 32)), kBlock, 0, stream>>>(
      x, y, rows, static_cast<int>(len), mask);
}

template <bool kLog, typename T>
void softmax_typed(const T* x, T* y, int64_t outer, int64_t len, int64_t inner,
                   const SoftmaxMask& mask, cudaStream_t stream) {
  using A = compute_t<T>;
  constexpr size_t kCacheBytes = 48 * 1024;  // dynamic shared memory without an opt-in
  if (inner > 1) {
    int tile = static_cast<int>(inner < 32 ? inner : 32);
    softmax_columns<kLog, T><<<grid_for(outer * ceil_div(inner, tile)), kBlock, 0, stream>>>(
        x, y, outer, len, inner, tile);
  } else if (len <= 32) {
    launch_softmax_warp<kLog, 1>(x, y, outer, len, mask, stream);
  } else if (len <= 64) {
    launch_softmax_warp<kLog, 2>(x, y, outer, len, mask, stream);
  } else if (len <= 128) {
    launch_softmax_warp<kLog, 4>(x, y, outer, len, mask, stream);
  } else if (len <= 256) {
    launch_softmax_warp<kLog, 8>(x, y, outer, len, mask, stream);
  } else if (len <= 512) {
    launch_softmax_warp<kLog, 16>(x, y, outer, len, mask, stream);
  } else if (len <= 1024) {
    launch_softmax_warp<kLog, 32>(x, y, outer, len, mask, stream);
  } else {
    int threads = len >= 16384 ? 1024 : len >= 4096 ? 512 : kBlock;
    size_t bytes = static_cast<size_t>(len) * sizeof(A);
    if (bytes <= kCacheBytes)
      softmax_block_rows<kLog, true, T>
          <<<grid_for(outer), threads, bytes, stream>>>(x, y, outer, len, mask);
    else
      softmax_block_rows<kLog, false, T>
          <<<grid_for(outer), threads, 0, stream>>>(x, y, outer, len, mask);
  }
}

}  // namespace

cudaError_t launch_softmax(bool log, DType dtype, const void* in, void* out, int64_t outer,
                           int64_t len, int64_t inner, cudaStream_t stream,
                           const SoftmaxMask& mask) {
  if (outer * len * inner == 0) return cudaSuccess;
  if (mask.data && (inner != 1 || mask.rank < 0 || mask.rank > kSoftmaxMaskRank))
    return cudaErrorInvalidValue;
  return SY_DISPATCH_FLOAT(dtype, T, {
    const T* x = static_cast<const T*>(in);
    T* y = static_cast<T*>(out);
    if (log)
      softmax_typed<true>(x, y, outer, len, inner, mask, stream);
    else
      softmax_typed<false>(x, y, outer, len, inner, mask, stream);
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda
