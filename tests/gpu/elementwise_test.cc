// GPU tests of the elementwise family (src/backends/cuda/kernels/elementwise*): every registered
// op and dtype against the CPU backend on seeded random data in each op's domain, with
// broadcast shapes, scalars, empty tensors, an odd large size, rank-8 broadcasts, special
// values (NaN, infinities, signed zeros), fp16/bf16 precision runs, and the fused elementwise
// chains (GELU, Add->Relu, Mul->Add, SiLU), checked by value and by the number of CUDA kernel
// steps they run as.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "runtime/profiler.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
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
const std::vector<std::string> kPrecisions = {"fp16", "bf16"};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool is_half(DType d) { return d == DType::Float16 || d == DType::BFloat16; }
double rtol_of(DType d) { return d == DType::Float64 ? 1e-12 : is_half(d) ? 2e-2 : 1e-5; }
double atol_of(DType d) { return d == DType::Float64 ? 1e-12 : is_half(d) ? 1e-3 : 1e-5; }

std::string name_of(DType d) { return std::string(ir::dtype_name(d)); }

std::string shapes_of(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& sh : shapes) s += ir::shape_to_string(sh) + " ";
  return s;
}

/// Seeded values in [lo, hi) rounded to multiples of `step` (exact in float16 and bfloat16 for
/// step 1/16 and |x| < 16): no rounding of inputs differs between precisions, and discontinuous
/// ops (Floor, Round, comparisons) meet ties and equal values.
Tensor stepped(DType d, const Shape& shape, uint64_t seed, double lo, double hi,
               double step = 1.0 / 16) {
  Tensor r = random_tensor(DType::Float64, shape, seed, lo, hi);
  std::vector<double> v;
  for (int64_t i = 0; i < r.numel(); ++i)
    v.push_back(std::round(r.data<double>()[i] / step) * step);
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
  Tensor mag = random_tensor(DType::Float64, shape, seed, 0.5, 4.5);
  Tensor sign = random_tensor(DType::Bool, shape, seed + 7777);
  std::vector<double> v;
  for (int64_t i = 0; i < mag.numel(); ++i) {
    double m = mag.data<double>()[i];
    if (!ir::dtype_is_float(d)) m = std::ceil(m);
    if (step > 0) m = std::round(m / step) * step;
    v.push_back(sign.data<bool>()[i] && ir::dtype_is_signed(d) ? -m : m);
  }
  return tensor_of(d, shape, v);
}

/// A 1-D int32 or int64 tensor of exact values.
Tensor ints_of(DType d, const std::vector<int64_t>& values) {
  Tensor t(d, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    if (d == DType::Int32) {
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    } else {
      t.data<int64_t>()[i] = values[i];
    }
  }
  return t;
}

Attribute float_attr(const std::string& name, float v) { return Attribute::make_float(name, v); }
Attribute int_attr(const std::string& name, int64_t v) { return Attribute::make_int(name, v); }

// ---- unary ----

struct UnaryOp {
  std::string op;
  double lo, hi;
  std::vector<Attribute> attrs = {};
  bool discontinuous = false;  ///< feed stepped values (ties, exact thresholds)
};

std::vector<UnaryOp> float_unary_ops() {
  return {
      {"Abs", -5, 5},
      {"Neg", -5, 5},
      {"Relu", -5, 5},
      {"LeakyRelu", -5, 5, {float_attr("alpha", 0.1f)}},
      {"LeakyRelu", -5, 5},
      {"Elu", -5, 5, {float_attr("alpha", 0.7f)}},
      {"Selu", -5, 5},
      {"Selu", -5, 5, {float_attr("alpha", 1.5f), float_attr("gamma", 0.9f)}},
      {"Celu", -5, 5, {float_attr("alpha", 1.3f)}},
      {"Sigmoid", -10, 10},
      {"HardSigmoid", -5, 5},
      {"HardSigmoid", -5, 5, {float_attr("alpha", 0.3f), float_attr("beta", 0.4f)}},
      {"HardSwish", -5, 5},
      {"Tanh", -5, 5},
      {"Exp", -8, 8},
      {"Log", 0.0625, 10},
      {"Sqrt", 0, 10},
      {"Reciprocal", 0.125, 5},
      {"Floor", -5, 5, {}, true},
      {"Ceil", -5, 5, {}, true},
      {"Round", -5, 5, {}, true},
      {"Sin", -5, 5},
      {"Cos", -5, 5},
      {"Tan", -1.375, 1.375},
      {"Asin", -0.9375, 0.9375},
      {"Acos", -0.9375, 0.9375},
      {"Atan", -5, 5},
      {"Sinh", -5, 5},
      {"Cosh", -5, 5},
      {"Asinh", -5, 5},
      {"Acosh", 1, 10},
      {"Atanh", -0.9375, 0.9375},
      {"Erf", -3, 3},
      {"Softplus", -10, 10},
      {"Softsign", -5, 5},
      {"Sign", -3, 3, {}, true},
      {"Gelu", -5, 5},
      {"Gelu", -5, 5, {Attribute::make_string("approximate", "tanh")}},
      {"Mish", -5, 5},
      {"ThresholdedRelu", -3, 3, {float_attr("alpha", 0.5f)}, true},
      {"Shrink", -3, 3, {float_attr("bias", 0.25f), float_attr("lambd", 0.75f)}, true},
      {"IsNaN", -5, 5},
      {"IsInf", -5, 5},
  };
}

