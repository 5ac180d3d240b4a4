// Control flow on cuda:0 (src/backends/cuda/control_flow.h): If, Loop and Scan run inside the
// CUDA partition — device-driven through CUDA graph conditional nodes where shapes allow it,
// host-driven where they do not — each model compared with the cpu run of the same model on
// seeded random data, in the eager first run, the captured second run and replays after it.
// RunStats::host_syncs shows that a loop whose condition the device computes waits for nothing
// per iteration, and that the host-driven baseline (SWITCHYARD_CUDA_HOST_LOOPS=1) does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "gpu/control_flow_models.h"
#include "gpu/gpu_test_util.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

constexpr DType kF32 = DType::Float32;

using MakeModel = std::function<Model()>;

Options gpu_options() {
  Options o;
  o.device = "cuda:0";
  o.fallback = "strict";
  o.num_threads = 2;
  return o;
}

Options cpu_options() {
  Options o;
  o.compute_units = "cpu_only";
  o.num_threads = 2;
  return o;
}

// Sets an environment variable for one scope (the compile reads SWITCHYARD_CUDA_HOST_LOOPS).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

Executable compile_gpu(const MakeModel& make, bool host_driven = false) {
  std::unique_ptr<ScopedEnv> env;
  if (host_driven) env = std::make_unique<ScopedEnv>("SWITCHYARD_CUDA_HOST_LOOPS", "1");
  Executable exe = make().compile(gpu_options());
  // Every node runs on cuda:0: the control-flow nodes do not leave for the cpu.
  const std::string summary = exe.placement_summary();
  EXPECT_NE(summary.find("cuda:0: "), std::string::npos) << summary;
  EXPECT_EQ(summary.find("cpu:"), std::string::npos) << summary;
  return exe;
}

std::vector<Datum> run_cpu(const MakeModel& make, const std::vector<Datum>& inputs) {
  return make().compile(cpu_options()).run_values(inputs).outputs;
}

void expect_outputs_match(const std::vector<Datum>& gpu, const std::vector<Datum>& cpu, double rtol,
                          double atol, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_TRUE(gpu[i].is_tensor() && cpu[i].is_tensor()) << what << ", output " << i;
    EXPECT_EQ(compare_tensors(gpu[i].tensor, cpu[i].tensor, rtol, atol), "")
        << what << ", output " << i;
  }
}

// Runs `inputs` on the cpu and `runs` times on cuda:0 (eager, captured, replayed, ...) and
// expects every output to match; returns each gpu run's statistics.
std::vector<RunStats> expect_gpu_matches_cpu(const Executable& gpu, const MakeModel& make,
                                             const std::vector<Datum>& inputs, int runs = 4,
                                             double rtol = 1e-4, double atol = 1e-5) {
  const std::vector<Datum> expected = run_cpu(make, inputs);
  std::vector<RunStats> stats;
  for (int r = 0; r < runs; ++r) {
    RunResult result = gpu.run_values(inputs);
    expect_outputs_match(result.outputs, expected, rtol, atol, fmt::format("gpu run {}", r + 1));
    stats.push_back(result.stats);
  }
  return stats;
}

using control_flow_models::weights;

// ---- Models

constexpr int64_t kBatch = 3, kIn = 5, kHidden = 8, kMaxSteps = 40;

Model lstm_model() { return control_flow_models::lstm(kMaxSteps, kBatch, kIn, kHidden); }

// A GRU cell driven by Loop: z = σ(x Wz + h Uz), r = σ(x Wr + h Ur),
// n = tanh(x Wn + (r h) Un + bn), h' = (1 - z) n + z h.
Model gru_model() {
  GraphBuilder b("gru");
  Value m = b.placeholder("M", DType::Int64, {});
  Value x = b.placeholder("X", kF32, {kMaxSteps, kBatch, kIn});
  Value h0 = b.placeholder("h0", kF32, {kBatch, kHidden});
  Value wz = b.constant(weights({kIn, kHidden}, 21)),
        uz = b.constant(weights({kHidden, kHidden}, 22));
  Value wr = b.constant(weights({kIn, kHidden}, 23)),
        ur = b.constant(weights({kHidden, kHidden}, 24));
  Value wn = b.constant(weights({kIn, kHidden}, 25)),
        un = b.constant(weights({kHidden, kHidden}, 26));
  Value bn = b.constant(weights({kHidden}, 27));
  Value one = b.scalar(kF32, 1.0);
  std::vector<Value> out =
      b.for_loop(m, {h0}, [&](GraphBuilder& g, Value t, std::vector<Value> carried) {
        Value h = carried[0];
        Value xt = g.op("Gather", {x, t}, {{"axis", int64_t{0}}})[0];
        Value z = g.sigmoid(g.add(g.matmul(xt, wz), g.matmul(h, uz)));
        Value rr = g.sigmoid(g.add(g.matmul(xt, wr), g.matmul(h, ur)));
        Value n = g.tanh(g.add(g.add(g.matmul(xt, wn), g.matmul(g.mul(rr, h), un)), bn));
        return std::vector<Value>{g.add(g.mul(g.sub(one, z), n), g.mul(z, h))};
      });
  b.outputs({{"h", out[0]}});
  return std::move(b).build();
}

