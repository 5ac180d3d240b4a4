// Device code of the conv family: the layout moves around cuDNN (tiled batched transposes for
// NCHW <-> NHWC and KCRS -> KRSC, zero-padded input copies) and the conv epilogue (bias,
// residual, activation), either in place on a result in its own layout or fused into the
// NHWC -> NCHW transpose of an NHWC result.
#include <cuda_runtime.h>

#include <type_traits>

#include "backends/cuda/kernels/common.cuh"

#include "backends/cuda/kernels/conv_impl.h"

namespace switchyard::cuda {

namespace {

using dev::from_float;
using dev::to_float;

constexpr int kTile = 32;
constexpr int kTileRowsPerPass = 8;

// Moves one element as raw bits: a pure transpose needs no arithmetic.
template <typename Bits>
struct RawLoad {
  const Bits* src;
  int64_t rows, cols;
  __device__ Bits operator()(int64_t b, int64_t r, int64_t c) const {
    return src[(b * rows + r) * cols + c];
  }
};

template <typename Bits>
struct RawStore {
  Bits* dst;
  int64_t rows, cols;
  // out_row indexes the output's rows (the input's columns), out_col the input's rows.
  __device__ void operator()(int64_t b, int64_t out_row, int64_t out_col, Bits v) const {
    dst[(b * cols + out_row) * rows + out_col] = v;
  }
};

template <typename T>
struct FloatLoad {
  const T* src;
  int64_t rows, cols;
  __device__ float operator()(int64_t b, int64_t r, int64_t c) const {
    return to_float(src[(b * rows + r) * cols + c]);
  }
};

// The activation as the kernels apply it.
struct ActParams {
  ConvActivation kind;
  float lo, hi;  // Clip's bounds
};

ActParams act_params(const ConvEpilogue& e) { return {e.activation, e.clip_lo, e.clip_hi}; }

// The type the epilogue computes in: double for a float64 result, float otherwise.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
__device__ __forceinline__ acc_t<T> widen(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return to_float(v);
  }
}

template <typename T>
__device__ __forceinline__ T narrow(acc_t<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return from_float<T>(v);
  }
}

template <typename C>
__device__ __forceinline__ C activate(C v, const ActParams& act) {
  constexpr bool kDouble = std::is_same_v<C, double>;
  switch (act.kind) {
    case ConvActivation::Clip:
      if constexpr (kDouble) {
        return fmin(fmax(v, static_cast<double>(act.lo)), static_cast<double>(act.hi));
      } else {
        return fminf(fmaxf(v, act.lo), act.hi);
      }
    case ConvActivation::Relu:
      return v > C(0) ? v : C(0);
    case ConvActivation::Sigmoid:
      if constexpr (kDouble) {
        return 1.0 / (1.0 + exp(-v));
      } else {
        return 1.f / (1.f + expf(-v));
      }
    case ConvActivation::Tanh:
      if constexpr (kDouble) {
        return tanh(v);
      } else {
        return tanhf(v);
      }
    case ConvActivation::None:
      break;
  }
  return v;
}

// Output element i of channel c of an NCHW result: act(v + bias[c] + residual[i]), computed in
// acc_t<T> (float64 results keep double precision).
template <typename T>
__device__ __forceinline__ T finish(acc_t<T> v, int64_t i, int64_t c, const T* bias,
                                    const T* residual, const ActParams& act) {
  if (bias) v += widen(bias[c]);
  if (residual) v += widen(residual[i]);
  return narrow<T>(activate(v, act));
}

// Stores into y [N, C, S] from an NHWC source viewed as [N, S, C] (rows S, cols C).
template <typename T>
struct EpilogueStore {
  T* y;
  const T* bias;
  const T* residual;
  ActParams act;
  int64_t rows, cols;
  __device__ void operator()(int64_t b, int64_t channel, int64_t s, float v) const {
    int64_t i = (b * cols + channel) * rows + s;
    y[i] = finish(v, i, channel, bias, residual, act);
  }
};

// Transposes `batch` [rows, cols] matrices through a shared-memory tile so that both the loads
// and the stores are coalesced; loops over tiles so any size fits the grid limits.
template <typename Shared, typename Load, typename Store>
__global__ void tiled_transpose_kernel(int64_t batch, int64_t rows, int64_t cols, Load load,
                                       Store store) {
  __shared__ Shared tile[kTile][kTile + 1];
  const int64_t tiles_r = (rows + kTile - 1) / kTile;
  const int64_t tiles_c = (cols + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    for (int64_t tr = blockIdx.y; tr < tiles_r; tr += gridDim.y) {
      for (int64_t tc = blockIdx.x; tc < tiles_c; tc += gridDim.x) {
        int64_t c = tc * kTile + threadIdx.x;
        for (int i = threadIdx.y; i < kTile; i += kTileRowsPerPass) {
          int64_t r = tr * kTile + i;
          if (r < rows && c < cols) tile[i][threadIdx.x] = load(b, r, c);
        }
        __syncthreads();
        int64_t out_col = tr * kTile + threadIdx.x;
        for (int i = threadIdx.y; i < kTile; i += kTileRowsPerPass) {
          int64_t out_row = tc * kTile + i;
          if (out_row < cols && out_col < rows) store(b, out_row, out_col, tile[threadIdx.x][i]);
        }
        __syncthreads();
      }
    }
  }
}

