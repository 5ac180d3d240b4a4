// Symbolic type inference of the elementwise family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

Type t(DType d, Shape s) { return Type::tensor(d, std::move(s)); }

TEST(ElementwiseInference, UnaryKeepsTypeAndSymbols) {
  Type x = t(DType::Float32, {sym("N"), 3, Dim()});
  EXPECT_EQ(infer1("Relu", {x}), "float[N,3,?]");
  EXPECT_EQ(infer1("Gelu", {x}), "float[N,3,?]");
  EXPECT_EQ(infer1("IsNaN", {x}), "bool[N,3,?]");
  EXPECT_EQ(infer1("Abs", {t(DType::Int8, {})}), "int8[]");
  EXPECT_EQ(infer1("Exp", {Type::tensor(DType::Float16)}),
            Type::tensor(DType::Float16).to_string());
  EXPECT_THROW(infer1("Exp", {t(DType::Int32, {2})}), Error);
  EXPECT_THROW(infer1("Not", {t(DType::Float32, {2})}), Error);
  EXPECT_THROW(infer1("Gelu", {x}, {Attribute::make_string("approximate", "fast")}), Error);
}

TEST(ElementwiseInference, BinaryBroadcastsSymbolicShapes) {
  Type a = t(DType::Float32, {sym("B"), sym("S"), 64});
  EXPECT_EQ(infer1("Add", {a, t(DType::Float32, {64})}), "float[B,S,64]");
  EXPECT_EQ(infer1("Mul", {a, t(DType::Float32, {sym("B"), 1, 1})}), "float[B,S,64]");
  EXPECT_EQ(infer1("Sub", {t(DType::Float32, {3, 1}), t(DType::Float32, {1, 4})}), "float[3,4]");
  EXPECT_EQ(infer1("Div", {t(DType::Float32, {1, sym("K")}), t(DType::Float32, {5, 1})}),
            "float[5,K]");
  EXPECT_EQ(infer1("Less", {a, t(DType::Float32, {})}), "bool[B,S,64]");
  EXPECT_EQ(infer1("Equal", {t(DType::String, {2}), t(DType::String, {2})}), "bool[2]");
  EXPECT_EQ(infer1("And", {t(DType::Bool, {2, 1}), t(DType::Bool, {3})}), "bool[2,3]");
  // Unknown rank stays unknown.
  EXPECT_EQ(infer1("Add", {Type::tensor(DType::Float32), t(DType::Float32, {2})}),
            Type::tensor(DType::Float32).to_string());
  EXPECT_THROW(infer1("Add", {t(DType::Float32, {3}), t(DType::Float32, {4})}), Error);
  EXPECT_THROW(infer1("Add", {t(DType::Float32, {3}), t(DType::Float16, {3})}), Error);
  EXPECT_THROW(infer1("Greater", {t(DType::Bool, {3}), t(DType::Bool, {3})}), Error);
}

TEST(ElementwiseInference, PowModBitShift) {
  EXPECT_EQ(infer1("Pow", {t(DType::Int32, {sym("N")}), t(DType::Float32, {1})}), "int32[N]");
  EXPECT_EQ(infer1("Pow", {t(DType::Float16, {2, 3}), t(DType::Int64, {3})}), "float16[2,3]");
  EXPECT_THROW(infer1("Pow", {t(DType::UInt8, {2}), t(DType::UInt8, {2})}), Error);
  EXPECT_EQ(infer1("Mod", {t(DType::Int32, {4}), t(DType::Int32, {4})}), "int32[4]");
  EXPECT_THROW(infer1("Mod", {t(DType::Float32, {4}), t(DType::Float32, {4})}), Error);
  EXPECT_EQ(infer1("Mod", {t(DType::Float32, {4}), t(DType::Float32, {4})},
                   {Attribute::make_int("fmod", 1)}),
            "float[4]");
  EXPECT_EQ(infer1("BitShift", {t(DType::UInt16, {4}), t(DType::UInt16, {})},
                   {Attribute::make_string("direction", "LEFT")}),
            "uint16[4]");
  EXPECT_THROW(infer1("BitShift", {t(DType::UInt16, {4}), t(DType::UInt16, {})}), Error);
  EXPECT_THROW(infer1("BitShift", {t(DType::Int16, {4}), t(DType::Int16, {})},
                      {Attribute::make_string("direction", "LEFT")}),
               Error);
}

TEST(ElementwiseInference, VariadicWhereClipPRelu) {
  EXPECT_EQ(infer1("Sum", {t(DType::Float32, {sym("N"), 1}), t(DType::Float32, {4}),
                           t(DType::Float32, {})}),
            "float[N,4]");
  EXPECT_EQ(infer1("Max", {t(DType::Int64, {2, 3})}), "int64[2,3]");
  EXPECT_THROW(infer1("Mean", {t(DType::Int64, {2})}), Error);
  EXPECT_EQ(
      infer1("Where", {t(DType::Bool, {sym("N"), 1}), t(DType::Int8, {5}), t(DType::Int8, {})}),
      "int8[N,5]");
  EXPECT_THROW(infer1("Where", {t(DType::Int8, {1}), t(DType::Int8, {1}), t(DType::Int8, {1})}),
               Error);
  EXPECT_EQ(
      infer1("Clip", {t(DType::Float32, {sym("N")}), t(DType::Float32, {}), t(DType::Float32, {})}),
      "float[N]");
  EXPECT_EQ(infer1("Clip", {t(DType::Int8, {2}), Type(), t(DType::Int8, {})}), "int8[2]");
  EXPECT_THROW(infer1("Clip", {t(DType::Float32, {2}), t(DType::Float32, {2})}), Error);
  EXPECT_THROW(infer1("Clip", {t(DType::Float32, {2}), t(DType::Float16, {})}), Error);
  EXPECT_EQ(infer1("PRelu", {t(DType::Float32, {sym("N"), 3, 8}), t(DType::Float32, {3, 1})}),
            "float[N,3,8]");
  EXPECT_THROW(infer1("PRelu", {t(DType::Float32, {3}), t(DType::Float32, {2, 3})}), Error);
  EXPECT_THROW(infer1("PRelu", {t(DType::Float32, {3}), t(DType::Float32, {4})}), Error);
}

TEST(ElementwiseInference, CastAndCastLike) {
  Type x = t(DType::Float32, {sym("N"), 2});
  EXPECT_EQ(infer1("Cast", {x}, {Attribute::make_int("to", 10)}), "float16[N,2]");
  EXPECT_EQ(infer1("Cast", {x}, {Attribute::make_int("to", 8)}), "string[N,2]");
  EXPECT_EQ(infer1("CastLike", {x, t(DType::Int64, {1})}), "int64[N,2]");
  EXPECT_THROW(infer1("Cast", {x}), Error);
  EXPECT_THROW(infer1("Cast", {x}, {Attribute::make_int("to", 99)}), Error);
  EXPECT_THROW(infer1("Cast", {x}, {Attribute::make_string("to", "float")}), Error);
}

}  // namespace
}  // namespace switchyard::testing
