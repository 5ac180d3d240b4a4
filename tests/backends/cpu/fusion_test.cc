// The cpu backend's partition fusions (backends/fusion/fusion.h) against the unfused graph: each
// case builds a graph, runs it through CpuBackend::compile (which fuses) and through a plain
// GraphProgram of the same graph (which does not), on seeded random data, and compares; it also
// checks which nodes were fused, including shapes where a pattern must not fire.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/fusion/pattern.h"
#include "backends/fusion/payload.h"
#include "ops/shape_inference.h"
#include "runtime/graph_program.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

ir::Type tensor_type(DType dtype, std::vector<int64_t> dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::Dim(d));
  return ir::Type::tensor(dtype, s);
}

ir::Value* scalar(ir::Graph& g, const std::string& name, double v, DType dtype = DType::Float32) {
  ir::Tensor t(dtype, {});
  if (dtype == DType::Float64) {
    t.data<double>()[0] = v;
  } else {
    t.data<float>()[0] = static_cast<float>(v);
  }
  return g.add_constant(name, t);
}

struct Outcome {
  std::vector<ir::Datum> fused, plain;
  std::vector<runtime::FusionGroup> groups;
};

// Runs `g` (types inferred here) both ways on `inputs`.
Outcome run_both(ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
  ops::infer_types(g);
  ir::verify(g);
  std::vector<ir::Datum> feeds;
  for (const ir::Tensor& t : inputs) feeds.emplace_back(t);
  Outcome out;
  runtime::GraphProgram plain(g, cpu::cpu_kernels());
  out.plain = run_program(plain, feeds);

  backends::Partition p;
  p.graph = &g;
  p.device = "cpu";
  for (const auto& n : g.nodes()) p.nodes.push_back(n.get());
  for (const ir::Value* v : g.inputs()) p.inputs.push_back(v);
  for (const ir::Value* v : g.outputs()) p.outputs.push_back(v);
  p.input_on_host.assign(p.inputs.size(), 0);
  cpu::CpuBackend backend;
  auto compiled = backend.compile(p, backends::CompileOptions{});
  out.groups = compiled->fusions();
  runtime::RunState state;
  state.pool = runtime::HostPool::create(/*poison=*/true);
  state.num_threads = 2;
  out.fused = compiled->run(feeds, state);
  return out;
}

void expect_close(const Outcome& o, double rtol = 1e-5, double atol = 1e-5) {
  ASSERT_EQ(o.fused.size(), o.plain.size());
  for (size_t i = 0; i < o.fused.size(); ++i)
    EXPECT_EQ(compare_tensors(o.fused[i].tensor, o.plain[i].tensor, rtol, atol), "")
        << "output " << i;
}

std::vector<std::string> members(const Outcome& o, size_t i) {
  return i < o.groups.size() ? o.groups[i].members : std::vector<std::string>{};
}

// x[1, C, H, W] -> Conv(3x3 or 1x1, bias) -> tail
struct ConvGraph {
  ir::Graph g{"conv"};
  ir::Value* x;
  ir::Value* y;
  ConvGraph(int64_t c, int64_t k, int64_t ksize, int64_t group = 1, DType dtype = DType::Float32,
            int64_t hw = 9) {
    x = g.add_input("x", tensor_type(dtype, {1, c, hw, hw}));
    ir::Value* w = g.add_constant("w", random_tensor(dtype, {k, c / group, ksize, ksize}, 11));
    ir::Value* b = g.add_constant("b", random_tensor(dtype, {k}, 12));
    ir::Node* conv = g.add_node("Conv", "conv", {x, w, b}, {"c"});
    conv->set_attribute(ir::Attribute::make_ints("pads", std::vector<int64_t>(4, ksize / 2)));
    conv->set_attribute(ir::Attribute::make_int("group", group));
    y = conv->output(0);
  }
};

TEST(CpuFusion, ConvBiasActivationsMatchTheUnfusedGraph) {
  for (const char* act : {"Relu", "Sigmoid", "Tanh", "Clip"}) {
    for (int64_t ksize : {1, 3}) {
      ConvGraph cg(8, 16, ksize);
      std::vector<ir::Value*> ins = {cg.y};
      if (std::string(act) == "Clip")
        ins = {cg.y, scalar(cg.g, "lo", 0.0), scalar(cg.g, "hi", 0.5)};
      ir::Value* out = cg.g.add_node(act, "act", ins, {"y"})->output(0);
      cg.g.add_output(out);
      Outcome o = run_both(cg.g, {random_tensor(DType::Float32, {1, 8, 9, 9}, 1)});
      expect_close(o);
      EXPECT_EQ(members(o, 0), (std::vector<std::string>{"conv", "act"})) << act << " " << ksize;
    }
  }
}

TEST(CpuFusion, ConvSwishAndHardSwishAsPostOps) {
  // EfficientNet's SiLU as Mul(x, Sigmoid(x)) in both operand orders, MobileNetV3's HardSwish;
  // a NaN in the input stays NaN.
  for (int variant = 0; variant < 3; ++variant) {
    ConvGraph cg(8, 16, 3);
    ir::Value* y;
    if (variant < 2) {
      ir::Value* s = cg.g.add_node("Sigmoid", "sig", {cg.y}, {"s"})->output(0);
      std::vector<ir::Value*> ins =
          variant == 0 ? std::vector<ir::Value*>{cg.y, s} : std::vector<ir::Value*>{s, cg.y};
      y = cg.g.add_node("Mul", "silu", ins, {"y"})->output(0);
    } else {
      y = cg.g.add_node("HardSwish", "hswish", {cg.y}, {"y"})->output(0);
    }
    cg.g.add_output(y);
    ir::Tensor x = random_tensor(DType::Float32, {1, 8, 9, 9}, 81);
    x.data<float>()[40] = std::numeric_limits<float>::quiet_NaN();
    Outcome o = run_both(cg.g, {x});
    expect_close(o, 2e-6, 2e-6);
    EXPECT_EQ(members(o, 0).size(), variant < 2 ? 3u : 2u) << variant;
  }
  {
    // The conv output read by a third node: no swish fusion.
    ConvGraph cg(8, 16, 3);
    ir::Value* s = cg.g.add_node("Sigmoid", "sig", {cg.y}, {"s"})->output(0);
    ir::Value* y = cg.g.add_node("Mul", "silu", {cg.y, s}, {"y"})->output(0);
    ir::Value* z = cg.g.add_node("Neg", "neg", {cg.y}, {"z"})->output(0);
    cg.g.add_output(y);
    cg.g.add_output(z);
    Outcome o = run_both(cg.g, {random_tensor(DType::Float32, {1, 8, 9, 9}, 82)});
    expect_close(o);
    EXPECT_TRUE(o.groups.empty());
  }
}

TEST(CpuFusion, ConvResidualAndChannelConstantAddsFold) {
  // y = Relu(Conv(x) + per-channel constant + x): the constant joins the bias, x the residual.
  for (int64_t ksize : {1, 3}) {
    ConvGraph cg(8, 8, ksize);
    ir::Value* k = cg.g.add_constant("k", random_tensor(DType::Float32, {8, 1, 1}, 3));
    ir::Value* a1 = cg.g.add_node("Add", "add_k", {cg.y, k}, {"a1"})->output(0);
    ir::Value* a2 = cg.g.add_node("Add", "add_x", {cg.x, a1}, {"a2"})->output(0);
    ir::Value* y = cg.g.add_node("Relu", "relu", {a2}, {"y"})->output(0);
    cg.g.add_output(y);
    Outcome o = run_both(cg.g, {random_tensor(DType::Float32, {1, 8, 9, 9}, 2)});
    expect_close(o);
    EXPECT_EQ(members(o, 0), (std::vector<std::string>{"conv", "add_k", "add_x", "relu"}));
  }
}

