// Fusion on a partition's private graph (after placement, inside a backend's compile): rewrites
// shared by every backend whose kernels run the fused forms (cpu and cuda). A fused node keeps
// its op type and gains internal attributes and inputs that only the backends' kernels read:
//
//   attribute "_sy_activation" (string): "Relu", "Gelu" (erf form), "GeluTanh" (tanh form;
//       MatMul and Gemm, where the backend asks for it), "Sigmoid", "Tanh", "Clip"
//       (Conv only, bounds in "_sy_clip_min" / "_sy_clip_max"), "HardSwish" and "Swish" (x *
//       sigmoid(x); Conv only, where the backend asks for them) — applied to the node's result
//       after bias/residual.
//   Conv: optional input 3 = residual Z (same shape as Y): Y = act(conv(X, W) + B + Z).
//   MatMul: optional input 2 = bias (1-D, length N), attribute "_sy_alpha" (float, default 1):
//       Y = act(alpha * (A @ B) + bias); "_sy_perm_a" / "_sy_perm_b" (ints): the operand is the
//       input read through that permutation of its dims (a folded Transpose).
//   Gemm: "_sy_activation" only (C already is its bias).
//   BatchNormalization (inference): "_sy_activation" "Relu" only.
//   LayerNormalization: optional input 3 = residual Z (X's shape): Y = LN(X + Z).
//   Softmax (last axis): optional input 1 = additive mask M, broadcast into X: softmax(X + M).
//   MatMul with "_sy_attention" = 1: scaled dot-product attention (fuse_attention; its inputs
//       and attributes are described in fusion/attention.cc).
//
// Placement decided where each node of the user's graph runs; fusion happens later, inside one
// partition, so pins and strict failures always name the user's nodes. Each pass returns the
// groups it made (the fused node's name, then every member's) so the placement report can say
// which nodes run as one kernel.
//
// Each pass rewires the absorbed nodes' consumers to the fused node's output and removes the
// absorbed nodes; it fuses only when the absorbed nodes have no other reader and their outputs
// are not partition outputs (graph outputs of the private graph).
#pragma once

#include <string>
#include <vector>

#include "backends/backend.h"
#include "ir/graph.h"

