// Symbolic shape inference of the normalization family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "ops/schema.h"

namespace switchyard {
namespace {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::Type;

struct Built {
  std::unique_ptr<ir::Graph> graph;
  ir::Node* node;
};

Built build(const std::string& op, const std::vector<Type>& inputs,
            const std::vector<Attribute>& attrs, int num_outputs = 1) {
  Built b{std::make_unique<ir::Graph>("g"), nullptr};
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(inputs[i].is_unknown() ? nullptr
                                         : b.graph->add_input("in" + std::to_string(i), inputs[i]));
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  b.node = b.graph->add_node(op, "n", ins, outs);
  for (const auto& a : attrs) b.node->set_attribute(a);
  ops::infer_types(*b.graph);
  return b;
}

Type f32(ir::Shape s) { return Type::tensor(DType::Float32, std::move(s)); }
Type f16(ir::Shape s) { return Type::tensor(DType::Float16, std::move(s)); }
std::string out_type(const Built& b, size_t i = 0) { return b.node->output(i)->type().to_string(); }

TEST(NormalizationSchemas, LayerNormStatsShapes) {
  Type x = f16({Dim("batch"), Dim("seq"), 768});
  auto b = build("LayerNormalization", {x, f16({768}), f16({768})}, {}, 3);
  EXPECT_EQ(out_type(b, 0), "float16[batch,seq,768]");
  EXPECT_EQ(out_type(b, 1), "float[batch,seq,1]");
  EXPECT_EQ(out_type(b, 2), "float[batch,seq,1]");
  auto d = build("LayerNormalization", {x, f16({Dim("seq"), 768})},
                 {Attribute::make_int("axis", 1), Attribute::make_int("stash_type", 11)}, 2);
  EXPECT_EQ(out_type(d, 1), "double[batch,1,1]");
  EXPECT_THROW(build("LayerNormalization", {x, f16({5})}, {}), Error);
  EXPECT_THROW(build("LayerNormalization", {x, f32({768})}, {}), Error);
  EXPECT_THROW(build("LayerNormalization", {x, f16({768})}, {Attribute::make_int("axis", 3)}),
               Error);
  EXPECT_THROW(build("LayerNormalization", {x, f16({768})}, {Attribute::make_int("stash_type", 7)}),
               Error);
}

TEST(NormalizationSchemas, BatchNormAndChannelChecks) {
  Type x = f32({Dim("n"), 3, Dim("h"), Dim("w")});
  Type c3 = f32({3});
  auto b = build("BatchNormalization", {x, c3, c3, c3, c3},
                 {Attribute::make_int("training_mode", 1)}, 3);
  EXPECT_EQ(out_type(b, 0), "float[n,3,h,w]");
  EXPECT_EQ(out_type(b, 1), "float[3]");
  EXPECT_THROW(build("BatchNormalization", {x, f32({4}), c3, c3, c3}, {}), Error);
  EXPECT_THROW(build("BatchNormalization", {x, c3, c3, c3, c3}, {}, 3), Error);
  EXPECT_THROW(build("BatchNormalization", {f32({3}), c3, c3, c3, c3}, {}), Error);
  EXPECT_EQ(out_type(build("InstanceNormalization", {x, c3, c3}, {})), "float[n,3,h,w]");
  EXPECT_THROW(build("InstanceNormalization", {x, c3, f32({2})}, {}), Error);
  Type g = f32({Dim("n"), 6, 8});
  EXPECT_EQ(out_type(build("GroupNormalization", {g, f32({6}), f32({6})},
                           {Attribute::make_int("num_groups", 3)})),
            "float[n,6,8]");
  EXPECT_THROW(
      build("GroupNormalization", {g, f32({6}), f32({6})}, {Attribute::make_int("num_groups", 4)}),
      Error);
  EXPECT_THROW(build("GroupNormalization", {g, f32({6}), f32({6})}, {}), Error);
}

TEST(NormalizationSchemas, SoftmaxFamilyAndOthers) {
  Type x = f32({Dim("b"), 12, Dim("s"), Dim("s")});
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    EXPECT_EQ(out_type(build(op, {x}, {})), "float[b,12,s,s]");
    EXPECT_THROW(build(op, {x}, {Attribute::make_int("axis", 4)}), Error);
    EXPECT_THROW(build(op, {Type::tensor(DType::Int32, ir::Shape{3})}, {}), Error);
  }
  EXPECT_EQ(out_type(build("LpNormalization", {x}, {Attribute::make_int("p", 1)})),
            "float[b,12,s,s]");
  EXPECT_THROW(build("LpNormalization", {x}, {Attribute::make_int("p", 0)}), Error);
  EXPECT_EQ(out_type(build("LRN", {x}, {Attribute::make_int("size", 3)})), "float[b,12,s,s]");
  EXPECT_THROW(build("LRN", {x}, {}), Error);
  EXPECT_EQ(out_type(build("MeanVarianceNormalization", {x}, {})), "float[b,12,s,s]");
  EXPECT_THROW(build("MeanVarianceNormalization", {f32({2, 3})}, {}), Error);
}

TEST(NormalizationSchemas, Dropout) {
  Type x = f32({Dim("b"), 5});
  auto d = build("Dropout", {x, f32({}), Type::tensor(DType::Bool, ir::Shape{})}, {}, 2);
  EXPECT_EQ(out_type(d, 0), "float[b,5]");
  EXPECT_EQ(out_type(d, 1), "bool[b,5]");
  EXPECT_THROW(build("Dropout", {x, f32({2})}, {}), Error);
  EXPECT_THROW(build("Dropout", {x, f32({}), f32({})}, {}), Error);
}

}  // namespace
}  // namespace switchyard