TEST(CpuFusion, WinogradConvWithResidualAndRelu) {
  // 64 channels at 16x16, 3x3 stride 1: the Winograd plan (on AVX-512) with the residual as a
  // sum post-op into its blocked destination and the activation after it.
  ConvGraph cg(64, 64, 3, 1, DType::Float32, 16);
  ir::Value* a = cg.g.add_node("Add", "add_x", {cg.y, cg.x}, {"a"})->output(0);
  ir::Value* y = cg.g.add_node("Relu", "relu", {a}, {"y"})->output(0);
  cg.g.add_output(y);
  Outcome o = run_both(cg.g, {random_tensor(DType::Float32, {1, 64, 16, 16}, 7)});
  expect_close(o);
  EXPECT_EQ(members(o, 0), (std::vector<std::string>{"conv", "add_x", "relu"}));
}

TEST(CpuFusion, DepthwiseConvWithRelu6AndFloat64LoopPath) {
  {
    ConvGraph cg(16, 16, 3, 16);
    ir::Value* y = cg.g.add_node("Clip", "relu6",
                                 {cg.y, scalar(cg.g, "lo", 0.0), scalar(cg.g, "hi", 6.0)}, {"y"})
                       ->output(0);
    cg.g.add_output(y);
    Outcome o = run_both(cg.g, {random_tensor(DType::Float32, {1, 16, 9, 9}, 4)});
    expect_close(o);
    EXPECT_EQ(members(o, 0).size(), 2u);
  }
  {
    // float64 runs the direct loop: the residual and activation are applied there.
    ConvGraph cg(4, 4, 3, 1, DType::Float64);
    ir::Value* a = cg.g.add_node("Add", "add_x", {cg.y, cg.x}, {"a"})->output(0);
    ir::Value* y = cg.g.add_node("Relu", "relu", {a}, {"y"})->output(0);
    cg.g.add_output(y);
    Outcome o = run_both(cg.g, {random_tensor(DType::Float64, {1, 4, 9, 9}, 5)});
    expect_close(o, 1e-12, 1e-12);
    EXPECT_EQ(members(o, 0), (std::vector<std::string>{"conv", "add_x", "relu"}));
  }
}

TEST(CpuFusion, NaNStaysNaNThroughFusedActivations) {
  for (const char* act : {"Relu", "Clip", "Sigmoid", "Tanh"}) {
    ConvGraph cg(4, 4, 3);
    std::vector<ir::Value*> ins = {cg.y};
    if (std::string(act) == "Clip") ins = {cg.y, scalar(cg.g, "lo", 0.0), scalar(cg.g, "hi", 6.0)};
    ir::Value* y = cg.g.add_node(act, "act", ins, {"y"})->output(0);
    cg.g.add_output(y);
    ir::Tensor x = random_tensor(DType::Float32, {1, 4, 9, 9}, 6);
    x.data<float>()[40] = std::numeric_limits<float>::quiet_NaN();
    Outcome o = run_both(cg.g, {x});
    ASSERT_EQ(members(o, 0).size(), 2u);
    expect_close(o);  // compare_tensors matches NaN with NaN only
    EXPECT_TRUE(std::isnan(o.fused[0].tensor.data<float>()[40])) << act;
  }
}

TEST(CpuFusion, ReluAndClipRunAsPostOpsOnlyWhereNoNaNCanArise) {
  // A convolution whose input is finite and bounded runs ReLU / Clip as oneDNN post-ops (which
  // would turn a NaN into a number); an infinity, a NaN or values large enough to overflow the
  // sums take the exact path. Each is compared with the unfused graph, NaN for NaN.
  const float inf = std::numeric_limits<float>::infinity();
  for (const char* act : {"Relu", "Clip"}) {
    for (int64_t ksize : {1, 3}) {
      for (int input = 0; input < 5; ++input) {
        ConvGraph cg(4, 16, ksize);  // an expanding convolution: its input is the smaller
        std::vector<ir::Value*> ins = {cg.y};
        if (std::string(act) == "Clip")
          ins = {cg.y, scalar(cg.g, "lo", -1.0), scalar(cg.g, "hi", 6.0)};
        ir::Value* y = cg.g.add_node(act, "act", ins, {"y"})->output(0);
        cg.g.add_output(y);
        ir::Tensor x = random_tensor(DType::Float32, {1, 4, 9, 9}, 90 + input);
        float* xp = x.data<float>();
        if (input == 1) xp[40] = inf;
        if (input == 2) xp[41] = -inf;
        if (input == 3) xp[7] = std::numeric_limits<float>::quiet_NaN();
        if (input == 4)  // +/- huge values: the sums overflow
          for (int64_t i = 0; i < x.numel(); ++i) xp[i] = (i % 2 ? 3e38f : -3e38f);
        Outcome o = run_both(cg.g, {x});
        ASSERT_EQ(members(o, 0).size(), 2u);
        expect_close(o);  // compare_tensors matches NaN with NaN only
        if (input == 4 && std::string(act) == "Relu") {  // it reaches the overflow (Clip hides it)
          bool overflowed = false;
          const ir::Tensor& out = o.plain[0].tensor;
          for (int64_t i = 0; i < out.numel(); ++i)
            overflowed = overflowed || !std::isfinite(out.data<float>()[i]);
          EXPECT_TRUE(overflowed) << act << " " << ksize;
        }
      }
    }
  }
}

// fuse_norm_activation: an inference BatchNormalization -> Relu runs as one node, in NCHW (a
// 3-D input, outside any channels-last region) and inside a channels-last region (after a Conv),
// NaN kept; and where it must not fire: the normalized value read twice, or a graph output.
TEST(CpuFusion, BatchNormReluBecomesOneNode) {
  auto add_bn = [](ir::Graph& g, ir::Value* x, int64_t c, const std::string& name) {
    std::vector<ir::Value*> in = {x};
    for (const char* part : {"_scale", "_bias", "_mean"})
      in.push_back(g.add_constant(name + part, random_tensor(DType::Float32, {c}, 81)));
    in.push_back(g.add_constant(name + "_var", random_tensor(DType::Float32, {c}, 82, 0.5, 2)));
    return g.add_node("BatchNormalization", name, in, {name + "_y"})->output(0);
  };
  for (int shape_case = 0; shape_case < 2; ++shape_case) {
    ir::Graph g("bn");
    const std::vector<int64_t> dims =
        shape_case == 0 ? std::vector<int64_t>{2, 6, 11} : std::vector<int64_t>{1, 6, 7, 7};
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, dims));
    ir::Value* in = x;
    if (shape_case == 1) {  // a Conv first: the BN and its ReLU run channels-last
      ir::Value* w = g.add_constant("w", random_tensor(DType::Float32, {6, 6, 3, 3}, 83));
      ir::Node* conv = g.add_node("Conv", "conv", {x, w}, {"c"});
      conv->set_attribute(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
      in = conv->output(0);
    }
    ir::Value* bn = add_bn(g, in, 6, "bn");
    ir::Value* y = g.add_node("Relu", "relu", {bn}, {"y"})->output(0);
    if (shape_case == 1) {
      ir::Value* w2 = g.add_constant("w2", random_tensor(DType::Float32, {4, 6, 1, 1}, 84));
      y = g.add_node("Conv", "conv2", {y, w2}, {"y2"})->output(0);
    }
    g.add_output(y);
    ir::Tensor xt = random_tensor(DType::Float32, dims, 85);
    xt.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
    Outcome o = run_both(g, {xt});
    bool found = false;
    for (const auto& group : o.groups)
      found = found || group.members == std::vector<std::string>{"bn", "relu"};
    EXPECT_TRUE(found) << "case " << shape_case;
    expect_close(o);
    if (shape_case == 0) {
      EXPECT_TRUE(std::isnan(o.fused[0].tensor.data<float>()[3]));
    }
  }
  // Must not fire: the BN's value has a second reader, or is itself a graph output.
  for (int variant = 0; variant < 2; ++variant) {
    ir::Graph g("bn_no");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {2, 6, 11}));
    ir::Value* bn = add_bn(g, x, 6, "bn");
    ir::Value* y = g.add_node("Relu", "relu", {bn}, {"y"})->output(0);
    g.add_output(y);
    if (variant == 0) {
      g.add_output(g.add_node("Neg", "neg", {bn}, {"z"})->output(0));
    } else {
      g.add_output(bn);
    }
    Outcome o = run_both(g, {random_tensor(DType::Float32, {2, 6, 11}, 86)});
    for (const auto& group : o.groups)
      EXPECT_NE(group.members, (std::vector<std::string>{"bn", "relu"})) << "variant " << variant;
    expect_close(o);
  }
}

