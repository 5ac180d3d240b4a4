// NaN and ±Inf through the CPU kernels, as numpy and ONNX Runtime treat them: activations never
// turn NaN into a number, Max/Min and ReduceMax/ReduceMin let NaN win (numpy.maximum, np.max),
// ArgMax/ArgMin return the first NaN's index (np.argmax), MaxPool windows holding a NaN give
// NaN. Each case mixes NaN, +Inf and -Inf into seeded random numbers and checks float32,
// float64 and float16 against a plain reference here; one test cross-checks with numpy itself.
//
// The test pool poisons fresh buffers with 0xFF bytes, which read as NaN: every case mixes NaN
// with ordinary numbers, so an unwritten element shows as a NaN where a number is expected.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <tuple>

#include "ir/check.h"
#include "support/op_test_util.h"
#include "tooling/npz.h"

namespace switchyard::testing {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<DType> kFloatDtypes = {DType::Float32, DType::Float64, DType::Float16};

// Relative and absolute tolerance for a result computed in `dtype` against a double reference
// (absolute: sums of a few numbers that nearly cancel).
double rtol_of(DType dtype) { return dtype == DType::Float16 ? 2e-3 : 1e-5; }
double atol_of(DType dtype) { return dtype == DType::Float16 ? 1e-3 : 2e-5; }

// Seeded values in [-3, 3) with NaN, +Inf and -Inf mixed in at about `special` of the
// elements each (and each at least once).
Tensor special_tensor(DType dtype, std::vector<int64_t> shape, uint64_t seed,
                      double special = 0.08) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-3.0, 3.0);
  std::uniform_real_distribution<double> pick(0.0, 1.0);
  std::vector<double> v(static_cast<size_t>(product(shape)));
  for (double& x : v) {
    double p = pick(rng);
    x = p < special ? kNaN : p < 2 * special ? kInf : p < 3 * special ? -kInf : value(rng);
  }
  if (special > 0 && v.size() >= 3) {
    v[rng() % v.size()] = kNaN;
    size_t i = rng() % v.size();
    if (!std::isnan(v[i])) v[i] = kInf;
    size_t j = rng() % v.size();
    if (!std::isnan(v[j]) && !std::isinf(v[j])) v[j] = -kInf;
  }
  return tensor_of(dtype, std::move(shape), v);
}

int count_nan(const Tensor& t) {
  int n = 0;
  for (double v : to_doubles(t)) n += std::isnan(v) ? 1 : 0;
  return n;
}

