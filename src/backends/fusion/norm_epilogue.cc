// fuse_norm_activation (fusion.h): on a partition's private graph, folds
//   BatchNormalization (inference) -> Relu
// into one BatchNormalization node whose kernel applies the ReLU in the same pass
// ("_sy_activation" = "Relu"): DenseNet's pre-activation BN -> ReLU -> Conv, where the ReLU
// cannot become a post-op of the convolution that follows. The Relu is absorbed only when it is
// the normalization's one reader and the normalized value is not a graph output.
#include <string>
#include <vector>

#include "backends/fusion/fusion.h"

namespace switchyard::backends {

namespace {

bool is_onnx_op(const ir::Node& n, const char* type) {
  return n.op_type() == type && (n.domain().empty() || n.domain() == "ai.onnx");
}

}  // namespace

std::vector<runtime::FusionGroup> fuse_norm_activation(ir::Graph& graph) {
  std::vector<runtime::FusionGroup> groups;
  std::vector<std::pair<ir::Node*, ir::Node*>> pairs;
  for (const auto& n : graph.nodes()) {
    if (!is_onnx_op(*n, "BatchNormalization") || n->num_outputs() != 1 ||
        n->attr_int("training_mode", 0) != 0 || n->has_attribute(kFusedActivationAttr))
      continue;
    const ir::Value* y = n->output(0);
    if (graph.is_output(y) || y->uses().size() != 1) continue;
    ir::Node* relu = y->uses().front().first;
    if (relu->owner() != &graph || !is_onnx_op(*relu, "Relu") || relu->num_outputs() != 1 ||
        relu->input(0) != y)
      continue;
    pairs.emplace_back(n.get(), relu);
  }
  for (auto [norm, relu] : pairs) {
    groups.push_back({{norm->name(), relu->name()}});
    // The normalization takes over the ReLU's output value (name, type and readers).
    ir::Value* out = relu->output(0);
    ir::Value* mid = norm->output(0);
    const std::string out_name = out->name();
    const ir::Type out_type = out->type();
    ir::Node* hold =
        graph.add_node("Identity", "", {}, {graph.unique_value_name(out_name + "_fusing")});
    graph.replace_all_uses(out, hold->output(0));
    graph.remove_nodes_if([&](const ir::Node& n) { return &n == relu; });
    const std::string name = norm->name();
    const int kind = norm->kind_id();
    const std::vector<ir::Attribute> attributes = norm->attributes();
    const std::vector<ir::Value*> inputs = norm->inputs();
    (void)mid;
    graph.remove_nodes_if([&](const ir::Node& n) { return &n == norm; });
    ir::Node* fused = graph.add_node("BatchNormalization", name, inputs, {out_name});
    fused->set_kind_id(kind);
    fused->output(0)->set_type(out_type);
    for (const ir::Attribute& a : attributes) fused->set_attribute(a);
    fused->set_attribute(ir::Attribute::make_string(kFusedActivationAttr, "Relu"));
    graph.replace_all_uses(hold->output(0), fused->output(0));
    graph.remove_nodes_if([&](const ir::Node& n) { return &n == hold; });
  }
  if (!pairs.empty()) graph.sort_topologically();
  return groups;
}

}  // namespace switchyard::backends
