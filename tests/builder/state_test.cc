// State and control dependencies of GraphBuilder (variable, assign, control_dependency): a
// batch-norm training step whose running mean persists across runs, checked against a plain C++
// reference on the cpu and on a simulated device; Executable::variable / set_variable; saved
// executables and ONNX files that keep the variables; concurrent runs that leave the state of
// some sequential order; control edges that keep nodes, order them across devices without a
// copy, and show in the report; and the errors of bad use.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "compiler/compiler.h"
#include "support/op_test_util.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

namespace fs = std::filesystem;
using Feeds = std::map<std::string, Tensor>;

std::vector<Options> configurations() {
  Options cpu;
  cpu.device = "cpu";
  Options sim;
  sim.sim_devices = 1;
  sim.device = "sim:0";
  sim.pins = {"*=sim:0"};  // every node, however small
  return {cpu, sim};
}

std::string temp_file(const std::string& stem, const std::string& ext) {
  return (fs::path(::testing::TempDir()) / fmt::format("state_{}_{}{}", stem, getpid(), ext))
      .string();
}

Tensor float_tensor(std::vector<int64_t> shape, const std::vector<float>& values) {
  Tensor t(DType::Float32, std::move(shape));
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

std::vector<float> values_of(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

Tensor int64_value(int64_t v) {
  Tensor t(DType::Int64, {});
  t.data<int64_t>()[0] = v;
  return t;
}

constexpr float kMomentum = 0.9f;

// y = x - mean over the batch when training, and the running mean moves toward that mean
// through an assign (ordered before y by a control dependency); when not training,
// y = x - running mean, and the running mean stays.
Model batch_norm_step(const Tensor& initial_mean) {
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {"batch", 3});
  Value training = b.placeholder("is_training", DType::Bool, {});
  Value running = b.variable("running_mean", initial_mean);
  Tensor axes(DType::Int64, {1});
  axes.data<int64_t>()[0] = 0;
  Value axis0 = b.constant(axes, "axis0");
  Value momentum = b.scalar(DType::Float32, kMomentum);
  Value rest = b.scalar(DType::Float32, 1 - kMomentum);
  std::vector<Value> y = b.if_else(
      training,
      [&](GraphBuilder& t) {
        Value mean = t.op("ReduceMean", {x, axis0}, {{"keepdims", 0}})[0];
        Value update = t.assign(running, t.add(t.mul(running, momentum), t.mul(mean, rest)));
        return std::vector<Value>{t.control_dependency(t.sub(x, mean), {update})};
      },
      [&](GraphBuilder& e) { return std::vector<Value>{e.sub(x, running)}; });
  EXPECT_EQ(y.size(), 1u);
  b.outputs({{"y", y[0]}});
  return std::move(b).build();
}

struct Step {
  bool training;
  Tensor x;
};

// The reference: y for the step, and the running mean moved in place when training.
Tensor reference_step(const Step& s, std::vector<float>& running) {
  const int64_t n = s.x.shape()[0];
  std::vector<float> x = values_of(s.x), mean(3, 0.f), y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) mean[static_cast<size_t>(c)] += x[static_cast<size_t>(i * 3 + c)];
  for (float& m : mean) m /= static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i)
    for (size_t c = 0; c < 3; ++c)
      y[static_cast<size_t>(i) * 3 + c] =
          x[static_cast<size_t>(i) * 3 + c] - (s.training ? mean[c] : running[c]);
  if (s.training)
    for (size_t c = 0; c < 3; ++c) running[c] = running[c] * kMomentum + mean[c] * (1 - kMomentum);
  return float_tensor({n, 3}, y);
}

