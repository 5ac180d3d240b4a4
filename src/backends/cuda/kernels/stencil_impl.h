// Launch API of Stencil's CUDA kernel (stencil.cu; op of domain ai.switchyard, geometry in
// src/ops/stencil_geometry.h): one thread per output element, the window's taps visited in
// row-major order like the CPU kernel. Plain C++ so the host side (stencil.cc) includes it
// without nvcc. The launcher enqueues on `stream`, never synchronises, and returns
// cudaGetLastError(). float32 X and W; Y float32, or int64 for argmin/argmax.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace switchyard::cuda {

/// ops::StencilReduction and ops::StencilPadding, in the same order.
enum class StencilMode : int { Sum, Min, Max, ArgMin, ArgMax };
enum class StencilPad : int { Zero, Clamp, Reflect, Symmetric };

/// A 2-D window is passed as 3-D with depth 1. Per dim (d, h, w): a tap reads padded coordinate
/// out * stride - pad_begin + k * dilation, mapped into [0, in) by `padding`.
struct StencilWindow {
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t window[3] = {1, 1, 1};
  int64_t strides[3] = {1, 1, 1};
  int64_t dilations[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0};
};

struct StencilArgs {
  StencilMode mode = StencilMode::Sum;
  StencilPad padding = StencilPad::Zero;
  const float* x = nullptr;  ///< [planes, in...]
  const float* w = nullptr;  ///< the window, row-major
  void* y = nullptr;         ///< [planes, out...], float (int64 for ArgMin/ArgMax)
  int64_t planes = 0;        ///< N * C
  StencilWindow window;
};
cudaError_t launch_stencil(const StencilArgs& a, cudaStream_t stream);

}  // namespace switchyard::cuda
