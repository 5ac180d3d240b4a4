// The elementwise family (cpu elementwise*.cc, cuda elementwise.cc): every unary op and
// activation on every float dtype in its domain (scalars, empty tensors, an odd large size,
// NaN, infinities and signed zeros), integer and bool unary ops (wrapping at the most negative
// value), Clip with constant and input bounds, every binary op on every dtype it takes over
// same-shape, broadcast, scalar, empty and rank-8 operands, integer wrap and truncation, NaN
// propagation, BitShift, PRelu, Pow over every dtype pairing, the variadic ops, Where, and
// Cast/CastLike between every pair of dtypes.
#include <cmath>
#include <limits>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kFloats = {DType::Float32, DType::Float16, DType::BFloat16,
                                    DType::Float64};
const std::vector<DType> kNumeric = {DType::Float32, DType::Float16, DType::BFloat16,
                                     DType::Float64, DType::Int32,   DType::Int64};
const std::vector<DType> kIntegers = {DType::Int8,  DType::Int16,  DType::Int32,  DType::Int64,
                                      DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
const std::vector<DType> kUnsigned = {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
const std::vector<DType> kAllPod = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64,
                                    DType::Int8,    DType::Int16,   DType::Int32,    DType::Int64,
                                    DType::UInt8,   DType::UInt16,  DType::UInt32,   DType::UInt64,
                                    DType::Bool};
const std::vector<DType> kCastTypes = {
    DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
    DType::UInt8,   DType::Int16,   DType::Int32,    DType::Int64,   DType::Bool};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Against a double reference: the float32 kernels' libm-grade error, one rounding of the
// 16-bit types (computed in float32, then rounded).
Tolerance tolerance_for(DType d) {
  switch (d) {
    case DType::Float16:
      return {2e-3, 2e-3};
    case DType::BFloat16:
      return {1.6e-2, 1e-2};
    case DType::Float32:
      return {1e-5, 1e-6};
    case DType::Float64:
      return {1e-12, 1e-12};
    default:
      return {0, 0};
  }
}

Tolerance scaled(Tolerance t, double k) { return {t.rtol * k, t.atol * k}; }

std::string shapes_tag(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& sh : shapes) s += (s.empty() ? "" : ",") + shape_tag(sh);
  return s;
}

/// Seeded values in [lo, hi) rounded to multiples of `step` (exact in float16 and bfloat16 for
/// step 1/16 and |x| < 16), so discontinuous ops (Floor, Round, comparisons) meet ties.
Tensor stepped(DType d, const Shape& shape, uint64_t seed, double lo, double hi,
               double step = 1.0 / 16) {
  std::vector<double> v = to_doubles(random_tensor(DType::Float64, shape, seed, lo, hi));
  for (double& x : v) x = std::round(x / step) * step;
  return tensor_of(d, shape, v);
}

/// Seeded numbers of dtype d: floats in [lo, hi), integers in a range their type holds.
Tensor numbers(DType d, const Shape& shape, uint64_t seed, double lo = -5, double hi = 5) {
  if (ir::dtype_is_float(d)) return random_tensor(d, shape, seed, lo, hi);
  if (d == DType::Bool) return random_tensor(d, shape, seed);
  if (!ir::dtype_is_signed(d)) return random_tensor(d, shape, seed, 0, 200);
  return random_tensor(d, shape, seed, -50, 50);
}

/// Seeded nonzero divisors: magnitudes in [0.5, 4.5) (integers [1, 5]; with `step`, multiples
/// of it) with random signs (unsigned: positive).
Tensor divisors(DType d, const Shape& shape, uint64_t seed, double step = 0) {
  std::vector<double> mag = to_doubles(random_tensor(DType::Float64, shape, seed, 0.5, 4.5));
  Tensor sign = random_tensor(DType::Bool, shape, seed + 7777);
  for (size_t i = 0; i < mag.size(); ++i) {
    double m = mag[i];
    if (!ir::dtype_is_float(d)) m = std::ceil(m);
    if (step > 0) m = std::round(m / step) * step;
    mag[i] = sign.data<bool>()[i] && ir::dtype_is_signed(d) ? -m : m;
  }
  return tensor_of(d, shape, mag);
}

/// A 1-D integer tensor of exact values.
Tensor ints_of(DType d, const std::vector<int64_t>& values) {
  Tensor t(d, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) set_int(t, static_cast<int64_t>(i), values[i]);
  return t;
}

Attribute float_attr(const std::string& name, float v) { return Attribute::make_float(name, v); }
Attribute int_attr(const std::string& name, int64_t v) { return Attribute::make_int(name, v); }

/// A reference applying f to each element of input 0 (other inputs are parameters).
Reference unary_ref(DType out, std::function<double(double)> f) {
  return [out, f](const Inputs& in) {
    return std::vector<Tensor>{
        map_broadcast({&*in[0]}, out, [&](const std::vector<double>& v) { return f(v[0]); })};
  };
}

