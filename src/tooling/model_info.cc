#include "tooling/model_info.h"

#include "onnx/import.h"

namespace switchyard::tooling {

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

ModelSummary summarize_model(const std::string& path) {
  onnx_import::ModelInfo info;
  std::unique_ptr<ir::Graph> graph = onnx_import::import_model(path, &info);
  ModelSummary m;
  m.ir_version = info.ir_version;
  m.producer = info.producer;
  m.opsets = info.opsets;
  for (const ir::Value* v : graph->inputs())
    m.inputs.push_back(v->name() + ": " + v->type().to_string());
  for (const ir::Value* v : graph->outputs())
    m.outputs.push_back(v->name() + ": " + v->type().to_string());
  m.stats = graph_stats(*graph);
  return m;
}

}  // namespace switchyard::tooling
