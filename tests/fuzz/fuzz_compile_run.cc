// fuzz_compile_run: bytes -> import -> compile (placement, passes, kernel prepare) -> one run on
// seeded inputs, as a server taking untrusted models would: one thread, a 64 MiB cap on the run's
// cpu memory and a deadline. Structure-aware mutation comes from onnx_mutator.cc.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "fuzz_common.h"
#include "ir/graph.h"
#include "onnx/import.h"
#include "switchyard/switchyard.hpp"
#include "tooling/inputs.h"

namespace {

using namespace switchyard;

// Larger models are refused before parsing (-1: libFuzzer keeps them out of the corpus).
constexpr size_t kMaxModelBytes = size_t{1} << 20;
// Every symbolic dim of the inputs is bound to this.
constexpr int64_t kSymbolicDimValue = 2;
// The inputs the harness makes itself stay small; what the graph computes from them is bounded by
// the run's memory cap instead.
constexpr int64_t kMaxInputElements = int64_t{1} << 16;
constexpr int64_t kDeadlineMs = 2000;

// Seeded inputs for every graph input, or nullopt when one cannot be made (a sequence or
// optional input, an unknown rank or dim, or more than kMaxInputElements elements).
std::optional<std::map<std::string, Tensor>> make_inputs(const ir::Graph& graph) {
  tooling::InputSpec spec;
  spec.seed = 7;
  for (const ir::Value* v : graph.inputs()) {
    const ir::Type& type = v->type();
    if (!type.is_tensor() || !type.shape) return std::nullopt;
    for (const ir::Dim& d : *type.shape) {
      if (d.is_symbolic()) {
        spec.dims[d.symbol] = kSymbolicDimValue;
      } else if (!d.is_static()) {
        return std::nullopt;
      }
    }
  }
  std::map<std::string, Tensor> inputs;
  std::vector<tooling::Declared> declared = tooling::declared_of(graph.inputs());
  for (size_t i = 0; i < declared.size(); ++i) {
    const tooling::Declared& v = declared[i];
    if (checked_numel(tooling::resolve_input_shape(v, spec)) > kMaxInputElements)
      return std::nullopt;
    inputs[v.name] = tooling::make_seeded_input(v, i, spec);
  }
  return inputs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxModelBytes) return -1;
  fuzz::run_expecting_only_errors("fuzz_compile_run", [&] {
    std::unique_ptr<ir::Graph> graph = onnx_import::import_model_from_bytes(data, size, "", "fuzz");
    std::optional<std::map<std::string, Tensor>> inputs = make_inputs(*graph);
    if (!inputs) return;
    Options options;
    options.num_threads = 1;
    options.memory_limits = {"cpu=64M"};
    Executable exe = Model::from_graph(std::move(graph)).compile(options);
    RunOptions run_options;
    run_options.deadline_ms = kDeadlineMs;
    exe.run(*inputs, run_options);
  });
  return 0;
}