TEST(State, BatchNormTrainingMovesTheRunningMeanInferenceReadsIt) {
  const Tensor initial = random_tensor(DType::Float32, {3}, 7, -0.5, 0.5);
  std::vector<Step> steps;
  const bool pattern[] = {true, false, true, true, false, false, true};
  for (size_t i = 0; i < std::size(pattern); ++i)
    steps.push_back({pattern[i], random_tensor(DType::Float32, {static_cast<int64_t>(2 + i), 3},
                                               100 + i, -2.0, 3.0)});
  for (const Options& options : configurations()) {
    const std::string where = options.device;
    Executable exe = batch_norm_step(initial).compile(options);
    if (options.device == "sim:0") {
      EXPECT_EQ(exe.placement_summary().find("cpu:"), std::string::npos) << exe.placement_summary();
    }
    // The variable is state, neither an input nor an output.
    ASSERT_EQ(exe.inputs().size(), 2u) << where;
    for (const ValueInfo& in : exe.inputs()) EXPECT_NE(in.name, "running_mean") << where;
    ASSERT_EQ(exe.outputs().size(), 1u) << where;
    EXPECT_EQ(exe.outputs()[0].name, "y") << where;
    ASSERT_EQ(exe.variables().size(), 1u) << where;
    EXPECT_EQ(exe.variables()[0].name, "running_mean") << where;
    EXPECT_TRUE(same_bits(exe.variable("running_mean"), initial)) << where;

    std::vector<float> running = values_of(initial);
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      Tensor before = exe.variable("running_mean");
      Feeds out = exe.run({{"x", s.x}, {"is_training", bool_scalar(s.training)}});
      Tensor expected_y = reference_step(s, running);
      EXPECT_TENSOR_NEAR(out.at("y"), expected_y, 1e-5, 1e-6) << where << " step " << i;
      Tensor after = exe.variable("running_mean");
      EXPECT_TENSOR_NEAR(after, float_tensor({3}, running), 1e-5, 1e-6) << where << " step " << i;
      if (s.training) {
        EXPECT_FALSE(same_bits(after, before)) << where << " step " << i << ": training moves it";
      } else {
        EXPECT_TRUE(same_bits(after, before)) << where << " step " << i << ": inference keeps it";
      }
    }

    // A saved executable carries the variable's current value, and goes on from it.
    const std::string file = temp_file("bn_" + std::to_string(options.sim_devices), ".syx");
    exe.save(file);
    Executable loaded = Executable::load(file, options);
    EXPECT_TRUE(same_bits(loaded.variable("running_mean"), exe.variable("running_mean"))) << where;
    Step more{true, random_tensor(DType::Float32, {4, 3}, 999, -1.0, 1.0)};
    std::vector<float> copy = running;
    Feeds out = loaded.run({{"x", more.x}, {"is_training", bool_scalar(true)}});
    EXPECT_TENSOR_NEAR(out.at("y"), reference_step(more, copy), 1e-5, 1e-6) << where;
    EXPECT_TENSOR_NEAR(loaded.variable("running_mean"), float_tensor({3}, copy), 1e-5, 1e-6)
        << where;
    // The two executables have their own state from there on.
    EXPECT_TENSOR_NEAR(exe.variable("running_mean"), float_tensor({3}, running), 1e-5, 1e-6)
        << where;
    fs::remove(file);
  }
}

// counter += step; the run returns the value it read.
Model counter_model(int64_t start) {
  GraphBuilder b;
  Value step = b.placeholder("step", DType::Int64, {});
  Value counter = b.variable("counter", int64_value(start));
  b.assign(counter, b.add(counter, step));
  b.outputs({{"seen", counter}});
  return std::move(b).build();
}

TEST(State, VariablesAreReadAndWrittenThroughTheExecutable) {
  for (const Options& options : configurations()) {
    const std::string where = options.device;
    Executable exe = counter_model(5).compile(options);
    EXPECT_EQ(exe.run({{"step", int64_value(3)}}).at("seen").data<int64_t>()[0], 5) << where;
    EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], 8) << where;
    // variable() is a copy: writing it changes nothing.
    Tensor copy = exe.variable("counter");
    copy.data<int64_t>()[0] = -1;
    EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], 8) << where;
    exe.set_variable("counter", int64_value(100));
    EXPECT_EQ(exe.run({{"step", int64_value(-7)}}).at("seen").data<int64_t>()[0], 100) << where;
    EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], 93) << where;
    // Copies of an Executable share the state.
    Executable shared = exe;
    shared.run({{"step", int64_value(1)}});
    EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], 94) << where;

    expect_error([&] { exe.variable("count"); }, ErrorCode::InvalidArgument, "'count'");
    expect_error([&] { exe.set_variable("count", int64_value(1)); }, ErrorCode::InvalidArgument,
                 "no variable 'count'");
    expect_error([&] { exe.set_variable("counter", random_tensor(DType::Float32, {}, 1)); },
                 ErrorCode::InvalidArgument, "set_variable 'counter'");
    Tensor wide(DType::Int64, {2});
    expect_error([&] { exe.set_variable("counter", wide); }, ErrorCode::InvalidArgument,
                 "set_variable 'counter'");
    // A variable is no input.
    expect_error(
        [&] {
          exe.run({{"step", int64_value(1)}, {"counter", int64_value(0)}});
        },
        ErrorCode::InvalidArgument, "'counter' is a variable");
    EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], 94) << where;
  }
}

