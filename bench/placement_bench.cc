// Placement cost against import cost on a synthetic 10,000-node ONNX model: placing a model
// should cost well under importing it. Prints both times and the ratio place/import.
//
// The model is 1,000 blocks of ten nodes on X float[16,64]:
//   MatMul(W) → Add(bias) → Relu → Neg → Sigmoid → Tanh → Mul(·, Neg's output) → Abs
//   → Add(bias) → Relu
// where every tenth block measures Neg's output with Shape and Reshapes it by that shape instead
// of Sigmoid → Tanh, and another tenth replaces the Sigmoid with an If whose two branches
// (Sigmoid, Tanh) read Neg's output from the enclosing graph. The simulated devices cannot run Neg
// or Abs, so each block leaves sim:0 twice: a mix of islands that stay (MatMul and its neighbours)
// and islands that move back (the three elementwise nodes between Neg and Abs), host-side shape
// nodes, ~2,000 partitions and copies.
#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/sim/sim_backend.h"
#include "onnx/import.h"
#include "ops/schema.h"
#include "placement/placer.h"

namespace switchyard {
namespace {

constexpr int kBlocks = 1000;
constexpr int kWidth = 64;
constexpr int kRows = 16;

void add_float_initializer(onnx::GraphProto* g, const std::string& name,
                           const std::vector<int64_t>& dims, std::mt19937_64& rng) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    count *= d;
  }
  std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
  std::string raw(static_cast<size_t>(count) * sizeof(float), '\0');
  for (int64_t i = 0; i < count; ++i) {
    float v = uniform(rng);
    std::memcpy(raw.data() + static_cast<size_t>(i) * sizeof(float), &v, sizeof(float));
  }
  t->set_raw_data(raw);
}

void set_tensor_type(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(kRows);
  tt->mutable_shape()->add_dim()->set_dim_value(kWidth);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::string& output) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string& in : inputs) n->add_input(in);
  n->add_output(output);
  return n;
}

// The serialized synthetic model (see the top of the file).
std::string synthetic_model_bytes() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("placement_bench");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("synthetic_ladder");
  set_tensor_type(g->add_input(), "X");
  onnx::TensorProto* flag = g->add_initializer();
  flag->set_name("flag");
  flag->set_data_type(onnx::TensorProto::BOOL);
  flag->add_int32_data(1);
  std::mt19937_64 rng(42);
  std::string cur = "X";
  for (int b = 0; b < kBlocks; ++b) {
    std::string p = "b" + std::to_string(b) + "/";
    add_float_initializer(g, p + "W", {kWidth, kWidth}, rng);
    add_float_initializer(g, p + "bias1", {kWidth}, rng);
    add_float_initializer(g, p + "bias2", {kWidth}, rng);
    add_node(g, "MatMul", p + "matmul", {cur, p + "W"}, p + "mm");
    add_node(g, "Add", p + "add1", {p + "mm", p + "bias1"}, p + "a1");
    add_node(g, "Relu", p + "relu1", {p + "a1"}, p + "r1");
    add_node(g, "Neg", p + "neg", {p + "r1"}, p + "n");
    if (b % 10 == 9) {
      add_node(g, "Shape", p + "shape", {p + "n"}, p + "s");
      add_node(g, "Reshape", p + "reshape", {p + "n", p + "s"}, p + "t");
    } else if (b % 10 == 4) {
      // An If whose branches read Neg's output from the enclosing graph.
      onnx::NodeProto* branch = add_node(g, "If", p + "if", {"flag"}, p + "s");
      for (const char* which : {"then", "else"}) {
        onnx::AttributeProto* a = branch->add_attribute();
        a->set_name(std::string(which) + "_branch");
        a->set_type(onnx::AttributeProto::GRAPH);
        onnx::GraphProto* body = a->mutable_g();
        body->set_name(p + which);
        std::string out = p + which + "_out";
        add_node(body, which == std::string("then") ? "Sigmoid" : "Tanh", p + which + "_op",
                 {p + "n"}, out);
        set_tensor_type(body->add_output(), out);
      }
      add_node(g, "Tanh", p + "tanh", {p + "s"}, p + "t");
    } else {
      add_node(g, "Sigmoid", p + "sigmoid", {p + "n"}, p + "s");
      add_node(g, "Tanh", p + "tanh", {p + "s"}, p + "t");
    }
    add_node(g, "Mul", p + "mul", {p + "t", p + "n"}, p + "m");
    add_node(g, "Abs", p + "abs", {p + "m"}, p + "ab");
    add_node(g, "Add", p + "add2", {p + "ab", p + "bias2"}, p + "a2");
    add_node(g, "Relu", p + "relu2", {p + "a2"}, p + "out");
    cur = p + "out";
  }
  set_tensor_type(g->add_output(), cur);
  return model.SerializeAsString();
}