bool has_group(const Outcome& o, const std::vector<std::string>& members) {
  for (const auto& g : o.groups)
    if (g.members == members) return true;
  return false;
}

// fuse_concat_norm: Concat (channel axis) -> BatchNormalization (-> Relu) becomes one Concat
// that normalizes while it copies: NCHW and, after a Conv, channels-last; rank 3; NaN kept by
// the Relu. Not fused: a Concat over another axis, a concatenation with a second reader, a
// normalization with a non-constant scale, a float64 concatenation.
TEST(CpuFusion, ConcatBatchNormReluBecomesOneConcat) {
  auto bn_inputs = [](ir::Graph& g, ir::Value* x, int64_t c, uint64_t seed) {
    std::vector<ir::Value*> in = {x};
    for (const char* part : {"bn_scale", "bn_bias", "bn_mean"})
      in.push_back(g.add_constant(part, random_tensor(DType::Float32, {c}, seed++)));
    in.push_back(g.add_constant("bn_var", random_tensor(DType::Float32, {c}, seed, 0.5, 2)));
    return in;
  };
  struct Case {
    std::vector<int64_t> a, b;  // the two concatenated inputs
    bool conv_first;            // a Conv makes input 0: the region runs channels-last
    bool relu;
  };
  const std::vector<Case> cases = {{{1, 3, 5, 5}, {1, 4, 5, 5}, false, true},
                                   {{2, 5, 7, 6}, {2, 3, 7, 6}, true, true},
                                   {{1, 6, 4, 4}, {1, 2, 4, 4}, true, false},
                                   {{2, 3, 9}, {2, 5, 9}, false, true}};
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    ir::Graph g("concat_bn");
    ir::Value* xa = g.add_input("xa", tensor_type(DType::Float32, k.a));
    ir::Value* xb = g.add_input("xb", tensor_type(DType::Float32, k.b));
    ir::Value* first = xa;
    if (k.conv_first) {
      ir::Value* w = g.add_constant(
          "w", random_tensor(DType::Float32, {k.a[1], k.a[1], 3, 3}, 90 + static_cast<int>(ci)));
      ir::Node* conv = g.add_node("Conv", "conv", {xa, w}, {"c"});
      conv->set_attribute(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
      first = conv->output(0);
    }
    ir::Node* cat = g.add_node("Concat", "cat", {first, xb}, {"cat_y"});
    cat->set_attribute(ir::Attribute::make_int("axis", ci == 2 ? -3 : 1));
    const int64_t c = k.a[1] + k.b[1];
    ir::Value* y =
        g.add_node("BatchNormalization", "bn", bn_inputs(g, cat->output(0), c, 91), {"bn_y"})
            ->output(0);
    if (k.relu) y = g.add_node("Relu", "relu", {y}, {"relu_y"})->output(0);
    if (k.conv_first) {  // a Conv after it keeps the region channels-last to the end
      ir::Value* w2 = g.add_constant("w2", random_tensor(DType::Float32, {3, c, 1, 1}, 95));
      y = g.add_node("Conv", "conv2", {y, w2}, {"y2"})->output(0);
    }
    g.add_output(y);
    ir::Tensor ta = random_tensor(DType::Float32, k.a, 96);
    ir::Tensor tb = random_tensor(DType::Float32, k.b, 97);
    tb.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
    tb.data<float>()[5] = std::numeric_limits<float>::infinity();
    Outcome o = run_both(g, {ta, tb});
    std::vector<std::string> want = {"cat", "bn"};
    if (k.relu) want.push_back("relu");
    EXPECT_TRUE(has_group(o, want)) << "case " << ci;
    expect_close(o);
    if (!k.conv_first) {  // the NaN stays NaN through the normalization and the Relu
      const ir::Tensor& out = o.fused[0].tensor;
      const int64_t inner = out.numel() / (out.dim(0) * c);
      EXPECT_TRUE(std::isnan(out.data<float>()[k.a[1] * inner + 2])) << "case " << ci;
    }
  }
  // Must not fire.
  for (int variant = 0; variant < 4; ++variant) {
    ir::Graph g("concat_bn_no");
    const DType dt = variant == 3 ? DType::Float64 : DType::Float32;
    ir::Value* xa = g.add_input("xa", tensor_type(dt, {1, 3, 4, 4}));
    ir::Value* xb = g.add_input("xb", tensor_type(dt, {1, 3, 4, 4}));
    ir::Node* cat = g.add_node("Concat", "cat", {xa, xb}, {"cat_y"});
    cat->set_attribute(ir::Attribute::make_int("axis", variant == 0 ? 2 : 1));
    const int64_t c = variant == 0 ? 3 : 6;
    std::vector<ir::Value*> in = {cat->output(0)};
    for (const char* part : {"bn_scale", "bn_bias", "bn_mean"})
      in.push_back(g.add_constant(part, random_tensor(dt, {c}, 98)));
    in.push_back(g.add_constant("bn_var", random_tensor(dt, {c}, 99, 0.5, 2)));
    std::vector<ir::Tensor> feeds = {random_tensor(dt, {1, 3, 4, 4}, 100),
                                     random_tensor(dt, {1, 3, 4, 4}, 101)};
    if (variant == 2) {  // the scale is a graph input
      in[1] = g.add_input("scale", tensor_type(dt, {c}));
      feeds.push_back(random_tensor(dt, {c}, 102));
    }
    g.add_output(g.add_node("BatchNormalization", "bn", in, {"bn_y"})->output(0));
    if (variant == 1) g.add_output(g.add_node("Neg", "neg", {cat->output(0)}, {"z"})->output(0));
    Outcome o = run_both(g, feeds);
    for (const auto& group : o.groups)
      EXPECT_NE(group.members.front(), "cat") << "variant " << variant;
    expect_close(o);
  }
}

