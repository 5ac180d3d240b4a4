// The placer end to end: the precedence rules (pins, capability, host-side shape chains, the
// preferred device, islands), acyclic partitions, copies, pipeline splits and option errors —
// each checked against what actually ran (profiler events, RunStats) and, bit for bit, against
// a CPU-only run of the same graph.
#include "placement/placer.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "backends/sim/sim_backend.h"
#include "compiler/compiler.h"
#include "ops/schema.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"
#include "tooling/report_format.h"

namespace switchyard::placement {

using tooling::format_json;
using tooling::format_text;
namespace {

using Devices = std::vector<std::shared_ptr<const backends::Backend>>;
using GraphFactory = std::function<std::unique_ptr<ir::Graph>()>;
using testing::random_tensor;

constexpr ir::DType kF32 = ir::DType::Float32;

// ---------------------------------------------------------------------------------------------
// Devices

// A simulated accelerator far faster than the host, with copies that cost next to nothing:
// placement keeps on it everything it supports, so a test sees the capability rules alone.
sim::SimDeviceConfig fast_sim(std::set<std::string> exclude_ops = {}) {
  sim::SimDeviceConfig c;
  c.exclude_ops = std::move(exclude_ops);
  c.gflops = 1e6;
  c.gbytes_per_s = 1e6;
  c.copy_latency_us = 0;
  c.copy_gbytes_per_s = 1e6;
  return c;
}

// Fast at arithmetic, but every copy costs `copy_latency_us`.
sim::SimDeviceConfig linked_sim(double copy_latency_us, std::set<std::string> exclude_ops = {}) {
  sim::SimDeviceConfig c = fast_sim(std::move(exclude_ops));
  c.gflops = 1e5;
  c.gbytes_per_s = 1e5;
  c.copy_latency_us = copy_latency_us;
  c.copy_gbytes_per_s = 100;
  return c;
}

sim::SimDeviceConfig with_only(sim::SimDeviceConfig c, std::set<std::string> ops) {
  c.all_ops = false;
  c.ops = std::move(ops);
  return c;
}

Devices cpu_and(const std::vector<sim::SimDeviceConfig>& sims) {
  Devices devices{std::make_shared<cpu::CpuBackend>()};
  for (auto& s : sim::create_sim_backends(sims)) devices.push_back(std::move(s));
  return devices;
}

Devices cpu_only() { return {std::make_shared<cpu::CpuBackend>()}; }

Policy prefer(const std::string& device, std::vector<std::string> pins = {}) {
  Policy p;
  p.devices = parse_device_list(device);
  for (const auto& pin : pins) p.pins.push_back(parse_pin(pin));
  return p;
}

std::shared_ptr<const compiler::CompiledModel> compile(const GraphFactory& make, Devices devices,
                                                       const Policy& policy) {
  compiler::CompileOptions options;
  options.num_threads = 2;
  options.poison_buffers = true;
  options.policy = policy;
  return compiler::compile(make(), std::move(devices), options);
}

// ---------------------------------------------------------------------------------------------
// Running and observing

struct Observed {
  std::vector<ir::Datum> outputs;
  runtime::RunStats stats;
  std::map<std::string, std::string> device_of;  ///< node → device, from profiler Node events
  std::map<std::string, int> times_run;          ///< node → Node events
  int copy_events = 0;
};

Observed run_observed(const compiler::CompiledModel& exe, const std::vector<ir::Tensor>& inputs) {
  runtime::Profiler profiler;
  Observed o;
  std::vector<ir::Datum> in(inputs.begin(), inputs.end());
  o.outputs = exe.run(std::move(in), &o.stats, &profiler);
  for (const runtime::ProfileEvent& e : profiler.events()) {
    if (e.category == "Node") {
      o.device_of[e.name] = e.device;
      ++o.times_run[e.name];
    }
    if (e.category == "Copy") ++o.copy_events;
  }
  // A node a backend fused into another's kernel (report: fused_into) ran with that kernel.
  for (const NodeDecision& d : exe.placement_report().nodes) {
    if (d.fused_into.empty() || !o.times_run.count(d.fused_into)) continue;
    o.times_run[d.node] = o.times_run[d.fused_into];
    o.device_of[d.node] = o.device_of[d.fused_into];
  }
  return o;
}

// Empty when `got` equals `want` byte for byte (dtype, shape and data).
std::string bitwise_difference(const ir::Tensor& got, const ir::Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return fmt::format("{}{} vs {}{}", ir::dtype_name(got.dtype()),
                       ir::shape_to_string(got.shape()), ir::dtype_name(want.dtype()),
                       ir::shape_to_string(want.shape()));
  if (got.nbytes() && std::memcmp(got.raw(), want.raw(), got.nbytes()) != 0)
    return "same shape, different bytes";
  return "";
}

// The outputs of a run equal those of a CPU-only run of a fresh copy of the graph, bit for bit.
void expect_bit_identical_to_cpu(const GraphFactory& make, const std::vector<ir::Tensor>& inputs,
                                 const std::vector<ir::Datum>& outputs) {
  auto reference = compile(make, cpu_only(), Policy{});
  std::vector<ir::Datum> in(inputs.begin(), inputs.end());
  std::vector<ir::Datum> want = reference->run(std::move(in));
  ASSERT_EQ(outputs.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(outputs[i].is_tensor() && want[i].is_tensor());
    EXPECT_EQ(bitwise_difference(outputs[i].tensor, want[i].tensor), "") << "output " << i;
  }
}

const NodeDecision& decision_of(const PlacementReport& report, const std::string& node) {
  for (const NodeDecision& d : report.nodes)
    if (d.node == node) return d;
  throw std::runtime_error("no node '" + node + "' in the placement report");
}

std::string cause_of(const PlacementReport& report, const std::string& node) {
  return cause_name(decision_of(report, node).cause);
}

std::string device_of(const PlacementReport& report, const std::string& node) {
  return decision_of(report, node).device;
}

// Every node of the report ran exactly once, on the device the report gives it.
void expect_trace_matches_report(const PlacementReport& report, const Observed& observed) {
  for (const NodeDecision& d : report.nodes) {
    EXPECT_EQ(observed.times_run.count(d.node) ? observed.times_run.at(d.node) : 0, 1) << d.node;
    if (observed.device_of.count(d.node)) {
      EXPECT_EQ(observed.device_of.at(d.node), d.device) << d.node << " (" << d.op << ")";
    }
  }
  EXPECT_EQ(observed.times_run.size(), report.nodes.size());
}

// A JSON file that is removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sy_placer_XXXXXX.json").string();
    int fd = ::mkstemps(pattern.data(), 5);
    if (fd < 0) throw std::runtime_error("mkstemps failed");
    ::close(fd);
    path_ = pattern;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// ---------------------------------------------------------------------------------------------
// Graphs

ir::Tensor weights(int64_t rows, int64_t cols, uint64_t seed) {
  // Small enough that a chain of MatMuls neither explodes nor vanishes.
  double bound = 1.5 / std::sqrt(static_cast<double>(rows));
  return random_tensor(kF32, {rows, cols}, seed, -bound, bound);
}

// X float[shape] → ops[0] → ops[1] → … → Y; node i is named names[i].
GraphFactory unary_chain(std::vector<std::string> ops, std::vector<std::string> names,
                         std::vector<int64_t> shape) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("chain");
    ir::Value* v = g->add_input("X", ir::Type::tensor(kF32, ir::make_shape(shape)));
    for (size_t i = 0; i < ops.size(); ++i)
      v = g->add_node(ops[i], names[i], {v}, {names[i] + "_out"})->output(0);
    g->add_output(v);
    return g;
  };
}

