// Launch API of the normalization family's CUDA kernels (layer_norm.cu, normalization.cu):
// LayerNormalization, inference BatchNormalization, Instance/GroupNormalization, LpNormalization
// and MeanVarianceNormalization. Plain C++ so the host side (normalization.cc) includes it without
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

/// LayerNormalization of `rows` contiguous rows of `cols` values: Y = (S - mean(S)) /
/// sqrt(var(S) + epsilon) * scale + bias per row, with S = X, or S = X + Z with a residual.
/// X, Z and Y may have different dtypes (the Casts around a residual stream kept in float32 under
/// --precision fp16/bf16, absorbed), a second output may carry Y in a narrower type, and a third
/// the sum S.
struct LayerNormArgs {
  /// Of scale and bias; also of x, residual and y wherever their own dtype is Undefined (the
  /// single-dtype form every plain LayerNormalization uses).
  DType dtype = DType::Float32;
  DType x_dtype = DType::Undefined;  ///< X's (Undefined: `dtype`)
  const void* x = nullptr;
  DType y_dtype = DType::Undefined;  ///< Y's (Undefined: `dtype`)
  void* y = nullptr;                 ///< null: Y is not written (only y_narrow, say)
  /// Scale (and bias, null when absent) broadcast to X's shape. With `*_per_column` the operand
  /// is the same for every row and element j of a row reads element j of it; otherwise element
  /// (r, j) reads offset(r * cols + j) through `*_view`.
  const void* scale = nullptr;
  bool scale_per_column = true;
  NormDims scale_view;
  const void* bias = nullptr;
  bool bias_per_column = true;
  NormDims bias_view;
  /// A residual Z of X's shape (the fused residual Add, fusion.h), null when absent. S is the sum
  /// as the unfused Casts and Add leave it: X and Z widened, added in float (in double where Y is
  /// float64) and rounded to Y's dtype. Every row length and statistics type takes it.
  const void* residual = nullptr;
  DType residual_dtype = DType::Undefined;  ///< Z's (Undefined: `dtype`)
  /// S itself written out, of X's shape and Y's dtype (fusion::ResidualSum: the pre-norm
  /// running sum the absorbed Add's other readers read), bit for bit the value the rows are
  /// normalized from; null when absent. Needs the residual.
  void* sum = nullptr;
  /// A second output of X's shape, null when absent: the values Y holds, converted to
  /// `y_narrow_dtype` (Float16 or BFloat16) by the saturating cast (launch_cast with saturate,
  /// precision.h's SaturatingCast): finite values beyond the type's range become its largest
  /// finite value with their sign; infinities and NaN stay. For a float32 Y, bit for bit the
  /// Cast the precision rewrite puts after the LayerNormalization.
  void* y_narrow = nullptr;
  DType y_narrow_dtype = DType::Float16;
  int64_t rows = 0;
  int64_t cols = 0;
  float epsilon = 1e-5f;
  /// Accumulate in double (stash_type double); float64 X or Y accumulate in double regardless.
  bool double_stats = false;
  /// Per-row outputs (null when not wanted), float dtype `stats_dtype`.
  DType stats_dtype = DType::Float32;
  void* mean = nullptr;
  void* inv_std_dev = nullptr;
};

/// Enqueues the LayerNormalization `a` describes. cudaErrorInvalidValue for a dtype that is not
/// a float type, a y_narrow_dtype other than Float16/BFloat16, or a sum without a residual.
cudaError_t launch_layer_norm(const LayerNormArgs& a, cudaStream_t stream);

/// Rows up to this long, with float statistics and no float64 operand, are normalized from
/// registers, X and Z read once (one row per block of up to 1024 threads, 16-byte accesses where
/// cols % 8 == 0 and every row operand is 16-byte aligned); longer rows and double statistics
/// read them three times.
constexpr int64_t kLayerNormRowMaxCols = 8192;

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
