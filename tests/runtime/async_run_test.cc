// Runs in flight together (Executable::run_async): models split over sim:0 and sim:1 give the
// bits of sequential runs at 1, 2 and 8 runs in flight, from one thread and from many; a run's
// inputs stay alive after the caller drops them; a failing stage fails its run only; errors,
// cancellation and the in-flight bound reach the future; assigning runs stay serialized.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "compiler/compiler.h"
#include "support/op_test_util.h"
#include "support/pipeline_models.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

using Outputs = std::map<std::string, Tensor>;

constexpr int64_t kWidth = 32;

Tensor input_of(uint64_t seed) { return random_tensor(DType::Float32, {5, kWidth}, 1000 + seed); }

// The devices the nodes of `exe` run on.
std::set<std::string> devices_used(const Executable& exe) {
  std::set<std::string> used;
  for (const auto& node : exe.internal().placement_report().nodes) used.insert(node.device);
  return used;
}

void expect_same_outputs(const Outputs& got, const Outputs& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (const auto& [name, tensor] : want) {
    ASSERT_TRUE(got.count(name)) << where << ": no output " << name;
    EXPECT_TRUE(same_bits(got.at(name), tensor)) << where << ": output " << name << " differs";
  }
}

struct SplitModel {
  std::string label;
  std::function<std::unique_ptr<ir::Graph>()> graph;
  Options options;  // the split over sim:0 and sim:1
};

std::vector<SplitModel> split_models() {
  std::vector<SplitModel> models(2);
  models[0].label = "dense layers, --split pipeline over sim:0,sim:1";
  models[0].graph = [] { return dense_layers(6, kWidth); };
  models[0].options.device = "sim:0,sim:1";
  models[0].options.split = "pipeline";
  // Strict: the stages stay where the split put them (islands never move to the cpu).
  models[0].options.fallback = "strict";
  models[1].label = "two branches pinned to sim:0 and sim:1, joined on the cpu";
  models[1].graph = [] { return two_branches(3, kWidth); };
  models[1].options.device = "sim:0";
  models[1].options.pins = {"a/*=sim:0", "b/*=sim:1", "join=cpu"};
  for (SplitModel& m : models) {
    m.options.sim_devices = 2;
    m.options.num_threads = 1;
  }
  return models;
}

// Outputs of one run at a time on the cpu alone, for inputs of seeds 0..count-1.
std::vector<Outputs> cpu_outputs(const SplitModel& model, int count, bool fusion) {
  Options cpu;
  cpu.num_threads = 1;
  cpu.fusion = fusion;
  Executable exe = Model::from_graph(model.graph()).compile(cpu);
  std::vector<Outputs> out;
  for (int i = 0; i < count; ++i) out.push_back(exe.run({{"x", input_of(i)}}));
  return out;
}

TEST(AsyncRuns, SplitModelsGiveTheSequentialBitsAt1_2And8InFlight) {
  constexpr int kRuns = 16;
  for (const SplitModel& model : split_models()) {
    // Without fusion every device runs the same kernels: the cpu's bits. With it, a split may
    // cut a fusion group, so the reference is the same executable one run at a time.
    for (bool fusion : {false, true}) {
      std::vector<Outputs> want_cpu = cpu_outputs(model, kRuns, fusion);
      for (int in_flight : {1, 2, 8}) {
        const std::string where = model.label + (fusion ? ", fusion" : ", no fusion") + ", " +
                                  std::to_string(in_flight) + " in flight";
        Options options = model.options;
        options.fusion = fusion;
        options.max_in_flight = in_flight;
        Executable exe = Model::from_graph(model.graph()).compile(options);
        EXPECT_EQ(devices_used(exe).count("sim:0") + devices_used(exe).count("sim:1"), 2u)
            << where << ": " << exe.placement_summary();
        std::vector<Outputs> want = want_cpu;
        if (fusion)
          for (int i = 0; i < kRuns; ++i) want[i] = exe.run({{"x", input_of(i)}});
        std::vector<std::future<Outputs>> futures;
        for (int i = 0; i < kRuns; ++i) futures.push_back(exe.run_async({{"x", input_of(i)}}));
        for (int i = 0; i < kRuns; ++i)
          expect_same_outputs(futures[i].get(), want[i], where + ", run " + std::to_string(i));
        if (!fusion)
          for (int i = 0; i < kRuns; ++i)
            expect_same_outputs(want[i], want_cpu[i], where + ", cpu run " + std::to_string(i));
      }
    }
  }
}