// fuse_residual_layernorm: Add(X, Z) -> LayerNormalization over the last axis runs as one
// node, for a residual of X's shape (added row by row) and for sums that broadcast (the kernel
// sums them first), NaN kept; float16 too; read a second time as well, a broadcasting sum or one
// of operands not provably of one shape fuses in the pre-norm form (the kernel writes the
// broadcast sum whole). Not fused: a LayerNormalization over more than the last axis, one with
// its Mean output, one whose Scale is computed from the sum (the fused node would read itself);
// each also with the sum read a second time.
TEST(CpuFusion, ResidualAddLayerNormBecomesOneNode) {
  struct Case {
    std::vector<int64_t> a, b;
    DType dtype;
  };
  for (const Case& c :
       {Case{{2, 5, 16}, {2, 5, 16}, DType::Float32}, Case{{1, 5, 16}, {3, 5, 16}, DType::Float32},
        Case{{3, 5, 16}, {16}, DType::Float32}, Case{{2, 5, 16}, {2, 5, 16}, DType::Float16}}) {
    ir::Graph g("ln");
    ir::Value* a = g.add_input("a", tensor_type(c.dtype, c.a));
    ir::Value* b = g.add_input("b", tensor_type(c.dtype, c.b));
    ir::Value* sum = g.add_node("Add", "add", {a, b}, {"sum"})->output(0);
    ir::Value* scale = g.add_constant("scale", random_tensor(c.dtype, {16}, 91));
    ir::Value* bias = g.add_constant("bias", random_tensor(c.dtype, {16}, 92));
    ir::Value* y = g.add_node("LayerNormalization", "ln", {sum, scale, bias}, {"y"})->output(0);
    g.add_output(y);
    ir::Tensor at = random_tensor(c.dtype, c.a, 93);
    if (c.dtype == DType::Float32) at.data<float>()[7] = std::numeric_limits<float>::quiet_NaN();
    Outcome o = run_both(g, {at, random_tensor(c.dtype, c.b, 94)});
    EXPECT_TRUE(has_group(o, {"ln", "add"})) << ir::shape_to_string(c.a);
    expect_close(o, c.dtype == DType::Float16 ? 1e-3 : 1e-5,
                 c.dtype == DType::Float16 ? 1e-3 : 1e-5);
  }
  for (int variant = 0; variant < 5; ++variant)
    for (bool read_twice : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "variant " << variant << (read_twice ? ", read twice" : ""));
      ir::Graph g("ln_no");
      ir::Shape a_shape = ir::make_shape({2, 5, 16});
      if (variant == 4) a_shape[0] = ir::Dim("batch");  // [batch, 5, 16] + [2, 5, 16]
      ir::Value* a = g.add_input("a", ir::Type::tensor(DType::Float32, a_shape));
      const std::vector<int64_t> b_dims =
          variant == 0 ? std::vector<int64_t>{16} : std::vector<int64_t>{2, 5, 16};
      ir::Value* b = g.add_input("b", tensor_type(DType::Float32, b_dims));
      ir::Value* sum = g.add_node("Add", "add", {a, b}, {"sum"})->output(0);
      ir::Value* scale = variant == 1
                             ? g.add_constant("scale", random_tensor(DType::Float32, {5, 16}, 95))
                         : variant == 3
                             // a Scale of the sum's own shape, computed from it
                             ? g.add_node("Sigmoid", "gate", {sum}, {"gate_y"})->output(0)
                             : g.add_constant("scale", random_tensor(DType::Float32, {16}, 96));
      std::vector<std::string> outs = {"y"};
      if (variant == 2) outs.push_back("mean");
      ir::Node* ln = g.add_node("LayerNormalization", "ln", {sum, scale}, outs);
      ln->set_attribute(ir::Attribute::make_int("axis", variant == 1 ? -2 : -1));
      for (size_t i = 0; i < ln->num_outputs(); ++i) g.add_output(ln->output(i));
      if (variant == 0 && !read_twice) continue;  // the broadcast sum, read once, fuses (above)
      if (variant == 4 && !read_twice) continue;  // read once, any shapes fuse
      if (read_twice) g.add_output(g.add_node("Neg", "neg", {sum}, {"z"})->output(0));
      Outcome o = run_both(g, {random_tensor(DType::Float32, {2, 5, 16}, 97),
                               random_tensor(DType::Float32, b_dims, 98)});
      // Read twice, a broadcast sum (0) or one of shapes not provably equal (4) fuses too: the
      // kernel writes the broadcast sum whole, then normalizes it.
      EXPECT_EQ(has_group(o, {"ln", "add"}), variant == 0 || variant == 4);
      expect_close(o);
    }
}

// fuse_residual_layernorm's pre-norm form, in a GPT-like stack: h0 = a + b; per layer
// y = LN(h), h = h + Tanh(y * w); out = LN(h). Each running sum but the last has two readers (its
// norm and the next residual Add): the norm takes the Add over and also writes the sum, which the
// next Add reads; the last one, read by the final norm alone, fuses as before (unless it is a
// graph output too). The fused graph computes bit for bit what the unfused one does — the sums as
// the Add kernel rounds them, float32 and both 16-bit types — with NaN and infinities in the
// inputs (an infinity plus minus one: NaN), the sums compared too where they are graph outputs.
TEST(CpuFusion, PreNormRunningSumIsWrittenByTheNorm) {
  const std::vector<int64_t> dims = {2, 7, 48};
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
    for (bool expose : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << ir::dtype_name(dtype) << (expose ? ", sums exposed" : ""));
      ir::Graph g("prenorm");
      ir::Value* a = g.add_input("a", tensor_type(dtype, dims));
      ir::Value* b = g.add_input("b", tensor_type(dtype, dims));
      ir::Value* h = g.add_node("Add", "embed", {a, b}, {"h0"})->output(0);
      ir::Value* scale = g.add_constant("scale", random_tensor(dtype, {48}, 31, 0.5, 1.5));
      ir::Value* bias = g.add_constant("bias", random_tensor(dtype, {48}, 32));
      ir::Value* w = g.add_constant("w", random_tensor(dtype, {48}, 33, -2.0, 2.0));
      for (int layer = 1; layer <= 3; ++layer) {
        const std::string k = std::to_string(layer);
        ir::Value* y =
            g.add_node("LayerNormalization", "ln" + k, {h, scale, bias}, {"y" + k})->output(0);
        ir::Value* m = g.add_node("Mul", "mul" + k, {y, w}, {"m" + k})->output(0);
        ir::Value* f = g.add_node("Tanh", "tanh" + k, {m}, {"f" + k})->output(0);
        if (expose && layer == 1) g.add_output(h);
        h = g.add_node("Add", "add" + k, {h, f}, {"h" + k})->output(0);
      }
      g.add_output(g.add_node("LayerNormalization", "ln_f", {h, scale, bias}, {"out"})->output(0));
      if (expose) g.add_output(h);
      std::vector<double> av = to_doubles(random_tensor(dtype, dims, 34, -3.0, 3.0));
      std::vector<double> bv = to_doubles(random_tensor(dtype, dims, 35, -3.0, 3.0));
      const double inf = std::numeric_limits<double>::infinity();
      av[3] = std::numeric_limits<double>::quiet_NaN();  // row 0
      av[50] = inf;                                      // row 1: inf + -inf
      bv[50] = -inf;
      bv[100] = inf;  // row 2: an infinite sum
      Outcome o = run_both(g, {tensor_of(dtype, dims, av), tensor_of(dtype, dims, bv)});
      for (const auto& group : std::vector<std::vector<std::string>>{
               {"ln1", "embed"}, {"ln2", "add1"}, {"ln3", "add2"}, {"ln_f", "add3"}})
        EXPECT_TRUE(has_group(o, group)) << group[0];
      ASSERT_EQ(o.fused.size(), o.plain.size());
      for (size_t i = 0; i < o.fused.size(); ++i)
        EXPECT_EQ(compare_tensors(o.fused[i].tensor, o.plain[i].tensor, 0, 0), "")
            << "output " << i;
      if (expose) {  // h0 and h3, read by the next norm (and Add) and the graph
        const ir::Tensor& h0 = o.fused[0].tensor;
        EXPECT_TRUE(std::isnan(h0.scalar_as_double(3)));
        EXPECT_TRUE(std::isnan(h0.scalar_as_double(50)));
        EXPECT_EQ(h0.scalar_as_double(100), inf);
        // The exact sum (of two values in [-3, 3)) rounded once to the dtype, as the Add does.
        EXPECT_EQ(h0.scalar_as_double(101),
                  tensor_of(dtype, {1}, {av[101] + bv[101]}).scalar_as_double(0));
      }
      // The rows without a NaN or an infinity stay finite.
      EXPECT_TRUE(std::isfinite(o.fused.back().tensor.scalar_as_double(48 * 5)));
    }
}

