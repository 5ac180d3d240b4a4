#include "ir/check.h"
#include "ops/op_kind.h"
#include "passes/passes.h"

namespace switchyard::passes {

namespace {
bool foldable(const ir::Node& n) {
  if (!n.subgraphs().empty()) return false;
  for (const ir::Value* v : n.inputs())
    if (v && !v->is_constant()) return false;
  for (const ir::Value* v : n.outputs())
    if (!v->type().is_tensor()) return false;
  return true;
}
}  // namespace

size_t fold_constants(ir::Graph& graph, const PassContext& ctx) {
  if (!ctx.evaluate) return 0;
  size_t folded = 0;
  std::vector<ir::Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  for (ir::Node* n : order) {
    if (!foldable(*n)) continue;
    std::vector<ir::Datum> inputs;
    for (const ir::Value* v : n->inputs())
      inputs.push_back(v ? ir::Datum(v->constant()) : ir::Datum());
    std::vector<ir::Datum> outputs = ctx.evaluate(*n, inputs);
    size_t bytes = 0;
    bool ok = outputs.size() == n->num_outputs();
    for (const auto& d : outputs) {
      ok = ok && d.is_tensor() && d.tensor.dtype() != ir::DType::String;
      if (ok) bytes += d.tensor.nbytes();
    }
    if (!ok || bytes > ctx.max_folded_bytes) continue;
    // Outputs become constants of the same name; the node goes.
    std::vector<ir::Tensor> data;
    for (auto& d : outputs) data.push_back(d.tensor.clone());
    graph.replace_node_with_constants(n, std::move(data));
    ++folded;
  }
  return folded;
}

void optimize(ir::Graph& graph, const PassContext& ctx) {
  fold_constants(graph, ctx);
  fuse_layer_norm(graph);
  remove_dead_nodes(graph, ctx);
}

}  // namespace switchyard::passes
