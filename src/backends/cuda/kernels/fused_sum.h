// The broadcast sum behind the fused forms of LayerNormalization (input 3, a residual) and
// Softmax (input 1, an additive mask) (backends/fusion/fusion.h): where the kernel cannot add
// the extra input row by row itself, the sum X + Z is made first, in scratch memory, exactly as
// the unfused Add would have made it (numpy broadcasting, X's dtype), and the op runs on it.
// Host code (normalization.cc, reduce.cc).
#pragma once

#include <memory>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/kernels/elementwise_impl.h"
#include "ir/checked_math.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

/// Sums `x` and the fused input `z` (named `what` in errors) with numpy broadcasting into a
/// tensor in scratch memory of the run's pool; fails naming the node when the dtypes differ or
/// the shapes do not broadcast.
inline ir::Tensor broadcast_sum(const runtime::KernelContext& ctx, const ir::Tensor& x,
                                const ir::Tensor& z, const char* what) {
  if (z.dtype() != x.dtype())
    ctx.fail("the fused {} is {}, X is {}", what, ir::dtype_name(z.dtype()),
             ir::dtype_name(x.dtype()));
  auto shape = ops::broadcast_dims({x.shape(), z.shape()});
  if (!shape)
    ctx.fail("the fused {} has shape {}, which does not broadcast with X {}", what,
             ir::shape_to_string(z.shape()), ir::shape_to_string(x.shape()));
  const std::vector<int64_t>& out = *shape;
  const int64_t numel = ir::checked_numel(out);
  std::shared_ptr<void> data =
      ctx.scratch(static_cast<size_t>(numel) * ir::dtype_size(x.dtype()) + 1);
  ir::Tensor sum = ir::Tensor::wrap(x.dtype(), out, data, data.get());
  if (numel == 0) return sum;
  if (out.size() > static_cast<size_t>(kEwMaxRank))
    ctx.fail("the fused {} broadcasts to rank {}; the CUDA kernels handle at most {}", what,
             out.size(), kEwMaxRank);
  // Every dim of the output with each operand's row-major stride (0 where it broadcasts).
  EwIndexing ix;
  ix.numel = numel;
  ix.rank = static_cast<int32_t>(out.size());
  const std::vector<int64_t>* operands[2] = {&x.shape(), &z.shape()};
  for (int k = 0; k < 2; ++k) {
    const std::vector<int64_t>& s = *operands[k];
    const size_t off = out.size() - s.size();
    int64_t stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      ix.dims[d] = out[d];
      const bool present = d >= off && s[d - off] != 1;
      ix.strides[k][d] = present ? stride : 0;
      if (d >= off) stride *= s[d - off];
    }
  }
  SY_CUDA_CHECK(
      launch_binary(EwOp::Add, x.dtype(), x.raw(), z.raw(), sum.raw(), ix, stream_of(ctx)));
  return sum;
}

}  // namespace switchyard::cuda
