// Launch API of the pool family's CUDA kernels (pool.cu): windowed Max/Average/Lp pooling with
// one thread per output element, and the global pools as one reduction per (n, c) plane; both
// also for channels-last data (the fusion::ChannelsLast nodes of layout.h). Plain
// C++ so the host side (pool.cc) includes it without nvcc. Launchers enqueue on `stream`, never
// synchronise, and return cudaGetLastError(). Dtypes: float32, float16, bfloat16, float64 (max
// pooling also int8, uint8); sums accumulate in float (double for float64).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

enum class PoolMode : int { Max, Average, Lp };

constexpr int kPoolMaxSpatial = 6;

/// The window geometry of one call, per spatial dim (row-major, the last dim fastest). A tap at
/// input position i = out * stride - pad_begin + k * dilation is real data when 0 <= i < in,
/// explicit padding (counted by count_include_pad) when i < 0 or in <= i < in + explicit_end,
/// and outside (a ceil_mode extension, never counted) beyond that.
struct PoolWindow {
  int spatial = 0;
  int64_t in[kPoolMaxSpatial] = {};
  int64_t out[kPoolMaxSpatial] = {};
  int64_t kernel[kPoolMaxSpatial] = {};
  int64_t strides[kPoolMaxSpatial] = {};
  int64_t dilations[kPoolMaxSpatial] = {};
  int64_t pad_begin[kPoolMaxSpatial] = {};
  int64_t explicit_end[kPoolMaxSpatial] = {};
  int64_t in_size = 1;   ///< product of in
  int64_t out_size = 1;  ///< product of out
  int64_t ksize = 1;     ///< product of kernel
};

struct PoolArgs {
  PoolMode mode = PoolMode::Max;
  DType dtype = DType::Float32;
  const void* x = nullptr;  ///< [planes, in...], or channels-last [N, in..., channels]
  void* y = nullptr;        ///< [planes, out...], or channels-last [N, out..., channels]
  /// Max only, may be null: flat index of each maximum, plane * in_size + its spatial offset
  /// (row-major, or column-major with `column_major_indices`); 0 for a window without data.
  int64_t* indices = nullptr;
  bool column_major_indices = false;
  bool count_include_pad = false;  ///< Average
  int64_t p = 2;                   ///< Lp
  int64_t planes = 0;              ///< N * channels
  int64_t channels = 1;            ///< C: the planes of one image (channels-last layout only)
  bool channels_last = false;      ///< x and y stored [N, spatial..., C]; no indices
  PoolWindow window;
};
cudaError_t launch_pool(const PoolArgs& a, cudaStream_t stream);

/// GlobalMaxPool / GlobalAveragePool / GlobalLpPool: y[plane] = reduction of the plane_size
/// contiguous values of x's plane; channels-last, y[n, c] = reduction of x[n, :, c].
struct GlobalPoolArgs {
  PoolMode mode = PoolMode::Max;
  DType dtype = DType::Float32;
  const void* x = nullptr;
  void* y = nullptr;
  int64_t p = 2;       ///< Lp
  int64_t planes = 0;  ///< N * channels
  int64_t plane_size = 0;
  int64_t channels = 1;        ///< channels-last layout only
  bool channels_last = false;  ///< x stored [N, spatial..., C]
};
cudaError_t launch_global_pool(const GlobalPoolArgs& a, cudaStream_t stream);

}  // namespace switchyard::cuda
