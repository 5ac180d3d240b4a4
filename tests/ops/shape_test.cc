// Symbolic shape inference of the shape family.
#include <gtest/gtest.h>

#include <limits>

#include "ir/check.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

const Type kBSD = Type::tensor(DType::Float32, Shape{sym("N"), sym("seq"), 768});
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(ShapeInference, ConstantsAndQueries) {
  ir::Tensor v(DType::Int32, {2, 3});
  EXPECT_EQ(infer1("Constant", {}, {Attribute::make_tensor("value", v)}), "int32[2,3]");
  ir::Tensor one(DType::Int8, {1});
  EXPECT_EQ(
      infer1("ConstantOfShape", {int64_tensor({4, 0})}, {Attribute::make_tensor("value", one)}),
      "int8[4,0]");
  EXPECT_EQ(infer1("ConstantOfShape", {Type::tensor(DType::Int64, Shape{3})}), "float[?,?,?]");
  EXPECT_EQ(infer1("Shape", {kBSD}), "int64[3]");
  EXPECT_EQ(infer1("Shape", {kBSD}, {Attribute::make_int("start", -2)}), "int64[2]");
  EXPECT_EQ(
      infer1("Shape", {kBSD}, {Attribute::make_int("start", 2), Attribute::make_int("end", 1)}),
      "int64[0]");
  EXPECT_EQ(infer1("Size", {kBSD}), "int64[]");
  EXPECT_EQ(infer1("Identity", {kBSD}), kBSD.to_string());
  Type seq = Type::sequence(Type::tensor(DType::Float32, Shape{sym("N")}));
  EXPECT_EQ(infer1("Identity", {seq}), "seq(float[N])");
}

TEST(ShapeInference, ReshapeKeepsSymbols) {
  EXPECT_EQ(infer1("Reshape", {kBSD, int64_tensor({0, 0, 12, 64})}), "float[N,seq,12,64]");
  EXPECT_EQ(infer1("Reshape", {kBSD, int64_tensor({0, -1})}), "float[N,?]");
  EXPECT_EQ(infer1("Reshape", {kBSD, int64_tensor({-1, 768})}), "float[?,768]");
  EXPECT_EQ(infer1("Reshape", {kBSD, int64_tensor({0, 0, -1, 64})}), "float[N,seq,12,64]");
  Type x = Type::tensor(DType::Float16, Shape{sym("N"), 3, 4});
  EXPECT_EQ(infer1("Reshape", {x, int64_tensor({-1, 12})}), "float16[N,12]");
  EXPECT_EQ(infer1("Reshape", {x, int64_tensor({0, -1})}), "float16[N,12]");
  EXPECT_EQ(infer1("Reshape", {Type::tensor(DType::Int8, Shape{2, 6}), int64_tensor({3, -1})}),
            "int8[3,4]");
  EXPECT_EQ(infer1("Reshape", {x, Type::tensor(DType::Int64, Shape{2})}), "float16[?,?]");
  expect_invalid("Reshape", {Type::tensor(DType::Float32, Shape{2, 6}), int64_tensor({5, -1})}, {},
                 "cannot reshape");
  expect_invalid("Reshape", {Type::tensor(DType::Float32, Shape{2, 6}), int64_tensor({5, 2})}, {},
                 "cannot reshape");
  expect_invalid("Reshape", {x, int64_tensor({-1, -1})}, {}, "more than one -1");
}

TEST(ShapeInference, FlattenSqueezeUnsqueeze) {
  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 1, 3, 4});
  EXPECT_EQ(infer1("Flatten", {x}), "float[N,12]");
  EXPECT_EQ(infer1("Flatten", {x}, {Attribute::make_int("axis", 2)}), "float[N,12]");
  EXPECT_EQ(infer1("Flatten", {x}, {Attribute::make_int("axis", 3)}), "float[?,4]");
  EXPECT_EQ(infer1("Flatten", {x}, {Attribute::make_int("axis", 0)}), "float[1,?]");
  EXPECT_EQ(infer1("Squeeze", {x, int64_tensor({1})}), "float[N,3,4]");
  EXPECT_EQ(infer1("Squeeze", {x}), "float[...]");  // N might be 1
  EXPECT_EQ(infer1("Squeeze", {Type::tensor(DType::Float32, Shape{1, 3, 1})}), "float[3]");
  EXPECT_EQ(infer1("Unsqueeze", {x, int64_tensor({0, -1})}), "float[1,N,1,3,4,1]");
  EXPECT_EQ(infer1("Unsqueeze", {x, Type::tensor(DType::Int64, Shape{2})}), "float[?,?,?,?,?,?]");
  // Exporters write scalar axes; they count as one axis.
  EXPECT_EQ(infer1("Unsqueeze", {x, Type::tensor(DType::Int64, Shape{})}), "float[?,?,?,?,?]");
  expect_invalid("Squeeze", {x, int64_tensor({2})}, {}, "cannot squeeze axis 2");
  expect_invalid("Unsqueeze", {x, int64_tensor({9})}, {}, "out of range");
}