/// A reference applying f to the broadcast elements of every input.
Reference nary_ref(DType out, std::function<double(const std::vector<double>&)> f) {
  return [out, f](const Inputs& in) {
    std::vector<const Tensor*> ts;
    for (const auto& t : in)
      if (t) ts.push_back(&*t);
    return std::vector<Tensor>{map_broadcast(ts, out, f)};
  };
}

/// The same, exactly, for integer operands and results.
Reference int_ref(DType out, std::function<int64_t(const std::vector<int64_t>&)> f) {
  return [out, f](const Inputs& in) {
    std::vector<const Tensor*> ts;
    for (const auto& t : in)
      if (t) ts.push_back(&*t);
    return std::vector<Tensor>{map_broadcast_int(ts, out, f)};
  };
}

// ---- unary ---------------------------------------------------------------------------------

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double clamp01(double x) { return std::isnan(x) ? x : std::min(1.0, std::max(0.0, x)); }

struct UnaryOp {
  std::string tag;  ///< the op and its attributes in the case name
  std::string op;
  double lo, hi;
  std::function<double(double)> ref;
  std::vector<Attribute> attrs = {};
  bool discontinuous = false;  ///< feed stepped values (ties, exact thresholds)
};

std::vector<UnaryOp> float_unary_ops() {
  const double selu_a = 1.67326319217681884765625, selu_g = 1.05070102214813232421875;
  auto nan_or = [](double x, double v) { return std::isnan(x) ? x : v; };
  return {
      {"Abs", "Abs", -5, 5, [](double x) { return std::fabs(x); }},
      {"Neg", "Neg", -5, 5, [](double x) { return -x; }},
      {"Relu", "Relu", -5, 5, [=](double x) { return nan_or(x, x > 0 ? x : 0.0); }},
      {"LeakyRelu(0.1)",
       "LeakyRelu",
       -5,
       5,
       [](double x) { return x < 0 ? 0.1f * x : x; },
       {float_attr("alpha", 0.1f)}},
      {"LeakyRelu", "LeakyRelu", -5, 5, [](double x) { return x < 0 ? 0.01f * x : x; }},
      {"Elu(0.7)",
       "Elu",
       -5,
       5,
       [](double x) { return x < 0 ? 0.7f * std::expm1(x) : x; },
       {float_attr("alpha", 0.7f)}},
      {"Selu", "Selu", -5, 5,
       [=](double x) { return x > 0 ? selu_g * x : selu_g * selu_a * std::expm1(x); }},
      {"Selu(1.5,0.9)",
       "Selu",
       -5,
       5,
       [](double x) {
         const double alpha = 1.5f, gamma = 0.9f;
         return x > 0 ? gamma * x : gamma * alpha * std::expm1(x);
       },
       {float_attr("alpha", 1.5f), float_attr("gamma", 0.9f)}},
      {"Celu(1.3)",
       "Celu",
       -5,
       5,
       [](double x) { return x > 0 ? x : 1.3f * std::expm1(x / 1.3f); },
       {float_attr("alpha", 1.3f)}},
      {"Sigmoid", "Sigmoid", -10, 10, sigmoid},
      {"HardSigmoid", "HardSigmoid", -5, 5, [](double x) { return clamp01(0.2f * x + 0.5f); }},
      {"HardSigmoid(0.3,0.4)",
       "HardSigmoid",
       -5,
       5,
       [](double x) { return clamp01(0.3f * x + 0.4f); },
       {float_attr("alpha", 0.3f), float_attr("beta", 0.4f)}},
      {"HardSwish", "HardSwish", -5, 5, [](double x) { return x * clamp01(x / 6 + 0.5); }},
      {"Tanh", "Tanh", -5, 5, [](double x) { return std::tanh(x); }},
      {"Exp", "Exp", -8, 8, [](double x) { return std::exp(x); }},
      {"Log", "Log", 0.0625, 10, [](double x) { return std::log(x); }},
      {"Sqrt", "Sqrt", 0, 10, [](double x) { return std::sqrt(x); }},
      {"Reciprocal", "Reciprocal", 0.125, 5, [](double x) { return 1 / x; }},
      {"Floor", "Floor", -5, 5, [](double x) { return std::floor(x); }, {}, true},
      {"Ceil", "Ceil", -5, 5, [](double x) { return std::ceil(x); }, {}, true},
      {"Round", "Round", -5, 5, [](double x) { return std::nearbyint(x); }, {}, true},
      {"Sin", "Sin", -5, 5, [](double x) { return std::sin(x); }},
      {"Cos", "Cos", -5, 5, [](double x) { return std::cos(x); }},
      {"Tan", "Tan", -1.375, 1.375, [](double x) { return std::tan(x); }},
      {"Asin", "Asin", -0.9375, 0.9375, [](double x) { return std::asin(x); }},
      {"Acos", "Acos", -0.9375, 0.9375, [](double x) { return std::acos(x); }},
      {"Atan", "Atan", -5, 5, [](double x) { return std::atan(x); }},
      {"Sinh", "Sinh", -5, 5, [](double x) { return std::sinh(x); }},
      {"Cosh", "Cosh", -5, 5, [](double x) { return std::cosh(x); }},
      {"Asinh", "Asinh", -5, 5, [](double x) { return std::asinh(x); }},
      {"Acosh", "Acosh", 1, 10, [](double x) { return std::acosh(x); }},
      {"Atanh", "Atanh", -0.9375, 0.9375, [](double x) { return std::atanh(x); }},
      {"Erf", "Erf", -3, 3, [](double x) { return std::erf(x); }},
      {"Softplus", "Softplus", -10, 10, softplus},
      {"Softsign", "Softsign", -5, 5, [](double x) { return x / (1 + std::fabs(x)); }},
      {"Sign",
       "Sign",
       -3,
       3,
       [=](double x) { return nan_or(x, double((x > 0) - (x < 0))); },
       {},
       true},
      {"Gelu", "Gelu", -5, 5,
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {"Gelu(tanh)",
       "Gelu",
       -5,
       5,
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       },
       {Attribute::make_string("approximate", "tanh")}},
      {"Mish", "Mish", -5, 5, [](double x) { return x * std::tanh(softplus(x)); }},
      {"ThresholdedRelu(0.5)",
       "ThresholdedRelu",
       -3,
       3,
       [=](double x) { return nan_or(x, x > 0.5 ? x : 0.0); },
       {float_attr("alpha", 0.5f)},
       true},
      {"Shrink(0.25,0.75)",
       "Shrink",
       -3,
       3,
       [](double x) { return x < -0.75  ? x + 0.25
                             : x > 0.75 ? x - 0.25
                                        : 0.0; },
       {float_attr("bias", 0.25f), float_attr("lambd", 0.75f)},
       true},
      {"IsNaN", "IsNaN", -5, 5, [](double x) { return double(std::isnan(x)); }},
      {"IsInf", "IsInf", -5, 5, [](double x) { return double(std::isinf(x)); }},
  };
}

