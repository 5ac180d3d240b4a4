// Device code of LayerNormalization (launch_layer_norm, normalization_impl.h). Rows of up to
// kLayerNormRowMaxCols values with float statistics: one row per block of up to 1024 threads
// sized to the row (short rows several a block), held in registers so X and Z are read once,
// 16-byte accesses where the row allows. Longer rows and double statistics: the family's generic
// kernel (normalization_device.cuh), which re-reads them. Mean and variance are two-pass (mean
// first, then the sum of squared deviations) like the CPU kernel. With a residual the sum
// X + Z may be written too (LayerNormArgs::sum), as it is read.
#include <algorithm>
#include <type_traits>

#include "backends/cuda/kernels/normalization_device.cuh"

namespace switchyard::cuda {

namespace {

using namespace norm;  // NOLINT: the family's helpers

// The value a float32/float16/bfloat16 tensor of dtype d holds once v is stored in it.
__device__ __forceinline__ float round_to(float v, DType d) {
  switch (d) {
    case DType::Float16:
      return __half2float(__float2half_rn(v));
    case DType::BFloat16:
      return __bfloat162float(__float2bfloat16_rn(v));
    default:
      return v;
  }
}

// The saturating cast of a float32/float64 value into float16 or bfloat16, as
// saturating_cast_kernel (elementwise.cu) does it: finite values beyond To's range become its
// largest finite value; infinities and NaN (which compares false) stay.
template <typename To, typename From>
__device__ __forceinline__ To saturating_narrow(From v) {
  const From top = static_cast<From>(std::is_same_v<To, __half> ? 65504.0 : 3.3895313892515355e38);
  const From c = isinf(v) ? v : (v > top ? top : (v < -top ? -top : v));
  if constexpr (std::is_same_v<From, double>) {
    if constexpr (std::is_same_v<To, __half>) {
      return __double2half(c);
    } else {
      return __double2bfloat16(c);
    }
  } else {
    return dev::from_float<To>(c);
  }
}

// S[r, j] of the generic kernel: X, or X + Z as the unfused Casts and Add leave it.
template <typename TX, typename Acc>
struct LayerNormSource {
  const TX* x;
  const void* z;  // null: no residual
  DType z_dtype;
  DType y_dtype;
  int64_t cols;

  __device__ __forceinline__ Acc operator()(int64_t r, int64_t j) const {
    const int64_t e = r * cols + j;
    if (!z) return load<Acc>(x, e);
    if (y_dtype == DType::Float64)
      return static_cast<Acc>(load<double>(x, e) + load_any<double>(z, z_dtype, e));
    return static_cast<Acc>(round_to(load<float>(x, e) + load_any<float>(z, z_dtype, e), y_dtype));
  }
};

// The generic kernel's writer of Y, y_narrow, the sum and the statistics (dtypes known at run
// time).
template <typename Acc>
struct LayerNormOutput {
  void* y;
  DType y_dtype;
  void* sum;  // S in Y's dtype: source's values, already rounded to it
  void* y_narrow;
  DType narrow_dtype;
  const void* scale;
  const void* bias;
  DType param_dtype;
  bool scale_per_column;
  bool bias_per_column;
  dev::Strides scale_view;
  dev::Strides bias_view;
  int64_t cols;
  DType stats_dtype;
  void* mean;
  void* inv_std_dev;

  template <typename From>
  __device__ __forceinline__ void store_narrow(int64_t e, From v) const {
    if (narrow_dtype == DType::Float16) {
      static_cast<__half*>(y_narrow)[e] = saturating_narrow<__half>(v);
    } else {
      static_cast<__nv_bfloat16*>(y_narrow)[e] = saturating_narrow<__nv_bfloat16>(v);
    }
  }

  __device__ __forceinline__ void write(int64_t r, int64_t j, Acc normalized) const {
    const int64_t e = r * cols + j;
    const Acc sc = load_any<Acc>(scale, param_dtype,
                                 scale_per_column ? j : dev::strided_offset(e, scale_view));
    const Acc bs = bias ? load_any<Acc>(bias, param_dtype,
                                        bias_per_column ? j : dev::strided_offset(e, bias_view))
                        : Acc(0);
    const Acc out = normalized * sc + bs;
    if (y) store_any(y, y_dtype, e, out);
    if (!y_narrow) return;
    if (y_dtype == DType::Float64) {
      store_narrow(e, static_cast<double>(out));
    } else {
      store_narrow(e, round_to(static_cast<float>(out), y_dtype));
    }
  }