// The cpu kernel of the pre-norm form, handed a node no fusion would make: a residual of another
// shape than X's (the sum written must be X + Z in X's shape) or none fails naming the node.
TEST(CpuFusion, ResidualSumKernelNeedsAResidual) {
  ir::Graph g("ln_sum");
  ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {2, 5, 16}));
  ir::Value* scale = g.add_constant("scale", random_tensor(DType::Float32, {16}, 41));
  ir::Node* ln = g.add_node("LayerNormalization", "ln", {x, scale}, {"y"});
  g.add_output(ln->output(0));
  ops::infer_types(g);
  // The fused form's inputs and outputs (past the schema's counts, so made after inference).
  ln = backends::pattern::replace_nodes(g, {ln}, *ln, {x, scale, nullptr, nullptr},
                                        {ln->output(0), nullptr, nullptr, nullptr});
  ln->annotate(std::make_shared<backends::fusion::ResidualSum>());
  runtime::GraphProgram program(g, cpu::cpu_kernels());
  expect_error(
      [&] {
        run_program(program, {ir::Datum(random_tensor(DType::Float32, {2, 5, 16}, 42))});
      },
      ErrorCode::InvalidArgument, "node 'ln': the fused residual sum needs a residual");
}

// fuse_softmax_mask: Add(X, M) -> Softmax over the last axis runs as one node: masks that
// broadcast into X's rows ([B,1,1,S], [1,1,S,S], [S], a scalar, the mask first in the Add), and
// an X that itself broadcasts (the kernel sums first); NaN kept. Not fused: the sum read twice,
// a softmax over another axis.
TEST(CpuFusion, MaskAddSoftmaxBecomesOneNode) {
  struct Case {
    std::vector<int64_t> x, m;
    bool mask_first;
  };
  for (const Case& c : {Case{{2, 3, 4, 6}, {2, 1, 1, 6}, false},
                        Case{{2, 3, 4, 6}, {1, 1, 4, 6}, true}, Case{{2, 3, 4, 6}, {6}, false},
                        Case{{2, 3, 4, 6}, {}, false}, Case{{1, 3, 4, 6}, {2, 1, 4, 6}, false}}) {
    ir::Graph g("sm");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, c.x));
    ir::Value* m = g.add_input("m", tensor_type(DType::Float32, c.m));
    ir::Value* sum =
        g.add_node("Add", "add",
                   c.mask_first ? std::vector<ir::Value*>{m, x} : std::vector<ir::Value*>{x, m},
                   {"sum"})
            ->output(0);
    g.add_output(g.add_node("Softmax", "softmax", {sum}, {"y"})->output(0));
    ir::Tensor xt = random_tensor(DType::Float32, c.x, 101, -4, 4);
    xt.data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    ir::Tensor mt = random_tensor(DType::Float32, c.m, 102, -20, 0);
    Outcome o = run_both(g, {xt, mt});
    EXPECT_TRUE(has_group(o, {"softmax", "add"})) << ir::shape_to_string(c.m);
    expect_close(o);
    EXPECT_TRUE(std::isnan(o.fused[0].tensor.data<float>()[5]));
  }
  for (int variant = 0; variant < 2; ++variant) {
    ir::Graph g("sm_no");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {2, 3, 6}));
    ir::Value* m = g.add_input("m", tensor_type(DType::Float32, {2, 1, 6}));
    ir::Value* sum = g.add_node("Add", "add", {x, m}, {"sum"})->output(0);
    ir::Node* sm = g.add_node("Softmax", "softmax", {sum}, {"y"});
    if (variant == 1) sm->set_attribute(ir::Attribute::make_int("axis", 1));
    g.add_output(sm->output(0));
    if (variant == 0) g.add_output(g.add_node("Neg", "neg", {sum}, {"z"})->output(0));
    Outcome o = run_both(g, {random_tensor(DType::Float32, {2, 3, 6}, 103),
                             random_tensor(DType::Float32, {2, 1, 6}, 104)});
    EXPECT_FALSE(has_group(o, {"softmax", "add"})) << "variant " << variant;
    expect_close(o);
  }
}

// fold_transposes_into_matmul: attention's head split (perm 0,2,1,3 of Q and V) and K's
// transpose (0,2,3,1) are read by the MatMul through strides; also with the scale and a bias
// fused, an empty K (the copy path), and where it must not fold: a Transpose read twice, one
// moving the innermost axis into the batch dims, a rank-2 product, float64.
TEST(CpuFusion, TransposesFoldIntoMatMulOperands) {
  auto transpose = [](ir::Graph& g, ir::Value* x, std::vector<int64_t> perm, const char* name) {
    ir::Node* t = g.add_node("Transpose", name, {x}, {std::string(name) + "_y"});
    t->set_attribute(ir::Attribute::make_ints("perm", std::move(perm)));
    return t->output(0);
  };
  for (int64_t k : {8, 0}) {
    ir::Graph g("attn");
    ir::Value* q = g.add_input("q", tensor_type(DType::Float32, {2, 5, 3, k}));
    ir::Value* kk = g.add_input("k", tensor_type(DType::Float32, {2, 7, 3, k}));
    ir::Value* v = g.add_input("v", tensor_type(DType::Float32, {2, 7, 3, 4}));
    ir::Value* qt = transpose(g, q, {0, 2, 1, 3}, "tq");   // [2, 3, 5, k]
    ir::Value* kt = transpose(g, kk, {0, 2, 3, 1}, "tk");  // [2, 3, k, 7]
    ir::Value* s = g.add_node("MatMul", "scores", {qt, kt}, {"s"})->output(0);
    ir::Value* ss = g.add_node("Mul", "scale", {s, scalar(g, "alpha", 0.25)}, {"ss"})->output(0);
    ir::Value* vt = transpose(g, v, {0, 2, 1, 3}, "tv");  // [2, 3, 7, 4]
    g.add_output(g.add_node("MatMul", "context", {ss, vt}, {"o"})->output(0));
    Outcome o = run_both(g, {random_tensor(DType::Float32, {2, 5, 3, k}, 111),
                             random_tensor(DType::Float32, {2, 7, 3, k}, 112),
                             random_tensor(DType::Float32, {2, 7, 3, 4}, 113)});
    EXPECT_TRUE(has_group(o, {"scores", "scale", "tq", "tk"})) << "k " << k;
    EXPECT_TRUE(has_group(o, {"context", "tv"})) << "k " << k;
    expect_close(o);
  }
  for (int variant = 0; variant < 4; ++variant) {
    ir::Graph g("no_fold");
    const DType dt = variant == 3 ? DType::Float64 : DType::Float32;
    const bool rank2 = variant == 2;
    std::vector<int64_t> xs = rank2 ? std::vector<int64_t>{6, 5} : std::vector<int64_t>{2, 6, 3, 5};
    ir::Value* x = g.add_input("x", tensor_type(dt, xs));
    std::vector<int64_t> perm = rank2          ? std::vector<int64_t>{1, 0}
                                : variant == 1 ? std::vector<int64_t>{0, 3, 2, 1}
                                               : std::vector<int64_t>{0, 2, 1, 3};
    ir::Value* xt = transpose(g, x, perm, "t");
    std::vector<int64_t> ws = rank2          ? std::vector<int64_t>{6, 4}
                              : variant == 1 ? std::vector<int64_t>{2, 5, 6, 4}
                                             : std::vector<int64_t>{2, 3, 5, 4};
    ir::Value* w = g.add_input("w", tensor_type(dt, ws));
    g.add_output(g.add_node("MatMul", "mm", {xt, w}, {"y"})->output(0));
    if (variant == 0) g.add_output(g.add_node("Neg", "neg", {xt}, {"z"})->output(0));
    Outcome o = run_both(g, {random_tensor(dt, xs, 114), random_tensor(dt, ws, 115)});
    EXPECT_FALSE(has_group(o, {"mm", "t"})) << "variant " << variant;
    expect_close(o);
  }
}