// MatMul layers on X float[N,512] (N symbolic), one node of each placement cause when sim:0
// has no Neg/Abs, copies cost a few µs and `pinned_relu` is pinned to the cpu:
//   mm1 relu1 mm2 relu2 mm3      preferred  (an island worth its copies)
//   neg1, abs1                   unsupported
//   lonely_sigmoid               island     (between two cpu nodes; copies cost more)
//   pinned_relu                  pinned
//   mm4 relu4 mm5 relu5 mm6      preferred
//   shape_of take_n new_dims     host_shape (Shape → Gather → Concat)
//   reshape                      preferred
GraphFactory mixed_graph() {
  return [] {
    auto g = std::make_unique<ir::Graph>("mixed");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("N"), 512}));
    auto matmul = [&](ir::Value* in, int k) {
      ir::Value* w = g->add_constant("W" + std::to_string(k), weights(512, 512, 10 + k));
      return g
          ->add_node("MatMul", "mm" + std::to_string(k), {in, w},
                     {"mm" + std::to_string(k) + "_out"})
          ->output(0);
    };
    auto unary = [&](const std::string& op, const std::string& name, ir::Value* in) {
      return g->add_node(op, name, {in}, {name + "_out"})->output(0);
    };
    ir::Value* v = matmul(x, 1);
    v = matmul(unary("Relu", "relu1", v), 2);
    v = matmul(unary("Relu", "relu2", v), 3);
    v = unary("Neg", "neg1", v);
    v = unary("Sigmoid", "lonely_sigmoid", v);
    v = unary("Abs", "abs1", v);
    v = unary("Relu", "pinned_relu", v);
    v = matmul(v, 4);
    v = matmul(unary("Relu", "relu4", v), 5);
    ir::Value* relu5 = unary("Relu", "relu5", v);
    ir::Value* mm6 = matmul(relu5, 6);
    ir::Value* shape = unary("Shape", "shape_of", relu5);
    ir::Value* take =
        g->add_node("Gather", "take_n",
                    {shape, g->add_constant("zero", testing::int64_tensor({0}))}, {"take_n_out"})
            ->output(0);
    ir::Node* concat = g->add_node("Concat", "new_dims",
                                   {take, g->add_constant("tail", testing::int64_tensor({16, 32}))},
                                   {"new_dims_out"});
    concat->set_attribute(ir::Attribute::make_int("axis", 0));
    g->add_output(g->add_node("Reshape", "reshape", {mm6, concat->output(0)}, {"Y"})->output(0));
    return g;
  };
}

Devices mixed_devices() { return cpu_and({linked_sim(1.0, {"Neg", "Abs"})}); }
Policy mixed_policy() { return prefer("sim:0", {"pinned_*=cpu"}); }

// X float[N,256] → relu → Shape → Gather → Concat → Reshape(relu, ...) → Y[N,16,16].
GraphFactory shape_chain_graph() {
  return [] {
    auto g = std::make_unique<ir::Graph>("shape_chain");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("N"), 256}));
    ir::Value* r = g->add_node("Relu", "relu", {x}, {"R"})->output(0);
    ir::Value* s = g->add_node("Shape", "shape_of", {r}, {"S"})->output(0);
    ir::Value* n = g->add_node("Gather", "take_n",
                               {s, g->add_constant("zero", testing::int64_tensor({0}))}, {"n"})
                       ->output(0);
    ir::Node* c =
        g->add_node("Concat", "new_dims",
                    {n, g->add_constant("tail", testing::int64_tensor({16, 16}))}, {"dims"});
    c->set_attribute(ir::Attribute::make_int("axis", 0));
    g->add_output(g->add_node("Reshape", "reshape", {r, c->output(0)}, {"Y"})->output(0));
    return g;
  };
}

// A → (B, C) → D: A, C and D on sim:0, B (Neg) only on the cpu. Grouping all sim nodes into one
// partition would need B's result before D and give B A's result: a cycle.
GraphFactory diamond_graph() {
  return [] {
    auto g = std::make_unique<ir::Graph>("diamond");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::make_shape({32, 256})));
    ir::Value* a = g->add_node("Relu", "a_relu", {x}, {"A"})->output(0);
    ir::Value* b = g->add_node("Neg", "b_neg", {a}, {"B"})->output(0);
    ir::Value* c = g->add_node("Sigmoid", "c_sigmoid", {a}, {"C"})->output(0);
    g->add_output(g->add_node("Add", "d_add", {b, c}, {"D"})->output(0));
    return g;
  };
}

// s1 = Relu(X) on sim:0 is read by two cpu partitions and is itself a graph output: one copy
// to the cpu serves all three.
GraphFactory fan_out_graph() {
  return [] {
    auto g = std::make_unique<ir::Graph>("fan_out");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::make_shape({16, 128})));
    ir::Value* s1 = g->add_node("Relu", "s1", {x}, {"S1"})->output(0);
    ir::Value* n1 = g->add_node("Neg", "n1", {s1}, {"N1"})->output(0);
    ir::Value* s2 = g->add_node("Sigmoid", "s2", {n1}, {"S2"})->output(0);
    ir::Value* n2 = g->add_node("Sub", "n2", {s2, s1}, {"N2"})->output(0);
    g->add_output(n2);
    g->add_output(s1);
    return g;
  };
}

// `layers` × (MatMul [64,256]·[256,256] → Relu): 2 × layers nodes, 256 KiB of weights a layer.
GraphFactory dense_chain(int layers) {
  return [layers] {
    auto g = std::make_unique<ir::Graph>("dense_chain");
    ir::Value* v = g->add_input("X", ir::Type::tensor(kF32, ir::make_shape({64, 256})));
    for (int i = 0; i < layers; ++i) {
      std::string k = std::to_string(i);
      ir::Value* w = g->add_constant("W" + k, weights(256, 256, 100 + static_cast<uint64_t>(i)));
      v = g->add_node("MatMul", "mm" + k, {v, w}, {"mm" + k + "_out"})->output(0);
      v = g->add_node("Relu", "relu" + k, {v}, {"relu" + k + "_out"})->output(0);
    }
    g->add_output(v);
    return g;
  };
}

// A seeded random DAG of unary and binary elementwise ops over two inputs float[8,64]; every
// value nobody reads is a graph output.
GraphFactory random_dag(uint64_t seed, int num_nodes) {
  return [=] {
    std::mt19937_64 rng(seed);
    const char* unary[] = {"Relu", "Neg", "Sigmoid", "Abs", "Tanh"};
    const char* binary[] = {"Add", "Mul", "Sub", "Max"};
    auto g = std::make_unique<ir::Graph>("dag");
    std::vector<ir::Value*> pool;
    for (const char* name : {"X0", "X1"})
      pool.push_back(g->add_input(name, ir::Type::tensor(kF32, ir::make_shape({8, 64}))));
    for (int i = 0; i < num_nodes; ++i) {
      std::string name = "n" + std::to_string(i);
      // Prefer recent values so the graph is deep, with some long edges.
      auto pick = [&] {
        size_t back = rng() % std::min<size_t>(pool.size(), rng() % 4 == 0 ? pool.size() : 4);
        return pool[pool.size() - 1 - back];
      };
      ir::Node* n = rng() % 2 == 0
                        ? g->add_node(unary[rng() % 5], name, {pick()}, {name + "_out"})
                        : g->add_node(binary[rng() % 4], name, {pick(), pick()}, {name + "_out"});
      pool.push_back(n->output(0));
    }
    for (ir::Value* v : pool)
      if (v->uses().empty() && !v->is_graph_input()) g->add_output(v);
    return g;
  };
}

