// Symbolic shape inference of the conv family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(Shape s) { return Type::tensor(DType::Float32, std::move(s)); }

TEST(ConvSchema, PropagatesSymbolsAndComputesStaticDims) {
  Type x = f32({Dim("N"), 3, 224, 224});
  Type w = f32({64, 3, 7, 7});
  Type y = infer_type(
      "Conv", {x, w, f32({64})},
      {Attribute::make_ints("strides", {2, 2}), Attribute::make_ints("pads", {3, 3, 3, 3})});
  EXPECT_EQ(y.to_string(), "float[N,64,112,112]");
  // SAME with stride 1 keeps symbolic spatial dims; other strides make them unknown.
  Type xs = f32({Dim("N"), 8, Dim("H"), Dim("W")});
  EXPECT_EQ(infer_type("Conv", {xs, f32({16, 8, 3, 3})},
                       {Attribute::make_string("auto_pad", "SAME_UPPER")})
                .to_string(),
            "float[N,16,H,W]");
  EXPECT_EQ(infer_type("Conv", {xs, f32({16, 8, 1, 1})}).to_string(), "float[N,16,H,W]");
  EXPECT_EQ(infer_type("Conv", {xs, f32({16, 8, 3, 3})}).to_string(), "float[N,16,?,?]");
  EXPECT_EQ(infer_type("Conv", {f32({1, 4, 9}), f32({6, 2, 3})},
                       {Attribute::make_int("group", 2), Attribute::make_ints("dilations", {2})})
                .to_string(),
            "float[1,6,5]");
}

TEST(ConvSchema, RejectsMismatches) {
  EXPECT_THROW(infer_type("Conv", {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})}), Error);
  EXPECT_THROW(
      infer_type("Conv", {f32({1, 4, 8, 8}), f32({5, 2, 3, 3})}, {Attribute::make_int("group", 2)}),
      Error);
  EXPECT_THROW(infer_type("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                          {Attribute::make_ints("pads", {1, 1})}),
               Error);
  EXPECT_THROW(infer_type("Conv", {f32({1, 3, 8, 8}), f32({4, 3, 3, 3})},
                          {Attribute::make_string("auto_pad", "SAME")}),
               Error);
  EXPECT_THROW(infer_type("Conv", {f32({1, 3, 2, 2}), f32({4, 3, 3, 3})}), Error);
  EXPECT_THROW(
      infer_type("Conv", {Type::tensor(DType::Int32, Shape{1, 3, 8, 8}), f32({4, 3, 3, 3})}),
      Error);
  try {
    infer_type("Conv", {f32({1, 3, 8, 8}), f32({4, 2, 3, 3})});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
}

TEST(ConvTransposeSchema, OutputSizes) {
  Type x = f32({Dim("N"), 2, 3, 3});
  Type w = f32({2, 3, 3, 3});
  EXPECT_EQ(infer_type("ConvTranspose", {x, w}).to_string(), "float[N,3,5,5]");
  EXPECT_EQ(infer_type("ConvTranspose", {x, w},
                       {Attribute::make_ints("strides", {3, 2}),
                        Attribute::make_ints("pads", {1, 2, 1, 2}),
                        Attribute::make_ints("output_padding", {1, 1})})
                .to_string(),
            "float[N,3,8,4]");
  EXPECT_EQ(infer_type("ConvTranspose", {x, w},
                       {Attribute::make_ints("strides", {2, 2}),
                        Attribute::make_string("auto_pad", "SAME_UPPER")})
                .to_string(),
            "float[N,3,6,6]");
  EXPECT_EQ(
      infer_type("ConvTranspose", {x, f32({2, 2, 3, 3})},
                 {Attribute::make_ints("output_shape", {10, 8}), Attribute::make_int("group", 2)})
          .to_string(),
      "float[N,4,10,8]");
  EXPECT_THROW(infer_type("ConvTranspose", {x, f32({3, 3, 3, 3})}), Error);
}

TEST(QuantizedConvSchema, OutputTypes) {
  Type xq = Type::tensor(DType::UInt8, Shape{Dim("N"), 3, 8, 8});
  Type wq = Type::tensor(DType::Int8, Shape{4, 3, 3, 3});
  EXPECT_EQ(infer_type("ConvInteger", {xq, wq}).to_string(), "int32[N,4,6,6]");
  Type scalar = Type::tensor(DType::Float32, Shape{});
  EXPECT_EQ(infer_type("QLinearConv",
                       {xq, scalar, Type::tensor(DType::UInt8, Shape{}), wq,
                        Type::tensor(DType::Float32, Shape{4}), Type::tensor(DType::Int8, Shape{4}),
                        scalar, Type::tensor(DType::UInt8, Shape{})},
                       {Attribute::make_ints("pads", {1, 1, 1, 1})})
                .to_string(),
            "uint8[N,4,8,8]");
  EXPECT_THROW(infer_type("ConvInteger", {f32({1, 3, 8, 8}), wq}), Error);
}

}  // namespace
}  // namespace switchyard::testing
