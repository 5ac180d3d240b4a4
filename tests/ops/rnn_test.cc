// Symbolic shape inference of RNN, GRU and LSTM.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(ir::Shape s) { return Type::tensor(DType::Float32, std::move(s)); }

TEST(RnnSchemas, LstmLayout0Symbolic) {
  auto b = build_node(
      "LSTM", {f32({Dim("seq"), Dim("batch"), 8}), f32({2, 20, 8}), f32({2, 20, 5}), f32({2, 40})},
      3, {ir::Attribute::make_string("direction", "bidirectional")});
  EXPECT_EQ(b.node->output(0)->type().to_string(), "float[seq,2,batch,5]");
  EXPECT_EQ(b.node->output(1)->type().to_string(), "float[2,batch,5]");
  EXPECT_EQ(b.node->output(2)->type().to_string(), "float[2,batch,5]");
}

TEST(RnnSchemas, GruLayout1AndRnn) {
  auto g =
      build_node("GRU", {f32({Dim("batch"), Dim("seq"), 4}), f32({1, 9, 4}), f32({1, 9, 3})}, 2,
                 {ir::Attribute::make_int("layout", 1), ir::Attribute::make_int("hidden_size", 3)});
  EXPECT_EQ(g.node->output(0)->type().to_string(), "float[batch,seq,1,3]");
  EXPECT_EQ(g.node->output(1)->type().to_string(), "float[batch,1,3]");
  auto r = build_node("RNN",
                      {Type::tensor(DType::Float64, ir::Shape{7, Dim("b"), 4}),
                       Type::tensor(DType::Float64, ir::Shape{1, Dim("h"), 4}),
                       Type::tensor(DType::Float64, ir::Shape{1, Dim("h"), Dim("h")})},
                      1, {});
  EXPECT_EQ(r.node->output(0)->type().to_string(), "double[7,1,b,h]");
}

TEST(RnnSchemas, BadAttributesAndShapes) {
  auto lstm = [](std::vector<Type> in, std::vector<ir::Attribute> attrs) {
    return build_node("LSTM", in, 1, attrs);
  };
  std::vector<Type> ok = {f32({3, 2, 4}), f32({1, 12, 4}), f32({1, 12, 3})};
  EXPECT_NO_THROW(lstm(ok, {}));
  try {
    lstm(ok, {ir::Attribute::make_int("hidden_size", 4)});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lstm(ok, {ir::Attribute::make_string("direction", "both")}), Error);
  EXPECT_THROW(lstm(ok, {ir::Attribute::make_int("layout", 2)}), Error);
  EXPECT_THROW(lstm(ok, {ir::Attribute::make_float("clip", -1.0f)}), Error);
  ir::Attribute acts;
  acts.name = "activations";
  acts.kind = ir::Attribute::Kind::Strings;
  acts.strings = {"Sigmoid", "Tanh"};
  EXPECT_THROW(lstm(ok, {acts}), Error);
  acts.strings = {"Sigmoid", "Tanh", "Bogus"};
  EXPECT_THROW(lstm(ok, {acts}), Error);
  EXPECT_THROW(
      lstm({Type::tensor(DType::Int32, ir::Shape{3, 2, 4}), f32({1, 12, 4}), f32({1, 12, 3})}, {}),
      Error);
  EXPECT_THROW(lstm({f32({3, 2, 4}), f32({1, 12, 5}), f32({1, 12, 3})}, {}), Error);
}

}  // namespace
}  // namespace switchyard::testing