const std::vector<Shape> kUnaryShapes = {{}, {7}, {3, 5, 17}, {0}, {2, 0, 3}};

Tensor unary_input(const UnaryOp& u, DType d, const Shape& shape, uint64_t seed) {
  return u.discontinuous ? stepped(d, shape, seed, u.lo, u.hi, 0.25)
                         : random_tensor(d, shape, seed, u.lo, u.hi);
}

TEST(CudaElementwise, FloatUnaryOpsMatchCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (const UnaryOp& u : float_unary_ops()) {
    for (DType d : kFloats) {
      for (const Shape& shape : kUnaryShapes) {
        SCOPED_TRACE(u.op + " " + name_of(d) + " " + ir::shape_to_string(shape));
        expect_gpu_matches_cpu(make_case(u.op, {unary_input(u, d, shape, seed++)}, u.attrs),
                               rtol_of(d), atol_of(d));
      }
    }
  }
}

TEST(CudaElementwise, FloatUnaryOpsOnAnOddLargeSize) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 200;
  for (const UnaryOp& u : float_unary_ops()) {
    SCOPED_TRACE(u.op);
    expect_gpu_matches_cpu(
        make_case(u.op, {unary_input(u, DType::Float32, {1000003}, seed++)}, u.attrs), 1e-5, 1e-5);
  }
}

TEST(CudaElementwise, FloatUnaryOpsOnSpecialValues) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<double> special = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0,  -1.0, 0.5,
                                       -0.5, 2.5,  -2.5,  100, -100, 1e-3, 3.0,  -3.0};
  for (const UnaryOp& u : float_unary_ops()) {
    for (DType d : kFloats) {
      SCOPED_TRACE(u.op + " " + name_of(d));
      expect_gpu_matches_cpu(make_case(u.op, {tensor_of(d, {16}, special)}, u.attrs), rtol_of(d),
                             atol_of(d));
    }
  }
  for (DType d : kFloats) {
    for (auto [neg, pos] : std::vector<std::pair<int, int>>{{0, 1}, {1, 0}, {0, 0}}) {
      SCOPED_TRACE("IsInf " + name_of(d));
      expect_gpu_matches_cpu(
          make_case("IsInf", {tensor_of(d, {16}, special)},
                    {int_attr("detect_negative", neg), int_attr("detect_positive", pos)}));
    }
  }
}

TEST(CudaElementwise, FloatUnaryOpsAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 300;
  for (const UnaryOp& u : float_unary_ops()) {
    for (const std::string& p : kPrecisions) {
      SCOPED_TRACE(u.op + " at " + p);
      Tensor x = stepped(DType::Float32, {4, 33}, seed++, u.lo, u.hi);
      expect_gpu_matches_cpu(make_case(u.op, {x}, u.attrs), 2e-2, 2e-2, p);
    }
  }
}

TEST(CudaElementwise, IntegerAndBoolUnaryOpsMatchCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 400;
  for (std::string op : {"Abs", "Neg", "Sign", "Relu"}) {
    for (DType d : {DType::Int32, DType::Int64}) {
      for (const Shape& shape : kUnaryShapes) {
        SCOPED_TRACE(op + " " + name_of(d) + " " + ir::shape_to_string(shape));
        expect_gpu_matches_cpu(make_case(op, {numbers(d, shape, seed++)}));
      }
      // The most negative value wraps, as on the CPU.
      const int64_t lowest = d == DType::Int32 ? std::numeric_limits<int32_t>::min()
                                               : std::numeric_limits<int64_t>::min();
      expect_gpu_matches_cpu(make_case(op, {ints_of(d, {lowest, 0, 7})}));
    }
  }
  for (const Shape& shape : kUnaryShapes)
    expect_gpu_matches_cpu(make_case("Not", {random_tensor(DType::Bool, shape, seed++)}));
  for (DType d : kIntegers) {
    SCOPED_TRACE("BitwiseNot " + name_of(d));
    expect_gpu_matches_cpu(make_case("BitwiseNot", {numbers(d, {3, 7}, seed++)}));
    expect_gpu_matches_cpu(make_case("BitwiseNot", {numbers(d, {0}, seed++)}));
  }
}

