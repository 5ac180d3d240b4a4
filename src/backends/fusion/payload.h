// The payloads the shared fusions (fusion.h) attach to the nodes they rewrite, as typed node
// annotations (ir/annotation.h) that only the backends' kernels read: a fused node keeps its op
// type, and the kernel registered for that op reads `node.annotation<fusion::Epilogue>()` and
// the like in its constructor (nullptr: the plain op). Each struct below says what the kernel
// must compute with it. Inputs a fusion adds stay inputs (fusion.h lists them).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/annotation.h"

namespace switchyard::ir {
class Node;
}  // namespace switchyard::ir

namespace switchyard::backends::fusion {

/// An activation a fused node applies to its result, last (after scale, bias and residual).
/// Gelu is the exact (erf) form, GeluTanh the tanh approximation; Swish is x * sigmoid(x);
/// Clip bounds the value to Epilogue's [clip_min, clip_max].
enum class Activation { None, Relu, Gelu, GeluTanh, Sigmoid, Tanh, Clip, HardSwish, Swish };

/// The enumerator's name: "Relu", "GeluTanh", ... ("None" for None).
const char* activation_name(Activation activation);

/// The fused epilogue of a Conv, MatMul, Gemm or inference BatchNormalization
/// (fuse_conv_epilogues, fuse_matmul_epilogues, fuse_norm_activation). The kernel computes:
///   Conv:   Y = act(conv(X, W) + B + Z), Z the optional residual input 3 (Y's shape); the
///           activation is Relu, Sigmoid, Tanh or Clip, and HardSwish or Swish where the backend
///           asked for them (fuse_conv_epilogues' list).
///   MatMul: Y = act(alpha * (A @ B) + bias), bias the optional input 2 (1-D, length N);
///           Relu, Gelu, or GeluTanh where the backend asked (fuse_matmul_epilogues' tanh_gelu).
///   Gemm:   Y = act(Gemm(A, B, C)): Relu, Gelu or GeluTanh (C already is its bias; alpha 1).
///   BatchNormalization (inference): Y = Relu(BN(X)), in the same pass; Relu only.
/// A kernel that is handed an activation it does not implement refuses the node (supports) or
/// throws naming it; it never drops the epilogue.
struct Epilogue final : ir::NodeAnnotation {
  Activation activation = Activation::None;
  float clip_min = -INFINITY;  ///< Clip's lower bound (activation Clip only)
  float clip_max = INFINITY;   ///< Clip's upper bound (activation Clip only)
  float alpha = 1;             ///< MatMul only: the product's scale (a folded Div or Mul)

  /// "activation=Relu", "activation=Clip clip=[0, 6]", "alpha=0.125 activation=Gelu", ...
  std::string describe() const override;
};

/// Transposes folded into a MatMul's operands (fold_transposes_into_matmul): the kernel reads
/// operand A (B) as input 0 (1) permuted by `a` (`b`) — dim i of the operand is dim a[i] of the
/// input — through the permuted strides or a transposed copy, exactly as the Transpose would have
/// given it. An empty permutation: that operand is read as it is. Combines with Epilogue.
struct OperandPermutes final : ir::NodeAnnotation {
  std::vector<int64_t> a, b;

  /// "perm_a=[0, 2, 1, 3]", "perm_a=[...] perm_b=[...]".
  std::string describe() const override;
};

/// Scaled dot-product attention as one MatMul node (fuse_attention, fusion/attention.cc), with
/// inputs Q, K, V and the mask (input 3; absent when `mask` is None, null when `views` are set
/// and there is no mask), and with `views` the Reshape targets of the operands read as views
/// (inputs 4, 5, 6, read on the host; null for an operand that is no view). The kernel reads Q,
/// K and V (each its input, or its view of it) through their permutations as [batch, heads,
/// sequence, head dim], computes
///   out = softmax(masked(alpha * Q @ Kᵀ)) @ V      (softmax over the keys)
/// where masked adds M (Mask::Add), or replaces the score by `mask_fill` where the bool mask is
/// true (WhereTrue) or false (WhereFalse); batch and head dims broadcast as MatMul's, the mask
/// broadcasts into the scores [batch, heads, query, key]. The result is the canonical
/// [batch, heads, query, head dim], permuted by `perm_out` when there is one.
struct Attention final : ir::NodeAnnotation {
  enum class Mask { None, Add, WhereTrue, WhereFalse };

  /// How each input's dims give the canonical [batch, heads, sequence, head dim] operand: dim i
  /// of it is dim perm[i] of the input (4 entries, the head dim last).
  std::vector<int64_t> perm_q, perm_k, perm_v;
  /// The head merge: out's dim i is the canonical result's dim perm_out[i] (the head dim kept
  /// last); empty: the result is the canonical one.
  std::vector<int64_t> perm_out;
  float alpha = 1;  ///< the scale of the scores
  Mask mask = Mask::None;
  float mask_fill = 0;  ///< the score where a Where mask selects the fill (WhereTrue / WhereFalse)