template <typename Shared, typename Load, typename Store>
cudaError_t launch_tiled(int64_t batch, int64_t rows, int64_t cols, Load load, Store store,
                         cudaStream_t stream) {
  const int64_t tiles_r = (rows + kTile - 1) / kTile;
  const int64_t tiles_c = (cols + kTile - 1) / kTile;
  dim3 grid(static_cast<unsigned>(tiles_c < (1LL << 30) ? tiles_c : (1LL << 30)),
            static_cast<unsigned>(tiles_r < 65535 ? tiles_r : 65535),
            static_cast<unsigned>(batch < 65535 ? batch : 65535));
  dim3 block(kTile, kTileRowsPerPass);
  tiled_transpose_kernel<Shared><<<grid, block, 0, stream>>>(batch, rows, cols, load, store);
  return cudaGetLastError();
}

template <typename T>
__global__ void epilogue_in_place_kernel(T* y, int64_t total, int64_t channels, int64_t spatial,
                                         bool nhwc, const T* bias, const T* residual,
                                         ActParams act) {
  SY_GRID_STRIDE(i, total) {
    int64_t c = nhwc ? i % channels : (i / spatial) % channels;
    y[i] = finish(widen(y[i]), i, c, bias, residual, act);
  }
}

// The same 16 bytes at a time: `vectors` Vec16s of y, each inside one channel run (NHWC:
// channels a multiple of Vec16's size, the vector's channels consecutive; NCHW: spatial a
// multiple of it, one channel per vector), y, bias and residual 16-byte aligned. Indices in 32
// bits where they fit (the 64-bit division was most of the scalar kernel's time).
template <typename T>
__global__ void epilogue_in_place_vec_kernel(T* y, int64_t vectors, int64_t channels,
                                             int64_t spatial, bool nhwc, bool index32,
                                             const T* bias, const T* residual, ActParams act) {
  using Vec = dev::Vec16<T>;
  constexpr int kSize = Vec::kSize;
  SY_GRID_STRIDE(i, vectors) {
    const int64_t e = i * kSize;  // the vector's first element
    int64_t c;
    if (index32) {
      const uint32_t u = static_cast<uint32_t>(e);
      c = nhwc ? u % static_cast<uint32_t>(channels)
               : (u / static_cast<uint32_t>(spatial)) % static_cast<uint32_t>(channels);
    } else {
      c = nhwc ? e % channels : (e / spatial) % channels;
    }
    Vec q = dev::load_vec16(y + e);
    // As finish(): ((y + bias) + residual), then the activation, each step in acc_t<T>.
    using C = acc_t<T>;
    C b[kSize], r[kSize];
    if (bias && nhwc) {
      const Vec bv = dev::load_vec16(bias + c);
#pragma unroll
      for (int k = 0; k < kSize; ++k) b[k] = widen(bv.v[k]);
    } else {
      const C bc = bias ? widen(bias[c]) : C(0);
#pragma unroll
      for (int k = 0; k < kSize; ++k) b[k] = bc;
    }
    if (residual) {
      const Vec rv = dev::load_vec16(residual + e);
#pragma unroll
      for (int k = 0; k < kSize; ++k) r[k] = widen(rv.v[k]);
    }
#pragma unroll
    for (int k = 0; k < kSize; ++k) {
      C v = widen(q.v[k]);
      if (bias) v += b[k];
      if (residual) v += r[k];
      q.v[k] = narrow<T>(activate(v, act));
    }
    dev::store_vec16(y + e, q);
  }
}

// Spatial geometry of a padded copy, normalised to three dims (leading dims of size 1).
struct PadGeometry {
  int64_t in[3];
  int64_t padded[3];
  int64_t begin[3];
};

template <typename Bits>
__global__ void pad_input_kernel(const Bits* x, bool x_nhwc, Bits* dst, int64_t total,
                                 int64_t channels, PadGeometry g, bool nhwc) {
  SY_GRID_STRIDE(i, total) {
    int64_t rest = i, c = 0;
    if (nhwc) {
      c = rest % channels;
      rest /= channels;
    }
    int64_t p[3];
    for (int d = 2; d >= 0; --d) {
      p[d] = rest % g.padded[d];
      rest /= g.padded[d];
    }
    if (!nhwc) {
      c = rest % channels;
      rest /= channels;
    }
    int64_t n = rest;
    int64_t src = x_nhwc ? n : n * channels + c;
    bool inside = true;
    for (int d = 0; d < 3; ++d) {
      int64_t q = p[d] - g.begin[d];
      inside = inside && q >= 0 && q < g.in[d];
      src = src * g.in[d] + q;
    }
    if (x_nhwc) src = src * channels + c;
    dst[i] = inside ? x[src] : Bits(0);
  }
}