// numpy.maximum / numpy.minimum: NaN if either is NaN.
double np_maximum(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double np_minimum(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}
// numpy.clip(x, lo, hi) = minimum(maximum(x, lo), hi).
double np_clip(double x, double lo, double hi) { return np_minimum(np_maximum(x, lo), hi); }

struct UnaryCase {
  std::string op;
  std::vector<Attribute> attributes;
  std::function<double(double)> reference;
};

std::vector<UnaryCase> unary_cases() {
  const double leaky = 0.1, elu = 0.7, celu = 1.3, hs_a = 0.2, hs_b = 0.5, thr = 0.4;
  const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
  return {
      {"Relu", {}, [](double x) { return np_maximum(x, 0.0); }},
      {"LeakyRelu",
       {Attribute::make_float("alpha", static_cast<float>(leaky))},
       [=](double x) { return x < 0 ? static_cast<float>(leaky) * x : x; }},
      {"Elu",
       {Attribute::make_float("alpha", static_cast<float>(elu))},
       [=](double x) { return x < 0 ? static_cast<float>(elu) * std::expm1(x) : x; }},
      {"Celu",
       {Attribute::make_float("alpha", static_cast<float>(celu))},
       [=](double x) {
         double a = static_cast<float>(celu);
         return np_maximum(x, 0.0) + np_minimum(a * std::expm1(x / a), 0.0);
       }},
      {"Selu",
       {},
       [=](double x) { return x > 0 ? selu_g * x : selu_g * (selu_a * std::exp(x) - selu_a); }},
      {"Softplus",
       {},
       [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }},
      {"HardSigmoid",
       {Attribute::make_float("alpha", static_cast<float>(hs_a)),
        Attribute::make_float("beta", static_cast<float>(hs_b))},
       [=](double x) {
         return np_clip(static_cast<float>(hs_a) * x + static_cast<float>(hs_b), 0.0, 1.0);
       }},
      {"HardSwish", {}, [](double x) { return x * np_maximum(0.0, np_minimum(1.0, x / 6 + 0.5)); }},
      {"Sigmoid", {}, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {"Tanh", {}, [](double x) { return std::tanh(x); }},
      // The ONNX reference: clip(x, alpha, inf), then the clipped values to 0; NaN stays.
      {"ThresholdedRelu",
       {Attribute::make_float("alpha", static_cast<float>(thr))},
       [=](double x) {
         double y = np_clip(x, static_cast<float>(thr), kInf);
         return y == static_cast<float>(thr) ? 0.0 : y;
       }},
  };
}

TEST(NanPropagation, ActivationsKeepNanAndMapInfinities) {
  for (const UnaryCase& c : unary_cases()) {
    for (DType dtype : kFloatDtypes) {
      SCOPED_TRACE(c.op + " " + std::string(ir::dtype_name(dtype)));
      Tensor x = special_tensor(dtype, {3, 37}, 11, 0.1);
      std::vector<double> want;
      for (double v : to_doubles(x)) want.push_back(c.reference(v));
      Tensor y = run_op1(make_case(c.op, {x}, c.attributes));
      EXPECT_TENSOR_NEAR(y, tensor_of(dtype, x.shape(), want), rtol_of(dtype), atol_of(dtype));
      EXPECT_GE(count_nan(y), count_nan(x)) << "a NaN input became a number";
    }
  }
}

TEST(NanPropagation, ClipKeepsNan) {
  for (DType dtype : kFloatDtypes) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    // Long enough for the vectorised loop, with a tail.
    Tensor x = special_tensor(dtype, {1037}, 5, 0.1);
    std::vector<double> want;
    for (double v : to_doubles(x)) want.push_back(np_clip(v, -0.5, 0.75));
    Tensor lo = tensor_of(dtype, {}, {-0.5});
    Tensor hi = tensor_of(dtype, {}, {0.75});
    EXPECT_TENSOR_NEAR(run_op1(make_case("Clip", {x, lo, hi})), tensor_of(dtype, {1037}, want), 0,
                       0);
    // Only one bound given.
    std::vector<double> want_hi;
    for (double v : to_doubles(x)) want_hi.push_back(np_minimum(v, 0.75));
    EXPECT_TENSOR_NEAR(run_op1(make_case("Clip", {x, std::nullopt, hi})),
                       tensor_of(dtype, {1037}, want_hi), 0, 0);
  }
}

// Reference of a broadcast elementwise fold over inputs of the same rank as `out_shape`.
std::vector<double> broadcast_fold(const std::vector<Tensor>& inputs,
                                   const std::vector<int64_t>& out_shape,
                                   const std::function<double(double, double)>& f) {
  std::vector<double> out(static_cast<size_t>(product(out_shape)));
  for (size_t o = 0; o < out.size(); ++o) {
    std::vector<int64_t> idx = unravel(static_cast<int64_t>(o), out_shape);
    double acc = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& t = inputs[k];
      std::vector<int64_t> in_idx(idx.end() - t.rank(), idx.end());
      for (size_t d = 0; d < in_idx.size(); ++d)
        if (t.shape()[d] == 1) in_idx[d] = 0;
      double v = t.scalar_as_double(ravel(in_idx, t.shape()));
      acc = k == 0 ? v : f(acc, v);
    }
    out[o] = acc;
  }
  return out;
}