TEST(AsyncRuns, RunAsyncFromManyThreadsAtOnce) {
  constexpr int kThreads = 4, kRunsPerThread = 12;
  for (const SplitModel& model : split_models()) {
    Options options = model.options;
    options.fusion = false;
    Executable exe = Model::from_graph(model.graph()).compile(options);
    std::vector<Outputs> want = cpu_outputs(model, kThreads * kRunsPerThread, false);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        std::vector<std::pair<int, std::future<Outputs>>> futures;
        for (int r = 0; r < kRunsPerThread; ++r) {
          int seed = t * kRunsPerThread + r;
          futures.emplace_back(seed, exe.run_async({{"x", input_of(seed)}}));
        }
        for (auto& [seed, future] : futures) {
          Outputs got = future.get();
          for (const auto& [name, tensor] : want[static_cast<size_t>(seed)])
            if (!got.count(name) || !same_bits(got.at(name), tensor)) ++mismatches;
        }
      });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(mismatches.load(), 0) << model.label;
  }
}

TEST(AsyncRuns, InputsTheCallerDropsStayAliveUntilTheRunEnds) {
  // Simulated timing keeps the run in flight for tens of milliseconds.
  ScratchFile config(sim_devices_json(2, true, 0.0005));
  Options options;
  options.sim_config = config.path();
  options.device = "sim:0,sim:1";
  options.split = "pipeline";
  options.fallback = "strict";
  options.fusion = false;
  Executable exe = Model::from_graph(dense_layers(4, kWidth)).compile(options);
  Options cpu;
  cpu.fusion = false;
  Outputs want = Model::from_graph(dense_layers(4, kWidth)).compile(cpu).run({{"x", input_of(3)}});

  // The caller's input lives in memory whose owner poisons it when freed.
  auto freed = std::make_shared<std::atomic<bool>>(false);
  Tensor source = input_of(3);
  const size_t bytes = source.nbytes();
  auto* memory = new float[static_cast<size_t>(source.numel())];
  std::memcpy(memory, source.raw(), bytes);
  std::shared_ptr<void> owner(memory, [freed, bytes](void* p) {
    std::memset(p, 0xFF, bytes);  // NaN: a run that read it now would show
    freed->store(true);
    delete[] static_cast<float*>(p);
  });
  std::future<Outputs> future;
  {
    Tensor input = Tensor::wrap(DType::Float32, {5, kWidth}, std::move(owner), memory);
    future = exe.run_async({{"x", input}});
  }  // the caller holds nothing of the input any more
  const bool freed_early = freed->load();
  const bool in_flight = future.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
  if (in_flight) {
    EXPECT_FALSE(freed_early) << "the input was freed while its run was in flight";
  }
  expect_same_outputs(future.get(), want, "an input dropped after run_async");
}

// x [4, 8] → MatMul → Relu (sim:0) → Gather of rows `idx` (sim:1): an index out of range fails
// the second stage of that run only.
std::unique_ptr<ir::Graph> gather_model() {
  auto g = std::make_unique<ir::Graph>("gather_rows");
  ir::Value* x =
      g->add_input("x", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim(4), ir::Dim(8)}));
  ir::Value* idx = g->add_input("idx", ir::Type::tensor(DType::Int64, ir::Shape{ir::Dim(2)}));
  ir::Value* w = g->add_constant("w", layer_weights(8, 3));
  ir::Value* h = add_node(*g, "MatMul", "matmul", {x, w});
  h = add_node(*g, "Relu", "relu", {h});
  g->add_output(add_node(*g, "Gather", "gather", {h, idx}, "rows"));
  return g;
}

TEST(AsyncRuns, AFailingStageFailsItsRunOnlyAndTheNextRunSucceeds) {
  Options options;
  options.sim_devices = 2;
  options.device = "sim:0";
  options.pins = {"matmul=sim:0", "relu=sim:0", "gather=sim:1"};
  Executable exe = Model::from_graph(gather_model()).compile(options);
  EXPECT_EQ(devices_used(exe), (std::set<std::string>{"sim:0", "sim:1"}))
      << exe.placement_summary();
  Options cpu;
  Executable reference = Model::from_graph(gather_model()).compile(cpu);
  Tensor x = random_tensor(DType::Float32, {4, 8}, 11);
  Tensor good = int64_tensor({3, 1});
  Tensor bad = int64_tensor({0, 9});
  Outputs want = reference.run({{"x", x}, {"idx", good}});

  for (int round = 0; round < 3; ++round) {
    std::future<Outputs> before = exe.run_async({{"x", x}, {"idx", good}});
    std::future<Outputs> failing = exe.run_async({{"x", x}, {"idx", bad}});
    std::future<Outputs> after = exe.run_async({{"x", x}, {"idx", good}});
    expect_error([&] { failing.get(); }, ErrorCode::InvalidArgument, "gather");
    expect_same_outputs(before.get(), want, "the run before the failing one");
    expect_same_outputs(after.get(), want, "the run after the failing one");
  }
  expect_same_outputs(exe.run({{"x", x}, {"idx", good}}), want, "a run once they are all done");
}