// The graph of `make` with types inferred, ready for placement::place.
std::unique_ptr<ir::Graph> typed(const GraphFactory& make) {
  auto g = make();
  ops::infer_types(*g);
  return g;
}

std::vector<const backends::Backend*> raw(const Devices& devices) {
  std::vector<const backends::Backend*> out;
  for (const auto& d : devices) out.push_back(d.get());
  return out;
}

// ---------------------------------------------------------------------------------------------
// 1. Strict mode

TEST(PlacerStrict, NamesExactlyTheNodesTheTargetCannotRun) {
  GraphFactory make = unary_chain(
      {"Relu", "Neg", "Sigmoid", "Abs", "Exp", "Tanh", "Relu"},
      {"keep_relu", "bad_neg", "keep_sigmoid", "bad_abs", "keep_exp", "bad_tanh", "keep_last"},
      {4, 32});
  Devices devices = cpu_and({with_only(fast_sim(), {"Relu", "Sigmoid", "Exp"})});
  Policy policy = prefer("sim:0");
  policy.fallback = Fallback::Strict;
  try {
    compile(make, devices, policy);
    FAIL() << "strict placement accepted nodes sim:0 cannot run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::PlacementFailed) << e.what();
    std::istringstream lines(e.message());
    std::vector<std::string> node_lines;
    for (std::string line; std::getline(lines, line);)
      if (line.find("node '") != std::string::npos) node_lines.push_back(line);
    ASSERT_EQ(node_lines.size(), 3u) << e.message();
    const std::pair<const char*, const char*> expected[] = {
        {"bad_neg", "Neg"}, {"bad_abs", "Abs"}, {"bad_tanh", "Tanh"}};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_NE(node_lines[i].find(fmt::format("'{}'", expected[i].first)), std::string::npos)
          << node_lines[i];
      EXPECT_NE(node_lines[i].find(expected[i].second), std::string::npos) << node_lines[i];
      EXPECT_NE(node_lines[i].find("sim:0"), std::string::npos) << node_lines[i];
      EXPECT_NE(node_lines[i].find("not supported"), std::string::npos) << node_lines[i];
    }
    for (const char* fine : {"keep_relu", "keep_sigmoid", "keep_exp", "keep_last"})
      EXPECT_EQ(e.message().find(fine), std::string::npos) << fine << " listed:\n" << e.message();
  }

  // The same graph under fallback=allow runs, the three nodes on the cpu and saying why.
  auto exe = compile(make, devices, prefer("sim:0"));
  for (const char* bad : {"bad_neg", "bad_abs", "bad_tanh"}) {
    EXPECT_EQ(device_of(exe->placement_report(), bad), "cpu") << bad;
    EXPECT_EQ(cause_of(exe->placement_report(), bad), "unsupported") << bad;
  }
}

// ---------------------------------------------------------------------------------------------
// 2. The preferred device

TEST(PlacerPreferred, EverySupportedNodeRunsThereUnlessPinnedHostShapeOrIsland) {
  Devices devices = mixed_devices();
  auto exe = compile(mixed_graph(), devices, mixed_policy());
  const PlacementReport& report = exe->placement_report();
  ir::Tensor x = random_tensor(kF32, {3, 512}, 7);
  Observed observed = run_observed(*exe, {x});
  expect_trace_matches_report(report, observed);

  const backends::Backend& sim0 = *devices[1];
  std::set<std::string> causes;
  for (const auto& node : exe->graph().nodes()) {
    const NodeDecision& d = decision_of(report, node->name());
    causes.insert(cause_name(d.cause));
    std::string ran_on =
        observed.device_of.count(node->name()) ? observed.device_of.at(node->name()) : "";
    if (!sim0.supports(*node).ok) {
      EXPECT_EQ(ran_on, "cpu") << node->name();
      continue;
    }
    if (d.cause == Cause::Pinned || d.cause == Cause::HostShape || d.cause == Cause::Island)
      continue;
    EXPECT_EQ(ran_on, "sim:0") << node->name() << " (" << node->op_type() << ") ran elsewhere, "
                               << "cause " << cause_name(d.cause) << ": " << d.reason;
  }
  // The graph exercises every rule, so the loop above checked each exception.
  EXPECT_EQ(causes,
            (std::set<std::string>{"pinned", "unsupported", "host_shape", "preferred", "island"}));
  EXPECT_EQ(cause_of(report, "lonely_sigmoid"), "island");
  EXPECT_EQ(cause_of(report, "pinned_relu"), "pinned");
  EXPECT_EQ(cause_of(report, "take_n"), "host_shape");
  EXPECT_EQ(device_of(report, "mm5"), "sim:0");
  expect_bit_identical_to_cpu(mixed_graph(), {x}, observed.outputs);
}

// ---------------------------------------------------------------------------------------------
// 3. Pins

TEST(PlacerPins, PinsWinOverThePreferredDeviceAndTheFirstMatchingPinWins) {
  GraphFactory make = unary_chain({"Sigmoid", "Relu", "Relu", "Tanh"},
                                  {"sig_first", "relu_a", "relu_b", "tanh_last"}, {16, 64});
  Devices devices = cpu_and({fast_sim()});
  ir::Tensor x = random_tensor(kF32, {16, 64}, 3);

  // A node-name pin to the cpu for a node sim:0 runs.
  {
    auto exe = compile(make, devices, prefer("sim:0", {"relu_a=cpu"}));
    Observed o = run_observed(*exe, {x});
    EXPECT_EQ(o.device_of.at("relu_a"), "cpu");
    EXPECT_EQ(cause_of(exe->placement_report(), "relu_a"), "pinned");
    EXPECT_NE(decision_of(exe->placement_report(), "relu_a").reason.find("--pin relu_a=cpu"),
              std::string::npos);
    for (const char* other : {"sig_first", "relu_b", "tanh_last"})
      EXPECT_EQ(o.device_of.at(other), "sim:0") << other;
    expect_bit_identical_to_cpu(make, {x}, o.outputs);
  }
  // An op-type pin places every node of that type.
  {
    auto exe = compile(make, devices, prefer("sim:0", {"op:Relu=cpu"}));
    Observed o = run_observed(*exe, {x});
    EXPECT_EQ(o.device_of.at("relu_a"), "cpu");
    EXPECT_EQ(o.device_of.at("relu_b"), "cpu");
    EXPECT_EQ(cause_of(exe->placement_report(), "relu_b"), "pinned");
    EXPECT_EQ(o.device_of.at("sig_first"), "sim:0");
    EXPECT_EQ(o.device_of.at("tanh_last"), "sim:0");
  }
  // The first matching pin wins, in either order.
  {
    auto exe = compile(make, devices, prefer("sim:0", {"relu_*=cpu", "relu_a=sim:0"}));
    Observed o = run_observed(*exe, {x});
    EXPECT_EQ(o.device_of.at("relu_a"), "cpu");
    EXPECT_EQ(o.device_of.at("relu_b"), "cpu");
  }
  {
    auto exe = compile(make, devices, prefer("cpu", {"relu_a=sim:0", "relu_*=cpu"}));
    Observed o = run_observed(*exe, {x});
    EXPECT_EQ(o.device_of.at("relu_a"), "sim:0");
    EXPECT_EQ(cause_of(exe->placement_report(), "relu_a"), "pinned");
    EXPECT_EQ(o.device_of.at("relu_b"), "cpu");
    EXPECT_EQ(o.device_of.at("sig_first"), "cpu");
    expect_bit_identical_to_cpu(make, {x}, o.outputs);
  }
}