TEST(NanPropagation, MaxAndMinLetNanWinElementwise) {
  for (DType dtype : kFloatDtypes) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    Tensor a = special_tensor(dtype, {4, 1, 9}, 21, 0.1);
    Tensor b = special_tensor(dtype, {5, 9}, 22, 0.1);
    Tensor c = special_tensor(dtype, {4, 5, 9}, 23, 0.1);
    for (const auto& [op, f] : std::vector<std::pair<std::string, double (*)(double, double)>>{
             {"Max", np_maximum}, {"Min", np_minimum}}) {
      SCOPED_TRACE(op);
      EXPECT_TENSOR_NEAR(run_op1(make_case(op, {a, b})),
                         tensor_of(dtype, {4, 5, 9}, broadcast_fold({a, b}, {4, 5, 9}, f)), 0, 0);
      EXPECT_TENSOR_NEAR(run_op1(make_case(op, {a, b, c})),
                         tensor_of(dtype, {4, 5, 9}, broadcast_fold({a, b, c}, {4, 5, 9}, f)), 0,
                         0);
    }
  }
}

// numpy's reductions over the `axes` of x (all axes when empty), keepdims=1.
Tensor reference_reduce(const Tensor& x, const std::vector<int64_t>& axes, const std::string& op) {
  std::vector<int64_t> shape = x.shape();
  std::vector<bool> reduced(shape.size(), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  std::vector<int64_t> out_shape = shape;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) out_shape[d] = 1;
  std::vector<std::vector<double>> groups(static_cast<size_t>(product(out_shape)));
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, shape);
    for (size_t d = 0; d < idx.size(); ++d)
      if (reduced[d]) idx[d] = 0;
    groups[static_cast<size_t>(ravel(idx, out_shape))].push_back(x.scalar_as_double(i));
  }
  std::vector<double> out;
  for (const auto& g : groups) {
    double r = 0;
    if (op == "ReduceMax") {
      r = -kInf;
      for (double v : g) r = np_maximum(r, v);
    } else if (op == "ReduceMin") {
      r = kInf;
      for (double v : g) r = np_minimum(r, v);
    } else if (op == "ReduceProd") {
      r = 1;
      for (double v : g) r *= v;
    } else {
      for (double v : g) {
        if (op == "ReduceL1") v = std::fabs(v);
        if (op == "ReduceL2" || op == "ReduceSumSquare") v = v * v;
        if (op == "ReduceLogSumExp") v = std::exp(v);
        r += v;
      }
      if (op == "ReduceMean") r /= static_cast<double>(g.size());
      if (op == "ReduceL2") r = std::sqrt(r);
      if (op == "ReduceLogSumExp" || op == "ReduceLogSum") r = std::log(r);
    }
    out.push_back(r);
  }
  return tensor_of(x.dtype(), out_shape, out);
}

TEST(NanPropagation, ReductionsFollowNumpy) {
  const std::vector<std::string> ops = {
      "ReduceMax", "ReduceMin", "ReduceSum",       "ReduceMean",   "ReduceProd",
      "ReduceL1",  "ReduceL2",  "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  // Contiguous rows (last axis, all axes), strided (middle axis) and the general walk.
  const std::vector<std::vector<int64_t>> axes_cases = {{2}, {}, {1}, {0, 2}};
  for (DType dtype : kFloatDtypes) {
    // Few enough specials that some groups hold none, some one kind, some several.
    Tensor x = special_tensor(dtype, {6, 5, 11}, 31, 0.025);
    for (const std::string& op : ops) {
      for (const auto& axes : axes_cases) {
        SCOPED_TRACE(
            fmt::format("{} {} axes [{}]", op, ir::dtype_name(dtype), fmt::join(axes, ",")));
        OpCase c = make_case(op, {x}, {Attribute::make_int("keepdims", 1)});
        if (!axes.empty()) c.inputs.push_back(int64_tensor(axes));
        Tensor want = reference_reduce(x, axes, op);
        EXPECT_TENSOR_NEAR(run_op1(c), want, rtol_of(dtype), atol_of(dtype));
      }
    }
  }
}

TEST(NanPropagation, ReduceMaxOfAllNanAndOfInfinities) {
  for (DType dtype : kFloatDtypes) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    Tensor x = tensor_of(dtype, {3, 4},
                         {kNaN, kNaN, kNaN, kNaN, -kInf, -kInf, -kInf, -kInf, 1.5, kInf, -2, kNaN});
    OpCase c = make_case("ReduceMax", {x, int64_tensor({1})}, {Attribute::make_int("keepdims", 0)});
    EXPECT_TENSOR_NEAR(run_op1(c), tensor_of(dtype, {3}, {kNaN, -kInf, kNaN}), 0, 0);
    c.op = "ReduceMin";
    EXPECT_TENSOR_NEAR(run_op1(c), tensor_of(dtype, {3}, {kNaN, -kInf, kNaN}), 0, 0);
  }
}

