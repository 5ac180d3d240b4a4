// `switchyard info MODEL.onnx`: inputs and outputs with symbolic dims, opsets, op histogram,
// parameter count.
#include <fmt/format.h>

#include "commands.h"
#include "onnx/import.h"
#include "runtime/model_info.h"

namespace switchyard::tools {

void add_info_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("info", "Show a model's inputs, outputs, opsets and ops");
  auto path = std::make_shared<std::string>();
  cmd->add_option("model", *path, "ONNX model file")->required();
  cmd->callback([path, &exit_code] {
    onnx_import::ModelInfo info;
    auto graph = onnx_import::import_model(*path, &info);
    runtime::GraphStats stats = runtime::graph_stats(*graph);
    fmt::print("model: {}\n", *path);
    fmt::print("ir_version: {}  producer: {}\n", info.ir_version,
               info.producer.empty() ? "?" : info.producer);
    std::string opsets;
    for (const auto& [domain, version] : info.opsets)
      opsets += fmt::format("{}{}={}", opsets.empty() ? "" : ", ",
                            domain.empty() ? "ai.onnx" : domain, version);
    fmt::print("opsets: {}\n", opsets);
    fmt::print("inputs:\n");
    for (const ir::Value* v : graph->inputs())
      fmt::print("  {}: {}\n", v->name(), v->type().to_string());
    fmt::print("outputs:\n");
    for (const ir::Value* v : graph->outputs())
      fmt::print("  {}: {}\n", v->name(), v->type().to_string());
    fmt::print("nodes: {} ({} op types)\n", stats.num_nodes, stats.op_histogram.size());
    for (const auto& [op, count] : stats.op_histogram) fmt::print("  {:<28} {}\n", op, count);
    fmt::print("parameters: {} ({:.2f} MB)\n", stats.num_parameters,
               static_cast<double>(stats.parameter_bytes) / 1e6);
    exit_code = 0;
  });
}

}  // namespace switchyard::tools
