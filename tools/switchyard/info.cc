// `switchyard info MODEL.onnx`: inputs and outputs with symbolic dims, opsets, op histogram,
// parameter count.
#include <fmt/format.h>

#include "commands.h"
#include "tooling/model_info.h"

namespace switchyard::tools {

void add_info_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("info", "Show a model's inputs, outputs, opsets and ops");
  auto path = std::make_shared<std::string>();
  cmd->add_option("model", *path, "ONNX model or saved executable (.syx)")->required();
  cmd->callback([path, &exit_code] {
    tooling::ModelSummary m = tooling::summarize_model(*path);
    const tooling::GraphStats& stats = m.stats;
    fmt::print("model: {}\n", *path);
    for (const std::string& line : m.executable) fmt::print("{}\n", line);
    fmt::print("ir_version: {}  producer: {}\n", m.ir_version,
               m.producer.empty() ? "?" : m.producer);
    std::string opsets;
    for (const auto& [domain, version] : m.opsets)
      opsets += fmt::format("{}{}={}", opsets.empty() ? "" : ", ",
                            domain.empty() ? "ai.onnx" : domain, version);
    fmt::print("opsets: {}\n", opsets);
    fmt::print("inputs:\n");
    for (const std::string& v : m.inputs) fmt::print("  {}\n", v);
    fmt::print("outputs:\n");
    for (const std::string& v : m.outputs) fmt::print("  {}\n", v);
    fmt::print("nodes: {} ({} op types)\n", stats.num_nodes, stats.op_histogram.size());
    for (const auto& [op, count] : stats.op_histogram) fmt::print("  {:<28} {}\n", op, count);
    fmt::print("parameters: {} ({:.2f} MB)\n", stats.num_parameters,
               static_cast<double>(stats.parameter_bytes) / 1e6);
    exit_code = 0;
  });
}

}  // namespace switchyard::tools
