// Conv family kernels against plain reference loops written here.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_kernels.h"
#include "ir/check.h"
#include "runtime/graph_program.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

struct ConvCase {
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

// Reference forward convolution in double; returns output shape and values.
std::pair<std::vector<int64_t>, std::vector<double>> reference_conv(const ConvCase& c,
                                                                    const std::vector<double>& x,
                                                                    const std::vector<double>& w,
                                                                    const std::vector<double>* b) {
  size_t n = c.x.size() - 2;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end());
  std::vector<int64_t> s = c.strides.empty() ? std::vector<int64_t>(n, 1) : c.strides;
  std::vector<int64_t> d = c.dilations.empty() ? std::vector<int64_t>(n, 1) : c.dilations;
  std::vector<int64_t> p = c.pads.empty() ? std::vector<int64_t>(2 * n, 0) : c.pads;
  std::vector<int64_t> out(n), pb(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t ext = (k[i] - 1) * d[i] + 1;
    if (c.auto_pad == "VALID") {
      out[i] = (in[i] - ext) / s[i] + 1;
      pb[i] = 0;
    } else if (c.auto_pad == "NOTSET") {
      out[i] = (in[i] + p[i] + p[i + n] - ext) / s[i] + 1;
      pb[i] = p[i];
    } else {
      out[i] = (in[i] + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in[i]);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  }
  int64_t batch = c.x[0], channels = c.x[1], m_count = c.w[0], cg = c.w[1];
  int64_t mg = m_count / c.group;
  std::vector<int64_t> shape = {batch, m_count};
  shape.insert(shape.end(), out.begin(), out.end());
  std::vector<double> y(static_cast<size_t>(product(shape)));
  int64_t out_size = product(out), ksize = product(k), in_size = product(in);
  for (int64_t nn = 0; nn < batch; ++nn)
    for (int64_t m = 0; m < m_count; ++m)
      for (int64_t o = 0; o < out_size; ++o) {
        std::vector<int64_t> oc = unravel(o, out);
        double acc = b ? (*b)[static_cast<size_t>(m)] : 0.0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          int64_t ch = m / mg * cg + ci;
          for (int64_t kk = 0; kk < ksize; ++kk) {
            std::vector<int64_t> kc = unravel(kk, k);
            int64_t off = 0;
            bool inside = true;
            for (size_t i = 0; i < n; ++i) {
              int64_t pos = oc[i] * s[i] - pb[i] + kc[i] * d[i];
              if (pos < 0 || pos >= in[i]) inside = false;
              off = off * in[i] + pos;
            }
            if (!inside) continue;
            acc += x[static_cast<size_t>((nn * channels + ch) * in_size + off)] *
                   w[static_cast<size_t>((m * cg + ci) * ksize + kk)];
          }
        }
        y[static_cast<size_t>((nn * m_count + m) * out_size + o)] = acc;
      }
  return {shape, y};
}

void check_conv(const ConvCase& c, DType dtype, double rtol, double atol, bool constant_w,
                uint64_t seed) {
  ir::Tensor x = random_tensor(dtype, c.x, seed);
  ir::Tensor w = random_tensor(dtype, c.w, seed + 1);
  ir::Tensor b = random_tensor(dtype, {c.w[0]}, seed + 2);
  std::vector<double> bd = to_doubles(b);
  auto [shape, expected] = reference_conv(c, to_doubles(x), to_doubles(w), c.bias ? &bd : nullptr);
  testing::OpCase oc = make_case("Conv", {x, w}, conv_attrs(c), 1, {false, constant_w, constant_w});
  if (c.bias) oc.inputs.push_back(b);
  ir::Tensor y = run_op1(oc);
  ir::Tensor e = testing::tensor_of(dtype, shape, expected);
  EXPECT_TENSOR_NEAR(y, e, rtol, atol);
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{1, 3, 7, 7}, {4, 3, 3, 3}},
      {{2, 4, 9, 8}, {6, 2, 3, 2}, 2, {2, 1}, {1, 2}, {1, 0, 2, 1}},
      {{1, 8, 10, 10}, {8, 1, 3, 3}, 8, {1, 1}, {}, {1, 1, 1, 1}},  // depthwise
      {{2, 3, 11}, {5, 3, 4}, 1, {3}, {2}, {}, "SAME_UPPER"},
      {{1, 2, 10, 9}, {3, 2, 4, 3}, 1, {2, 3}, {}, {}, "SAME_LOWER", false},
      {{1, 2, 9, 9}, {3, 2, 3, 3}, 1, {2, 2}, {}, {}, "VALID"},
      {{1, 2, 5, 6, 4}, {4, 2, 2, 3, 2}, 1, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 1}},
      {{1, 16, 6, 6}, {32, 16, 1, 1}, 1, {}, {}, {}, "NOTSET", true},
      {{1, 2, 3, 4, 3, 3}, {2, 1, 2, 2, 2, 2}, 2, {}, {}, {}, "NOTSET", true},  // 4-D spatial
      // 3x3 stride 1 over 64 channels and 16x16 pixels: oneDNN's Winograd algorithm where
      // the CPU has AVX-512 (conv.cc's winograd_pays), with a ragged 2x2 output tile edge.
      {{1, 64, 17, 16}, {64, 64, 3, 3}, 1, {}, {}, {1, 1, 1, 1}},
  };
  return cases;
}

