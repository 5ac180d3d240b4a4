// Symbolic shape inference of the pool family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(Shape s) { return Type::tensor(DType::Float32, std::move(s)); }

TEST(PoolSchema, WindowPools) {
  auto k = [](std::vector<int64_t> v) {
    return Attribute::make_ints("kernel_shape", std::move(v));
  };
  auto t = infer_op("MaxPool", {f32({Dim("N"), 64, 112, 112})},
                    {k({3, 3}), Attribute::make_ints("strides", {2, 2}),
                     Attribute::make_ints("pads", {1, 1, 1, 1})},
                    2);
  EXPECT_EQ(t[0].to_string(), "float[N,64,56,56]");
  EXPECT_EQ(t[1].to_string(), "int64[N,64,56,56]");
  EXPECT_EQ(infer_op("AveragePool", {f32({1, 1, 4, 4})},
                     {k({3, 3}), Attribute::make_ints("strides", {2, 2}),
                      Attribute::make_int("ceil_mode", 1)})[0]
                .to_string(),
            "float[1,1,2,2]");
  EXPECT_EQ(infer_op("AveragePool", {f32({1, 1, Dim("H"), 5})},
                     {k({3, 3}), Attribute::make_string("auto_pad", "SAME_UPPER")})[0]
                .to_string(),
            "float[1,1,H,5]");
  EXPECT_EQ(
      infer_op("LpPool", {f32({1, 2, 9})}, {k({3}), Attribute::make_ints("dilations", {2})})[0]
          .to_string(),
      "float[1,2,5]");
  EXPECT_THROW(infer_op("MaxPool", {f32({1, 1, 4, 4})}, {k({3})}), Error);
  EXPECT_THROW(infer_op("MaxPool", {f32({1, 1, 4, 4})}), Error);
  EXPECT_THROW(infer_op("AveragePool", {Type::tensor(DType::Int8, Shape{1, 1, 4, 4})}, {k({2, 2})}),
               Error);
  EXPECT_THROW(infer_op("MaxPool", {f32({1, 1, 2, 2})}, {k({3, 3})}), Error);
}

TEST(PoolSchema, GlobalAndRoiPools) {
  EXPECT_EQ(infer_op("GlobalAveragePool", {f32({Dim("N"), 2048, 7, 7})})[0].to_string(),
            "float[N,2048,1,1]");
  EXPECT_EQ(infer_op("GlobalMaxPool", {f32({2, 3, 5})})[0].to_string(), "float[2,3,1]");
  EXPECT_EQ(
      infer_op("MaxUnpool", {f32({1, 2, 3, 3}), Type::tensor(DType::Int64, Shape{1, 2, 3, 3})},
               {Attribute::make_ints("kernel_shape", {2, 2}),
                Attribute::make_ints("strides", {2, 2})})[0]
          .to_string(),
      "float[1,2,6,6]");
  EXPECT_EQ(infer_op("MaxRoiPool", {f32({1, 8, 20, 20}), f32({Dim("R"), 5})},
                     {Attribute::make_ints("pooled_shape", {3, 4})})[0]
                .to_string(),
            "float[R,8,3,4]");
  EXPECT_EQ(
      infer_op(
          "RoiAlign",
          {f32({1, 8, 20, 20}), f32({Dim("R"), 4}), Type::tensor(DType::Int64, Shape{Dim("R")})},
          {Attribute::make_int("output_height", 5), Attribute::make_int("output_width", 6)})[0]
          .to_string(),
      "float[R,8,5,6]");
  EXPECT_THROW(
      infer_op("RoiAlign", {f32({1, 8, 20, 20}), f32({2, 4}), Type::tensor(DType::Int64, Shape{2})},
               {Attribute::make_string("mode", "median")}),
      Error);
}

}  // namespace
}  // namespace switchyard::testing
