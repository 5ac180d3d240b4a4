#include "backends/cuda/fusion.h"

namespace switchyard::cuda {

std::vector<runtime::FusionGroup> fuse_partition(ir::Graph& graph, backends::Precision precision) {
  std::vector<std::string> user_nodes;
  for (const auto& n : graph.nodes()) user_nodes.push_back(n->name());
  std::vector<runtime::FusionGroup> groups = backends::fuse_gelu(graph);
  auto append = [&](std::vector<runtime::FusionGroup> more) {
    for (runtime::FusionGroup& g : more) groups.push_back(std::move(g));
  };
  append(backends::fuse_conv_epilogues(graph));
  append(backends::fuse_matmul_epilogues(graph, /*tanh_gelu=*/true));
  // cuBLASLt reads a permuted operand through its strides where they form one batch stride;
  // matmul.cc transposes the others itself (as the Transpose would have).
  append(backends::fold_transposes_into_matmul(
      graph, {ir::DType::Float32, ir::DType::Float16, ir::DType::BFloat16, ir::DType::Float64}));
  append(backends::fuse_residual_layernorm(graph));
  append(backends::fuse_softmax_mask(graph));
  // The attention kernel computes in 16-bit storage with float32 accumulation; a float32 graph
  // fuses only when --precision fp16/bf16 will narrow it.
  backends::AttentionRules attention{{ir::DType::Float16, ir::DType::BFloat16},
                                     /*mask_views=*/true};
  if (precision == backends::Precision::Fp16 || precision == backends::Precision::Bf16)
    attention.dtypes.push_back(ir::DType::Float32);
  append(backends::fuse_attention(graph, attention));
  // BERT's query, key and value products (separate in the model, unlike GPT's) become one
  // product whose parts the attentions then read in place: one launch instead of three, and no
  // Split left (only siblings that are attention operands pack: elsewhere a Split would copy).
  backends::PackRules pack{attention.dtypes};
  pack.attention_operands_only = true;
  append(backends::pack_sibling_matmuls(graph, pack));
  append(backends::fold_packed_attention_operands(graph));
  fuse_elementwise_chains(graph);
  // The report names the user's nodes, not the Split the packing made.
  return backends::keep_named_members(backends::merge_fusion_groups(std::move(groups)), user_nodes);
}

}  // namespace switchyard::cuda