TEST(CudaElementwise, ClipMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (DType d : kNumeric) {
    for (bool constant : {true, false}) {
      Tensor lo = tensor_of(d, {}, {-2});
      Tensor hi = tensor_of(d, {}, {3});
      for (const Shape& shape : {Shape{3, 11}, Shape{0}, Shape{1000003}}) {
        SCOPED_TRACE("Clip " + name_of(d) + " " + ir::shape_to_string(shape) +
                     (constant ? " constant bounds" : " input bounds"));
        Tensor x = numbers(d, shape, seed++);
        std::vector<bool> c = {false, constant, constant};
        expect_gpu_matches_cpu(make_case("Clip", {x, lo, hi}, {}, 1, c), rtol_of(d), atol_of(d));
        expect_gpu_matches_cpu(make_case("Clip", {x, lo, std::nullopt}, {}, 1, c), rtol_of(d),
                               atol_of(d));
        expect_gpu_matches_cpu(make_case("Clip", {x, std::nullopt, hi}, {}, 1, c), rtol_of(d),
                               atol_of(d));
        expect_gpu_matches_cpu(make_case("Clip", {x}), rtol_of(d), atol_of(d));
      }
    }
  }
  Tensor nan_x = tensor_of(DType::Float32, {4}, {kNaN, -kInf, kInf, 0.5});
  expect_gpu_matches_cpu(make_case(
      "Clip", {nan_x, tensor_of(DType::Float32, {}, {-1}), tensor_of(DType::Float32, {}, {1})}, {},
      1, {false, true, true}));
  for (const std::string& p : kPrecisions) {
    SCOPED_TRACE("Clip at " + p);
    expect_gpu_matches_cpu(
        make_case("Clip",
                  {stepped(DType::Float32, {5, 9}, seed++, -5, 5),
                   tensor_of(DType::Float32, {}, {-1.5}), tensor_of(DType::Float32, {}, {2.25})},
                  {}, 1, {false, true, true}),
        2e-2, 2e-2, p);
  }
}

// ---- binary ----

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

struct BinaryOp {
  std::string op;
  std::vector<DType> dtypes;
  std::vector<Attribute> attrs = {};
  bool divisor = false;  ///< input 1 must be nonzero
  bool stepped = false;  ///< coarse values so that equality happens
};

std::vector<BinaryOp> binary_ops() {
  return {
      {"Add", kNumeric},
      {"Sub", kNumeric},
      {"Mul", kNumeric},
      {"Div", kNumeric, {}, true},
      {"Max", kNumeric},
      {"Min", kNumeric},
      {"Mod", {DType::Int32, DType::Int64}, {int_attr("fmod", 0)}, true},
      {"Mod", kNumeric, {int_attr("fmod", 1)}, true},
      {"Equal", kAllPod, {}, false, true},
      {"Less", kNumeric, {}, false, true},
      {"Greater", kNumeric, {}, false, true},
      {"LessOrEqual", kNumeric, {}, false, true},
      {"GreaterOrEqual", kNumeric, {}, false, true},
      {"And", {DType::Bool}},
      {"Or", {DType::Bool}},
      {"Xor", {DType::Bool}},
      {"BitwiseAnd", kIntegers},
      {"BitwiseOr", kIntegers},
      {"BitwiseXor", kIntegers},
  };
}

Tensor binary_operand(const BinaryOp& b, DType d, const Shape& shape, uint64_t seed, int k) {
  if (k == 1 && b.divisor) return divisors(d, shape, seed);
  if (b.stepped && ir::dtype_is_float(d)) return stepped(d, shape, seed, -2, 2, 0.5);
  if (b.stepped && d != DType::Bool) return random_tensor(d, shape, seed, 0, 4);
  return numbers(d, shape, seed);
}

TEST(CudaElementwise, BinaryOpsMatchCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 600;
  for (const BinaryOp& b : binary_ops()) {
    for (DType d : b.dtypes) {
      for (const auto& shapes : kBinaryShapes) {
        for (bool swap : {false, true}) {
          const Shape& sa = swap ? shapes[1] : shapes[0];
          const Shape& sb = swap ? shapes[0] : shapes[1];
          SCOPED_TRACE(b.op + " " + name_of(d) + " " + shapes_of({sa, sb}));
          Tensor x = binary_operand(b, d, sa, seed++, 0);
          Tensor y = binary_operand(b, d, sb, seed++, 1);
          expect_gpu_matches_cpu(make_case(b.op, {x, y}, b.attrs), rtol_of(d), atol_of(d));
        }
      }
    }
  }
}