TEST(ShapeInference, TransposeConcatSplit) {
  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 3, sym("H"), sym("W")});
  EXPECT_EQ(infer1("Transpose", {x}, {Attribute::make_ints("perm", {0, 2, 3, 1})}),
            "float[N,H,W,3]");
  EXPECT_EQ(infer1("Transpose", {x}), "float[W,H,3,N]");
  expect_invalid("Transpose", {x}, {Attribute::make_ints("perm", {0, 1, 1, 2})}, "permutation");

  Type a = Type::tensor(DType::Float32, Shape{sym("N"), 3});
  Type b = Type::tensor(DType::Float32, Shape{sym("N"), 5});
  EXPECT_EQ(infer1("Concat", {a, b}, {Attribute::make_int("axis", -1)}), "float[N,8]");
  Type m = Type::tensor(DType::Float32, Shape{sym("M"), 3});
  EXPECT_EQ(infer1("Concat", {a, m}, {Attribute::make_int("axis", 0)}), "float[?,3]");
  Type empty = Type::tensor(DType::Float32, Shape{0, 3});
  EXPECT_EQ(infer1("Concat", {a, empty}, {Attribute::make_int("axis", 0)}), "float[N,3]");
  Type c = Type::tensor(DType::Float32, Shape{Dim(), 3});
  EXPECT_EQ(infer1("Concat", {c, b}, {Attribute::make_int("axis", 1)}), "float[N,8]");
  expect_invalid("Concat", {a, Type::tensor(DType::Int32, Shape{sym("N"), 3})},
                 {Attribute::make_int("axis", 0)}, "dtype");
  expect_invalid("Concat", {a, Type::tensor(DType::Float32, Shape{2, 4})},
                 {Attribute::make_int("axis", 0)}, "dim 1");

  Type s = Type::tensor(DType::Int32, Shape{sym("N"), 10});
  auto parts = infer_op("Split", {s, int64_tensor({3, 7})}, {Attribute::make_int("axis", 1)}, 2);
  EXPECT_EQ(parts[0].to_string(), "int32[N,3]");
  EXPECT_EQ(parts[1].to_string(), "int32[N,7]");
  parts = infer_op("Split", {s},
                   {Attribute::make_int("axis", 1), Attribute::make_int("num_outputs", 3)}, 3);
  EXPECT_EQ(parts[0].to_string(), "int32[N,4]");
  EXPECT_EQ(parts[2].to_string(), "int32[N,2]");
  parts = infer_op("Split", {s}, {}, 2);
  EXPECT_EQ(parts[0].to_string(), "int32[?,10]");
  expect_invalid("Split", {s, int64_tensor({3, 3})}, {Attribute::make_int("axis", 1)}, "sums to",
                 2);
}