// A channels-last float32 MaxPool runs its own one-pass loop (NaN wins, as the NCHW loop lets
// it): against the NCHW graph for strides, pads, ceil_mode, a window of 1, channel counts off the
// vector width, and a NaN reaching some windows. (Infinities are left out: they reach the pool
// through a convolution, whose algorithms may turn them into NaN differently.)
TEST(CpuFusion, ChannelsLastMaxPoolMatchesTheNchwLoop) {
  struct Case {
    int64_t channels, hw;
    std::vector<int64_t> kernel, strides, pads;
    int64_t ceil_mode;
  };
  const std::vector<Case> cases = {{20, 9, {3, 3}, {2, 2}, {0, 0, 0, 0}, 0},
                                   {16, 8, {2, 2}, {2, 2}, {0, 0, 0, 0}, 1},
                                   {5, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, 0},
                                   {33, 6, {3, 2}, {2, 1}, {1, 0, 0, 1}, 1},
                                   {8, 5, {1, 1}, {1, 1}, {0, 0, 0, 0}, 0}};
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& k = cases[ci];
    for (int special = 0; special < 2; ++special) {  // none, a NaN in the input
      ConvGraph cg(4, k.channels, 3, 1, DType::Float32, k.hw);
      ir::Graph& g = cg.g;
      ir::Node* mp = g.add_node("MaxPool", "maxpool", {cg.y}, {"mp"});
      mp->set_attribute(ir::Attribute::make_ints("kernel_shape", k.kernel));
      mp->set_attribute(ir::Attribute::make_ints("strides", k.strides));
      mp->set_attribute(ir::Attribute::make_ints("pads", k.pads));
      mp->set_attribute(ir::Attribute::make_int("ceil_mode", k.ceil_mode));
      // A 1x1 Conv after it keeps the pool inside the channels-last region.
      ir::Value* w2 = g.add_constant(
          "w2", random_tensor(DType::Float32, {3, k.channels, 1, 1}, 60 + static_cast<int>(ci)));
      g.add_output(g.add_node("Conv", "conv2", {mp->output(0), w2}, {"y2"})->output(0));
      g.add_output(mp->output(0));
      ir::Tensor xt = random_tensor(DType::Float32, {1, 4, k.hw, k.hw}, 61 + static_cast<int>(ci));
      if (special == 1) xt.data<float>()[k.hw + 2] = std::numeric_limits<float>::quiet_NaN();
      Outcome o = run_both(g, {xt});
      SCOPED_TRACE("case " + std::to_string(ci) + " special " + std::to_string(special));
      expect_close(o);
      // NaN positions equal exactly (compare_tensors treats NaN == NaN).
      const ir::Tensor& a = o.fused[1].tensor;
      const ir::Tensor& b = o.plain[1].tensor;
      ASSERT_EQ(a.numel(), b.numel());
      int64_t nans = 0;
      for (int64_t i = 0; i < a.numel(); ++i) {
        const bool na = std::isnan(a.data<float>()[i]), nb = std::isnan(b.data<float>()[i]);
        EXPECT_EQ(na, nb) << "element " << i;
        nans += na;
      }
      if (special == 1) {
        EXPECT_GT(nans, 0);
      }
    }
  }
}

// Channels-last regions (apply_channels_last): convolutions, pools and elementwise nodes between
// them run on NHWC data inside the cpu partition; the outputs must equal the NCHW graph's,
// including a MaxPool over NaN (its NaN-exact loop runs on transposed copies), an inference
// BatchNormalization, a squeeze-excite
// Mul by a [1, C, 1, 1] operand, and a channel Concat.
TEST(CpuFusion, ChannelsLastRegionsMatchTheNchwGraph) {
  for (bool with_nan : {false, true}) {
    ConvGraph cg(8, 16, 3);
    ir::Graph& g = cg.g;
    ir::Value* r = g.add_node("Relu", "relu", {cg.y}, {"r"})->output(0);
    ir::Node* mp = g.add_node("MaxPool", "maxpool", {r}, {"mp"});
    mp->set_attribute(ir::Attribute::make_ints("kernel_shape", {3, 3}));
    mp->set_attribute(ir::Attribute::make_ints("strides", {2, 2}));
    // DenseNet's BN -> ReLU -> Conv: an inference BatchNormalization inside the region.
    std::vector<ir::Value*> bn_in = {mp->output(0)};
    for (const char* name : {"bn_scale", "bn_bias", "bn_mean"})
      bn_in.push_back(g.add_constant(name, random_tensor(DType::Float32, {16}, 74)));
    bn_in.push_back(g.add_constant("bn_var", random_tensor(DType::Float32, {16}, 75, 0.5, 2)));
    ir::Value* bn = g.add_node("BatchNormalization", "bn", bn_in, {"bn"})->output(0);
    ir::Value* bnr = g.add_node("Relu", "bn_relu", {bn}, {"bnr"})->output(0);
    ir::Value* w2 = g.add_constant("w2", random_tensor(DType::Float32, {16, 16, 1, 1}, 71));
    ir::Value* c2 = g.add_node("Conv", "conv2", {bnr, w2}, {"c2"})->output(0);
    ir::Tensor pads(DType::Int64, {8});
    for (int i = 0; i < 8; ++i)
      pads.data<int64_t>()[i] = i == 2 || i == 7 ? 1 : 0;  // H begin, W end
    ir::Value* padded =
        g.add_node("Pad", "pad", {c2, g.add_constant("pads", pads)}, {"padded"})->output(0);
    ir::Node* ap = g.add_node("AveragePool", "avgpool", {padded}, {"ap"});
    ap->set_attribute(ir::Attribute::make_ints("kernel_shape", {2, 2}));
    ap->set_attribute(ir::Attribute::make_ints("pads", {0, 0, 1, 1}));
    ir::Value* gap = g.add_node("GlobalAveragePool", "gap", {ap->output(0)}, {"gap"})->output(0);
    ir::Value* w3 = g.add_constant("w3", random_tensor(DType::Float32, {16, 16, 1, 1}, 72));
    ir::Value* se = g.add_node("Conv", "se", {gap, w3}, {"se"})->output(0);
    ir::Value* sg = g.add_node("Sigmoid", "sig", {se}, {"sg"})->output(0);
    ir::Value* m = g.add_node("Mul", "scale", {ap->output(0), sg}, {"m"})->output(0);
    // An FPN's upsampling: bilinear by constant scales, nearest by constant sizes, inside the
    // region; then back down to concatenate.
    ir::Tensor scales(DType::Float32, {4});
    const float sv[4] = {1, 1, 2, 2};
    std::copy(sv, sv + 4, scales.data<float>());
    ir::Tensor no_roi(DType::Float32, {0});
    ir::Node* up =
        g.add_node("Resize", "up",
                   {m, g.add_constant("roi", no_roi), g.add_constant("scales", scales)}, {"up"});
    up->set_attribute(ir::Attribute::make_string("mode", "linear"));
    ir::Tensor sizes(DType::Int64, {4});
    const int64_t zv[4] = {1, 16, 5, 5};
    std::copy(zv, zv + 4, sizes.data<int64_t>());
    ir::Value* down = g.add_node("Resize", "down",
                                 {up->output(0), g.add_constant("roi2", no_roi), nullptr,
                                  g.add_constant("sizes", sizes)},
                                 {"down"})
                          ->output(0);
    // Sizes computed in the graph (an FPN's Shape of another level): a Gather reorders them.
    ir::Value* shape_of_up = g.add_node("Shape", "shape_up", {up->output(0)}, {"su"})->output(0);
    ir::Value* up2 =
        g.add_node("Resize", "up2", {down, g.add_constant("roi3", no_roi), nullptr, shape_of_up},
                   {"up2"})
            ->output(0);
    ir::Node* pool2 = g.add_node("MaxPool", "pool2", {up2}, {"pool2"});
    pool2->set_attribute(ir::Attribute::make_ints("kernel_shape", {2, 2}));
    pool2->set_attribute(ir::Attribute::make_ints("strides", {2, 2}));
    ir::Node* cat = g.add_node("Concat", "cat", {pool2->output(0), ap->output(0)}, {"cat"});
    cat->set_attribute(ir::Attribute::make_int("axis", 1));
    g.add_output(cat->output(0));
    ir::Tensor x = random_tensor(DType::Float32, {1, 8, 9, 9}, 73);
    if (with_nan) x.data<float>()[20] = std::numeric_limits<float>::quiet_NaN();
    Outcome o = run_both(g, {x});
    expect_close(o);
  }
}