  template <typename Source>
  __device__ void operator()(int64_t r, const Source& source, Acc m, Acc inv, int lane,
                             int width) const {
    for (int64_t j = lane; j < cols; j += width) {
      const Acc v = source(r, j);
      if (sum) store_any(sum, y_dtype, r * cols + j, v);
      write(r, j, (v - m) * inv);
    }
    if (lane == 0) {
      if (mean) store_any(mean, stats_dtype, r, m);
      if (inv_std_dev) store_any(inv_std_dev, stats_dtype, r, inv);
    }
  }
};

// The dtypes of a LayerNormArgs with the Undefined ones resolved.
struct LayerNormTypes {
  DType x, z, y, param;
};

LayerNormTypes layer_norm_types(const LayerNormArgs& a) {
  auto or_default = [&](DType d) { return d == DType::Undefined ? a.dtype : d; };
  return {or_default(a.x_dtype), or_default(a.residual_dtype), or_default(a.y_dtype), a.dtype};
}

template <typename TX, typename Acc>
cudaError_t layer_norm_generic(const LayerNormArgs& a, const LayerNormTypes& t,
                               cudaStream_t stream) {
  LayerNormSource<TX, Acc> source{static_cast<const TX*>(a.x), a.residual, t.z, t.y, a.cols};
  LayerNormOutput<Acc> out{a.y,
                           t.y,
                           a.sum,
                           a.y_narrow,
                           a.y_narrow_dtype,
                           a.scale,
                           a.bias,
                           t.param,
                           a.scale_per_column,
                           a.bias_per_column,
                           to_strides(a.scale_view),
                           to_strides(a.bias_view),
                           a.cols,
                           a.stats_dtype,
                           a.mean,
                           a.inv_std_dev};
  return launch_segments(source, a.rows, a.cols, static_cast<Acc>(a.epsilon), out, stream);
}

// The row kernel: each row is normalized by `blockDim.x` threads (a multiple of 32; blockDim.y
// rows per block), each holding kN slots of kV consecutive values in registers, so X and Z are
// read once. kV == 8: 16-byte accesses (cols % 8 == 0, aligned operands), else kV == 1.
constexpr int kRowVec = 8;
constexpr int kRowMaxThreads = 1024;
constexpr int kRowMaxPerThread = 8;  // slots per thread of the scalar form
static_assert(kRowMaxThreads * kRowMaxPerThread >= kLayerNormRowMaxCols);

struct LayerNormRowParams {
  const void* x;
  const void* z;
  DType z_dtype;
  void* y;
  DType y_dtype;
  void* sum;  // S in y_dtype (only with z)
  void* y_narrow;
  DType narrow_dtype;
  const void* scale;
  const void* bias;
  DType param_dtype;
  bool scale_per_column;
  bool bias_per_column;
  dev::Strides scale_view;
  dev::Strides bias_view;
  int64_t rows;
  int64_t cols;
  float epsilon;
  DType stats_dtype;
  void* mean;
  void* inv_std_dev;
};

// kV values of T at p + e as float: Vec16 accesses where kV > 1 (p + e is 16-byte aligned then),
// one scalar where kV == 1.
template <int kV, typename T>
__device__ __forceinline__ void load_floats(const T* p, int64_t e, float (&v)[kV]) {
  if constexpr (kV == 1) {
    v[0] = dev::to_float(p[e]);
  } else {
    constexpr int kPer = dev::Vec16<T>::kSize;
    static_assert(kV % kPer == 0);
#pragma unroll
    for (int c = 0; c < kV / kPer; ++c) {
      const dev::Vec16<T> q = dev::load_vec16(p + e + c * kPer);
#pragma unroll
      for (int i = 0; i < kPer; ++i) v[c * kPer + i] = dev::to_float(q.v[i]);
    }
  }
}

template <int kV>
__device__ __forceinline__ void load_floats_any(const void* p, DType d, int64_t e, float (&v)[kV]) {
  switch (d) {
    case DType::Float16:
      load_floats<kV>(static_cast<const __half*>(p), e, v);
      break;
    case DType::BFloat16:
      load_floats<kV>(static_cast<const __nv_bfloat16*>(p), e, v);
      break;
    default:
      load_floats<kV>(static_cast<const float*>(p), e, v);
      break;
  }
}

template <int kV, typename T>
__device__ __forceinline__ void store_floats(T* p, int64_t e, const float (&v)[kV]) {
  if constexpr (kV == 1) {
    p[e] = dev::from_float<T>(v[0]);
  } else {
    constexpr int kPer = dev::Vec16<T>::kSize;
    static_assert(kV % kPer == 0);
#pragma unroll
    for (int c = 0; c < kV / kPer; ++c) {
      dev::Vec16<T> q;
#pragma unroll
      for (int i = 0; i < kPer; ++i) q.v[i] = dev::from_float<T>(v[c * kPer + i]);
      dev::store_vec16(p + e + c * kPer, q);
    }
  }
}

template <int kV>
__device__ __forceinline__ void store_floats_any(void* p, DType d, int64_t e,
                                                 const float (&v)[kV]) {
  switch (d) {
    case DType::Float16:
      store_floats<kV>(static_cast<__half*>(p), e, v);
      break;
    case DType::BFloat16:
      store_floats<kV>(static_cast<__nv_bfloat16*>(p), e, v);
      break;
    default:
      store_floats<kV>(static_cast<float*>(p), e, v);
      break;
  }
}

template <int kV, typename To>
__device__ __forceinline__ void store_narrow(To* p, int64_t e, const float (&v)[kV]) {
  if constexpr (kV == 1) {
    p[e] = saturating_narrow<To>(v[0]);
  } else {
    constexpr int kPer = dev::Vec16<To>::kSize;
    static_assert(kV % kPer == 0);
#pragma unroll
    for (int c = 0; c < kV / kPer; ++c) {
      dev::Vec16<To> q;
#pragma unroll
      for (int i = 0; i < kPer; ++i) q.v[i] = saturating_narrow<To>(v[c * kPer + i]);
      dev::store_vec16(p + e + c * kPer, q);
    }
  }
}

template <int kV>
__device__ __forceinline__ void round_floats(float (&v)[kV], DType d) {
  if (d == DType::Float32) return;
#pragma unroll
  for (int i = 0; i < kV; ++i) v[i] = round_to(v[i], d);
}

// Scale or bias for the kV values from (r, j) on: per column (kV values at j; the only form of
// the kV > 1 kernels), or, for one value, through the view.
template <int kV>
__device__ __forceinline__ void load_param(const void* p, DType d, bool per_column,
                                           const dev::Strides& view, int64_t r, int64_t cols,
                                           int64_t j, float (&v)[kV]) {
  if (kV > 1 || per_column) {
    load_floats_any<kV>(p, d, j, v);
  } else {
    v[0] = load_any<float>(p, d, dev::strided_offset(r * cols + j, view));
  }
}

// Sum of v over the blockDim.x threads of this thread's row (`warps` warps); every thread of
// the row gets the same value. `partial` holds a value per warp of the block.
__device__ __forceinline__ float row_sum(float v, float* partial, int warps) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (warps == 1) return v;
  float* mine = partial + threadIdx.y * warps;
  if (threadIdx.x % 32 == 0) mine[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < warps; ++w) total += mine[w];
  return total;
}

template <typename TX, int kV, int kN>
__global__ void __launch_bounds__(kV > 1 ? 512 : kRowMaxThreads)
    layer_norm_row_kernel(LayerNormRowParams p) {
  // One array per reduction: a block's next row writes `sums` only after every thread has
  // passed the barrier of the `squares` reduction, by when all reads of `sums` are done.
  __shared__ float sums[kRowMaxThreads / 32];
  __shared__ float squares[kRowMaxThreads / 32];
  const int threads = static_cast<int>(blockDim.x);
  const int warps = threads / 32;
  const int64_t per_block = blockDim.y;
  const int64_t cols = p.cols;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * per_block; first < p.rows;
       first += static_cast<int64_t>(gridDim.x) * per_block) {
    const int64_t r = first + threadIdx.y;
    bool live[kN];
    float v[kN][kV], sc[kN][kV], bs[kN][kV];
    float sum = 0;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      const int64_t j = static_cast<int64_t>(threadIdx.x + k * threads) * kV;
      live[k] = r < p.rows && j < cols;
      if (live[k]) {
        const int64_t e = r * cols + j;
        load_floats<kV>(static_cast<const TX*>(p.x), e, v[k]);
        if (p.z) {
          float zv[kV];
          load_floats_any<kV>(p.z, p.z_dtype, e, zv);
#pragma unroll
          for (int i = 0; i < kV; ++i) v[k][i] += zv[i];
          round_floats<kV>(v[k], p.y_dtype);  // the sum as the unfused Add leaves it
          if (p.sum) store_floats_any<kV>(p.sum, p.y_dtype, e, v[k]);  // exact: already rounded
        }
#pragma unroll
        for (int i = 0; i < kV; ++i) sum += v[k][i];
        // Scale and bias do not depend on the statistics: their loads overlap the reductions.
        load_param<kV>(p.scale, p.param_dtype, p.scale_per_column, p.scale_view, r, cols, j, sc[k]);
        if (p.bias) {
          load_param<kV>(p.bias, p.param_dtype, p.bias_per_column, p.bias_view, r, cols, j, bs[k]);
        } else {
#pragma unroll
          for (int i = 0; i < kV; ++i) bs[k][i] = 0;
        }
      }
    }
    const float m = row_sum(sum, sums, warps) / static_cast<float>(cols);
    float sq = 0;
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (!live[k]) continue;
#pragma unroll
      for (int i = 0; i < kV; ++i) {
        const float d = v[k][i] - m;
        sq += d * d;
      }
    }
    const float var = row_sum(sq, squares, warps) / static_cast<float>(cols);
    const float inv = 1.0f / sqrtf(var + p.epsilon);
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      if (!live[k]) continue;
      const int64_t e = r * cols + static_cast<int64_t>(threadIdx.x + k * threads) * kV;
      float out[kV];
