// Launch API of the fused attention kernel (attention.cu), called from attention.cc: softmax(
// alpha * Q Kᵀ (+ mask)) V per (batch, head), float16 or bfloat16 storage, float32 accumulation,
// the scores never written to memory. Plain C++ (g++ and nvcc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

/// How the scores are masked before the softmax.
enum class AttentionMask : int32_t {
  None = 0,
  Add = 1,        ///< score + M (M of the storage dtype), rounded to it as the unfused Add
  WhereTrue = 2,  ///< `fill` where cond (bool) is true
  WhereFalse = 3  ///< `fill` where cond is false
};

/// One attention: every operand addressed as [batch, heads, sequence, dim] through element
/// strides (0 along a broadcast dim), its last dim contiguous. The result is [batch, heads,
/// q_len, v_dim] through `out_stride` (its last dim contiguous too).
struct AttentionArgs {
  DType dtype = DType::Float16;  ///< of q, k, v, out and an additive mask
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_dim = 0, v_dim = 0;
  int64_t q_stride[3] = {};  ///< batch, head, position
  int64_t k_stride[3] = {};
  int64_t v_stride[3] = {};
  int64_t out_stride[3] = {};
  float alpha = 1;
  AttentionMask mask_kind = AttentionMask::None;
  const void* mask = nullptr;
  int64_t mask_stride[4] = {};  ///< batch, head, query, key
  float fill = 0;
  /// Warps per CTA of the tensor-core kernel, 16 query rows each: 0 chooses them
  /// (attention_warps_per_cta); 1, 2 or 4 force them (tests, benchmarks); any other value makes
  /// launch_attention return cudaErrorInvalidValue.
  int32_t warps_per_cta = 0;
};

/// Head dims up to this run on the tensor cores (mma.sync tiles of 16 query rows per warp x 64
/// keys, on sm_80 and later); larger ones, and older GPUs, on a per-row kernel.
constexpr int64_t kAttentionTensorCoreMaxDim = 128;

/// The warps per CTA the tensor-core kernel runs `a` with on a GPU of `sm_count`
/// multiprocessors: a.warps_per_cta when set, else the most of 4, 2 and 1 that still give about
/// two CTAs per multiprocessor (one when even single-warp CTAs fall short). Host only; makes no
/// CUDA call.
int attention_warps_per_cta(const AttentionArgs& a, int sm_count);

/// Enqueues the attention on `stream`; kv_len must be > 0 (an empty softmax has no result to
/// normalize: the caller writes zeros). Returns cudaErrorInvalidValue for kv_len <= 0, a dtype
/// other than float16 and bfloat16 or a warps_per_cta other than 0, 1, 2 and 4 (nothing
/// enqueued), a failed device query's error, else cudaGetLastError() after the launch.
cudaError_t launch_attention(const AttentionArgs& a, cudaStream_t stream);

}  // namespace switchyard::cuda
