// CPU kernels Cast and CastLike: every numeric pair against a reference, rounding to half types,
// out-of-range float to integer, and numpy's string formatting and parsing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

Tensor cast(const Tensor& x, DType to) {
  testing::OpCase c;
  c.op = "Cast";
  c.inputs = {x};
  c.attributes = {Attribute::make_int("to", static_cast<int64_t>(to))};
  return testing::run_op1(c);
}

const std::vector<DType> kPodTypes = {
    DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8,
    DType::Int16,   DType::Int32,   DType::Int64,   DType::UInt8,    DType::UInt16,
    DType::UInt32,  DType::UInt64,  DType::Bool};

TEST(Cast, EveryNumericPairInRange) {
  for (DType from : kPodTypes) {
    // Values every dtype holds exactly: small non-negative integers and halves.
    Tensor src = random_tensor(DType::Float64, {3, 7}, 9, 0, 100);
    std::vector<double> v = to_doubles(src);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = std::floor(v[i]);
      if (ir::dtype_is_float(from) && i % 3 == 0) v[i] += 0.5;
      if (from == DType::Bool) v[i] = static_cast<double>(i % 2);
    }
    Tensor x = tensor_of(from, {3, 7}, v);
    for (DType to : kPodTypes) {
      std::vector<double> e;
      for (double d : v) {
        if (to == DType::Bool) {
          e.push_back(d != 0);
        } else if (ir::dtype_is_integer(to)) {
          e.push_back(std::trunc(d));
        } else {
          e.push_back(d);
        }
      }
      EXPECT_TENSOR_NEAR(cast(x, to), tensor_of(to, {3, 7}, e), 0, 0)
          << ir::dtype_name(from) << " -> " << ir::dtype_name(to);
    }
  }
}

TEST(Cast, NegativeFloatsToIntegersTruncate) {
  Tensor x = tensor_of(DType::Float32, {4}, {-1.7, -0.2, 2.9, -100.5});
  EXPECT_TENSOR_NEAR(cast(x, DType::Int32), tensor_of(DType::Int32, {4}, {-1, 0, 2, -100}), 0, 0);
  EXPECT_TENSOR_NEAR(cast(x, DType::Int8), tensor_of(DType::Int8, {4}, {-1, 0, 2, -100}), 0, 0);
  // Outside the target's range the value wraps modulo 2^bits (as numpy does on x86).
  Tensor big = tensor_of(DType::Float32, {2}, {300, -1});
  EXPECT_TENSOR_NEAR(cast(big, DType::UInt8), tensor_of(DType::UInt8, {2}, {44, 255}), 0, 0);
  // NaN and values beyond int64 are defined (x86's integer indefinite), never UB.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor odd = tensor_of(DType::Float64, {2}, {nan, 1e30});
  EXPECT_TENSOR_NEAR(cast(odd, DType::Int64),
                     tensor_of(DType::Int64, {2}, {-9223372036854775808.0, -9223372036854775808.0}),
                     0, 0);
}

TEST(Cast, RoundsToHalfTypesToNearestEven) {
  // 1 + 2^-11 is halfway between two halves: ties to even (1.0); 1 + 3*2^-11 rounds up.
  Tensor x = tensor_of(DType::Float32, {4},
                       {1 + std::ldexp(1.0, -11), 1 + 3 * std::ldexp(1.0, -11), 65520.0, 1e-8});
  Tensor h = cast(x, DType::Float16);
  ASSERT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(h.data<ir::Float16>()[0].bits, 0x3c00);
  EXPECT_EQ(h.data<ir::Float16>()[1].bits, 0x3c02);
  EXPECT_EQ(h.data<ir::Float16>()[2].bits, 0x7c00);  // overflows to inf
  EXPECT_EQ(h.data<ir::Float16>()[3].bits, 0x0000);
  // A double just above a half tie must round up, not to the double-rounded tie's even side.
  Tensor d = tensor_of(DType::Float64, {1}, {1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)});
  EXPECT_EQ(cast(d, DType::Float16).data<ir::Float16>()[0].bits, 0x3c01);
  Tensor b = cast(tensor_of(DType::Float32, {2}, {1 + std::ldexp(1.0, -8), 3.0}), DType::BFloat16);
  EXPECT_EQ(b.data<ir::BFloat16>()[0].bits, 0x3f80);
  EXPECT_EQ(b.data<ir::BFloat16>()[1].bits, 0x4040);
  for (DType from : {DType::Float32, DType::Float64}) {
    Tensor r = random_tensor(from, {50}, 3, -1000, 1000);
    std::vector<double> e;
    for (double v : to_doubles(r))
      e.push_back(static_cast<double>(ir::Float16(static_cast<float>(v))));
    EXPECT_TENSOR_NEAR(cast(r, DType::Float16), tensor_of(DType::Float16, {50}, e), 1e-3, 0);
  }
}