DType output_of(const UnaryOp& u, DType d) {
  return u.op == "IsNaN" || u.op == "IsInf" ? DType::Bool : d;
}

Tensor unary_input(const UnaryOp& u, DType d, const Shape& shape, uint64_t seed) {
  return u.discontinuous ? stepped(d, shape, seed, u.lo, u.hi, 0.25)
                         : random_tensor(d, shape, seed, u.lo, u.hi);
}

void add_unary(std::vector<Case>& cases) {
  const std::vector<Shape> shapes = {{}, {7}, {3, 5, 17}, {0}, {2, 0, 3}};
  const std::vector<double> special = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0,  -1.0, 0.5,
                                       -0.5, 2.5,  -2.5,  100, -100, 1e-3, 3.0,  -3.0};
  uint64_t seed = 100;
  for (const UnaryOp& u : float_unary_ops()) {
    for (DType d : kFloats) {
      for (const Shape& shape : shapes)
        cases.push_back({.name = u.tag + "/" + dtype_tag(d) + "/" + shape_tag(shape),
                         .op = u.op,
                         .inputs = {unary_input(u, d, shape, seed++)},
                         .attributes = u.attrs,
                         .reference = unary_ref(output_of(u, d), u.ref),
                         .tolerance = tolerance_for(d)});
      cases.push_back({.name = u.tag + "/" + dtype_tag(d) + "/specials",
                       .op = u.op,
                       .inputs = {tensor_of(d, {16}, special)},
                       .attributes = u.attrs,
                       .reference = unary_ref(output_of(u, d), u.ref),
                       .tolerance = tolerance_for(d)});
    }
    // An odd large size: vector tails, threads, grid-stride loops.
    cases.push_back({.name = u.tag + "/float32/1000003",
                     .op = u.op,
                     .inputs = {unary_input(u, DType::Float32, {1000003}, seed++)},
                     .attributes = u.attrs,
                     .reference = unary_ref(output_of(u, DType::Float32), u.ref),
                     .tolerance = tolerance_for(DType::Float32)});
  }
  for (DType d : kFloats)
    for (auto [neg, pos] : std::vector<std::pair<int, int>>{{0, 1}, {1, 0}, {0, 0}})
      cases.push_back(
          {.name = fmt::format("IsInf(neg={},pos={})/{}/specials", neg, pos, dtype_tag(d)),
           .op = "IsInf",
           .inputs = {tensor_of(d, {16}, special)},
           .attributes = {int_attr("detect_negative", neg), int_attr("detect_positive", pos)},
           .reference = unary_ref(DType::Bool, [neg, pos](double x) {
             return double((x == kInf && pos) || (x == -kInf && neg));
           })});

  // Integer and bool unary ops, exactly; the most negative value wraps.
  const std::vector<std::pair<std::string, std::function<int64_t(int64_t)>>> int_ops = {
      {"Abs",
       [](int64_t x) { return x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x; }},
      {"Neg", [](int64_t x) { return static_cast<int64_t>(0 - static_cast<uint64_t>(x)); }},
      {"Sign", [](int64_t x) { return int64_t{(x > 0) - (x < 0)}; }},
      {"Relu", [](int64_t x) { return x > 0 ? x : 0; }},
  };
  for (const auto& [op, f] : int_ops) {
    for (DType d : {DType::Int32, DType::Int64}) {
      Reference ref = int_ref(d, [f](const std::vector<int64_t>& v) { return f(v[0]); });
      for (const Shape& shape : shapes)
        cases.push_back({.name = op + "/" + dtype_tag(d) + "/" + shape_tag(shape),
                         .op = op,
                         .inputs = {numbers(d, shape, seed++)},
                         .reference = ref});
      const int64_t lowest = d == DType::Int32 ? std::numeric_limits<int32_t>::min()
                                               : std::numeric_limits<int64_t>::min();
      cases.push_back({.name = op + "/" + dtype_tag(d) + "/lowest",
                       .op = op,
                       .inputs = {ints_of(d, {lowest, 0, 7})},
                       .reference = ref});
    }
  }
  for (const Shape& shape : shapes)
    cases.push_back({.name = "Not/bool/" + shape_tag(shape),
                     .op = "Not",
                     .inputs = {random_tensor(DType::Bool, shape, seed++)},
                     .reference = int_ref(DType::Bool, [](const auto& v) { return v[0] == 0; })});
  for (DType d : kIntegers)
    for (const Shape& shape : {Shape{3, 7}, Shape{0}})
      cases.push_back({.name = "BitwiseNot/" + dtype_tag(d) + "/" + shape_tag(shape),
                       .op = "BitwiseNot",
                       .inputs = {numbers(d, shape, seed++)},
                       .reference = int_ref(d, [](const auto& v) { return ~v[0]; })});
}

