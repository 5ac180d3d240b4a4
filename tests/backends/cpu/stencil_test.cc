// Stencil (domain ai.switchyard) on the CPU against a plain reference (harness/cases/
// stencil_reference.h, shared with the op harness): X padded explicitly into a bigger array
// first, then every window reduced in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_kernels.h"
#include "harness/cases/stencil_reference.h"
#include "ir/check.h"
#include "ops/op_kind.h"
#include "ops/schema.h"
#include "runtime/graph_program.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

using stencil::reference_stencil;
using stencil::stencil_attrs;
using stencil::StencilCase;

// One Stencil node "node" of domain ai.switchyard over graph inputs X and W.
std::unique_ptr<ir::Graph> stencil_graph(const StencilCase& c, const std::vector<int64_t>& w) {
  auto g = std::make_unique<ir::Graph>("test");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::Float32, ir::make_shape(c.x)));
  ir::Value* wv = g->add_input("w", ir::Type::tensor(DType::Float32, ir::make_shape(w)));
  ir::Node* n = g->add_node("Stencil", "node", {x, wv}, {"y"}, std::string(ops::kSwitchyardDomain));
  for (const auto& a : stencil_attrs(c)) n->set_attribute(a);
  g->add_output(n->output(0));
  ops::infer_types(*g);
  ir::verify(*g);
  return g;
}

Tensor run_stencil(const StencilCase& c, const Tensor& x, const Tensor& w) {
  auto g = stencil_graph(c, w.shape());
  runtime::GraphProgram program(*g, cpu::cpu_kernels());
  auto out = run_program(program, {ir::Datum(x), ir::Datum(w)});
  return out.at(0).tensor;
}

void expect_matches_reference(const StencilCase& c, uint64_t seed) {
  Tensor x = random_tensor(DType::Float32, c.x, seed, -2.0, 2.0);
  Tensor w = random_tensor(DType::Float32, c.window, seed + 1, -1.0, 1.0);
  Tensor expected = reference_stencil(c, x, w);
  EXPECT_TENSOR_NEAR(run_stencil(c, x, w), expected, 1e-5, 1e-5);
}

TEST(Stencil, Laplacian2dZeroPadding) {
  StencilCase c{{2, 3, 9, 11}, {3, 3}};
  c.pads = {1, 1, 1, 1};
  Tensor x = random_tensor(DType::Float32, c.x, 7, -2.0, 2.0);
  Tensor w = tensor_of(DType::Float32, {3, 3}, {0, 1, 0, 1, -4, 1, 0, 1, 0});
  Tensor y = run_stencil(c, x, w);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 3, 9, 11}));
  EXPECT_TENSOR_NEAR(y, reference_stencil(c, x, w), 1e-5, 1e-5);
  // One interior point by hand: the 5-point formula.
  const float* xp = x.data<float>();
  auto at = [&](int64_t h, int64_t w_) { return xp[h * 11 + w_]; };
  float hand = at(3, 5) + at(5, 5) + at(4, 4) + at(4, 6) - 4 * at(4, 5);
  EXPECT_NEAR(y.data<float>()[4 * 11 + 5], hand, 1e-5);
}

TEST(Stencil, SevenPoint3d) {
  StencilCase c{{1, 2, 5, 6, 7}, {3, 3, 3}};
  c.pads = {1, 1, 1, 1, 1, 1};
  std::vector<double> seven(27, 0.0);
  for (int t : {4, 10, 12, 14, 16, 22}) seven[static_cast<size_t>(t)] = 1;
  seven[13] = -6;
  Tensor x = random_tensor(DType::Float32, c.x, 11, -2.0, 2.0);
  Tensor w = tensor_of(DType::Float32, {3, 3, 3}, seven);
  Tensor y = run_stencil(c, x, w);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 2, 5, 6, 7}));
  EXPECT_TENSOR_NEAR(y, reference_stencil(c, x, w), 1e-5, 1e-5);
}

TEST(Stencil, EveryReductionMatchesReference) {
  uint64_t seed = 100;
  for (const char* r : {"sum", "min", "max", "argmin", "argmax"}) {
    SCOPED_TRACE(r);
    StencilCase c2{{2, 2, 7, 8}, {3, 2}, r};
    c2.pads = {1, 0, 1, 1};
    expect_matches_reference(c2, seed++);
    StencilCase c3{{1, 3, 4, 5, 6}, {2, 3, 2}, r};
    expect_matches_reference(c3, seed++);
  }
}

TEST(Stencil, EveryPaddingModeWithPadsMatchesReference) {
  uint64_t seed = 200;
  for (const char* p : {"zero", "clamp", "reflect", "symmetric"}) {
    for (const char* r : {"sum", "max", "argmin"}) {
      SCOPED_TRACE(std::string(p) + " " + r);
      StencilCase c2{{1, 2, 6, 5}, {3, 4}, r, p};
      c2.pads = {2, 3, 1, 4};  // reflect allows pads up to size - 1 (here 4)
      expect_matches_reference(c2, seed++);
      StencilCase c3{{2, 1, 4, 5, 3}, {3, 2, 3}, r, p};
      c3.pads = {1, 2, 2, 3, 2, 1};
      expect_matches_reference(c3, seed++);
    }
  }
  // Symmetric allows pads equal to the size.
  StencilCase sym{{1, 1, 3, 4}, {3, 3}, "sum", "symmetric"};
  sym.pads = {3, 4, 3, 4};
  expect_matches_reference(sym, seed++);
}