#pragma unroll
      for (int i = 0; i < kV; ++i) out[i] = (v[k][i] - m) * inv * sc[k][i] + bs[k][i];
      if (p.y) store_floats_any<kV>(p.y, p.y_dtype, e, out);
      if (p.y_narrow) {
        round_floats<kV>(out, p.y_dtype);  // the values Y holds
        if (p.narrow_dtype == DType::Float16) {
          store_narrow<kV>(static_cast<__half*>(p.y_narrow), e, out);
        } else {
          store_narrow<kV>(static_cast<__nv_bfloat16*>(p.y_narrow), e, out);
        }
      }
    }
    if (r < p.rows && threadIdx.x == 0) {
      if (p.mean) store_any(p.mean, p.stats_dtype, r, m);
      if (p.inv_std_dev) store_any(p.inv_std_dev, p.stats_dtype, r, inv);
    }
  }
}

// Threads per row, slots per thread and rows per block of the row kernel.
struct RowShape {
  int threads = 0;
  int per_thread = 0;
  int rows_per_block = 1;
};

RowShape row_shape(int64_t rows, int64_t slots, bool vectorized) {
  auto threads_for = [&](int per) {
    const int64_t t = (slots + per - 1) / per;
    return static_cast<int>((t + 31) / 32 * 32);
  };
  // The fewest slots per thread (the most threads on a row) within 512 threads; up to 1024 only
  // for the longest scalar rows.
  RowShape s;
  const int max_per = vectorized ? 2 : kRowMaxPerThread;
  for (int per = 1; per <= max_per; per *= 2) {
    if (threads_for(per) <= 512) {
      s = {threads_for(per), per, 1};
      break;
    }
  }
  if (s.threads == 0 && !vectorized) s = {threads_for(kRowMaxPerThread), kRowMaxPerThread, 1};
  // Short rows: several a block, while that still leaves 4 blocks per SM.
  if (s.threads > 0 && s.threads < 128) {
    int per_block = 128 / s.threads;
    const int64_t enough = 4 * static_cast<int64_t>(dev::sm_count());
    while (per_block > 1 && (rows + per_block - 1) / per_block < enough) per_block /= 2;
    s.rows_per_block = per_block;
  }
  return s;
}

