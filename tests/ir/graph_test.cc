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

// Two payloads of different types, as passes declare them beside themselves.
struct Scale final : NodeAnnotation {
  explicit Scale(float v) : value(v) {}
  float value;
  std::string describe() const override { return "scale=" + std::to_string(value); }
};
struct Marker final : NodeAnnotation {
  std::string describe() const override { return "marker"; }
};

TEST(Node, AnnotationsAreTypedAndReplacedByType) {
  Graph g;
  Node* n = g.add_node("MatMul", "mm", {}, {"y"});
  EXPECT_EQ(n->annotation<Scale>(), nullptr);
  EXPECT_TRUE(n->annotations().empty());

  n->annotate(std::make_shared<Scale>(0.5f));
  n->annotate(std::make_shared<Marker>());
  ASSERT_NE(n->annotation<Scale>(), nullptr);
  EXPECT_FLOAT_EQ(n->annotation<Scale>()->value, 0.5f);
  EXPECT_NE(n->annotation<Marker>(), nullptr);
  EXPECT_EQ(n->annotations().size(), 2u);

  // Another Scale replaces the first; the Marker stays, and attributes are untouched.
  n->annotate(std::make_shared<Scale>(2.0f));
  EXPECT_EQ(n->annotations().size(), 2u);
  EXPECT_FLOAT_EQ(n->annotation<Scale>()->value, 2.0f);
  EXPECT_EQ(n->annotation<Scale>()->describe(), "scale=2.000000");
  EXPECT_TRUE(n->attributes().empty());

  n->remove_annotation<Scale>();
  EXPECT_EQ(n->annotation<Scale>(), nullptr);
  EXPECT_NE(n->annotation<Marker>(), nullptr);
  n->remove_annotation<Scale>();  // absent: nothing happens
  EXPECT_EQ(n->annotations().size(), 1u);
}

TEST(Node, CopiedAnnotationsAreSharedAndReplaceThoseOfTheirType) {
  Graph g;
  Node* from = g.add_node("Conv", "conv", {}, {"y"});
  from->annotate(std::make_shared<Scale>(3.0f));
  from->annotate(std::make_shared<Marker>());
  Node* to = g.add_node("Conv", "conv_copy", {}, {"z"});
  to->annotate(std::make_shared<Scale>(1.0f));
  to->copy_annotations(*from);
  EXPECT_EQ(to->annotations().size(), 2u);
  // The same immutable payload, not a copy of it.
  EXPECT_EQ(to->annotation<Scale>(), from->annotation<Scale>());
  EXPECT_FLOAT_EQ(to->annotation<Scale>()->value, 3.0f);
  EXPECT_EQ(to->annotation<Marker>(), from->annotation<Marker>());
  // The copy outlives the node it came from.
  g.remove_nodes_if([&](const Node& n) { return &n == from; });
  EXPECT_FLOAT_EQ(to->annotation<Scale>()->value, 3.0f);
  to->copy_annotations(*to);
  EXPECT_EQ(to->annotations().size(), 2u);
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