TEST(Stencil, StridesAndDilationsMatchReference) {
  StencilCase c{{2, 2, 13, 11}, {3, 3}, "sum", "clamp", {2, 3}, {2, 1}, {1, 2, 3, 0}};
  Tensor x = random_tensor(DType::Float32, c.x, 300, -2.0, 2.0);
  Tensor w = random_tensor(DType::Float32, c.window, 301);
  Tensor y = run_stencil(c, x, w);
  // floor((13 + 4 - 2*2 - 1) / 2) + 1 = 7; floor((11 + 2 - 2 - 1) / 3) + 1 = 4.
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2, 7, 4}));
  EXPECT_TENSOR_NEAR(y, reference_stencil(c, x, w), 1e-5, 1e-5);
  StencilCase c3{{1, 2, 9, 8, 10}, {2, 3, 2}, "argmax",          "reflect",
                 {3, 1, 2},        {1, 2, 3}, {1, 0, 2, 1, 2, 0}};
  expect_matches_reference(c3, 302);
}

void expect_stencil_error(const StencilCase& c, std::vector<int64_t> w_shape,
                          const std::string& fragment) {
  try {
    stencil_graph(c, w_shape);
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << msg;
    EXPECT_NE(msg.find("node 'node'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

TEST(Stencil, BadAttributesAndShapesAreRefusedNamingTheNode) {
  StencilCase reflect{{1, 1, 4, 4}, {3, 3}, "sum", "reflect"};
  reflect.pads = {4, 1, 1, 1};
  expect_stencil_error(reflect, {3, 3}, "reflect padding needs pads below the input size");
  StencilCase sym{{1, 1, 4, 4}, {3, 3}, "sum", "symmetric"};
  sym.pads = {1, 1, 5, 1};
  expect_stencil_error(sym, {3, 3}, "symmetric padding");
  expect_stencil_error({{1, 1, 4, 4}, {3}}, {3}, "the window W has rank 1");
  expect_stencil_error({{1, 1, 4, 4, 4}, {3, 3}}, {3, 3}, "X has rank 5");
  StencilCase zero_stride{{1, 1, 4, 4}, {3, 3}};
  zero_stride.strides = {1, 0};
  expect_stencil_error(zero_stride, {3, 3}, "strides[1] is 0, expected at least 1");
  StencilCase bad_dil{{1, 1, 4, 4}, {3, 3}};
  bad_dil.dilations = {1, 1, 1};
  expect_stencil_error(bad_dil, {3, 3}, "dilations has 3 entries, expected 2");
  StencilCase neg_pad{{1, 1, 4, 4}, {3, 3}};
  neg_pad.pads = {0, -1, 0, 0};
  expect_stencil_error(neg_pad, {3, 3}, "pads[1] is -1");
  expect_stencil_error({{1, 1, 4, 2}, {3, 3}}, {3, 3}, "the output would be empty");
  StencilCase dilated{{1, 1, 4, 9}, {2, 2}};
  dilated.dilations = {4, 1};  // extent 5 > 4
  expect_stencil_error(dilated, {2, 2}, "does not fit spatial dim 0");
  expect_stencil_error({{1, 1, 4, 4}, {3, 3}, "mean"}, {3, 3}, "reduction 'mean' is unknown");
  expect_stencil_error({{1, 1, 4, 4}, {3, 3}, "sum", "wrap"}, {3, 3}, "padding 'wrap'");
  StencilCase huge{{1, 1, 4, 4}, {3, 3}};
  huge.dilations = {int64_t{1} << 62, 1};
  expect_stencil_error(huge, {3, 3}, "overflows int64");
}

TEST(Stencil, DefaultDomainHasNoStencil) {
  auto g = std::make_unique<ir::Graph>("test");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::Float32, ir::make_shape({1, 1, 4, 4})));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::Float32, ir::make_shape({3, 3})));
  g->add_node("Stencil", "node", {x, w}, {"y"});
  expect_error([&] { ops::infer_types(*g); }, ErrorCode::Unsupported, "'Stencil'");
}

TEST(Stencil, RunsOnASimulatedDevice) {
  StencilCase c{{2, 3, 8, 9}, {3, 3}, "max", "symmetric", {1, 2}, {}, {1, 2, 2, 1}};
  Tensor x = random_tensor(DType::Float32, c.x, 400, -2.0, 2.0);
  Tensor w = random_tensor(DType::Float32, c.window, 401);
  Options o;
  o.num_threads = 2;
  o.sim_devices = 1;
  o.device = "sim:0";
  o.pins = {"*=sim:0"};
  o.fallback = "strict";
  Executable exe = Model::from_graph(stencil_graph(c, w.shape())).compile(o);
  auto out = exe.run({{"x", x}, {"w", w}});
  EXPECT_TENSOR_NEAR(out.at("y"), reference_stencil(c, x, w), 1e-5, 1e-5);
}

}  // namespace
}  // namespace switchyard::testing
