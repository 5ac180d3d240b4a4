// Devices at work at the same time, seen in the profile: simulated devices with modelled timing
// ("timing": "model") sleep out each node's estimated time on their own workers, so two stages
// of a pipeline (successive runs) and two branches of one run overlap measurably on any machine.
// The assertions are about order and overlap, never about how long anything took, except lower
// bounds that the modelled time guarantees.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "backends/sim/sim_backend.h"
#include "compiler/compiler.h"
#include "runtime/profiler.h"
#include "support/op_test_util.h"
#include "support/pipeline_models.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"
#include "tooling/trace.h"

namespace switchyard::testing {
namespace {

constexpr int64_t kWidth = 32;
// A MatMul of [1, 32] x [32, 32] (the batch is symbolic: the estimate counts it as 1) is 2048
// flops, 4 ms at this rate; the cpu kernel takes microseconds.
constexpr double kSlowGflops = 0.0005;

Tensor input_of(uint64_t seed) { return random_tensor(DType::Float32, {3, kWidth}, 500 + seed); }

struct Interval {
  int64_t start = 0, end = 0;
  std::string name;
};

std::vector<Interval> nodes_on(const std::vector<ProfileEvent>& events, const std::string& device) {
  std::vector<Interval> out;
  for (const ProfileEvent& e : events)
    if (e.category == "Node" && e.device == device)
      out.push_back({e.start_us, e.start_us + e.duration_us, e.name});
  return out;
}

// The longest time some node on `a` and some node on `b` ran together (µs; 0: never).
int64_t longest_overlap(const std::vector<ProfileEvent>& events, const std::string& a,
                        const std::string& b) {
  int64_t best = 0;
  for (const Interval& x : nodes_on(events, a))
    for (const Interval& y : nodes_on(events, b))
      best = std::max(best, std::min(x.end, y.end) - std::max(x.start, y.start));
  return best;
}

Executable pipeline(const ScratchFile& config, int max_in_flight) {
  Options options;
  options.sim_config = config.path();
  options.device = "sim:0,sim:1";
  options.split = "pipeline";
  options.fallback = "strict";
  options.max_in_flight = max_in_flight;
  options.num_threads = 1;
  return Model::from_graph(dense_layers(4, kWidth)).compile(options);
}

TEST(Overlap, SuccessiveRunsOfAPipelineOverlapAcrossStages) {
  ScratchFile config(sim_devices_json(2, true, kSlowGflops));
  Executable exe = pipeline(config, 4);
  ASSERT_NE(exe.placement_summary().find("sim:1"), std::string::npos) << exe.placement_summary();

  // One run alone: its second stage starts after its first ends.
  runtime::Profiler alone;
  exe.internal().run({Datum(input_of(0))}, nullptr, &alone);
  ASSERT_FALSE(nodes_on(alone.events(), "sim:0").empty());
  ASSERT_FALSE(nodes_on(alone.events(), "sim:1").empty());
  EXPECT_LE(longest_overlap(alone.events(), "sim:0", "sim:1"), 0)
      << "the stages of one run overlapped: the second did not wait for the first";

  // Four runs in flight, one profile: run n+1's first stage runs while run n's second does.
  runtime::Profiler together;
  std::vector<std::future<std::vector<Datum>>> runs;
  for (int i = 0; i < 4; ++i)
    runs.push_back(exe.internal().run_async({Datum(input_of(i))}, nullptr, &together));
  for (auto& run : runs) run.get();
  EXPECT_GT(longest_overlap(together.events(), "sim:0", "sim:1"), 0)
      << "no node of sim:0 ran while a node of sim:1 did";
  // Each device still runs one partition at a time: its own nodes never overlap.
  for (const char* device : {"sim:0", "sim:1"}) {
    std::vector<Interval> own = nodes_on(together.events(), device);
    for (size_t i = 0; i < own.size(); ++i)
      for (size_t j = i + 1; j < own.size(); ++j)
        EXPECT_LE(std::min(own[i].end, own[j].end) - std::max(own[i].start, own[j].start), 0)
            << device << ": " << own[i].name << " and " << own[j].name << " overlapped";
  }

  // The trace puts each device on its own track, where the overlap shows.
  nlohmann::json trace = nlohmann::json::parse(tooling::format_chrome_trace(together.events()));
  std::map<int, std::string> track_names;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") track_names[e["tid"]] = e["args"]["name"];
  std::map<std::string, std::vector<Interval>> by_track;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] != "Node") continue;
    int64_t ts = e["ts"];
    int64_t dur = e["dur"];
    by_track[track_names.at(e["tid"])].push_back({ts, ts + dur, e["name"]});
  }
  ASSERT_TRUE(by_track.count("sim:0") && by_track.count("sim:1"));
  int64_t best = 0;
  for (const Interval& x : by_track["sim:0"])
    for (const Interval& y : by_track["sim:1"])
      best = std::max(best, std::min(x.end, y.end) - std::max(x.start, y.start));
  EXPECT_GT(best, 0) << "the trace's sim:0 and sim:1 tracks show no overlap";
}

TEST(Overlap, ASynchronousRunOfOneChainRunsOnTheCallingThread) {
  // The pipeline's two stages form one chain: a synchronous run gains nothing from the
  // devices' workers, so its steps run on the caller's thread; the same plan started with
  // run_async goes to the workers.
  ScratchFile config(sim_devices_json(2, true, 0.05));
  Executable exe = pipeline(config, 2);
  ASSERT_NE(exe.placement_summary().find("sim:1"), std::string::npos) << exe.placement_summary();
  RunStats sync, async;
  std::vector<Datum> out = exe.internal().run({Datum(input_of(2))}, &sync);
  EXPECT_EQ(sync.worker_handoffs, 0);
  std::vector<Datum> again = exe.internal().run_async({Datum(input_of(2))}, &async).get();
  EXPECT_GE(async.worker_handoffs, 2);
  ASSERT_EQ(out.size(), again.size());
  expect_same(again[0].tensor, out[0].tensor);
}

