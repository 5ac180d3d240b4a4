// Device code of the normalization family (launch API in normalization_impl.h). Rows/blocks that
// are normalized together (LayerNorm rows, Instance/GroupNorm blocks) are reduced by one warp
// each when short (<= 1024 values) and by one 256-thread block each when long; mean and
// variance are two-pass (mean first, then the sum of squared deviations) like the CPU kernels.
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/normalization_impl.h"

namespace switchyard::cuda {

namespace {

using dev::kThreads;

// Accumulator of a storage type: double for double, float otherwise.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename Acc, typename T>
__device__ __forceinline__ Acc load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, double>) {
    return static_cast<Acc>(p[i]);
  } else {
    return static_cast<Acc>(dev::to_float(p[i]));
  }
}

template <typename T, typename Acc>
__device__ __forceinline__ T store_cast(Acc v) {
  if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(v);
  } else {
    return dev::from_float<T>(static_cast<float>(v));
  }
}

// Element i of a float tensor whose dtype is known only at run time (small per-channel data).
template <typename Acc>
__device__ Acc load_any(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Float16:
      return static_cast<Acc>(__half2float(static_cast<const __half*>(p)[i]));
    case DType::BFloat16:
      return static_cast<Acc>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    case DType::Float64:
      return static_cast<Acc>(static_cast<const double*>(p)[i]);
    default:
      return static_cast<Acc>(static_cast<const float*>(p)[i]);
  }
}

template <typename Acc>
__device__ void store_any(void* p, DType dtype, int64_t i, Acc v) {
  switch (dtype) {
    case DType::Float16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      break;
    case DType::BFloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      break;
    case DType::Float64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      break;
    default:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
  }
}

template <typename Acc>
__device__ __forceinline__ Acc acc_sqrt(Acc v) {
  if constexpr (std::is_same_v<Acc, double>) {
    return sqrt(v);
  } else {
    return sqrtf(v);
  }
}

template <typename Acc>
__device__ __forceinline__ Acc acc_abs(Acc v) {
  if constexpr (std::is_same_v<Acc, double>) {
    return fabs(v);
  } else {
    return fabsf(v);
  }
}

dev::Strides to_strides(const NormDims& d) {
  dev::Strides s;
  s.rank = d.rank;
  for (int i = 0; i < d.rank; ++i) {
    s.dims[i] = d.dims[i];
    s.strides[i] = d.strides[i];
  }
  return s;
}

// Sum of v over a group of kWidth threads (a warp, or the whole kThreads block); every thread of
// the group gets the result. Block groups use `smem` (kThreads / 32 values).
template <int kWidth, typename Acc>
__device__ __forceinline__ Acc group_sum(Acc v, Acc* smem) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if constexpr (kWidth > 32) {
    constexpr int kWarps = kWidth / 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    __syncthreads();  // smem may still be read from the previous call
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < kWarps ? smem[lane] : Acc(0);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  return v;
}

// Mean and 1/sqrt(var + epsilon) of each of `segments` contiguous runs of `len` values, each run
// reduced by kWidth threads; then epilogue(segment, data, mean, inv, lane, kWidth) writes it.
template <int kWidth, typename T, typename Acc, typename Epilogue>
__global__ void __launch_bounds__(kThreads)
    segment_norm_kernel(const T* x, int64_t segments, int64_t len, Acc epsilon, Epilogue epilogue) {
  __shared__ Acc smem[kThreads / 32];
  constexpr int kPerBlock = kThreads / kWidth;
  const int lane = static_cast<int>(threadIdx.x) % kWidth;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * kPerBlock + threadIdx.x / kWidth;
       s < segments; s += static_cast<int64_t>(gridDim.x) * kPerBlock) {
    const T* p = x + s * len;
    Acc sum = 0;
    for (int64_t j = lane; j < len; j += kWidth) sum += load<Acc>(p, j);
    const Acc mean = group_sum<kWidth>(sum, smem) / static_cast<Acc>(len);
    Acc sq = 0;
    for (int64_t j = lane; j < len; j += kWidth) {
      const Acc d = load<Acc>(p, j) - mean;
      sq += d * d;
    }
    const Acc var = group_sum<kWidth>(sq, smem) / static_cast<Acc>(len);
    const Acc inv = Acc(1) / acc_sqrt(var + epsilon);
    epilogue(s, p, mean, inv, lane, kWidth);
  }
}