// numpy.argmax / argmin: the first NaN's index if the row holds one, else the first extreme.
std::vector<double> reference_arg(const Tensor& x, int64_t axis, bool max) {
  std::vector<int64_t> shape = x.shape();
  std::vector<int64_t> out_shape = shape;
  out_shape[static_cast<size_t>(axis)] = 1;
  std::vector<double> out;
  for (int64_t o = 0; o < product(out_shape); ++o) {
    std::vector<int64_t> idx = unravel(o, out_shape);
    int64_t best = -1;
    double best_v = 0;
    for (int64_t j = 0; j < shape[static_cast<size_t>(axis)]; ++j) {
      idx[static_cast<size_t>(axis)] = j;
      double v = x.scalar_as_double(ravel(idx, shape));
      if (std::isnan(v)) {
        best = j;
        break;
      }
      if (best < 0 || (max ? v > best_v : v < best_v)) {
        best = j;
        best_v = v;
      }
    }
    out.push_back(static_cast<double>(best));
  }
  return out;
}

TEST(NanPropagation, ArgMaxAndArgMinReturnTheFirstNan) {
  for (DType dtype : kFloatDtypes) {
    Tensor x = special_tensor(dtype, {4, 9, 6}, 41, 0.04);
    for (int64_t axis : {1, 2}) {
      for (bool max : {true, false}) {
        SCOPED_TRACE(
            fmt::format("{} {} axis {}", max ? "ArgMax" : "ArgMin", ir::dtype_name(dtype), axis));
        Tensor y = run_op1(
            make_case(max ? "ArgMax" : "ArgMin", {x},
                      {Attribute::make_int("axis", axis), Attribute::make_int("keepdims", 1)}));
        std::vector<int64_t> shape = x.shape();
        shape[static_cast<size_t>(axis)] = 1;
        EXPECT_TENSOR_NEAR(y, tensor_of(DType::Int64, shape, reference_arg(x, axis, max)), 0, 0);
      }
    }
  }
}

// Softmax, LogSoftmax and Hardmax along `axis` as the ONNX reference writes them in numpy:
// x - max(x) (NaN if the row holds one), exp, sum; Hardmax is one-hot at numpy's argmax.
Tensor reference_softmax(const Tensor& x, int64_t axis, const std::string& op) {
  std::vector<int64_t> shape = x.shape();
  std::vector<int64_t> row_shape = shape;
  row_shape[static_cast<size_t>(axis)] = 1;
  int64_t len = shape[static_cast<size_t>(axis)];
  std::vector<double> arg = reference_arg(x, axis, true);
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t r = 0; r < product(row_shape); ++r) {
    std::vector<int64_t> idx = unravel(r, row_shape);
    std::vector<int64_t> at(static_cast<size_t>(len));
    std::vector<double> v(static_cast<size_t>(len));
    double m = -kInf, sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      idx[static_cast<size_t>(axis)] = j;
      at[static_cast<size_t>(j)] = ravel(idx, shape);
      v[static_cast<size_t>(j)] = x.scalar_as_double(at[static_cast<size_t>(j)]);
      m = np_maximum(m, v[static_cast<size_t>(j)]);
    }
    for (double e : v) sum += std::exp(e - m);
    for (int64_t j = 0; j < len; ++j) {
      double e = v[static_cast<size_t>(j)];
      double y = op == "Softmax" ? std::exp(e - m) / sum
                 : op == "LogSoftmax"
                     ? (e - m) - std::log(sum)
                     : (arg[static_cast<size_t>(r)] == static_cast<double>(j) ? 1 : 0);
      out[static_cast<size_t>(at[static_cast<size_t>(j)])] = y;
    }
  }
  return tensor_of(x.dtype(), shape, out);
}

