// Opset-normalisation rules that add nodes or replace a node by another op: legacy
// broadcasting (binary ops, PRelu), 2-D-coercing softmax, Upsample, Resize-10, Scatter,
// Dropout's typed mask, per-group GroupNormalization and batched Scan-8. The table of all rules is
// in normalize_opsets.cc.

#include "ir/check.h"
#include "ir/checked_math.h"
#include "onnx/normalize_rules.h"

namespace switchyard::onnx_import::detail {

namespace {

ir::Value* require_input(const ir::Node& n, size_t index, const char* what) {
  ir::Value* v = n.input(index);
  SY_CHECK(v != nullptr, InvalidModel, "{}: input {} ({}) is missing", n.describe(), index, what);
  return v;
}

void require_outputs(const ir::Node& n, size_t count) {
  SY_CHECK(n.num_outputs() == count, InvalidModel, "{}: has {} outputs, expected {}", n.describe(),
           n.num_outputs(), count);
}

void copy_attributes(const DetachedNode& from, ir::Node& to) {
  for (const ir::Attribute& a : from.attributes) to.set_attribute(a);
  for (const auto& a : from.annotations) to.annotate(a);
}

ir::Node* add_shape(RuleContext& c, ir::Graph& g, const std::string& name, ir::Value* of) {
  return c.edit.add_node(g, "Shape", name, {of});
}

// Aligns input 1 (B) of `n` with input 0 (A) at `axis` the way opsets before 7 did, for numpy
// broadcasting: B gets rank(A) - axis - rank(B) trailing ones.
void align_at_axis(RuleContext& c, ir::Node& n, int64_t axis) {
  ir::Value* a = require_input(n, 0, "A");
  ir::Value* b = require_input(n, 1, "B");
  ir::Graph& g = *n.owner();
  std::optional<int64_t> rank_a = known_rank(a);
  std::optional<int64_t> rank_b = known_rank(b);
  if (axis < 0 && rank_a) axis += *rank_a;
  SY_CHECK(axis >= 0, InvalidModel, "{}: broadcast axis {} is negative", n.describe(), axis);
  // Bounded by any rank, so the rank arithmetic below cannot overflow.
  SY_CHECK(axis < ir::kMaxRank, InvalidModel, "{}: broadcast axis {} is past the largest rank {}",
           n.describe(), axis, ir::kMaxRank);

  if (rank_a && rank_b) {
    int64_t trailing = *rank_a - axis - *rank_b;
    SY_CHECK(trailing >= 0, InvalidModel,
             "{}: input 1 of rank {} does not fit at axis {} of input 0 of rank {}", n.describe(),
             *rank_b, axis, *rank_a);
    if (trailing == 0) return;
    if (b->is_constant()) {
      std::vector<int64_t> shape = b->constant().shape();
      shape.resize(shape.size() + static_cast<size_t>(trailing), 1);
      n.set_input(1, g.add_constant(g.unique_value_name(b->name() + "_broadcast"),
                                    b->constant().reshaped(shape)));
      return;
    }
    std::vector<int64_t> axes;
    for (int64_t k = 0; k < trailing; ++k) axes.push_back(*rank_b + k);
    ir::Value* axes_value = c.edit.add_int64s(g, n.name() + "_axes", axes);
    n.set_input(
        1, c.edit.add_node(g, "Unsqueeze", n.name() + "/unsqueeze_b", {b, axes_value})->output(0));
    return;
  }

  // A rank known only at run time: B' = Reshape(B, Concat(Shape(B), ones(rank(A) - axis -
  // rank(B)))).
  const std::string base = n.name() + "/broadcast_b";
  ir::Value* shape_b = b->is_constant()
                           ? c.edit.add_int64s(g, n.name() + "_shape_b", b->constant().shape())
                           : add_shape(c, g, base + "_shape", b)->output(0);
  ir::Value* rank_a_value =
      add_shape(c, g, base + "_rank_a", add_shape(c, g, base + "_shape_a", a)->output(0))
          ->output(0);
  ir::Value* offset = nullptr;
  if (rank_b) {
    offset = c.edit.add_int64s(g, n.name() + "_offset", {axis + *rank_b});
  } else {
    ir::Value* rank_b_value = add_shape(c, g, base + "_rank_b", shape_b)->output(0);
    offset = c.edit
                 .add_node(g, "Add", base + "_offset",
                           {rank_b_value, c.edit.add_int64s(g, n.name() + "_axis", {axis})})
                 ->output(0);
  }
  ir::Value* count = c.edit.add_node(g, "Sub", base + "_count", {rank_a_value, offset})->output(0);
  ir::Node* ones = c.edit.add_node(g, "ConstantOfShape", base + "_ones", {count});
  ir::Tensor one(ir::DType::Int64, {1});
  *one.data<int64_t>() = 1;
  ones->set_attribute(ir::Attribute::make_tensor("value", std::move(one)));
  ir::Node* target = c.edit.add_node(g, "Concat", base + "_target", {shape_b, ones->output(0)});
  target->set_attribute(ir::Attribute::make_int("axis", 0));
  n.set_input(1, c.edit.add_node(g, "Reshape", base, {b, target->output(0)})->output(0));
}

}  // namespace

// Opset 1-6 binary ops aligned B with A at `axis` when broadcast=1; without an axis they
// aligned trailing dims, as numpy does.
void rewrite_legacy_broadcast(RuleContext& c, ir::Node*& node) {
  ir::Node& n = *node;
  int64_t broadcast = n.attr_int("broadcast", 0);
  std::optional<int64_t> axis;
  if (n.has_attribute("axis")) axis = n.attr_int("axis");
  n.remove_attribute("broadcast");
  n.remove_attribute("axis");
  if (broadcast != 0 && axis) align_at_axis(c, n, *axis);
}

// PRelu before opset 7 applied a 1-D slope per channel (axis 1) unless it had one element.
void rewrite_legacy_prelu(RuleContext& c, ir::Node*& node) {
  ir::Node& n = *node;
  const ir::Value* x = require_input(n, 0, "X");
  const ir::Value* slope = require_input(n, 1, "slope");
  if (known_rank(slope) != 1) return;
  if (slope->is_constant() && slope->constant().numel() == 1) return;
  const ir::Type& st = slope->type();
  if (st.has_rank() && (*st.shape)[0].is_static() && (*st.shape)[0].value == 1) return;
  std::optional<int64_t> rank_x = known_rank(x);
  if (rank_x && *rank_x < 2) return;
  align_at_axis(c, n, 1);
}

// Before opset 13 Softmax, LogSoftmax and Hardmax coerced the input to 2-D at `axis` (default 1)
// and normalised over everything from `axis` on. That equals the new per-axis form only when
// `axis` is the last dim; otherwise Flatten → op(axis=-1) → Reshape back to Shape(x).
void rewrite_legacy_softmax(RuleContext& c, ir::Node*& node) {
  ir::Node& n = *node;
  int64_t axis = n.attr_int("axis", 1);
  ir::Value* x = require_input(n, 0, "input");
  require_outputs(n, 1);
  if (std::optional<int64_t> rank = known_rank(x)) {
    int64_t normalised = axis < 0 ? axis + *rank : axis;
    SY_CHECK(normalised >= 0 && normalised <= *rank, InvalidModel,
             "{}: axis {} is out of range for rank {}", n.describe(), axis, *rank);
    if (normalised == *rank - 1) {
      n.set_attribute(ir::Attribute::make_int("axis", -1));
      return;
    }
  }
  ir::Graph& g = *n.owner();
  DetachedNode d = c.edit.detach(node);
  ir::Node* flatten = c.edit.add_node(g, "Flatten", d.name + "/flatten", {x});
  flatten->set_attribute(ir::Attribute::make_int("axis", axis));
  ir::Node* op = c.edit.add_named_node(g, d.op_type, d.name, {flatten->output(0)}, {""});
  copy_attributes(d, *op);
  op->set_attribute(ir::Attribute::make_int("axis", -1));
  ir::Node* shape = add_shape(c, g, d.name + "/shape", x);
  c.edit.add_node_named_outputs(g, "Reshape", d.name + "/reshape",
                                {op->output(0), shape->output(0)}, {d.output_names[0]});
  c.edit.reattach(d);
  node = op;
}

// Upsample (opsets 7-9; deprecated in 10) is Resize with asymmetric coordinates and, for
// nearest, floor rounding. Upsample-1 gave height_scale/width_scale, Upsample-7 a scales attr.
void rewrite_upsample(RuleContext& c, ir::Node*& node) {
  ir::Node& n = *node;
  ir::Graph& g = *n.owner();
  ir::Value* x = require_input(n, 0, "X");
  require_outputs(n, 1);
  std::string mode = n.attr_string("mode", "nearest");
  if (mode == "bilinear") mode = "linear";
  ir::Value* scales = n.input(1);
  if (!scales && n.has_attribute("scales")) {
    scales = c.edit.add_floats(g, n.name() + "_scales", n.attr_floats("scales"));
  } else if (!scales) {
    SY_CHECK(n.has_attribute("height_scale") && n.has_attribute("width_scale"), InvalidModel,
             "{}: has no scales (input 1, 'scales', or 'height_scale' and 'width_scale')",
             n.describe());
    scales =
        c.edit.add_floats(g, n.name() + "_scales",
                          {1.0f, 1.0f, n.attr_float("height_scale"), n.attr_float("width_scale")});
  }
  DetachedNode d = c.edit.detach(node);
  ir::Node* resize =
      c.edit.add_named_node(g, "Resize", d.name, {x, nullptr, scales}, {d.output_names[0]});
  resize->set_attribute(ir::Attribute::make_string("mode", mode));
  resize->set_attribute(ir::Attribute::make_string("coordinate_transformation_mode", "asymmetric"));
  if (mode == "nearest") resize->set_attribute(ir::Attribute::make_string("nearest_mode", "floor"));
  c.edit.reattach(d);
  node = resize;
}

// Resize-10 took (X, scales) and computed asymmetric coordinates with floor for nearest.
void rewrite_resize_10(RuleContext&, ir::Node*& node) {
  ir::Node& n = *node;
  SY_CHECK(n.num_inputs() == 2, InvalidModel, "{}: Resize-10 takes 2 inputs, got {}", n.describe(),
           n.num_inputs());
  ir::Value* scales = require_input(n, 1, "scales");
  n.set_input(1, nullptr);
  set_input_at(n, 2, scales);
  std::string mode = n.attr_string("mode", "nearest");
  n.set_attribute(ir::Attribute::make_string("coordinate_transformation_mode", "asymmetric"));
  if (mode == "nearest") n.set_attribute(ir::Attribute::make_string("nearest_mode", "floor"));
}

// Scatter-9/11 is ScatterElements-11 under its old name.
void rewrite_scatter(RuleContext& c, ir::Node*& node) {
  ir::Graph& g = *node->owner();
  DetachedNode d = c.edit.detach(node);
  ir::Node* scatter = c.edit.add_named_node(g, "ScatterElements", d.name, d.inputs, d.output_names);
  copy_attributes(d, *scatter);
  c.edit.reattach(d);
  node = scatter;
}

// Dropout before 12 took `ratio` as an attribute (and before 7 `is_test`); before 10 its mask
// had the input's type rather than bool.
void rewrite_dropout(RuleContext& c, ir::Node*& node) {
  ir::Node& n = *node;
  ir::Graph& g = *n.owner();
  if (n.has_attribute("ratio")) {
    float ratio = n.attr_float("ratio");
    n.remove_attribute("ratio");
    if (!n.input(1)) set_input_at(n, 1, c.edit.add_floats(g, n.name() + "_ratio", {ratio}, true));
  }
  n.remove_attribute("is_test");
  if (c.opset >= 10 || n.num_outputs() < 2) return;
  ir::Value* x = require_input(n, 0, "data");
  DetachedNode d = c.edit.detach(node);
  ir::Node* dropout =
      c.edit.add_named_node(g, "Dropout", d.name, d.inputs, {d.output_names[0], ""});
  copy_attributes(d, *dropout);
  c.edit.add_node_named_outputs(g, "CastLike", d.name + "/mask_cast", {dropout->output(1), x},
                                {d.output_names[1]});
  c.edit.reattach(d);
  node = dropout;
}

// GroupNormalization-18 had scale and bias per group ([G]); opset 21 has them per channel
// ([C]). Each becomes Reshape(Expand(Unsqueeze(v, [1]), [G, C/G]), [-1]).
void rewrite_group_norm_per_group(RuleContext& c, ir::Node*& node) {
  ir::Node& n = *node;
  int64_t groups = n.attr_int("num_groups");
  ir::Value* x = require_input(n, 0, "X");
  require_input(n, 1, "scale");
  require_input(n, 2, "bias");
  const ir::Type& xt = x->type();
  if (xt.has_rank() && xt.rank() >= 2 && (*xt.shape)[1].is_static() &&
      (*xt.shape)[1].value == groups) {
    return;  // one channel per group: the two forms agree
  }
  ir::Graph& g = *n.owner();
  const std::string base = n.name() + "/per_channel";
  ir::Node* channels = add_shape(c, g, base + "_channels", x);
  channels->set_attribute(ir::Attribute::make_int("start", 1));
  channels->set_attribute(ir::Attribute::make_int("end", 2));
  ir::Value* groups_value = c.edit.add_int64s(g, n.name() + "_groups", {groups});
  ir::Value* per_group =
      c.edit.add_node(g, "Div", base + "_per_group", {channels->output(0), groups_value})
          ->output(0);
  ir::Node* target = c.edit.add_node(g, "Concat", base + "_target", {groups_value, per_group});
  target->set_attribute(ir::Attribute::make_int("axis", 0));
  ir::Value* axis_one = c.edit.add_int64s(g, n.name() + "_unsqueeze_axes", {1});
  ir::Value* flat = c.edit.add_int64s(g, n.name() + "_flat", {-1});
  for (size_t index : {size_t{1}, size_t{2}}) {
    ir::Value* v = n.input(index);
    std::string what = index == 1 ? "_scale" : "_bias";
    ir::Value* u =
        c.edit.add_node(g, "Unsqueeze", base + what + "_unsqueeze", {v, axis_one})->output(0);
    ir::Value* e =
        c.edit.add_node(g, "Expand", base + what + "_expand", {u, target->output(0)})->output(0);
    n.set_input(index, c.edit.add_node(g, "Reshape", base + what, {e, flat})->output(0));
  }
}

// Scan-8 ran its body per batch element (dim 0 of every state and scan input), with an optional
// per-batch sequence_lens input. Without sequence_lens it is a Loop over the batch whose body
// gathers element b and runs Scan-9 on it; the Loop stacks the results along dim 0 again.
void rewrite_scan_8(RuleContext& c, ir::Node*& node) {
  ir::Node& n = *node;
  SY_CHECK(n.input(0) == nullptr, Unsupported,
           "{}: Scan before opset 9 with a sequence_lens input (per-batch lengths) is not "
           "supported",
           n.describe());
  int64_t num_scan_inputs = n.attr_int("num_scan_inputs");
  ir::Graph& body = n.attr_graph("body");
  SY_CHECK(num_scan_inputs >= 1 && static_cast<size_t>(num_scan_inputs) < n.num_inputs(),
           InvalidModel, "{}: num_scan_inputs {} does not fit its {} inputs", n.describe(),
           num_scan_inputs, n.num_inputs());
  for (size_t i = 1; i < n.num_inputs(); ++i) require_input(n, i, "state or scan input");
  ir::Graph& g = *n.owner();
  DetachedNode d = c.edit.detach(node);

  auto loop_body = std::make_shared<ir::Graph>(d.name + "/batch", &g);
  ir::Value* iteration = loop_body->add_input(loop_body->unique_value_name(d.name + "_batch"),
                                              ir::Type::tensor(ir::DType::Int64, ir::Shape{}));
  ir::Value* cond_in = loop_body->add_input(loop_body->unique_value_name(d.name + "_cond"),
                                            ir::Type::tensor(ir::DType::Bool, ir::Shape{}));
  std::vector<ir::Value*> per_element;
  for (size_t i = 1; i < d.inputs.size(); ++i) {
    ir::Node* gather =
        c.edit.add_node(*loop_body, "Gather", d.name + "/element", {d.inputs[i], iteration});
    gather->set_attribute(ir::Attribute::make_int("axis", 0));
    per_element.push_back(gather->output(0));
  }
  ir::Node* scan =
      c.edit.add_node(*loop_body, "Scan", d.name + "/scan", per_element, d.output_names.size());
  body.set_parent(loop_body.get());
  for (const ir::Attribute& a : d.attributes) {
    if (a.name == "directions") {
      scan->set_attribute(ir::Attribute::make_ints("scan_input_directions", a.ints));
    } else {
      scan->set_attribute(a);
    }
  }
  ir::Node* cond_out = c.edit.add_node(*loop_body, "Identity", d.name + "/cond", {cond_in});
  loop_body->add_output(cond_out->output(0));
  for (ir::Value* out : scan->outputs()) loop_body->add_output(out);

  ir::Node* shape = c.edit.add_node(g, "Shape", d.name + "/batch_shape", {d.inputs[1]});
  ir::Value* zero = c.edit.add_int64s(g, d.name + "_zero", {0}, true);
  ir::Node* batch = c.edit.add_node(g, "Gather", d.name + "/batch_size", {shape->output(0), zero});
  batch->set_attribute(ir::Attribute::make_int("axis", 0));
  ir::Node* loop =
      c.edit.add_named_node(g, "Loop", d.name, {batch->output(0), nullptr}, d.output_names);
  loop->set_attribute(ir::Attribute::make_graph("body", loop_body));
  c.edit.reattach(d);
  node = loop;
}

}  // namespace switchyard::onnx_import::detail
