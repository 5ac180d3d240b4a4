// Symbolic type inference of If, Loop, Scan and SequenceMap: body input types from the node's
// inputs merged with declarations, loop-carried types generalized to a fixed point, and output
// types derived from the bodies.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "ops/schema.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(Shape s) { return Type::tensor(DType::Float32, std::move(s)); }

ir::Value* add_op(ir::Graph& g, const std::string& op, std::vector<ir::Value*> inputs,
                  std::vector<ir::Attribute> attrs = {}, int num_outputs = 1) {
  std::string name = g.name() + "_" + op + std::to_string(g.nodes().size());
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(g.unique_value_name(name));
  ir::Node* n = g.add_node(op, name, inputs, outs);
  for (auto& a : attrs) n->set_attribute(std::move(a));
  return n->output(0);
}

std::shared_ptr<ir::Graph> new_body(const std::string& name, ir::Graph& parent) {
  return std::make_shared<ir::Graph>(name, &parent);
}

ir::Attribute graph_attr(const std::string& name, std::shared_ptr<ir::Graph> g) {
  return ir::Attribute::make_graph(name, std::move(g));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
    return e.what();
  }
  return "no error";
}

TEST(IfInference, UnitesBranchesAndFollowsConstantCondition) {
  ir::Graph g("main");
  ir::Value* x = g.add_input("x", f32({Dim("N"), 4}));
  ir::Value* y = g.add_input("y", f32({Dim("N"), 4}));
  ir::Value* z = g.add_input("z", f32({Dim("M"), 4}));
  ir::Value* cond = g.add_input("cond", Type::tensor(DType::Bool, Shape{1}));
  ir::Value* always = g.add_constant("always", bool_scalar(true));
  auto make_if = [&](ir::Value* c, ir::Value* a, ir::Value* b) {
    auto then_branch = new_body("then", g);
    then_branch->add_output(a);
    auto else_branch = new_body("else", g);
    else_branch->add_output(add_op(*else_branch, "OptionalGetElement", {b}));
    return add_op(g, "If", {c},
                  {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
  };
  ir::Value* same = make_if(cond, x, y);
  ir::Value* differ = make_if(cond, x, z);
  ir::Value* folded = make_if(always, x, z);
  ops::infer_types(g);
  EXPECT_EQ(same->type().to_string(), "float[N,4]");
  EXPECT_EQ(differ->type().to_string(), "float[?,4]");
  EXPECT_EQ(folded->type().to_string(), "float[N,4]");
}

TEST(IfInference, BadConditionAndArityNameTheNode) {
  {
    ir::Graph g("main");
    ir::Value* cond = g.add_input("cond", Type::tensor(DType::Int32, Shape{}));
    auto then_branch = new_body("then", g);
    then_branch->add_output(cond);
    auto else_branch = new_body("else", g);
    else_branch->add_output(cond);
    add_op(g, "If", {cond},
           {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
    EXPECT_NE(error_of([&] { ops::infer_types(g); }).find("[If] node 'main_If0'"),
              std::string::npos);
  }
  {
    ir::Graph g("main");
    ir::Value* cond = g.add_input("cond", Type::tensor(DType::Bool, Shape{}));
    auto then_branch = new_body("then", g);
    then_branch->add_output(cond);
    auto else_branch = new_body("else", g);
    add_op(g, "If", {cond},
           {graph_attr("then_branch", then_branch), graph_attr("else_branch", else_branch)});
    EXPECT_NE(error_of([&] { ops::infer_types(g); }).find("body 'else' has 0 outputs, expected 1"),
              std::string::npos);
  }
}

TEST(LoopInference, CarriedTypesReachAFixedPoint) {
  // carried `acc` grows by a row per iteration; `same` is returned unchanged.
  ir::Graph g("main");
  ir::Value* m = g.add_input("M", Type::tensor(DType::Int64, Shape{}));
  ir::Value* init = g.add_input("init", f32({0, Dim("D")}));
  ir::Value* keep = g.add_input("keep", f32({Dim("B"), 2}));
  auto body = new_body("body", g);
  ir::Value* i = body->add_input("i", {});
  ir::Value* c = body->add_input("c", {});
  ir::Value* acc = body->add_input("acc", {});
  ir::Value* same = body->add_input("same", {});
  ir::Value* pair = add_op(*body, "SequenceConstruct", {acc, acc});
  body->add_output(c);
  body->add_output(
      add_op(*body, "ConcatFromSequence", {pair}, {ir::Attribute::make_int("axis", 0)}));
  body->add_output(same);
  body->add_output(i);
  body->add_output(same);
  ir::Node* loop = g.add_node("Loop", "loop", {m, nullptr, init, keep},
                              {"acc_final", "same_final", "iters", "sames"});
  loop->set_attribute(graph_attr("body", body));
  ops::infer_types(g);
  EXPECT_EQ(i->type().to_string(), "int64[]");
  EXPECT_EQ(c->type().to_string(), "bool[]");
  EXPECT_EQ(acc->type().to_string(), "float[?,D]");
  EXPECT_EQ(same->type().to_string(), "float[B,2]");
  EXPECT_EQ(loop->output(0)->type().to_string(), "float[?,D]");
  EXPECT_EQ(loop->output(1)->type().to_string(), "float[B,2]");
  EXPECT_EQ(loop->output(2)->type().to_string(), "int64[?]");
  EXPECT_EQ(loop->output(3)->type().to_string(), "float[?,B,2]");
}

TEST(LoopInference, DeclaredBodyTypesAreKept) {
  ir::Graph g("main");
  ir::Value* m = g.add_input("M", Type::tensor(DType::Int64, Shape{}));
  ir::Value* init = g.add_input("init", f32({Dim(), Dim("K")}));
  auto body = new_body("body", g);
  body->add_input("i", Type::tensor(DType::Int64, Shape{}));
  ir::Value* c = body->add_input("c", {});
  ir::Value* v = body->add_input("v", f32({3, Dim("Q")}));
  body->add_output(c);
  body->add_output(v);
  ir::Node* loop = g.add_node("Loop", "loop", {m, nullptr, init}, {"v_final"});
  loop->set_attribute(graph_attr("body", body));
  ops::infer_types(g);
  EXPECT_EQ(v->type().to_string(), "float[3,K]");

  ir::Graph bad("main");
  ir::Value* m2 = bad.add_input("M", Type::tensor(DType::Int64, Shape{}));
  ir::Value* init2 = bad.add_input("init", f32({2}));
  auto body2 = new_body("body", bad);
  body2->add_input("i", {});
  ir::Value* c2 = body2->add_input("c", {});
  ir::Value* v2 = body2->add_input("v", Type::tensor(DType::Int32, Shape{2}));
  body2->add_output(c2);
  body2->add_output(v2);
  ir::Node* loop2 = bad.add_node("Loop", "loop", {m2, nullptr, init2}, {"v_final"});
  loop2->set_attribute(graph_attr("body", body2));
  EXPECT_NE(error_of([&] {
              ops::infer_types(bad);
            }).find("[Loop] node 'loop': body 'body' input 2 'v' is declared int32[2]"),
            std::string::npos);
}

TEST(LoopInference, ArityAndInputChecks) {
  auto build = [](Type m_type, int body_inputs) {
    ir::Graph g("main");
    ir::Value* m = g.add_input("M", std::move(m_type));
    auto body = new_body("body", g);
    ir::Value* last = nullptr;
    for (int k = 0; k < body_inputs; ++k) last = body->add_input("in" + std::to_string(k), {});
    body->add_output(last);
    ir::Node* loop = g.add_node("Loop", "loop", {m, nullptr}, {});
    loop->set_attribute(graph_attr("body", body));
    return error_of([&] { ops::infer_types(g); });
  };
  EXPECT_NE(build(Type::tensor(DType::Int64, Shape{}), 3).find("has 3 inputs, expected 2"),
            std::string::npos);
  EXPECT_NE(
      build(Type::tensor(DType::Int64, Shape{2}), 2).find("trip count 'M' must hold one element"),
      std::string::npos);
  EXPECT_NE(build(Type::tensor(DType::Int32, Shape{}), 2).find("has dtype int32"),
            std::string::npos);
}

TEST(ScanInference, SlicesStatesAndOutputAxes) {
  ir::Graph g("main");
  ir::Value* state = g.add_input("state", f32({Dim("B"), 4}));
  ir::Value* x = g.add_input("x", f32({Dim("B"), Dim("T"), 4}));
  auto body = new_body("body", g);
  ir::Value* s = body->add_input("s", {});
  ir::Value* xs = body->add_input("xs", {});
  body->add_output(xs);
  body->add_output(s);
  body->add_output(xs);
  ir::Node* scan = g.add_node("Scan", "scan", {state, x}, {"final", "out0", "out1"});
  scan->set_attribute(graph_attr("body", body));
  scan->set_attribute(ir::Attribute::make_int("num_scan_inputs", 1));
  scan->set_attribute(ir::Attribute::make_ints("scan_input_axes", {-2}));
  scan->set_attribute(ir::Attribute::make_ints("scan_output_axes", {0, -1}));
  ops::infer_types(g);
  EXPECT_EQ(xs->type().to_string(), "float[B,4]");
  EXPECT_EQ(scan->output(0)->type().to_string(), "float[B,4]");
  EXPECT_EQ(scan->output(1)->type().to_string(), "float[T,B,4]");
  EXPECT_EQ(scan->output(2)->type().to_string(), "float[B,4,T]");
}

TEST(ScanInference, BadAttributesNameTheNode) {
  ir::Graph g("main");
  ir::Value* x = g.add_input("x", f32({3}));
  auto body = new_body("body", g);
  body->add_output(body->add_input("xs", {}));
  ir::Node* scan = g.add_node("Scan", "scan", {x}, {"out"});
  scan->set_attribute(graph_attr("body", body));
  scan->set_attribute(ir::Attribute::make_int("num_scan_inputs", 2));
  EXPECT_NE(error_of([&] {
              ops::infer_types(g);
            }).find("[Scan] node 'scan': attribute 'num_scan_inputs' 2 must be in [1, 1]"),
            std::string::npos);
}

TEST(SequenceMapInference, ElementTypesInSequencesOut) {
  ir::Graph g("main");
  ir::Value* s = g.add_input("s", Type::sequence(f32({Dim("N")})));
  ir::Value* t = g.add_input("t", f32({Dim("N")}));
  auto body = new_body("body", g);
  ir::Value* a = body->add_input("a", {});
  ir::Value* b = body->add_input("b", {});
  ir::Value* pair = add_op(*body, "SequenceConstruct", {a, b});
  body->add_output(
      add_op(*body, "ConcatFromSequence", {pair}, {ir::Attribute::make_int("axis", 0)}));
  body->add_output(add_op(*body, "SequenceLength", {pair}));
  ir::Node* map = g.add_node("SequenceMap", "map", {s, t}, {"cat", "len"});
  map->set_attribute(graph_attr("body", body));
  ops::infer_types(g);
  EXPECT_EQ(a->type().to_string(), "float[N]");
  EXPECT_EQ(map->output(0)->type().to_string(), "seq(float[?])");
  EXPECT_EQ(map->output(1)->type().to_string(), "seq(int64[])");

  ir::Graph bad("main");
  ir::Value* x = bad.add_input("x", f32({2}));
  auto body2 = new_body("body", bad);
  body2->add_output(body2->add_input("a", {}));
  ir::Node* map2 = bad.add_node("SequenceMap", "map", {x}, {"out"});
  map2->set_attribute(graph_attr("body", body2));
  EXPECT_NE(error_of([&] {
              ops::infer_types(bad);
            }).find("[SequenceMap] node 'map': input 0 'x' must be a sequence"),
            std::string::npos);
}

}  // namespace
}  // namespace switchyard::testing