TEST(NanPropagation, SoftmaxFamilyFollowsTheNumpyReference) {
  for (DType dtype : kFloatDtypes) {
    // Few specials: most rows hold none, some one NaN or infinity.
    Tensor x = special_tensor(dtype, {4, 6, 5}, 45, 0.02);
    for (const std::string op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      for (int64_t axis : {2, 1}) {  // contiguous rows, then the strided walk
        SCOPED_TRACE(fmt::format("{} {} axis {}", op, ir::dtype_name(dtype), axis));
        Tensor y = run_op1(make_case(op, {x}, {Attribute::make_int("axis", axis)}));
        EXPECT_TENSOR_NEAR(y, reference_softmax(x, axis, op), rtol_of(dtype), atol_of(dtype));
      }
    }
  }
}

// Max pooling by numpy's max over each window (NaN wins); `pad` cells on each side are skipped.
Tensor reference_max_pool(const Tensor& x, int64_t k, int64_t stride, int64_t pad, bool average) {
  int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  std::vector<double> out;
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double acc = average ? 0 : -kInf;
        int64_t count = 0;
        for (int64_t a = 0; a < k; ++a)
          for (int64_t b = 0; b < k; ++b) {
            int64_t y = i * stride - pad + a, xx = j * stride - pad + b;
            if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
            double v = x.scalar_as_double((p * h + y) * w + xx);
            acc = average ? acc + v : np_maximum(acc, v);
            ++count;
          }
        out.push_back(average ? acc / static_cast<double>(count) : acc);
      }
  return tensor_of(x.dtype(), {n, c, oh, ow}, out);
}

std::vector<Attribute> window(int64_t k, int64_t stride, int64_t pad) {
  return {Attribute::make_ints("kernel_shape", {k, k}),
          Attribute::make_ints("strides", {stride, stride}),
          Attribute::make_ints("pads", {pad, pad, pad, pad})};
}

TEST(NanPropagation, MaxPoolWindowWithNanGivesNan) {
  // float32 runs through oneDNN, the others through the direct loop.
  for (DType dtype : kFloatDtypes) {
    Tensor x = special_tensor(dtype, {2, 3, 9, 10}, 51, 0.015);
    for (auto [k, stride, pad] :
         std::vector<std::tuple<int64_t, int64_t, int64_t>>{{3, 1, 1}, {2, 2, 0}, {3, 2, 0}}) {
      SCOPED_TRACE(fmt::format("{} k{} s{} p{}", ir::dtype_name(dtype), k, stride, pad));
      Tensor want = reference_max_pool(x, k, stride, pad, false);
      ASSERT_GT(count_nan(want), 0);
      ASSERT_LT(count_nan(want), want.numel());
      EXPECT_TENSOR_NEAR(run_op1(make_case("MaxPool", {x}, window(k, stride, pad))), want, 0, 0);
      // The Indices output takes the direct loop; the values must agree.
      auto both = run_op(make_case("MaxPool", {x}, window(k, stride, pad), 2));
      EXPECT_TENSOR_NEAR(both[0].tensor, want, 0, 0);
    }
    SCOPED_TRACE("GlobalMaxPool");
    std::vector<double> want;
    std::vector<double> xs = to_doubles(x);
    for (int64_t p = 0; p < 6; ++p) {
      double m = -kInf;
      for (int64_t i = 0; i < 90; ++i) m = np_maximum(m, xs[static_cast<size_t>(p * 90 + i)]);
      want.push_back(m);
    }
    EXPECT_TENSOR_NEAR(run_op1(make_case("GlobalMaxPool", {x})),
                       tensor_of(dtype, {2, 3, 1, 1}, want), 0, 0);
  }
}