template <typename T, typename Acc, typename Epilogue>
cudaError_t launch_segments(const T* x, int64_t segments, int64_t len, Acc epsilon,
                            const Epilogue& epilogue, cudaStream_t stream) {
  if (len <= 1024) {
    segment_norm_kernel<32, T, Acc>
        <<<dev::blocks_for(segments, kThreads / 32), kThreads, 0, stream>>>(x, segments, len,
                                                                            epsilon, epilogue);
  } else {
    segment_norm_kernel<kThreads, T, Acc><<<dev::blocks_for(segments, 1), kThreads, 0, stream>>>(
        x, segments, len, epsilon, epilogue);
  }
  return cudaGetLastError();
}

template <typename T, typename Acc>
struct LayerNormEpilogue {
  T* y;
  const T* scale;
  const T* bias;
  bool scale_per_column;
  bool bias_per_column;
  dev::Strides scale_view;
  dev::Strides bias_view;
  int64_t cols;
  DType stats_dtype;
  void* mean;
  void* inv_std_dev;

  // Y[r, j] from the normalized value (x - mean) * inv.
  __device__ __forceinline__ void write(int64_t r, int64_t j, Acc normalized) const {
    const int64_t e = r * cols + j;
    const Acc sc = load<Acc>(scale, scale_per_column ? j : dev::strided_offset(e, scale_view));
    const Acc bs =
        bias ? load<Acc>(bias, bias_per_column ? j : dev::strided_offset(e, bias_view)) : Acc(0);
    y[e] = store_cast<T>(normalized * sc + bs);
  }

  __device__ __forceinline__ void write_stats(int64_t r, Acc m, Acc inv) const {
    if (mean) store_any(mean, stats_dtype, r, m);
    if (inv_std_dev) store_any(inv_std_dev, stats_dtype, r, inv);
  }

  __device__ void operator()(int64_t r, const T* p, Acc m, Acc inv, int lane, int width) const {
    for (int64_t j = lane; j < cols; j += width) write(r, j, (load<Acc>(p, j) - m) * inv);
    if (lane == 0) write_stats(r, m, inv);
  }
};

// Rows of up to 32 * kPer values with float statistics: a warp per row, held in registers, so X
// and the residual Z (may be null) are read once; mean first, then the squared deviations.
template <int kPer, typename T>
__global__ void __launch_bounds__(kThreads)
    layer_norm_warp_kernel(const T* x, const T* z, int64_t rows, int cols, float epsilon,
                           LayerNormEpilogue<T, float> e) {
  constexpr int kPerBlock = kThreads / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kPerBlock + threadIdx.x / 32; r < rows;
       r += static_cast<int64_t>(gridDim.x) * kPerBlock) {
    const T* p = x + r * cols;
    const T* q = z ? z + r * cols : nullptr;
    float v[kPer];
    float sum = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int j = lane + 32 * i;
      v[i] = 0;
      if (j < cols) {
        float s = load<float>(p, j);
        // The sum rounded to T, as the unfused Add leaves it.
        if (q) s = dev::to_float(dev::from_float<T>(s + load<float>(q, j)));
        v[i] = s;
        sum += s;
      }
    }
    const float m = group_sum<32>(sum, static_cast<float*>(nullptr)) / static_cast<float>(cols);
    float sq = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const float d = v[i] - m;
      if (lane + 32 * i < cols) sq += d * d;
    }
    const float var = group_sum<32>(sq, static_cast<float*>(nullptr)) / static_cast<float>(cols);
    const float inv = 1.0f / sqrtf(var + epsilon);
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int j = lane + 32 * i;
      if (j < cols) e.write(r, j, (v[i] - m) * inv);
    }
    if (lane == 0) e.write_stats(r, m, inv);
  }
}

template <int kPer, typename T>
cudaError_t launch_layer_norm_warp(const LayerNormArgs& a, const LayerNormEpilogue<T, float>& e,
                                   cudaStream_t stream) {
  layer_norm_warp_kernel<kPer, T><<<dev::blocks_for(a.rows, kThreads / 32), kThreads, 0, stream>>>(
      static_cast<const T*>(a.x), static_cast<const T*>(a.residual), a.rows,
      static_cast<int>(a.cols), a.epsilon, e);
  return cudaGetLastError();
}