TEST(CudaElementwise, BinaryOpsOnAnOddLargeSize) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 700;
  for (std::string op : {"Add", "Mul", "Div", "Max", "Less"}) {
    for (const auto& shapes : std::vector<std::vector<Shape>>{
             {{1000003}, {1000003}}, {{1000003}, {}}, {{7, 142861}, {7, 1}}}) {
      SCOPED_TRACE(op + " " + shapes_of(shapes));
      Tensor x = numbers(DType::Float32, shapes[0], seed++);
      Tensor y = divisors(DType::Float32, shapes[1], seed++);
      expect_gpu_matches_cpu(make_case(op, {x, y}), 1e-5, 1e-6);
    }
  }
}

TEST(CudaElementwise, BinaryOpsAtReducedPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (const BinaryOp& b : binary_ops()) {
    if (std::find(b.dtypes.begin(), b.dtypes.end(), DType::Float32) == b.dtypes.end()) continue;
    for (const std::string& p : kPrecisions) {
      SCOPED_TRACE(b.op + " at " + p);
      Tensor x = stepped(DType::Float32, {2, 3, 4}, seed++, -4, 4);
      Tensor y = b.divisor
                     ? divisors(DType::Float32, {4}, seed++, 1.0 / 16)
                     : stepped(DType::Float32, {4}, seed++, -4, 4, b.stepped ? 0.5 : 1.0 / 16);
      expect_gpu_matches_cpu(make_case(b.op, {x, y}, b.attrs), 2e-2, 2e-2, p);
    }
  }
}

TEST(CudaElementwise, FloatBinaryOpsPropagateNaN) {
  SY_SKIP_WITHOUT_GPU();
  for (DType d : kFloats) {
    Tensor x = tensor_of(d, {6}, {kNaN, 1, kNaN, -kInf, 0.0, 2});
    Tensor y = tensor_of(d, {6}, {1, kNaN, kNaN, kInf, -0.0, -kInf});
    for (std::string op : {"Max", "Min", "Add", "Mul", "Equal", "Less"}) {
      SCOPED_TRACE(op + " " + name_of(d));
      expect_gpu_matches_cpu(make_case(op, {x, y}), rtol_of(d), atol_of(d));
    }
  }
}

TEST(CudaElementwise, IntegerArithmeticWrapsAndTruncates) {
  SY_SKIP_WITHOUT_GPU();
  for (DType d : {DType::Int32, DType::Int64}) {
    const bool wide = d == DType::Int64;
    const int64_t big = wide ? std::numeric_limits<int64_t>::max() : 2147483647;
    const int64_t lowest = -big - 1;
    Tensor x = ints_of(d, {big, lowest, -7, 7, -7, lowest, big});
    Tensor y = ints_of(d, {1, -1, 2, -2, -2, -1, big});
    for (std::string op : {"Add", "Sub", "Mul", "Div"}) {
      SCOPED_TRACE(op + " " + name_of(d));
      expect_gpu_matches_cpu(make_case(op, {x, y}));
    }
    for (int64_t fmod : {0, 1})
      expect_gpu_matches_cpu(make_case("Mod", {x, y}, {int_attr("fmod", fmod)}));
  }
}

TEST(CudaElementwise, BitShiftMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (DType d : kUnsigned) {
    for (std::string dir : {"LEFT", "RIGHT"}) {
      for (const auto& shapes : kBinaryShapes) {
        SCOPED_TRACE("BitShift " + dir + " " + name_of(d) + " " + shapes_of(shapes));
        Tensor x = random_tensor(d, shapes[0], seed++, 0, 250);
        Tensor y = random_tensor(d, shapes[1], seed++, 0, 70);
        expect_gpu_matches_cpu(
            make_case("BitShift", {x, y}, {Attribute::make_string("direction", dir)}));
      }
    }
  }
}

TEST(CudaElementwise, PReluMatchesCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1000;
  const std::vector<std::vector<Shape>> shapes = {{{2, 3, 4}, {4}},
                                                  {{2, 3, 4}, {3, 1}},
                                                  {{2, 3, 4}, {}},
                                                  {{2, 3, 4}, {2, 3, 4}},
                                                  {{0, 3}, {3}}};
  for (DType d : kNumeric) {
    for (const auto& s : shapes) {
      SCOPED_TRACE("PRelu " + name_of(d) + " " + shapes_of(s));
      expect_gpu_matches_cpu(
          make_case("PRelu", {numbers(d, s[0], seed++), numbers(d, s[1], seed++, 0, 1)}),
          rtol_of(d), atol_of(d));
    }
  }
  for (const std::string& p : kPrecisions) {
    expect_gpu_matches_cpu(make_case("PRelu", {stepped(DType::Float32, {2, 3, 4}, seed++, -4, 4),
                                               stepped(DType::Float32, {3, 1}, seed++, 0, 1)}),
                           2e-2, 2e-2, p);
  }
}