TEST(CpuFusion, ConvPatternsThatMustNotFire) {
  {
    // The conv output is also a graph output: nothing is absorbed.
    ConvGraph cg(4, 4, 3);
    ir::Value* y = cg.g.add_node("Relu", "relu", {cg.y}, {"y"})->output(0);
    cg.g.add_output(cg.y);
    cg.g.add_output(y);
    Outcome o = run_both(cg.g, {random_tensor(DType::Float32, {1, 4, 9, 9}, 7)});
    expect_close(o);
    EXPECT_TRUE(o.groups.empty());
  }
  {
    // An Add that broadcasts the conv output to a larger shape is no residual.
    ConvGraph cg(4, 4, 3);
    ir::Value* big = cg.g.add_input("big", tensor_type(DType::Float32, {2, 4, 9, 9}));
    ir::Value* a = cg.g.add_node("Add", "add", {cg.y, big}, {"a"})->output(0);
    ir::Value* y = cg.g.add_node("Relu", "relu", {a}, {"y"})->output(0);
    cg.g.add_output(y);
    Outcome o = run_both(cg.g, {random_tensor(DType::Float32, {1, 4, 9, 9}, 8),
                                random_tensor(DType::Float32, {2, 4, 9, 9}, 9)});
    expect_close(o);
    for (const auto& group : o.groups)
      EXPECT_EQ(std::find(group.members.begin(), group.members.end(), "add"), group.members.end());
  }
}

// x[2, 5, 64] -> MatMul(W[64, 48]) -> tail
struct MatMulGraph {
  ir::Graph g{"matmul"};
  ir::Value* x;
  ir::Value* y;
  MatMulGraph() {
    x = g.add_input("x", tensor_type(DType::Float32, {2, 5, 64}));
    ir::Value* w = g.add_constant("w", random_tensor(DType::Float32, {64, 48}, 21));
    y = g.add_node("MatMul", "mm", {x, w}, {"p"})->output(0);
  }
  ir::Value* bias() { return g.add_constant("bias", random_tensor(DType::Float32, {48}, 22)); }
};

// The erf GELU of `x` as exporters write it, in one of three orders.
ir::Value* erf_gelu(ir::Graph& g, ir::Value* x, int order, const std::string& tag) {
  ir::Value* d =
      g.add_node("Div", tag + "div", {x, scalar(g, tag + "s2", std::sqrt(2.0))}, {tag + "d"})
          ->output(0);
  ir::Value* e = g.add_node("Erf", tag + "erf", {d}, {tag + "e"})->output(0);
  ir::Value* u =
      g.add_node("Add", tag + "add1", {e, scalar(g, tag + "one", 1.0)}, {tag + "u"})->output(0);
  ir::Value* half = scalar(g, tag + "half", 0.5);
  if (order == 0) {
    ir::Value* m = g.add_node("Mul", tag + "mx", {x, u}, {tag + "m"})->output(0);
    return g.add_node("Mul", tag + "mh", {m, half}, {tag + "y"})->output(0);
  }
  if (order == 1) {
    ir::Value* m = g.add_node("Mul", tag + "mh", {u, half}, {tag + "m"})->output(0);
    return g.add_node("Mul", tag + "mx", {x, m}, {tag + "y"})->output(0);
  }
  ir::Value* h = g.add_node("Mul", tag + "hx", {x, half}, {tag + "h"})->output(0);
  return g.add_node("Mul", tag + "mu", {h, u}, {tag + "y"})->output(0);
}

TEST(CpuFusion, MatMulBiasGeluInEveryExportedOrder) {
  for (int order = 0; order < 3; ++order) {
    MatMulGraph mg;
    ir::Value* a = mg.g.add_node("Add", "add_b", {mg.y, mg.bias()}, {"a"})->output(0);
    mg.g.add_output(erf_gelu(mg.g, a, order, "g_"));
    Outcome o = run_both(mg.g, {random_tensor(DType::Float32, {2, 5, 64}, 23)});
    expect_close(o, 1e-5, 2e-5);
    ASSERT_EQ(o.groups.size(), 1u) << order;
    EXPECT_EQ(members(o, 0).size(), 7u) << order;  // mm, add_b and the five GELU nodes
    EXPECT_EQ(members(o, 0)[0], "mm");
  }
}

TEST(CpuFusion, MatMulScaleAndBiasOrder) {
  // Relu(MatMul / 8 + bias): alpha applies to the product only.
  MatMulGraph mg;
  ir::Value* s = mg.g.add_node("Div", "div", {mg.y, scalar(mg.g, "eight", 8.0)}, {"s"})->output(0);
  ir::Value* a = mg.g.add_node("Add", "add_b", {s, mg.bias()}, {"a"})->output(0);
  ir::Value* y = mg.g.add_node("Relu", "relu", {a}, {"y"})->output(0);
  mg.g.add_output(y);
  Outcome o = run_both(mg.g, {random_tensor(DType::Float32, {2, 5, 64}, 24)});
  expect_close(o);
  EXPECT_EQ(members(o, 0), (std::vector<std::string>{"mm", "div", "add_b", "relu"}));
}

TEST(CpuFusion, GemmWithActivation) {
  for (bool with_c : {false, true}) {
    ir::Graph g("gemm");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {3, 32}));
    ir::Value* w = g.add_constant("w", random_tensor(DType::Float32, {16, 32}, 31));
    std::vector<ir::Value*> ins = {x, w};
    if (with_c) ins.push_back(g.add_constant("c", random_tensor(DType::Float32, {3, 16}, 32)));
    ir::Node* gemm = g.add_node("Gemm", "gemm", ins, {"p"});
    gemm->set_attribute(ir::Attribute::make_int("transB", 1));
    ir::Value* y = g.add_node("Relu", "relu", {gemm->output(0)}, {"y"})->output(0);
    g.add_output(y);
    Outcome o = run_both(g, {random_tensor(DType::Float32, {3, 32}, 33)});
    expect_close(o);
    EXPECT_EQ(members(o, 0), (std::vector<std::string>{"gemm", "relu"}));
  }
}