// Raw bits type of a float dtype's elements (transposes and copies need no arithmetic).
template <typename F>
cudaError_t dispatch_bits(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32:
      return f(uint32_t{});
    case DType::Float16:
    case DType::BFloat16:
      return f(uint16_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launch_batched_transpose(DType dtype, const void* src, void* dst, int64_t batch,
                                     int64_t rows, int64_t cols, cudaStream_t stream) {
  if (batch * rows * cols == 0) return cudaSuccess;
  return dispatch_bits(dtype, [&](auto tag) {
    using Bits = decltype(tag);
    RawLoad<Bits> load{static_cast<const Bits*>(src), rows, cols};
    RawStore<Bits> store{static_cast<Bits*>(dst), rows, cols};
    return launch_tiled<Bits>(batch, rows, cols, load, store, stream);
  });
}

cudaError_t launch_pad_input(DType dtype, const void* x, bool x_nhwc, void* dst, int64_t batch,
                             int64_t channels, int spatial, const int64_t* in,
                             const int64_t* padded, const int64_t* pad_begin, bool nhwc,
                             cudaStream_t stream) {
  if (spatial < 1 || spatial > 3) return cudaErrorInvalidValue;
  PadGeometry g{{1, 1, 1}, {1, 1, 1}, {0, 0, 0}};
  int64_t total = batch * channels;
  for (int d = 0; d < spatial; ++d) {
    int slot = 3 - spatial + d;
    g.in[slot] = in[d];
    g.padded[slot] = padded[d];
    g.begin[slot] = pad_begin[d];
    total *= padded[d];
  }
  if (total == 0) return cudaSuccess;
  return dispatch_bits(dtype, [&](auto tag) {
    using Bits = decltype(tag);
    pad_input_kernel<Bits><<<dev::blocks_for(total), dev::kThreads, 0, stream>>>(
        static_cast<const Bits*>(x), x_nhwc, static_cast<Bits*>(dst), total, channels, g, nhwc);
    return cudaGetLastError();
  });
}

cudaError_t launch_conv_epilogue_in_place(DType dtype, void* y, int64_t batch, int64_t channels,
                                          int64_t spatial_size, bool nhwc,
                                          const ConvEpilogue& epilogue, cudaStream_t stream) {
  int64_t total = batch * channels * spatial_size;
  if (total == 0) return cudaSuccess;
  return SY_DISPATCH_FLOAT(dtype, T, {
    constexpr int64_t kSize = dev::Vec16<T>::kSize;
    T* py = static_cast<T*>(y);
    const T* bias = static_cast<const T*>(epilogue.bias);
    const T* residual = static_cast<const T*>(epilogue.residual);
    const bool runs = nhwc ? channels % kSize == 0 : spatial_size % kSize == 0;
    if (runs && dev::is_aligned16(py) && (!bias || !nhwc || dev::is_aligned16(bias)) &&
        (!residual || dev::is_aligned16(residual))) {
      const int64_t vectors = total / kSize;
      epilogue_in_place_vec_kernel<T><<<dev::blocks_for(vectors), dev::kThreads, 0, stream>>>(
          py, vectors, channels, spatial_size, nhwc, total <= static_cast<int64_t>(UINT32_MAX),
          bias, residual, act_params(epilogue));
      return cudaGetLastError();
    }
    epilogue_in_place_kernel<T><<<dev::blocks_for(total), dev::kThreads, 0, stream>>>(
        py, total, channels, spatial_size, nhwc, bias, residual, act_params(epilogue));
    return cudaGetLastError();
  });
}

cudaError_t launch_conv_epilogue_from_nhwc(DType dtype, const void* conv, void* y, int64_t batch,
                                           int64_t channels, int64_t spatial_size,
                                           const ConvEpilogue& epilogue, cudaStream_t stream) {
  if (batch * channels * spatial_size == 0) return cudaSuccess;
  return SY_DISPATCH_FLOAT(dtype, T, {
    // The NHWC result is [N, S, C]: rows are spatial positions, columns channels.
    FloatLoad<T> load{static_cast<const T*>(conv), spatial_size, channels};
    EpilogueStore<T> store{static_cast<T*>(y),
                           static_cast<const T*>(epilogue.bias),
                           static_cast<const T*>(epilogue.residual),
                           act_params(epilogue),
                           spatial_size,
                           channels};
    return launch_tiled<float>(batch, spatial_size, channels, load, store, stream);
  });
}

}  // namespace switchyard::cuda
