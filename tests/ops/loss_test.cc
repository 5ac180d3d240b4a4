// Symbolic shape inference of the loss family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(ir::Shape s) { return Type::tensor(DType::Float32, std::move(s)); }
Type i64(ir::Shape s) { return Type::tensor(DType::Int64, std::move(s)); }
std::string out_type(const InferredNode& b, size_t i = 0) { return b.out(i); }

TEST(LossSchemas, ReductionShapes) {
  Type x = f32({Dim("n"), 5, Dim("h"), 4});
  Type t = i64({Dim("n"), Dim("h"), 4});
  EXPECT_EQ(out_type(infer_node("NegativeLogLikelihoodLoss", {x, t}, {})), "float[]");
  EXPECT_EQ(out_type(infer_node("NegativeLogLikelihoodLoss", {x, t},
                                {Attribute::make_string("reduction", "none")})),
            "float[n,h,4]");
  // Target dims unknown: filled from the input.
  EXPECT_EQ(out_type(infer_node("NegativeLogLikelihoodLoss", {x, i64({Dim(), Dim(), Dim()})},
                                {Attribute::make_string("reduction", "none")})),
            "float[n,h,4]");
  auto sce = infer_node(
      "SoftmaxCrossEntropyLoss", {x, t, f32({5})},
      {Attribute::make_string("reduction", "sum"), Attribute::make_int("ignore_index", -1)}, 2);
  EXPECT_EQ(out_type(sce, 0), "float[]");
  EXPECT_EQ(out_type(sce, 1), "float[n,5,h,4]");
}

TEST(LossSchemas, Errors) {
  Type x = f32({2, 5, 3});
  Type t = i64({2, 3});
  EXPECT_THROW(infer_node("NegativeLogLikelihoodLoss", {x, i64({2})}, {}), Error);
  EXPECT_THROW(infer_node("NegativeLogLikelihoodLoss", {x, i64({2, 4})}, {}), Error);
  EXPECT_THROW(infer_node("NegativeLogLikelihoodLoss", {x, t, f32({4})}, {}), Error);
  EXPECT_THROW(infer_node("NegativeLogLikelihoodLoss",
                          {x, t, Type::tensor(DType::Float64, ir::Shape{5})}, {}),
               Error);
  EXPECT_THROW(infer_node("NegativeLogLikelihoodLoss", {x, f32({2, 3})}, {}), Error);
  EXPECT_THROW(infer_node("NegativeLogLikelihoodLoss", {f32({5}), i64({})}, {}), Error);
  EXPECT_THROW(
      infer_node("SoftmaxCrossEntropyLoss", {x, t}, {Attribute::make_string("reduction", "avg")}),
      Error);
  EXPECT_THROW(infer_node("NegativeLogLikelihoodLoss", {x, t}, {}, 2), Error);
  try {
    infer_node("SoftmaxCrossEntropyLoss", {x, t}, {Attribute::make_float("ignore_index", 1.0f)});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace switchyard::testing