TEST(Overlap, IndependentBranchesOnTwoDevicesRunAtOnce) {
  ScratchFile config(sim_devices_json(2, true, kSlowGflops));
  Options options;
  options.sim_config = config.path();
  options.device = "sim:0";
  options.pins = {"a/*=sim:0", "b/*=sim:1", "join=cpu"};
  options.num_threads = 1;
  Executable exe = Model::from_graph(two_branches(2, kWidth)).compile(options);
  runtime::Profiler profiler;
  RunStats stats;
  exe.internal().run({Datum(input_of(1))}, &stats, &profiler);
  EXPECT_GE(stats.worker_handoffs, 3) << "branches that can run at once go to the workers";
  std::vector<ProfileEvent> events = profiler.events();
  EXPECT_EQ(nodes_on(events, "sim:0").size(), 4u);
  EXPECT_EQ(nodes_on(events, "sim:1").size(), 4u);
  EXPECT_GT(longest_overlap(events, "sim:0", "sim:1"), 0)
      << "the branches on sim:0 and sim:1 ran one after the other";
  // The join waits for both.
  std::vector<Interval> join = nodes_on(events, "cpu");
  ASSERT_EQ(join.size(), 1u);
  for (const char* device : {"sim:0", "sim:1"})
    for (const Interval& n : nodes_on(events, device))
      EXPECT_LE(n.end, join[0].start)
          << n.name << " on " << device << " ended after the join began";
}

// y = relu(x + 1) on sim:1, ordered after s = x·x on sim:0 by a control dependency (no data of s
// crosses): the sim:1 partition waits for the sim:0 one, though it reads nothing from it.
TEST(Overlap, AControlDependencyOrdersPartitionsOnTwoDevices) {
  // The MatMul of [64, 64] x [64, 64] is 524288 flops: about 20 ms at this rate.
  ScratchFile config(sim_devices_json(2, true, 0.025));
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {64, 64});
  Value square = b.matmul(x, x);
  Value dependent = b.add(x, b.scalar(DType::Float32, 1));
  Value ordered = b.control_dependency(dependent, {square});
  b.outputs({{"y", b.relu(ordered)}});
  const std::string square_node = square.name(), dependent_node = dependent.name();
  Options options;
  options.sim_config = config.path();
  options.device = "sim:1";
  options.fallback = "strict";
  options.pins = {square_node + "=sim:0", "op:Add=sim:1", "op:Depend=sim:1", "op:Relu=sim:1"};
  Executable exe = std::move(b).build().compile(options);
  runtime::Profiler profiler;
  exe.internal().run({Datum(random_tensor(DType::Float32, {64, 64}, 3))}, nullptr, &profiler);
  std::vector<Interval> first = nodes_on(profiler.events(), "sim:0");
  std::vector<Interval> second = nodes_on(profiler.events(), "sim:1");
  ASSERT_EQ(first.size(), 1u) << exe.placement_summary();
  ASSERT_FALSE(second.empty()) << exe.placement_summary();
  // The Depend and what reads it come after s; the Add whose value it passes on is a partition
  // of its own, which runs while s does.
  int ordered_nodes = 0;
  for (const Interval& n : second) {
    if (n.name == dependent_node) continue;
    ++ordered_nodes;
    EXPECT_GE(n.start, first[0].end)
        << n.name << " on sim:1 started before " << square_node << " on sim:0 ended";
  }
  EXPECT_GE(ordered_nodes, 2) << "the Depend and the Relu after it";
}

TEST(SimTiming, NodesAndCopiesTakeAtLeastTheirModelledTime) {
  ScratchFile config(sim_devices_json(2, true, kSlowGflops));
  Executable exe = pipeline(config, 1);
  runtime::Profiler profiler;
  exe.internal().run({Datum(input_of(2))}, nullptr, &profiler);
  int matmuls = 0, copies = 0;
  for (const ProfileEvent& e : profiler.events()) {
    if (e.op == "MatMul") {
      ++matmuls;
      EXPECT_GE(e.duration_us, 4096 - 1) << e.name << " on " << e.device;
    }
    // Into sim:0, out of sim:1, between them: at least the 10 µs latency of one end.
    if (e.category == "Copy") {
      ++copies;
      EXPECT_GE(e.duration_us, 10 - 1) << e.name;
    }
  }
  EXPECT_EQ(matmuls, 4);
  EXPECT_EQ(copies, 3);
}

TEST(SimTiming, TheTimingFieldIsValidated) {
  ScratchFile model(R"([{"timing": "model"}, {"timing": "real"}, {}])");
  std::vector<sim::SimDeviceConfig> configs = sim::parse_sim_config(model.path());
  ASSERT_EQ(configs.size(), 3u);
  EXPECT_TRUE(configs[0].modelled_timing);
  EXPECT_FALSE(configs[1].modelled_timing);
  EXPECT_FALSE(configs[2].modelled_timing);
  for (const char* bad : {R"([{"timing": "fast"}])", R"([{"timing": true}])"}) {
    ScratchFile file(bad);
    expect_error([&] { sim::parse_sim_config(file.path()); }, ErrorCode::InvalidArgument,
                 "device 0 field 'timing' must be \"real\" or \"model\"");
  }
}

}  // namespace
}  // namespace switchyard::testing
