// Device code of Stencil (launch API in stencil_impl.h). The padding map repeats
// ops::stencil_source_index (src/ops/stencil_geometry.h), which nvcc does not see; the host side
// checked the pads, so one mirror step always lands inside the input. Ties keep the first tap.
#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/stencil_impl.h"

namespace switchyard::cuda {

namespace {

using dev::kThreads;

__device__ __forceinline__ int64_t source_index(int64_t i, int64_t n, StencilPad mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case StencilPad::Clamp:
      return i < 0 ? 0 : n - 1;
    case StencilPad::Reflect:
      return i < 0 ? -i : 2 * (n - 1) - i;
    case StencilPad::Symmetric:
      return i < 0 ? -i - 1 : 2 * n - 1 - i;
    default:
      return -1;
  }
}

template <StencilMode kMode, typename Out>
__global__ void stencil_kernel(const float* x, const float* w, Out* y, StencilWindow s,
                               StencilPad padding, int64_t total) {
  const int64_t out_plane = s.out[0] * s.out[1] * s.out[2];
  const int64_t in_plane = s.in[0] * s.in[1] * s.in[2];
  SY_GRID_STRIDE(i, total) {
    const int64_t plane = i / out_plane;
    int64_t o = i % out_plane;
    const int64_t ow = o % s.out[2];
    o /= s.out[2];
    const int64_t oh = o % s.out[1];
    const int64_t od = o / s.out[1];
    const float* xp = x + plane * in_plane;
    float sum = 0, best = 0;
    int64_t best_tap = -1, tap = 0;
    for (int64_t kd = 0; kd < s.window[0]; ++kd) {
      const int64_t d =
          source_index(od * s.strides[0] - s.pad_begin[0] + kd * s.dilations[0], s.in[0], padding);
      for (int64_t kh = 0; kh < s.window[1]; ++kh) {
        const int64_t h = source_index(oh * s.strides[1] - s.pad_begin[1] + kh * s.dilations[1],
                                       s.in[1], padding);
        for (int64_t kw = 0; kw < s.window[2]; ++kw, ++tap) {
          const int64_t c = source_index(ow * s.strides[2] - s.pad_begin[2] + kw * s.dilations[2],
                                         s.in[2], padding);
          const float v = d < 0 || h < 0 || c < 0 ? 0.0f : xp[(d * s.in[1] + h) * s.in[2] + c];
          const float product = v * w[tap];
          if constexpr (kMode == StencilMode::Sum) {
            sum += product;
          } else {
            constexpr bool kMin = kMode == StencilMode::Min || kMode == StencilMode::ArgMin;
            if (best_tap < 0 || (kMin ? product < best : product > best)) {
              best = product;
              best_tap = tap;
            }
          }
        }
      }
    }
    if constexpr (kMode == StencilMode::Sum) {
      y[i] = sum;
    } else if constexpr (kMode == StencilMode::Min || kMode == StencilMode::Max) {
      y[i] = best;
    } else {
      y[i] = best_tap;
    }
  }
}

template <StencilMode kMode, typename Out>
cudaError_t launch_mode(const StencilArgs& a, int64_t total, cudaStream_t stream) {
  stencil_kernel<kMode, Out><<<dev::blocks_for(total), kThreads, 0, stream>>>(
      a.x, a.w, static_cast<Out*>(a.y), a.window, a.padding, total);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_stencil(const StencilArgs& a, cudaStream_t stream) {
  const StencilWindow& s = a.window;
  const int64_t total = a.planes * s.out[0] * s.out[1] * s.out[2];
  if (total <= 0) return cudaSuccess;
  switch (a.mode) {
    case StencilMode::Sum:
      return launch_mode<StencilMode::Sum, float>(a, total, stream);
    case StencilMode::Min:
      return launch_mode<StencilMode::Min, float>(a, total, stream);
    case StencilMode::Max:
      return launch_mode<StencilMode::Max, float>(a, total, stream);
    case StencilMode::ArgMin:
      return launch_mode<StencilMode::ArgMin, int64_t>(a, total, stream);
    case StencilMode::ArgMax:
      return launch_mode<StencilMode::ArgMax, int64_t>(a, total, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace switchyard::cuda
