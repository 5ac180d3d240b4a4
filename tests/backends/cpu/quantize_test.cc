// CPU kernels of the quantize family against plain references.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

std::vector<ir::Datum> run(const std::string& op, std::vector<std::optional<Tensor>> inputs,
                           std::vector<Attribute> attrs = {}, int outputs = 1) {
  return run_op(make_case(op, std::move(inputs), std::move(attrs), outputs));
}

std::pair<double, double> range_of(DType d) {
  switch (d) {
    case DType::Int8:
      return {-128, 127};
    case DType::UInt8:
      return {0, 255};
    case DType::Int16:
      return {-32768, 32767};
    case DType::UInt16:
      return {0, 65535};
    default:
      return {-2147483648.0, 2147483647.0};
  }
}

/// Reference: channel c of x viewed as [outer, channels, inner].
std::vector<double> ref_quantize(const Tensor& x, const std::vector<double>& scale,
                                 const std::vector<double>& zp, int64_t axis, DType out) {
  auto xs = to_doubles(x);
  int64_t channels = static_cast<int64_t>(scale.size());
  int64_t inner = 1;
  if (channels > 1)
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  auto [lo, hi] = range_of(out);
  std::vector<double> e;
  for (size_t i = 0; i < xs.size(); ++i) {
    size_t c = channels > 1 ? static_cast<size_t>((static_cast<int64_t>(i) / inner) % channels) : 0;
    double q = std::nearbyint(static_cast<float>(xs[i]) / static_cast<float>(scale[c])) + zp[c];
    e.push_back(std::clamp(q, lo, hi));
  }
  return e;
}

TEST(QuantizeLinear, PerTensorAndPerAxis) {
  for (DType xt : {DType::Float32, DType::Float16}) {
    for (DType qt : {DType::UInt8, DType::Int8, DType::Int16, DType::UInt16}) {
      Tensor x = random_tensor(xt, {2, 3, 4}, 1, -300, 300);
      // Per tensor.
      Tensor s = tensor_of(xt, {}, {1.5});
      Tensor z = tensor_of(qt, {}, {qt == DType::Int8 || qt == DType::Int16 ? -3.0 : 100.0});
      auto y = run("QuantizeLinear", {x, s, z})[0].tensor;
      EXPECT_TENSOR_NEAR(y, tensor_of(qt, {2, 3, 4}, ref_quantize(x, {1.5}, to_doubles(z), 1, qt)),
                         0, 0);
      // Per axis, with a negative axis.
      std::vector<double> sc = {0.5, 2.0, 3.0, 1.25};
      std::vector<double> zp = {0, 1, 2, 3};
      Tensor sa = tensor_of(xt, {4}, sc);
      Tensor za = tensor_of(qt, {4}, zp);
      auto ya = run("QuantizeLinear", {x, sa, za}, {Attribute::make_int("axis", -1)})[0].tensor;
      EXPECT_TENSOR_NEAR(ya, tensor_of(qt, {2, 3, 4}, ref_quantize(x, sc, zp, 2, qt)), 0, 0);
    }
  }
  // Without a zero point the output is uint8; ties round to even.
  Tensor x = tensor_of(DType::Float32, {6}, {0.5, 1.5, 2.5, -1, 1000, std::nan("")});
  Tensor s = tensor_of(DType::Float32, {}, {1});
  EXPECT_TENSOR_NEAR(run("QuantizeLinear", {x, s})[0].tensor,
                     tensor_of(DType::UInt8, {6}, {0, 2, 2, 0, 255, 0}), 0, 0);
  Tensor i32 = tensor_of(DType::Int32, {3}, {-10, 7, 1000});
  Tensor s2 = tensor_of(DType::Float32, {}, {2});
  Tensor z8 = tensor_of(DType::Int8, {}, {1});
  EXPECT_TENSOR_NEAR(run("QuantizeLinear", {i32, s2, z8})[0].tensor,
                     tensor_of(DType::Int8, {3}, {-4, 5, 127}), 0, 0);
}