template <typename TX, int kV>
cudaError_t launch_rows_typed(const LayerNormRowParams& p, const RowShape& s, cudaStream_t stream) {
  const int64_t blocks = (p.rows + s.rows_per_block - 1) / s.rows_per_block;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(blocks, 65535LL * 32)));
  const dim3 block(static_cast<unsigned>(s.threads), static_cast<unsigned>(s.rows_per_block));
  if (s.per_thread == 1) {
    layer_norm_row_kernel<TX, kV, 1><<<grid, block, 0, stream>>>(p);
  } else if (s.per_thread == 2) {
    layer_norm_row_kernel<TX, kV, 2><<<grid, block, 0, stream>>>(p);
  } else if constexpr (kV == 1) {
    if (s.per_thread == 4) {
      layer_norm_row_kernel<TX, kV, 4><<<grid, block, 0, stream>>>(p);
    } else {
      layer_norm_row_kernel<TX, kV, kRowMaxPerThread><<<grid, block, 0, stream>>>(p);
    }
  } else {
    return cudaErrorInvalidValue;  // row_shape gives the 16-byte form at most 2 slots
  }
  return cudaGetLastError();
}

cudaError_t launch_layer_norm_rows(const LayerNormArgs& a, const LayerNormTypes& t,
                                   cudaStream_t stream) {
  LayerNormRowParams p{a.x,
                       a.residual,
                       t.z,
                       a.y,
                       t.y,
                       a.sum,
                       a.y_narrow,
                       a.y_narrow_dtype,
                       a.scale,
                       a.bias,
                       t.param,
                       a.scale_per_column,
                       a.bias_per_column,
                       to_strides(a.scale_view),
                       to_strides(a.bias_view),
                       a.rows,
                       a.cols,
                       a.epsilon,
                       a.stats_dtype,
                       a.mean,
                       a.inv_std_dev};
  auto aligned = [](const void* q) { return !q || dev::is_aligned16(q); };
  const bool vectorized = a.cols % kRowVec == 0 && aligned(a.x) && aligned(a.residual) &&
                          aligned(a.y) && aligned(a.y_narrow) && aligned(a.sum) &&
                          a.scale_per_column && aligned(a.scale) &&
                          (!a.bias || (a.bias_per_column && aligned(a.bias)));
  const RowShape s = row_shape(a.rows, vectorized ? a.cols / kRowVec : a.cols, vectorized);
  if (s.threads == 0) return cudaErrorInvalidValue;  // longer than kLayerNormRowMaxCols
  auto launch = [&](auto x) -> cudaError_t {
    using TX = decltype(x);
    return vectorized ? launch_rows_typed<TX, kRowVec>(p, s, stream)
                      : launch_rows_typed<TX, 1>(p, s, stream);
  };
  switch (t.x) {
    case DType::Float16:
      return launch(__half{});
    case DType::BFloat16:
      return launch(__nv_bfloat16{});
    default:
      return launch(float{});
  }
}