TEST(CudaElementwise, PowMatchesCpuForEveryDtypePairing) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1100;
  auto base_of = [&](DType d, const Shape& s) {
    return ir::dtype_is_float(d) ? random_tensor(d, s, seed++, 0.5, 3)
                                 : random_tensor(d, s, seed++, -4, 5);
  };
  // An integer base truncates the real power, so a float exponent holds integral values there
  // (a fractional one could land a hair off an integer on either backend).
  auto exponent_of = [&](DType base, DType d, const Shape& s) {
    if (!ir::dtype_is_float(d)) return random_tensor(d, s, seed++, -2, 6);
    if (!ir::dtype_is_float(base)) return stepped(d, s, seed++, -2, 6, 1.0);
    return random_tensor(d, s, seed++, -2, 2);
  };
  for (DType base : kNumeric) {
    for (DType exponent : kNumeric) {
      for (const auto& shapes : std::vector<std::vector<Shape>>{
               {{2, 3, 4}, {4}}, {{3}, {}}, {{2, 1}, {1, 5}}, {{0}, {}}}) {
        SCOPED_TRACE("Pow " + name_of(base) + "^" + name_of(exponent) + " " + shapes_of(shapes));
        DType out = base;
        expect_gpu_matches_cpu(
            make_case("Pow", {base_of(base, shapes[0]), exponent_of(base, exponent, shapes[1])}),
            rtol_of(out), atol_of(out));
      }
      SCOPED_TRACE("Pow by 2 " + name_of(base) + "^" + name_of(exponent));
      expect_gpu_matches_cpu(
          make_case("Pow", {base_of(base, {4, 5}), tensor_of(exponent, {}, {2})}), rtol_of(base),
          atol_of(base));
    }
  }
  for (const std::string& p : kPrecisions)
    expect_gpu_matches_cpu(make_case("Pow", {stepped(DType::Float32, {3, 4}, seed++, 0.5, 3),
                                             stepped(DType::Float32, {4}, seed++, -2, 2)}),
                           2e-2, 2e-2, p);
}

// ---- variadic, Where ----

TEST(CudaElementwise, VariadicOpsMatchCpu) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1200;
  const std::vector<std::vector<Shape>> input_sets = {
      {{2, 3, 4}},   {{2, 3, 4}, {4}}, {{2, 1, 4}, {3, 1}, {1}}, {{2, 3, 4}, {2, 3, 4}, {4}, {}},
      {{0, 3}, {3}},
  };
  for (std::string op : {"Max", "Min", "Sum", "Mean"}) {
    const bool float_only = op == "Sum" || op == "Mean";
    for (DType d : float_only ? kFloats : kNumeric) {
      for (const auto& set : input_sets) {
        SCOPED_TRACE(op + " " + name_of(d) + " " + shapes_of(set));
        std::vector<std::optional<Tensor>> ins;
        for (const Shape& s : set) ins.emplace_back(numbers(d, s, seed++));
        expect_gpu_matches_cpu(make_case(op, ins), rtol_of(d), atol_of(d));
      }
    }
    for (const std::string& p : kPrecisions) {
      SCOPED_TRACE(op + " at " + p);
      expect_gpu_matches_cpu(make_case(op, {stepped(DType::Float32, {2, 3, 4}, seed++, -4, 4),
                                            stepped(DType::Float32, {4}, seed++, -4, 4),
                                            stepped(DType::Float32, {3, 1}, seed++, -4, 4)}),
                             2e-2, 2e-2, p);
    }
  }
}

TEST(CudaElementwise, WhereMatchesCpuForEveryDtype) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1300;
  const std::vector<std::vector<Shape>> shape_sets = {
      {{7, 9}, {7, 9}, {7, 9}}, {{2, 1, 4}, {3, 1}, {2, 3, 4}}, {{}, {5}, {5}}, {{3}, {}, {}},
      {{0, 2}, {2}, {1}},       {{1000003}, {1000003}, {}}};
  for (DType d : kAllPod) {
    for (const auto& s : shape_sets) {
      SCOPED_TRACE("Where " + name_of(d) + " " + shapes_of(s));
      expect_gpu_matches_cpu(
          make_case("Where", {random_tensor(DType::Bool, s[0], seed++), numbers(d, s[1], seed++),
                              numbers(d, s[2], seed++)}));
    }
  }
  for (const std::string& p : kPrecisions)
    expect_gpu_matches_cpu(make_case("Where", {random_tensor(DType::Bool, {2, 3}, seed++),
                                               stepped(DType::Float32, {2, 3}, seed++, -4, 4),
                                               stepped(DType::Float32, {3}, seed++, -4, 4)}),
                           2e-2, 2e-2, p);
}

