// Fusion on a partition's private graph (after placement, inside a backend's compile): rewrites
// shared by every backend whose kernels run the fused forms (cpu and cuda). A fused node keeps
// its op type and gains a typed payload (payload.h: Epilogue, OperandPermutes, Attention,
// ChannelsLast, each saying what the kernel computes with it) and, for some, inputs that only the
// backends' kernels read:
//
//   Conv: optional input 3 = residual Z (same shape as Y): Y = act(conv(X, W) + B + Z).
//   MatMul: optional input 2 = bias (1-D, length N): Y = act(alpha * (A @ B) + bias).
//   MatMul with an Attention payload: inputs Q, K, V and the mask (fusion/attention.cc); with
//     views, inputs 0-2 the packed products and 4-6 the head splits' targets (attention_views.cc).
//   LayerNormalization: optional input 3 = residual Z (X's shape): Y = LN(X + Z); with a
//     ResidualSum, also output 3 = the sum X + Z (outputs 1 and 2 unread placeholders).
//   Softmax (last axis): optional input 1 = additive mask M, broadcast into X: softmax(X + M).
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
#include "backends/fusion/payload.h"
#include "ir/graph.h"

namespace switchyard::backends {

/// Conv → Add(bias) / Add(residual) → an activation of `activations` (fusion/conv_epilogue.cc):
/// Relu, Sigmoid, Tanh, Clip (the default: what every backend's Conv kernel applies), HardSwish,
/// Swish (SiLU written as Mul(x, Sigmoid(x))). The Conv gets a fusion::Epilogue.
std::vector<runtime::FusionGroup> fuse_conv_epilogues(
    ir::Graph& graph, const std::vector<fusion::Activation>& activations = {
                          fusion::Activation::Relu, fusion::Activation::Sigmoid,
                          fusion::Activation::Tanh, fusion::Activation::Clip});
/// MatMul → Div | Mul(scalar) → Add(bias) → Relu | Gelu, Gemm → Relu | Gelu
/// (fusion/matmul_epilogue.cc), as a fusion::Epilogue (and the bias as input 2). Gelu fuses in
/// its erf form; with `tanh_gelu` also in its tanh form, as Activation::GeluTanh (the cuda
/// kernel's cuBLASLt GELU epilogue).
std::vector<runtime::FusionGroup> fuse_matmul_epilogues(ir::Graph& graph, bool tanh_gelu = false);
/// Inference BatchNormalization -> Relu becomes one BatchNormalization with a fusion::Epilogue
/// of Activation::Relu (fusion/norm_epilogue.cc; the cpu's kernel applies it in the same pass).
std::vector<runtime::FusionGroup> fuse_norm_activation(ir::Graph& graph);
/// Concat along the channel axis (float32) -> inference BatchNormalization with constant
/// statistics (and the Relu fuse_norm_activation gave it) becomes one Concat with a
/// fusion::ConcatAffine (fusion/norm_epilogue.cc; the cpu's Concat kernel applies it while it
/// copies). Run after fuse_norm_activation and before apply_channels_last.
std::vector<runtime::FusionGroup> fuse_concat_norm(ir::Graph& graph);
/// Add(X, Z) -> LayerNormalization over the last axis (float X and Z of one dtype, Y its only
/// output in use) becomes one LayerNormalization with Z as input 3 (fusion/norm_epilogue.cc).
/// Where the sum has other readers too (a pre-norm transformer's running sum) and X and Z are
/// provably of one shape, the node also writes the sum as output 3 (a fusion::ResidualSum), which
/// those readers read; the group names the norm, then the Add.
std::vector<runtime::FusionGroup> fuse_residual_layernorm(ir::Graph& graph);
/// Transpose -> a MatMul operand of one of `dtypes` (both operands of that dtype and the same
/// rank, the innermost axis kept among the matrix dims) folds into the MatMul as a
/// fusion::OperandPermutes: the kernel reads it through the permuted strides
/// (fusion/matmul_layout.cc). The cpu's kernel takes float32; the cuda kernel every float dtype.
std::vector<runtime::FusionGroup> fold_transposes_into_matmul(
    ir::Graph& graph, const std::vector<ir::DType>& dtypes = {ir::DType::Float32});
/// Add(X, M) -> Softmax over the last axis, M broadcast into X, becomes one Softmax with M as
/// input 1 (fusion/norm_epilogue.cc).
std::vector<runtime::FusionGroup> fuse_softmax_mask(ir::Graph& graph);
/// Which attention a backend's fused attention kernel takes (fuse_attention).
struct AttentionRules {
  std::vector<ir::DType> dtypes;  ///< of Q, K, V, the scores and the result
  /// A Where mask's Nots, bool-to-bool Casts and up to two Slices (each read by nothing else)
  /// join the attention, which reads the mask through them (fusion::Attention::mask_slices).
  bool mask_views = false;
};

/// MatMul(Q, K) [scale folded, head split folded] -> optional mask (Softmax's fused additive
/// mask, or a Where with a constant fill) -> Softmax (last axis) -> MatMul(., V) -> optional
/// head-merge Transpose becomes one MatMul with a fusion::Attention (fusion/attention.cc), whose
/// operands cut out of one product are then read as views of it
/// (fold_packed_attention_operands). Run after fuse_matmul_epilogues,
/// fold_transposes_into_matmul and fuse_softmax_mask.
std::vector<runtime::FusionGroup> fuse_attention(ir::Graph& graph, const AttentionRules& rules);

/// A fused attention's Q, K or V that is a head split Reshape of columns of one product P
/// [batch, sequence, W] (a Split or a Slice of P's last axis: GPT's fused QKV product) is read as
/// a fusion::Attention::View of P (fusion/attention_views.cc): the attention's input becomes P,
/// the Reshape's target its input 4, 5 or 6, and the Reshape and the Split (every output of it
/// such an operand of the same attention) or Slice go. Shape nodes that measured the part's
/// leading dims measure P's. fuse_attention runs it; run it again after pack_sibling_matmuls.
std::vector<runtime::FusionGroup> fold_packed_attention_operands(ir::Graph& graph);

/// Which sibling products pack_sibling_matmuls packs.
struct PackRules {
  std::vector<ir::DType> dtypes;                ///< of X, the weights, the biases and the results
  size_t max_packed_bytes = size_t{128} << 20;  ///< bound of one packed weight
  /// Only siblings whose results are one fused attention's operands through head split
  /// Reshapes (fold_packed_attention_operands then removes the Split).
  bool attention_operands_only = false;
};

/// 2 to 4 MatMuls of one input X with constant weights [K, N_i] of one dtype (and constant
/// biases, input 2, all or none) and the same fusion::Epilogue become one MatMul of the
/// concatenated weights and biases (the first sibling's name) and a Split of its last axis into
/// the siblings' results (fusion/matmul_pack.cc). Run after fuse_matmul_epilogues.
std::vector<runtime::FusionGroup> pack_sibling_matmuls(ir::Graph& graph, const PackRules& rules);

/// The erf and tanh forms of GELU that exporters emit below opset 20 become one Gelu node
/// (approximate "none" / "tanh") (fusion/gelu.cc).
std::vector<runtime::FusionGroup> fuse_gelu(ir::Graph& graph);

/// Which values and nodes a backend's channels-last kernels take (apply_channels_last).
struct ChannelsLastRules {
  std::vector<ir::DType> dtypes;  ///< 4-D activations of these dtypes are stored NHWC
  bool pools = true;              ///< the pools read fusion::ChannelsLast too
  bool batch_norm = false;        ///< inference BatchNormalization reads NHWC too
  bool pad = false;               ///< Pad with constant pads joins (its pads permuted)
  bool resize = false;            ///< Resize with constant scales or sizes joins (permuted)
};

/// Channels-last activations (fusion/channels_last.cc): marks the 2-D convolutions of the
/// rules' dtypes, and the pools and inference BatchNormalizations (when the rules allow), channel
/// Concats and layout-free elementwise nodes after them, with a fusion::ChannelsLast: their 4-D
/// activations (Conv's X, Z and Y, a pool's X and Y) are stored [N, H, W, C] (a Concat's axis is
/// remapped), and explicit
/// Transpose nodes convert where a value enters or leaves the channels-last region ("<value>/
/// to_nhwc", "<node>/to_nchw" in traces). Original value names are kept. Returns the number of
/// nodes now channels-last.
size_t apply_channels_last(ir::Graph& graph, const ChannelsLastRules& rules);

/// Merges groups made by successive passes: a group whose first member is a member of an
/// earlier group (a Gelu made by fuse_gelu, then absorbed by a MatMul) joins that group.
std::vector<runtime::FusionGroup> merge_fusion_groups(std::vector<runtime::FusionGroup> groups);

/// `groups` without the members that name none of `nodes` (the partition's nodes before fusion:
/// a node a pass made, such as pack_sibling_matmuls' Split, is none of the user's), and without
/// the groups left with fewer than two members.
std::vector<runtime::FusionGroup> keep_named_members(std::vector<runtime::FusionGroup> groups,
                                                     const std::vector<std::string>& nodes);

}  // namespace switchyard::backends
