// The cpu backend's channels-last float32 depthwise convolution (conv_depthwise.cc) against a
// double reference and against the unfused NCHW graph: each case builds x -> Conv(group = C)
// [-> Add(z)] [-> activation], compiles it through CpuBackend (which runs it channels-last with
// the Add and the activation fused) and through a plain GraphProgram (one kernel per node), on
// seeded random data, NaN and infinities included. CMake runs it once more capped at AVX2.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/conv_internal.h"
#include "ops/shape_inference.h"
#include "runtime/graph_program.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

struct DwCase {
  int64_t n = 1, c = 8, h = 9, w = 11;
  int64_t kh = 3, kw = 3;
  std::vector<int64_t> strides = {1, 1}, dilations = {1, 1};
  std::vector<int64_t> pads = {1, 1, 1, 1};  // top, left, bottom, right
  bool bias = true;
  bool residual = false;
  std::string act;        // "", Relu, Clip, HardSwish, Sigmoid, Swish, Tanh
  bool specials = false;  // NaN, +inf and -inf among the inputs
  bool constant_weights = true;
  DType dtype = DType::Float32;
  int64_t multiplier = 1;  // output channels per group
  int threads = 2;

  int64_t out_h() const {
    return (h + pads[0] + pads[2] - ((kh - 1) * dilations[0] + 1)) / strides[0] + 1;
  }
  int64_t out_w() const {
    return (w + pads[1] + pads[3] - ((kw - 1) * dilations[1] + 1)) / strides[1] + 1;
  }
  std::string describe() const {
    return fmt::format("N{} C{} {}x{} k{}x{} s{},{} d{},{} pads {} {} {} {}{}{} act '{}'{}{}", n, c,
                       h, w, kh, kw, strides[0], strides[1], dilations[0], dilations[1], pads[0],
                       pads[1], pads[2], pads[3], bias ? " bias" : "", residual ? " residual" : "",
                       act, specials ? " specials" : "", constant_weights ? "" : " weights-input") +
           fmt::format(" threads {}", threads);
  }
};

constexpr double kClipLo = 0.0, kClipHi = 6.0;

ir::Type tensor_type(DType dtype, const std::vector<int64_t>& dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::Dim(d));
  return ir::Type::tensor(dtype, s);
}

ir::Value* scalar(ir::Graph& g, const std::string& name, double v, DType dtype) {
  ir::Tensor t(dtype, {});
  if (dtype == DType::Float64) {
    t.data<double>()[0] = v;
  } else {
    t.data<float>()[0] = static_cast<float>(v);
  }
  return g.add_constant(name, t);
}

// The activations as the standalone kernels compute them, NaN included.
double activate(const std::string& act, double x) {
  auto sigmoid = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  if (act == "Relu") return x < 0 ? 0 : x;
  if (act == "Clip") return std::min(std::max(x, kClipLo), kClipHi);
  if (act == "HardSwish") return x * std::max(0.0, std::min(1.0, x / 6 + 0.5));
  if (act == "Sigmoid") return sigmoid(x);
  if (act == "Swish") return x * sigmoid(x);
  if (act == "Tanh") return std::tanh(x);
  return x;
}

// act(conv(x, w) + b + z) in double, NCHW.
std::vector<double> reference(const DwCase& k, const std::vector<double>& x,
                              const std::vector<double>& w, const std::vector<double>* b,
                              const std::vector<double>* z) {
  const int64_t oh = k.out_h(), ow = k.out_w(), m = k.c * k.multiplier;
  std::vector<double> y(static_cast<size_t>(k.n * m * oh * ow));
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < m; ++o) {
      const int64_t c = o / k.multiplier;
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = b ? (*b)[static_cast<size_t>(o)] : 0.0;
          for (int64_t p = 0; p < k.kh; ++p)
            for (int64_t q = 0; q < k.kw; ++q) {
              const int64_t ih = i * k.strides[0] - k.pads[0] + p * k.dilations[0];
              const int64_t iw = j * k.strides[1] - k.pads[1] + q * k.dilations[1];
              if (ih < 0 || ih >= k.h || iw < 0 || iw >= k.w) continue;
              acc += x[static_cast<size_t>(((n * k.c + c) * k.h + ih) * k.w + iw)] *
                     w[static_cast<size_t>((o * k.kh + p) * k.kw + q)];
            }
          const size_t at = static_cast<size_t>(((n * m + o) * oh + i) * ow + j);
          if (z) acc += (*z)[at];
          y[at] = activate(k.act, acc);
        }
    }
  return y;
}

