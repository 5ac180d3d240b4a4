#include "tooling/model_info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/executable_file.h"
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
  ModelSummary m;
  std::unique_ptr<ir::Graph> graph;
  if (compiler::is_executable_file(path)) {
    compiler::SavedExecutable saved = compiler::read_executable(path);
    m.producer = "switchyard " + saved.switchyard_version;
    m.opsets = {{"", onnx_import::kLatestOpset}};
    m.executable.push_back(
        fmt::format("saved executable, format version {}", saved.format_version));
    std::vector<std::string> devices;
    for (const auto& d : saved.placement.devices)
      devices.push_back(d.name.empty() || d.name == d.id ? d.id : d.id + " (" + d.name + ")");
    m.executable.push_back(fmt::format("compiled for: {}", fmt::join(devices, ", ")));
    m.executable.push_back("placement: " + saved.report.summary());
    graph = std::move(saved.graph);
  } else {
    onnx_import::ModelInfo info;
    graph = onnx_import::import_model(path, &info);
    m.ir_version = info.ir_version;
    m.producer = info.producer;
    m.opsets = info.opsets;
  }
  for (const ir::Value* v : graph->inputs())
    m.inputs.push_back(v->name() + ": " + v->type().to_string());
  for (const ir::Value* v : graph->outputs())
    m.outputs.push_back(v->name() + ": " + v->type().to_string());
  m.stats = graph_stats(*graph);
  return m;
}

}  // namespace switchyard::tooling
