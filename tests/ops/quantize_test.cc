// Symbolic type inference of the quantize family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

// The inferred output types as text.
std::vector<std::string> infer(const std::string& op, const std::vector<InferArg>& inputs,
                               const std::vector<Attribute>& attrs = {}, int outputs = 1) {
  return to_strings(infer_op(op, inputs, attrs, outputs));
}

Type t(DType d, Shape s) { return Type::tensor(d, std::move(s)); }

TEST(QuantizeInference, QuantizeLinear) {
  Type x = t(DType::Float32, {sym("N"), 3, 8});
  EXPECT_EQ(infer("QuantizeLinear", {x, t(DType::Float32, {})})[0], "uint8[N,3,8]");
  EXPECT_EQ(infer("QuantizeLinear", {x, t(DType::Float32, {3}), t(DType::Int8, {3})})[0],
            "int8[N,3,8]");
  EXPECT_EQ(infer("QuantizeLinear", {x, t(DType::Float32, {8}), t(DType::Int8, {8})},
                  {Attribute::make_int("axis", -1)})[0],
            "int8[N,3,8]");
  EXPECT_EQ(infer("QuantizeLinear", {x, t(DType::Float32, {})},
                  {Attribute::make_int("output_dtype", 5)})[0],
            "int16[N,3,8]");
  EXPECT_THROW(infer("QuantizeLinear", {x, t(DType::Float32, {4})}), Error);
  EXPECT_THROW(infer("QuantizeLinear", {x, t(DType::Float32, {3}), t(DType::Int8, {})}), Error);
  EXPECT_THROW(infer("QuantizeLinear", {x, t(DType::Float32, {}), t(DType::Int32, {})}), Error);
  EXPECT_THROW(
      infer("QuantizeLinear", {x, t(DType::Float32, {3})}, {Attribute::make_int("axis", 3)}),
      Error);
}

TEST(QuantizeInference, DequantizeLinear) {
  Type q = t(DType::Int8, {sym("N"), 4});
  EXPECT_EQ(infer("DequantizeLinear", {q, t(DType::Float32, {})})[0], "float[N,4]");
  EXPECT_EQ(infer("DequantizeLinear", {q, t(DType::Float16, {4}), t(DType::Int8, {4})})[0],
            "float16[N,4]");
  EXPECT_EQ(infer("DequantizeLinear", {t(DType::Int32, {2}), t(DType::Float32, {})})[0],
            "float[2]");
  EXPECT_THROW(infer("DequantizeLinear", {q, t(DType::Float32, {}), t(DType::UInt8, {})}), Error);
  EXPECT_THROW(infer("DequantizeLinear", {t(DType::Float32, {2}), t(DType::Float32, {})}), Error);
}

TEST(QuantizeInference, DynamicQuantizeLinear) {
  auto types = infer("DynamicQuantizeLinear", {t(DType::Float32, {sym("B"), 16})}, {}, 3);
  EXPECT_EQ(types, (std::vector<std::string>{"uint8[B,16]", "float[]", "uint8[]"}));
  EXPECT_THROW(infer("DynamicQuantizeLinear", {t(DType::Float16, {2})}, {}, 3), Error);
}

}  // namespace
}  // namespace switchyard::testing
