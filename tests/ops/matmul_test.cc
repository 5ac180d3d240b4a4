// Symbolic shape inference of the matmul family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(Shape s) { return Type::tensor(DType::Float32, std::move(s)); }

TEST(MatMulSchema, NumpyRules) {
  EXPECT_EQ(infer_type("MatMul", {f32({Dim("B"), Dim("S"), 768}), f32({768, 3072})}).to_string(),
            "float[B,S,3072]");
  EXPECT_EQ(infer_type("MatMul", {f32({Dim("B"), 1, 4, 5}), f32({3, 5, 6})}).to_string(),
            "float[B,3,4,6]");
  EXPECT_EQ(infer_type("MatMul", {f32({5}), f32({2, 5, 6})}).to_string(), "float[2,6]");
  EXPECT_EQ(infer_type("MatMul", {f32({2, 3, 5}), f32({5})}).to_string(), "float[2,3]");
  EXPECT_EQ(infer_type("MatMul", {f32({5}), f32({5})}).to_string(), "float[]");
  EXPECT_THROW(infer_type("MatMul", {f32({2, 3}), f32({4, 5})}), Error);
  EXPECT_THROW(infer_type("MatMul", {f32({2, 2, 3}), f32({3, 3, 5})}), Error);
  EXPECT_THROW(infer_type("MatMul", {f32({2, 3}), Type::tensor(DType::Float64, Shape{3, 5})}),
               Error);
}

TEST(GemmSchema, TransposesAndChecksC) {
  EXPECT_EQ(infer_type("Gemm", {f32({Dim("N"), 2048}), f32({1000, 2048}), f32({1000})},
                       {Attribute::make_int("transB", 1)})
                .to_string(),
            "float[N,1000]");
  EXPECT_EQ(infer_type("Gemm", {f32({4, 3}), f32({4, 5})}, {Attribute::make_int("transA", 1)})
                .to_string(),
            "float[3,5]");
  EXPECT_THROW(infer_type("Gemm", {f32({3, 4}), f32({4, 5}), f32({2, 5})}), Error);
  EXPECT_THROW(infer_type("Gemm", {f32({3, 4}), f32({5, 4})}), Error);
}

TEST(QuantizedMatMulSchema, OutputTypes) {
  Type a = Type::tensor(DType::UInt8, Shape{Dim("M"), 8});
  Type b = Type::tensor(DType::Int8, Shape{8, 4});
  EXPECT_EQ(infer_type("MatMulInteger", {a, b}).to_string(), "int32[M,4]");
  Type s = Type::tensor(DType::Float32, Shape{});
  EXPECT_EQ(infer_type("QLinearMatMul",
                       {a, s, Type::tensor(DType::UInt8, Shape{}), b, s,
                        Type::tensor(DType::Int8, Shape{}), s, Type::tensor(DType::Int8, Shape{})})
                .to_string(),
            "int8[M,4]");
}

TEST(EinsumSchema, Equations) {
  auto eq = [](const char* e) {
    return std::vector<Attribute>{Attribute::make_string("equation", e)};
  };
  EXPECT_EQ(infer_type("Einsum", {f32({Dim("B"), 3, 4}), f32({Dim("B"), 4, 5})}, eq("bij,bjk->bik"))
                .to_string(),
            "float[B,3,5]");
  EXPECT_EQ(infer_type("Einsum", {f32({3, 4}), f32({4, 5})}, eq("ij,jk")).to_string(),
            "float[3,5]");
  EXPECT_EQ(infer_type("Einsum", {f32({4, 4})}, eq("ii")).to_string(), "float[]");
  EXPECT_EQ(infer_type("Einsum", {f32({2, 7, 3, 4}), f32({1, 4, 5})}, eq("...ij,...jk->...ik"))
                .to_string(),
            "float[2,7,3,5]");
  EXPECT_EQ(infer_type("Einsum", {f32({3, 2})}, eq("ba")).to_string(), "float[2,3]");
  EXPECT_THROW(infer_type("Einsum", {f32({3, 4})}, eq("ijk->i")), Error);
  EXPECT_THROW(infer_type("Einsum", {f32({3, 4}), f32({5, 6})}, eq("ij,jk->ik")), Error);
  EXPECT_THROW(infer_type("Einsum", {f32({3, 4})}, eq("ij->ix")), Error);
}

TEST(DetSchema, DropsMatrixDims) {
  EXPECT_EQ(infer_type("Det", {f32({Dim("B"), 3, 3})}).to_string(), "float[B]");
  EXPECT_EQ(infer_type("Det", {f32({3, 3})}).to_string(), "float[]");
  EXPECT_THROW(infer_type("Det", {f32({3, 4})}), Error);
}

}  // namespace
}  // namespace switchyard::testing
