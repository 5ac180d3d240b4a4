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
#include "fuzz_inputs.h"
#include "ir/graph.h"
#include "onnx/import.h"
#include "switchyard/switchyard.hpp"
#include "tooling/inputs.h"

namespace {

using namespace switchyard;

// Larger models are refused before parsing (-1: libFuzzer keeps them out of the corpus).
constexpr size_t kMaxModelBytes = size_t{1} << 20;
using fuzz_inputs::kDeadlineMs;
using fuzz_inputs::make_inputs;

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
    options.cache_dir = "off";  // whatever $SWITCHYARD_CACHE_DIR says
    Executable exe = Model::from_graph(std::move(graph)).compile(options);
    RunOptions run_options;
    run_options.deadline_ms = kDeadlineMs;
    exe.run(*inputs, run_options);
  });
  return 0;
}
