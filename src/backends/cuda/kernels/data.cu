// Device code of the CUDA data-movement kernels (data_impl.h): fills, strided copies with a
// shared-memory tiled path for batched transposes, Concat, Pad/Tile, Range, Trilu, EyeLike,
// Gather/GatherElements/GatherND, ScatterElements/ScatterND, OneHot and Resize. One thread per
// output element (grid-stride), 64-bit indexing. Range and Resize reproduce the CPU kernels'
// arithmetic bit for bit, so integer results round alike: the CPU build (GCC, x86-64-v3)
// contracts `a * b + c` into fused multiply-adds, which appear here as explicit fma() calls;
// every other product goes through __dmul_rn so nvcc cannot contract it where GCC does not.
#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/data_impl.h"

namespace switchyard::cuda::data {

namespace {

using dev::blocks_for;
using dev::kThreads;

// ---- dispatch ----------------------------------------------------------------------------

// Calls f(T{}) with T an unsigned integer of `elem_size` bytes (pure data movement).
template <typename F>
cudaError_t dispatch_size(int elem_size, F&& f) {
  switch (elem_size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// Calls f(T{}) with T the CUDA storage type of a numeric dtype.
template <typename F>
cudaError_t dispatch_numeric(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      return f(__half{});
    case DType::BFloat16:
      return f(__nv_bfloat16{});
    case DType::Int8:
      return f(int8_t{});
    case DType::Int16:
      return f(int16_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::UInt16:
      return f(uint16_t{});
    case DType::UInt32:
      return f(uint32_t{});
    case DType::UInt64:
      return f(uint64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// Calls f(I{}) with I the type of an int32 or int64 index tensor.
template <typename F>
cudaError_t dispatch_index(DType dtype, F&& f) {
  if (dtype == DType::Int32) return f(int32_t{});
  if (dtype == DType::Int64) return f(int64_t{});
  return cudaErrorInvalidValue;
}

template <typename T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(static_cast<void*>(&v), &bits, sizeof(T));
  return v;
}

int64_t product(const int64_t* dims, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

// ---- element conversions -----------------------------------------------------------------

template <typename To, typename From>
__device__ __forceinline__ To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  memcpy(&out, &v, sizeof(To));
  return out;
}

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Compute type of a storage type, as the CPU kernels use it: float for half types.
template <typename T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;

template <typename T>
__device__ __forceinline__ compute_t<T> widen(T v) {
  if constexpr (kIsHalf<T>)
    return dev::to_float(v);
  else
    return v;
}

template <typename T>
__device__ __forceinline__ T narrow(compute_t<T> v) {
  if constexpr (kIsHalf<T>)
    return dev::from_float<T>(v);
  else
    return static_cast<T>(v);
}

template <typename T>
__device__ __forceinline__ double to_double(T v) {
  return static_cast<double>(widen(v));
}

// Resize's double → T: integers round to nearest even and saturate (NaN → 0); half types go
// through float, as the CPU's conversions do.
template <typename T>
__device__ __forceinline__ T from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (isnan(v)) return T(0);
    double r = rint(v);
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (r >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else if constexpr (kIsHalf<T>) {
    return dev::from_float<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// ---- fills -------------------------------------------------------------------------------

template <typename T>
__global__ void fill_kernel(T* dst, int64_t n, T value) {
  SY_GRID_STRIDE(i, n) dst[i] = value;
}

__global__ void write_int64s_kernel(int64_t* dst, Int64Values v) {
  int i = static_cast<int>(threadIdx.x);
  if (i < v.count) dst[i] = v.values[i];
}

// ---- strided copies ----------------------------------------------------------------------

template <typename T>
__global__ void strided_copy_kernel(const T* src, T* dst, int64_t n, StridedView v) {
  SY_GRID_STRIDE(i, n) {
    int64_t offset = 0, rem = i;
    for (int d = v.rank - 1; d >= 0; --d) {
      int64_t q = rem / v.dims[d];
      offset += (rem - q * v.dims[d]) * v.strides[d];
      rem = q;
    }
    dst[i] = src[offset];
  }
}

constexpr int kTile = 32;
constexpr int kTileRowsPerPass = 8;

// dst[b][r][c] = src[batch_offset(b) + r + c * col_stride]: reads run along r, writes along c,
// so both are coalesced through a shared-memory tile. `batch` holds the batch dims and strides.
template <typename T>
__global__ void tiled_transpose_kernel(const T* src, T* dst, StridedView batch, int64_t batches,
                                       int64_t rows, int64_t cols, int64_t col_stride) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * kTile;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kTile;
  for (int64_t b = blockIdx.z; b < batches; b += gridDim.z) {
    int64_t base = 0, rem = b;
    for (int d = batch.rank - 1; d >= 0; --d) {
      int64_t q = rem / batch.dims[d];
      base += (rem - q * batch.dims[d]) * batch.strides[d];
      rem = q;
    }
    for (int j = threadIdx.y; j < kTile; j += kTileRowsPerPass) {
      int64_t r = r0 + threadIdx.x, c = c0 + j;
      if (r < rows && c < cols) tile[j][threadIdx.x] = src[base + r + c * col_stride];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kTileRowsPerPass) {
      int64_t r = r0 + j, c = c0 + threadIdx.x;
      if (r < rows && c < cols) dst[(b * rows + r) * cols + c] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}

template <typename T>
__global__ void concat_kernel(T* dst, ConcatChunk c) {
  const int64_t n = c.outer * c.span;
  SY_GRID_STRIDE(i, n) {
    int64_t o = i / c.span, p = i - o * c.span;
    // The last input starting at or before p (empty inputs are passed over).
    int j = 0;
    while (j + 1 < c.count && c.begin[j + 1] <= p) ++j;
    const T* s = static_cast<const T*>(c.src[j]);
    dst[o * c.dst_row + c.dst_offset + p] = s[o * c.block[j] + (p - c.begin[j])];
  }
}

// Source index along one axis for output index j (-1: the pad value), as the CPU computes it.
__device__ __forceinline__ int64_t pad_source(PadMode mode, int64_t j, int64_t pre, int64_t d) {
  int64_t i = j - pre;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : d - 1;
    case PadMode::Wrap:
      return ((i % d) + d) % d;
    case PadMode::Reflect: {
      if (d == 1) return 0;
      int64_t period = 2 * (d - 1);
      int64_t m = ((i % period) + period) % period;
      return m < d ? m : period - m;
    }
  }
  return -1;
}

template <typename T>
__global__ void pad_kernel(const T* src, T* dst, int64_t n, PadParams p, T fill) {
  SY_GRID_STRIDE(i, n) {
    int64_t rem = i, offset = 0;
    bool filled = false;
    for (int a = p.rank - 1; a >= 0; --a) {
      int64_t q = rem / p.out_dims[a];
      int64_t s = pad_source(p.mode, rem - q * p.out_dims[a], p.pre[a], p.in_dims[a]);
      rem = q;
      if (s < 0)
        filled = true;
      else
        offset += s * p.in_strides[a];
    }
    dst[i] = filled ? fill : src[offset];
  }
}

// ---- generators --------------------------------------------------------------------------

// start + i * delta in T, floats with one rounding (a fused multiply-add, as on the CPU).
template <typename T>
__device__ __forceinline__ T range_value(T start, T delta, int64_t i) {
  if constexpr (std::is_same_v<T, float>)
    return fmaf(static_cast<float>(i), delta, start);
  else if constexpr (std::is_same_v<T, double>)
    return fma(static_cast<double>(i), delta, start);
  else
    return static_cast<T>(start + static_cast<T>(i) * delta);
}

template <typename C, typename O>
__global__ void range_kernel(O* dst, int64_t n, C start, C delta) {
  SY_GRID_STRIDE(i, n) {
    C v = range_value(start, delta, i);
    if constexpr (std::is_same_v<C, O>)
      dst[i] = v;
    else
      dst[i] = dev::from_float<O>(v);
  }
}

template <typename T>
__global__ void trilu_kernel(const T* src, T* dst, int64_t n, int64_t rows, int64_t cols, int64_t k,
                             bool upper) {
  SY_GRID_STRIDE(i, n) {
    int64_t t = i / cols;
    int64_t d = (i - t * cols) - t % rows;
    bool keep = upper ? d >= k : d <= k;
    dst[i] = keep ? src[i] : T(0);
  }
}

template <typename T>
__global__ void eye_like_kernel(T* dst, int64_t n, int64_t cols, int64_t k, T one) {
  SY_GRID_STRIDE(i, n) {
    int64_t r = i / cols;
    dst[i] = (i - r * cols) - r == k ? one : T(0);
  }
}

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

// ---- Resize ------------------------------------------------------------------------------

enum ResizeMode { kNearest = 0, kLinear = 1, kCubic = 2 };
enum Transform {
  kHalfPixel = 0,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn
};
enum Rounding { kRoundPreferFloor = 0, kRoundPreferCeil, kFloor, kCeil };

__device__ double original_coordinate(int transform, const ResizeAxis& ax, int64_t o) {
  const double xr = static_cast<double>(o);
  const double in = static_cast<double>(ax.in_len);
  switch (transform) {
    case kHalfPixel:
      return (xr + 0.5) / ax.scale - 0.5;
    case kHalfPixelSymmetric: {
      double adjustment = static_cast<double>(ax.out_len) / ax.length_resized;
      double center = in / 2;
      return fma(center, 1 - adjustment, (xr + 0.5) / ax.scale) - 0.5;
    }
    case kPytorchHalfPixel:
      return ax.length_resized > 1 ? (xr + 0.5) / ax.scale - 0.5 : 0.0;
    case kAlignCorners:
      return ax.length_resized == 1 ? 0.0 : __dmul_rn(xr, in - 1) / (ax.length_resized - 1);
    case kAsymmetric:
      return xr / ax.scale;
    case kTfCropAndResize:
      return ax.length_resized > 1
                 ? fma(ax.roi_start, in - 1,
                       __dmul_rn(__dmul_rn(xr, ax.roi_end - ax.roi_start), in - 1) /
                           (ax.length_resized - 1))
                 : __dmul_rn(__dmul_rn(0.5, ax.roi_start + ax.roi_end), in - 1);
    case kTfHalfPixelForNn:
      return (xr + 0.5) / ax.scale;
  }
  return xr;
}

// The sanitised coordinate split into base = ceil(xo) - 1 and ratio = xo - base in (0, 1].
__device__ __forceinline__ void split_coordinate(double xo, int64_t& base, double& ratio) {
  if (!isfinite(xo)) xo = 0;
  xo = xo < -1.0e15 ? -1.0e15 : (1.0e15 < xo ? 1.0e15 : xo);
  double base_f = ceil(xo) - 1;
  ratio = xo - base_f;
  base = static_cast<int64_t>(base_f);
}

__device__ __forceinline__ int64_t clamp_index(int64_t i, int64_t len) {
  int64_t last = len - 1 > 0 ? len - 1 : 0;
  return i < 0 ? 0 : (i > last ? last : i);
}

__device__ int64_t nearest_index(int rounding, int64_t base, double ratio) {
  if (ratio >= 1) return base + 1;
  bool up = false;
  switch (rounding) {
    case kRoundPreferFloor:
      up = ratio > 0.5;
      break;
    case kRoundPreferCeil:
      up = ratio >= 0.5;
      break;
    case kFloor:
      up = false;
      break;
    case kCeil:
      up = true;
      break;
  }
  return up ? base + 1 : base;
}

__device__ double cubic_weight(double s, double a) {
  s = fabs(s);
  if (s <= 1) return fma(__dmul_rn(fma(a + 2, s, -(a + 3)), s), s, 1.0);
  if (s < 2) {
    double t = fma(a, s, -__dmul_rn(5.0, a));
    t = fma(t, s, __dmul_rn(8.0, a));
    return fma(t, s, -__dmul_rn(4.0, a));
  }
  return 0.0;
}

// Unnormalised weight of tap k of a resized axis (0 outside the input with exclude_outside).
__device__ double raw_weight(const ResizeParams& p, const ResizeAxis& ax, int64_t base,
                             double ratio, int64_t k) {
  int64_t off = ax.first + k;
  double arg = __dmul_rn(static_cast<double>(off) - ratio, ax.support_scale);
  double wt;
  if (p.mode == kLinear) {
    double v = 1.0 - fabs(arg);
    wt = 0.0 < v ? v : 0.0;
  } else {
    wt = cubic_weight(arg, p.cubic_a);
  }
  int64_t idx = base + off;
  if (p.exclude_outside && (idx < 0 || idx > ax.in_len - 1)) wt = 0;
  return wt;
}

template <typename T>
__global__ void resize_nearest_kernel(const T* x, T* y, int64_t n, ResizeParams p,
                                      T extrapolation) {
  SY_GRID_STRIDE(e, n) {
    int64_t rem = e, offset = 0;
    bool outside = false;
    for (int a = p.rank - 1; a >= 0; --a) {
      const ResizeAxis& ax = p.axes[a];
      int64_t q = rem / ax.out_len, o = rem - q * ax.out_len;
      rem = q;
      if (!ax.resized) {
        offset += o * ax.in_stride;
        continue;
      }
      double xo = original_coordinate(p.transform, ax, o);
      if (p.transform == kTfCropAndResize && (xo < 0 || xo > static_cast<double>(ax.in_len - 1))) {
        outside = true;
        continue;
      }
      int64_t base;
      double ratio;
      split_coordinate(xo, base, ratio);
      offset += clamp_index(nearest_index(p.rounding, base, ratio), ax.in_len) * ax.in_stride;
    }
    y[e] = outside ? extrapolation : x[offset];
  }
}

// Linear and cubic: the sum over the product of every resized axis' taps, in the CPU's order
// (row-major over the axes' taps, zero-weight products skipped), accumulated in double.
template <typename T>
__global__ void resize_interpolate_kernel(const T* x, T* y, int64_t n, ResizeParams p,
                                          T extrapolation) {
  SY_GRID_STRIDE(e, n) {
    int64_t base[kMaxRank], klo[kMaxRank], khi[kMaxRank], k[kMaxRank];
    double ratio[kMaxRank], sum[kMaxRank];
    int64_t fixed = 0;
    bool outside = false, all_zero = false;
    int64_t rem = e;
    for (int a = p.rank - 1; a >= 0; --a) {
      const ResizeAxis& ax = p.axes[a];
      int64_t q = rem / ax.out_len, o = rem - q * ax.out_len;
      rem = q;
      if (!ax.resized) {
        fixed += o * ax.in_stride;
        continue;
      }
      double xo = original_coordinate(p.transform, ax, o);
      if (p.transform == kTfCropAndResize && (xo < 0 || xo > static_cast<double>(ax.in_len - 1))) {
        outside = true;
        continue;
      }
      split_coordinate(xo, base[a], ratio[a]);
      double s = 0;
      for (int64_t t = 0; t < ax.width; ++t) s += raw_weight(p, ax, base[a], ratio[a], t);
      sum[a] = p.normalize && s != 0 ? s : 1.0;
      // The range of taps with a non-zero weight (every other product is zero).
      klo[a] = ax.width;
      khi[a] = -1;
      for (int64_t t = 0; t < ax.width; ++t) {
        if (raw_weight(p, ax, base[a], ratio[a], t) / sum[a] != 0) {
          if (klo[a] > t) klo[a] = t;
          khi[a] = t;
        }
      }
      if (khi[a] < 0) all_zero = true;
      k[a] = klo[a];
    }
    if (outside) {
      y[e] = extrapolation;
      continue;
    }
    double acc = 0;
    while (!all_zero) {
      int64_t offset = fixed;
      double w = 1;
      for (int a = 0; a < p.rank; ++a) {
        const ResizeAxis& ax = p.axes[a];
        if (!ax.resized) continue;
        offset += clamp_index(base[a] + ax.first + k[a], ax.in_len) * ax.in_stride;
        w = __dmul_rn(w, raw_weight(p, ax, base[a], ratio[a], k[a]) / sum[a]);
      }
      if (w != 0) acc = fma(w, to_double(x[offset]), acc);
      int a = p.rank - 1;
      for (; a >= 0; --a) {
        if (!p.axes[a].resized) continue;
        if (++k[a] <= khi[a]) break;
        k[a] = klo[a];
      }
      if (a < 0) break;
    }
    y[e] = from_double<T>(acc);
  }
}

}  // namespace

// ---- launchers ---------------------------------------------------------------------------

cudaError_t launch_fill(void* dst, int64_t n, int elem_size, uint64_t bits, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, from_bits<T>(bits));
    return cudaGetLastError();
  });
}

cudaError_t launch_write_int64s(int64_t* dst, const Int64Values& values, cudaStream_t stream) {
  if (values.count <= 0) return cudaSuccess;
  write_int64s_kernel<<<1, Int64Values::kMaxValues, 0, stream>>>(dst, values);
  return cudaGetLastError();
}

cudaError_t launch_strided_copy(const void* src, void* dst, int elem_size, const StridedView& view,
                                cudaStream_t stream) {
  const int64_t n = product(view.dims, view.rank);
  if (n == 0) return cudaSuccess;
  if (view.rank == 0 || (view.rank == 1 && view.strides[0] == 1))
    return cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * static_cast<size_t>(elem_size),
                           cudaMemcpyDeviceToDevice, stream);
  const int r = view.rank;
  const int64_t rows = r >= 2 ? view.dims[r - 2] : 0, cols = view.dims[r - 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  if (r >= 2 && view.strides[r - 2] == 1 && view.strides[r - 1] != 1 && rows >= 8 && cols >= 8 &&
      row_tiles <= 65535 && col_tiles <= 0x7fffffff) {
    StridedView batch;
    batch.rank = r - 2;
    for (int d = 0; d < r - 2; ++d) {
      batch.dims[d] = view.dims[d];
      batch.strides[d] = view.strides[d];
    }
    const int64_t batches = n / (rows * cols);
    dim3 grid(static_cast<unsigned>(col_tiles), static_cast<unsigned>(row_tiles),
              static_cast<unsigned>(batches < 65535 ? batches : 65535));
    dim3 block(kTile, kTileRowsPerPass);
    return dispatch_size(elem_size, [&](auto tag) {
      using T = decltype(tag);
      tiled_transpose_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(src),
                                                            static_cast<T*>(dst), batch, batches,
                                                            rows, cols, view.strides[r - 1]);
      return cudaGetLastError();
    });
  }
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    strided_copy_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src),
                                                                   static_cast<T*>(dst), n, view);
    return cudaGetLastError();
  });
}

