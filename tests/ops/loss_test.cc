// Symbolic shape inference of the loss family.
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
    ins.push_back(b.graph->add_input("in" + std::to_string(i), inputs[i]));
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  b.node = b.graph->add_node(op, "n", ins, outs);
  for (const auto& a : attrs) b.node->set_attribute(a);
  ops::infer_types(*b.graph);
  return b;
}

Type f32(ir::Shape s) { return Type::tensor(DType::Float32, std::move(s)); }
Type i64(ir::Shape s) { return Type::tensor(DType::Int64, std::move(s)); }
std::string out_type(const Built& b, size_t i = 0) { return b.node->output(i)->type().to_string(); }

TEST(LossSchemas, ReductionShapes) {
  Type x = f32({Dim("n"), 5, Dim("h"), 4});
  Type t = i64({Dim("n"), Dim("h"), 4});
  EXPECT_EQ(out_type(build("NegativeLogLikelihoodLoss", {x, t}, {})), "float[]");
  EXPECT_EQ(out_type(build("NegativeLogLikelihoodLoss", {x, t},
                           {Attribute::make_string("reduction", "none")})),
            "float[n,h,4]");
  // Target dims unknown: filled from the input.
  EXPECT_EQ(out_type(build("NegativeLogLikelihoodLoss", {x, i64({Dim(), Dim(), Dim()})},
                           {Attribute::make_string("reduction", "none")})),
            "float[n,h,4]");
  auto sce = build(
      "SoftmaxCrossEntropyLoss", {x, t, f32({5})},
      {Attribute::make_string("reduction", "sum"), Attribute::make_int("ignore_index", -1)}, 2);
  EXPECT_EQ(out_type(sce, 0), "float[]");
  EXPECT_EQ(out_type(sce, 1), "float[n,5,h,4]");
}

TEST(LossSchemas, Errors) {
  Type x = f32({2, 5, 3});
  Type t = i64({2, 3});
  EXPECT_THROW(build("NegativeLogLikelihoodLoss", {x, i64({2})}, {}), Error);
  EXPECT_THROW(build("NegativeLogLikelihoodLoss", {x, i64({2, 4})}, {}), Error);
  EXPECT_THROW(build("NegativeLogLikelihoodLoss", {x, t, f32({4})}, {}), Error);
  EXPECT_THROW(
      build("NegativeLogLikelihoodLoss", {x, t, Type::tensor(DType::Float64, ir::Shape{5})}, {}),
      Error);
  EXPECT_THROW(build("NegativeLogLikelihoodLoss", {x, f32({2, 3})}, {}), Error);
  EXPECT_THROW(build("NegativeLogLikelihoodLoss", {f32({5}), i64({})}, {}), Error);
  EXPECT_THROW(
      build("SoftmaxCrossEntropyLoss", {x, t}, {Attribute::make_string("reduction", "avg")}),
      Error);
  EXPECT_THROW(build("NegativeLogLikelihoodLoss", {x, t}, {}, 2), Error);
  try {
    build("SoftmaxCrossEntropyLoss", {x, t}, {Attribute::make_float("ignore_index", 1.0f)});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace switchyard
