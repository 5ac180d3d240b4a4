// Device-independent graph rewrites, run before placement. Each takes `ir::Graph&` and says in
// its name what it changes.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"

namespace switchyard::passes {

struct PassContext {
  /// Evaluates one node on constant inputs (the CPU kernels); passes never include a backend.
  /// Absent = constant folding is skipped.
  std::function<std::vector<ir::Datum>(const ir::Node&, const std::vector<ir::Datum>&)> evaluate;
  /// Constants larger than this are not produced by folding (keeps models small).
  size_t max_folded_bytes = size_t{64} << 20;
};

/// Removes nodes whose outputs nothing reads (not graph outputs, not read by subgraphs).
/// Returns the number removed.
size_t remove_dead_nodes(ir::Graph& graph, const PassContext& ctx);
/// Replaces nodes whose inputs are all constants by constants (Constant nodes included).
/// Returns the number folded.
size_t fold_constants(ir::Graph& graph, const PassContext& ctx);
/// Merges common subexpressions: constants of equal dtype, shape and bytes become one value, then
/// each node that computes the same op (default domain, no bodies, not random) on the same
/// inputs with the same attributes as an earlier node reads that node's outputs instead (unless
/// one of its outputs is a graph output: those keep their names). The merged nodes are left
/// unread for remove_dead_nodes. Recurses into bodies, each merged within itself. Returns the
/// number of constants and nodes merged.
size_t merge_common_subexpressions(ir::Graph& graph);
/// Replaces the decomposed layer normalization of pre-opset-17 exports (ReduceMean, Sub, Pow,
/// ReduceMean, Add, Sqrt, Div, then Mul and Add by constants) by one LayerNormalization node.
/// Returns the number fused.
size_t fuse_layer_norm(ir::Graph& graph);
/// Runs the default pipeline: fold_constants, merge_common_subexpressions, fuse_layer_norm,
/// remove_dead_nodes.
void optimize(ir::Graph& graph, const PassContext& ctx);

}  // namespace switchyard::passes
