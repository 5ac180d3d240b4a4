// Symbolic shape inference of the gather_scatter family.
#include <gtest/gtest.h>

#include <limits>

#include "ir/check.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

TEST(GatherScatterInference, GatherFamily) {
  Type table = Type::tensor(DType::Float16, Shape{sym("V"), 64});
  Type ids = Type::tensor(DType::Int64, Shape{sym("N"), sym("S")});
  EXPECT_EQ(infer1("Gather", {table, ids}), "float16[N,S,64]");
  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 3, 4});
  EXPECT_EQ(
      infer1("Gather", {x, Type::tensor(DType::Int32, Shape{})}, {Attribute::make_int("axis", 1)}),
      "float[N,4]");
  EXPECT_EQ(infer1("Gather", {x, Type::tensor(DType::Int64, Shape{2, 5})},
                   {Attribute::make_int("axis", -1)}),
            "float[N,3,2,5]");
  expect_invalid("Gather", {x, Type::tensor(DType::Float32, Shape{2})}, {}, "dtype");
  expect_invalid("Gather", {x, ids}, {Attribute::make_int("axis", 3)}, "out of range");

  EXPECT_EQ(infer1("GatherElements", {x, Type::tensor(DType::Int64, Shape{sym("N"), 7, 4})},
                   {Attribute::make_int("axis", 1)}),
            "float[N,7,4]");
  expect_invalid("GatherElements", {x, Type::tensor(DType::Int64, Shape{2})}, {}, "rank");

  Type data = Type::tensor(DType::Int32, Shape{sym("N"), 4, 5});
  EXPECT_EQ(infer1("GatherND", {data, Type::tensor(DType::Int64, Shape{sym("N"), 2, 1})},
                   {Attribute::make_int("batch_dims", 1)}),
            "int32[N,2,5]");
  EXPECT_EQ(infer1("GatherND", {data, Type::tensor(DType::Int64, Shape{6, 3})}), "int32[6]");
  EXPECT_EQ(infer1("GatherND", {data, Type::tensor(DType::Int64, Shape{6, Dim()})}), "int32[...]");
  expect_invalid("GatherND", {data, Type::tensor(DType::Int64, Shape{6, 4})}, {}, "last dim");
}

TEST(GatherScatterInference, ScatterOneHotTopK) {
  Type data = Type::tensor(DType::Float32, Shape{sym("N"), 5});
  Type idx = Type::tensor(DType::Int64, Shape{sym("N"), 2});
  EXPECT_EQ(infer1("ScatterElements", {data, idx, Type::tensor(DType::Float32, Shape{sym("N"), 2})},
                   {Attribute::make_string("reduction", "max")}),
            "float[N,5]");
  expect_invalid("ScatterElements", {data, idx, Type::tensor(DType::Float32, Shape{sym("N"), 2})},
                 {Attribute::make_string("reduction", "avg")}, "reduction 'avg'");
  expect_invalid("ScatterElements", {data, idx, Type::tensor(DType::Int32, Shape{sym("N"), 2})}, {},
                 "dtype");
  EXPECT_EQ(infer1("ScatterND", {data, Type::tensor(DType::Int64, Shape{3, 1}),
                                 Type::tensor(DType::Float32, Shape{3, 5})}),
            "float[N,5]");
  expect_invalid(
      "ScatterND",
      {data, Type::tensor(DType::Int64, Shape{3, 1}), Type::tensor(DType::Float32, Shape{3})}, {},
      "updates have rank");

  ir::Tensor depth(DType::Int64, {});
  *depth.data<int64_t>() = 10;
  Type values = Type::tensor(DType::Int32, Shape{2});
  Type labels = Type::tensor(DType::Int64, Shape{sym("N")});
  EXPECT_EQ(infer1("OneHot", {labels, depth, values}), "int32[N,10]");
  EXPECT_EQ(infer1("OneHot", {labels, depth, values}, {Attribute::make_int("axis", 0)}),
            "int32[10,N]");
  EXPECT_EQ(infer1("OneHot", {labels, Type::tensor(DType::Int64, Shape{}), values}), "int32[N,?]");

  Type scores = Type::tensor(DType::Float16, Shape{sym("N"), 10});
  auto topk = infer_op("TopK", {scores, int64_tensor({3})}, {}, 2);
  EXPECT_EQ(topk[0].to_string(), "float16[N,3]");
  EXPECT_EQ(topk[1].to_string(), "int64[N,3]");
  topk = infer_op("TopK", {scores, Type::tensor(DType::Int64, Shape{1})},
                  {Attribute::make_int("axis", 0)}, 2);
  EXPECT_EQ(topk[0].to_string(), "float16[?,10]");
  expect_invalid("TopK", {scores, int64_tensor({11})}, {}, "exceeds", 2);
}

TEST(GatherScatterInference, DataDependentShapes) {
  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 3});
  EXPECT_EQ(infer1("NonZero", {x}), "int64[2,?]");
  Type cond = Type::tensor(DType::Bool, Shape{sym("K")});
  EXPECT_EQ(infer1("Compress", {x, cond}), "float[?]");
  EXPECT_EQ(infer1("Compress", {x, cond}, {Attribute::make_int("axis", 1)}), "float[N,?]");
  expect_invalid("Compress", {x, Type::tensor(DType::Int32, Shape{3})}, {}, "dtype");

  auto u = infer_op("Unique", {x}, {}, 4);
  EXPECT_EQ(u[0].to_string(), "float[?]");
  EXPECT_EQ(u[1].to_string(), "int64[?]");
  EXPECT_EQ(u[2].to_string(), "int64[?]");
  EXPECT_EQ(u[3].to_string(), "int64[?]");
  u = infer_op("Unique", {Type::tensor(DType::String, Shape{4, 3})},
               {Attribute::make_int("axis", 0)}, 3);
  EXPECT_EQ(u[0].to_string(), "string[?,3]");
  EXPECT_EQ(u[2].to_string(), "int64[4]");
}

}  // namespace
}  // namespace switchyard::testing