TEST(ConvKernel, Float32MatchesReference) {
  uint64_t seed = 10;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(ir::shape_to_string(c.x) + " w " + ir::shape_to_string(c.w) + " " + c.auto_pad);
    check_conv(c, DType::Float32, 1e-4, 1e-5, false, seed);
    check_conv(c, DType::Float32, 1e-4, 1e-5, true, seed);
    seed += 7;
  }
}

TEST(ConvKernel, OtherFloatTypesMatchReference) {
  uint64_t seed = 100;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(ir::shape_to_string(c.x) + " w " + ir::shape_to_string(c.w));
    check_conv(c, DType::Float64, 1e-10, 1e-12, false, seed);
    check_conv(c, DType::Float16, 2e-2, 2e-2, true, seed);
    check_conv(c, DType::BFloat16, 5e-2, 1e-1, false, seed);
    seed += 3;
  }
}

TEST(ConvKernel, ServesSeveralShapesAndRepeatedCalls) {
  // The same node object across shapes exercises the plan cache; repeat to hit cached plans.
  for (int repeat = 0; repeat < 2; ++repeat)
    for (int64_t h : {5, 8, 13})
      check_conv({{1, 3, h, h + 1}, {4, 3, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}}, DType::Float32,
                 1e-4, 1e-5, true, 7);
}