TEST(PlacerPins, PinsWinOverIslandMergingAndHostShape) {
  // Copies cost a millisecond: unpinned, the lone Relu between two cpu nodes would move back.
  GraphFactory chain =
      unary_chain({"Neg", "Relu", "Abs"}, {"neg_in", "relu_mid", "abs_out"}, {16, 64});
  Devices slow_link = cpu_and({linked_sim(1000.0, {"Neg", "Abs"})});
  ir::Tensor x = random_tensor(kF32, {16, 64}, 4);
  {
    auto exe = compile(chain, slow_link, prefer("sim:0"));
    EXPECT_EQ(cause_of(exe->placement_report(), "relu_mid"), "island");
  }
  auto exe = compile(chain, slow_link, prefer("sim:0", {"relu_mid=sim:0"}));
  Observed o = run_observed(*exe, {x});
  EXPECT_EQ(o.device_of.at("relu_mid"), "sim:0");
  EXPECT_EQ(cause_of(exe->placement_report(), "relu_mid"), "pinned");
  EXPECT_EQ(o.stats.copies, 2);
  expect_bit_identical_to_cpu(chain, {x}, o.outputs);

  // A Shape pinned to sim:0 stays there instead of moving to the host.
  auto shape_exe =
      compile(shape_chain_graph(), cpu_and({fast_sim()}), prefer("sim:0", {"op:Shape=sim:0"}));
  ir::Tensor y = random_tensor(kF32, {5, 256}, 5);
  Observed so = run_observed(*shape_exe, {y});
  EXPECT_EQ(so.device_of.at("shape_of"), "sim:0");
  EXPECT_EQ(cause_of(shape_exe->placement_report(), "shape_of"), "pinned");
  expect_bit_identical_to_cpu(shape_chain_graph(), {y}, so.outputs);
}

TEST(PlacerPins, AShapeOnTheAcceleratorCanMeasureAHostValue) {
  // With the cpu preferred, a Shape pinned to sim:0 measures the cpu's relu output.
  auto exe = compile(shape_chain_graph(), cpu_and({fast_sim()}), prefer("cpu", {"op:Shape=sim:0"}));
  ir::Tensor x = random_tensor(kF32, {3, 256}, 6);
  Observed o = run_observed(*exe, {x});
  EXPECT_EQ(o.device_of.at("shape_of"), "sim:0");
  EXPECT_EQ(o.device_of.at("relu"), "cpu");
  EXPECT_EQ(static_cast<size_t>(o.stats.copies), exe->placement_report().copies.size());
  expect_bit_identical_to_cpu(shape_chain_graph(), {x}, o.outputs);

  // Unpinned: the Shape of an input of unknown rank is no small static shape, so it stays on
  // the preferred sim:0 and measures the graph input, which lives on the host.
  GraphFactory measure = [] {
    auto g = std::make_unique<ir::Graph>("measure");
    ir::Value* in = g->add_input("X", ir::Type::tensor(kF32));
    g->add_output(g->add_node("Shape", "shape_of", {in}, {"S"})->output(0));
    return g;
  };
  auto unpinned = compile(measure, cpu_and({fast_sim()}), prefer("sim:0"));
  ASSERT_EQ(cause_of(unpinned->placement_report(), "shape_of"), "preferred");
  Observed m = run_observed(*unpinned, {x});
  EXPECT_EQ(m.device_of.at("shape_of"), "sim:0");
  EXPECT_EQ(static_cast<size_t>(m.stats.copies), unpinned->placement_report().copies.size());
  expect_bit_identical_to_cpu(measure, {x}, m.outputs);
}

