// `switchyard explain MODEL [placement options] --format text|json|dot|html [-o FILE]`: where
// every node would run and why, without running the model.
#include <fmt/format.h>

#include <fstream>

#include "commands.h"
#include "placement_options.h"
#include "require.h"

namespace switchyard::tools {

namespace {
struct ExplainArgs {
  std::string model;
  std::string format = "text";
  std::string output;
  Options options;
};
}  // namespace

void add_explain_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand("explain", "Show where every node runs and why");
  cmd->add_option("model", args->model, "ONNX model or saved executable (.syx)")->required();
  cmd->add_option("--format", args->format, "text | json | dot | html");
  cmd->add_option("-o,--output", args->output, "write the report to this file");
  add_placement_options(cmd, args->options);
  cmd->callback([args, &exit_code] {
    Executable exe = warn_unhonoured(compile_file(args->model, args->options));
    std::string text = exe.explain(args->format);
    if (args->output.empty()) {
      fmt::print("{}", text);
      if (!text.empty() && text.back() != '\n') fmt::print("\n");
    } else {
      std::ofstream out(args->output, std::ios::binary);
      require(out.good(), "-o {}: cannot write the file", args->output);
      out << text;
      fmt::print("{}\nreport written to {}\n", exe.placement_summary(), args->output);
    }
    exit_code = 0;
  });
}

}  // namespace switchyard::tools