// If inside Loop: each step halves h where its sum is positive and adds x_t elsewhere.
Model if_in_loop_model() {
  GraphBuilder b("if_in_loop");
  Value m = b.placeholder("M", DType::Int64, {});
  Value x = b.placeholder("X", kF32, {kMaxSteps, kBatch, kHidden});
  Value h0 = b.placeholder("h0", kF32, {kBatch, kHidden});
  Value half = b.scalar(kF32, 0.5), zero = b.scalar(kF32, 0.0);
  std::vector<Value> out =
      b.for_loop(m, {h0}, [&](GraphBuilder& g, Value t, std::vector<Value> carried) {
        Value h = carried[0];
        Value xt = g.op("Gather", {x, t}, {{"axis", int64_t{0}}})[0];
        Value positive = g.greater(g.reduce_sum(h, {}, false), zero);
        std::vector<Value> next = g.if_else(
            positive, [&](GraphBuilder& then) { return std::vector<Value>{then.mul(h, half)}; },
            [&](GraphBuilder& other) { return std::vector<Value>{other.add(h, xt)}; });
        return std::vector<Value>{g.tanh(next[0])};
      });
  b.outputs({{"h", out[0]}});
  return std::move(b).build();
}

// If inside If: the outer predicate picks a branch that itself branches on a second sum.
Model if_in_if_model() {
  GraphBuilder b("if_in_if");
  Value x = b.placeholder("x", kF32, {kBatch, kHidden});
  Value y = b.placeholder("y", kF32, {kBatch, kHidden});
  Value zero = b.scalar(kF32, 0.0);
  Value outer = b.greater(b.reduce_sum(x, {}, false), zero);
  std::vector<Value> out = b.if_else(
      outer,
      [&](GraphBuilder& then) {
        Value inner = then.greater(then.reduce_sum(y, {}, false), zero);
        return then.if_else(
            inner, [&](GraphBuilder& a) { return std::vector<Value>{a.mul(x, y)}; },
            [&](GraphBuilder& c) { return std::vector<Value>{c.sub(x, y)}; });
      },
      [&](GraphBuilder& other) { return std::vector<Value>{other.add(other.tanh(x), y)}; });
  b.outputs({{"out", out[0]}});
  return std::move(b).build();
}

Model while_model() { return control_flow_models::while_loop(kBatch, kHidden); }

// A loop whose carried value grows by one row per iteration (its shape changes): host-driven.
Model growing_model() {
  GraphBuilder b("growing");
  Value m = b.placeholder("M", DType::Int64, {});
  Value x0 = b.placeholder("x", kF32, {"rows", kHidden});
  Value row = b.placeholder("row", kF32, {1, kHidden});
  Value two = b.scalar(kF32, 2.0);
  std::vector<Value> out =
      b.for_loop(m, {x0}, [&](GraphBuilder& g, Value, std::vector<Value> carried) {
        return std::vector<Value>{g.concat({g.mul(carried[0], two), row}, 0)};
      });
  b.outputs({{"grown", out[0]}});
  return std::move(b).build();
}

// Scan over X [batch, T, hidden] (axis 1) with a running sum s' = tanh(s + x_t) as state, the
// states stacked along axis 0 and the inputs walked backwards into a second output (axis 1).
Model scan_model(int64_t steps) {
  auto g = std::make_unique<ir::Graph>("scan");
  const ir::Type state_type = ir::Type::tensor(kF32, ir::Shape{kBatch, kHidden});
  ir::Value* s0 = g->add_input("s0", state_type);
  ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{kBatch, steps, kHidden}));
  auto body = std::make_shared<ir::Graph>("scan_body", g.get());
  ir::Value* s = body->add_input("s", state_type);
  ir::Value* xt = body->add_input("xt", state_type);
  ir::Value* sum = body->add_node("Add", "scan_body/add", {s, xt}, {"sum"})->output(0);
  ir::Value* next = body->add_node("Tanh", "scan_body/tanh", {sum}, {"next"})->output(0);
  ir::Value* echo = body->add_node("Neg", "scan_body/neg", {xt}, {"echo"})->output(0);
  ir::Value* out_state =
      body->add_node("Identity", "scan_body/state", {next}, {"next_out"})->output(0);
  body->add_output(out_state);
  body->add_output(next);
  body->add_output(echo);
  ir::Node* scan = g->add_node("Scan", "scan", {s0, x}, {"final", "states", "echoes"});
  scan->set_attribute(ir::Attribute::make_graph("body", body));
  scan->set_attribute(ir::Attribute::make_int("num_scan_inputs", 1));
  scan->set_attribute(ir::Attribute::make_ints("scan_input_axes", {1}));
  scan->set_attribute(ir::Attribute::make_ints("scan_input_directions", {1}));
  scan->set_attribute(ir::Attribute::make_ints("scan_output_axes", {0, 1}));
  for (ir::Value* v : scan->outputs()) g->add_output(v);
  return Model::from_graph(std::move(g));
}