TEST(AsyncRuns, ErrorsAndCancellationReachTheFutureWithTheirCodes) {
  SplitModel model = split_models()[0];
  Executable exe = Model::from_graph(model.graph()).compile(model.options);
  // Bad inputs: run_async returns, and the future holds the error.
  std::future<Outputs> missing = exe.run_async({});
  expect_error([&] { missing.get(); }, ErrorCode::InvalidArgument, "input 'x' is missing");
  std::future<Outputs> wrong =
      exe.run_async({{"x", random_tensor(DType::Float32, {5, kWidth + 1}, 1)}});
  expect_error([&] { wrong.get(); }, ErrorCode::InvalidArgument, "input 'x'");
  RunOptions negative;
  negative.deadline_ms = -1;
  std::future<Outputs> bad_options = exe.run_async({{"x", input_of(0)}}, negative);
  expect_error([&] { bad_options.get(); }, ErrorCode::InvalidArgument, "deadline_ms");
  // A cancelled run throws Cancelled; the executable goes on.
  RunOptions cancelled;
  cancelled.cancel.cancel();
  std::future<Outputs> stopped = exe.run_async({{"x", input_of(0)}}, cancelled);
  expect_error([&] { stopped.get(); }, ErrorCode::Cancelled, "cancel");
  std::future<RunResult> values = exe.run_values_async({Datum(input_of(0))});
  RunResult result = values.get();
  EXPECT_EQ(result.outputs.size(), 1u);
  EXPECT_EQ(result.stats.copies, static_cast<int>(exe.internal().placement_report().copies.size()));
}

TEST(AsyncRuns, MaxInFlightIsValidatedAndBoundsTheRunsInFlight) {
  for (int bad : {0, -3, 1025}) {
    Options options;
    options.max_in_flight = bad;
    expect_error([&] { Model::from_graph(dense_layers(1, 4)).compile(options); },
                 ErrorCode::InvalidArgument, "max_in_flight");
  }
  // Runs of simulated time (tens of ms): with one run in flight, the second run_async returns
  // only once the first run has ended.
  ScratchFile config(sim_devices_json(2, true, 0.0005));
  Options options;
  options.sim_config = config.path();
  options.device = "sim:0,sim:1";
  options.split = "pipeline";
  options.fallback = "strict";
  options.max_in_flight = 1;
  Executable exe = Model::from_graph(dense_layers(4, kWidth)).compile(options);
  for (int round = 0; round < 2; ++round) {
    std::future<Outputs> first = exe.run_async({{"x", input_of(0)}});
    std::future<Outputs> second = exe.run_async({{"x", input_of(1)}});
    EXPECT_EQ(first.wait_for(std::chrono::seconds(0)), std::future_status::ready)
        << "run_async started a second run while the first was in flight";
    first.get();
    second.get();
  }
}

Tensor int64_value(int64_t v) {
  Tensor t(DType::Int64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

TEST(AsyncRuns, AssigningRunsStaySerializedInFlight) {
  // counter += step, the add on sim:1 and the read (an Identity) on sim:0; each run returns the
  // value it read.
  GraphBuilder b;
  Value step = b.placeholder("step", DType::Int64, {});
  Value counter = b.variable("counter", int64_value(0));
  b.assign(counter, b.add(counter, step));
  b.outputs({{"seen", b.op("Identity", {counter})[0]}});
  Options options;
  options.sim_devices = 2;
  options.device = "sim:0";
  options.pins = {"op:Add=sim:1", "op:Identity=sim:0"};
  Executable exe = std::move(b).build().compile(options);
  EXPECT_EQ(devices_used(exe), (std::set<std::string>{"sim:0", "sim:1"}))
      << exe.placement_summary();
  constexpr int kThreads = 3, kRuns = 20;
  std::mutex mutex;
  std::vector<int64_t> seen;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      std::vector<std::future<Outputs>> futures;
      for (int r = 0; r < kRuns; ++r) futures.push_back(exe.run_async({{"step", int64_value(1)}}));
      for (auto& f : futures) {
        int64_t v = f.get().at("seen").data<int64_t>()[0];
        std::lock_guard<std::mutex> lock(mutex);
        seen.push_back(v);
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], kThreads * kRuns);
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> expected(kThreads * kRuns);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i);
  EXPECT_EQ(seen, expected) << "each run saw the state of its turn";
}

}  // namespace
}  // namespace switchyard::testing