const std::string& model_bytes() {
  static const std::string bytes = synthetic_model_bytes();
  return bytes;
}

std::unique_ptr<ir::Graph> import_synthetic() {
  const std::string& bytes = model_bytes();
  return onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "synthetic");
}

void BM_ImportModel(benchmark::State& state) {
  std::unique_ptr<ir::Graph> graph;
  for (auto _ : state) {
    graph = import_synthetic();
    benchmark::DoNotOptimize(graph.get());
    state.PauseTiming();
    graph.reset();  // freeing the graph is not importing it
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(import_synthetic()->nodes().size());
}

void BM_PlaceModel(benchmark::State& state) {
  std::unique_ptr<ir::Graph> graph = import_synthetic();
  ops::infer_types(*graph);
  sim::SimDeviceConfig config;
  config.exclude_ops = {"Neg", "Abs"};
  config.copy_latency_us = 1.0;
  std::vector<std::shared_ptr<backends::Backend>> devices = {std::make_shared<cpu::CpuBackend>()};
  for (auto& s : sim::create_sim_backends({config, config})) devices.push_back(std::move(s));
  std::vector<const backends::Backend*> raw;
  for (const auto& d : devices) raw.push_back(d.get());
  placement::Policy policy;
  policy.devices = {"sim:0"};

  std::map<std::string, int> causes;
  size_t partitions = 0, copies = 0;
  for (auto _ : state) {
    auto placed = std::make_unique<placement::Placement>(placement::place(*graph, raw, policy));
    benchmark::DoNotOptimize(placed.get());
    state.PauseTiming();
    partitions = placed->partitions.size();
    copies = placed->copies.size();
    causes.clear();
    for (const auto& d : placed->report.nodes) ++causes[placement::cause_name(d.cause)];
    placed.reset();
    state.ResumeTiming();
  }
  state.counters["nodes"] = static_cast<double>(graph->nodes().size());
  state.counters["partitions"] = static_cast<double>(partitions);
  state.counters["copies"] = static_cast<double>(copies);
  for (const auto& [cause, count] : causes) state.counters[cause] = count;
}

BENCHMARK(BM_ImportModel)->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_PlaceModel)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The console output, plus the time of each benchmark (the median when repeated) for the ratio.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      bool plain = run.run_type == Run::RT_Iteration;
      bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      const std::string& name = run.run_name.function_name;
      if (median || (plain && !medians_.count(name))) ms_[name] = run.GetAdjustedRealTime();
      if (median) medians_.insert(name);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double ms(const std::string& name) const {
    auto it = ms_.find(name);
    return it == ms_.end() ? -1 : it->second;
  }

 private:
  std::map<std::string, double> ms_;
  std::set<std::string> medians_;
};

}  // namespace
}  // namespace switchyard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  switchyard::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  double import_ms = reporter.ms("BM_ImportModel");
  double place_ms = reporter.ms("BM_PlaceModel");
  if (import_ms > 0 && place_ms > 0)
    std::printf("place/import = %.3f (place %.2f ms, import %.2f ms, %d nodes)\n",
                place_ms / import_ms, place_ms, import_ms, switchyard::kBlocks * 10);
  benchmark::Shutdown();
  return 0;
}
