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
/// Replaces the decomposed layer normalization of pre-opset-17 exports (ReduceMean, Sub, Pow,
/// ReduceMean, Add, Sqrt, Div, then Mul and Add by constants) by one LayerNormalization node.
/// Returns the number fused.
size_t fuse_layer_norm(ir::Graph& graph);
/// Runs the default pipeline: fold_constants, fuse_layer_norm, remove_dead_nodes.
void optimize(ir::Graph& graph, const PassContext& ctx);

}  // namespace switchyard::passes