std::vector<Datum> lstm_inputs(int64_t steps, uint64_t seed) {
  return control_flow_models::lstm_inputs(steps, kMaxSteps, kBatch, kIn, kHidden, seed);
}

// ---- Tests

TEST(CudaControlFlow, LstmLoopMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_gpu(lstm_model);
  expect_gpu_matches_cpu(gpu, lstm_model, lstm_inputs(7, 100));
  expect_gpu_matches_cpu(gpu, lstm_model, lstm_inputs(kMaxSteps, 200));
  expect_gpu_matches_cpu(gpu, lstm_model, lstm_inputs(0, 300), 2);  // no iteration
}

TEST(CudaControlFlow, GruLoopMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_gpu(gru_model);
  std::vector<Datum> inputs = {int64_scalar(12), random_tensor(kF32, {kMaxSteps, kBatch, kIn}, 5),
                               random_tensor(kF32, {kBatch, kHidden}, 6)};
  expect_gpu_matches_cpu(gpu, gru_model, inputs);
}

// The If inside the loop body is an IF node inside the WHILE node's body: the loop's host waits
// are the same at 3 and at 30 steps (a host-driven fallback would read a condition per step).
TEST(CudaControlFlow, IfInsideLoopMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_gpu(if_in_loop_model);
  // Shifted inputs, so some steps take each branch.
  auto inputs_for = [](int64_t steps, uint64_t seed) {
    return std::vector<Datum>{int64_scalar(steps),
                              random_tensor(kF32, {kMaxSteps, kBatch, kHidden}, seed, -1, 1.2),
                              random_tensor(kF32, {kBatch, kHidden}, seed + 10)};
  };
  for (uint64_t seed : {31, 32, 33}) {
    std::vector<RunStats> few = expect_gpu_matches_cpu(gpu, if_in_loop_model, inputs_for(3, seed));
    std::vector<RunStats> many =
        expect_gpu_matches_cpu(gpu, if_in_loop_model, inputs_for(30, seed));
    for (size_t r = 0; r < few.size(); ++r)
      EXPECT_EQ(many[r].host_syncs, few[r].host_syncs) << "seed " << seed << ", run " << r + 1;
  }
}

TEST(CudaControlFlow, IfInsideIfTakesEveryBranch) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_gpu(if_in_if_model);
  Executable host_driven = compile_gpu(if_in_if_model, /*host_driven=*/true);
  // (x, y) sums: (+, +) → x*y, (+, -) → x-y, (-, any) → tanh(x)+y.
  const std::vector<std::pair<double, double>> shifts = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
  for (size_t k = 0; k < shifts.size(); ++k) {
    auto [sx, sy] = shifts[k];
    std::vector<Datum> inputs = {
        random_tensor(kF32, {kBatch, kHidden}, 40 + k, sx > 0 ? 0.1 : -1.0, sx > 0 ? 1.0 : -0.1),
        random_tensor(kF32, {kBatch, kHidden}, 50 + k, sy > 0 ? 0.1 : -1.0, sy > 0 ? 1.0 : -0.1)};
    std::vector<RunStats> device = expect_gpu_matches_cpu(gpu, if_in_if_model, inputs);
    std::vector<RunStats> host = expect_gpu_matches_cpu(host_driven, if_in_if_model, inputs);
    // Device-driven, the branches are picked on the device; host-driven, each If's condition
    // is read back.
    for (size_t r = 0; r < device.size(); ++r)
      EXPECT_LT(device[r].host_syncs, host[r].host_syncs) << "case " << k << ", run " << r + 1;
  }
}

TEST(CudaControlFlow, WhileLoopWithDataDependentExitMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_gpu(while_model);
  for (double limit : {-100.0, 5.0, 50.0, 2000.0})  // 0 up to 16 iterations
    expect_gpu_matches_cpu(gpu, while_model,
                           control_flow_models::while_inputs(kBatch, kHidden, limit, 60));
}

