// Concurrent run() on one executable: throughput of a conv → pool → conv → softmax model (every
// oneDNN primitive of it cached and shared) from 1 and 2 threads, with per-run scratchpads (what
// the runtime does) against serialising whole runs behind one lock (the alternative issue 10
// weighed). One intra-op thread per run, batch 7.
#include <benchmark/benchmark.h>

#include <mutex>

#include "ir/attribute.h"
#include "ir/graph.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace {

using namespace switchyard;

ir::Value* add(ir::Graph& g, const std::string& op, std::vector<ir::Value*> in,
               std::vector<ir::Attribute> attrs = {}) {
  std::string name = op + std::to_string(g.nodes().size());
  ir::Node* n = g.add_node(op, name, std::move(in), {name + "_out"});
  for (auto& a : attrs) n->set_attribute(std::move(a));
  return n->output(0);
}

Executable& model() {
  static Executable exe = [] {
    using A = ir::Attribute;
    auto g = std::make_unique<ir::Graph>("convnet");
    ir::Value* x = g->add_input(
        "X", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim("N"), ir::Dim(32), 28, 28}));
    ir::Value* w1 =
        g->add_constant("W1", testing::random_tensor(DType::Float32, {64, 32, 3, 3}, 1));
    ir::Value* w2 =
        g->add_constant("W2", testing::random_tensor(DType::Float32, {64, 64, 3, 3}, 2));
    ir::Value* y = add(*g, "Conv", {x, w1}, {A::make_ints("pads", {1, 1, 1, 1})});
    y = add(*g, "Relu", {y});
    y = add(*g, "MaxPool", {y},
            {A::make_ints("kernel_shape", {2, 2}), A::make_ints("strides", {2, 2})});
    y = add(*g, "Conv", {y, w2}, {A::make_ints("pads", {1, 1, 1, 1})});
    y = add(*g, "Softmax", {y}, {A::make_int("axis", 1)});
    g->add_output(y);
    Options options;
    options.num_threads = 1;
    return Model::from_graph(std::move(g)).compile(options);
  }();
  return exe;
}

const Tensor& input() {
  static Tensor x = testing::random_tensor(DType::Float32, {7, 32, 28, 28}, 3);
  return x;
}

void BM_PerRunScratchpad(benchmark::State& state) {
  Executable& exe = model();
  for (auto _ : state) benchmark::DoNotOptimize(exe.run({{"X", input()}}));
  state.SetItemsProcessed(state.iterations());
}

void BM_OneLockPerExecutable(benchmark::State& state) {
  static std::mutex lock;
  Executable& exe = model();
  for (auto _ : state) {
    std::lock_guard<std::mutex> guard(lock);
    benchmark::DoNotOptimize(exe.run({{"X", input()}}));
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_PerRunScratchpad)->Threads(1)->Threads(2)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_OneLockPerExecutable)->Threads(1)->Threads(2)->UseRealTime()->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