namespace switchyard::backends {

inline constexpr const char* kFusedActivationAttr = "_sy_activation";
inline constexpr const char* kFusedClipMinAttr = "_sy_clip_min";
inline constexpr const char* kFusedClipMaxAttr = "_sy_clip_max";
inline constexpr const char* kFusedAlphaAttr = "_sy_alpha";
inline constexpr const char* kFusedPermAAttr = "_sy_perm_a";
inline constexpr const char* kFusedPermBAttr = "_sy_perm_b";
inline constexpr const char* kFusedAttentionAttr = "_sy_attention";
inline constexpr const char* kFusedPermQAttr = "_sy_perm_q";
inline constexpr const char* kFusedPermKAttr = "_sy_perm_k";
inline constexpr const char* kFusedPermVAttr = "_sy_perm_v";
inline constexpr const char* kFusedPermOutAttr = "_sy_perm_out";
inline constexpr const char* kFusedMaskAttr = "_sy_mask";
inline constexpr const char* kFusedMaskFillAttr = "_sy_mask_fill";

/// Conv → Add(bias) / Add(residual) → an activation of `activations` (fusion/conv_epilogue.cc):
/// "Relu", "Sigmoid", "Tanh", "Clip" (the default: what every backend's Conv kernel applies),
/// "HardSwish", "Swish" (SiLU written as Mul(x, Sigmoid(x))).
std::vector<runtime::FusionGroup> fuse_conv_epilogues(
    ir::Graph& graph,
    const std::vector<std::string>& activations = {"Relu", "Sigmoid", "Tanh", "Clip"});
/// MatMul → Div | Mul(scalar) → Add(bias) → Relu | Gelu, Gemm → Relu | Gelu
/// (fusion/matmul_epilogue.cc). Gelu fuses in its erf form; with `tanh_gelu` also in its tanh
/// form, as "_sy_activation" "GeluTanh" (the cuda kernel's cuBLASLt GELU epilogue).
std::vector<runtime::FusionGroup> fuse_matmul_epilogues(ir::Graph& graph, bool tanh_gelu = false);
/// Inference BatchNormalization -> Relu becomes one BatchNormalization with "_sy_activation"
/// "Relu" (fusion/norm_epilogue.cc; the cpu's kernel applies it in the same pass).
std::vector<runtime::FusionGroup> fuse_norm_activation(ir::Graph& graph);
/// Add(X, Z) of two same-shaped tensors -> LayerNormalization over the last axis becomes one
/// LayerNormalization with Z as input 3 (fusion/norm_epilogue.cc).
std::vector<runtime::FusionGroup> fuse_residual_layernorm(ir::Graph& graph);
/// Transpose -> a MatMul operand of one of `dtypes` (both operands of that dtype and the same
/// rank, the innermost axis kept among the matrix dims) folds into the MatMul as "_sy_perm_a" /
/// "_sy_perm_b": the kernel reads it through the permuted strides (fusion/matmul_layout.cc). The
/// cpu's kernel takes float32; the cuda kernel every float dtype.
std::vector<runtime::FusionGroup> fold_transposes_into_matmul(
    ir::Graph& graph, const std::vector<ir::DType>& dtypes = {ir::DType::Float32});
/// Add(X, M) -> Softmax over the last axis, M broadcast into X, becomes one Softmax with M as
/// input 1 (fusion/norm_epilogue.cc).
std::vector<runtime::FusionGroup> fuse_softmax_mask(ir::Graph& graph);
/// Which attention a backend's fused attention kernel takes (fuse_attention).
struct AttentionRules {
  std::vector<ir::DType> dtypes;  ///< of Q, K, V, the scores and the result
};

/// MatMul(Q, K) [scale folded, head split folded] -> optional mask (Softmax's fused additive
/// mask, or a Where with a constant fill) -> Softmax (last axis) -> MatMul(., V) -> optional
/// head-merge Transpose becomes one MatMul with "_sy_attention" (fusion/attention.cc). Run after
/// fuse_matmul_epilogues, fold_transposes_into_matmul and fuse_softmax_mask.
std::vector<runtime::FusionGroup> fuse_attention(ir::Graph& graph, const AttentionRules& rules);

/// The erf and tanh forms of GELU that exporters emit below opset 20 become one Gelu node
/// (approximate "none" / "tanh") (fusion/gelu.cc).
std::vector<runtime::FusionGroup> fuse_gelu(ir::Graph& graph);

/// Which values and nodes a backend's channels-last kernels take (apply_channels_last).
struct ChannelsLastRules {
  std::vector<ir::DType> dtypes;  ///< 4-D activations of these dtypes are stored NHWC
  bool pools = true;              ///< the pools read "_sy_layout" NHWC too
  bool batch_norm = false;        ///< inference BatchNormalization reads NHWC too
  bool pad = false;               ///< Pad with constant pads joins (its pads permuted)
  bool resize = false;            ///< Resize with constant scales or sizes joins (permuted)
};

/// Channels-last activations (fusion/channels_last.cc): marks the 2-D convolutions of the
/// rules' dtypes, and the pools and inference BatchNormalizations (when the rules allow), channel
/// Concats and layout-free
/// elementwise nodes after them, "_sy_layout" = "NHWC": their 4-D activations (Conv's X, Z and
/// Y, a pool's X and Y) are stored [N, H, W, C] (a Concat's axis is remapped), and explicit
/// Transpose nodes convert where a value enters or leaves the channels-last region ("<value>/
/// to_nhwc", "<node>/to_nchw" in traces). Original value names are kept. Returns the number of
/// nodes now channels-last.
size_t apply_channels_last(ir::Graph& graph, const ChannelsLastRules& rules);

/// Merges groups made by successive passes: a group whose first member is a member of an
/// earlier group (a Gelu made by fuse_gelu, then absorbed by a MatMul) joins that group.
std::vector<runtime::FusionGroup> merge_fusion_groups(std::vector<runtime::FusionGroup> groups);

}  // namespace switchyard::backends