TEST(PlacerPins, APinOntoADeviceThatCannotRunTheNodeFailsEvenUnderFallbackAllow) {
  GraphFactory make = unary_chain({"Relu", "Neg", "Relu"}, {"r1", "neg_x", "r2"}, {4, 8});
  Devices devices = cpu_and({fast_sim({"Neg"})});
  for (const char* pin : {"op:Neg=sim:0", "neg_*=sim:0"}) {
    Policy policy = prefer("sim:0", {pin});
    ASSERT_EQ(policy.fallback, Fallback::Allow);
    try {
      compile(make, devices, policy);
      FAIL() << "--pin " << pin << " onto a device without Neg was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::PlacementFailed) << e.what();
      EXPECT_NE(e.message().find(std::string("--pin ") + pin), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("'neg_x'"), std::string::npos) << e.message();
      EXPECT_NE(e.message().find("Neg"), std::string::npos) << e.message();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Islands

TEST(PlacerIslands, AlternatingSupportMergesBackWhenCopiesCostMoreAndStaysWhenCheap) {
  // sim:0 runs Relu only: Relu Neg Relu Neg Relu Neg Relu, four one-node sim islands.
  std::vector<std::string> ops, names;
  for (int i = 0; i < 7; ++i) {
    ops.push_back(i % 2 == 0 ? "Relu" : "Neg");
    names.push_back((i % 2 == 0 ? "a" : "b") + std::to_string(i));
  }
  GraphFactory make = unary_chain(ops, names, {64, 1024});
  ir::Tensor x = random_tensor(kF32, {64, 1024}, 8);

  // Expensive copies: every island moves to the cpu, and the report holds the estimates.
  {
    auto exe = compile(make, cpu_and({with_only(linked_sim(1000.0), {"Relu"})}), prefer("sim:0"));
    const PlacementReport& report = exe->placement_report();
    for (const NodeDecision& d : report.nodes) {
      EXPECT_EQ(d.device, "cpu") << d.node;
      if (d.op != "Relu") continue;
      EXPECT_EQ(d.cause, Cause::Island) << d.node;
      EXPECT_GE(d.copy_cost_us, 2000.0) << d.node << ": an input and an output copy";
      EXPECT_GT(d.saving_us, 0.0) << d.node;
      EXPECT_GT(d.copy_cost_us, d.saving_us) << d.node;
    }
    EXPECT_TRUE(report.copies.empty());
    Observed o = run_observed(*exe, {x});
    EXPECT_EQ(o.stats.copies, 0);
    for (const auto& [node, device] : o.device_of) EXPECT_EQ(device, "cpu") << node;
    expect_bit_identical_to_cpu(make, {x}, o.outputs);
  }
  // Cheap copies and a fast device: the islands stay, each paying for two copies.
  {
    auto exe = compile(make, cpu_and({with_only(fast_sim(), {"Relu"})}), prefer("sim:0"));
    const PlacementReport& report = exe->placement_report();
    for (const NodeDecision& d : report.nodes) {
      EXPECT_EQ(d.device, d.op == "Relu" ? "sim:0" : "cpu") << d.node;
      EXPECT_EQ(cause_name(d.cause), std::string(d.op == "Relu" ? "preferred" : "unsupported"));
    }
    EXPECT_EQ(report.partitions.size(), 7u);
    EXPECT_EQ(report.copies.size(), 8u);
    Observed o = run_observed(*exe, {x});
    EXPECT_EQ(o.stats.copies, 8);
    for (const auto& [node, device] : o.device_of)
      EXPECT_EQ(device, node[0] == 'a' ? "sim:0" : "cpu") << node;
    expect_bit_identical_to_cpu(make, {x}, o.outputs);
  }
}

TEST(PlacerIslands, MinPartitionNodesMovesSmallIslandsEvenWhenCopiesAreCheap) {
  GraphFactory make = unary_chain({"Relu", "Neg", "Relu", "Relu", "Neg"},
                                  {"one", "cut1", "two_a", "two_b", "cut2"}, {16, 64});
  Policy policy = prefer("sim:0");
  policy.min_partition_nodes = 2;
  auto exe = compile(make, cpu_and({fast_sim({"Neg"})}), policy);
  const PlacementReport& report = exe->placement_report();
  EXPECT_EQ(device_of(report, "one"), "cpu");
  EXPECT_EQ(cause_of(report, "one"), "island");
  EXPECT_NE(decision_of(report, "one").reason.find("--min-partition-nodes"), std::string::npos);
  EXPECT_EQ(device_of(report, "two_a"), "sim:0");
  EXPECT_EQ(device_of(report, "two_b"), "sim:0");
}

// ---------------------------------------------------------------------------------------------
// 5. Acyclic partitions

// Every partition reads only graph inputs, constants and values of earlier partitions.
void expect_partitions_acyclic(const Placement& placement) {
  std::map<const ir::Value*, int> made_by;
  for (const backends::Partition& p : placement.partitions)
    for (const ir::Node* n : p.nodes)
      for (const ir::Value* v : n->outputs()) made_by[v] = p.index;
  for (const backends::Partition& p : placement.partitions) {
    for (const ir::Value* v : p.inputs) {
      if (!made_by.count(v)) {
        EXPECT_TRUE(v->is_graph_input()) << v->name();
        continue;
      }
      EXPECT_LT(made_by.at(v), p.index) << "partition " << p.index << " (" << p.device << ") reads "
                                        << v->name() << " from partition " << made_by.at(v);
    }
    for (const ir::Node* n : p.nodes)
      for (const ir::Value* v : n->inputs())
        if (v && made_by.count(v)) {
          EXPECT_LE(made_by.at(v), p.index) << n->name() << " reads " << v->name();
        }
  }
}

TEST(PlacerPartitions, ADiamondThroughTheCpuGivesAcyclicPartitions) {
  Devices devices = cpu_and({fast_sim({"Neg"})});
  auto graph = typed(diamond_graph());
  Placement placement = place(*graph, raw(devices), prefer("sim:0"));
  expect_partitions_acyclic(placement);
  const PlacementReport& report = placement.report;
  EXPECT_EQ(device_of(report, "a_relu"), "sim:0");
  EXPECT_EQ(device_of(report, "c_sigmoid"), "sim:0");
  EXPECT_EQ(device_of(report, "d_add"), "sim:0");
  EXPECT_EQ(device_of(report, "b_neg"), "cpu");
  // d_add needs b_neg's result, which needs a_relu's: they cannot share a partition.
  EXPECT_LT(decision_of(report, "a_relu").partition, decision_of(report, "b_neg").partition);
  EXPECT_LT(decision_of(report, "b_neg").partition, decision_of(report, "d_add").partition);
  for (const EdgeInfo& e : report.edges)
    EXPECT_LE(decision_of(report, e.from_node).partition, decision_of(report, e.to_node).partition)
        << e.from_node << " -> " << e.to_node;

  auto exe = compile(diamond_graph(), devices, prefer("sim:0"));
  ir::Tensor x = random_tensor(kF32, {32, 256}, 9);
  Observed o = run_observed(*exe, {x});
  expect_trace_matches_report(exe->placement_report(), o);
  expect_bit_identical_to_cpu(diamond_graph(), {x}, o.outputs);
}

// A node that may run early or late joins its device's later partition: a_relu (sim:0) reads
// only the graph input, beside the cpu's b_neg; d_add (sim:0) needs both. With levels from the
// earliest start, a_relu would open a sim:0 partition of its own before the cpu's; placed as
// late as its reader allows, sim:0 runs one partition after the cpu's.
TEST(PlacerPartitions, ANodeThatCanWaitJoinsItsDevicesLaterPartition) {
  GraphFactory make = [] {
    auto g = std::make_unique<ir::Graph>("wait");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::make_shape({32, 256})));
    ir::Value* a = g->add_node("Relu", "a_relu", {x}, {"A"})->output(0);
    ir::Value* b = g->add_node("Neg", "b_neg", {x}, {"B"})->output(0);
    g->add_output(g->add_node("Add", "d_add", {a, b}, {"D"})->output(0));
    return g;
  };
  Devices devices = cpu_and({fast_sim({"Neg"})});
  auto graph = typed(make);
  Placement placement = place(*graph, raw(devices), prefer("sim:0"));
  expect_partitions_acyclic(placement);
  const PlacementReport& report = placement.report;
  ASSERT_EQ(device_of(report, "a_relu"), "sim:0");
  ASSERT_EQ(device_of(report, "b_neg"), "cpu");
  EXPECT_EQ(decision_of(report, "a_relu").partition, decision_of(report, "d_add").partition);
  EXPECT_LT(decision_of(report, "b_neg").partition, decision_of(report, "d_add").partition);
  EXPECT_EQ(report.partitions.size(), 2u);

  auto exe = compile(make, devices, prefer("sim:0"));
  ir::Tensor x = random_tensor(kF32, {32, 256}, 19);
  Observed o = run_observed(*exe, {x});
  expect_trace_matches_report(exe->placement_report(), o);
  expect_bit_identical_to_cpu(make, {x}, o.outputs);
}

// ...but never into a level where its device has no group yet: c_neg (cpu, a graph output that
// nothing reads) could wait until after sim:0's partition, which would give the cpu a second
// partition; it stays with a_neg.
TEST(PlacerPartitions, WaitingNeverOpensAPartition) {
  GraphFactory make = [] {
    auto g = std::make_unique<ir::Graph>("no_new");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::make_shape({32, 256})));
    ir::Value* a = g->add_node("Neg", "a_neg", {x}, {"A"})->output(0);
    g->add_output(g->add_node("Relu", "b_relu", {a}, {"B"})->output(0));
    g->add_output(g->add_node("Neg", "c_neg", {x}, {"C"})->output(0));
    return g;
  };
  Devices devices = cpu_and({fast_sim({"Neg"})});
  auto graph = typed(make);
  Placement placement = place(*graph, raw(devices), prefer("sim:0"));
  expect_partitions_acyclic(placement);
  const PlacementReport& report = placement.report;
  ASSERT_EQ(device_of(report, "b_relu"), "sim:0");
  EXPECT_EQ(decision_of(report, "a_neg").partition, decision_of(report, "c_neg").partition);
  EXPECT_EQ(report.partitions.size(), 2u);
  auto exe = compile(make, devices, prefer("sim:0"));
  ir::Tensor x = random_tensor(kF32, {32, 256}, 21);
  Observed o = run_observed(*exe, {x});
  expect_bit_identical_to_cpu(make, {x}, o.outputs);
}