// ---- Cast, CastLike, Expand ----

/// Values a cast from `d` meets: fractions, values out of narrower types' range, and for float
/// sources NaN, infinities, signed zero and values beyond float16's range.
Tensor cast_source(DType d, uint64_t seed) {
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
      Tensor r = random_tensor(DType::Float64, shape, seed, -300, 300);
      std::vector<double> v(r.data<double>(), r.data<double>() + r.numel());
      const std::vector<double> special = {kNaN, kInf,    -kInf, -0.0, 0.5,   -0.5,
                                           2.5,  70000.0, -1e10, 1e-8, 255.9, -128.7};
      for (size_t i = 0; i < special.size(); ++i) v[i] = special[i];
      return tensor_of(d, shape, v);
    }
  }
}

TEST(CudaElementwise, CastMatchesCpuBetweenEveryDtypePair) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1400;
  for (DType from : kCastTypes) {
    for (DType to : kCastTypes) {
      SCOPED_TRACE("Cast " + name_of(from) + " -> " + name_of(to));
      Tensor x = cast_source(from, seed++);
      Attribute a = int_attr("to", static_cast<int64_t>(to));
      expect_gpu_matches_cpu(make_case("Cast", {x}, {a}), 0, 0);
      expect_gpu_matches_cpu(make_case("Cast", {Tensor(from, {0, 4})}, {a}), 0, 0);
      expect_gpu_matches_cpu(make_case("CastLike", {x, Tensor(to, {1})}), 0, 0);
    }
  }
  Tensor big = random_tensor(DType::Float32, {1000003}, seed++, -1000, 1000);
  for (DType to : {DType::Float16, DType::Int32, DType::UInt8}) {
    SCOPED_TRACE("Cast float -> " + name_of(to) + " large");
    expect_gpu_matches_cpu(make_case("Cast", {big}, {int_attr("to", static_cast<int64_t>(to))}), 0,
                           0);
  }
}

TEST(CudaElementwise, ExpandMatchesCpuForEveryDtype) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1500;
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{3, 1}, {2, 3, 4}}, {{1}, {5}},       {{}, {2, 2}},        {{2, 1, 4}, {3, 1, 1, 1}},
      {{4}, {1}},          {{0, 1}, {0, 3}}, {{3, 1}, {2, 3, 0}}, {{1, 1, 5}, {1000003, 1, 1}}};
  for (DType d : kAllPod) {
    for (const auto& [in, shape] : cases) {
      SCOPED_TRACE("Expand " + name_of(d) + " " + ir::shape_to_string(in) + " to " +
                   ir::shape_to_string(shape));
      expect_gpu_matches_cpu(
          make_case("Expand", {numbers(d, in, seed++), int64_tensor(shape)}, {}, 1, {false, true}));
    }
  }
  expect_gpu_matches_cpu(
      make_case("Expand", {numbers(DType::Float32, {3, 1}, seed++), int64_tensor({2, 3, 4})}));
}

// ---- fused chains ----

/// A small graph built twice (once per backend): inputs with their feeds, constants, nodes.
struct Net {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>("net");
  std::vector<ir::Datum> feeds;
  int nodes = 0;

  ir::Value* input(const Tensor& t) {
    feeds.emplace_back(t);
    return graph->add_input("in" + std::to_string(feeds.size()),
                            ir::Type::tensor(t.dtype(), ir::make_shape(t.shape())));
  }
  ir::Value* scalar(double v) {
    return graph->add_constant("c" + std::to_string(nodes++), tensor_of(DType::Float32, {}, {v}));
  }
  ir::Value* constant(const Tensor& t) {
    return graph->add_constant("c" + std::to_string(nodes++), t);
  }
  ir::Value* node(const std::string& op, const std::vector<ir::Value*>& ins,
                  const std::vector<Attribute>& attrs = {}) {
    std::string name = op + "_" + std::to_string(nodes++);
    ir::Node* n = graph->add_node(op, name, ins, {name + "_out"});
    for (const Attribute& a : attrs) n->set_attribute(a);
    return n->output(0);
  }
};