// ---- Clip ----------------------------------------------------------------------------------

void add_clip(std::vector<Case>& cases) {
  uint64_t seed = 500;
  for (DType d : kNumeric) {
    for (bool constant : {true, false}) {
      Tensor lo = tensor_of(d, {}, {-2});
      Tensor hi = tensor_of(d, {}, {3});
      const std::string bounds = constant ? "constant" : "input";
      for (const Shape& shape : {Shape{3, 11}, Shape{0}, Shape{1000003}}) {
        Tensor x = numbers(d, shape, seed++);
        const std::string base = dtype_tag(d) + "/" + shape_tag(shape) + "/" + bounds;
        auto clip = [d](double l, double h) {
          return unary_ref(d, [l, h](double v) { return std::min(std::max(v, l), h); });
        };
        std::vector<bool> c = {false, constant, constant};
        cases.push_back({.name = "Clip(lo,hi)/" + base,
                         .op = "Clip",
                         .inputs = {x, lo, hi},
                         .constant_inputs = c,
                         .reference = clip(-2, 3),
                         .tolerance = tolerance_for(d)});
        if (shape[0] == 1000003) continue;  // the large size once per dtype and bounds kind
        cases.push_back({.name = "Clip(lo)/" + base,
                         .op = "Clip",
                         .inputs = {x, lo, std::nullopt},
                         .constant_inputs = c,
                         .reference = clip(-2, kInf),
                         .tolerance = tolerance_for(d)});
        cases.push_back({.name = "Clip(hi)/" + base,
                         .op = "Clip",
                         .inputs = {x, std::nullopt, hi},
                         .constant_inputs = c,
                         .reference = clip(-kInf, 3),
                         .tolerance = tolerance_for(d)});
        if (constant)
          cases.push_back({.name = "Clip()/" + dtype_tag(d) + "/" + shape_tag(shape),
                           .op = "Clip",
                           .inputs = {x},
                           .reference = clip(-kInf, kInf),
                           .tolerance = tolerance_for(d)});
      }
    }
  }
  cases.push_back(
      {.name = "Clip(lo,hi)/float32/specials",
       .op = "Clip",
       .inputs = {tensor_of(DType::Float32, {4}, {kNaN, -kInf, kInf, 0.5}),
                  tensor_of(DType::Float32, {}, {-1}), tensor_of(DType::Float32, {}, {1})},
       .constant_inputs = {false, true, true},
       .reference = unary_ref(DType::Float32, [](double v) {
         return std::isnan(v) ? v : std::min(std::max(v, -1.0), 1.0);
       })});
}

// ---- binary --------------------------------------------------------------------------------

/// Operand shape pairs: same shape, trailing broadcast, two-sided broadcast, scalars, empty,
/// and a rank-8 broadcast that no merging shortens.
const std::vector<std::vector<Shape>> kBinaryShapes = {
    {{2, 3, 4}, {2, 3, 4}},
    {{2, 3, 4}, {4}},
    {{2, 1, 4}, {1, 3, 1}},
    {{}, {2, 3}},
    {{5}, {}},
    {{}, {}},
    {{0, 3}, {3}},
    {{3, 1, 5}, {3, 4, 1}},
    {{2, 1, 3, 1, 2, 1, 2, 3}, {1, 2, 1, 3, 1, 2, 1, 1}},
};