TEST(PlacerPartitions, RandomDagsWithRandomSupportGiveAcyclicPartitionsAndCpuResults) {
  const std::vector<std::string> all_ops = {"Relu", "Neg", "Sigmoid", "Abs", "Tanh",
                                            "Add",  "Mul", "Sub",     "Max"};
  ir::Tensor x0 = random_tensor(kF32, {8, 64}, 21);
  ir::Tensor x1 = random_tensor(kF32, {8, 64}, 22);
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed * 977);
    std::set<std::string> supported;
    for (const std::string& op : all_ops)
      if (rng() % 2) supported.insert(op);
    Devices devices = cpu_and({with_only(fast_sim(), supported)});
    GraphFactory make = random_dag(seed, 40);
    auto graph = typed(make);
    Placement placement = place(*graph, raw(devices), prefer("sim:0"));
    expect_partitions_acyclic(placement);
    auto exe = compile(make, devices, prefer("sim:0"));
    Observed o = run_observed(*exe, {x0, x1});
    expect_trace_matches_report(exe->placement_report(), o);
    EXPECT_EQ(static_cast<size_t>(o.stats.copies), exe->placement_report().copies.size());
    expect_bit_identical_to_cpu(make, {x0, x1}, o.outputs);
  }
}

// ---------------------------------------------------------------------------------------------
// 6. Determinism

TEST(PlacerDeterminism, PlacingTheSameGraphTwiceGivesTheSameReport) {
  Devices devices = mixed_devices();
  auto graph = typed(mixed_graph());
  std::string first = format_json(place(*graph, raw(devices), mixed_policy()).report);
  std::string again = format_json(place(*graph, raw(devices), mixed_policy()).report);
  EXPECT_EQ(first, again);
  // A separately built copy of the graph, and fresh device objects, give the same placement.
  auto rebuilt = typed(mixed_graph());
  EXPECT_EQ(format_json(place(*rebuilt, raw(mixed_devices()), mixed_policy()).report), first);
  // The report holds decisions of every kind, so equality compares something.
  for (const char* cause : {"\"island\"", "\"pinned\"", "\"host_shape\"", "\"unsupported\""})
    EXPECT_NE(first.find(cause), std::string::npos) << cause;

  auto exe1 = compile(mixed_graph(), mixed_devices(), mixed_policy());
  auto exe2 = compile(mixed_graph(), mixed_devices(), mixed_policy());
  EXPECT_EQ(format_json(exe1->placement_report()), format_json(exe2->placement_report()));
}

// Three inputs of different sizes concatenated on sim:0: a one-node island with four crossing
// values, whose copy costs (summed in the report) would round differently in another order.
GraphFactory concat_island_graph() {
  return [] {
    auto g = std::make_unique<ir::Graph>("concat_island");
    std::vector<ir::Value*> parts;
    for (int64_t width : {1, 2, 3})
      parts.push_back(g->add_input("X" + std::to_string(width),
                                   ir::Type::tensor(kF32, ir::make_shape({1, width}))));
    ir::Node* concat = g->add_node("Concat", "join", parts, {"Y"});
    concat->set_attribute(ir::Attribute::make_int("axis", 1));
    g->add_output(concat->output(0));
    return g;
  };
}

// Frees a few blocks of a value's size so that glibc's allocator, which hands recently freed
// blocks back last in, first out, gives the next values ascending or descending addresses.
void order_next_value_addresses(bool ascending) {
  std::vector<void*> blocks;
  for (int i = 0; i < 7; ++i) blocks.push_back(::operator new(sizeof(ir::Value)));
  std::sort(blocks.begin(), blocks.end());
  if (ascending) std::reverse(blocks.begin(), blocks.end());
  for (void* b : blocks) ::operator delete(b);
}

TEST(PlacerDeterminism, TheReportDoesNotDependOnWhereTheGraphLivesInMemory) {
  Devices devices = cpu_and({sim::SimDeviceConfig{}});
  order_next_value_addresses(true);
  auto first = typed(concat_island_graph());
  order_next_value_addresses(false);
  auto second = typed(concat_island_graph());
  Placement placed = place(*first, raw(devices), prefer("sim:0"));
  ASSERT_EQ(cause_of(placed.report, "join"), "island");
  EXPECT_EQ(format_json(place(*second, raw(devices), prefer("sim:0")).report),
            format_json(placed.report));
}

// ---------------------------------------------------------------------------------------------
// 7. Copies

TEST(PlacerCopies, ReportedCopiesEqualTheCopiesEveryRunMakes) {
  struct Case {
    const char* name;
    GraphFactory make;
    Devices devices;
    Policy policy;
    std::vector<std::vector<ir::Tensor>> inputs;  // one run each
  };
  auto alternating =
      unary_chain({"Relu", "Neg", "Relu", "Neg", "Relu"}, {"a0", "b1", "a2", "b3", "a4"}, {32, 64});
  Policy split = prefer("sim:0,sim:1");
  split.split = SplitMode::Pipeline;
  std::vector<Case> cases = {
      {"mixed",
       mixed_graph(),
       mixed_devices(),
       mixed_policy(),
       {{random_tensor(kF32, {1, 512}, 1)},
        {random_tensor(kF32, {6, 512}, 2)},
        {random_tensor(kF32, {6, 512}, 3)}}},
      {"alternating",
       alternating,
       cpu_and({with_only(fast_sim(), {"Relu"})}),
       prefer("sim:0"),
       {{random_tensor(kF32, {32, 64}, 4)}, {random_tensor(kF32, {32, 64}, 5)}}},
      {"diamond",
       diamond_graph(),
       cpu_and({fast_sim({"Neg"})}),
       prefer("sim:0"),
       {{random_tensor(kF32, {32, 256}, 6)}, {random_tensor(kF32, {32, 256}, 7)}}},
      {"fan_out",
       fan_out_graph(),
       cpu_and({fast_sim({"Neg", "Sub"})}),
       prefer("sim:0"),
       {{random_tensor(kF32, {16, 128}, 8)}, {random_tensor(kF32, {16, 128}, 9)}}},
      {"shape_chain",
       shape_chain_graph(),
       cpu_and({fast_sim()}),
       prefer("sim:0"),
       {{random_tensor(kF32, {2, 256}, 10)}, {random_tensor(kF32, {7, 256}, 11)}}},
      {"split",
       dense_chain(6),
       cpu_and({fast_sim(), fast_sim()}),
       split,
       {{random_tensor(kF32, {64, 256}, 12)}, {random_tensor(kF32, {64, 256}, 13)}}},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto exe = compile(c.make, c.devices, c.policy);
    const PlacementReport& report = exe->placement_report();
    EXPECT_FALSE(report.copies.empty()) << "a graph without copies tests nothing here";
    bool static_bytes = true;
    int64_t reported_bytes = 0;
    for (const CopyInfo& copy : report.copies) {
      static_bytes = static_bytes && copy.bytes >= 0;
      reported_bytes += copy.bytes;
    }
    for (const auto& inputs : c.inputs) {
      Observed o = run_observed(*exe, inputs);
      EXPECT_EQ(static_cast<size_t>(o.stats.copies), report.copies.size());
      EXPECT_EQ(o.copy_events, o.stats.copies);
      if (static_bytes) {
        EXPECT_EQ(o.stats.copied_bytes, static_cast<size_t>(reported_bytes));
      }
      expect_bit_identical_to_cpu(c.make, inputs, o.outputs);
    }
  }
}