template <typename T, typename Acc>
cudaError_t layer_norm_typed(const LayerNormArgs& a, cudaStream_t stream) {
  LayerNormEpilogue<T, Acc> e{static_cast<T*>(a.y),
                              static_cast<const T*>(a.scale),
                              static_cast<const T*>(a.bias),
                              a.scale_per_column,
                              a.bias_per_column,
                              to_strides(a.scale_view),
                              to_strides(a.bias_view),
                              a.cols,
                              a.stats_dtype,
                              a.mean,
                              a.inv_std_dev};
  if constexpr (std::is_same_v<Acc, float>) {
    if (layer_norm_takes_residual(a.rows, a.cols, false)) {
      if (a.cols <= 32) return launch_layer_norm_warp<1, T>(a, e, stream);
      if (a.cols <= 64) return launch_layer_norm_warp<2, T>(a, e, stream);
      if (a.cols <= 128) return launch_layer_norm_warp<4, T>(a, e, stream);
      if (a.cols <= 256) return launch_layer_norm_warp<8, T>(a, e, stream);
      if (a.cols <= 512) return launch_layer_norm_warp<16, T>(a, e, stream);
      return launch_layer_norm_warp<32, T>(a, e, stream);
    }
  }
  if (a.residual)
    return cudaErrorInvalidValue;  // the caller sums first (layer_norm_takes_residual)
  return launch_segments(static_cast<const T*>(a.x), a.rows, a.cols, static_cast<Acc>(a.epsilon), e,
                         stream);
}

template <typename T, typename Acc>
struct ChannelEpilogue {
  T* y;
  const T* scale;
  const T* bias;
  int64_t len;
  int64_t spatial;
  int64_t channels;
  int64_t per_block;

  __device__ void operator()(int64_t g, const T* p, Acc m, Acc inv, int lane, int width) const {
    const int64_t ch0 = (g * per_block) % channels;
    T* q = y + g * len;
    for (int64_t j = lane; j < len; j += width) {
      const int64_t ch = ch0 + j / spatial;
      const Acc mul = inv * load<Acc>(scale, ch);
      const Acc add = load<Acc>(bias, ch) - m * mul;
      q[j] = store_cast<T>(load<Acc>(p, j) * mul + add);
    }
  }
};

template <typename T>
cudaError_t group_norm_typed(const GroupNormArgs& a, cudaStream_t stream) {
  using Acc = acc_t<T>;
  ChannelEpilogue<T, Acc> e{static_cast<T*>(a.y),
                            static_cast<const T*>(a.scale),
                            static_cast<const T*>(a.bias),
                            a.block_size,
                            a.spatial,
                            a.channels,
                            a.channels_per_block};
  return launch_segments(static_cast<const T*>(a.x), a.blocks, a.block_size,
                         static_cast<Acc>(a.epsilon), e, stream);
}

// Folds BatchNorm's four per-channel parameters into y = x * mul + add.
template <typename Acc>
__global__ void fold_batch_norm_kernel(ChannelParam scale, ChannelParam bias, ChannelParam mean,
                                       ChannelParam var, int64_t channels, Acc epsilon, Acc* mul,
                                       Acc* add) {
  SY_GRID_STRIDE(c, channels) {
    const Acc m = load_any<Acc>(scale.data, scale.dtype, c) /
                  acc_sqrt(load_any<Acc>(var.data, var.dtype, c) + epsilon);
    mul[c] = m;
    add[c] = load_any<Acc>(bias.data, bias.dtype, c) - load_any<Acc>(mean.data, mean.dtype, c) * m;
  }
}

template <typename T, typename Acc>
__global__ void batch_norm_kernel(const T* x, T* y, const Acc* mul, const Acc* add, int64_t total,
                                  int64_t channels, int64_t spatial) {
  SY_GRID_STRIDE(i, total) {
    const int64_t c = (i / spatial) % channels;
    y[i] = store_cast<T>(load<Acc>(x, i) * mul[c] + add[c]);
  }
}

template <typename T>
cudaError_t batch_norm_typed(const BatchNormArgs& a, cudaStream_t stream) {
  using Acc = acc_t<T>;
  Acc* mul = static_cast<Acc*>(a.scratch);
  Acc* add = mul + a.channels;
  fold_batch_norm_kernel<Acc><<<dev::blocks_for(a.channels), kThreads, 0, stream>>>(
      a.scale, a.bias, a.mean, a.var, a.channels, static_cast<Acc>(a.epsilon), mul, add);
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  const int64_t total = a.n * a.channels * a.spatial;
  batch_norm_kernel<T, Acc><<<dev::blocks_for(total), kThreads, 0, stream>>>(
      static_cast<const T*>(a.x), static_cast<T*>(a.y), mul, add, total, a.channels, a.spatial);
  return cudaGetLastError();
}