TEST(CpuFusion, TanhGeluBecomesOneNode) {
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), x^3 as Pow and as Mul(Mul(x, x), x)
  for (bool pow : {true, false}) {
    ir::Graph g("tanh_gelu");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {4, 33}));
    ir::Value* cube;
    if (pow) {
      cube = g.add_node("Pow", "pow", {x, scalar(g, "three", 3.0)}, {"cube"})->output(0);
    } else {
      ir::Value* sq = g.add_node("Mul", "sq", {x, x}, {"sq"})->output(0);
      cube = g.add_node("Mul", "cb", {sq, x}, {"cube"})->output(0);
    }
    ir::Value* c = g.add_node("Mul", "c", {scalar(g, "k1", 0.044715), cube}, {"cc"})->output(0);
    ir::Value* inner = g.add_node("Add", "inner", {x, c}, {"inner"})->output(0);
    ir::Value* s = g.add_node("Mul", "s", {inner, scalar(g, "k0", 0.7978845608)}, {"s"})->output(0);
    ir::Value* t = g.add_node("Tanh", "tanh", {s}, {"t"})->output(0);
    ir::Value* u = g.add_node("Add", "u", {t, scalar(g, "one", 1.0)}, {"u"})->output(0);
    ir::Value* h = g.add_node("Mul", "h", {x, scalar(g, "half", 0.5)}, {"h"})->output(0);
    ir::Value* y = g.add_node("Mul", "y", {h, u}, {"y"})->output(0);
    g.add_output(y);
    Outcome o = run_both(g, {random_tensor(DType::Float32, {4, 33}, 41)});
    expect_close(o, 1e-5, 1e-5);
    ASSERT_EQ(o.groups.size(), 1u);
    EXPECT_EQ(members(o, 0).size(), pow ? 8u : 9u);
  }
}

TEST(CpuFusion, GeluPatternsThatMustNotFire) {
  {
    // 0.6 instead of 0.5: not a GELU.
    ir::Graph g("not_gelu");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {4, 8}));
    ir::Value* d = g.add_node("Div", "div", {x, scalar(g, "s2", std::sqrt(2.0))}, {"d"})->output(0);
    ir::Value* e = g.add_node("Erf", "erf", {d}, {"e"})->output(0);
    ir::Value* u = g.add_node("Add", "add1", {e, scalar(g, "one", 1.0)}, {"u"})->output(0);
    ir::Value* m = g.add_node("Mul", "mx", {x, u}, {"m"})->output(0);
    ir::Value* y = g.add_node("Mul", "mh", {m, scalar(g, "half", 0.6)}, {"y"})->output(0);
    g.add_output(y);
    Outcome o = run_both(g, {random_tensor(DType::Float32, {4, 8}, 51)});
    expect_close(o);
    EXPECT_TRUE(o.groups.empty());
  }
  {
    // The Erf's result is also read elsewhere (a graph output).
    ir::Graph g("shared");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {4, 8}));
    ir::Value* y = erf_gelu(g, x, 0, "g_");
    g.add_output(y);
    g.add_output(g.find_node("g_erf")->output(0));
    Outcome o = run_both(g, {random_tensor(DType::Float32, {4, 8}, 52)});
    expect_close(o);
    EXPECT_TRUE(o.groups.empty());
  }
  {
    // A 0.5 of shape [1, 1, 8] widens x[4, 8]: the pattern must not fire.
    ir::Graph g("widening");
    ir::Value* x = g.add_input("x", tensor_type(DType::Float32, {4, 8}));
    ir::Value* d = g.add_node("Div", "div", {x, scalar(g, "s2", std::sqrt(2.0))}, {"d"})->output(0);
    ir::Value* e = g.add_node("Erf", "erf", {d}, {"e"})->output(0);
    ir::Value* u = g.add_node("Add", "add1", {e, scalar(g, "one", 1.0)}, {"u"})->output(0);
    ir::Value* m = g.add_node("Mul", "mx", {x, u}, {"m"})->output(0);
    ir::Tensor half(DType::Float32, {1, 1, 1});
    half.data<float>()[0] = 0.5f;
    ir::Value* y = g.add_node("Mul", "mh", {m, g.add_constant("half", half)}, {"y"})->output(0);
    g.add_output(y);
    Outcome o = run_both(g, {random_tensor(DType::Float32, {4, 8}, 53)});
    expect_close(o);
    EXPECT_TRUE(o.groups.empty());
  }
}

TEST(CpuFusion, TheReportNamesEachFusedNodesMembers) {
  auto g = std::make_unique<ir::Graph>("report");
  ir::Value* x = g->add_input("x", tensor_type(DType::Float32, {1, 4, 9, 9}));
  ir::Value* w = g->add_constant("w", random_tensor(DType::Float32, {4, 4, 3, 3}, 61));
  ir::Node* conv = g->add_node("Conv", "conv", {x, w}, {"c"});
  conv->set_attribute(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
  ir::Value* y = g->add_node("Relu", "relu", {conv->output(0)}, {"y"})->output(0);
  g->add_output(y);
  Options options;
  options.device = "cpu";
  Executable exe = Model::from_graph(std::move(g)).compile(options);
  nlohmann::json report = nlohmann::json::parse(exe.explain("json"));
  ASSERT_EQ(report["fusions"].size(), 1u) << report.dump(1);
  EXPECT_EQ(report["fusions"][0]["nodes"], nlohmann::json::array({"conv", "relu"}));
  EXPECT_EQ(report["fusions"][0]["device"], "cpu");
  EXPECT_FALSE(report["nodes"][0].contains("fused_into"));
  EXPECT_EQ(report["nodes"][1]["fused_into"], "conv");
  std::string text = exe.explain("text");
  EXPECT_NE(text.find("conv + relu (cpu, partition 0)"), std::string::npos) << text;
}

TEST(CpuFusion, NoFusionRunsEveryNodeAsItsOwnKernel) {
  auto make = [] {
    auto g = std::make_unique<ir::Graph>("no_fusion");
    ir::Value* x = g->add_input("x", tensor_type(DType::Float32, {1, 4, 9, 9}));
    ir::Value* w = g->add_constant("w", random_tensor(DType::Float32, {4, 4, 3, 3}, 61));
    ir::Value* c = g->add_node("Conv", "conv", {x, w}, {"c"})->output(0);
    g->add_output(g->add_node("Sigmoid", "sig", {c}, {"y"})->output(0));
    return g;
  };
  for (const char* device : {"cpu", "sim:0"}) {
    Options options;
    options.device = device;
    options.sim_devices = 1;
    options.fusion = false;
    Executable exe = Model::from_graph(make()).compile(options);
    nlohmann::json report = nlohmann::json::parse(exe.explain("json"));
    EXPECT_TRUE(report["fusions"].empty()) << device;
    options.fusion = true;
    Executable fused = Model::from_graph(make()).compile(options);
    EXPECT_EQ(nlohmann::json::parse(fused.explain("json"))["fusions"].size(), 1u) << device;
    Tensor x = random_tensor(DType::Float32, {1, 4, 9, 9}, 62);
    Tensor a = exe.run({{"x", x}}).at("y"), b = fused.run({{"x", x}}).at("y");
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    ASSERT_EQ(a.shape(), b.shape());
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(pa[i], pb[i], 1e-6) << device << " " << i;
  }
}

}  // namespace
}  // namespace switchyard::testing