TEST(DequantizeLinear, PerTensorAndPerAxis) {
  for (DType qt : {DType::UInt8, DType::Int8, DType::Int32}) {
    for (DType st : {DType::Float32, DType::Float16}) {
      auto [lo, hi] = range_of(qt);
      Tensor x = random_tensor(qt, {3, 5}, 2, std::max(lo, -1000.0), std::min(hi, 1000.0));
      std::vector<double> sc = {0.5, 0.25, 2.0};
      std::vector<double> zp = {qt == DType::UInt8 ? 128.0 : -5.0, 3, 0};
      Tensor s = tensor_of(st, {3}, sc);
      Tensor z = tensor_of(qt, {3}, zp);
      auto xs = to_doubles(x);
      std::vector<double> e;
      for (size_t i = 0; i < xs.size(); ++i) e.push_back((xs[i] - zp[i / 5]) * sc[i / 5]);
      auto y = run("DequantizeLinear", {x, s, z}, {Attribute::make_int("axis", 0)})[0].tensor;
      EXPECT_TENSOR_NEAR(y, tensor_of(st, {3, 5}, e), st == DType::Float16 ? 1e-3 : 1e-7, 0);
      // Per tensor, no zero point.
      Tensor s1 = tensor_of(st, {1}, {0.125});
      std::vector<double> e1;
      for (double v : xs) e1.push_back(v * 0.125);
      EXPECT_TENSOR_NEAR(run("DequantizeLinear", {x, s1})[0].tensor, tensor_of(st, {3, 5}, e1),
                         st == DType::Float16 ? 1e-3 : 1e-7, 0);
    }
  }
}

TEST(QuantizeLinear, BadShapesAndDtypesFail) {
  Tensor x = random_tensor(DType::Float32, {2, 3}, 1);
  Tensor s = tensor_of(DType::Float32, {2}, {1, 2});
  EXPECT_THROW(run("QuantizeLinear", {x, s}), Error);  // axis 1 has 3 elements
  Tensor z = tensor_of(DType::Float32, {}, {0});
  EXPECT_THROW(run("QuantizeLinear", {x, tensor_of(DType::Float32, {}, {1}), z}), Error);
  Tensor q = random_tensor(DType::UInt8, {2, 3}, 1, 0, 255);
  Tensor zi = tensor_of(DType::Int8, {}, {0});
  EXPECT_THROW(run("DequantizeLinear", {q, tensor_of(DType::Float32, {}, {1}), zi}), Error);
  try {
    run("QuantizeLinear", {x, s}, {Attribute::make_int("axis", 5)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[QuantizeLinear] node 'node'"), std::string::npos)
        << e.what();
  }
  // Blocked quantization is refused with a reason rather than computed wrongly.
  try {
    run("DequantizeLinear", {q, tensor_of(DType::Float32, {2, 1}, {1, 2})},
        {Attribute::make_int("block_size", 3)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_size"), std::string::npos) << e.what();
  }
}

TEST(DynamicQuantizeLinear, MatchesTheSpecFormula) {
  for (auto [lo_v, hi_v] : {std::pair{-2.0, 5.0}, {1.0, 4.0}, {-6.0, -1.0}}) {
    Tensor x = random_tensor(DType::Float32, {3, 7}, 4, lo_v, hi_v);
    auto outs = run("DynamicQuantizeLinear", {x}, {}, 3);
    auto xs = to_doubles(x);
    float mn = 0, mx = 0;
    for (double v : xs) {
      mn = std::min(mn, static_cast<float>(v));
      mx = std::max(mx, static_cast<float>(v));
    }
    float scale = (mx - mn) / 255.0f;
    float zp = std::clamp(std::nearbyint(-mn / scale), 0.0f, 255.0f);
    std::vector<double> e;
    for (double v : xs)
      e.push_back(std::clamp(std::nearbyint(static_cast<float>(v) / scale) + zp, 0.0f, 255.0f));
    EXPECT_TENSOR_NEAR(outs[0].tensor, tensor_of(DType::UInt8, {3, 7}, e), 0, 0);
    EXPECT_TENSOR_NEAR(outs[1].tensor, tensor_of(DType::Float32, {}, {scale}), 0, 0);
    EXPECT_TENSOR_NEAR(outs[2].tensor, tensor_of(DType::UInt8, {}, {zp}), 0, 0);
  }
  Tensor zeros = tensor_of(DType::Float32, {2}, {0, 0});
  auto outs = run("DynamicQuantizeLinear", {zeros}, {}, 3);
  EXPECT_TENSOR_NEAR(outs[0].tensor, tensor_of(DType::UInt8, {2}, {0, 0}), 0, 0);
  Tensor empty = random_tensor(DType::Float32, {0, 4}, 1);
  EXPECT_EQ(run("DynamicQuantizeLinear", {empty}, {}, 3)[0].tensor.shape(),
            (std::vector<int64_t>{0, 4}));
}

}  // namespace
}  // namespace switchyard::testing