double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}

struct BinaryOp {
  std::string tag;
  std::string op;
  std::vector<DType> dtypes;
  std::function<double(double, double)> ref;
  std::vector<Attribute> attrs = {};
  bool divisor = false;    ///< input 1 must be nonzero
  bool stepped = false;    ///< coarse values so that equality happens
  bool predicate = false;  ///< a bool result
};

std::vector<BinaryOp> binary_ops() {
  auto bits = [](auto f) {
    return [f](double a, double b) {
      return static_cast<double>(f(static_cast<int64_t>(a), static_cast<int64_t>(b)));
    };
  };
  return {
      {"Add", "Add", kNumeric, [](double a, double b) { return a + b; }},
      {"Sub", "Sub", kNumeric, [](double a, double b) { return a - b; }},
      {"Mul", "Mul", kNumeric, [](double a, double b) { return a * b; }},
      {"Div", "Div", kNumeric, [](double a, double b) { return a / b; }, {}, true},
      {"Max", "Max", kNumeric, nan_max},
      {"Min", "Min", kNumeric, nan_min},
      {"Mod", "Mod", {DType::Int32, DType::Int64}, py_mod, {int_attr("fmod", 0)}, true},
      {"Mod(fmod)",
       "Mod",
       kNumeric,
       [](double a, double b) { return std::fmod(a, b); },
       {int_attr("fmod", 1)},
       true},
      {"Equal",
       "Equal",
       kAllPod,
       [](double a, double b) { return double(a == b); },
       {},
       false,
       true,
       true},
      {"Less",
       "Less",
       kNumeric,
       [](double a, double b) { return double(a < b); },
       {},
       false,
       true,
       true},
      {"Greater",
       "Greater",
       kNumeric,
       [](double a, double b) { return double(a > b); },
       {},
       false,
       true,
       true},
      {"LessOrEqual",
       "LessOrEqual",
       kNumeric,
       [](double a, double b) { return double(a <= b); },
       {},
       false,
       true,
       true},
      {"GreaterOrEqual",
       "GreaterOrEqual",
       kNumeric,
       [](double a, double b) { return double(a >= b); },
       {},
       false,
       true,
       true},
      {"And", "And", {DType::Bool}, [](double a, double b) { return double(a && b); }},
      {"Or", "Or", {DType::Bool}, [](double a, double b) { return double(a || b); }},
      {"Xor",
       "Xor",
       {DType::Bool},
       [](double a, double b) { return double((a != 0) != (b != 0)); }},
      {"BitwiseAnd", "BitwiseAnd", kIntegers, bits([](int64_t a, int64_t b) { return a & b; })},
      {"BitwiseOr", "BitwiseOr", kIntegers, bits([](int64_t a, int64_t b) { return a | b; })},
      {"BitwiseXor", "BitwiseXor", kIntegers, bits([](int64_t a, int64_t b) { return a ^ b; })},
  };
}

Tensor binary_operand(const BinaryOp& b, DType d, const Shape& shape, uint64_t seed, int k) {
  if (k == 1 && b.divisor) return divisors(d, shape, seed);
  if (b.stepped && ir::dtype_is_float(d)) return stepped(d, shape, seed, -2, 2, 0.5);
  if (b.stepped && d != DType::Bool) return random_tensor(d, shape, seed, 0, 4);
  return numbers(d, shape, seed);
}

Reference binary_ref(const BinaryOp& b, DType d) {
  DType out = b.predicate ? DType::Bool : d;
  auto f = b.ref;
  bool int_div = b.op == "Div" && !ir::dtype_is_float(d);
  return nary_ref(out, [=](const std::vector<double>& v) {
    double r = int_div ? std::trunc(v[0] / v[1]) : f(v[0], v[1]);
    return wrap_to(out, r);
  });
}

// Integer wrap and truncation at the ends of the range, exactly.
int64_t wrapping(DType d, uint64_t bits) {
  return d == DType::Int32 ? static_cast<int32_t>(static_cast<uint32_t>(bits))
                           : static_cast<int64_t>(bits);
}