bool is_float_type(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16 || d == DType::Float64;
}
}  // namespace

cudaError_t launch_layer_norm(const LayerNormArgs& a, cudaStream_t stream) {
  const LayerNormTypes t = layer_norm_types(a);
  if (!is_float_type(t.x) || !is_float_type(t.y) || !is_float_type(t.param) ||
      (a.residual && !is_float_type(t.z)) || (a.sum && !a.residual) ||
      (a.y_narrow && a.y_narrow_dtype != DType::Float16 && a.y_narrow_dtype != DType::BFloat16))
    return cudaErrorInvalidValue;
  if (a.rows == 0) return cudaSuccess;
  const bool double_acc = a.double_stats || t.x == DType::Float64 || t.y == DType::Float64;
  const bool any_f64 = t.x == DType::Float64 || t.y == DType::Float64 ||
                       t.param == DType::Float64 || (a.residual && t.z == DType::Float64);
  if (!double_acc && !any_f64 && a.cols >= 1 && a.cols <= kLayerNormRowMaxCols)
    return launch_layer_norm_rows(a, t, stream);
  return SY_DISPATCH_FLOAT(t.x, T, {
    if constexpr (std::is_same_v<T, double>) {
      return layer_norm_generic<T, double>(a, t, stream);
    } else {
      if (double_acc) return layer_norm_generic<T, double>(a, t, stream);
      return layer_norm_generic<T, float>(a, t, stream);
    }
  });
}

}  // namespace switchyard::cuda
