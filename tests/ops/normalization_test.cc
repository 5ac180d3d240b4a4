// Symbolic shape inference of the normalization family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(ir::Shape s) { return Type::tensor(DType::Float32, std::move(s)); }
Type f16(ir::Shape s) { return Type::tensor(DType::Float16, std::move(s)); }
std::string out_type(const InferredNode& b, size_t i = 0) { return b.out(i); }

TEST(NormalizationSchemas, LayerNormStatsShapes) {
  Type x = f16({Dim("batch"), Dim("seq"), 768});
  auto b = infer_node("LayerNormalization", {x, f16({768}), f16({768})}, {}, 3);
  EXPECT_EQ(out_type(b, 0), "float16[batch,seq,768]");
  EXPECT_EQ(out_type(b, 1), "float[batch,seq,1]");
  EXPECT_EQ(out_type(b, 2), "float[batch,seq,1]");
  auto d = infer_node("LayerNormalization", {x, f16({Dim("seq"), 768})},
                      {Attribute::make_int("axis", 1), Attribute::make_int("stash_type", 11)}, 2);
  EXPECT_EQ(out_type(d, 1), "double[batch,1,1]");
  EXPECT_THROW(infer_node("LayerNormalization", {x, f16({5})}, {}), Error);
  EXPECT_THROW(infer_node("LayerNormalization", {x, f32({768})}, {}), Error);
  EXPECT_THROW(infer_node("LayerNormalization", {x, f16({768})}, {Attribute::make_int("axis", 3)}),
               Error);
  EXPECT_THROW(
      infer_node("LayerNormalization", {x, f16({768})}, {Attribute::make_int("stash_type", 7)}),
      Error);
}

TEST(NormalizationSchemas, BatchNormAndChannelChecks) {
  Type x = f32({Dim("n"), 3, Dim("h"), Dim("w")});
  Type c3 = f32({3});
  auto b = infer_node("BatchNormalization", {x, c3, c3, c3, c3},
                      {Attribute::make_int("training_mode", 1)}, 3);
  EXPECT_EQ(out_type(b, 0), "float[n,3,h,w]");
  EXPECT_EQ(out_type(b, 1), "float[3]");
  EXPECT_THROW(infer_node("BatchNormalization", {x, f32({4}), c3, c3, c3}, {}), Error);
  EXPECT_THROW(infer_node("BatchNormalization", {x, c3, c3, c3, c3}, {}, 3), Error);
  EXPECT_THROW(infer_node("BatchNormalization", {f32({3}), c3, c3, c3, c3}, {}), Error);
  EXPECT_EQ(out_type(infer_node("InstanceNormalization", {x, c3, c3}, {})), "float[n,3,h,w]");
  EXPECT_THROW(infer_node("InstanceNormalization", {x, c3, f32({2})}, {}), Error);
  Type g = f32({Dim("n"), 6, 8});
  EXPECT_EQ(out_type(infer_node("GroupNormalization", {g, f32({6}), f32({6})},
                                {Attribute::make_int("num_groups", 3)})),
            "float[n,6,8]");
  EXPECT_THROW(infer_node("GroupNormalization", {g, f32({6}), f32({6})},
                          {Attribute::make_int("num_groups", 4)}),
               Error);
  EXPECT_THROW(infer_node("GroupNormalization", {g, f32({6}), f32({6})}, {}), Error);
}

TEST(NormalizationSchemas, SoftmaxFamilyAndOthers) {
  Type x = f32({Dim("b"), 12, Dim("s"), Dim("s")});
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    EXPECT_EQ(out_type(infer_node(op, {x}, {})), "float[b,12,s,s]");
    EXPECT_THROW(infer_node(op, {x}, {Attribute::make_int("axis", 4)}), Error);
    EXPECT_THROW(infer_node(op, {Type::tensor(DType::Int32, ir::Shape{3})}, {}), Error);
  }
  EXPECT_EQ(out_type(infer_node("LpNormalization", {x}, {Attribute::make_int("p", 1)})),
            "float[b,12,s,s]");
  EXPECT_THROW(infer_node("LpNormalization", {x}, {Attribute::make_int("p", 0)}), Error);
  EXPECT_EQ(out_type(infer_node("LRN", {x}, {Attribute::make_int("size", 3)})), "float[b,12,s,s]");
  EXPECT_THROW(infer_node("LRN", {x}, {}), Error);
  EXPECT_EQ(out_type(infer_node("MeanVarianceNormalization", {x}, {})), "float[b,12,s,s]");
  EXPECT_THROW(infer_node("MeanVarianceNormalization", {f32({2, 3})}, {}), Error);
}

TEST(NormalizationSchemas, Dropout) {
  Type x = f32({Dim("b"), 5});
  auto d = infer_node("Dropout", {x, f32({}), Type::tensor(DType::Bool, ir::Shape{})}, {}, 2);
  EXPECT_EQ(out_type(d, 0), "float[b,5]");
  EXPECT_EQ(out_type(d, 1), "bool[b,5]");
  EXPECT_THROW(infer_node("Dropout", {x, f32({2})}, {}), Error);
  EXPECT_THROW(infer_node("Dropout", {x, f32({}), f32({})}, {}), Error);
}

}  // namespace
}  // namespace switchyard::testing