void add_binary(std::vector<Case>& cases) {
  uint64_t seed = 600;
  for (const BinaryOp& b : binary_ops())
    for (DType d : b.dtypes)
      for (const auto& shapes : kBinaryShapes)
        for (bool swap : {false, true}) {
          const Shape& sa = swap ? shapes[1] : shapes[0];
          const Shape& sb = swap ? shapes[0] : shapes[1];
          cases.push_back(
              {.name = b.tag + "/" + dtype_tag(d) + "/" + shapes_tag({sa, sb}) +
                       (swap ? "/swapped" : ""),
               .op = b.op,
               .inputs = {binary_operand(b, d, sa, seed, 0), binary_operand(b, d, sb, seed + 1, 1)},
               .attributes = b.attrs,
               .reference = binary_ref(b, d),
               .tolerance = tolerance_for(d)});
          seed += 2;
        }
  for (std::string op : {"Add", "Mul", "Div", "Max", "Less"}) {
    BinaryOp b;
    for (const BinaryOp& o : binary_ops())
      if (o.tag == op) b = o;
    for (const auto& shapes : std::vector<std::vector<Shape>>{
             {{1000003}, {1000003}}, {{1000003}, {}}, {{7, 142861}, {7, 1}}}) {
      cases.push_back({.name = op + "/float32/" + shapes_tag(shapes),
                       .op = op,
                       .inputs = {numbers(DType::Float32, shapes[0], seed),
                                  divisors(DType::Float32, shapes[1], seed + 1)},
                       .reference = binary_ref(b, DType::Float32),
                       .tolerance = tolerance_for(DType::Float32)});
      seed += 2;
    }
  }
  // NaN, infinities and signed zeros through arithmetic, Max/Min and comparisons.
  for (DType d : kFloats) {
    Tensor x = tensor_of(d, {6}, {kNaN, 1, kNaN, -kInf, 0.0, 2});
    Tensor y = tensor_of(d, {6}, {1, kNaN, kNaN, kInf, -0.0, -kInf});
    for (std::string op : {"Max", "Min", "Add", "Mul", "Equal", "Less"})
      for (const BinaryOp& b : binary_ops())
        if (b.tag == op)
          cases.push_back({.name = op + "/" + dtype_tag(d) + "/specials",
                           .op = op,
                           .inputs = {x, y},
                           .reference = binary_ref(b, d),
                           .tolerance = tolerance_for(d)});
  }
  for (DType d : {DType::Int32, DType::Int64}) {
    const int64_t big = d == DType::Int64 ? std::numeric_limits<int64_t>::max() : 2147483647;
    const int64_t lowest = -big - 1;
    Tensor x = ints_of(d, {big, lowest, -7, 7, -7, lowest, big});
    Tensor y = ints_of(d, {1, -1, 2, -2, -2, -1, big});
    using Op = std::function<int64_t(int64_t, int64_t)>;
    auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    const std::vector<std::tuple<std::string, std::string, std::vector<Attribute>, Op>> ops = {
        {"Add", "Add", {}, [=](int64_t a, int64_t b) { return wrapping(d, u(a) + u(b)); }},
        {"Sub", "Sub", {}, [=](int64_t a, int64_t b) { return wrapping(d, u(a) - u(b)); }},
        {"Mul", "Mul", {}, [=](int64_t a, int64_t b) { return wrapping(d, u(a) * u(b)); }},
        {"Div",
         "Div",
         {},
         [=](int64_t a, int64_t b) { return b == -1 ? wrapping(d, 0 - u(a)) : a / b; }},
        {"Mod",
         "Mod",
         {int_attr("fmod", 0)},
         [](int64_t a, int64_t b) {
           if (b == -1) return int64_t{0};
           int64_t r = a % b;
           return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
         }},
        {"Mod(fmod)",
         "Mod",
         {int_attr("fmod", 1)},
         [](int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }},
    };
    for (const auto& [tag, op, attrs, f] : ops)
      cases.push_back({.name = tag + "/" + dtype_tag(d) + "/wrap",
                       .op = op,
                       .inputs = {x, y},
                       .attributes = attrs,
                       .reference = int_ref(d, [f](const auto& v) { return f(v[0], v[1]); })});
  }
  for (DType d : kUnsigned)
    for (std::string dir : {"LEFT", "RIGHT"})
      for (const auto& shapes : kBinaryShapes) {
        const int bits = static_cast<int>(8 * ir::dtype_size(d));
        cases.push_back({.name = "BitShift(" + dir + ")/" + dtype_tag(d) + "/" + shapes_tag(shapes),
                         .op = "BitShift",
                         .inputs = {random_tensor(d, shapes[0], seed, 0, 250),
                                    random_tensor(d, shapes[1], seed + 1, 0, 70)},
                         .attributes = {Attribute::make_string("direction", dir)},
                         .reference = int_ref(d, [=](const auto& v) -> int64_t {
                           uint64_t x = static_cast<uint64_t>(v[0]),
                                    s = static_cast<uint64_t>(v[1]);
                           if (s >= static_cast<uint64_t>(bits)) return 0;
                           return static_cast<int64_t>(dir == "LEFT" ? x << s : x >> s);
                         })});
        seed += 2;
      }
}

// ---- PRelu, Pow ----------------------------------------------------------------------------