using NetBuilder = std::function<void(Net&)>;

std::vector<ir::Datum> run_net(const NetBuilder& build, Options options,
                               runtime::Profiler* profiler = nullptr) {
  Net net;
  build(net);
  options.num_threads = 2;
  Executable exe = Model::from_graph(std::move(net.graph)).compile(options);
  return exe.internal().run(net.feeds, nullptr, profiler);
}

/// Runs the graph on the cpu and on cuda:0 (strict), compares every output, and returns how
/// many kernel steps the CUDA partition ran.
int expect_net_matches_cpu(const NetBuilder& build, double rtol, double atol,
                           const std::string& precision = "fp32") {
  Options cpu;
  cpu.compute_units = "cpu_only";
  std::vector<ir::Datum> want = run_net(build, cpu);
  Options gpu;
  gpu.device = "cuda:0";
  gpu.fallback = "strict";
  gpu.precision = precision;
  runtime::Profiler profiler;
  std::vector<ir::Datum> got = run_net(build, gpu, &profiler);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    EXPECT_TENSOR_NEAR(got[i].tensor, want[i].tensor, rtol, atol) << "output " << i;
  int steps = 0;
  for (const runtime::ProfileEvent& e : profiler.events())
    if (e.category == "Node" && e.device.rfind("cuda", 0) == 0) ++steps;
  return steps;
}

TEST(CudaElementwiseFusion, ExportedGeluChainsRunAsOneKernel) {
  SY_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor(DType::Float32, {2, 3, 257}, 1600, -5, 5);
  // PyTorch's export: Div -> Erf -> Add -> Mul(x) -> Mul(0.5).
  NetBuilder div_form = [&](Net& n) {
    ir::Value* in = n.input(x);
    ir::Value* e = n.node("Erf", {n.node("Div", {in, n.scalar(1.4142135381698608)})});
    ir::Value* m = n.node("Mul", {in, n.node("Add", {e, n.scalar(1.0)})});
    n.graph->add_output(n.node("Mul", {m, n.scalar(0.5)}));
  };
  // Mul by 1/sqrt(2), constants first, the 0.5 applied before x.
  NetBuilder mul_form = [&](Net& n) {
    ir::Value* in = n.input(x);
    ir::Value* e = n.node("Erf", {n.node("Mul", {n.scalar(0.7071067690849304), in})});
    ir::Value* h = n.node("Mul", {n.node("Add", {n.scalar(1.0), e}), n.scalar(0.5)});
    n.graph->add_output(n.node("Mul", {h, in}));
  };
  // x * 0.5 computed on its own branch.
  NetBuilder half_first = [&](Net& n) {
    ir::Value* in = n.input(x);
    ir::Value* half = n.node("Mul", {in, n.scalar(0.5)});
    ir::Value* e = n.node("Erf", {n.node("Div", {in, n.scalar(1.41421)})});
    n.graph->add_output(n.node("Mul", {half, n.node("Add", {e, n.scalar(1.0)})}));
  };
  for (const auto& [name, build] : std::vector<std::pair<std::string, NetBuilder>>{
           {"div", div_form}, {"mul", mul_form}, {"half first", half_first}}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(expect_net_matches_cpu(build, 1e-5, 1e-5), 1);
    for (const std::string& p : kPrecisions) expect_net_matches_cpu(build, 2e-2, 2e-2, p);
  }
}

TEST(CudaElementwiseFusion, CommonChainsRunAsOneKernel) {
  SY_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor(DType::Float32, {2, 3, 5, 7}, 1700, -3, 3);
  Tensor bias = random_tensor(DType::Float32, {7}, 1701, -1, 1);
  Tensor scale = random_tensor(DType::Float32, {3, 1, 1}, 1702, 0.5, 2);
  Tensor shift = random_tensor(DType::Float32, {3, 1, 1}, 1703, -1, 1);
  NetBuilder add_relu = [&](Net& n) {
    n.graph->add_output(n.node("Relu", {n.node("Add", {n.input(x), n.constant(bias)})}));
  };
  NetBuilder scale_shift = [&](Net& n) {
    ir::Value* s = n.input(scale);  // a tensor operand of the head
    ir::Value* t = n.input(shift);  // a tensor operand appended to the head
    n.graph->add_output(n.node("Add", {n.node("Mul", {n.input(x), s}), t}));
  };
  NetBuilder silu = [&](Net& n) {
    ir::Value* in = n.input(x);
    n.graph->add_output(n.node("Mul", {in, n.node("Sigmoid", {in})}));
  };
  // Scalars on either side of non-commutative ops, unary steps with attributes.
  NetBuilder long_chain = [&](Net& n) {
    ir::Value* v = n.node("Sub", {n.scalar(0.25), n.input(x)});
    v = n.node("LeakyRelu", {v}, {float_attr("alpha", 0.2f)});
    v = n.node("Div", {n.scalar(2.0), n.node("Add", {n.node("Abs", {v}), n.scalar(1.0)})});
    v = n.node("Pow", {v, n.scalar(1.5)});
    v = n.node("Max", {v, n.scalar(0.3)});
    n.graph->add_output(n.node("Gelu", {v}, {Attribute::make_string("approximate", "tanh")}));
  };
  for (const auto& [name, build] :
       std::vector<std::pair<std::string, NetBuilder>>{{"add relu", add_relu},
                                                       {"scale shift", scale_shift},
                                                       {"silu", silu},
                                                       {"long chain", long_chain}}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(expect_net_matches_cpu(build, 1e-5, 1e-5), 1);
    for (const std::string& p : kPrecisions) expect_net_matches_cpu(build, 2e-2, 2e-2, p);
  }
}

