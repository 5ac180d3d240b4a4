// GPU-only tests of the conv family (src/backends/cuda/kernels/conv.cc, cuDNN's graph API): the
// tf32 / fp16 / bf16 partition precisions on resnet50 and mobilenet_v2 shapes against the cpu,
// TF32 used only when asked, the refusal of four spatial dims, and the fused epilogues
// (Conv+Add+Relu/Sigmoid/Tanh/Clip, resnet's residual Add) through whole graphs, with the trace
// showing that the absorbed nodes are gone. Every shape and dtype at fp32 against a plain
// reference runs in the op harness (tests/harness/cases/conv.cc), on cpu, sim:0 and cuda:0.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "runtime/profiler.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

struct ConvCase {
  std::string name;
  std::vector<int64_t> x = {}, w = {};  // x [N, C, in...], w [M, C/group, k...]
  int64_t group = 1;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // empty = default
  std::string auto_pad = "NOTSET";
  bool bias = true;
};

std::vector<Attribute> conv_attrs(const ConvCase& c) {
  std::vector<Attribute> a = {Attribute::make_int("group", c.group),
                              Attribute::make_string("auto_pad", c.auto_pad)};
  if (!c.strides.empty()) a.push_back(Attribute::make_ints("strides", c.strides));
  if (!c.dilations.empty()) a.push_back(Attribute::make_ints("dilations", c.dilations));
  if (!c.pads.empty()) a.push_back(Attribute::make_ints("pads", c.pads));
  return a;
}

// X and W of `dtype` with seeded values (W scaled down so sums stay near 1); B when asked.
// constant_w makes W and B initializers (the weight cache path), else graph inputs.
OpCase conv_case(const ConvCase& c, DType dtype, bool constant_w, uint64_t seed) {
  ir::Tensor x = random_tensor(dtype, c.x, seed);
  ir::Tensor w = random_tensor(dtype, c.w, seed + 1, -0.5, 0.5);
  OpCase oc = make_case("Conv", {x, w}, conv_attrs(c), 1, {false, constant_w, constant_w});
  if (c.bias) oc.inputs.push_back(random_tensor(dtype, {c.w[0]}, seed + 2));
  return oc;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      // resnet50: the 7x7 stride-2 stem, a 3x3 bottleneck conv, a 1x1 stride-2 downsample.
      {"resnet stem 7x7 s2 p3", {1, 3, 33, 35}, {16, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}},
      {"resnet 3x3 batch 3",
       {3, 16, 15, 15},
       {16, 16, 3, 3},
       1,
       {},
       {},
       {1, 1, 1, 1},
       "NOTSET",
       false},
      {"resnet 1x1 s2", {1, 32, 14, 13}, {64, 32, 1, 1}, 1, {2, 2}},
      // mobilenet_v2: depthwise 3x3 (group == C), stride 1 and 2, then a 1x1 projection.
      {"depthwise 3x3", {1, 32, 17, 17}, {32, 1, 3, 3}, 32, {}, {}, {1, 1, 1, 1}},
      {"depthwise 3x3 s2 batch 3",
       {3, 24, 16, 15},
       {24, 1, 3, 3},
       24,
       {2, 2},
       {},
       {1, 1, 1, 1},
       "NOTSET",
       false},
      {"1x1 projection", {1, 24, 9, 9}, {16, 24, 1, 1}},
      {"grouped", {2, 16, 9, 11}, {24, 4, 3, 3}, 4, {}, {}, {1, 0, 1, 2}},
      {"dilated", {1, 8, 20, 19}, {8, 8, 3, 3}, 1, {}, {2, 3}, {2, 3, 2, 3}},
      {"SAME_UPPER s1", {1, 8, 10, 11}, {8, 8, 3, 3}, 1, {}, {}, {}, "SAME_UPPER"},
      {"SAME_UPPER s2 asymmetric", {1, 8, 10, 10}, {12, 8, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
      {"SAME_LOWER even kernel", {2, 4, 9, 8}, {6, 4, 2, 2}, 1, {}, {}, {}, "SAME_LOWER", false},
      {"VALID s2", {1, 6, 13, 13}, {8, 6, 3, 3}, 1, {2, 2}, {}, {}, "VALID"},
      {"explicit asymmetric pads", {1, 4, 7, 9}, {4, 4, 3, 3}, 1, {}, {}, {0, 2, 1, 0}},
      {"1-D", {2, 4, 19}, {6, 4, 3}, 1, {}, {}, {1, 1}},
      {"1-D grouped s2 SAME_UPPER asymmetric", {1, 8, 20}, {8, 2, 3}, 4, {2}, {}, {}, "SAME_UPPER"},
      {"3-D", {1, 4, 5, 6, 7}, {8, 4, 3, 3, 3}, 1, {}, {}, {1, 1, 1, 1, 1, 1}},
      {"3-D strided", {2, 3, 6, 5, 7}, {4, 3, 2, 3, 2}, 1, {2, 1, 2}, {1, 2, 1}, {}, "VALID"},
  };
  return cases;
}

TEST(CudaConv, ReducedPrecisionPartitionsMatchCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 200;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    expect_gpu_matches_cpu(conv_case(c, DType::Float32, true, seed), 2e-2, 2e-2, "fp16");
    expect_gpu_matches_cpu(conv_case(c, DType::Float32, true, seed + 1), 2e-2, 2e-2, "bf16");
    expect_gpu_matches_cpu(conv_case(c, DType::Float32, true, seed + 2), 2e-2, 2e-2, "tf32");
    seed += 3;
  }
}

