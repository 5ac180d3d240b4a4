// Launchers of the reduction family (device code in reduce.cu): Reduce* over any set of axes,
// ArgMax/ArgMin, Softmax/LogSoftmax, TopK and CumSum. Plain C++ for reduce.cc. Launchers that
// take a workspace want at least the bytes the matching *_workspace_bytes returns (0 = none).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

constexpr int kReduceMaxRank = 8;

/// One reduction after neighbouring dims of the same kind were merged. Usually an
/// outer x len x inner view that reduces the middle dim (inner = 1: contiguous rows); when the
/// reduced dims do not form one block (`generic`), output element o reads the input at
/// offset(kept index of o) + offset(reduced index r) for r < num_reduced (dims row-major,
/// strides in elements).
struct ReduceShape {
  bool generic = false;
  int64_t outer = 1, len = 1, inner = 1;
  int kept_rank = 0;
  int64_t kept_dims[kReduceMaxRank] = {};
  int64_t kept_strides[kReduceMaxRank] = {};
  int reduced_rank = 0;
  int64_t reduced_dims[kReduceMaxRank] = {};
  int64_t reduced_strides[kReduceMaxRank] = {};
  int64_t num_out = 1;
  int64_t num_reduced = 1;
};

/// dtype: float32/float16/bfloat16/float64 for every op; int32/int64 for every op but
/// LogSumExp. An empty reduction (num_reduced 0) gives the op's identity (Sum 0, Prod 1,
/// Max -inf or the lowest integer, Mean NaN, LogSum -inf, ...).
size_t reduce_workspace_bytes(ReduceOp op, DType dtype, const ReduceShape& shape);
cudaError_t launch_reduce(ReduceOp op, DType dtype, const void* in, void* out,
                          const ReduceShape& shape, void* workspace, cudaStream_t stream);

/// Index of the first (last when select_last) maximum/minimum along the middle dim of an
/// outer x len x inner view (len >= 1); NaN ranks above every number (ArgMax) / below (ArgMin).
size_t arg_reduce_workspace_bytes(DType dtype, int64_t outer, int64_t len, int64_t inner);
cudaError_t launch_arg_reduce(bool is_max, bool select_last, DType dtype, const void* in,
                              int64_t* out, int64_t outer, int64_t len, int64_t inner,
                              void* workspace, cudaStream_t stream);

constexpr int kSoftmaxMaskRank = 8;

/// An additive mask M broadcast into the rows of a last-axis softmax (the fused Add -> Softmax,
/// backends/fusion/fusion.h): row r (its index over X's leading dims `dims`) adds
/// M[sum_d index_d * strides[d] + j * step] to element j, the sum rounded to the dtype as the
/// unfused Add leaves it. M has X's dtype; strides are 0 along broadcast dims, step is 1, or 0
/// when M's last dim is 1.
struct SoftmaxMask {
  const void* data = nullptr;  ///< null: no mask
  int rank = 0;
  int64_t dims[kSoftmaxMaskRank] = {};
  int64_t strides[kSoftmaxMaskRank] = {};
  int64_t step = 0;
};

/// Softmax (or LogSoftmax) along the middle dim of an outer x len x inner view, max-subtracted,
/// in float32 (float64 for float64). A mask (`mask.data` set) needs inner == 1.
cudaError_t launch_softmax(bool log, DType dtype, const void* in, void* out, int64_t outer,
                           int64_t len, int64_t inner, cudaStream_t stream,
                           const SoftmaxMask& mask = {});

/// The k largest (smallest) elements along the middle dim of an outer x len x inner view, in
/// order, ties (and NaNs, which rank above every number) lower index first; values and int64
/// indices are outer x k x inner. len must be below 2^31 (topk_workspace_bytes returns 0 and
/// launch_topk fails otherwise, unless the slices are small enough to need no workspace).
size_t topk_workspace_bytes(DType dtype, int64_t outer, int64_t len, int64_t inner, int64_t k);
cudaError_t launch_topk(bool largest, DType dtype, const void* in, void* values, int64_t* indices,
                        int64_t outer, int64_t len, int64_t inner, int64_t k, void* workspace,
                        size_t workspace_bytes, cudaStream_t stream);

/// Running sums along the middle dim of an outer x len x inner view (exclusive: without the
/// element itself; reverse: from the end). Accumulates in float32 (float64, 64-bit integers with
/// wrap-around).
cudaError_t launch_cumsum(bool exclusive, bool reverse, DType dtype, const void* in, void* out,
                          int64_t outer, int64_t len, int64_t inner, cudaStream_t stream);

}  // namespace switchyard::cuda
