// Symbolic shape inference of Resize, GridSample, NonMaxSuppression and Col2Im.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

Type tensor(DType dt, ir::Shape s) { return Type::tensor(dt, std::move(s)); }

ir::Tensor f32s(std::vector<float> v) {
  ir::Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

const Type kUnknown{};

TEST(ImageSchemas, ResizeWithConstantScalesAndSizes) {
  Type x = tensor(DType::Float32, {Dim("n"), 3, 10, Dim("w")});
  auto s = build_node("Resize", {x, kUnknown, tensor(DType::Float32, {4})}, 1,
                      {Attribute::make_string("mode", "linear")},
                      {std::nullopt, std::nullopt, f32s({1, 1, 1.5f, 2})});
  EXPECT_EQ(s.out(0), "float[n,3,15,?]");
  auto z = build_node("Resize", {x, kUnknown, kUnknown, tensor(DType::Int64, {2})}, 1,
                      {Attribute::make_ints("axes", {-1, 2})},
                      {std::nullopt, std::nullopt, std::nullopt, int64_tensor({7, 4})});
  EXPECT_EQ(z.out(0), "float[n,3,4,7]");
  auto keep = build_node(
      "Resize", {tensor(DType::UInt8, {1, 3, 4, 8}), kUnknown, kUnknown, tensor(DType::Int64, {2})},
      1,
      {Attribute::make_ints("axes", {2, 3}),
       Attribute::make_string("keep_aspect_ratio_policy", "not_larger")},
      {std::nullopt, std::nullopt, std::nullopt, int64_tensor({6, 6})});
  EXPECT_EQ(keep.out(0), "uint8[1,3,3,6]");
  auto dynamic = build_node("Resize", {x, kUnknown, tensor(DType::Float32, {4})}, 1, {});
  EXPECT_EQ(dynamic.out(0), "float[?,?,?,?]");
}

TEST(ImageSchemas, ResizeRejectsBadNodes) {
  Type x = tensor(DType::Float32, {1, 3, 4, 4});
  Type scales = tensor(DType::Float32, {4});
  expect_fails_naming_node([&] {
    build_node("Resize", {x, kUnknown, scales}, 1, {Attribute::make_string("mode", "area")});
  });
  expect_fails_naming_node([&] {
    build_node("Resize", {x, kUnknown, scales}, 1,
               {Attribute::make_string("coordinate_transformation_mode", "center")});
  });
  expect_fails_naming_node([&] { build_node("Resize", {x}, 1, {}); });
  expect_fails_naming_node([&] {
    build_node("Resize", {x, kUnknown, scales, tensor(DType::Int64, {4})}, 1, {},
               {std::nullopt, std::nullopt, f32s({1, 1, 2, 2}), int64_tensor({1, 3, 8, 8})});
  });
  expect_fails_naming_node([&] {
    build_node("Resize", {tensor(DType::String, {2}), kUnknown, tensor(DType::Float32, {1})}, 1,
               {Attribute::make_string("mode", "linear")});
  });
  expect_fails_naming_node([&] {
    build_node("Resize", {x, kUnknown, scales}, 1, {}, {std::nullopt, std::nullopt, f32s({1, 2})});
  });
}

TEST(ImageSchemas, GridSampleShapes) {
  auto b = build_node("GridSample",
                      {tensor(DType::Float32, {Dim("n"), 3, 8, 8}),
                       tensor(DType::Float32, {Dim("n"), Dim("h"), 5, 2})},
                      1, {Attribute::make_string("mode", "cubic")});
  EXPECT_EQ(b.out(0), "float[n,3,h,5]");
  expect_fails_naming_node([&] {
    build_node("GridSample",
               {tensor(DType::Float32, {1, 3, 8, 8}), tensor(DType::Float32, {1, 4, 5, 3})}, 1, {});
  });
  expect_fails_naming_node([&] {
    build_node("GridSample",
               {tensor(DType::Float32, {1, 3, 8, 8}), tensor(DType::Float32, {1, 4, 5, 2})}, 1,
               {Attribute::make_string("padding_mode", "wrap")});
  });
}

TEST(ImageSchemas, NonMaxSuppressionAndCol2Im) {
  auto nms = build_node("NonMaxSuppression",
                        {tensor(DType::Float32, {Dim("b"), Dim("k"), 4}),
                         tensor(DType::Float32, {Dim("b"), 2, Dim("k")})},
                        1, {});
  EXPECT_EQ(nms.out(0), "int64[?,3]");
  expect_fails_naming_node([&] {
    build_node("NonMaxSuppression",
               {tensor(DType::Float32, {1, 5, 3}), tensor(DType::Float32, {1, 2, 5})}, 1, {});
  });
  auto col = build_node("Col2Im",
                        {tensor(DType::Float32, {Dim("n"), 12, Dim("l")}),
                         tensor(DType::Int64, {2}), tensor(DType::Int64, {2})},
                        1, {}, {std::nullopt, int64_tensor({5, 6}), int64_tensor({2, 3})});
  EXPECT_EQ(col.out(0), "float[n,2,5,6]");
  auto unknown = build_node(
      "Col2Im",
      {tensor(DType::Float32, {1, 12, 9}), tensor(DType::Int64, {3}), tensor(DType::Int64, {3})}, 1,
      {});
  EXPECT_EQ(unknown.out(0), "float[1,?,?,?,?]");
  expect_fails_naming_node([&] {
    build_node(
        "Col2Im",
        {tensor(DType::Float32, {1, 10, 9}), tensor(DType::Int64, {2}), tensor(DType::Int64, {2})},
        1, {}, {std::nullopt, int64_tensor({5, 6}), int64_tensor({2, 3})});
  });
}

}  // namespace
}  // namespace switchyard::testing