// Assigning runs are serialized: each of N concurrent runs reads a distinct state, and the N
// increments all land (docs/api.md, "State").
TEST(State, ConcurrentRunsLeaveTheStateOfASequentialOrder) {
  for (const Options& options : configurations()) {
    Executable exe = counter_model(0).compile(options);
    constexpr int kThreads = 8, kRuns = 25;
    std::mutex mutex;
    std::vector<int64_t> seen;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&] {
        for (int r = 0; r < kRuns; ++r) {
          int64_t v = exe.run({{"step", int64_value(1)}}).at("seen").data<int64_t>()[0];
          std::lock_guard<std::mutex> lock(mutex);
          seen.push_back(v);
        }
      });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], kThreads * kRuns) << options.device;
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> expected(kThreads * kRuns);
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i);
    EXPECT_EQ(seen, expected) << options.device << ": each run saw the state of its turn";
  }
}

// The assigned value's symbolic dim turns out wrong at run time: the run fails naming the
// variable and commits nothing, not even its other assigns.
TEST(State, AFailedRunCommitsNothing) {
  GraphBuilder b;
  Value p = b.placeholder("p", DType::Float32, {"n"});
  Value v = b.variable("v", float_tensor({3}, {1, 2, 3}));
  Value count = b.variable("count", int64_value(0));
  b.assign(count, b.add(count, b.scalar(DType::Int64, 1)));
  b.assign(v, b.add(p, b.scalar(DType::Float32, 1)));
  b.outputs({{"out", b.relu(p)}});
  Executable exe = std::move(b).build().compile();
  expect_error(
      [&] {
        exe.run({{"p", float_tensor({4}, {1, 2, 3, 4})}});
      },
      ErrorCode::InvalidArgument, "variable 'v'");
  EXPECT_EQ(values_of(exe.variable("v")), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(exe.variable("count").data<int64_t>()[0], 0);
  exe.run({{"p", float_tensor({3}, {-1, 5, 7})}});
  EXPECT_EQ(values_of(exe.variable("v")), (std::vector<float>{0, 6, 8}));
  EXPECT_EQ(exe.variable("count").data<int64_t>()[0], 1);
}

TEST(State, SaveOnnxWritesVariablesAsInitializedInputs) {
  const std::string file = temp_file("counter", ".onnx");
  counter_model(40).save_onnx(file);
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(bytes.find("ai.switchyard.variable.counter"), std::string::npos);
  Model loaded = Model::load(file);
  ASSERT_EQ(loaded.inputs().size(), 1u);
  EXPECT_EQ(loaded.inputs()[0].name, "step");
  ASSERT_EQ(loaded.outputs().size(), 1u);
  EXPECT_EQ(loaded.outputs()[0].name, "seen");
  Executable exe = std::move(loaded).compile();
  EXPECT_EQ(exe.run({{"step", int64_value(2)}}).at("seen").data<int64_t>()[0], 40);
  EXPECT_EQ(exe.run({{"step", int64_value(2)}}).at("seen").data<int64_t>()[0], 42);
  EXPECT_EQ(exe.variable("counter").data<int64_t>()[0], 44);
  fs::remove(file);
}

// An If whose only effect is an assign: nothing reads its results, yet dead-node removal keeps
// it (the assign is the If's output), and the state moves only in the branch that assigns.
TEST(State, AnAssignKeepsAnOtherwiseDeadIf) {
  for (const Options& options : configurations()) {
    GraphBuilder b;
    Value x = b.placeholder("x", DType::Float32, {2});
    Value total = b.variable("total", float_tensor({2}, {0.5f, -1.5f}));
    Value positive = b.greater(b.reduce_sum(x), b.scalar(DType::Float32, 0));
    std::vector<Value> none = b.if_else(
        positive,
        [&](GraphBuilder& t) {
          t.assign(total, t.add(total, x));
          return std::vector<Value>{};
        },
        [&](GraphBuilder&) { return std::vector<Value>{}; });
    EXPECT_TRUE(none.empty());
    b.outputs({{"y", b.relu(x)}});
    Executable exe = std::move(b).build().compile(options);
    bool has_if = false;
    for (const auto& n : exe.internal().placement_report().nodes) has_if |= n.op == "If";
    EXPECT_TRUE(has_if) << options.device << ": the If was removed";
    exe.run({{"x", float_tensor({2}, {1, 2})}});
    EXPECT_EQ(values_of(exe.variable("total")), (std::vector<float>{1.5f, 0.5f}));
    exe.run({{"x", float_tensor({2}, {-1, -2})}});
    EXPECT_EQ(values_of(exe.variable("total")), (std::vector<float>{1.5f, 0.5f}));
    exe.run({{"x", float_tensor({2}, {2, 0})}});
    EXPECT_EQ(values_of(exe.variable("total")), (std::vector<float>{3.5f, 0.5f}));
  }
}

// y = relu(x + 1) after s = x * x, which nothing reads: the control dependency keeps s, runs it
// first, and — with s on sim:0 and the rest on the cpu — orders the partitions without copying
// s anywhere. The report lists the edge as a control edge (text, JSON, DOT).
TEST(ControlDependency, KeepsAndOrdersANodeAcrossDevicesWithoutACopy) {
  for (bool across : {false, true}) {
    GraphBuilder b;
    Value x = b.placeholder("x", DType::Float32, {4});
    Value dependent = b.add(x, b.scalar(DType::Float32, 1));
    Value square = b.mul(x, x);
    Value ordered = b.control_dependency(dependent, {square});
    EXPECT_EQ(ordered.type_string(), "float[4]");
    b.outputs({{"y", b.relu(ordered)}});
    const std::string square_node = square.name(), depend_node = ordered.name();
    Options options;
    options.device = "cpu";
    if (across) {
      options.sim_devices = 1;
      options.pins = {square_node + "=sim:0"};
    }
    Executable exe = std::move(b).build().compile(options);
    const placement::PlacementReport& report = exe.internal().placement_report();
    std::map<std::string, const placement::NodeDecision*> node;
    for (const auto& n : report.nodes) node[n.node] = &n;
    ASSERT_TRUE(node.count(square_node)) << "dead-node removal dropped what y depends on";
    ASSERT_TRUE(node.count(depend_node));
    EXPECT_EQ(node[square_node]->device, across ? "sim:0" : "cpu");
    EXPECT_EQ(node[depend_node]->device, "cpu");
    EXPECT_LE(node[square_node]->partition, node[depend_node]->partition);
    if (across) {
      EXPECT_LT(node[square_node]->partition, node[depend_node]->partition);
    }
    bool control_edge = false;
    for (const auto& e : report.edges)
      if (e.from_node == square_node && e.to_node == depend_node) {
        control_edge = e.control;
        EXPECT_FALSE(e.copy);
      }
    EXPECT_TRUE(control_edge);
    for (const auto& c : report.copies) EXPECT_NE(c.value, square.name()) << "a copy of s";
    EXPECT_NE(exe.explain("text").find("control dependencies"), std::string::npos);
    EXPECT_NE(exe.explain("json").find("\"control\": true"), std::string::npos);
    std::string dot = exe.explain("dot");
    EXPECT_NE(dot.find(fmt::format("\"{}\" -> \"{}\" [style=dotted", square_node, depend_node)),
              std::string::npos)
        << dot;
    std::string html = exe.explain("html");
    EXPECT_NE(html.find("<h2>Control dependencies</h2>"), std::string::npos);
    EXPECT_NE(html.find(fmt::format("<td class=\"name\">{}</td><td class=\"name\">{}</td>",
                                    depend_node, square_node)),
              std::string::npos);

    RunOptions profiled;
    profiled.profile = true;
    Tensor input = float_tensor({4}, {-3, 0.5f, 2, -0.25f});
    RunResult result = exe.run_values({Datum(input)}, profiled);
    ASSERT_EQ(result.outputs.size(), 1u);
    EXPECT_EQ(values_of(result.outputs[0].tensor), (std::vector<float>{0, 1.5f, 3, 0.75f}));
    // x to sim:0 is the one copy: s stays there.
    EXPECT_EQ(result.stats.copies, across ? 1 : 0);
    int64_t square_at = -1, depend_at = -1;
    for (size_t i = 0; i < result.profile.size(); ++i) {
      if (result.profile[i].name == square_node) square_at = static_cast<int64_t>(i);
      if (result.profile[i].name == depend_node) depend_at = static_cast<int64_t>(i);
    }
    ASSERT_GE(square_at, 0) << "s did not run";
    EXPECT_LT(square_at, depend_at);

    // Saved and loaded, the placement keeps the edge without an input for it.
    const std::string file = temp_file(fmt::format("order_{}", across), ".syx");
    exe.save(file);
    Options load_options;
    load_options.sim_devices = options.sim_devices;
    Executable loaded = Executable::load(file, load_options);
    EXPECT_EQ(values_of(loaded.run({{"x", input}}).at("y")),
              (std::vector<float>{0, 1.5f, 3, 0.75f}));
    fs::remove(file);
  }
}

TEST(State, BadUseThrowsInvalidArgumentNamingTheVariableOrOp) {
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {3});
  Value v = b.variable("v", float_tensor({3}, {1, 2, 3}));
  expect_error([&] { b.assign("w", x); }, ErrorCode::InvalidArgument, "no variable 'w'");
  expect_error([&] { b.assign(x, x); }, ErrorCode::InvalidArgument, "value 'x' is not a variable");
  expect_error([&] { b.assign(v, b.cast(x, DType::Float64)); }, ErrorCode::InvalidArgument,
               "assign 'v': the value");
  Value four = b.constant(float_tensor({4}, {1, 2, 3, 4}));
  expect_error([&] { b.assign(v, four); }, ErrorCode::InvalidArgument, "the variable is float[3]");
  Value matrix = b.constant(float_tensor({3, 1}, {1, 2, 3}));
  expect_error([&] { b.assign(v, matrix); }, ErrorCode::InvalidArgument, "assign 'v'");
  expect_error([&] { b.variable("x", float_tensor({1}, {0})); }, ErrorCode::InvalidArgument,
               "variable 'x': the name is already used");
  expect_error([&] { b.placeholder("v", DType::Float32, {3}); }, ErrorCode::InvalidArgument,
               "placeholder 'v': the name is already used");
  b.assign(v, b.add(v, x));
  expect_error([&] { b.assign(v, x); }, ErrorCode::InvalidArgument,
               "assign 'v': the variable is already assigned");

  // In a loop body an assign is refused; a branch declares no variable.
  expect_error(
      [&] {
        b.for_loop(b.scalar(DType::Int64, 2), {x},
                   [&](GraphBuilder& body, Value, std::vector<Value> c) {
                     Value w = b.variable("w", float_tensor({3}, {0, 0, 0}));
                     body.assign(w, c[0]);
                     return c;
                   });
      },
      ErrorCode::InvalidArgument, "an assign inside a loop body is not supported");
  expect_error(
      [&] {
        b.if_else(
            b.greater(b.reduce_sum(x), b.scalar(DType::Float32, 0)),
            [&](GraphBuilder& t) {
              t.variable("u", float_tensor({1}, {0}));
              return std::vector<Value>{x};
            },
            [&](GraphBuilder&) { return std::vector<Value>{x}; });
      },
      ErrorCode::InvalidArgument, "variable 'u'");
  // An assign lifted out of a branch conflicts with the one already made here.
  expect_error(
      [&] {
        b.if_else(
            b.greater(b.reduce_sum(x), b.scalar(DType::Float32, 0)),
            [&](GraphBuilder& t) {
              t.assign(v, x);
              return std::vector<Value>{x};
            },
            [&](GraphBuilder&) { return std::vector<Value>{x}; });
      },
      ErrorCode::InvalidArgument, "assign 'v': the variable is already assigned");

  // A control dependency on another builder's value names the call and the value.
  GraphBuilder other;
  Value foreign = other.placeholder("foreign", DType::Float32, {3});
  expect_error([&] { b.control_dependency(x, {foreign}); }, ErrorCode::InvalidArgument,
               "control_dependency: 'on' value 0: value 'foreign' belongs to another builder");
  expect_error([&] { b.control_dependency(foreign, {x}); }, ErrorCode::InvalidArgument,
               "control_dependency: dependent 0: value 'foreign'");
  b.outputs({{"y", b.relu(x)}});
  Executable exe = std::move(b).build().compile();
  exe.run({{"x", float_tensor({3}, {1, 1, 1})}});
  EXPECT_EQ(values_of(exe.variable("v")), (std::vector<float>{2, 3, 4}));
}

}  // namespace
}  // namespace switchyard::testing
