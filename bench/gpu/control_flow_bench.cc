// Host-driven against device-driven control flow on cuda:0 (src/backends/cuda/control_flow.h):
// the LSTM cell driven by Loop and the while loop with a data-dependent exit of
// tests/gpu/control_flow_models.h, each compiled twice — as the CUDA backend runs it
// (device-driven: CUDA graph conditional nodes) and with SWITCHYARD_CUDA_HOST_LOOPS=1 set
// while it compiles (host-driven: the body's kernels launched from the host each iteration, and
// the while loop's condition read back each iteration) — and timed over the same inputs. Prints one
// Markdown row per model and mode: runs/s, mean ms per run, host synchronisations per run
// (RunStats) and the largest difference from the cpu's result. Inputs and outputs are host memory
// (the same copies in both modes).
//
// usage: control_flow_bench [--steps N] [--hidden N] [--batch N] [--runs N] [--warmup N]
//   --steps   LSTM steps (M), default 100; the while loop runs 16 iterations
//   --hidden  hidden size, default 256; --batch, default 8
//   --runs    timed runs per row, default 200; --warmup, default 20 (the first runs capture the
//             partition's CUDA graph)
//
// Build: `cmake --build build --target control_flow_bench` (needs SWITCHYARD_BUILD_TESTS: it uses
// the tests' seeded tensors). Run on the GPU machine with the libraries of the bundle
// (scripts/gpu-bundle, unpacked at /tmp/sy): `LD_LIBRARY_PATH=/tmp/sy/lib
// build/bench/control_flow_bench`. Results go to bench/RESULTS.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "gpu/control_flow_models.h"

namespace cf = switchyard::testing::control_flow_models;
using switchyard::Datum;
using switchyard::Executable;
using switchyard::Model;
using switchyard::Options;

namespace {

struct Row {
  double runs_per_s = 0;
  double mean_ms = 0;
  double host_syncs = 0;
  double max_diff = 0;
};

double max_abs_diff(const std::vector<Datum>& a, const std::vector<Datum>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    for (int64_t k = 0; k < a[i].tensor.numel(); ++k)
      d = std::max(d, std::fabs(a[i].tensor.scalar_as_double(k) - b[i].tensor.scalar_as_double(k)));
  return d;
}

Row measure(const std::function<Model()>& make, const std::vector<Datum>& inputs, bool host_driven,
            int warmup, int runs, const std::vector<Datum>& expected) {
  Options o;
  o.device = "cuda:0";
  o.fallback = "strict";
  if (host_driven) setenv("SWITCHYARD_CUDA_HOST_LOOPS", "1", 1);
  Executable exe = make().compile(o);
  unsetenv("SWITCHYARD_CUDA_HOST_LOOPS");
  Row row;
  std::vector<Datum> last;
  for (int r = 0; r < warmup; ++r) last = exe.run_values(inputs).outputs;
  int64_t syncs = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < runs; ++r) {
    switchyard::RunResult result = exe.run_values(inputs);
    syncs += result.stats.host_syncs;
    if (r + 1 == runs) last = std::move(result.outputs);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  row.runs_per_s = runs / seconds;
  row.mean_ms = seconds * 1000 / runs;
  row.host_syncs = static_cast<double>(syncs) / runs;
  row.max_diff = max_abs_diff(last, expected);
  return row;
}

int flag(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = flag(argc, argv, "--steps", 100);
  const int hidden = flag(argc, argv, "--hidden", 256);
  const int batch = flag(argc, argv, "--batch", 8);
  const int runs = flag(argc, argv, "--runs", 200);
  const int warmup = flag(argc, argv, "--warmup", 20);
  const int in = hidden;
  try {
    struct Case {
      std::string name;
      std::function<Model()> make;
      std::vector<Datum> inputs;
    };
    // The while loop's limit: the sum of its n values in [0, 1) (about n / 2) after 16 steps of
    // sum <- 1.25 sum + n / 2, so it runs about 16 iterations.
    const double n = static_cast<double>(batch) * hidden;
    double limit = n / 2;
    for (int k = 0; k < 16; ++k) limit = 1.25 * limit + n / 2;
    const std::vector<Case> cases = {
        {"lstm (Loop, " + std::to_string(steps) + " steps)",
         [&] { return cf::lstm(steps, batch, in, hidden); },
         cf::lstm_inputs(steps, steps, batch, in, hidden, 1)},
        {"while (data-dependent exit, ~16 iterations)",
         [&] { return cf::while_loop(batch, hidden); }, cf::while_inputs(batch, hidden, limit, 2)},
    };
    std::printf(
        "| model | batch x hidden | mode | runs/s | ms/run | host syncs/run | max |diff| vs cpu "
        "|\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (const Case& c : cases) {
      Options cpu;
      cpu.compute_units = "cpu_only";
      const std::vector<Datum> expected = c.make().compile(cpu).run_values(c.inputs).outputs;
      for (bool host_driven : {false, true}) {
        const Row r = measure(c.make, c.inputs, host_driven, warmup, runs, expected);
        std::printf("| %s | %d x %d | %s | %.1f | %.3f | %.2f | %.2g |\n", c.name.c_str(), batch,
                    hidden, host_driven ? "host-driven" : "device-driven", r.runs_per_s, r.mean_ms,
                    r.host_syncs, r.max_diff);
        std::fflush(stdout);
      }
    }
  } catch (const switchyard::Error& e) {
    std::fprintf(stderr, "control_flow_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
