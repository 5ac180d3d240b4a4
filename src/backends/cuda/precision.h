// --precision fp16 / bf16 on a CUDA partition's private graph: float32 values are retyped to
// the narrower type, with casts where values enter and leave the partition; float32 constants
// are converted once, finite values clamped to the type's finite range (an additive mask of
// float32-min must stay a large negative number, not become -inf and then NaN). Two kinds of
// node keep float32, with casts only where a value crosses between the precisions: a node whose
// kernel lacks the narrow type, and the residual stream of a transformer (LayerNormalization and
// the Adds that feed it, so the sum carried from layer to layer is not rounded at every layer).
// Reductions, Softmax and LayerNorm accumulate in float32 inside their kernels.
#pragma once

#include <map>
#include <string>

#include "ir/graph.h"
#include "runtime/kernel.h"

namespace switchyard::cuda {

/// Retypes `graph` to `target` (Float16 or BFloat16). Returns each node's precision ("fp16",
/// "bf16" or "fp32" for a node kept in float32); nodes without float values are absent. Needs
/// no device: `kernels` says which dtypes each op takes.
std::map<const ir::Node*, std::string> apply_precision(ir::Graph& graph, ir::DType target,
                                                       const runtime::KernelRegistry& kernels);

/// The annotation on the Casts the rewrite inserts into the narrow type: the Cast kernel
/// (kernels/elementwise.cc) turns finite values beyond the target's range into its largest
/// finite value, with their sign, as convert_float_tensor does for constants (ONNX's own Cast to
/// float16 overflows to infinity, and keeps doing so); infinities and NaN stay.
struct SaturatingCast final : ir::NodeAnnotation {
  /// "saturate".
  std::string describe() const override;
};

/// float32 → target with finite values clamped to the target's finite range.
ir::Tensor convert_float_tensor(const ir::Tensor& t, ir::DType target);

/// A LayerNormalization that also writes its result narrowed (absorb_layer_norm_casts): output
/// 1 is not Mean but Y converted to output 1's dtype (float16 or bfloat16) by the saturating
/// cast (SaturatingCast), bit for bit what that Cast would have written. The node has no other
/// outputs but a fusion::ResidualSum's sum (output 3; output 2 then an unread placeholder).
struct NarrowCopy final : ir::NodeAnnotation {
  /// "narrow copy in output 1".
  std::string describe() const override;
};

/// After apply_precision, which keeps a transformer's residual stream in
/// float32 with Casts where values cross: a LayerNormalization whose X or residual Z (input 3)
/// is a widening Cast from float16/bfloat16 read by it alone reads the narrow value itself, and
/// one whose Y feeds a saturating Cast to float16/bfloat16 writes that copy as output 1 (a
/// NarrowCopy). The Casts go: BERT's four passes around each norm become one. Only
/// LayerNormalizations with Y alone as output, or Y and the residual sum of the pre-norm form
/// (backends::fusion::ResidualSum, which keeps its output: the sum stays float32, as the Add
/// kept in the residual stream was). Returns the number of Casts absorbed.
size_t absorb_layer_norm_casts(ir::Graph& graph);

/// A MatMul or Gemm that writes its float16/bfloat16 product as float32 (absorb_product_casts):
/// the kernel (kernels/matmul.cc) reads the 16-bit operands as before and stores the result,
/// bias and activation included, as float32 without rounding it to 16 bits first. A fused bias
/// or Gemm's C may be of the operands' type or float32. Output 0 is float32.
struct WideProduct final : ir::NodeAnnotation {
  /// "float32 result".
  std::string describe() const override;
};

/// After apply_precision and absorb_layer_norm_casts (which takes a norm's Casts first, so the
/// norm reads 16 bits): a MatMul or Gemm (a fused epilogue and folded transposes included, no
/// fused attention) of float16/bfloat16 operands whose one reader is a plain widening Cast to
/// float32 (GPT's logits leaving the partition, a residual Add kept float32) writes float32
/// itself (a WideProduct) and the Cast goes; the product's output becomes the Cast's value (its
/// name, readers and graph-output place kept). A constant bias or C of the operands' type is
/// replaced by its exact float32 widening. Not when the product's value has other readers or is
/// a graph output, nor for products of float32 operands. Returns the number of Casts absorbed.
/// Implemented in product_casts.cc.
size_t absorb_product_casts(ir::Graph& graph);

}  // namespace switchyard::cuda
