// `switchyard run MODEL.onnx [...]`: run a model on inputs from an .npz or seeded random ones,
// print each output's summary and the median time, optionally write the outputs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "input_options.h"
#include "placement_options.h"
#include "require.h"
#include "switchyard/switchyard.hpp"
#include "tooling/inputs.h"
#include "tooling/npz.h"
#include "tooling/trace.h"

#include <fstream>

namespace switchyard::tools {

namespace {

struct RunArgs {
  std::string model;
  std::string outputs_path;
  InputOptions inputs;
  int iterations = 1;
  int threads = 0;
  int64_t deadline_ms = 0;  // per run; 0 = none
  bool json = false;
  bool explain = false;
  std::string trace_path;
  Options options;
};

int run_command(const RunArgs& args) {
  require_usage(args.iterations >= 1, "--iterations must be at least 1, got {}", args.iterations);
  require_usage(args.threads >= 0, "--threads must be >= 0, got {}", args.threads);
  require_usage(args.deadline_ms >= 0, "--deadline-ms must be >= 0, got {}", args.deadline_ms);
  RunOptions run_options;
  run_options.deadline_ms = args.deadline_ms;
  Options options = args.options;
  options.num_threads = args.threads;
  Executable exe = warn_unhonoured(compile_file(args.model, options));
  const std::vector<ValueInfo> input_info = exe.inputs(), output_info = exe.outputs();

  tooling::ResolvedInputs resolved = resolve_input_options(args.inputs, exe);
  const std::vector<Datum>& inputs = resolved.values;
  const std::vector<std::string>& input_origin = resolved.origins;

  const CompileStats& compiled = exe.compile_stats();
  std::vector<double> times_ms;
  RunResult result;
  for (int it = 0; it < args.iterations; ++it) {
    // The trace records the last iteration (after first-shape preparation).
    run_options.profile = !args.trace_path.empty() && it + 1 == args.iterations;
    auto start = std::chrono::steady_clock::now();
    result = exe.run_values(inputs, run_options);
    auto end = std::chrono::steady_clock::now();
    times_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  const std::vector<Datum>& outputs = result.outputs;
  const RunStats& stats = result.stats;
  std::vector<double> sorted = times_ms;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  if (sorted.size() % 2 == 0) median = (sorted[sorted.size() / 2 - 1] + median) / 2;

  if (!args.trace_path.empty()) {
    std::ofstream trace(args.trace_path, std::ios::binary);
    require(trace.good(), "--trace {}: cannot write the file", args.trace_path);
    trace << tooling::format_chrome_trace(result.profile);
  }
  if (!args.outputs_path.empty()) {
    std::vector<std::pair<std::string, Tensor>> arrays;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].is_tensor())
        throw Error(ErrorCode::Unsupported,
                    fmt::format("output '{}' is not a tensor and cannot be written to an .npz",
                                output_info[i].name));
      arrays.emplace_back(output_info[i].name, outputs[i].tensor);
    }
    tooling::write_npz(args.outputs_path, arrays);
  }

  std::vector<tooling::ValueSummary> summaries;
  for (size_t i = 0; i < outputs.size(); ++i)
    summaries.push_back(tooling::summarize(output_info[i].name, outputs[i]));

  if (args.json) {
    nlohmann::json j;
    j["model"] = args.model;
    j["placement"] = exe.placement_summary();
    j["threads"] = args.threads;
    j["iterations"] = args.iterations;
    j["load_ms"] = compiled.load_ms;
    j["compile_ms"] = compiled.compile_ms;
    j["cache"] = compiled.cache;
    j["first_run_ms"] = times_ms.front();
    j["median_ms"] = median;
    j["times_ms"] = times_ms;
    j["peak_bytes"] = stats.peak_bytes;
    j["copies"] = stats.copies;
    for (size_t i = 0; i < inputs.size(); ++i) {
      tooling::ValueSummary s = tooling::summarize(input_info[i].name, inputs[i]);
      j["inputs"].push_back(
          {{"name", s.name}, {"dtype", s.dtype}, {"shape", s.shape}, {"source", input_origin[i]}});
    }
    for (const auto& s : summaries) {
      nlohmann::json o = {{"name", s.name}, {"dtype", s.dtype}, {"shape", s.shape}};
      if (s.numeric) {
        o["min"] = s.min;
        o["max"] = s.max;
        o["mean"] = s.mean;
      }
      j["outputs"].push_back(o);
    }
    fmt::print("{}\n", j.dump());
    return 0;
  }
  fmt::print("model: {}\n", args.model);
  fmt::print("placement: {}\n", exe.placement_summary());
  if (args.explain) fmt::print("{}", exe.explain("text"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    tooling::ValueSummary s = tooling::summarize(input_info[i].name, inputs[i]);
    fmt::print("input  {}: {} {} ({})\n", s.name, s.dtype, s.shape, input_origin[i]);
  }
  for (const auto& s : summaries) {
    if (s.numeric) {
      fmt::print("output {}: {} {} min={:.6g} max={:.6g} mean={:.6g}\n", s.name, s.dtype, s.shape,
                 s.min, s.max, s.mean);
    } else {
      fmt::print("output {}: {} {}\n", s.name, s.dtype, s.shape);
    }
  }
  fmt::print(
      "time: median {:.3f} ms over {} iteration{}; peak intermediate memory {:.2f} MB; "
      "{} cop{} between devices per run\n",
      median, args.iterations, args.iterations == 1 ? "" : "s",
      static_cast<double>(stats.peak_bytes) / 1e6, stats.copies, stats.copies == 1 ? "y" : "ies");
  if (!args.trace_path.empty()) fmt::print("trace written to {}\n", args.trace_path);
  if (!args.outputs_path.empty()) fmt::print("outputs written to {}\n", args.outputs_path);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "Run a model and summarize its outputs");
  cmd->add_option("model", args->model, "ONNX model or saved executable (.syx)")->required();
  add_inputs_file_option(cmd, args->inputs);
  cmd->add_option("--outputs", args->outputs_path, "write outputs to this .npz");
  add_input_shape_options(cmd, args->inputs);
  cmd->add_option("--iterations", args->iterations, "number of timed runs (median reported)");
  cmd->add_option("--threads", args->threads, "threads per run (0 = all cores)");
  cmd->add_option("--deadline-ms", args->deadline_ms,
                  "stop a run that takes longer than this many milliseconds (error Cancelled)");
  cmd->add_flag("--json", args->json, "print one JSON object");
  cmd->add_flag("--explain", args->explain, "print the placement report (per-node table)");
  cmd->add_option("--trace", args->trace_path, "write a Chrome trace JSON of the last run");
  add_placement_options(cmd, args->options);
  cmd->callback([args, &exit_code] { exit_code = run_command(*args); });
}

}  // namespace switchyard::tools