  /// An operand read as a view of a packed product (fold_packed_attention_operands: GPT's fused
  /// QKV product split on its last axis, or sibling products packed by pack_sibling_matmuls).
  /// The operand's input P is [batch, sequence, W]; the operand, before its permutation, is
  /// columns [offset, offset + width) of P's last axis reshaped by its Reshape's target (input
  /// 4, 5 or 6), resolved as that Reshape resolves it against [batch, sequence, width]. Where the
  /// target is [batch, sequence, heads, width / heads] (the head split) the kernel reads P in
  /// place: P's data + offset, strides [sequence * W, W, width / heads, 1]; any other target it
  /// resolves the same way over a dense copy of the columns, as the unfused nodes would.
  struct View {
    int64_t offset = 0;
    int64_t width = 0;       ///< 0: the operand is no view (its input is the operand itself)
    bool allowzero = false;  ///< the Reshape's allowzero
    std::string reshape;     ///< the absorbed Reshape's name, for messages
  };
  /// Empty: Q, K and V are inputs 0, 1 and 2 as they are. Else one entry each (Q, K, V).
  std::vector<View> views;

  /// A Where mask read through Slices that joined the attention (AttentionRules::mask_views:
  /// GPT's causal mask, cut out of a [1, 1, max, max] constant for each sequence length): input
  /// 3 is the first Slice's data, and Slice i reads its starts, ends, axes and steps (the last
  /// two possibly absent) at inputs 7 + 4 i to 10 + 4 i, on the host. The kernel resolves them
  /// as the Slices would have, in order, into a strided view of input 3.
  struct MaskSlice {
    std::string slice;  ///< the absorbed Slice's name, for messages
  };
  std::vector<MaskSlice> mask_slices;

  /// "perm_q=[...] perm_k=[...] perm_v=[...] perm_out=[...] alpha=0.125 mask=add", then
  /// " views q=[0, 512) k=[512, 1024) v=[1024, 1536)" for the operands read as views, and
  /// " mask_slices=2" for a mask read through Slices.
  std::string describe() const override;
};

/// "add", "where_true", "where_false" ("none" for None).
const char* mask_name(Attention::Mask mask);

/// Channels-last storage (apply_channels_last, fusion/channels_last.cc): the node's 4-D
/// activations are stored [N, H, W, C] instead of ONNX's [N, C, H, W] — a Conv's X, Z and Y, a
/// pool's and an inference BatchNormalization's X and Y, a Pad's or Resize's data (their pads and
/// scales already permuted), a Concat's inputs and output (its axis already remapped), a
/// layout-free elementwise node's 4-D operands. Kernels whose op reads a layout (Conv, the pools,
/// BatchNormalization) must honour it; the others see ordinary tensors.
struct ChannelsLast final : ir::NodeAnnotation {
  /// "layout=NHWC".
  std::string describe() const override;
};

/// An inference BatchNormalization (and the Relu fused into it) over a Concat's result, done
/// in the Concat's pass (fuse_concat_norm, fusion/norm_epilogue.cc): the node stays a Concat,
/// and channel c along its axis of the concatenated result is written as
///   Y = act(X * scale[c] + shift[c]),   act = Relu (NaN kept) when `relu`, else none,
/// with scale = gamma / sqrt(var + epsilon) and shift = beta - mean * scale in float, as the
/// BatchNormalization kernel computes them. DenseNet's Concat -> BN -> ReLU -> Conv: the
/// concatenation and the normalization are one pass over the activations instead of two.
struct ConcatAffine final : ir::NodeAnnotation {
  std::vector<float> scale, shift;  ///< one per channel of the result along the Concat's axis
  bool relu = false;

  /// "affine channels=256 relu".
  std::string describe() const override;
};

/// A residual Add -> LayerNormalization whose sum has other readers too (fuse_residual_layernorm's
/// pre-norm form, fusion/norm_epilogue.cc: GPT's running sum, read by the norm and by the next
/// residual Add): the node is a LayerNormalization with the residual Z as input 3, Y = LN(X + Z),
/// and it also writes the sum S = X + Z (inputs 0 and 3, both of X's shape) as output `output`,
/// which every other reader of the absorbed Add's result now reads. The sum sits after ONNX's
/// outputs so that Y, Mean and InvStdDev keep their indices: outputs 1 and 2 are unread
/// placeholders that kernels leave unwritten (the fusion fires only where Mean and InvStdDev are
/// unused), except where another payload gives output 1 a meaning (cuda's NarrowCopy). S has X's
/// shape and Y's dtype and is bit for bit what the unfused Add left in that dtype: X and Z
/// widened, added in float (in double for float64), rounded once; the kernel normalizes that same
/// S. A residual of another shape than X's is an error in this form.
struct ResidualSum final : ir::NodeAnnotation {
  size_t output = 3;  ///< the output holding S

  /// "residual sum in output 3".
  std::string describe() const override;
};

/// The output a LayerNormalization writes its ResidualSum to, -1 without one; throws Internal
/// naming the node when that is no output past InvStdDev, or the node has no input 3.
int residual_sum_output(const ir::Node& node);

}  // namespace switchyard::backends::fusion
