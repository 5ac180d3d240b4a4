// fuse_layer_norm: the decomposed layer normalization of pre-opset-17 exports becomes one
// LayerNormalization node; the fused executable matches a plain reference and the unfused one;
// chains it must not touch stay as they are.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "compiler/compiler.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "passes/passes.h"
#include "support/op_test_util.h"

namespace switchyard::passes {
namespace {

using testing::int64_tensor;
using testing::random_tensor;
using testing::tensor_of;

struct ChainSpec {
  ir::Shape x_shape = {ir::Dim("batch"), ir::Dim(5), ir::Dim(8)};
  std::vector<int64_t> axes = {-1};  // ReduceMean axes (its input 1, as the importer writes
                                     // every opset); empty: no axes input (all axes)
  bool square_by_mul = false;        // Mul(d, d) instead of Pow(d, 2)
  double exponent = 2.0;
  bool gamma = true, beta = true;
  std::vector<int64_t> param_shape = {8};
  bool mean_is_output = false;  // an intermediate the user reads
};

// The decomposed chain as exporters write it; output "Y" (and "mean" when asked).
std::unique_ptr<ir::Graph> decomposed(const ChainSpec& s) {
  auto g = std::make_unique<ir::Graph>("ln");
  ir::Value* x = g->add_input("X", ir::Type::tensor(ir::DType::Float32, s.x_shape));
  auto reduce_mean = [&](ir::Value* in, const std::string& name) {
    std::vector<ir::Value*> ins = {in};
    if (!s.axes.empty()) ins.push_back(g->add_constant(name + "_axes", int64_tensor(s.axes)));
    return g->add_node("ReduceMean", name, ins, {name})->output(0);
  };
  ir::Value* mean = reduce_mean(x, "mean");
  ir::Value* d = g->add_node("Sub", "sub", {x, mean}, {"d"})->output(0);
  ir::Value* sq =
      s.square_by_mul
          ? g->add_node("Mul", "sq", {d, d}, {"sq"})->output(0)
          : g->add_node(
                 "Pow", "sq",
                 {d, g->add_constant("two", tensor_of(ir::DType::Float32, {}, {s.exponent}))},
                 {"sq"})
                ->output(0);
  ir::Value* var = reduce_mean(sq, "var");
  ir::Value* eps = g->add_constant("eps", tensor_of(ir::DType::Float32, {}, {1e-5}));
  ir::Value* ve = g->add_node("Add", "add_eps", {var, eps}, {"ve"})->output(0);
  ir::Value* den = g->add_node("Sqrt", "sqrt", {ve}, {"den"})->output(0);
  ir::Value* y = g->add_node("Div", "div", {d, den}, {"n"})->output(0);
  if (s.gamma) {
    ir::Value* gamma =
        g->add_constant("gamma", random_tensor(ir::DType::Float32, s.param_shape, 11, 0.5, 1.5));
    y = g->add_node("Mul", "scale", {gamma, y}, {"scaled"})->output(0);  // constant first
  }
  if (s.beta) {
    ir::Value* beta = g->add_constant("beta", random_tensor(ir::DType::Float32, s.param_shape, 12));
    y = g->add_node("Add", "shift", {y, beta}, {"shifted"})->output(0);
  }
  g->add_node("Identity", "out", {y}, {"Y"});
  g->add_output(g->find_value("Y"));
  if (s.mean_is_output) g->add_output(mean);
  ops::infer_types(*g);
  return g;
}

size_t count(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type() == op;
  return n;
}

std::vector<ir::Datum> run(const ChainSpec& s, bool optimize, const ir::Tensor& x) {
  compiler::CompileOptions options;
  options.optimize = optimize;
  auto exe = compiler::compile(decomposed(s), {std::make_shared<cpu::CpuBackend>()}, options);
  return exe->run(std::vector<ir::Datum>{ir::Datum(x)});
}

// Plain layer norm over the last `k` axes of a row-major [rows, cols] view.
std::vector<float> reference(const ir::Tensor& x, int64_t cols, const ir::Graph& g,
                             const ChainSpec& s) {
  const float* gamma = s.gamma ? g.find_value("gamma")->constant().data<float>() : nullptr;
  const float* beta = s.beta ? g.find_value("beta")->constant().data<float>() : nullptr;
  const int64_t pn = testing::product(s.param_shape);
  std::vector<float> out(static_cast<size_t>(x.numel()));
  for (int64_t r = 0; r < x.numel() / cols; ++r) {
    const float* row = x.data<float>() + r * cols;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += row[c];
    mean /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      double v = (row[c] - mean) / std::sqrt(var + 1e-5);
      if (gamma) v *= gamma[c % pn];
      if (beta) v += beta[c % pn];
      out[static_cast<size_t>(r * cols + c)] = static_cast<float>(v);
    }
  }
  return out;
}

void expect_fused_matches(const ChainSpec& s, const std::vector<int64_t>& shape, int64_t cols) {
  auto g = decomposed(s);
  EXPECT_EQ(fuse_layer_norm(*g), 1u);
  ir::verify(*g);
  EXPECT_EQ(count(*g, "LayerNormalization"), 1u);
  EXPECT_EQ(g->nodes().size(), 2u);  // LayerNormalization, Identity
  const ir::Node* ln = g->nodes()[0].get();
  EXPECT_EQ(ln->attr_int("axis"), s.axes.empty() ? -static_cast<int64_t>(s.x_shape.size())
                                                 : -static_cast<int64_t>(s.axes.size()));
  EXPECT_FLOAT_EQ(ln->attr_float("epsilon"), 1e-5f);
  EXPECT_EQ(ln->num_inputs(), s.beta ? 3u : 2u);
  // The chain's last value keeps its name and reader.
  EXPECT_EQ(ln->output(0)->name(), s.beta ? "shifted" : s.gamma ? "scaled" : "n");
  EXPECT_EQ(ln->output(0)->uses().size(), 1u);

  ir::Tensor x = random_tensor(ir::DType::Float32, shape, 7, -3.0, 3.0);
  auto fused = run(s, true, x), plain = run(s, false, x);
  std::vector<float> want = reference(x, cols, *decomposed(s), s);
  ASSERT_EQ(fused[0].tensor.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(fused[0].tensor.data<float>()[i], want[i], 1e-5) << i;
    EXPECT_NEAR(plain[0].tensor.data<float>()[i], want[i], 1e-5) << i;
  }
}

TEST(FuseLayerNorm, FusesThePowFormWithScaleAndBias) {
  expect_fused_matches(ChainSpec{}, {3, 5, 8}, 8);
}

TEST(FuseLayerNorm, FusesTheMulFormOverTwoAxes) {
  ChainSpec s;
  s.axes = {1, 2};  // non-negative axes of a rank-3 input: the trailing two
  s.square_by_mul = true;
  s.beta = false;
  s.param_shape = {1, 8};  // broadcast over axis 1
  expect_fused_matches(s, {2, 5, 8}, 40);
}

TEST(FuseLayerNorm, FusesWithoutScaleOrBias) {
  ChainSpec s;
  s.gamma = s.beta = false;
  expect_fused_matches(s, {4, 5, 8}, 8);
}

TEST(FuseLayerNorm, NoAxesInputNormalizesEverything) {
  ChainSpec s;
  s.x_shape = {ir::Dim(5), ir::Dim(8)};
  s.axes = {};
  s.param_shape = {8};
  expect_fused_matches(s, {5, 8}, 40);  // axis -2: both axes
}

TEST(FuseLayerNorm, LeavesChainsItCannotFuse) {
  auto unchanged = [](const ChainSpec& s, const char* why) {
    auto g = decomposed(s);
    size_t before = g->nodes().size();
    EXPECT_EQ(fuse_layer_norm(*g), 0u) << why;
    EXPECT_EQ(g->nodes().size(), before) << why;
  };
  ChainSpec read_mean;
  read_mean.mean_is_output = true;
  unchanged(read_mean, "an intermediate is a graph output");
  ChainSpec cube;
  cube.exponent = 3.0;
  unchanged(cube, "Pow by 3 is not a variance");
  ChainSpec middle;
  middle.axes = {1};
  middle.param_shape = {5, 1};
  unchanged(middle, "the axes are not the trailing ones");
  ChainSpec dynamic;
  dynamic.x_shape = {ir::Dim("batch"), ir::Dim(5), ir::Dim("hidden")};
  dynamic.gamma = dynamic.beta = false;
  unchanged(dynamic, "the normalized dim is not static");
}

TEST(FuseLayerNorm, ScaleThatWidensTheResultStaysAMul) {
  // gamma [5, 8] over a normalization of the last axis only: it is not a per-feature scale,
  // so the Mul (and the Add after it) stay; the normalization itself still fuses.
  ChainSpec s;
  s.param_shape = {5, 8};
  auto g = decomposed(s);
  EXPECT_EQ(fuse_layer_norm(*g), 1u);
  EXPECT_EQ(count(*g, "LayerNormalization"), 1u);
  EXPECT_EQ(count(*g, "Mul"), 1u);
  EXPECT_EQ(count(*g, "Add"), 1u);
  ir::Tensor x = random_tensor(ir::DType::Float32, {2, 5, 8}, 3, -2.0, 2.0);
  auto fused = run(s, true, x), plain = run(s, false, x);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_NEAR(fused[0].tensor.data<float>()[i], plain[0].tensor.data<float>()[i], 1e-5) << i;
}

}  // namespace
}  // namespace switchyard::passes
