// Launch API of the normalization family's CUDA kernels (normalization.cu): LayerNormalization,
// inference BatchNormalization, Instance/GroupNormalization, LpNormalization and
// MeanVarianceNormalization. Plain C++ so the host side (normalization.cc) includes it without
// nvcc. Every launcher enqueues on `stream`, never synchronises, and returns cudaGetLastError().
// Data dtypes: float32, float16, bfloat16, float64; statistics accumulate in float (double for
// float64 data, and for LayerNormalization with stash_type double).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

constexpr int kNormMaxRank = 8;

/// Dims and element strides of up to kNormMaxRank dims, passed by value. As a broadcast view,
/// `dims` are the output's and `strides` the operand's (0 along broadcast dims).
struct NormDims {
  int rank = 0;
  int64_t dims[kNormMaxRank] = {};
  int64_t strides[kNormMaxRank] = {};
};

/// LayerNormalization of `rows` contiguous rows of `cols` values.
struct LayerNormArgs {
  DType dtype = DType::Float32;  ///< of x, y, scale and bias
  const void* x = nullptr;
  void* y = nullptr;
  /// Scale (and bias, null when absent) broadcast to X's shape. With `*_per_column` the operand
  /// is the same for every row and element j of a row reads element j of it; otherwise element
  /// (r, j) reads offset(r * cols + j) through `*_view`.
  const void* scale = nullptr;
  bool scale_per_column = true;
  NormDims scale_view;
  const void* bias = nullptr;
  bool bias_per_column = true;
  NormDims bias_view;
  /// A residual Z of X's shape and dtype (the fused residual Add, fusion.h), null when absent:
  /// Y = LN(X + Z) with the sum rounded to the dtype as the Add would leave it. Only where
  /// layer_norm_takes_residual(); the caller sums first elsewhere.
  const void* residual = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  float epsilon = 1e-5f;
  bool double_stats = false;  ///< accumulate in double (float64 data or stash_type double)
  /// Per-row outputs (null when not wanted), float dtype `stats_dtype`.
  DType stats_dtype = DType::Float32;
  void* mean = nullptr;
  void* inv_std_dev = nullptr;
};
cudaError_t launch_layer_norm(const LayerNormArgs& a, cudaStream_t stream);

/// Rows up to this long (with float statistics) are normalized by one warp each from registers,
/// reading X and a residual once.
constexpr int64_t kLayerNormRegisterCols = 1024;

/// ... when there are at least this many rows: a warp per row leaves most of the GPU idle below
/// (measured on the H200 with ncu: bert_base b1's 128 rows of 768 took 41 us a LayerNorm, eight
/// warps on each of 16 SMs); fewer rows go to the block-per-row kernel.
constexpr int64_t kLayerNormWarpMinRows = 1024;

/// Whether launch_layer_norm adds LayerNormArgs::residual itself for `rows` rows of `cols`
/// values.
inline bool layer_norm_takes_residual(int64_t rows, int64_t cols, bool double_stats) {
  return !double_stats && cols > 0 && cols <= kLayerNormRegisterCols &&
         rows >= kLayerNormWarpMinRows;
}

/// A per-channel parameter of BatchNormalization: any float dtype.
struct ChannelParam {
  const void* data = nullptr;
  DType dtype = DType::Float32;
};

/// Inference BatchNormalization: y = (x - mean) / sqrt(var + epsilon) * scale + bias per channel
/// (dim 1) of an [n, channels, spatial] tensor.
struct BatchNormArgs {
  DType dtype = DType::Float32;
  const void* x = nullptr;
  void* y = nullptr;
  ChannelParam scale, bias, mean, var;
  int64_t n = 0;
  int64_t channels = 0;
  int64_t spatial = 0;
  float epsilon = 1e-5f;
  /// batch_norm_scratch_bytes() of device scratch (the folded per-channel multiplier and offset).
  void* scratch = nullptr;
};
size_t batch_norm_scratch_bytes(DType dtype, int64_t channels);
cudaError_t launch_batch_norm(const BatchNormArgs& a, cudaStream_t stream);

/// Normalizes `blocks` contiguous blocks of `block_size` values, each with its own mean and
/// variance; element j of block g then gets scale[ch] and bias[ch] (dtype of x), ch =
/// (g * channels_per_block) % channels + j / spatial. InstanceNormalization: blocks = N * C,
/// block_size = spatial, channels_per_block = 1. GroupNormalization: blocks = N * groups,
/// channels_per_block = C / groups.
struct GroupNormArgs {
  DType dtype = DType::Float32;
  const void* x = nullptr;
  void* y = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;
  int64_t blocks = 0;
  int64_t block_size = 0;
  int64_t spatial = 0;
  int64_t channels = 0;
  int64_t channels_per_block = 0;
  float epsilon = 1e-5f;
};
cudaError_t launch_group_norm(const GroupNormArgs& a, cudaStream_t stream);

/// LpNormalization (p 1 or 2) along the middle dim of an [outer, len, inner] view; an all-zero
/// slice stays zero.
cudaError_t launch_lp_norm(DType dtype, const void* x, void* y, int64_t outer, int64_t len,
                           int64_t inner, int p, cudaStream_t stream);

/// MeanVarianceNormalization: for each of `kept_count` positions over the kept dims (`kept`,
/// strides into x), (x - E[x]) / (sqrt(Var[x]) + 1e-9) over the `count` elements of the reduced
/// dims (`reduced`). x and y share one contiguous layout.
struct MvnArgs {
  DType dtype = DType::Float32;
  const void* x = nullptr;
  void* y = nullptr;
  NormDims kept;
  NormDims reduced;
  int64_t kept_count = 0;
  int64_t count = 0;
};
cudaError_t launch_mean_variance_norm(const MvnArgs& a, cudaStream_t stream);

}  // namespace switchyard::cuda
