// Device code of the normalization family but LayerNormalization (layer_norm.cu; launch API in
// normalization_impl.h): inference BatchNormalization, Instance/GroupNormalization,
// LpNormalization, MeanVarianceNormalization. Instance/GroupNorm blocks are reduced by one warp
// each when short (<= 1024 values) and by one 256-thread block each when long; mean and variance
// are two-pass (mean first, then the sum of squared deviations) like the CPU kernels.
#include <type_traits>

#include "backends/cuda/kernels/normalization_device.cuh"

namespace switchyard::cuda {

namespace {

using namespace norm;  // NOLINT: the family's helpers

// Value j of contiguous run s of `len` values.
template <typename T, typename Acc>
struct ContiguousSource {
  const T* x;
  int64_t len;
  __device__ __forceinline__ Acc operator()(int64_t s, int64_t j) const {
    return load<Acc>(x, s * len + j);
  }
};
template <typename T, typename Acc>
struct ChannelEpilogue {
  T* y;
  const T* scale;
  const T* bias;
  int64_t len;
  int64_t spatial;
  int64_t channels;
  int64_t per_block;

  template <typename Source>
  __device__ void operator()(int64_t g, const Source& source, Acc m, Acc inv, int lane,
                             int width) const {
    const int64_t ch0 = (g * per_block) % channels;
    T* q = y + g * len;
    for (int64_t j = lane; j < len; j += width) {
      const int64_t ch = ch0 + j / spatial;
      const Acc mul = inv * load<Acc>(scale, ch);
      const Acc add = load<Acc>(bias, ch) - m * mul;
      q[j] = store_cast<T>(source(g, j) * mul + add);
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
  return launch_segments(ContiguousSource<T, Acc>{static_cast<const T*>(a.x), a.block_size},
                         a.blocks, a.block_size, static_cast<Acc>(a.epsilon), e, stream);
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
