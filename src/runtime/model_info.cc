#include "runtime/model_info.h"

namespace switchyard::runtime {

namespace {
void accumulate(const ir::Graph& graph, GraphStats& stats) {
  for (const auto& v : graph.values()) {
    if (!v->is_constant()) continue;
    stats.num_parameters += v->constant().numel();
    stats.parameter_bytes += static_cast<int64_t>(v->constant().nbytes());
  }
  for (const auto& n : graph.nodes()) {
    ++stats.op_histogram[n->op_type()];
    ++stats.num_nodes;
    for (const ir::Graph* s : n->subgraphs()) accumulate(*s, stats);
  }
}
}  // namespace

GraphStats graph_stats(const ir::Graph& graph) {
  GraphStats stats;
  accumulate(graph, stats);
  return stats;
}

}  // namespace switchyard::runtime