TEST(CudaConv, FourSpatialDimsAreRefusedWithAReason) {
  SY_SKIP_WITHOUT_GPU();
  ConvCase c{"4-D spatial", {1, 2, 3, 4, 3, 3}, {2, 1, 2, 2, 2, 2}, 2};
  expect_error([&] { run_op_gpu(conv_case(c, DType::Float32, true, 3)); },
               ErrorCode::PlacementFailed, "1 to 3 spatial dims");
}

TEST(CudaConv, TF32IsUsedOnlyWhenAsked) {
  SY_SKIP_WITHOUT_GPU();
  // A 1x1 conv whose exact fp32 result lies in the low bits tf32 drops: fp32 must keep them.
  Tensor x = tensor_of(DType::Float32, {1, 2, 1, 1}, {1.0 + std::ldexp(1.0, -20), 1.0});
  Tensor w = tensor_of(DType::Float32, {1, 2, 1, 1}, {1.0, -1.0});
  OpCase c = make_case("Conv", {x, w}, {}, 1, {false, true});
  std::vector<ir::Datum> got = run_op_gpu(c, "fp32");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].tensor.data<float>()[0], static_cast<float>(std::ldexp(1.0, -20)));
  expect_gpu_matches_cpu(c, 5e-3, 5e-3, "tf32");
}

// ---- Fused epilogues, through whole graphs (the CUDA partition fuses them) -------------------

// x [2, 8, 9, 7] -> Conv (w [k, 8, 3, 3], pads 1, optional bias) -> optional Add of a
// per-channel constant [1, k, 1, 1] and/or of the residual input r [2, k, 9, 7] -> activation.
struct ConvChain {
  std::vector<int64_t> x = {2, 8, 9, 7};
  int64_t out_channels = 16;
  int64_t group = 1;
  bool bias = true;
  bool channel_add = false;
  bool residual = false;
  bool residual_first = false;            // Add(r, y) instead of Add(y, r)
  std::string activation;                 // "", "Relu", "Sigmoid", "Tanh", "Clip"
  double clip_lo = -0.25, clip_hi = 1.0;  // both bounds bite on these values
  bool expose_conv = false;               // the Conv output is a graph output too (no fusion then)
};

std::vector<int64_t> chain_out_shape(const ConvChain& s) {
  return {s.x[0], s.out_channels, s.x[2], s.x[3]};
}

std::unique_ptr<ir::Graph> conv_chain_graph(const ConvChain& s, uint64_t seed) {
  auto g = std::make_unique<ir::Graph>("main");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::Float32, ir::make_shape(s.x)));
  ir::Value* w = g->add_constant(
      "w",
      random_tensor(DType::Float32, {s.out_channels, s.x[1] / s.group, 3, 3}, seed + 1, -0.5, 0.5));
  std::vector<ir::Value*> conv_in = {x, w};
  if (s.bias)
    conv_in.push_back(
        g->add_constant("b", random_tensor(DType::Float32, {s.out_channels}, seed + 2)));
  ir::Node* conv = g->add_node("Conv", "conv", conv_in, {"y"});
  conv->set_attribute(Attribute::make_ints("pads", {1, 1, 1, 1}));
  conv->set_attribute(Attribute::make_int("group", s.group));
  ir::Value* y = conv->output(0);
  std::vector<ir::Value*> outputs;
  if (s.expose_conv) outputs.push_back(y);
  if (s.channel_add) {
    ir::Value* c =
        g->add_constant("c", random_tensor(DType::Float32, {1, s.out_channels, 1, 1}, seed + 3));
    y = g->add_node("Add", "add_c", {y, c}, {"y_c"})->output(0);
  }
  if (s.residual) {
    ir::Value* r =
        g->add_input("r", ir::Type::tensor(DType::Float32, ir::make_shape(chain_out_shape(s))));
    std::vector<ir::Value*> in =
        s.residual_first ? std::vector<ir::Value*>{r, y} : std::vector<ir::Value*>{y, r};
    y = g->add_node("Add", "add_r", in, {"y_r"})->output(0);
  }
  if (s.activation == "Clip") {
    ir::Value* lo = g->add_constant("lo", tensor_of(DType::Float32, {}, {s.clip_lo}));
    ir::Value* hi = g->add_constant("hi", tensor_of(DType::Float32, {}, {s.clip_hi}));
    y = g->add_node("Clip", "act", {y, lo, hi}, {"y_act"})->output(0);
  } else if (!s.activation.empty()) {
    y = g->add_node(s.activation, "act", {y}, {"y_act"})->output(0);
  }
  outputs.push_back(y);
  for (ir::Value* v : outputs) g->add_output(v);
  return g;
}