TEST(PlacerCopies, AValueIsCopiedToADeviceOnceHoweverManyPartitionsThereReadIt) {
  auto exe = compile(fan_out_graph(), cpu_and({fast_sim({"Neg", "Sub"})}), prefer("sim:0"));
  const PlacementReport& report = exe->placement_report();
  int s1_copies = 0;
  for (const CopyInfo& copy : report.copies) s1_copies += copy.value == "S1" ? 1 : 0;
  EXPECT_EQ(s1_copies, 1) << format_text(report);
  // X in, S1 out, N1 in, S2 out; the outputs N2 and S1 are already on the host.
  EXPECT_EQ(report.copies.size(), 4u) << format_text(report);
}

// ---------------------------------------------------------------------------------------------
// 8. Option errors

Options sim_options(int sims, const std::string& device) {
  Options o;
  o.num_threads = 1;
  o.sim_devices = sims;
  o.device = device;
  return o;
}

// Compiling with `options` throws InvalidArgument whose message holds every one of `words`.
void expect_invalid_argument(const Options& options, std::vector<std::string> words) {
  GraphFactory make = unary_chain({"Relu", "Neg"}, {"r", "n"}, {2, 4});
  try {
    Model::from_graph(make()).compile(options);
    ADD_FAILURE() << "accepted; expected an error naming " << words[0];
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    for (const std::string& w : words)
      EXPECT_NE(e.message().find(w), std::string::npos) << "'" << w << "' not in: " << e.message();
  }
}

