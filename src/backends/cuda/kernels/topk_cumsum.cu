// Device code of TopK (a thread per slice for small slices, else a stable CUB radix sort of
// order-preserving keys, with no synchronisation) and CumSum (a block scan per row, or a thread
// per column walking the axis in the cpu's order).
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

#include "backends/cuda/kernels/reduce_device.cuh"

namespace switchyard::cuda {
namespace {

using namespace reduction;  // NOLINT: the family's shared device helpers

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