TEST(Cast, NumbersToStringsLikeNumpy) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor f = tensor_of(DType::Float32, {18},
                       {1.0, 1e8, 1e-5, 1e20, inf, -inf, nan, 0.0, -0.0, 123456789.0, 1e16, 1e15,
                        0.0001, 0.00012345, 3.4e38, 1.5e-45, 2.5, -7.0});
  EXPECT_EQ(string_values(cast(f, DType::String)),
            (std::vector<std::string>{"1.0", "100000000.0", "1e-05", "1e+20", "inf", "-inf", "nan",
                                      "0.0", "-0.0", "123456790.0", "1e+16", "1000000000000000.0",
                                      "1e-04", "0.00012345", "3.4e+38", "1e-45", "2.5", "-7.0"}));
  Tensor g = tensor_of(DType::Float32, {4}, {0.9767611, 0.039187793, 0.064147495, 0.6924721});
  EXPECT_EQ(string_values(cast(g, DType::String)),
            (std::vector<std::string>{"0.9767611", "0.039187793", "0.064147495", "0.6924721"}));
  Tensor d = tensor_of(DType::Float64, {3}, {0.1, 1e-5, 123456792.0});
  EXPECT_EQ(string_values(cast(d, DType::String)),
            (std::vector<std::string>{"0.1", "1e-05", "123456792.0"}));
  Tensor h = tensor_of(DType::Float16, {3}, {0.00012345, 0.0001, 2.5});
  EXPECT_EQ(string_values(cast(h, DType::String)),
            (std::vector<std::string>{"0.0001235", "0.0001", "2.5"}));
  Tensor i = tensor_of(DType::Int8, {3}, {-128, 0, 127});
  EXPECT_EQ(string_values(cast(i, DType::String)), (std::vector<std::string>{"-128", "0", "127"}));
  Tensor b = tensor_of(DType::Bool, {2}, {1, 0});
  EXPECT_EQ(string_values(cast(b, DType::String)), (std::vector<std::string>{"True", "False"}));
}

TEST(Cast, StringsToNumbers) {
  Tensor s =
      string_tensor({8}, {"0.47892547", "NaN", "INF", "+INF", "-INF", " 1e3 ", "-2.5E-1", "1e400"});
  Tensor f = cast(s, DType::Float32);
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TENSOR_NEAR(
      f, tensor_of(DType::Float32, {8}, {0.47892547, nan, inf, inf, -inf, 1000, -0.25, inf}), 0, 0);
  EXPECT_TENSOR_NEAR(
      cast(s, DType::Float16),
      tensor_of(DType::Float16, {8}, {0.47892547, nan, inf, inf, -inf, 1000, -0.25, inf}), 0, 0);
  Tensor ints = string_tensor({3}, {"-12", "+7", "300"});
  EXPECT_TENSOR_NEAR(cast(ints, DType::Int16), tensor_of(DType::Int16, {3}, {-12, 7, 300}), 0, 0);
  EXPECT_THROW(cast(ints, DType::Int8), Error);  // 300 is out of range
  EXPECT_THROW(cast(string_tensor({1}, {"1.5"}), DType::Int32), Error);
  EXPECT_TENSOR_NEAR(cast(string_tensor({4}, {"True", "false", "0", "2.5"}), DType::Bool),
                     tensor_of(DType::Bool, {4}, {1, 0, 0, 1}), 0, 0);
  try {
    cast(string_tensor({2}, {"1", "abc"}), DType::Float32);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[Cast] node 'node'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'abc' at index 1"), std::string::npos) << e.what();
  }
  // Round trip through strings keeps every float32 exactly.
  Tensor r = random_tensor(DType::Float32, {40}, 5, -1e6, 1e6);
  EXPECT_TENSOR_NEAR(cast(cast(r, DType::String), DType::Float32), r, 0, 0);
  Tensor copy = cast(s, DType::String);
  EXPECT_EQ(string_values(copy), string_values(s));
}

TEST(Cast, CastLikeTakesTheSecondInputsDtype) {
  Tensor x = random_tensor(DType::Float32, {2, 3}, 1, -4, 4);
  for (DType to : {DType::Float16, DType::Int32, DType::Float64}) {
    testing::OpCase c;
    c.op = "CastLike";
    c.inputs = {x, tensor_of(to, {1}, {0})};
    Tensor y = testing::run_op1(c);
    EXPECT_TENSOR_NEAR(y, cast(x, to), 0, 0);
  }
  testing::OpCase c;
  c.op = "CastLike";
  c.inputs = {x, string_tensor({1}, {""})};
  EXPECT_EQ(testing::run_op1(c).dtype(), DType::String);
}

TEST(Cast, EmptyAndScalar) {
  Tensor e = random_tensor(DType::Float32, {0, 3}, 1);
  EXPECT_EQ(cast(e, DType::Int64).shape(), (std::vector<int64_t>{0, 3}));
  Tensor s = tensor_of(DType::Float64, {}, {2.75});
  EXPECT_TENSOR_NEAR(cast(s, DType::Float32), tensor_of(DType::Float32, {}, {2.75}), 0, 0);
  testing::OpCase c;
  c.op = "Cast";
  c.inputs = {s};
  c.attributes = {Attribute::make_int("to", 14)};  // complex64
  EXPECT_THROW(testing::run_op1(c), Error);
}

}  // namespace
}  // namespace switchyard::testing