TEST(NanPropagation, MaxPoolOfFiniteInputIsUnchanged) {
  // The NaN scan must not change results for ordinary inputs (infinities included).
  Tensor x = special_tensor(DType::Float32, {1, 4, 12, 12}, 52, 0.0);
  std::vector<double> v = to_doubles(x);
  v[7] = kInf;
  v[300] = -kInf;
  x = tensor_of(DType::Float32, x.shape(), v);
  EXPECT_TENSOR_NEAR(run_op1(make_case("MaxPool", {x}, window(3, 1, 1))),
                     reference_max_pool(x, 3, 1, 1, false), 0, 0);
  // A window of -inf alone gives -inf (oneDNN's pooling starts from the lowest finite value
  // and would give that): rows 4-5, columns 6-7 of plane 0, one 2x2 window of stride 2.
  for (int64_t r = 4; r < 6; ++r)
    for (int64_t c = 6; c < 8; ++c) v[static_cast<size_t>(r * 12 + c)] = -kInf;
  x = tensor_of(DType::Float32, x.shape(), v);
  Tensor want = reference_max_pool(x, 2, 2, 0, false);
  ASSERT_EQ(to_doubles(want)[2 * 6 + 3], -kInf);
  EXPECT_TENSOR_NEAR(run_op1(make_case("MaxPool", {x}, window(2, 2, 0))), want, 0, 0);
}

TEST(NanPropagation, AveragePoolPropagatesNaturally) {
  for (DType dtype : kFloatDtypes) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    Tensor x = special_tensor(dtype, {2, 3, 9, 10}, 53, 0.015);
    EXPECT_TENSOR_NEAR(run_op1(make_case("AveragePool", {x}, window(3, 1, 1))),
                       reference_max_pool(x, 3, 1, 1, true), rtol_of(dtype), atol_of(dtype));
  }
}

