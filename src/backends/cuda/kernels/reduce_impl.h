// Launchers for the reduction family (reduce.cu): Reduce* over any set of axes, ArgMax/ArgMin,
// Softmax/LogSoftmax. Plain C++ for reduce.cc.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

constexpr int kReduceMaxRank = 8;

/// Output element o reads the input at offset(kept index of o) + offset(reduced index r) for
/// r < num_reduced; dims row-major, strides in elements.
struct ReduceShape {
  int kept_rank = 0;
  int64_t kept_dims[kReduceMaxRank] = {};
  int64_t kept_strides[kReduceMaxRank] = {};
  int reduced_rank = 0;
  int64_t reduced_dims[kReduceMaxRank] = {};
  int64_t reduced_strides[kReduceMaxRank] = {};
  int64_t num_out = 1;
  int64_t num_reduced = 1;
};

/// dtype: float32/float16/bfloat16/float64 for every op; int32/int64 for Sum, Mean, Max, Min,
/// Prod, L1, SumSquare.
cudaError_t launch_reduce(ReduceOp op, DType dtype, const void* in, void* out,
                          const ReduceShape& shape, cudaStream_t stream);

/// Index of the first (last when select_last) maximum/minimum along the middle axis of an
/// outer x len x inner view; NaN ranks above every number (ArgMax) / below (ArgMin).
cudaError_t launch_arg_reduce(bool is_max, bool select_last, DType dtype, const void* in,
                              int64_t* out, int64_t outer, int64_t len, int64_t inner,
                              cudaStream_t stream);

/// Softmax (or LogSoftmax) along the middle axis of an outer x len x inner view, in float32
/// (float64 for float64).
cudaError_t launch_softmax(bool log, DType dtype, const void* in, void* out, int64_t outer,
                           int64_t len, int64_t inner, cudaStream_t stream);

}  // namespace switchyard::cuda