// Runs the chain on the cpu and on cuda:0 at `precision` and compares every output. With
// `expect_fused` (fp32 runs: other precisions add casts), also expects the GPU trace to show
// the Conv alone: every Add and activation absorbed into it.
void expect_conv_chain_matches_cpu(const ConvChain& s, uint64_t seed, double rtol, double atol,
                                   const std::string& precision = "fp32",
                                   bool expect_fused = false) {
  std::map<std::string, Tensor> feeds = {{"x", random_tensor(DType::Float32, s.x, seed)}};
  if (s.residual) feeds["r"] = random_tensor(DType::Float32, chain_out_shape(s), seed + 4);
  auto compile = [&](Options options) {
    options.num_threads = 2;
    return Model::from_graph(conv_chain_graph(s, seed)).compile(options);
  };
  Options cpu;
  cpu.compute_units = "cpu_only";
  Options gpu;
  gpu.device = "cuda:0";
  gpu.fallback = "strict";
  gpu.precision = precision;
  std::map<std::string, Tensor> want = compile(cpu).run(feeds);
  Executable gpu_exe = compile(gpu);
  std::map<std::string, Tensor> got = gpu_exe.run(feeds);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    ASSERT_TRUE(got.count(name)) << name;
    EXPECT_EQ(compare_tensors(got.at(name), w, rtol, atol), "") << name << " at " << precision;
  }
  if (!expect_fused) return;
  std::map<std::string, ir::Datum> datum_feeds;
  for (const auto& [name, t] : feeds) datum_feeds[name] = ir::Datum(t);
  runtime::Profiler profiler;
  gpu_exe.internal().run(datum_feeds, nullptr, &profiler);
  std::set<std::string> on_gpu;
  for (const runtime::ProfileEvent& e : profiler.events())
    if (e.category == "Node" && e.device == "cuda:0") on_gpu.insert(e.name);
  EXPECT_EQ(on_gpu, std::set<std::string>{"conv"});
}

TEST(CudaConvFusion, BiasResidualAndActivations) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (const char* act : {"", "Relu", "Sigmoid", "Tanh", "Clip"}) {
    for (int form = 0; form < 4; ++form) {
      ConvChain s;
      s.bias = form != 1;
      s.channel_add = form == 1 || form == 3;
      s.residual = form >= 2;
      s.residual_first = form == 3;
      s.activation = act;
      if (s.activation.empty() && !s.channel_add && !s.residual) continue;
      SCOPED_TRACE(fmt::format("form {} activation '{}'", form, act));
      expect_conv_chain_matches_cpu(s, seed, 1e-4, 1e-4, "fp32", /*expect_fused=*/true);
      expect_conv_chain_matches_cpu(s, seed, 2e-2, 2e-2, "fp16");
      expect_conv_chain_matches_cpu(s, seed, 2e-2, 2e-2, "bf16");
      seed += 5;
    }
  }
}

TEST(CudaConvFusion, ResnetBottleneckAndDepthwise) {
  SY_SKIP_WITHOUT_GPU();
  ConvChain bottleneck;  // conv (bn folded) + identity shortcut + Relu, batch 3
  bottleneck.x = {3, 16, 7, 7};
  bottleneck.residual = true;
  bottleneck.activation = "Relu";
  expect_conv_chain_matches_cpu(bottleneck, 950, 1e-4, 1e-4, "fp32", /*expect_fused=*/true);
  expect_conv_chain_matches_cpu(bottleneck, 951, 2e-2, 2e-2, "fp16");
  ConvChain depthwise;  // mobilenet_v2: depthwise 3x3 + ReLU6 (Clip(0, 6))
  depthwise.x = {1, 32, 11, 11};
  depthwise.out_channels = 32;
  depthwise.group = 32;
  depthwise.activation = "Clip";
  depthwise.clip_lo = 0;  // ReLU6
  depthwise.clip_hi = 6;
  expect_conv_chain_matches_cpu(depthwise, 960, 1e-4, 1e-4, "fp32", /*expect_fused=*/true);
  expect_conv_chain_matches_cpu(depthwise, 961, 2e-2, 2e-2, "bf16");
}

TEST(CudaConvFusion, SharedConvOutputIsNotAbsorbed) {
  SY_SKIP_WITHOUT_GPU();
  ConvChain s;
  s.residual = true;
  s.activation = "Relu";
  s.expose_conv = true;
  expect_conv_chain_matches_cpu(s, 970, 1e-4, 1e-4);
}

}  // namespace
}  // namespace switchyard::testing
