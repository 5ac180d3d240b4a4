// Devices at work at the same time (issue 16), on simulated devices with modelled timing
// ("timing": "model": each node sleeps out its estimated time on its device's worker, so the
// figures mean the same on a 2-core machine as on a big one):
//   1. a two-stage pipeline (--split pipeline over sim:0,sim:1, balanced stages): throughput with
//      N runs in flight through run_async, against one run at a time (the anchor);
//   2. two independent branches pinned to sim:0 and sim:1 (joined on the cpu): the time of one
//      run, against the same model with both branches pinned to sim:0 (the anchor: one device
//      runs them one after the other).
// Usage: overlap_bench [RUNS] (default 30). Prints each figure, its anchor and the ratio.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <future>
#include <vector>

#include "support/pipeline_models.h"
#include "switchyard/switchyard.hpp"

namespace {

using namespace switchyard;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A MatMul of [1, 64] x [64, 64] (the batch is symbolic: estimated as 1) is 8192 flops: 4.1 ms
// at this rate; the cpu kernel takes a few microseconds.
constexpr double kGflops = 0.002;
constexpr int64_t kWidth = 64;

Tensor input() { return testing::random_tensor(DType::Float32, {4, kWidth}, 42); }

// Runs per second with `in_flight` runs kept in flight through run_async.
double throughput(const Executable& exe, int runs, int in_flight) {
  Tensor x = input();
  exe.run({{"x", x}});  // warm: shape plans, workers started
  std::deque<std::future<std::map<std::string, Tensor>>> pending;
  auto start = Clock::now();
  for (int i = 0; i < runs; ++i) {
    if (static_cast<int>(pending.size()) >= in_flight) {
      pending.front().get();
      pending.pop_front();
    }
    pending.push_back(exe.run_async({{"x", x}}));
  }
  while (!pending.empty()) {
    pending.front().get();
    pending.pop_front();
  }
  return runs / seconds_since(start);
}

// The median wall time of one run, in ms.
double median_run_ms(const Executable& exe, int runs) {
  Tensor x = input();
  exe.run({{"x", x}});
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto start = Clock::now();
    exe.run({{"x", x}});
    ms.push_back(seconds_since(start) * 1e3);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(4, std::atoi(argv[1])) : 30;
  testing::ScratchFile config(testing::sim_devices_json(2, true, kGflops));

  // 1. The pipeline: 8 dense layers, 4 on each device.
  Options pipeline;
  pipeline.sim_config = config.path();
  pipeline.device = "sim:0,sim:1";
  pipeline.split = "pipeline";
  pipeline.fallback = "strict";  // the stages stay where the split puts them
  pipeline.num_threads = 1;
  pipeline.max_in_flight = 8;
  Executable exe = Model::from_graph(testing::dense_layers(8, kWidth)).compile(pipeline);
  fmt::print("pipeline: {}\n", exe.placement_summary());
  const double one = throughput(exe, runs, 1);
  fmt::print("  1 in flight (anchor): {:.1f} runs/s\n", one);
  for (int in_flight : {2, 8}) {
    double t = throughput(exe, runs, in_flight);
    fmt::print("  {} in flight: {:.1f} runs/s, {:.2f}x the anchor\n", in_flight, t, t / one);
  }

  // 2. Two branches of 4 layers each.
  auto branches = [&](const std::vector<std::string>& pins) {
    Options o;
    o.sim_config = config.path();
    o.device = "sim:0";
    o.pins = pins;
    o.num_threads = 1;
    return Model::from_graph(testing::two_branches(4, kWidth)).compile(o);
  };
  Executable apart = branches({"a/*=sim:0", "b/*=sim:1", "join=cpu"});
  Executable together = branches({"a/*=sim:0", "b/*=sim:0", "join=cpu"});
  fmt::print("branches on two devices: {}\n", apart.placement_summary());
  fmt::print("branches on one device (anchor): {}\n", together.placement_summary());
  const double sequential = median_run_ms(together, runs / 2);
  const double concurrent = median_run_ms(apart, runs / 2);
  fmt::print("  one device (anchor): {:.2f} ms a run\n", sequential);
  fmt::print("  two devices: {:.2f} ms a run, {:.2f}x the anchor\n", concurrent,
             concurrent / sequential);
  return 0;
}