cudaError_t launch_concat(void* dst, int elem_size, const ConcatChunk& chunk, cudaStream_t stream) {
  const int64_t n = chunk.outer * chunk.span;
  if (n == 0 || chunk.count == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    concat_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), chunk);
    return cudaGetLastError();
  });
}

cudaError_t launch_pad(const void* src, void* dst, int elem_size, const PadParams& params,
                       uint64_t fill_bits, cudaStream_t stream) {
  const int64_t n = product(params.out_dims, params.rank);
  if (n == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    pad_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), n, params, from_bits<T>(fill_bits));
    return cudaGetLastError();
  });
}

cudaError_t launch_range(DType compute, DType out, void* dst, int64_t n, double start_f,
                         double delta_f, int64_t start_i, int64_t delta_i, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  auto launch = [&](auto ctag, auto otag) {
    using C = decltype(ctag);
    using O = decltype(otag);
    C start, delta;
    if constexpr (std::is_floating_point_v<C>) {
      start = static_cast<C>(start_f);
      delta = static_cast<C>(delta_f);
    } else {
      start = static_cast<C>(start_i);
      delta = static_cast<C>(delta_i);
    }
    range_kernel<C, O>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<O*>(dst), n, start, delta);
    return cudaGetLastError();
  };
  if (compute == DType::Float32 && out == DType::Float16) return launch(float{}, __half{});
  if (compute == DType::Float32 && out == DType::BFloat16) return launch(float{}, __nv_bfloat16{});
  if (compute != out) return cudaErrorInvalidValue;
  switch (compute) {
    case DType::Float32:
      return launch(float{}, float{});
    case DType::Float64:
      return launch(double{}, double{});
    case DType::Int16:
      return launch(int16_t{}, int16_t{});
    case DType::Int32:
      return launch(int32_t{}, int32_t{});
    case DType::Int64:
      return launch(int64_t{}, int64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t launch_trilu(const void* src, void* dst, int elem_size, int64_t batches, int64_t rows,
                         int64_t cols, int64_t k, bool upper, cudaStream_t stream) {
  const int64_t n = batches * rows * cols;
  if (n == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    trilu_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), n, rows, cols, k, upper);
    return cudaGetLastError();
  });
}

cudaError_t launch_eye_like(void* dst, int elem_size, int64_t rows, int64_t cols, int64_t k,
                            uint64_t one_bits, cudaStream_t stream) {
  const int64_t n = rows * cols;
  if (n == 0) return cudaSuccess;
  return dispatch_size(elem_size, [&](auto tag) {
    using T = decltype(tag);
    eye_like_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, cols, k,
                                                               from_bits<T>(one_bits));
    return cudaGetLastError();
  });
}

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

cudaError_t launch_resize(const void* x, void* y, DType dtype, const ResizeParams& params,
                          cudaStream_t stream) {
  int64_t n = 1;
  for (int a = 0; a < params.rank; ++a) n *= params.axes[a].out_len;
  if (n == 0) return cudaSuccess;
  if (params.mode == kNearest) {
    return dispatch_size(static_cast<int>(dtype_size(dtype)), [&](auto tag) {
      using T = decltype(tag);
      resize_nearest_kernel<T>
          <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n,
                                                   params, from_bits<T>(params.extrapolation_bits));
      return cudaGetLastError();
    });
  }
  return dispatch_numeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    resize_interpolate_kernel<T>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n,
                                                 params, from_bits<T>(params.extrapolation_bits));
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda::data