TEST(ShapeInference, SliceExpandTilePad) {
  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 10, sym("S")});
  EXPECT_EQ(infer1("Slice", {x, int64_tensor({0, 2}), int64_tensor({kMax, 8})}), "float[N,6,S]");
  EXPECT_EQ(infer1("Slice", {x, int64_tensor({-1, 0}), int64_tensor({-kMax, kMax}),
                             int64_tensor({1, 2}), int64_tensor({-1, 1})}),
            "float[N,10,S]");
  EXPECT_EQ(infer1("Slice", {x, int64_tensor({9, 1}), int64_tensor({-100, 2}), int64_tensor({1, 0}),
                             int64_tensor({-3, 1})}),
            "float[?,4,S]");
  EXPECT_EQ(infer1("Slice", {x, int64_tensor({1}), int64_tensor({kMax}), int64_tensor({-1})}),
            "float[N,10,?]");
  EXPECT_EQ(infer1("Slice", {x, Type::tensor(DType::Int64, Shape{1}), int64_tensor({5})}),
            "float[?,10,S]");
  EXPECT_EQ(infer1("Slice",
                   {x, int64_tensor({0}), int64_tensor({1}), Type::tensor(DType::Int64, Shape{1})}),
            "float[?,?,?]");
  expect_invalid("Slice",
                 {x, int64_tensor({0}), int64_tensor({1}), int64_tensor({0}), int64_tensor({0})},
                 {}, "zero");

  Type e = Type::tensor(DType::Float32, Shape{sym("N"), 1, 4});
  EXPECT_EQ(infer1("Expand", {e, int64_tensor({1, 3, 1})}), "float[N,3,4]");
  EXPECT_EQ(infer1("Expand", {e, int64_tensor({2, 1, 1, 1})}), "float[2,N,1,4]");
  EXPECT_EQ(infer1("Expand", {e, Type::tensor(DType::Int64, Shape{4})}), "float[?,?,?,4]");
  expect_invalid("Expand", {e, int64_tensor({3, 5})}, {}, "broadcast");

  EXPECT_EQ(infer1("Tile", {e, int64_tensor({1, 3, 2})}), "float[N,3,8]");
  EXPECT_EQ(infer1("Tile", {e, int64_tensor({2, 1, 1})}), "float[?,1,4]");

  Type img = Type::tensor(DType::Float32, Shape{sym("N"), 3, sym("H"), 8});
  EXPECT_EQ(infer1("Pad", {img, int64_tensor({0, 0, 1, 1, 0, 0, 1, 2})}), "float[N,3,?,11]");
  EXPECT_EQ(infer1("Pad", {img, int64_tensor({1, -1}), nullptr, int64_tensor({2})}),
            "float[N,3,H,8]");
  EXPECT_EQ(infer1("Pad", {img, int64_tensor({2, 1}), nullptr, int64_tensor({-1})},
                   {Attribute::make_string("mode", "reflect")}),
            "float[N,3,H,11]");
  expect_invalid("Pad", {img, int64_tensor({1, 1})}, {}, "pads has 2 values");
  expect_invalid("Pad", {img, int64_tensor({0, 0, 0, 0, 0, 0, 0, 0})},
                 {Attribute::make_string("mode", "mirror")}, "mode 'mirror'");
}

TEST(ShapeInference, RangeEyeTriluAndBlocks) {
  auto scalar = [](double v) {
    ir::Tensor t(DType::Float32, {});
    *t.data<float>() = static_cast<float>(v);
    return t;
  };
  EXPECT_EQ(infer1("Range", {scalar(1), scalar(2.1), scalar(0.25)}), "float[5]");
  EXPECT_EQ(
      infer1("Range", {Type::tensor(DType::Int32, Shape{}), Type::tensor(DType::Int32, Shape{}),
                       Type::tensor(DType::Int32, Shape{})}),
      "int32[?]");
  Type m = Type::tensor(DType::Int32, Shape{sym("R"), 5});
  EXPECT_EQ(infer1("EyeLike", {m}, {Attribute::make_int("dtype", 10)}), "float16[R,5]");
  EXPECT_EQ(infer1("Trilu", {m}), "int32[R,5]");
  expect_invalid("Trilu", {Type::tensor(DType::Float32, Shape{3})}, {}, "rank >= 2");

  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 8, 3, sym("W")});
  EXPECT_EQ(infer1("DepthToSpace", {x}, {Attribute::make_int("blocksize", 2)}), "float[N,2,6,?]");
  Type y = Type::tensor(DType::Float32, Shape{sym("N"), 3, 4, 6});
  EXPECT_EQ(infer1("SpaceToDepth", {y}, {Attribute::make_int("blocksize", 2)}), "float[N,12,2,3]");
  expect_invalid("SpaceToDepth", {y}, {Attribute::make_int("blocksize", 4)}, "divisible");
  expect_invalid("DepthToSpace", {x},
                 {Attribute::make_int("blocksize", 2), Attribute::make_string("mode", "XYZ")},
                 "mode 'XYZ'");

  Type seq = Type::tensor(DType::Float32, Shape{sym("T"), sym("B"), 4});
  EXPECT_EQ(infer1("ReverseSequence", {seq, Type::tensor(DType::Int64, Shape{sym("B")})}),
            "float[T,B,4]");
  EXPECT_EQ(infer1("CenterCropPad", {seq, int64_tensor({6})}, {Attribute::make_ints("axes", {0})}),
            "float[6,B,4]");
  EXPECT_EQ(infer1("CenterCropPad", {seq, Type::tensor(DType::Int64, Shape{3})}), "float[?,?,?]");
}

}  // namespace
}  // namespace switchyard::testing
