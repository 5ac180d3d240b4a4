// Opset normalisation: models of old opsets come out in opset-21 form.

#include "onnx_test_util.h"

namespace switchyard::onnx_test {
namespace {

using onnx::TensorProto;

// A model with input x (float, `dims`) feeding one node `op` named "n" whose first output is the
// graph output y.
struct OneNode {
  onnx::ModelProto model;
  onnx::NodeProto* node;
};

OneNode one_node(int64_t opset, const std::string& op, const std::vector<std::string>& dims,
                 const std::vector<std::string>& extra_inputs = {}) {
  OneNode m{make_model(opset), nullptr};
  auto* g = m.model.mutable_graph();
  add_input(g, "x", TensorProto::FLOAT, dims);
  std::vector<std::string> inputs = {"x"};
  inputs.insert(inputs.end(), extra_inputs.begin(), extra_inputs.end());
  m.node = add_node(g, op, inputs, {"y"}, "n");
  add_untyped_output(g, "y");
  return m;
}

TEST(OnnxNormalize, ReduceSumAxesAttributeBecomesAnInput) {
  auto m = one_node(11, "ReduceSum", {"2", "3", "4"});
  set_ints(m.node, "axes", {1, -1});
  set_int(m.node, "keepdims", 0);
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  ASSERT_EQ(n.num_inputs(), 2u);
  EXPECT_EQ(n.input(0), g->find_value("x"));
  EXPECT_EQ(constant_ints(n.input(1)), (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(n.input(1)->constant().dtype(), DType::Int64);
  EXPECT_FALSE(n.has_attribute("axes"));
  EXPECT_EQ(n.attr_int("keepdims"), 0);
}

TEST(OnnxNormalize, ReduceMeanBefore18AndAfter) {
  auto old = one_node(17, "ReduceMean", {"2", "3"});
  set_ints(old.node, "axes", {0});
  auto g = import_proto(old.model);
  EXPECT_EQ(constant_ints(node_named(*g, "n").input(1)), (std::vector<int64_t>{0}));

  // Opset 18 already takes axes as an input: nothing changes.
  auto current = one_node(18, "ReduceMean", {"2", "3"}, {"axes"});
  add_int64_initializer(current.model.mutable_graph(), "axes", {1}, {1});
  auto g18 = import_proto(current.model);
  const ir::Node& n = node_named(*g18, "n");
  ASSERT_EQ(n.num_inputs(), 2u);
  EXPECT_EQ(n.input(1), g18->find_value("axes"));
  EXPECT_EQ(g18->nodes().size(), 1u);
  EXPECT_EQ(g18->constants().size(), 1u);

  // Without axes (reduce everything) no input is added.
  auto all = one_node(11, "ReduceMax", {"2", "3"});
  EXPECT_EQ(node_named(*import_proto(all.model), "n").num_inputs(), 1u);
}

TEST(OnnxNormalize, UnsqueezeAndSqueezeAxes) {
  auto m = one_node(11, "Unsqueeze", {"3"});
  set_ints(m.node, "axes", {0, 2});
  auto g = import_proto(m.model);
  EXPECT_EQ(constant_ints(node_named(*g, "n").input(1)), (std::vector<int64_t>{0, 2}));
  EXPECT_FALSE(node_named(*g, "n").has_attribute("axes"));

  auto sq = one_node(12, "Squeeze", {"1", "3"});
  set_ints(sq.node, "axes", {0});
  EXPECT_EQ(constant_ints(node_named(*import_proto(sq.model), "n").input(1)),
            (std::vector<int64_t>{0}));
}

TEST(OnnxNormalize, SplitAttributeBecomesAnInput) {
  auto m = one_node(11, "Split", {"5"});
  m.node->add_output("y2");
  set_ints(m.node, "split", {2, 3});
  set_int(m.node, "axis", 0);
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  EXPECT_EQ(constant_ints(n.input(1)), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(n.attr_int("axis"), 0);
  EXPECT_EQ(n.num_outputs(), 2u);

  // Opset 18's num_outputs stays an attribute.
  auto m18 = one_node(18, "Split", {"6"});
  m18.node->add_output("y2");
  set_int(m18.node, "num_outputs", 2);
  auto n18_graph = import_proto(m18.model);
  const ir::Node& n18 = node_named(*n18_graph, "n");
  EXPECT_EQ(n18.num_inputs(), 1u);
  EXPECT_EQ(n18.attr_int("num_outputs"), 2);
}

TEST(OnnxNormalize, SliceOpset9AttributesBecomeInputs) {
  auto m = one_node(9, "Slice", {"4", "6"});
  set_ints(m.node, "starts", {1, 0});
  set_ints(m.node, "ends", {3, -1});
  set_ints(m.node, "axes", {0, 1});
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  ASSERT_EQ(n.num_inputs(), 4u);
  EXPECT_EQ(constant_ints(n.input(1)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(constant_ints(n.input(2)), (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(constant_ints(n.input(3)), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(n.attributes().empty());
}

TEST(OnnxNormalize, PadOpset2AttributesBecomeInputs) {
  auto m = one_node(2, "Pad", {"2", "3"});
  set_ints(m.node, "pads", {0, 1, 0, 2});
  set_float(m.node, "value", 1.5f);
  set_string(m.node, "mode", "constant");
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  ASSERT_EQ(n.num_inputs(), 3u);
  EXPECT_EQ(constant_ints(n.input(1)), (std::vector<int64_t>{0, 1, 0, 2}));
  // The pad value takes x's type, known from its declaration.
  ASSERT_TRUE(n.input(2)->is_constant());
  EXPECT_EQ(n.input(2)->constant().dtype(), DType::Float32);
  EXPECT_EQ(n.input(2)->constant().rank(), 0);
  EXPECT_EQ(n.input(2)->constant().scalar_as_double(), 1.5);
  EXPECT_EQ(n.attr_string("mode"), "constant");
  EXPECT_FALSE(n.has_attribute("pads"));
  EXPECT_FALSE(n.has_attribute("value"));
}

TEST(OnnxNormalize, PadOpset1OnAnUntypedValueUsesCastLike) {
  onnx::ModelProto m = make_model(1);
  auto* g = m.mutable_graph();
  add_input(g, "x", TensorProto::DOUBLE, {"2"});
  add_node(g, "Relu", {"x"}, {"r"});  // r has no declared type
  auto* pad = add_node(g, "Pad", {"r"}, {"y"}, "pad");
  set_ints(pad, "paddings", {1, 1});
  set_float(pad, "value", -2.0f);
  add_untyped_output(g, "y");
  auto graph = import_proto(m);
  const ir::Node& n = node_named(*graph, "pad");
  EXPECT_EQ(constant_ints(n.input(1)), (std::vector<int64_t>{1, 1}));
  const ir::Node* cast = n.input(2)->producer();
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(cast->op_type(), "CastLike");
  EXPECT_EQ(cast->input(1), graph->find_value("r"));
  EXPECT_EQ(cast->input(0)->constant().scalar_as_double(), -2.0);
  // The CastLike runs before the Pad.
  EXPECT_EQ(graph->nodes().back()->name(), "pad");
}

TEST(OnnxNormalize, ClipOpset6AttributesBecomeInputs) {
  auto m = one_node(6, "Clip", {"4"});
  set_float(m.node, "min", -1.0f);
  set_float(m.node, "max", 2.5f);
  auto n_graph = import_proto(m.model);
  const ir::Node& n = node_named(*n_graph, "n");
  ASSERT_EQ(n.num_inputs(), 3u);
  EXPECT_EQ(n.input(1)->constant().scalar_as_double(), -1.0);
  EXPECT_EQ(n.input(2)->constant().scalar_as_double(), 2.5);
  EXPECT_TRUE(n.attributes().empty());

  auto only_max = one_node(6, "Clip", {"4"});
  set_float(only_max.node, "max", 6.0f);
  auto m2_graph = import_proto(only_max.model);
  const ir::Node& m2 = node_named(*m2_graph, "n");
  EXPECT_EQ(m2.input(1), nullptr);
  EXPECT_EQ(m2.input(2)->constant().scalar_as_double(), 6.0);
}

TEST(OnnxNormalize, UpsampleBecomesResize) {
  auto m = one_node(9, "Upsample", {"1", "1", "2", "2"}, {"scales"});
  add_float_initializer(m.model.mutable_graph(), "scales", {4}, {1, 1, 2, 3});
  set_string(m.node, "mode", "linear");
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  EXPECT_EQ(n.op_type(), "Resize");
  ASSERT_EQ(n.num_inputs(), 3u);
  EXPECT_EQ(n.input(0), g->find_value("x"));
  EXPECT_EQ(n.input(1), nullptr);
  EXPECT_EQ(n.input(2), g->find_value("scales"));
  EXPECT_EQ(n.attr_string("mode"), "linear");
  EXPECT_EQ(n.attr_string("coordinate_transformation_mode"), "asymmetric");
  // The graph output keeps its name and is produced by the new node.
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->outputs()[0]->producer(), &n);
  EXPECT_EQ(g->nodes().size(), 1u);

  auto v7 = one_node(7, "Upsample", {"1", "1", "2", "2"});
  set_floats(v7.node, "scales", {1, 1, 2, 2});
  auto g7 = import_proto(v7.model);
  const ir::Node& r7 = node_named(*g7, "n");
  EXPECT_EQ(r7.op_type(), "Resize");
  EXPECT_EQ(r7.attr_string("mode"), "nearest");
  EXPECT_EQ(r7.attr_string("nearest_mode"), "floor");
  ASSERT_TRUE(r7.input(2)->is_constant());
  EXPECT_EQ(r7.input(2)->constant().scalar_as_double(3), 2.0);
}

TEST(OnnxNormalize, Resize10GetsTheOpset13Form) {
  auto m = one_node(10, "Resize", {"1", "1", "2", "2"}, {"scales"});
  add_float_initializer(m.model.mutable_graph(), "scales", {4}, {1, 1, 2, 2});
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  ASSERT_EQ(n.num_inputs(), 3u);
  EXPECT_EQ(n.input(1), nullptr);
  EXPECT_EQ(n.input(2), g->find_value("scales"));
  EXPECT_EQ(n.attr_string("coordinate_transformation_mode"), "asymmetric");
  EXPECT_EQ(n.attr_string("nearest_mode"), "floor");
}

TEST(OnnxNormalize, Softmax11OverInnerAxesIsFlattenedAndReshaped) {
  auto m = one_node(11, "Softmax", {"2", "3", "4"});
  set_int(m.node, "axis", 1);
  add_output(m.model.mutable_graph(), "y", TensorProto::FLOAT, {"2", "3", "4"});
  m.model.mutable_graph()->mutable_output()->DeleteSubrange(0, 1);
  auto g = import_proto(m.model);
  const ir::Node& sm = node_named(*g, "n");
  EXPECT_EQ(sm.op_type(), "Softmax");
  EXPECT_EQ(sm.attr_int("axis"), -1);
  const ir::Node* flatten = sm.input(0)->producer();
  ASSERT_NE(flatten, nullptr);
  EXPECT_EQ(flatten->op_type(), "Flatten");
  EXPECT_EQ(flatten->attr_int("axis"), 1);
  EXPECT_EQ(flatten->input(0), g->find_value("x"));
  const ir::Value* y = g->outputs()[0];
  EXPECT_EQ(y->name(), "y");
  EXPECT_EQ(y->type().to_string(), "float[2,3,4]");
  ASSERT_EQ(y->producer()->op_type(), "Reshape");
  EXPECT_EQ(y->producer()->input(0), sm.output(0));
  const ir::Node* shape = y->producer()->input(1)->producer();
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->op_type(), "Shape");
  EXPECT_EQ(shape->input(0), g->find_value("x"));
  EXPECT_EQ(g->nodes().size(), 4u);
}

TEST(OnnxNormalize, Softmax11OverTheLastAxisOnlyChangesTheAxis) {
  auto m = one_node(11, "LogSoftmax", {"2", "5"});  // default axis 1 = last of rank 2
  auto g = import_proto(m.model);
  ASSERT_EQ(g->nodes().size(), 1u);
  EXPECT_EQ(node_named(*g, "n").attr_int("axis"), -1);
  // Opset 13 keeps its per-axis meaning untouched.
  auto m13 = one_node(13, "Softmax", {"2", "3", "4"});
  set_int(m13.node, "axis", 1);
  auto g13 = import_proto(m13.model);
  ASSERT_EQ(g13->nodes().size(), 1u);
  EXPECT_EQ(node_named(*g13, "n").attr_int("axis"), 1);
}

TEST(OnnxNormalize, LegacyBroadcastWithAxisReshapesB) {
  // Known ranks: B (a constant [3]) becomes a constant [3, 1, 1].
  auto m = one_node(6, "Add", {"2", "3", "4", "5"}, {"b"});
  add_float_initializer(m.model.mutable_graph(), "b", {3}, {1, 2, 3});
  set_int(m.node, "broadcast", 1);
  set_int(m.node, "axis", 1);
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  EXPECT_TRUE(n.attributes().empty());
  ASSERT_TRUE(n.input(1)->is_constant());
  EXPECT_EQ(n.input(1)->constant().shape(), (std::vector<int64_t>{3, 1, 1}));
  EXPECT_EQ(n.input(1)->constant().scalar_as_double(2), 3.0);

  // A of unknown rank: B is reshaped at run time.
  onnx::ModelProto dyn = make_model(5);
  auto* dg = dyn.mutable_graph();
  add_input(dg, "x", TensorProto::FLOAT, {"2", "3", "4", "5"});
  add_float_initializer(dg, "b", {3}, {1, 2, 3});
  add_node(dg, "Relu", {"x"}, {"r"});
  auto* add = add_node(dg, "Mul", {"r", "b"}, {"y"}, "mul");
  set_int(add, "broadcast", 1);
  set_int(add, "axis", 1);
  add_untyped_output(dg, "y");
  auto dgraph = import_proto(dyn);
  const ir::Node& mul = node_named(*dgraph, "mul");
  ASSERT_NE(mul.input(1)->producer(), nullptr);
  EXPECT_EQ(mul.input(1)->producer()->op_type(), "Reshape");
  EXPECT_EQ(count_ops(*dgraph, "ConstantOfShape"), 1u);
  EXPECT_FALSE(mul.has_attribute("axis"));

  // Without an axis the legacy rule is numpy's: only the attribute goes.
  auto plain = one_node(6, "Sub", {"2", "3"}, {"b"});
  add_float_initializer(plain.model.mutable_graph(), "b", {3}, {1, 2, 3});
  set_int(plain.node, "broadcast", 1);
  auto pg = import_proto(plain.model);
  EXPECT_EQ(node_named(*pg, "n").input(1), pg->find_value("b"));
  EXPECT_TRUE(node_named(*pg, "n").attributes().empty());
}

TEST(OnnxNormalize, LegacyPReluSlopeIsPerChannel) {
  auto m = one_node(6, "PRelu", {"2", "3", "4", "5"}, {"slope"});
  add_float_initializer(m.model.mutable_graph(), "slope", {3}, {0.1f, 0.2f, 0.3f});
  auto g = import_proto(m.model);
  const ir::Node& n = node_named(*g, "n");
  ASSERT_TRUE(n.input(1)->is_constant());
  EXPECT_EQ(n.input(1)->constant().shape(), (std::vector<int64_t>{3, 1, 1}));
  // A single shared slope, and opset 7's unidirectional broadcasting, stay as they are.
  auto shared = one_node(6, "PRelu", {"2", "3", "4"}, {"slope"});
  add_float_initializer(shared.model.mutable_graph(), "slope", {1}, {0.1f});
  auto sg = import_proto(shared.model);
  EXPECT_EQ(node_named(*sg, "n").input(1), sg->find_value("slope"));
  auto v7 = one_node(7, "PRelu", {"2", "3", "4"}, {"slope"});
  add_float_initializer(v7.model.mutable_graph(), "slope", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  auto g7 = import_proto(v7.model);
  EXPECT_EQ(node_named(*g7, "n").input(1), g7->find_value("slope"));
}

TEST(OnnxNormalize, ScatterCastConstantAndFriends) {
  auto scatter = one_node(9, "Scatter", {"3", "3"}, {"idx", "upd"});
  add_int64_initializer(scatter.model.mutable_graph(), "idx", {1, 3}, {1, 0, 2});
  add_float_initializer(scatter.model.mutable_graph(), "upd", {1, 3}, {1, 2, 3});
  set_int(scatter.node, "axis", 0);
  auto sg = import_proto(scatter.model);
  const ir::Node& s = node_named(*sg, "n");
  EXPECT_EQ(s.op_type(), "ScatterElements");
  EXPECT_EQ(s.num_inputs(), 3u);
  EXPECT_EQ(s.attr_int("axis"), 0);
  EXPECT_EQ(sg->outputs()[0]->producer(), &s);

  auto cast = one_node(5, "Cast", {"2"});
  set_string(cast.node, "to", "INT32");
  EXPECT_EQ(node_named(*import_proto(cast.model), "n").attr_int("to"),
            static_cast<int64_t>(DType::Int32));

  onnx::ModelProto c = make_model(13);
  auto* cn = add_node(c.mutable_graph(), "Constant", {}, {"y"}, "k");
  set_floats(cn, "value_floats", {0.5f, 2.0f});
  add_untyped_output(c.mutable_graph(), "y");
  auto k_graph = import_proto(c);
  const ir::Node& k = node_named(*k_graph, "k");
  EXPECT_FALSE(k.has_attribute("value_floats"));
  EXPECT_EQ(k.attr_tensor("value").shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(k.attr_tensor("value").scalar_as_double(1), 2.0);

  auto topk = one_node(9, "TopK", {"5"});
  topk.node->add_output("i");
  set_int(topk.node, "k", 3);
  EXPECT_EQ(constant_ints(node_named(*import_proto(topk.model), "n").input(1)),
            (std::vector<int64_t>{3}));

  auto drop = one_node(6, "Dropout", {"4"});
  set_float(drop.node, "ratio", 0.25f);
  set_int(drop.node, "is_test", 1);
  auto d_graph = import_proto(drop.model);
  const ir::Node& d = node_named(*d_graph, "n");
  EXPECT_TRUE(d.attributes().empty());
  EXPECT_EQ(d.input(1)->constant().scalar_as_double(), 0.25);

  auto bn = one_node(7, "BatchNormalization", {"2", "3"}, {"s", "b", "mean", "var"});
  for (const char* name : {"s", "b", "mean", "var"})
    add_float_initializer(bn.model.mutable_graph(), name, {3}, {1, 2, 3});
  set_int(bn.node, "spatial", 1);
  set_float(bn.node, "epsilon", 1e-3f);
  auto* consumed = add_attr(bn.node, "consumed_inputs", onnx::AttributeProto::INTS);
  consumed->add_ints(0);
  auto b_graph = import_proto(bn.model);
  const ir::Node& b = node_named(*b_graph, "n");
  EXPECT_FALSE(b.has_attribute("spatial"));
  EXPECT_FALSE(b.has_attribute("consumed_inputs"));
  EXPECT_FALSE(b.has_attribute("training_mode"));
  EXPECT_EQ(b.attr_float("epsilon"), 1e-3f);
}

TEST(OnnxNormalize, NodesInsideSubgraphsAreNormalisedToo) {
  onnx::ModelProto m = make_model(11);
  auto* g = m.mutable_graph();
  add_input(g, "cond", TensorProto::BOOL, {});
  add_input(g, "x", TensorProto::FLOAT, {"2", "3"});
  onnx::GraphProto then_branch;
  auto* rs = add_node(&then_branch, "ReduceSum", {"x"}, {"t"}, "sum");
  set_ints(rs, "axes", {1});
  add_untyped_output(&then_branch, "t");
  onnx::GraphProto else_branch;
  auto* rm = add_node(&else_branch, "ReduceMax", {"x"}, {"e"}, "max");
  set_ints(rm, "axes", {1});
  add_untyped_output(&else_branch, "e");
  auto* if_node = add_node(g, "If", {"cond"}, {"y"}, "branch");
  set_graph(if_node, "then_branch", then_branch);
  set_graph(if_node, "else_branch", else_branch);
  add_untyped_output(g, "y");
  auto graph = import_proto(m);
  ir::Graph& then_g = node_named(*graph, "branch").attr_graph("then_branch");
  const ir::Node& sum = node_named(then_g, "branch/sum");
  ASSERT_EQ(sum.num_inputs(), 2u);
  // The new constant lives in the subgraph that uses it.
  EXPECT_EQ(sum.input(1)->owner(), &then_g);
  EXPECT_EQ(constant_ints(sum.input(1)), (std::vector<int64_t>{1}));
}

TEST(OnnxNormalize, BatchedScan8BecomesALoopOverScan9) {
  onnx::ModelProto m = make_model(8);
  auto* g = m.mutable_graph();
  add_input(g, "init", TensorProto::FLOAT, {"2", "3"});
  add_input(g, "xs", TensorProto::FLOAT, {"2", "5", "3"});
  onnx::GraphProto body;
  add_input(&body, "acc_in", TensorProto::FLOAT, {"3"});
  add_input(&body, "x", TensorProto::FLOAT, {"3"});
  add_node(&body, "Add", {"acc_in", "x"}, {"acc_out"});
  add_node(&body, "Identity", {"acc_out"}, {"step"});
  add_untyped_output(&body, "acc_out");
  add_untyped_output(&body, "step");
  auto* scan = add_node(g, "Scan", {"", "init", "xs"}, {"final", "steps"}, "scan");
  set_graph(scan, "body", body);
  set_int(scan, "num_scan_inputs", 1);
  set_ints(scan, "directions", {1});
  add_output(g, "final", TensorProto::FLOAT, {"2", "3"});
  add_output(g, "steps", TensorProto::FLOAT, {"2", "5", "3"});
  auto graph = import_proto(m);

  const ir::Node& loop = node_named(*graph, "scan");
  EXPECT_EQ(loop.op_type(), "Loop");
  EXPECT_EQ(loop.input(1), nullptr);
  ASSERT_EQ(loop.num_outputs(), 2u);
  EXPECT_EQ(graph->outputs()[0]->producer(), &loop);
  EXPECT_EQ(graph->outputs()[1]->type().to_string(), "float[2,5,3]");
  ir::Graph& loop_body = loop.attr_graph("body");
  EXPECT_EQ(loop_body.parent(), graph.get());
  ASSERT_EQ(loop_body.inputs().size(), 2u);
  ASSERT_EQ(loop_body.outputs().size(), 3u);
  const ir::Node& inner = node_named(loop_body, "scan/scan");
  EXPECT_EQ(inner.op_type(), "Scan");
  EXPECT_EQ(inner.attr_int("num_scan_inputs"), 1);
  EXPECT_EQ(inner.attr_ints("scan_input_directions"), (std::vector<int64_t>{1}));
  EXPECT_FALSE(inner.has_attribute("directions"));
  EXPECT_EQ(inner.attr_graph("body").parent(), &loop_body);
  ASSERT_EQ(inner.num_inputs(), 2u);
  EXPECT_EQ(inner.input(0)->producer()->op_type(), "Gather");
  EXPECT_EQ(inner.input(0)->producer()->input(0), graph->find_value("init"));

  scan->set_input(0, "lens");
  add_input(g, "lens", TensorProto::INT32, {"2"});
  expect_error([&] { import_proto(m); }, ErrorCode::Unsupported,
               {"[Scan] node 'scan'", "sequence_lens"});
}

TEST(OnnxNormalize, RefusesLegacyFormsWithoutAnEquivalent) {
  auto bn = one_node(7, "BatchNormalization", {"2", "3", "4"}, {"s", "b", "mean", "var"});
  for (const char* name : {"s", "b", "mean", "var"})
    add_float_initializer(bn.model.mutable_graph(), name, {3, 4}, std::vector<float>(12, 1));
  set_int(bn.node, "spatial", 0);
  expect_error([&] { import_proto(bn.model); }, ErrorCode::Unsupported,
               {"model 'test.onnx'", "[BatchNormalization] node 'n'", "spatial=0"});

  auto slice = one_node(9, "Slice", {"4"});
  set_ints(slice.node, "starts", {0, 1});
  set_ints(slice.node, "ends", {2});
  expect_error([&] { import_proto(slice.model); }, ErrorCode::InvalidModel,
               {"[Slice] node 'n'", "'starts' has 2 values and 'ends' has 1"});

  auto cast = one_node(5, "Cast", {"2"});
  set_string(cast.node, "to", "QUATERNION");
  expect_error([&] { import_proto(cast.model); }, ErrorCode::InvalidModel,
               {"[Cast] node 'n'", "QUATERNION"});
}

}  // namespace
}  // namespace switchyard::onnx_test
