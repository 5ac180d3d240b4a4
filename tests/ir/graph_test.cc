#include <gtest/gtest.h>

#include "ir/check.h"
#include "ir/graph.h"

namespace switchyard::ir {
namespace {

TEST(Graph, BuildsAndVerifiesAChain) {
  Graph g;
  Value* x = g.add_input("x", Type::tensor(DType::Float32, Shape{Dim("batch"), Dim(4)}));
  Node* relu = g.add_node("Relu", "", {x}, {"y"});
  Node* neg = g.add_node("Neg", "neg", {relu->output(0)}, {"z"});
  g.add_output(neg->output(0));
  EXPECT_EQ(relu->name(), "Relu_0");
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_NO_THROW(verify(g));
  EXPECT_EQ(x->type().to_string(), "float[batch,4]");
}

TEST(Graph, TopologicalSortReordersAndDetectsCycles) {
  Graph g;
  Value* x = g.add_input("x", Type::tensor(DType::Float32));
  Value* a = g.add_value("a");
  Node* second = g.add_node("Neg", "second", {a}, {"b"});
  g.add_output(second->output(0));
  Node* first = g.add_node("Relu", "first", {x}, {"f"});
  g.replace_all_uses(a, first->output(0));
  g.sort_topologically();
  EXPECT_EQ(g.nodes()[0]->name(), "first");
  EXPECT_NO_THROW(verify(g));

  Graph cyc;
  Value* p = cyc.add_value("p");
  Node* n1 = cyc.add_node("Neg", "n1", {p}, {"q"});
  Node* n2 = cyc.add_node("Neg", "n2", {n1->output(0)}, {"r"});
  cyc.replace_all_uses(p, n2->output(0));
  try {
    cyc.sort_topologically();
    FAIL() << "cycle not detected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidModel);
    EXPECT_NE(e.message().find("n1"), std::string::npos);
  }
}

TEST(Graph, VerifierRejectsUseBeforeDefinition) {
  Graph g;
  Value* x = g.add_input("x", Type::tensor(DType::Float32));
  Value* dangling = g.add_value("dangling");
  Node* n = g.add_node("Add", "add", {x, dangling}, {"y"});
  g.add_output(n->output(0));
  try {
    verify(g);
    FAIL() << "verifier accepted an undefined input";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("dangling"), std::string::npos);
    EXPECT_NE(e.message().find("add"), std::string::npos);
  }
}

TEST(Graph, SubgraphReadsOuterValue) {
  Graph g;
  Value* x = g.add_input("x", Type::tensor(DType::Float32));
  Value* cond = g.add_input("cond", Type::tensor(DType::Bool));
  auto then_g = std::make_shared<Graph>("then", &g);
  Node* inner = then_g->add_node("Neg", "neg", {x}, {"t"});
  then_g->add_output(inner->output(0));
  Node* iff = g.add_node("If", "if", {cond}, {"y"});
  iff->set_attribute(Attribute::make_graph("then_branch", then_g));
  g.add_output(iff->output(0));
  EXPECT_NO_THROW(verify(g));
  auto outer = then_g->outer_scope_values();
  ASSERT_EQ(outer.size(), 1u);
  EXPECT_EQ(outer[0], x);
  EXPECT_EQ(g.count_nodes_recursive(), 2u);
}

TEST(Graph, AttributeKindMismatchNamesNode) {
  Graph g;
  Node* n = g.add_node("Concat", "cat", {}, {"y"});
  n->set_attribute(Attribute::make_string("axis", "one"));
  try {
    n->attr_int("axis");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidModel);
    EXPECT_NE(e.message().find("[Concat] node 'cat'"), std::string::npos);
  }
  EXPECT_EQ(n->attr_int("missing", 7), 7);
}

TEST(Tensor, OverflowingShapeIsRejected) {
  EXPECT_THROW(checked_numel({int64_t{1} << 40, int64_t{1} << 40}), Error);
  EXPECT_THROW(Tensor(DType::Float32, {-1}), Error);
  EXPECT_EQ(checked_numel({}), 1);
}

TEST(DType, HalfConversionsRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1e-5f, 1e-7f, 3.14159f}) {
    float back = half_to_float(float_to_half(f));
    EXPECT_NEAR(back, f, std::fabs(f) * 1e-3 + 6e-8) << f;
    float bback = bfloat16_to_float(float_to_bfloat16(f));
    EXPECT_NEAR(bback, f, std::fabs(f) * 1e-2 + 1e-30) << f;
  }
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

}  // namespace
}  // namespace switchyard::ir
