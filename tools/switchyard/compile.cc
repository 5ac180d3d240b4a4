// `switchyard compile MODEL.onnx [placement and precision options] -o FILE.syx`: compile once
// and save the executable (docs/executable-format.md); run, bench, explain and info take the
// file wherever they take a model.
#include <fmt/format.h>

#include <chrono>

#include "commands.h"
#include "placement_options.h"
#include "require.h"

namespace switchyard::tools {

namespace {
struct CompileArgs {
  std::string model;
  std::string output;
  Options options;
};
}  // namespace

void add_compile_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CompileArgs>();
  auto* cmd = app.add_subcommand("compile", "Compile a model once and save the executable");
  cmd->add_option("model", args->model, "ONNX model file")->required();
  cmd->add_option("-o,--output", args->output, "the executable to write (.syx)")->required();
  add_placement_options(cmd, args->options);
  cmd->callback([args, &exit_code] {
    require(!is_executable_file(args->model),
            "{} is already a compiled executable; give the ONNX model to compile", args->model);
    auto start = std::chrono::steady_clock::now();
    Executable exe = warn_unhonoured(Model::load(args->model).compile(args->options));
    auto compiled = std::chrono::steady_clock::now();
    exe.save(args->output);
    auto saved = std::chrono::steady_clock::now();
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    fmt::print("placement: {}\n", exe.placement_summary());
    fmt::print("compiled in {:.1f} ms, saved in {:.1f} ms to {}\n", ms(start, compiled),
               ms(compiled, saved), args->output);
    exit_code = 0;
  });
}

}  // namespace switchyard::tools