TEST(ConvKernel, ConcurrentRunsOverManyShapesShareOneKernel) {
  // One compiled node serves threads that each feed their own input sizes: more shapes than
  // the plan cache holds, so plans are built, shared and evicted while others run.
  ConvCase base{{1, 3, 8, 8}, {4, 3, 3, 3}, 1, {2, 1}, {}, {1, 1, 0, 1}};
  ir::Tensor w = random_tensor(DType::Float32, base.w, 1);
  ir::Tensor b = random_tensor(DType::Float32, {4}, 2);
  testing::OpCase oc = make_case("Conv", {random_tensor(DType::Float32, base.x, 3), w, b},
                                 conv_attrs(base), 1, {false, true, true});
  auto graph = testing::build_op_graph(oc);
  runtime::GraphProgram program(*graph, cpu::cpu_kernels());
  std::vector<std::string> failures = run_concurrently(4, 12, [&](int t, int i) {
    ConvCase c = base;
    c.x = {1 + i % 2, 3, 5 + (t * 3 + i) % 13, 6 + i};
    ir::Tensor x = random_tensor(DType::Float32, c.x, static_cast<uint64_t>(t * 100 + i));
    std::vector<double> bd = to_doubles(b);
    auto [shape, expected] = reference_conv(c, to_doubles(x), to_doubles(w), &bd);
    auto out = run_program(program, {x}, /*num_threads=*/1);
    return testing::compare_tensors(
        out[0].tensor, testing::tensor_of(DType::Float32, shape, expected), 1e-4, 1e-5);
  });
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

TEST(ConvKernel, BadShapesNameTheNode) {
  ir::Tensor x = random_tensor(DType::Float32, {1, 3, 5, 5}, 1);
  ir::Tensor w = random_tensor(DType::Float32, {4, 2, 3, 3}, 2);
  try {
    run_op1(make_case("Conv", {x, w}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_op1(make_case("Conv", {x, random_tensor(DType::Float32, {4, 3, 3, 3}, 2)},
                                 {Attribute::make_ints("strides", {1})})),
               Error);
  EXPECT_THROW(run_op1(make_case("Conv", {x, random_tensor(DType::Float32, {4, 3, 7, 7}, 2)})),
               Error);
}

// ConvTranspose reference: scatter every input element through the kernel.
struct DeconvCase {
  std::vector<int64_t> x = {}, w = {};  // x [N, C, in...], w [C, M/group, k...]
  int64_t group = 1;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {}, output_padding = {},
                       output_shape = {};
  std::string auto_pad = "NOTSET";
};

void check_deconv(const DeconvCase& c, DType dtype, double rtol, double atol, uint64_t seed) {
  size_t n = c.x.size() - 2;
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end());
  std::vector<int64_t> s = c.strides.empty() ? std::vector<int64_t>(n, 1) : c.strides;
  std::vector<int64_t> d = c.dilations.empty() ? std::vector<int64_t>(n, 1) : c.dilations;
  std::vector<int64_t> p = c.pads.empty() ? std::vector<int64_t>(2 * n, 0) : c.pads;
  std::vector<int64_t> op =
      c.output_padding.empty() ? std::vector<int64_t>(n, 0) : c.output_padding;
  std::vector<int64_t> out(n), pb(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t full = s[i] * (in[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1;
    if (!c.output_shape.empty() || c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = c.output_shape.empty() ? in[i] * s[i] : c.output_shape[i];
      int64_t total = full - out[i];
      pb[i] = total <= 0 ? 0 : c.auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
    } else {
      out[i] = full - p[i] - p[i + n];
      pb[i] = p[i];
    }
  }
  int64_t batch = c.x[0], channels = c.x[1], mg = c.w[1], m_count = mg * c.group;
  int64_t cg = channels / c.group;
  ir::Tensor x = random_tensor(dtype, c.x, seed);
  ir::Tensor w = random_tensor(dtype, c.w, seed + 1);
  ir::Tensor b = random_tensor(dtype, {m_count}, seed + 2);
  std::vector<double> xd = to_doubles(x), wd = to_doubles(w), bd = to_doubles(b);
  std::vector<int64_t> shape = {batch, m_count};
  shape.insert(shape.end(), out.begin(), out.end());
  int64_t out_size = product(out), in_size = product(in), ksize = product(k);
  std::vector<double> y(static_cast<size_t>(product(shape)));
  for (int64_t i = 0; i < product(shape); ++i)
    y[static_cast<size_t>(i)] = bd[static_cast<size_t>(i / out_size % m_count)];
  for (int64_t nn = 0; nn < batch; ++nn)
    for (int64_t ch = 0; ch < channels; ++ch)
      for (int64_t ii = 0; ii < in_size; ++ii) {
        std::vector<int64_t> ic = unravel(ii, in);
        double xv = xd[static_cast<size_t>((nn * channels + ch) * in_size + ii)];
        for (int64_t mo = 0; mo < mg; ++mo)
          for (int64_t kk = 0; kk < ksize; ++kk) {
            std::vector<int64_t> kc = unravel(kk, k);
            int64_t off = 0;
            bool inside = true;
            for (size_t i = 0; i < n; ++i) {
              int64_t pos = ic[i] * s[i] + kc[i] * d[i] - pb[i];
              if (pos < 0 || pos >= out[i]) inside = false;
              off = off * out[i] + pos;
            }
            if (!inside) continue;
            int64_t m = ch / cg * mg + mo;
            y[static_cast<size_t>((nn * m_count + m) * out_size + off)] +=
                xv * wd[static_cast<size_t>((ch * mg + mo) * ksize + kk)];
          }
      }
  std::vector<Attribute> a = {Attribute::make_int("group", c.group),
                              Attribute::make_string("auto_pad", c.auto_pad)};
  if (!c.strides.empty()) a.push_back(Attribute::make_ints("strides", c.strides));
  if (!c.dilations.empty()) a.push_back(Attribute::make_ints("dilations", c.dilations));
  if (!c.pads.empty()) a.push_back(Attribute::make_ints("pads", c.pads));
  if (!c.output_padding.empty())
    a.push_back(Attribute::make_ints("output_padding", c.output_padding));
  if (!c.output_shape.empty()) a.push_back(Attribute::make_ints("output_shape", c.output_shape));
  ir::Tensor result = run_op1(make_case("ConvTranspose", {x, w, b}, a, 1, {false, true, true}));
  EXPECT_TENSOR_NEAR(result, testing::tensor_of(dtype, shape, y), rtol, atol);
}

TEST(ConvTransposeKernel, MatchesScatterReference) {
  const std::vector<DeconvCase> cases = {
      {{1, 2, 4, 4}, {2, 3, 3, 3}},
      {{2, 4, 3, 5}, {4, 2, 3, 2}, 2, {2, 3}, {1, 2}, {1, 0, 0, 1}, {1, 1}},
      {{1, 1, 3, 3}, {1, 2, 3, 3}, 1, {2, 2}, {}, {}, {}, {}, "SAME_UPPER"},
      {{1, 1, 3, 3}, {1, 2, 3, 3}, 1, {2, 2}, {}, {}, {}, {}, "SAME_LOWER"},
      {{1, 1, 3, 3}, {1, 2, 3, 3}, 1, {3, 2}, {}, {}, {}, {10, 8}},  // beyond the full size
      {{1, 1, 3, 3}, {1, 2, 3, 3}, 1, {3, 2}, {}, {}, {}, {7, 5}},
      {{1, 3, 5}, {3, 2, 3}, 1, {2}, {2}, {1, 2}, {1}},
      {{1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, 1, {2, 1, 2}, {}, {0, 1, 0, 1, 0, 0}},
      {{1, 6, 4, 4}, {6, 1, 3, 3}, 6, {2, 2}, {}, {1, 1, 1, 1}},
  };
  uint64_t seed = 1;
  for (const DeconvCase& c : cases) {
    SCOPED_TRACE(ir::shape_to_string(c.x) + " w " + ir::shape_to_string(c.w) + " " + c.auto_pad);
    check_deconv(c, DType::Float32, 1e-4, 1e-5, seed);
    check_deconv(c, DType::Float64, 1e-10, 1e-12, seed);
    check_deconv(c, DType::Float16, 2e-2, 3e-2, seed);
    seed += 5;
  }
}

// Quantized convolutions against the float reference of dequantized values.
TEST(ConvIntegerKernel, MatchesReference) {
  for (DType dt : {DType::UInt8, DType::Int8}) {
    double lo = dt == DType::UInt8 ? 0 : -128, hi = dt == DType::UInt8 ? 256 : 128;
    ConvCase c{{1, 4, 6, 5}, {6, 2, 3, 2}, 2, {2, 1}, {}, {1, 0, 1, 1}};
    c.bias = false;
    ir::Tensor x = random_tensor(dt, c.x, 3, lo, hi);
    ir::Tensor w = random_tensor(DType::Int8, c.w, 4, -128, 128);
    ir::Tensor xzp = testing::tensor_of(dt, {}, {dt == DType::UInt8 ? 100.0 : -3.0});
    ir::Tensor wzp = random_tensor(DType::Int8, {6}, 5, -10, 10);
    std::vector<double> xd = to_doubles(x), wd = to_doubles(w);
    for (double& v : xd) v -= to_doubles(xzp)[0];
    for (size_t i = 0; i < wd.size(); ++i) wd[i] -= to_doubles(wzp)[i / 12];
    auto [shape, expected] = reference_conv(c, xd, wd, nullptr);
    ir::Tensor y = run_op1(make_case("ConvInteger", {x, w, xzp, wzp}, conv_attrs(c)));
    EXPECT_TENSOR_NEAR(y, testing::tensor_of(DType::Int32, shape, expected), 0, 0);
  }
}

// Constant weights take the exact float32 path (input channels in chunks whose sums stay below
// 2^24): the same integers as the reference, including the extreme values that force the
// smallest chunks, grouped and 1x1 convolutions, and batch 2.
TEST(ConvIntegerKernel, ConstantWeightsAreExactInEveryChunking) {
  struct Q {
    ConvCase c;
    DType xt, wt;
    double xzp, wzp;
    bool extreme;  // x and w at the ends of their ranges: the largest possible sums
  };
  const std::vector<Q> cases = {
      {{{1, 64, 9, 8}, {16, 64, 3, 3}, 1, {1, 1}, {}, {1, 1, 1, 1}},
       DType::UInt8,
       DType::Int8,
       0,
       127,
       true},
      {{{2, 64, 7, 7}, {8, 64, 3, 3}, 1, {2, 2}, {}, {1, 0, 1, 0}},
       DType::UInt8,
       DType::UInt8,
       128,
       128,
       false},
      {{{1, 300, 5, 5}, {12, 300, 1, 1}, 1}, DType::Int8, DType::Int8, -3, 0, false},
      {{{1, 300, 5, 5}, {12, 300, 1, 1}, 1}, DType::UInt8, DType::Int8, 255, -128, true},
      {{{1, 16, 8, 8}, {16, 1, 3, 3}, 16, {1, 1}, {2, 2}, {2, 2, 2, 2}},
       DType::UInt8,
       DType::Int8,
       7,
       0,
       false},
  };
  uint64_t seed = 40;
  for (const Q& q : cases) {
    SCOPED_TRACE(ir::shape_to_string(q.c.x) + " w " + ir::shape_to_string(q.c.w));
    ConvCase c = q.c;
    c.bias = false;
    auto range = [](DType t) {
      return t == DType::UInt8 ? std::pair<double, double>{0, 256}
                               : std::pair<double, double>{-128, 128};
    };
    ir::Tensor x = random_tensor(q.xt, c.x, seed++, range(q.xt).first, range(q.xt).second);
    ir::Tensor w = random_tensor(q.wt, c.w, seed++, range(q.wt).first, range(q.wt).second);
    if (q.extreme) {
      x = testing::tensor_of(q.xt, c.x,
                             std::vector<double>(x.numel(), q.xt == DType::UInt8 ? 255 : -128));
      w = testing::tensor_of(q.wt, c.w,
                             std::vector<double>(w.numel(), q.wt == DType::UInt8 ? 0 : -128));
    }
    ir::Tensor xzp = testing::tensor_of(q.xt, {}, {q.xzp});
    ir::Tensor wzp = testing::tensor_of(q.wt, {}, {q.wzp});
    std::vector<double> xd = to_doubles(x), wd = to_doubles(w);
    for (double& v : xd) v -= q.xzp;
    for (double& v : wd) v -= q.wzp;
    auto [shape, expected] = reference_conv(c, xd, wd, nullptr);
    ir::Tensor y = run_op1(
        make_case("ConvInteger", {x, w, xzp, wzp}, conv_attrs(c), 1, {false, true, false, true}));
    EXPECT_TENSOR_NEAR(y, testing::tensor_of(DType::Int32, shape, expected), 0, 0);
  }
}

TEST(QLinearConvKernel, MatchesReference) {
  ConvCase c{{1, 3, 7, 6}, {4, 3, 3, 3}, 1, {1, 2}, {}, {1, 1, 1, 1}};
  ir::Tensor x = random_tensor(DType::UInt8, c.x, 8, 0, 256);
  ir::Tensor w = random_tensor(DType::Int8, c.w, 9, -128, 128);
  ir::Tensor b = random_tensor(DType::Int32, {4}, 10, -1000, 1000);
  float xs = 0.02f, ys = 0.5f;
  std::vector<double> ws = {0.01, 0.02, 0.015, 0.03};
  ir::Tensor w_scale = testing::tensor_of(DType::Float32, {4}, ws);
  std::vector<double> xd = to_doubles(x), wd = to_doubles(w), bd = to_doubles(b);
  for (double& v : xd) v -= 120;
  auto [shape, acc] = reference_conv(c, xd, wd, &bd);
  std::vector<double> expected(acc.size());
  int64_t per = acc.size() / 4;
  for (size_t i = 0; i < acc.size(); ++i) {
    double v =
        std::nearbyint(static_cast<float>(acc[i]) * (xs * static_cast<float>(ws[i / per]) / ys)) +
        5;
    expected[i] = std::clamp(v, 0.0, 255.0);
  }
  ir::Tensor y = run_op1(make_case(
      "QLinearConv",
      {x, testing::tensor_of(DType::Float32, {}, {xs}), testing::tensor_of(DType::UInt8, {}, {120}),
       w, w_scale, testing::tensor_of(DType::Int8, {4}, {0, 0, 0, 0}),
       testing::tensor_of(DType::Float32, {}, {ys}), testing::tensor_of(DType::UInt8, {}, {5}), b},
      conv_attrs(c)));
  EXPECT_TENSOR_NEAR(y, testing::tensor_of(DType::UInt8, shape, expected), 0, 1);
}

}  // namespace
}  // namespace switchyard::testing
