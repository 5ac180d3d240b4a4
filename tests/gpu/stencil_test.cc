// CUDA Stencil kernel (op of domain ai.switchyard) against the CPU backend on seeded random
// data: every reduction and padding mode, 2-D and 3-D windows, strides, dilations, pads, and an
// empty batch. The node carries its domain, so the graph is built here rather than by OpCase.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"
#include "ops/op_kind.h"
#include "ops/schema.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

struct StencilCase {
  std::vector<int64_t> x;
  std::vector<int64_t> window;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
};

std::unique_ptr<ir::Graph> stencil_graph(const StencilCase& c, const std::string& reduction,
                                         const std::string& padding) {
  auto g = std::make_unique<ir::Graph>("test");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::Float32, ir::make_shape(c.x)));
  ir::Value* w = g->add_input("w", ir::Type::tensor(DType::Float32, ir::make_shape(c.window)));
  ir::Node* n = g->add_node("Stencil", "node", {x, w}, {"y"}, std::string(ops::kSwitchyardDomain));
  n->set_attribute(Attribute::make_string("reduction", reduction));
  n->set_attribute(Attribute::make_string("padding", padding));
  if (!c.strides.empty()) n->set_attribute(Attribute::make_ints("strides", c.strides));
  if (!c.dilations.empty()) n->set_attribute(Attribute::make_ints("dilations", c.dilations));
  if (!c.pads.empty()) n->set_attribute(Attribute::make_ints("pads", c.pads));
  g->add_output(n->output(0));
  ops::infer_types(*g);
  return g;
}

Tensor run_on(const std::string& device, const StencilCase& c, const std::string& reduction,
              const std::string& padding, const Tensor& x, const Tensor& w) {
  Options o;
  o.device = device;
  o.fallback = "strict";
  if (device != "cpu") o.pins = {"*=" + device};
  Executable exe = Model::from_graph(stencil_graph(c, reduction, padding)).compile(o);
  return exe.run({{"x", x}, {"w", w}}).at("y");
}

TEST(CudaStencil, MatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<StencilCase> cases = {
      {{2, 3, 17, 19}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {{1, 4, 9, 10}, {3, 4}, {2, 1}, {1, 2}, {2, 3, 1, 4}},
      {{2, 2, 6, 7, 8}, {3, 3, 3}, {}, {}, {1, 1, 1, 1, 1, 1}},
      {{1, 3, 9, 8, 10}, {2, 3, 2}, {3, 1, 2}, {1, 2, 3}, {1, 0, 2, 1, 2, 0}},
      {{0, 3, 8, 8}, {2, 2}},  // empty batch
  };
  uint64_t seed = 500;
  for (const char* reduction : {"sum", "min", "max", "argmin", "argmax"})
    for (const char* padding : {"zero", "clamp", "reflect", "symmetric"})
      for (const StencilCase& c : cases) {
        SCOPED_TRACE(std::string(reduction) + " " + padding + " x " + shape_to_string(c.x) +
                     " window " + shape_to_string(c.window));
        Tensor x = random_tensor(DType::Float32, c.x, ++seed, -2.0, 2.0);
        Tensor w = random_tensor(DType::Float32, c.window, ++seed);
        Tensor cpu = run_on("cpu", c, reduction, padding, x, w);
        Tensor gpu = run_on("cuda:0", c, reduction, padding, x, w);
        EXPECT_TENSOR_NEAR(gpu, cpu, 1e-5, 1e-5);
      }
}

}  // namespace
}  // namespace switchyard::testing