TEST(CudaElementwiseFusion, ValuesReadElsewhereAreNotAbsorbed) {
  SY_SKIP_WITHOUT_GPU();
  Tensor x = random_tensor(DType::Float32, {4, 9}, 1800, -3, 3);
  // The Add result is read twice: Add stays its own kernel; Relu and Tanh each one more.
  NetBuilder shared = [&](Net& n) {
    ir::Value* a = n.node("Add", {n.input(x), n.scalar(0.5)});
    n.graph->add_output(n.node("Mul", {n.node("Relu", {a}), n.node("Tanh", {a})}));
  };
  EXPECT_EQ(expect_net_matches_cpu(shared, 1e-5, 1e-5), 3);
  // An intermediate graph output is kept: Exp -> (output) -> Neg -> Sigmoid fuses Neg, Sigmoid.
  NetBuilder visible = [&](Net& n) {
    ir::Value* e = n.node("Exp", {n.input(x)});
    n.graph->add_output(e);
    n.graph->add_output(n.node("Sigmoid", {n.node("Neg", {e})}));
  };
  EXPECT_EQ(expect_net_matches_cpu(visible, 1e-5, 1e-5), 2);
  // Integer chains are not fused (the chain kernel is float-only) but still run.
  Tensor xi = random_tensor(DType::Int32, {4, 9}, 1801, -20, 20);
  NetBuilder ints = [&](Net& n) {
    n.graph->add_output(n.node("Relu", {n.node("Add", {n.input(xi), n.input(xi)})}));
  };
  EXPECT_EQ(expect_net_matches_cpu(ints, 0, 0), 2);
}

// An integer zero divisor fails the run naming the node, as on the cpu: the kernel stores the
// fault in the partition's error word (no sync per kernel), with CUDA graphs too (later runs
// replay a captured graph), and the same executable keeps working on good divisors.
TEST(CudaElementwise, IntegerDivisionByZeroFailsTheRunNamingTheNode) {
  SY_SKIP_WITHOUT_GPU();
  for (DType t : {DType::Int32, DType::Int64}) {
    Tensor a = tensor_of(t, {4}, {7, -7, 9, 3});
    Tensor zero = tensor_of(t, {4}, {2, 0, 3, 1});
    for (const char* op : {"Div", "Mod"}) {
      SCOPED_TRACE(std::string(op) + " " + std::string(ir::dtype_name(t)));
      OpCase c = make_case(op, {a, zero});
      expect_error([&] { run_op(c); }, ErrorCode::InvalidArgument, "division by zero");
      expect_error([&] { run_op_gpu(c); }, ErrorCode::InvalidArgument,
                   "integer division by zero: input 1 holds a zero (found on cuda:0");
    }
    Options o;
    o.device = "cuda:0";
    o.fallback = "strict";
    Executable exe =
        Model::from_graph(build_op_graph(make_case("Div", {a, tensor_of(t, {4}, {2, 1, 3, 1})})))
            .compile(o);
    Tensor good = tensor_of(t, {4}, {2, -2, 4, 3});
    for (int run = 0; run < 4; ++run) {
      std::vector<ir::Datum> out =
          exe.internal().run(std::vector<ir::Datum>{ir::Datum(a), ir::Datum(good)});
      EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(t, {4}, {3, 3, 2, 1}), 0, 0);
      expect_error(
          [&] {
            exe.internal().run(std::vector<ir::Datum>{ir::Datum(a), ir::Datum(zero)});
          },
          ErrorCode::InvalidArgument, "[Div]");
    }
  }
}

}  // namespace
}  // namespace switchyard::testing