TEST(PlacerOptions, UnknownOrContradictoryOptionsAreInvalidArgumentsNamingTheOption) {
  {
    SCOPED_TRACE("a device that does not exist");
    expect_invalid_argument(sim_options(2, "sim:3"), {"--device sim:3", "does not exist", "sim:1"});
  }
  {
    SCOPED_TRACE("a device the compute units exclude");
    Options o = sim_options(1, "sim:0");
    o.compute_units = "cpu_only";
    expect_invalid_argument(o, {"--device", "sim:0", "--compute-units cpu_only"});
  }
  {
    SCOPED_TRACE("two devices without a split");
    expect_invalid_argument(sim_options(2, "sim:0,sim:1"), {"--device", "--split pipeline"});
  }
  {
    SCOPED_TRACE("a split over one device");
    Options o = sim_options(2, "sim:0");
    o.split = "pipeline";
    expect_invalid_argument(o, {"--split pipeline", "two devices"});
  }
  {
    SCOPED_TRACE("an unknown split mode");
    Options o = sim_options(2, "sim:0");
    o.split = "tensor";
    expect_invalid_argument(o, {"--split", "tensor"});
  }
  for (const char* bad : {"sim:0=12Q", "sim:0=", "=5M", "sim:0"}) {
    SCOPED_TRACE(std::string("memory limit ") + bad);
    Options o = sim_options(2, "sim:0,sim:1");
    o.split = "pipeline";
    o.memory_limits = {bad};
    expect_invalid_argument(o, {"--memory-limit"});
  }
  {
    SCOPED_TRACE("a memory limit for a device that does not exist");
    Options o = sim_options(2, "sim:0,sim:1");
    o.split = "pipeline";
    o.memory_limits = {"sim:7=1M"};
    expect_invalid_argument(o, {"--memory-limit sim:7", "does not exist"});
  }
  {
    SCOPED_TRACE("a pin onto a device that does not exist");
    Options o = sim_options(1, "sim:0");
    o.pins = {"r=sim:4"};
    expect_invalid_argument(o, {"--pin r=sim:4", "does not exist"});
  }
  TempFile config(R"([{"ops": ["Relu"]}])");
  {
    SCOPED_TRACE("--sim and --sim-config together");
    Options o = sim_options(1, "sim:0");
    o.sim_config = config.path();
    expect_invalid_argument(o, {"--sim", "--sim-config"});
  }
  {
    SCOPED_TRACE("an unknown sim-config field");
    TempFile typo(R"([{"ops": ["Relu"], "gflop": 3}])");
    Options o = sim_options(0, "sim:0");
    o.sim_config = typo.path();
    expect_invalid_argument(o, {"--sim-config", "'gflop'", "device 0"});
  }
  {
    SCOPED_TRACE("unknown compute units and fallback");
    Options o = sim_options(1, "sim:0");
    o.compute_units = "gpu_only";
    expect_invalid_argument(o, {"--compute-units", "gpu_only"});
    o.compute_units = "all";
    o.fallback = "never";
    expect_invalid_argument(o, {"--fallback", "never"});
  }
  // The well-formed neighbour of these cases compiles, so the errors above come from the option.
  Options fine = sim_options(0, "sim:0");
  fine.sim_config = config.path();
  EXPECT_NE(Model::from_graph(unary_chain({"Relu", "Neg"}, {"r", "n"}, {2, 4})())
                .compile(fine)
                .placement_summary()
                .find("sim:0"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// 9. Pipeline split

// Two fast simulated devices with cheap copies, as a --sim-config file.
constexpr const char* kTwoFastSims = R"([
  {"gflops": 100000, "gbytes_per_s": 100000, "copy_latency_us": 1, "copy_gbytes_per_s": 100},
  {"gflops": 100000, "gbytes_per_s": 100000, "copy_latency_us": 1, "copy_gbytes_per_s": 100}])";

Executable compile_split(const TempFile& config, std::vector<std::string> memory_limits) {
  Options o;
  o.num_threads = 2;
  o.sim_config = config.path();
  o.device = "sim:0,sim:1";
  o.split = "pipeline";
  o.memory_limits = std::move(memory_limits);
  return Model::from_graph(dense_chain(10)()).compile(o);
}

// Number of MatMuls on each device, after checking the stages are contiguous: every sim:0 node
// precedes every sim:1 node, and every node says it was placed by the split.
std::map<std::string, int> check_stages(const PlacementReport& report) {
  std::map<std::string, int> matmuls;
  bool seen_second = false;
  for (const NodeDecision& d : report.nodes) {
    EXPECT_EQ(d.cause, Cause::Split) << d.node << ": " << d.reason;
    EXPECT_TRUE(d.device == "sim:0" || d.device == "sim:1") << d.node << " on " << d.device;
    if (d.device == "sim:1") seen_second = true;
    EXPECT_FALSE(seen_second && d.device == "sim:0") << d.node << " on sim:0 after a sim:1 node";
    if (d.op == "MatMul") ++matmuls[d.device];
  }
  return matmuls;
}

TEST(PlacerSplit, PipelineCutsAChainIntoTwoContiguousStagesWithCpuResults) {
  TempFile config(kTwoFastSims);
  Executable exe = compile_split(config, {});
  const PlacementReport& report = exe.internal().placement_report();
  ASSERT_EQ(report.nodes.size(), 20u);
  std::map<std::string, int> matmuls = check_stages(report);
  // Balanced by cost: the ten equal layers split evenly.
  EXPECT_EQ(matmuls["sim:0"], 5);
  EXPECT_EQ(matmuls["sim:1"], 5);
  EXPECT_EQ(report.partitions.size(), 2u);

  ir::Tensor x = random_tensor(kF32, {64, 256}, 31);
  Observed o = run_observed(exe.internal(), {x});
  expect_trace_matches_report(report, o);
  // X in, the activation between the stages, the result out.
  EXPECT_EQ(o.stats.copies, 3);
  EXPECT_EQ(report.copies.size(), 3u);
  expect_bit_identical_to_cpu(dense_chain(10), {x}, o.outputs);
}

TEST(PlacerSplit, AMemoryLimitMovesTheCutAndAnImpossibleOneFails) {
  TempFile config(kTwoFastSims);
  // 768 KiB holds three layers' weights (256 KiB each) on sim:0: the cut moves before the middle.
  Executable exe = compile_split(config, {"sim:0=768K"});
  const PlacementReport& report = exe.internal().placement_report();
  std::map<std::string, int> matmuls = check_stages(report);
  EXPECT_EQ(matmuls["sim:0"], 3);
  EXPECT_EQ(matmuls["sim:1"], 7);
  ir::Tensor x = random_tensor(kF32, {64, 256}, 32);
  Observed o = run_observed(exe.internal(), {x});
  expect_trace_matches_report(report, o);
  expect_bit_identical_to_cpu(dense_chain(10), {x}, o.outputs);

  for (const auto& limits : std::vector<std::vector<std::string>>{
           {"sim:0=768K", "sim:1=768K"},  // the ten layers fit on neither device's share
           {"sim:0=100K"}}) {             // not even the first layer fits on sim:0
    SCOPED_TRACE(limits[0] + (limits.size() > 1 ? " " + limits[1] : ""));
    try {
      compile_split(config, limits);
      ADD_FAILURE() << "an impossible memory limit was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::PlacementFailed) << e.what();
      EXPECT_NE(e.message().find("memory limit"), std::string::npos) << e.message();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 10. Shape computations on the host

TEST(PlacerHostShape, ShapeChainsStayOnTheHostWithoutCopyingTheTensorTheyMeasure) {
  auto exe = compile(shape_chain_graph(), cpu_and({fast_sim()}), prefer("sim:0"));
  const PlacementReport& report = exe->placement_report();
  for (const char* node : {"shape_of", "take_n", "new_dims"}) {
    EXPECT_EQ(device_of(report, node), "cpu") << node;
    EXPECT_EQ(cause_of(report, node), "host_shape") << node;
  }
  EXPECT_EQ(device_of(report, "relu"), "sim:0");
  EXPECT_EQ(device_of(report, "reshape"), "sim:0");
  EXPECT_EQ(cause_of(report, "reshape"), "preferred");
  for (const CopyInfo& copy : report.copies)
    EXPECT_NE(copy.value, "R") << "the relu output crossed to the host for its shape alone";

  const int64_t n = 9;
  ir::Tensor x = random_tensor(kF32, {n, 256}, 41);
  Observed o = run_observed(*exe, {x});
  expect_trace_matches_report(report, o);
  // X to sim:0, the three new dims to sim:0, Y back: never R, which Shape only measures.
  EXPECT_EQ(o.stats.copies, 3);
  EXPECT_EQ(report.copies.size(), 3u);
  EXPECT_EQ(o.stats.copied_bytes, 2 * x.nbytes() + 3 * sizeof(int64_t));
  ASSERT_EQ(o.outputs[0].tensor.shape(), (std::vector<int64_t>{n, 16, 16}));
  expect_bit_identical_to_cpu(shape_chain_graph(), {x}, o.outputs);
}

TEST(PlacerHostShape, ADeviceThatRunsShapeStepsInlineKeepsTheChainInItsPartition) {
  // The chain measures a value the device made: on a device that runs shape steps inside its
  // partitions (the CUDA backend; here a simulated one) it stays there, so relu and reshape
  // are not split around a cpu partition.
  sim::SimDeviceConfig inline_sim = fast_sim();
  inline_sim.shape_steps_inline = true;
  auto exe = compile(shape_chain_graph(), cpu_and({inline_sim}), prefer("sim:0"));
  const PlacementReport& report = exe->placement_report();
  for (const char* node : {"shape_of", "take_n", "new_dims"}) {
    EXPECT_EQ(device_of(report, node), "sim:0") << node;
    EXPECT_EQ(cause_of(report, node), "host_shape") << node;
    EXPECT_NE(decision_of(report, node).reason.find("inside its sim:0 partition"),
              std::string::npos)
        << decision_of(report, node).reason;
  }
  ASSERT_EQ(report.partitions.size(), 1u);
  const int64_t n = 5;
  ir::Tensor x = random_tensor(kF32, {n, 256}, 43);
  Observed o = run_observed(*exe, {x});
  expect_trace_matches_report(report, o);
  EXPECT_EQ(o.stats.copies, 2);  // X in, Y out
  ASSERT_EQ(o.outputs[0].tensor.shape(), (std::vector<int64_t>{n, 16, 16}));
  expect_bit_identical_to_cpu(shape_chain_graph(), {x}, o.outputs);

  // A chain measuring a graph input that the device reads for its data anyway (relu): the
  // partition takes X in any case, so the Shape joins it (one step, no cpu partition before
  // it: a transformer's Shape of input_ids beside its embedding Gather).
  auto from_input = [] {
    auto g = std::make_unique<ir::Graph>("shape_of_input");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("N"), 256}));
    ir::Value* s = g->add_node("Shape", "shape_of", {x}, {"S"})->output(0);
    ir::Value* r = g->add_node("Relu", "relu", {x}, {"R"})->output(0);
    g->add_output(g->add_node("Reshape", "reshape", {r, s}, {"Y"})->output(0));
    return g;
  };
  auto exe2 = compile(from_input, cpu_and({inline_sim}), prefer("sim:0"));
  EXPECT_EQ(device_of(exe2->placement_report(), "shape_of"), "sim:0");
  EXPECT_EQ(cause_of(exe2->placement_report(), "shape_of"), "host_shape");
  EXPECT_EQ(exe2->placement_report().partitions.size(), 1u);
  ir::Tensor x2 = random_tensor(kF32, {3, 256}, 44);
  Observed o2 = run_observed(*exe2, {x2});
  expect_trace_matches_report(exe2->placement_report(), o2);
  EXPECT_EQ(o2.stats.copies, 2);  // X in, Y out
  expect_bit_identical_to_cpu(from_input, {x2}, o2.outputs);

  // A graph input that nothing on the device reads for its data stays measured on the cpu:
  // the partition would otherwise take a copy of X for its shape alone.
  auto shape_only_input = [] {
    auto g = std::make_unique<ir::Graph>("shape_only_input");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("N"), 256}));
    ir::Value* z = g->add_input("Z", ir::Type::tensor(kF32, ir::Shape{ir::Dim("M"), 256}));
    ir::Value* s = g->add_node("Shape", "shape_of", {x}, {"S"})->output(0);
    ir::Value* r = g->add_node("Relu", "relu", {z}, {"R"})->output(0);
    g->add_output(g->add_node("Reshape", "reshape", {r, s}, {"Y"})->output(0));
    return g;
  };
  auto exe3 = compile(shape_only_input, cpu_and({inline_sim}), prefer("sim:0"));
  EXPECT_EQ(device_of(exe3->placement_report(), "shape_of"), "cpu");
  EXPECT_EQ(cause_of(exe3->placement_report(), "shape_of"), "host_shape");
  for (const CopyInfo& copy : exe3->placement_report().copies)
    EXPECT_NE(copy.value, "X") << "X crossed to the device for its shape alone";
}

}  // namespace
}  // namespace switchyard::placement