TEST(CudaControlFlow, ScanMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  for (int64_t steps : {int64_t{1}, int64_t{6}}) {
    MakeModel make = [steps] { return scan_model(steps); };
    Executable gpu = compile_gpu(make);
    std::vector<Datum> inputs = {random_tensor(kF32, {kBatch, kHidden}, 70),
                                 random_tensor(kF32, {kBatch, steps, kHidden}, 71)};
    expect_gpu_matches_cpu(gpu, make, inputs);
  }
}

TEST(CudaControlFlow, ShapeChangingLoopFallsBackAndMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_gpu(growing_model);
  for (int64_t steps : {int64_t{0}, int64_t{1}, int64_t{5}}) {
    std::vector<Datum> inputs = {int64_scalar(steps), random_tensor(kF32, {2, kHidden}, 80),
                                 random_tensor(kF32, {1, kHidden}, 81)};
    expect_gpu_matches_cpu(gpu, growing_model, inputs);
  }
}

// The device decides every iteration of the while loop: a run's host waits do not grow with
// the number of iterations, eagerly (first run) or replayed; the host-driven baseline reads
// the condition once per iteration.
TEST(CudaControlFlow, DeviceDrivenLoopWaitsForNothingPerIteration) {
  SY_SKIP_WITHOUT_GPU();
  auto inputs_for = [](double limit) {
    return control_flow_models::while_inputs(kBatch, kHidden, limit, 90);
  };
  Executable device = compile_gpu(while_model);
  Executable host = compile_gpu(while_model, /*host_driven=*/true);
  // 2 and 16 iterations.
  const std::vector<Datum> few = inputs_for(30.0), many = inputs_for(2000.0);
  std::vector<RunStats> device_few = expect_gpu_matches_cpu(device, while_model, few, 4);
  std::vector<RunStats> device_many = expect_gpu_matches_cpu(device, while_model, many, 4);
  for (size_t r = 0; r < device_few.size(); ++r) {
    EXPECT_EQ(device_many[r].host_syncs, device_few[r].host_syncs) << "run " << r + 1;
    EXPECT_LE(device_many[r].host_syncs, 2) << "run " << r + 1;
  }
  std::vector<RunStats> host_few = expect_gpu_matches_cpu(host, while_model, few, 2);
  std::vector<RunStats> host_many = expect_gpu_matches_cpu(host, while_model, many, 2);
  for (size_t r = 0; r < host_few.size(); ++r)
    EXPECT_GE(host_many[r].host_syncs, host_few[r].host_syncs + 10) << "run " << r + 1;
}

// The LSTM's trip count arrives on the host and its condition never changes: device-driven,
// its host waits are the same at 3 and at 40 steps, and the trace puts the Loop on cuda:0.
TEST(CudaControlFlow, LstmRunsOnTheDeviceWithConstantHostWaits) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_gpu(lstm_model);
  std::vector<RunStats> short_runs = expect_gpu_matches_cpu(gpu, lstm_model, lstm_inputs(3, 7));
  std::vector<RunStats> long_runs =
      expect_gpu_matches_cpu(gpu, lstm_model, lstm_inputs(kMaxSteps, 8));
  for (size_t r = 0; r < short_runs.size(); ++r)
    EXPECT_EQ(long_runs[r].host_syncs, short_runs[r].host_syncs) << "run " << r + 1;
  RunOptions profiled;
  profiled.profile = true;
  RunResult traced = gpu.run_values(lstm_inputs(5, 9), profiled);
  bool loop_seen = false;
  for (const ProfileEvent& e : traced.profile) {
    if (e.category != "Node") continue;
    EXPECT_EQ(e.device, "cuda:0") << e.name;
    loop_seen = loop_seen || e.op == "Loop";
  }
  EXPECT_TRUE(loop_seen);
}

// Under fp16 the loop and its body stay float32 (the report says so) and still match.
TEST(CudaControlFlow, LstmUnderFp16KeepsTheLoopInFloat32) {
  SY_SKIP_WITHOUT_GPU();
  Options o = gpu_options();
  o.precision = "fp16";
  Executable gpu = lstm_model().compile(o);
  const std::vector<Datum> inputs = lstm_inputs(10, 400);
  const std::vector<Datum> expected = run_cpu(lstm_model, inputs);
  // The loop computes in float32; its results cross the partition's float16 region on the way
  // out (partition outputs are float16 values at --precision fp16), which rounds each to half a
  // float16 ulp (2^-11 relative). Within one ulp (2^-10) of the float32 cpu run: a loop body in
  // float16 would drift by several over the 10 steps.
  constexpr double kOneUlp = 1.0 / 1024;
  for (int r = 0; r < 3; ++r)
    expect_outputs_match(gpu.run_values(inputs).outputs, expected, kOneUlp, 1e-6,
                         fmt::format("fp16 run {}", r + 1));
}

}  // namespace
}  // namespace switchyard::testing