void add_prelu_pow(std::vector<Case>& cases) {
  uint64_t seed = 1000;
  for (DType d : kNumeric)
    for (const auto& s : std::vector<std::vector<Shape>>{{{2, 3, 4}, {4}},
                                                         {{2, 3, 4}, {3, 1}},
                                                         {{2, 3, 4}, {}},
                                                         {{2, 3, 4}, {2, 3, 4}},
                                                         {{0, 3}, {3}}}) {
      cases.push_back(
          {.name = "PRelu/" + dtype_tag(d) + "/" + shapes_tag(s),
           .op = "PRelu",
           .inputs = {numbers(d, s[0], seed), numbers(d, s[1], seed + 1, 0, 1)},
           .reference = nary_ref(d, [](const auto& v) { return v[0] < 0 ? v[0] * v[1] : v[0]; }),
           .tolerance = tolerance_for(d)});
      seed += 2;
    }
  seed = 1100;
  for (DType base : kNumeric)
    for (DType exponent : kNumeric) {
      const bool float_base = ir::dtype_is_float(base);
      // An integer base truncates the real power, so a float exponent holds integral values
      // there (a fractional one could land a hair off an integer); an integer base is never zero
      // (zero to a negative power has no integer value).
      auto base_of = [&](const Shape& s) {
        if (float_base) return random_tensor(base, s, seed++, 0.5, 3);
        std::vector<double> v = to_doubles(random_tensor(base, s, seed++, -4, 5));
        for (double& x : v) x = x == 0 ? 3 : x;
        return tensor_of(base, s, v);
      };
      auto exponent_of = [&](const Shape& s) {
        if (!ir::dtype_is_float(exponent)) return random_tensor(exponent, s, seed++, -2, 6);
        if (!float_base) return stepped(exponent, s, seed++, -2, 6, 1.0);
        return random_tensor(exponent, s, seed++, -2, 2);
      };
      Reference ref = nary_ref(base, [=](const auto& v) {
        double p = std::pow(v[0], v[1]);
        return float_base ? p : wrap_to(base, std::trunc(p));
      });
      for (const auto& shapes : std::vector<std::vector<Shape>>{
               {{2, 3, 4}, {4}}, {{3}, {}}, {{2, 1}, {1, 5}}, {{0}, {}}})
        cases.push_back({.name = "Pow/" + dtype_tag(base) + "^" + dtype_tag(exponent) + "/" +
                                 shapes_tag(shapes),
                         .op = "Pow",
                         .inputs = {base_of(shapes[0]), exponent_of(shapes[1])},
                         .reference = ref,
                         .tolerance = tolerance_for(base)});
      cases.push_back({.name = "Pow/" + dtype_tag(base) + "^" + dtype_tag(exponent) + "/by2",
                       .op = "Pow",
                       .inputs = {base_of({4, 5}), tensor_of(exponent, {}, {2})},
                       .reference = ref,
                       .tolerance = tolerance_for(base)});
    }
}

// ---- variadic, Where -----------------------------------------------------------------------

void add_variadic_where(std::vector<Case>& cases) {
  uint64_t seed = 1200;
  const std::vector<std::vector<Shape>> input_sets = {
      {{2, 3, 4}},   {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}, {1}}, {{2, 3, 4}, {2, 3, 4}, {4}, {}},
      {{0, 3}, {3}},
  };
  const std::vector<std::pair<std::string, std::function<double(const std::vector<double>&)>>> ops =
      {{"Max", [](const auto& v) { return *std::max_element(v.begin(), v.end()); }},
       {"Min", [](const auto& v) { return *std::min_element(v.begin(), v.end()); }},
       {"Sum", [](const auto& v) { return std::accumulate(v.begin(), v.end(), 0.0); }},
       {"Mean", [](const auto& v) {
          return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
        }}};
  for (const auto& [op, f] : ops) {
    const bool float_only = op == "Sum" || op == "Mean";
    for (DType d : float_only ? kFloats : kNumeric)
      for (const auto& set : input_sets) {
        Inputs ins;
        for (const Shape& s : set) ins.emplace_back(numbers(d, s, seed++));
        // Sums of several 16-bit operands may round after each step.
        cases.push_back({.name = op + "/variadic/" + dtype_tag(d) + "/" + shapes_tag(set),
                         .op = op,
                         .inputs = ins,
                         .reference = nary_ref(d, f),
                         .tolerance = scaled(tolerance_for(d), 4)});
      }
  }
  seed = 1300;
  const std::vector<std::vector<Shape>> shape_sets = {
      {{7, 9}, {7, 9}, {7, 9}}, {{2, 1, 4}, {3, 1}, {2, 3, 4}}, {{}, {5}, {5}}, {{3}, {}, {}},
      {{0, 2}, {2}, {1}},       {{1000003}, {1000003}, {}}};
  for (DType d : kAllPod)
    for (const auto& s : shape_sets) {
      cases.push_back({.name = "Where/" + dtype_tag(d) + "/" + shapes_tag(s),
                       .op = "Where",
                       .inputs = {random_tensor(DType::Bool, s[0], seed),
                                  numbers(d, s[1], seed + 1), numbers(d, s[2], seed + 2)},
                       .reference = nary_ref(d, [](const auto& v) { return v[0] ? v[1] : v[2]; })});
      seed += 3;
    }
}

