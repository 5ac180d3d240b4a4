// Launch API of the conv family's own device code (conv.cu): the layout moves around cuDNN
// (NCHW <-> NHWC, weights KCRS -> KRSC, explicitly padded inputs) and the epilogue (bias,
// residual, activation) used when cuDNN runs the plain convolution. Plain C++ header: g++ and
// nvcc both include it. Every launcher enqueues on `stream` and returns cudaGetLastError().
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

/// Activation applied last by the epilogue (the node's fusion::Epilogue); Clip bounds the value
/// to [clip_lo, clip_hi] (ReLU6 is Clip(0, 6)).
enum class ConvActivation { None, Relu, Sigmoid, Tanh, Clip };

/// Batched matrix transpose: `src` holds `batch` row-major [rows, cols] matrices, `dst` gets
/// them as [cols, rows]. NCHW -> NHWC is (batch N, rows C, cols H*W); weights KCRS -> KRSC are
/// (batch K, rows C/group, cols R*S). Float32, Float16 and BFloat16 (moved as raw bits).
cudaError_t launch_batched_transpose(DType dtype, const void* src, void* dst, int64_t batch,
                                     int64_t rows, int64_t cols, cudaStream_t stream);

/// Copies x [N, C, in...] (at most 3 spatial dims; stored NCHW, or NHWC with `x_nhwc`) into a
/// zero-padded buffer of spatial size `padded` with `pad_begin` zeros in front of each dim, laid
/// out NCHW or (nhwc) NHWC. Spatial arrays have `spatial` entries.
cudaError_t launch_pad_input(DType dtype, const void* x, bool x_nhwc, void* dst, int64_t batch,
                             int64_t channels, int spatial, const int64_t* in,
                             const int64_t* padded, const int64_t* pad_begin, bool nhwc,
                             cudaStream_t stream);

/// What the epilogue adds to a convolution result of `channels` channels and `spatial_size`
/// elements per channel: y = act(conv + bias[c] + residual), each term optional (nullptr).
/// `residual` has y's layout.
struct ConvEpilogue {
  const void* bias = nullptr;
  const void* residual = nullptr;
  ConvActivation activation = ConvActivation::None;
  float clip_lo = 0, clip_hi = 0;  ///< Clip's bounds (activation Clip only)
};

/// Applies the epilogue in place on y [N, C, spatial] (NCHW) or, with `nhwc`, [N, spatial, C].
cudaError_t launch_conv_epilogue_in_place(DType dtype, void* y, int64_t batch, int64_t channels,
                                          int64_t spatial_size, bool nhwc,
                                          const ConvEpilogue& epilogue, cudaStream_t stream);

/// Writes y [N, C, spatial] (NCHW) from the NHWC convolution result `conv` [N, spatial, C],
/// applying the epilogue on the way (a plain transpose when the epilogue is empty).
cudaError_t launch_conv_epilogue_from_nhwc(DType dtype, const void* conv, void* y, int64_t batch,
                                           int64_t channels, int64_t spatial_size,
                                           const ConvEpilogue& epilogue, cudaStream_t stream);

}  // namespace switchyard::cuda
