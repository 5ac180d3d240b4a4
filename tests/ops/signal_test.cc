// Symbolic shape inference of DFT, STFT, the windows and MelWeightMatrix.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

Type tensor(DType dt, ir::Shape s) { return Type::tensor(dt, std::move(s)); }

const Type kUnknown{};

TEST(SignalSchemas, DftShapes) {
  Type x = tensor(DType::Float32, {Dim("b"), Dim("n"), 1});
  EXPECT_EQ(build_node("DFT", {x}, 1, {}).out(0), "float[b,n,2]");
  EXPECT_EQ(build_node("DFT", {x, tensor(DType::Int64, {})}, 1,
                       {Attribute::make_int("onesided", 1)}, {std::nullopt, int64_scalar(10)})
                .out(0),
            "float[b,6,2]");
  Type x4 = tensor(DType::Float16, {2, 7, Dim("c"), 2});
  EXPECT_EQ(build_node("DFT", {x4, kUnknown, tensor(DType::Int64, {})}, 1, {},
                       {std::nullopt, std::nullopt, int64_scalar(1)})
                .out(0),
            "float16[2,7,c,2]");
  EXPECT_EQ(build_node("DFT", {x4}, 1, {Attribute::make_int("axis", 0)}).out(0),
            "float16[2,7,c,2]");
  EXPECT_EQ(build_node("DFT", {x4, tensor(DType::Int64, {})}, 1, {}).out(0), "float16[2,7,?,2]");
  EXPECT_EQ(build_node("DFT", {x4, kUnknown, tensor(DType::Int64, {})}, 1, {}).out(0),
            "float16[?,?,?,2]");
  expect_fails_naming_node(
      [&] { build_node("DFT", {x4}, 1, {Attribute::make_int("onesided", 1)}); });
  expect_fails_naming_node([&] { build_node("DFT", {x4}, 1, {Attribute::make_int("axis", 3)}); });
  expect_fails_naming_node([&] { build_node("DFT", {tensor(DType::Int32, {2, 4, 1})}, 1, {}); });
}

TEST(SignalSchemas, StftShapes) {
  Type sig = tensor(DType::Float32, {Dim("b"), 128, 1});
  auto b = build_node("STFT", {sig, tensor(DType::Int64, {}), tensor(DType::Float32, {16})}, 1, {},
                      {std::nullopt, int64_scalar(8)});
  EXPECT_EQ(b.out(0), "float[b,15,9,2]");
  auto full =
      build_node("STFT", {sig, tensor(DType::Int64, {}), kUnknown, tensor(DType::Int64, {})}, 1,
                 {Attribute::make_int("onesided", 0)},
                 {std::nullopt, std::nullopt, std::nullopt, int64_scalar(16)});
  EXPECT_EQ(full.out(0), "float[b,?,16,2]");
  expect_fails_naming_node([&] { build_node("STFT", {sig, tensor(DType::Int64, {})}, 1, {}); });
}

TEST(SignalSchemas, WindowsAndMel) {
  EXPECT_EQ(build_node("HannWindow", {tensor(DType::Int32, {})}, 1, {}).out(0), "float[?]");
  EXPECT_EQ(build_node("BlackmanWindow", {tensor(DType::Int64, {})}, 1,
                       {Attribute::make_int("output_datatype", 11)}, {int64_scalar(12)})
                .out(0),
            "double[12]");
  expect_fails_naming_node([&] {
    build_node("HammingWindow", {tensor(DType::Int64, {})}, 1,
               {Attribute::make_int("output_datatype", 8)});
  });
  Type i = tensor(DType::Int64, {});
  Type f = tensor(DType::Float32, {});
  auto mel =
      build_node("MelWeightMatrix", {i, i, i, f, f}, 1, {},
                 {int64_scalar(8), int64_scalar(16), std::nullopt, std::nullopt, std::nullopt});
  EXPECT_EQ(mel.out(0), "float[9,8]");
}

}  // namespace
}  // namespace switchyard::testing