template <typename T, typename Acc>
__global__ void lp_norm_kernel(const T* x, T* y, int64_t columns, int64_t len, int64_t inner,
                               int p) {
  SY_GRID_STRIDE(t, columns) {
    const int64_t base = (t / inner) * len * inner + t % inner;
    Acc norm = 0;
    for (int64_t j = 0; j < len; ++j) {
      const Acc v = load<Acc>(x, base + j * inner);
      norm += p == 1 ? acc_abs(v) : v * v;
    }
    if (p == 2) norm = acc_sqrt(norm);
    // An all-zero slice stays zero instead of becoming 0/0.
    const Acc inv = norm == Acc(0) ? Acc(0) : Acc(1) / norm;
    for (int64_t j = 0; j < len; ++j)
      y[base + j * inner] = store_cast<T>(load<Acc>(x, base + j * inner) * inv);
  }
}

// One block per kept position; the reduced elements are addressed through `reduced`.
template <typename T, typename Acc>
__global__ void __launch_bounds__(kThreads)
    mvn_kernel(const T* x, T* y, dev::Strides kept, dev::Strides reduced, int64_t kept_count,
               int64_t count) {
  __shared__ Acc smem[kThreads / 32];
  for (int64_t k = blockIdx.x; k < kept_count; k += gridDim.x) {
    const int64_t base = dev::strided_offset(k, kept);
    Acc sum = 0;
    for (int64_t r = threadIdx.x; r < count; r += kThreads)
      sum += load<Acc>(x, base + dev::strided_offset(r, reduced));
    const Acc mean = group_sum<kThreads>(sum, smem) / static_cast<Acc>(count);
    Acc sq = 0;
    for (int64_t r = threadIdx.x; r < count; r += kThreads) {
      const Acc d = load<Acc>(x, base + dev::strided_offset(r, reduced)) - mean;
      sq += d * d;
    }
    // The ONNX function body: (X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9).
    const Acc var = group_sum<kThreads>(sq, smem) / static_cast<Acc>(count);
    const Acc inv = Acc(1) / (acc_sqrt(var) + static_cast<Acc>(1e-9));
    for (int64_t r = threadIdx.x; r < count; r += kThreads) {
      const int64_t o = base + dev::strided_offset(r, reduced);
      y[o] = store_cast<T>((load<Acc>(x, o) - mean) * inv);
    }
  }
}

}  // namespace

cudaError_t launch_layer_norm(const LayerNormArgs& a, cudaStream_t stream) {
  return SY_DISPATCH_FLOAT(a.dtype, T, {
    if (a.double_stats) return layer_norm_typed<T, double>(a, stream);
    return layer_norm_typed<T, acc_t<T>>(a, stream);
  });
}

size_t batch_norm_scratch_bytes(DType dtype, int64_t channels) {
  size_t acc = dtype == DType::Float64 ? sizeof(double) : sizeof(float);
  return 2 * static_cast<size_t>(channels) * acc;
}

cudaError_t launch_batch_norm(const BatchNormArgs& a, cudaStream_t stream) {
  return SY_DISPATCH_FLOAT(a.dtype, T, { return batch_norm_typed<T>(a, stream); });
}

cudaError_t launch_group_norm(const GroupNormArgs& a, cudaStream_t stream) {
  return SY_DISPATCH_FLOAT(a.dtype, T, { return group_norm_typed<T>(a, stream); });
}

cudaError_t launch_lp_norm(DType dtype, const void* x, void* y, int64_t outer, int64_t len,
                           int64_t inner, int p, cudaStream_t stream) {
  return SY_DISPATCH_FLOAT(dtype, T, {
    const int64_t columns = outer * inner;
    lp_norm_kernel<T, acc_t<T>><<<dev::blocks_for(columns), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), columns, len, inner, p);
    return cudaGetLastError();
  });
}

cudaError_t launch_mean_variance_norm(const MvnArgs& a, cudaStream_t stream) {
  return SY_DISPATCH_FLOAT(a.dtype, T, {
    mvn_kernel<T, acc_t<T>><<<dev::blocks_for(a.kept_count, 1), kThreads, 0, stream>>>(
        static_cast<const T*>(a.x), static_cast<T*>(a.y), to_strides(a.kept), to_strides(a.reduced),
        a.kept_count, a.count);
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda
