// CPU kernels of the elementwise family (unary, activations, binary, variadic, Where, Clip,
// PRelu) against plain references on seeded random data.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

struct Tol {
  double rtol;
  double atol;
};

Tol tol_for(DType d) {
  switch (d) {
    case DType::Float16:
      return {2e-3, 2e-3};
    case DType::BFloat16:
      return {1.6e-2, 1e-2};
    case DType::Float32:
      return {2e-6, 1e-6};
    default:
      return {1e-12, 0};
  }
}

/// Wraps an exact integer result into dt's range, as integer arithmetic in dt does.
double wrap_to(DType dt, double v) {
  if (!ir::dtype_is_integer(dt) || ir::dtype_size(dt) >= 8) return v;
  double m = std::pow(2.0, 8.0 * static_cast<double>(ir::dtype_size(dt)));
  double r = std::fmod(v, m);
  if (r < 0) r += m;
  if (ir::dtype_is_signed(dt) && r >= m / 2) r -= m;
  return r;
}

/// Numpy broadcast of shapes (the test's own reference).
std::vector<int64_t> ref_broadcast(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  return out;
}

/// Elementwise reference over broadcast inputs: f(values of each input at the output index).
std::vector<double> ref_nary(const std::vector<const Tensor*>& ins, std::vector<int64_t>& out_shape,
                             const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<double>> vals;
  for (const Tensor* t : ins) {
    shapes.push_back(t->shape());
    vals.push_back(to_doubles(*t));
  }
  out_shape = ref_broadcast(shapes);
  int64_t n = 1;
  for (int64_t d : out_shape) n *= d;
  std::vector<double> out;
  std::vector<int64_t> idx(out_shape.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat;
    for (size_t d = out_shape.size(); d-- > 0;) {
      idx[d] = rem % out_shape[d];
      rem /= out_shape[d];
    }
    std::vector<double> args;
    for (size_t k = 0; k < ins.size(); ++k) {
      const auto& s = shapes[k];
      int64_t off = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        int64_t id = idx[out_shape.size() - s.size() + i];
        off = off * s[i] + (s[i] == 1 ? 0 : id);
      }
      args.push_back(vals[k][static_cast<size_t>(off)]);
    }
    out.push_back(f(args));
  }
  return out;
}

/// Runs a one-node graph of `op` and returns its first output.
Tensor run1(const std::string& op, std::vector<std::optional<Tensor>> inputs,
            std::vector<Attribute> attrs = {}) {
  testing::OpCase c;
  c.op = op;
  c.inputs = std::move(inputs);
  c.attributes = std::move(attrs);
  return run_op1(c);
}

void check_unary(const std::string& op, DType dt, const std::vector<int64_t>& shape,
                 const std::function<double(double)>& ref, double lo, double hi,
                 std::vector<Attribute> attrs = {}, uint64_t seed = 7) {
  Tensor x = random_tensor(dt, shape, seed, lo, hi);
  std::vector<double> e;
  for (double v : to_doubles(x)) e.push_back(ref(v));
  Tensor y = run1(op, {x}, std::move(attrs));
  Tol t = tol_for(dt);
  EXPECT_TENSOR_NEAR(y, tensor_of(dt, shape, e), t.rtol, t.atol) << op << " " << ir::dtype_name(dt);
}

const std::vector<std::vector<int64_t>> kUnaryShapes = {{}, {0}, {7}, {3, 5}, {2, 3, 40}};

struct UnaryCase {
  const char* op;
  std::function<double(double)> ref;
  double lo, hi;
};

TEST(ElementwiseUnary, MathMatchesLibmOnFloatTypes) {
  std::vector<UnaryCase> cases = {
      {"Acos", [](double x) { return std::acos(x); }, -0.99, 0.99},
      {"Acosh", [](double x) { return std::acosh(x); }, 1.0, 5.0},
      {"Asin", [](double x) { return std::asin(x); }, -0.99, 0.99},
      {"Asinh", [](double x) { return std::asinh(x); }, -4, 4},
      {"Atan", [](double x) { return std::atan(x); }, -4, 4},
      {"Atanh", [](double x) { return std::atanh(x); }, -0.9, 0.9},
      {"Ceil", [](double x) { return std::ceil(x); }, -4, 4},
      {"Cos", [](double x) { return std::cos(x); }, -4, 4},
      {"Cosh", [](double x) { return std::cosh(x); }, -3, 3},
      {"Erf", [](double x) { return std::erf(x); }, -3, 3},
      {"Exp", [](double x) { return std::exp(x); }, -5, 5},
      {"Floor", [](double x) { return std::floor(x); }, -4, 4},
      {"Log", [](double x) { return std::log(x); }, 0.01, 10},
      {"Reciprocal", [](double x) { return 1.0 / x; }, 0.5, 4},
      {"Round", [](double x) { return std::nearbyint(x); }, -6, 6},
      {"Sin", [](double x) { return std::sin(x); }, -4, 4},
      {"Sinh", [](double x) { return std::sinh(x); }, -3, 3},
      {"Sqrt", [](double x) { return std::sqrt(x); }, 0, 9},
      {"Tan", [](double x) { return std::tan(x); }, -1.2, 1.2},
      {"Tanh", [](double x) { return std::tanh(x); }, -4, 4},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -20, 20},
      {"Softplus", [](double x) { return std::log1p(std::exp(x)); }, -20, 20},
      {"Softsign", [](double x) { return x / (1 + std::fabs(x)); }, -5, 5},
      {"Mish", [](double x) { return x * std::tanh(std::log1p(std::exp(x))); }, -6, 6},
      {"HardSwish", [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5},
      {"Relu", [](double x) { return std::max(x, 0.0); }, -5, 5},
      {"Neg", [](double x) { return -x; }, -5, 5},
      {"Abs", [](double x) { return std::fabs(x); }, -5, 5},
      {"Sign", [](double x) { return double((x > 0) - (x < 0)); }, -5, 5},
  };
  for (const auto& c : cases)
    for (DType dt : {DType::Float32, DType::Float16, DType::Float64, DType::BFloat16})
      for (const auto& shape : kUnaryShapes) check_unary(c.op, dt, shape, c.ref, c.lo, c.hi);
}

TEST(ElementwiseUnary, RoundIsHalfToEven) {
  Tensor x = tensor_of(DType::Float32, {6}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4999});
  EXPECT_TENSOR_NEAR(run1("Round", {x}), tensor_of(DType::Float32, {6}, {0, 2, 2, -0, -2, 2}), 0,
                     0);
}

TEST(ElementwiseUnary, ActivationsWithAttributes) {
  auto f = [](const char* n, float v) { return Attribute::make_float(n, v); };
  for (DType dt : {DType::Float32, DType::Float16}) {
    std::vector<int64_t> shape = {4, 33};
    check_unary("Elu", dt, shape, [](double x) { return x < 0 ? 0.7 * std::expm1(x) : x; }, -4, 4,
                {f("alpha", 0.7f)});
    check_unary(
        "Celu", dt, shape,
        [](double x) { return std::max(0.0, x) + std::min(0.0, 1.5 * std::expm1(x / 1.5)); }, -4, 4,
        {f("alpha", 1.5f)});
    check_unary("HardSigmoid", dt, shape,
                [](double x) { return std::clamp(0.3 * x + 0.4, 0.0, 1.0); }, -5, 5,
                {f("alpha", 0.3f), f("beta", 0.4f)});
    check_unary("LeakyRelu", dt, shape, [](double x) { return x < 0 ? 0.1 * x : x; }, -5, 5,
                {f("alpha", 0.1f)});
    check_unary(
        "LeakyRelu", dt, shape, [](double x) { return x < 0 ? 0.01 * x : x; }, -5, 5);
    check_unary("ThresholdedRelu", dt, shape, [](double x) { return x > 0.5 ? x : 0; }, -2, 2,
                {f("alpha", 0.5f)});
    check_unary(
        "Selu", dt, shape,
        [](double x) {
          const double a = 1.67326319217681884765625, g = 1.05070102214813232421875;
          return x > 0 ? g * x : g * (a * std::exp(x) - a);
        },
        -4, 4);
    check_unary("Shrink", dt, shape,
                [](double x) { return x < -0.8  ? x + 0.2
                                      : x > 0.8 ? x - 0.2
                                                : 0.0; }, -2, 2,
                {f("bias", 0.2f), f("lambd", 0.8f)});
    check_unary(
        "Gelu", dt, shape, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
        -5, 5);
    check_unary("Gelu", dt, shape,
                [](double x) {
                  return 0.5 * x *
                         (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
                },
                -5, 5, {Attribute::make_string("approximate", "tanh")});
  }
}

TEST(ElementwiseUnary, IntegerOps) {
  std::vector<int64_t> shape = {5, 9};
  for (DType dt : {DType::Int8, DType::Int32, DType::Int64}) {
    check_unary(
        "Abs", dt, shape, [](double x) { return std::fabs(x); }, -100, 100);
    check_unary(
        "Neg", dt, shape, [](double x) { return -x; }, -100, 100);
    check_unary(
        "Sign", dt, shape, [](double x) { return double((x > 0) - (x < 0)); }, -3, 3);
    check_unary(
        "Relu", dt, shape, [](double x) { return std::max(0.0, x); }, -100, 100);
    check_unary("Shrink", dt, shape, [](double x) { return x < -2  ? x + 1
                                                           : x > 2 ? x - 1
                                                                   : 0; },
                -10, 10, {Attribute::make_float("lambd", 2), Attribute::make_float("bias", 1)});
  }
  check_unary(
      "Abs", DType::UInt16, shape, [](double x) { return x; }, 0, 1000);
  check_unary(
      "BitwiseNot", DType::Int32, shape, [](double x) { return -x - 1; }, -1000, 1000);
  check_unary(
      "BitwiseNot", DType::UInt8, shape, [](double x) { return 255 - x; }, 0, 255);
  // The most negative value wraps instead of overflowing.
  Tensor m = tensor_of(DType::Int8, {2}, {-128, 5});
  EXPECT_TENSOR_NEAR(run1("Neg", {m}), tensor_of(DType::Int8, {2}, {-128, -5}), 0, 0);
  EXPECT_TENSOR_NEAR(run1("Abs", {m}), tensor_of(DType::Int8, {2}, {-128, 5}), 0, 0);
  Tensor b = random_tensor(DType::Bool, {3, 7}, 3);
  std::vector<double> e;
  for (double v : to_doubles(b)) e.push_back(v == 0);
  EXPECT_TENSOR_NEAR(run1("Not", {b}), tensor_of(DType::Bool, {3, 7}, e), 0, 0);
}

TEST(ElementwiseUnary, IsInfIsNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::Float32, DType::Float16, DType::Float64}) {
    Tensor x = tensor_of(dt, {2, 3}, {1.0, inf, -inf, nan, 0.0, -2.5});
    EXPECT_TENSOR_NEAR(run1("IsNaN", {x}), tensor_of(DType::Bool, {2, 3}, {0, 0, 0, 1, 0, 0}), 0,
                       0);
    EXPECT_TENSOR_NEAR(run1("IsInf", {x}), tensor_of(DType::Bool, {2, 3}, {0, 1, 1, 0, 0, 0}), 0,
                       0);
    EXPECT_TENSOR_NEAR(run1("IsInf", {x}, {Attribute::make_int("detect_negative", 0)}),
                       tensor_of(DType::Bool, {2, 3}, {0, 1, 0, 0, 0, 0}), 0, 0);
    EXPECT_TENSOR_NEAR(run1("IsInf", {x}, {Attribute::make_int("detect_positive", 0)}),
                       tensor_of(DType::Bool, {2, 3}, {0, 0, 1, 0, 0, 0}), 0, 0);
  }
}

TEST(ElementwiseUnary, Clip) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Int8, DType::Int64}) {
    Tensor x = random_tensor(dt, {4, 17}, 11, -50, 50);
    Tensor lo = tensor_of(dt, {}, {-10});
    Tensor hi = tensor_of(dt, {}, {20});
    auto expect = [&](double l, double h) {
      std::vector<double> e;
      for (double v : to_doubles(x)) e.push_back(std::min(std::max(v, l), h));
      return tensor_of(dt, {4, 17}, e);
    };
    const double big = 1e300;
    EXPECT_TENSOR_NEAR(run1("Clip", {x, lo, hi}), expect(-10, 20), 0, 0);
    EXPECT_TENSOR_NEAR(run1("Clip", {x, lo}), expect(-10, big), 0, 0);
    EXPECT_TENSOR_NEAR(run1("Clip", {x, std::nullopt, hi}), expect(-big, 20), 0, 0);
    EXPECT_TENSOR_NEAR(run1("Clip", {x}), x, 0, 0);
    // min > max: everything becomes max.
    EXPECT_TENSOR_NEAR(run1("Clip", {x, hi, lo}), expect(20, -10), 0, 0);
  }
  Tensor x = random_tensor(DType::Float32, {3}, 1);
  Tensor bad = random_tensor(DType::Float32, {2}, 1);
  EXPECT_THROW(run1("Clip", {x, bad}), Error);
}

void check_binary(const std::string& op, DType dt, const std::vector<int64_t>& sa,
                  const std::vector<int64_t>& sb, const std::function<double(double, double)>& ref,
                  double lo, double hi, DType out_dt, std::vector<Attribute> attrs = {},
                  uint64_t seed = 5) {
  Tensor a = random_tensor(dt, sa, seed, lo, hi);
  Tensor b = random_tensor(dt, sb, seed + 1, lo, hi);
  std::vector<int64_t> shape;
  auto e = ref_nary({&a, &b}, shape,
                    [&](const std::vector<double>& v) { return wrap_to(out_dt, ref(v[0], v[1])); });
  Tensor y = run1(op, {a, b}, std::move(attrs));
  Tol t = tol_for(out_dt);
  EXPECT_TENSOR_NEAR(y, tensor_of(out_dt, shape, e), t.rtol, t.atol)
      << op << " " << ir::dtype_name(dt) << " " << ir::shape_to_string(sa) << " vs "
      << ir::shape_to_string(sb);
}

const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> kBroadcastPairs = {
    {{4, 5}, {4, 5}},       {{}, {3, 4}},           {{3, 4}, {}},
    {{3, 4}, {4}},          {{3, 1}, {1, 4}},       {{2, 3, 4, 5}, {3, 1, 1}},
    {{2, 1, 4}, {3, 1}},    {{0, 3}, {3}},          {{1, 1}, {1}},
    {{5, 1, 3}, {5, 2, 1}}, {{2, 3, 4}, {1, 3, 1}}, {{6}, {1}},
};

TEST(ElementwiseBinary, ArithmeticBroadcasts) {
  struct Case {
    const char* op;
    std::function<double(double, double)> ref;
  };
  std::vector<Case> cases = {{"Add", [](double a, double b) { return a + b; }},
                             {"Sub", [](double a, double b) { return a - b; }},
                             {"Mul", [](double a, double b) { return a * b; }},
                             {"Max", [](double a, double b) { return std::max(a, b); }},
                             {"Min", [](double a, double b) { return std::min(a, b); }}};
  for (const auto& c : cases)
    for (DType dt : {DType::Float32, DType::Float16, DType::Float64, DType::Int32, DType::Int64,
                     DType::UInt8, DType::Int8})
      for (const auto& [sa, sb] : kBroadcastPairs) {
        bool small = dt == DType::UInt8 || dt == DType::Int8;
        check_binary(c.op, dt, sa, sb, c.ref, small ? 0 : -10, small ? 10 : 10, dt);
      }
  for (const auto& [sa, sb] : kBroadcastPairs)
    check_binary(
        "Add", DType::BFloat16, sa, sb, [](double a, double b) { return a + b; }, -4, 4,
        DType::BFloat16);
}

TEST(ElementwiseBinary, DivFloatAndInteger) {
  for (const auto& [sa, sb] : kBroadcastPairs) {
    check_binary(
        "Div", DType::Float32, sa, sb, [](double a, double b) { return a / b; }, 1, 5,
        DType::Float32);
    check_binary(
        "Div", DType::Float16, sa, sb, [](double a, double b) { return a / b; }, 1, 5,
        DType::Float16);
    check_binary(
        "Div", DType::Int32, sa, sb, [](double a, double b) { return std::trunc(a / b); }, 1, 50,
        DType::Int32);
  }
  Tensor a = tensor_of(DType::Int32, {4}, {-7, 7, -2147483648.0, 9});
  Tensor b = tensor_of(DType::Int32, {4}, {2, -2, -1, 3});
  EXPECT_TENSOR_NEAR(run1("Div", {a, b}), tensor_of(DType::Int32, {4}, {-3, -3, -2147483648.0, 3}),
                     0, 0);
  Tensor z = tensor_of(DType::Int32, {4}, {1, 0, 1, 1});
  try {
    run1("Div", {a, z});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Div] node 'node'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

TEST(ElementwiseBinary, ModSignSemantics) {
  auto py_mod = [](double a, double b) {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  };
  auto c_mod = [](double a, double b) { return std::fmod(a, b); };
  for (DType dt : {DType::Int8, DType::Int32, DType::Int64}) {
    for (const auto& [sa, sb] : kBroadcastPairs) {
      Tensor a = random_tensor(dt, sa, 3, -60, 60);
      Tensor b = random_tensor(dt, sb, 4, 1, 9);
      // Mixed-sign divisors: flip every other one.
      auto vals = to_doubles(b);
      for (size_t k = 0; k < vals.size(); k += 2) vals[k] = -vals[k];
      b = tensor_of(dt, sb, vals);
      for (int fmod : {0, 1}) {
        std::vector<int64_t> shape;
        auto e = ref_nary({&a, &b}, shape, [&](const std::vector<double>& v) {
          return fmod ? c_mod(v[0], v[1]) : py_mod(v[0], v[1]);
        });
        EXPECT_TENSOR_NEAR(run1("Mod", {a, b}, {Attribute::make_int("fmod", fmod)}),
                           tensor_of(dt, shape, e), 0, 0);
      }
    }
  }
  check_binary("Mod", DType::UInt16, {3, 4}, {4}, c_mod, 1, 500, DType::UInt16);
  for (DType dt : {DType::Float32, DType::Float16})
    check_binary("Mod", dt, {3, 4}, {4}, c_mod, -5, 5, dt, {Attribute::make_int("fmod", 1)});
  Tensor f = random_tensor(DType::Float32, {3}, 1);
  EXPECT_THROW(run1("Mod", {f, f}), Error);  // fmod=0 is invalid for floats
  Tensor i = tensor_of(DType::Int32, {2}, {-2147483648.0, 5});
  Tensor m1 = tensor_of(DType::Int32, {2}, {-1, -1});
  EXPECT_TENSOR_NEAR(run1("Mod", {i, m1}), tensor_of(DType::Int32, {2}, {0, 0}), 0, 0);
}

TEST(ElementwiseBinary, PowMixedTypes) {
  for (const auto& [sa, sb] : kBroadcastPairs) {
    check_binary(
        "Pow", DType::Float32, sa, sb, [](double a, double b) { return std::pow(a, b); }, 0.5, 3,
        DType::Float32);
    check_binary(
        "Pow", DType::Float16, sa, sb, [](double a, double b) { return std::pow(a, b); }, 0.5, 2,
        DType::Float16);
  }
  Tensor base = tensor_of(DType::Int32, {4}, {1, 2, 3, -2});
  Tensor fexp = tensor_of(DType::Float32, {4}, {4, 5, 6, 3});
  EXPECT_TENSOR_NEAR(run1("Pow", {base, fexp}), tensor_of(DType::Int32, {4}, {1, 32, 729, -8}), 0,
                     0);
  Tensor iexp = tensor_of(DType::Int64, {4}, {4, 5, 6, 3});
  EXPECT_TENSOR_NEAR(run1("Pow", {base, iexp}), tensor_of(DType::Int32, {4}, {1, 32, 729, -8}), 0,
                     0);
  Tensor fb = tensor_of(DType::Float32, {3}, {1.5, 2, -3});
  Tensor u8 = tensor_of(DType::UInt8, {1}, {3});
  EXPECT_TENSOR_NEAR(run1("Pow", {fb, u8}), tensor_of(DType::Float32, {3}, {3.375, 8, -27}), 1e-7,
                     0);
  Tensor two = tensor_of(DType::Float32, {}, {2});
  Tensor x = random_tensor(DType::Float32, {5, 6}, 2, -3, 3);
  std::vector<double> sq;
  for (double v : to_doubles(x)) sq.push_back(v * v);
  EXPECT_TENSOR_NEAR(run1("Pow", {x, two}), tensor_of(DType::Float32, {5, 6}, sq), 1e-7, 0);
  Tensor l = tensor_of(DType::Int64, {3}, {3, 2, 7});
  Tensor le = tensor_of(DType::Int64, {3}, {39, 62, 2});
  EXPECT_TENSOR_NEAR(
      run1("Pow", {l, le}),
      tensor_of(DType::Int64, {3}, {4052555153018976267.0, 4611686018427387904.0, 49}), 0, 0);
}

TEST(ElementwiseBinary, BitsAndLogic) {
  for (DType dt : {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64}) {
    Tensor a = random_tensor(dt, {3, 4}, 1, 0, 200);
    Tensor s = tensor_of(dt, {4}, {0, 1, 3, 70});
    std::vector<int64_t> shape;
    double bits = 8.0 * static_cast<double>(ir::dtype_size(dt));
    double mod = std::pow(2.0, bits);
    auto left = ref_nary({&a, &s}, shape, [&](const std::vector<double>& v) {
      return v[1] >= bits ? 0 : std::fmod(v[0] * std::pow(2.0, v[1]), mod);
    });
    auto right = ref_nary({&a, &s}, shape, [&](const std::vector<double>& v) {
      return v[1] >= bits ? 0 : std::floor(v[0] / std::pow(2.0, v[1]));
    });
    EXPECT_TENSOR_NEAR(run1("BitShift", {a, s}, {Attribute::make_string("direction", "LEFT")}),
                       tensor_of(dt, shape, left), 0, 0);
    EXPECT_TENSOR_NEAR(run1("BitShift", {a, s}, {Attribute::make_string("direction", "RIGHT")}),
                       tensor_of(dt, shape, right), 0, 0);
  }
  Tensor a = random_tensor(DType::Int32, {5, 6}, 1, -1000, 1000);
  Tensor b = random_tensor(DType::Int32, {6}, 2, -1000, 1000);
  std::vector<int64_t> shape;
  auto bit = [&](auto f) {
    return tensor_of(
        DType::Int32, {5, 6}, ref_nary({&a, &b}, shape, [&](const std::vector<double>& v) {
          return static_cast<double>(f(static_cast<int32_t>(v[0]), static_cast<int32_t>(v[1])));
        }));
  };
  EXPECT_TENSOR_NEAR(run1("BitwiseAnd", {a, b}), bit([](int32_t x, int32_t y) { return x & y; }), 0,
                     0);
  EXPECT_TENSOR_NEAR(run1("BitwiseOr", {a, b}), bit([](int32_t x, int32_t y) { return x | y; }), 0,
                     0);
  EXPECT_TENSOR_NEAR(run1("BitwiseXor", {a, b}), bit([](int32_t x, int32_t y) { return x ^ y; }), 0,
                     0);
  for (const auto& [sa, sb] : kBroadcastPairs) {
    check_binary(
        "And", DType::Bool, sa, sb, [](double x, double y) { return x && y; }, 0, 1, DType::Bool);
    check_binary(
        "Or", DType::Bool, sa, sb, [](double x, double y) { return x || y; }, 0, 1, DType::Bool);
    check_binary(
        "Xor", DType::Bool, sa, sb, [](double x, double y) { return x != y; }, 0, 1, DType::Bool);
  }
}

TEST(ElementwiseBinary, Comparisons) {
  struct Case {
    const char* op;
    std::function<double(double, double)> ref;
  };
  std::vector<Case> cases = {{"Equal", [](double a, double b) { return a == b; }},
                             {"Greater", [](double a, double b) { return a > b; }},
                             {"GreaterOrEqual", [](double a, double b) { return a >= b; }},
                             {"Less", [](double a, double b) { return a < b; }},
                             {"LessOrEqual", [](double a, double b) { return a <= b; }}};
  for (const auto& c : cases)
    for (DType dt : {DType::Float32, DType::Float16, DType::Int32, DType::UInt8, DType::Int64})
      for (const auto& [sa, sb] : kBroadcastPairs)
        check_binary(c.op, dt, sa, sb, c.ref, 0, 4, DType::Bool);
  check_binary(
      "Equal", DType::Bool, {3, 4}, {4}, [](double a, double b) { return a == b; }, 0, 1,
      DType::Bool);
  Tensor s(DType::String, {3});
  s.data<std::string>()[0] = "a";
  s.data<std::string>()[1] = "bc";
  s.data<std::string>()[2] = "";
  Tensor t(DType::String, {1});
  t.data<std::string>()[0] = "bc";
  EXPECT_TENSOR_NEAR(run1("Equal", {s, t}), tensor_of(DType::Bool, {3}, {0, 1, 0}), 0, 0);
}

TEST(ElementwiseBinary, MaxMinPropagateNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = tensor_of(DType::Float32, {3}, {nan, 1, 2});
  Tensor b = tensor_of(DType::Float32, {3}, {1, nan, 3});
  EXPECT_TENSOR_NEAR(run1("Max", {a, b}), tensor_of(DType::Float32, {3}, {nan, nan, 3}), 0, 0);
  EXPECT_TENSOR_NEAR(run1("Min", {a, b}), tensor_of(DType::Float32, {3}, {nan, nan, 2}), 0, 0);
}

TEST(ElementwiseBinary, LargeTensorsUseThreadsAndGeneralPath) {
  check_binary(
      "Add", DType::Float32, {64, 3, 1, 257}, {3, 129, 1}, [](double a, double b) { return a + b; },
      -1, 1, DType::Float32);
  check_binary(
      "Mul", DType::Float32, {300000}, {300000}, [](double a, double b) { return a * b; }, -1, 1,
      DType::Float32);
  check_binary(
      "Sub", DType::Float32, {1000, 300}, {300}, [](double a, double b) { return a - b; }, -1, 1,
      DType::Float32);
  check_binary(
      "Div", DType::Float32, {1000, 300}, {1000, 1}, [](double a, double b) { return a / b; }, 1, 2,
      DType::Float32);
}

TEST(ElementwiseBinary, IncompatibleShapesAndDtypesFail) {
  Tensor a = random_tensor(DType::Float32, {3, 4}, 1);
  Tensor b = random_tensor(DType::Float32, {3}, 1);
  Tensor c = random_tensor(DType::Int32, {3, 4}, 1);
  EXPECT_THROW(run1("Add", {a, b}), Error);
  EXPECT_THROW(run1("Add", {a, c}), Error);
  EXPECT_THROW(run1("BitShift", {c, c}, {Attribute::make_string("direction", "UP")}), Error);
}

TEST(ElementwiseVariadic, SumMeanMaxMin) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Float64}) {
    Tensor a = random_tensor(dt, {3, 1, 5}, 1, -3, 3);
    Tensor b = random_tensor(dt, {4, 1}, 2, -3, 3);
    Tensor c = random_tensor(dt, {5}, 3, -3, 3);
    std::vector<int64_t> shape;
    auto ref = [&](const std::function<double(const std::vector<double>&)>& f) {
      return tensor_of(dt, {3, 4, 5}, ref_nary({&a, &b, &c}, shape, f));
    };
    Tol t = tol_for(dt);
    t.atol *= 4;
    t.rtol *= 4;
    EXPECT_TENSOR_NEAR(run1("Sum", {a, b, c}),
                       ref([](const auto& v) { return v[0] + v[1] + v[2]; }), t.rtol, t.atol);
    EXPECT_TENSOR_NEAR(run1("Mean", {a, b, c}),
                       ref([](const auto& v) { return (v[0] + v[1] + v[2]) / 3; }), t.rtol, t.atol);
    EXPECT_TENSOR_NEAR(run1("Max", {a, b, c}), ref([](const auto& v) {
                         return std::max({v[0], v[1], v[2]});
                       }),
                       0, 0);
    EXPECT_TENSOR_NEAR(run1("Min", {a, b, c}), ref([](const auto& v) {
                         return std::min({v[0], v[1], v[2]});
                       }),
                       0, 0);
    EXPECT_TENSOR_NEAR(run1("Sum", {a}), a, 0, 0);
    EXPECT_TENSOR_NEAR(run1("Mean", {a}), a, 0, 0);
  }
  Tensor i = random_tensor(DType::Int16, {2, 3}, 4, -100, 100);
  Tensor j = random_tensor(DType::Int16, {3}, 5, -100, 100);
  std::vector<int64_t> shape;
  EXPECT_TENSOR_NEAR(
      run1("Max", {i, j}),
      tensor_of(DType::Int16, {2, 3},
                ref_nary({&i, &j}, shape, [](const auto& v) { return std::max(v[0], v[1]); })),
      0, 0);
}

TEST(ElementwiseWhere, BroadcastsAllThreeInputs) {
  std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{3, 4}, {3, 4}, {3, 4}},       {{4}, {3, 4}, {}},  {{3, 1}, {1, 4}, {4}},
      {{2, 1, 4}, {3, 1}, {2, 3, 4}}, {{0}, {3, 1}, {1}}, {{}, {}, {}}};
  for (DType dt : {DType::Float32, DType::Float16, DType::Int64, DType::UInt8, DType::Bool}) {
    for (const auto& s : shapes) {
      Tensor c = random_tensor(DType::Bool, s[0], 1);
      Tensor x = random_tensor(dt, s[1], 2, -9, 9);
      Tensor y = random_tensor(dt, s[2], 3, -9, 9);
      std::vector<int64_t> shape;
      auto e = ref_nary({&c, &x, &y}, shape, [](const auto& v) { return v[0] != 0 ? v[1] : v[2]; });
      EXPECT_TENSOR_NEAR(run1("Where", {c, x, y}), tensor_of(dt, shape, e), 0, 0);
    }
  }
  Tensor c = tensor_of(DType::Bool, {2, 1}, {1, 0});
  Tensor x(DType::String, {2});
  x.data<std::string>()[0] = "x0";
  x.data<std::string>()[1] = "x1";
  Tensor y(DType::String, {1});
  y.data<std::string>()[0] = "y";
  Tensor out = run1("Where", {c, x, y});
  ASSERT_EQ(out.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out.data<std::string>()[0], "x0");
  EXPECT_EQ(out.data<std::string>()[1], "x1");
  EXPECT_EQ(out.data<std::string>()[2], "y");
  EXPECT_EQ(out.data<std::string>()[3], "y");
}

TEST(ElementwisePRelu, SlopeBroadcastsToInput) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Int32}) {
    for (std::vector<int64_t> ss : {std::vector<int64_t>{5}, {4, 1}, {3, 4, 5}, {}, {1}}) {
      Tensor x = random_tensor(dt, {3, 4, 5}, 1, -9, 9);
      Tensor s = random_tensor(dt, ss, 2, -2, 2);
      std::vector<int64_t> shape;
      auto e =
          ref_nary({&x, &s}, shape, [](const auto& v) { return v[0] < 0 ? v[0] * v[1] : v[0]; });
      Tol t = tol_for(dt);
      EXPECT_TENSOR_NEAR(run1("PRelu", {x, s}), tensor_of(dt, shape, e), t.rtol, t.atol);
    }
  }
  Tensor x = random_tensor(DType::Float32, {4}, 1);
  Tensor s = random_tensor(DType::Float32, {3, 4}, 1);
  EXPECT_THROW(run1("PRelu", {x, s}), Error);
}

TEST(ElementwiseErrors, BadAttributesNameTheNode) {
  Tensor x = random_tensor(DType::Float32, {3}, 1);
  auto expect_named = [](const std::string& op, std::vector<std::optional<Tensor>> inputs,
                         std::vector<Attribute> attrs = {}) {
    try {
      run1(op, std::move(inputs), std::move(attrs));
      ADD_FAILURE() << "expected an error for " << op;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[" + op + "] node 'node'"), std::string::npos)
          << e.what();
    }
  };
  expect_named("Gelu", {x}, {Attribute::make_string("approximate", "erf")});
  expect_named("Celu", {x}, {Attribute::make_float("alpha", 0)});
  expect_named("Elu", {x}, {Attribute::make_string("alpha", "big")});
  expect_named("Mod", {x, x}, {Attribute::make_int("fmod", 2)});
  expect_named("Sqrt", {tensor_of(DType::Int32, {1}, {4})});
}

// Large float32 tensors of the transcendental ops run through oneDNN's eltwise primitive
// (elementwise_unary.cc: EltwiseUnaryKernel): against a double reference over the whole range
// that matters (saturation, overflow to inf, underflow to 0) with NaN and infinities mixed in.
// (Exp is not among them: oneDNN's exp gives inf for NaN.)
TEST(EltwiseUnaryKernel, LargeFloat32MatchesTheDoubleReference) {
  struct Case {
    const char* op;
    std::vector<Attribute> attrs;
    std::function<double(double)> ref;
  };
  auto sigmoid = [](double x) { return 1 / (1 + std::exp(-x)); };
  auto softplus = [](double x) { return x > 30 ? x : std::log1p(std::exp(x)); };
  const std::vector<Case> cases = {
      {"Sigmoid", {}, sigmoid},
      {"Tanh", {}, [](double x) { return std::tanh(x); }},
      {"HardSwish", {}, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6 + 0.5)); }},
      {"Mish", {}, [&](double x) { return x * std::tanh(softplus(x)); }},
      {"Gelu", {}, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"Gelu",
       {Attribute::make_string("approximate", "tanh")},
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       }},
      {"Elu",
       {Attribute::make_float("alpha", 0.7f)},
       [](double x) { return x >= 0 ? x : 0.7 * (std::exp(x) - 1); }},
  };
  const int64_t n = 10007;  // above the primitive's threshold, not a multiple of a vector
  ir::Tensor x = random_tensor(DType::Float32, {n}, 77, -12, 12);
  float* xp = x.data<float>();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            100.0f,
                            -100.0f,
                            88.5f,
                            -87.5f,
                            0.0f,
                            -0.0f,
                            1e-30f};
  for (size_t i = 0; i < std::size(specials); ++i) xp[i * 997] = specials[i];
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    ir::Tensor y = run_op1(make_case(c.op, {x}, c.attrs));
    std::vector<double> expected(static_cast<size_t>(n));
    // The formulas in double, as numpy computes them: -inf * 0 is NaN for GELU, Mish, HardSwish.
    for (int64_t i = 0; i < n; ++i) expected[static_cast<size_t>(i)] = c.ref(xp[i]);
    EXPECT_EQ(compare_tensors(y, tensor_of(DType::Float32, {n}, expected), 2e-6, 1e-6), "");
  }
}

}  // namespace
}  // namespace switchyard::testing
