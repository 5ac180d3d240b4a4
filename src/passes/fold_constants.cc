#include "ir/check.h"
#include "ir/tensor.h"
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
// Bytes of the node's outputs whose shapes inference made static (unknown ones count 0): a node
// whose result is known to be too large is not even evaluated.
size_t static_output_bytes(const ir::Node& n) {
  size_t total = 0;
  for (const ir::Value* v : n.outputs()) {
    const ir::Type& t = v->type();
    if (!t.is_tensor() || !t.shape) continue;
    std::optional<std::vector<int64_t>> dims = ir::static_dims(*t.shape);
    if (!dims) continue;
    size_t bytes = ir::checked_nbytes(t.dtype == ir::DType::Undefined ? ir::DType::UInt8 : t.dtype,
                                      ir::checked_numel(*dims));
    total = bytes > SIZE_MAX - total ? SIZE_MAX : total + bytes;
  }
  return total;
}
}  // namespace

size_t fold_constants(ir::Graph& graph, const PassContext& ctx) {
  if (!ctx.evaluate) return 0;
  size_t folded = 0;
  std::vector<ir::Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  for (ir::Node* n : order) {
    if (!foldable(*n) || static_output_bytes(*n) > ctx.max_folded_bytes) continue;
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
  merge_common_subexpressions(graph);
  fuse_layer_norm(graph);
  remove_dead_nodes(graph, ctx);
}

}  // namespace switchyard::passes