// ---- Cast, CastLike ------------------------------------------------------------------------

/// The range of values both dtypes hold (bool: 0 and 1), capped at +-1000.
std::pair<double, double> common_range(DType a, DType b) {
  auto range = [](DType d) -> std::pair<double, double> {
    switch (d) {
      case DType::Bool:
        return {0, 1};
      case DType::Int8:
        return {-128, 127};
      case DType::UInt8:
        return {0, 255};
      default:
        return {-1000, 1000};
    }
  };
  auto [alo, ahi] = range(a);
  auto [blo, bhi] = range(b);
  return {std::max(alo, blo), std::min(ahi, bhi)};
}

/// Values a cast from `d` meets beyond the common range: fractions, values out of narrower
/// types' range, and for float sources NaN, infinities, signed zero and values beyond float16.
Tensor cast_specials(DType d, uint64_t seed) {
  const Shape shape = {64};
  switch (d) {
    case DType::Bool:
      return random_tensor(d, shape, seed);
    case DType::Int8:
      return random_tensor(d, shape, seed, -128, 128);
    case DType::UInt8:
      return random_tensor(d, shape, seed, 0, 256);
    case DType::Int16:
      return random_tensor(d, shape, seed, -3000, 3000);
    case DType::Int32:
      return random_tensor(d, shape, seed, -300000, 300000);
    case DType::Int64: {
      Tensor t = random_tensor(d, shape, seed, -300000, 300000);
      t.data<int64_t>()[0] = (int64_t{1} << 40) + 1;
      t.data<int64_t>()[1] = -(int64_t{1} << 53) - 3;
      t.data<int64_t>()[2] = std::numeric_limits<int64_t>::min();
      return t;
    }
    default: {
      std::vector<double> v = to_doubles(random_tensor(DType::Float64, shape, seed, -300, 300));
      const std::vector<double> special = {kNaN, kInf,    -kInf, -0.0, 0.5,   -0.5,
                                           2.5,  70000.0, -1e10, 1e-8, 255.9, -128.7};
      for (size_t i = 0; i < special.size(); ++i) v[i] = special[i];
      return tensor_of(d, shape, v);
    }
  }
}

void add_cast(std::vector<Case>& cases) {
  uint64_t seed = 1400;
  for (DType from : kCastTypes)
    for (DType to : kCastTypes) {
      const std::string pair = dtype_tag(from) + "->" + dtype_tag(to);
      Attribute a = int_attr("to", static_cast<int64_t>(to));
      // Values both types hold (fractions from a float source): the conversion the C++
      // standard defines (truncation toward zero, rounding to nearest, nonzero is true).
      auto [lo, hi] = common_range(from, to);
      Tensor x = from == DType::Bool ? random_tensor(from, {64}, seed)
                                     : random_tensor(from, {64}, seed, lo, hi + 0.999);
      Reference ref = [to](const Inputs& in) {
        return std::vector<Tensor>{tensor_of(to, in[0]->shape(), to_doubles(*in[0]))};
      };
      Tolerance one_rounding = scaled(tolerance_for(to), 0.5);
      cases.push_back({.name = "Cast/" + pair,
                       .op = "Cast",
                       .inputs = {x},
                       .attributes = {a},
                       .reference = ref,
                       .tolerance = one_rounding});
      cases.push_back({.name = "CastLike/" + pair,
                       .op = "CastLike",
                       .inputs = {x, Tensor(to, {1})},
                       .reference = ref,
                       .tolerance = one_rounding});
      cases.push_back({.name = "Cast/" + pair + "/empty",
                       .op = "Cast",
                       .inputs = {Tensor(from, {0, 4})},
                       .attributes = {a},
                       .reference = ref});
      // Out of range, NaN and infinities: what C++ leaves undefined; every backend must give
      // the cpu's values.
      Tensor s = cast_specials(from, seed + 1);
      cases.push_back(
          {.name = "Cast/" + pair + "/specials", .op = "Cast", .inputs = {s}, .attributes = {a}});
      cases.push_back({.name = "CastLike/" + pair + "/specials",
                       .op = "CastLike",
                       .inputs = {s, Tensor(to, {1})}});
      seed += 2;
    }
  Tensor big = random_tensor(DType::Float32, {1000003}, seed, -1000, 1000);
  for (DType to : {DType::Float16, DType::Int32, DType::UInt8})
    cases.push_back({.name = "Cast/float32->" + dtype_tag(to) + "/1000003",
                     .op = "Cast",
                     .inputs = {big},
                     .attributes = {int_attr("to", static_cast<int64_t>(to))}});
}

std::vector<Case> elementwise_cases() {
  std::vector<Case> cases;
  add_unary(cases);
  add_clip(cases);
  add_binary(cases);
  add_prelu_pow(cases);
  add_variadic_where(cases);
  add_cast(cases);
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(elementwise, elementwise_cases)

}  // namespace switchyard::testing::harness