struct Outcome {
  ir::Tensor fused, plain, expected;
  std::vector<std::string> members;  // of the fused group, if any
};

Outcome run_case(const DwCase& k, uint64_t seed) {
  const int64_t m = k.c * k.multiplier;
  const std::vector<int64_t> x_shape = {k.n, k.c, k.h, k.w}, w_shape = {m, 1, k.kh, k.kw};
  const std::vector<int64_t> y_shape = {k.n, m, k.out_h(), k.out_w()};
  ir::Tensor x = random_tensor(k.dtype, x_shape, seed);
  ir::Tensor w = random_tensor(k.dtype, w_shape, seed + 1, -0.5, 1.0);
  ir::Tensor b = random_tensor(k.dtype, {m}, seed + 2);
  ir::Tensor z = random_tensor(k.dtype, y_shape, seed + 3);
  if (k.specials) {
    // Spread over the channels and the image so that interior and border pixels, and the
    // masked tail vector, each see some.
    const double specials[3] = {std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
    for (int64_t i = 0; i < 3 * k.n * k.c; ++i) {
      const int64_t at = (i * 7919 + 13) % x.numel();
      const double v = specials[i % 3];
      if (k.dtype == DType::Float64) {
        x.data<double>()[at] = v;
      } else {
        x.data<float>()[at] = static_cast<float>(v);
      }
    }
  }
  const std::vector<double> bd = to_doubles(b), zd = to_doubles(z);
  Outcome out;
  out.expected = tensor_of(k.dtype, y_shape,
                           reference(k, to_doubles(x), to_doubles(w), k.bias ? &bd : nullptr,
                                     k.residual ? &zd : nullptr));

  ir::Graph g("depthwise");
  std::vector<ir::Tensor> feeds = {x};
  ir::Value* xv = g.add_input("x", tensor_type(k.dtype, x_shape));
  ir::Value* wv;
  if (k.constant_weights) {
    wv = g.add_constant("w", w);
  } else {
    wv = g.add_input("w", tensor_type(k.dtype, w_shape));
    feeds.push_back(w);
  }
  std::vector<ir::Value*> conv_in = {xv, wv};
  if (k.bias) conv_in.push_back(g.add_constant("b", b));
  ir::Node* conv = g.add_node("Conv", "conv", conv_in, {"c"});
  conv->set_attribute(ir::Attribute::make_ints("kernel_shape", {k.kh, k.kw}));
  conv->set_attribute(ir::Attribute::make_ints("strides", k.strides));
  conv->set_attribute(ir::Attribute::make_ints("dilations", k.dilations));
  conv->set_attribute(ir::Attribute::make_ints("pads", k.pads));
  conv->set_attribute(ir::Attribute::make_int("group", k.c));
  ir::Value* y = conv->output(0);
  std::vector<std::string> members = {"conv"};
  if (k.residual) {
    ir::Value* zv = g.add_input("z", tensor_type(k.dtype, y_shape));
    feeds.push_back(z);
    y = g.add_node("Add", "add_z", {y, zv}, {"a"})->output(0);
    members.push_back("add_z");
  }
  if (k.act == "Clip") {
    y = g.add_node("Clip", "act",
                   {y, scalar(g, "lo", kClipLo, k.dtype), scalar(g, "hi", kClipHi, k.dtype)}, {"y"})
            ->output(0);
    members.push_back("act");
  } else if (k.act == "Swish") {
    ir::Value* s = g.add_node("Sigmoid", "sig", {y}, {"s"})->output(0);
    y = g.add_node("Mul", "act", {y, s}, {"y"})->output(0);
    members.push_back("sig");
    members.push_back("act");
  } else if (!k.act.empty()) {
    y = g.add_node(k.act, "act", {y}, {"y"})->output(0);
    members.push_back("act");
  }
  g.add_output(y);
  ops::infer_types(g);
  ir::verify(g);

  std::vector<ir::Datum> data;
  for (const ir::Tensor& t : feeds) data.emplace_back(t);
  runtime::GraphProgram plain(g, cpu::cpu_kernels());
  out.plain = run_program(plain, data)[0].tensor;

  backends::Partition p;
  p.graph = &g;
  p.device = "cpu";
  for (const auto& n : g.nodes()) p.nodes.push_back(n.get());
  for (const ir::Value* v : g.inputs()) p.inputs.push_back(v);
  for (const ir::Value* v : g.outputs()) p.outputs.push_back(v);
  p.input_on_host.assign(p.inputs.size(), 0);
  cpu::CpuBackend backend;
  auto compiled = backend.compile(p, backends::CompileOptions{});
  for (const auto& group : compiled->fusions())
    if (std::find(group.members.begin(), group.members.end(), "conv") != group.members.end())
      out.members = group.members;
  runtime::RunState state;
  state.pool = runtime::HostPool::create(/*poison=*/true);
  state.num_threads = k.threads;
  out.fused = compiled->run(data, state)[0].tensor;
  if (members.size() == 1) members.clear();  // a lone Conv forms no group
  EXPECT_EQ(out.members, members) << k.describe();
  return out;
}

void check(const DwCase& k, uint64_t seed) {
  SCOPED_TRACE(k.describe());
  const double tol = k.dtype == DType::Float64 ? 1e-12 : 1e-5;
  Outcome o = run_case(k, seed);
  EXPECT_EQ(compare_tensors(o.fused, o.expected, tol, tol), "") << "fused vs reference";
  EXPECT_EQ(compare_tensors(o.plain, o.expected, tol, tol), "") << "unfused vs reference";
  if (k.specials) {
    int64_t nans = 0;
    for (int64_t i = 0; i < o.expected.numel(); ++i)
      nans += std::isnan(o.expected.scalar_as_double(i));
    EXPECT_GT(nans, 0) << "the specials must reach the output";
  }
}

// Kernel sizes, strides, dilation, asymmetric pads, channel counts around the vector widths (8
// and 16: full, masked and mixed vectors), batches, with and without bias, widths whose
// interior takes 8-, 4-, 2- and 1-pixel blocks, and windows wholly in the padding.
TEST(CpuDepthwiseConv, MatchesTheReferenceAcrossShapes) {
  std::vector<DwCase> cases;
  for (int64_t c : {1, 7, 8, 16, 24, 33, 144})
    for (int64_t n : {1, 2}) {
      DwCase k;
      k.c = c;
      k.n = n;
      k.h = 7;
      k.w = 19;  // interior 17 = 8 + 8 + 1
      k.act = "Clip";
      k.bias = n == 1;
      cases.push_back(k);
    }
  DwCase k;
  k.c = 24;
  k.h = 13;
  k.w = 30;
  k.strides = {2, 2};  // 3x3 stride 2, pads 1: interior 14 = 8 + 4 + 2
  k.act = "Relu";
  cases.push_back(k);
  k.kh = k.kw = 5;
  k.pads = {2, 2, 2, 2};  // 5x5 stride 2
  cases.push_back(k);
  k.strides = {1, 1};  // 5x5 stride 1
  k.w = 17;
  cases.push_back(k);
  k = DwCase{};
  k.c = 33;
  k.w = 21;
  k.dilations = {2, 2};
  k.pads = {2, 2, 2, 2};  // 3x3 dilation 2
  k.act = "Clip";
  cases.push_back(k);
  k.strides = {2, 1};
  k.dilations = {1, 2};
  k.pads = {0, 3, 2, 1};  // asymmetric everything
  cases.push_back(k);
  k = DwCase{};
  k.c = 16;
  k.h = 5;
  k.w = 12;
  k.pads = {3, 0, 1, 2};  // the first row's taps all fall into the padding: bias only
  k.kh = 3;
  k.kw = 2;
  cases.push_back(k);
  k = DwCase{};
  k.c = 20;
  k.h = k.w = 3;
  k.kh = k.kw = 5;
  k.pads = {2, 2, 2, 2};  // no interior column: every pixel clipped
  k.n = 2;
  k.threads = 1;  // (on two, oneDNN takes 5x5 windows over outputs this small)
  cases.push_back(k);
  k = DwCase{};
  k.c = 40;
  k.h = k.w = 7;
  k.kh = k.kw = 5;
  k.pads = {2, 2, 2, 2};  // EfficientNet's 7x7 layers: one block of 8 with a pixel to drop
  k.act = "Swish";
  k.residual = true;
  k.threads = 1;
  cases.push_back(k);
  k.threads = 2;  // the same through oneDNN
  cases.push_back(k);
  k = DwCase{};
  k.c = 144;
  k.h = k.w = 14;
  k.strides = {2, 2};
  k.pads = {0, 0, 1, 1};  // TensorFlow's SAME for stride 2: padding at the end only
  k.act = "Clip";
  cases.push_back(k);
  uint64_t seed = 100;
  for (const DwCase& c : cases) check(c, seed += 10);
}

// Each fused activation, alone and after a fused residual, with and without bias, on channel
// counts with a masked tail (33) and a half vector on AVX-512 (24).
TEST(CpuDepthwiseConv, EveryActivationWithAndWithoutResidual) {
  uint64_t seed = 300;
  for (const char* act : {"", "Relu", "Clip", "HardSwish", "Sigmoid", "Swish", "Tanh"})
    for (bool residual : {false, true})
      for (int64_t c : {24, 33}) {
        DwCase k;
        k.c = c;
        k.n = residual ? 2 : 1;
        k.w = 14;
        k.act = act;
        k.residual = residual;
        k.bias = c == 33;
        k.strides = residual ? std::vector<int64_t>{1, 1} : std::vector<int64_t>{2, 2};
        check(k, seed += 10);
      }
}

// NaN and infinities in the input: the sums turn into NaN or infinities, which each activation
// must treat as the standalone kernels do (ReLU and Clip keep NaN, HardSwish and SiLU of -inf are
// NaN).
TEST(CpuDepthwiseConv, NaNAndInfinitiesKeepTheActivationsSemantics) {
  uint64_t seed = 500;
  for (const char* act : {"", "Relu", "Clip", "HardSwish", "Sigmoid", "Swish", "Tanh"})
    for (int64_t c : {16, 33}) {
      DwCase k;
      k.c = c;
      k.w = 13;
      k.kh = k.kw = c == 16 ? 3 : 5;
      k.pads = std::vector<int64_t>(4, k.kh / 2);
      k.act = act;
      k.specials = true;
      k.residual = c == 33;
      check(k, seed += 10);
    }
}

// Weights that are a graph input: packed on every run.
TEST(CpuDepthwiseConv, WeightsComputedAtRunTime) {
  DwCase k;
  k.c = 40;
  k.w = 17;
  k.constant_weights = false;
  k.act = "Clip";
  check(k, 700);
  k.residual = true;
  k.bias = false;
  check(k, 710);
}

// What the loop does not take: a channel multiplier of 2, float64 (the direct loop), 1-D and
// 3-D convolutions and grouped ones with several channels per group; those run as before and
// still match the reference.
TEST(CpuDepthwiseConv, OtherConvolutionsTakeOtherPaths) {
  cpu::ConvDims d;
  d.in = {9, 9};
  d.in_channels = d.out_channels = d.group = 16;
  EXPECT_TRUE(cpu::depthwise_conv_covers(d));
  d.out_channels = 32;  // multiplier 2
  EXPECT_FALSE(cpu::depthwise_conv_covers(d));
  d.out_channels = 16;
  d.group = 8;  // two channels per group
  EXPECT_FALSE(cpu::depthwise_conv_covers(d));
  d.group = 16;
  d.in = {9};
  EXPECT_FALSE(cpu::depthwise_conv_covers(d));
  d.in = {9, 9, 9};
  EXPECT_FALSE(cpu::depthwise_conv_covers(d));
  // 5x5 windows over outputs of at most 7x7 go to oneDNN on several threads (measured faster).
  d.in = {7, 7};
  d.out = {7, 7};
  d.kernel = {5, 5};
  EXPECT_TRUE(cpu::depthwise_conv_preferred(d, 1));
  EXPECT_FALSE(cpu::depthwise_conv_preferred(d, 2));
  d.kernel = {3, 3};
  EXPECT_TRUE(cpu::depthwise_conv_preferred(d, 2));
  d.out_channels = 32;
  EXPECT_FALSE(cpu::depthwise_conv_preferred(d, 1));

  DwCase k;
  k.c = 8;
  k.multiplier = 2;
  k.act = "Relu";
  k.residual = true;
  check(k, 800);
  k = DwCase{};
  k.dtype = DType::Float64;
  k.act = "Clip";
  k.residual = true;
  check(k, 810);
}

}  // namespace
}  // namespace switchyard::testing