// The same cases against numpy itself: inputs go to an .npz, a python3 script writes numpy's
// results to another, and both are compared. Skips where python3 with numpy is missing.
TEST(NanPropagation, AgreesWithNumpy) {
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "python3 with numpy is not installed: the numpy cross-check is skipped";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("switchyard_nan_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string script = R"PY(
import sys
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
np.seterr(all="ignore")
z = np.load(sys.argv[1])
out = {}
for dt in ("f32", "f64"):
    x, a, b = z["x_" + dt], z["a_" + dt], z["b_" + dt]
    out["Relu_" + dt] = np.maximum(x, 0)
    out["LeakyRelu_" + dt] = np.where(x < 0, x.dtype.type(0.25) * x, x)
    out["Sigmoid_" + dt] = 1 / (1 + np.exp(-x))
    out["Tanh_" + dt] = np.tanh(x)
    out["Softplus_" + dt] = np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)
    out["HardSigmoid_" + dt] = np.clip(x * x.dtype.type(0.25) + x.dtype.type(0.5), 0, 1)
    out["Clip_" + dt] = np.clip(x, x.dtype.type(-0.5), x.dtype.type(0.75))
    out["Max_" + dt] = np.maximum(a, b)
    out["Min_" + dt] = np.minimum(a, b)
    out["ReduceMax_" + dt] = np.max(x, axis=1, keepdims=True)
    out["ReduceMin_" + dt] = np.min(x, axis=1, keepdims=True)
    out["ReduceSum_" + dt] = np.sum(x, axis=1, keepdims=True)
    out["ArgMax_" + dt] = np.argmax(x, axis=1).reshape(-1, 1).astype(np.int64)
    out["ArgMin_" + dt] = np.argmin(x, axis=1).reshape(-1, 1).astype(np.int64)
    p = z["p_" + dt]
    out["MaxPool_" + dt] = sliding_window_view(p, (3, 3), axis=(2, 3)).max(axis=(-2, -1))
np.savez(sys.argv[2], **out)
)PY";
  fs::path script_path = dir / "nan_numpy.py";
  {
    std::ofstream f(script_path);
    f << script;
  }
  std::vector<std::pair<std::string, Tensor>> arrays;
  std::map<std::string, std::function<Tensor()>> ours;
  for (DType dtype : {DType::Float32, DType::Float64}) {
    std::string dt = dtype == DType::Float32 ? "f32" : "f64";
    Tensor x = special_tensor(dtype, {7, 13}, 61, 0.05);
    Tensor a = special_tensor(dtype, {5, 8}, 62, 0.1);
    Tensor b = special_tensor(dtype, {5, 8}, 63, 0.1);
    Tensor p = special_tensor(dtype, {1, 2, 8, 9}, 64, 0.02);
    arrays.insert(arrays.end(), {{"x_" + dt, x}, {"a_" + dt, a}, {"b_" + dt, b}, {"p_" + dt, p}});
    auto unary = [x](std::string op, std::vector<Attribute> attrs) {
      return [x, op, attrs] { return run_op1(make_case(op, {x}, attrs)); };
    };
    ours["Relu_" + dt] = unary("Relu", {});
    // Attributes exact in float, so float64 agrees with numpy's float64 constants.
    ours["LeakyRelu_" + dt] = unary("LeakyRelu", {Attribute::make_float("alpha", 0.25f)});
    ours["Sigmoid_" + dt] = unary("Sigmoid", {});
    ours["Tanh_" + dt] = unary("Tanh", {});
    ours["Softplus_" + dt] = unary("Softplus", {});
    ours["HardSigmoid_" + dt] = unary("HardSigmoid", {Attribute::make_float("alpha", 0.25f),
                                                      Attribute::make_float("beta", 0.5f)});
    ours["Clip_" + dt] = [x, dtype] {
      return run_op1(
          make_case("Clip", {x, tensor_of(dtype, {}, {-0.5}), tensor_of(dtype, {}, {0.75})}));
    };
    ours["Max_" + dt] = [a, b] { return run_op1(make_case("Max", {a, b})); };
    ours["Min_" + dt] = [a, b] { return run_op1(make_case("Min", {a, b})); };
    for (std::string op : {"ReduceMax", "ReduceMin", "ReduceSum"})
      ours[op + "_" + dt] = [x, op] {
        return run_op1(make_case(op, {x, int64_tensor({1})}, {Attribute::make_int("keepdims", 1)}));
      };
    for (std::string op : {"ArgMax", "ArgMin"})
      ours[op + "_" + dt] = [x, op] {
        return run_op1(make_case(op, {x}, {Attribute::make_int("axis", 1)}));
      };
    ours["MaxPool_" + dt] = [p] {
      return run_op1(make_case("MaxPool", {p}, {Attribute::make_ints("kernel_shape", {3, 3})}));
    };
  }
  tooling::write_npz((dir / "in.npz").string(), arrays);
  std::string cmd = "/usr/bin/python3 " + script_path.string() + " " + (dir / "in.npz").string() +
                    " " + (dir / "want.npz").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto want = tooling::read_npz((dir / "want.npz").string());
  EXPECT_EQ(want.size(), ours.size());
  for (const auto& [name, run] : ours) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(want.count(name));
    Tensor got = run();
    double tol = got.dtype() == DType::Float32 ? 1e-5 : 1e-12;
    EXPECT_TENSOR_NEAR(got, want.at(name), tol, tol);
    if (got.dtype() != DType::Int64) {
      EXPECT_GT(count_nan(want.at(name)), 0) << "a case without NaN";
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace switchyard::testing
