// Schemas of the control_flow family (see op_kinds.def): If, Loop, Scan and SequenceMap. Each
// gives its body graphs' inputs types from the node's inputs (merged with what the model
// declared), infers the bodies, and derives the node's outputs from the bodies' outputs.
#include "ops/schema.h"
#include "ops/sequence_types.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

void collect_values(const ir::Graph& g, std::vector<ir::Value*>& out) {
  for (const auto& v : g.values()) out.push_back(v.get());
  for (const auto& n : g.nodes())
    for (const ir::Graph* s : n->subgraphs()) collect_values(*s, out);
}

// The types of every value of a body (nested bodies included) as declared before inference, so
// that a re-inference with more general input types starts from the declarations again.
class TypeSnapshot {
 public:
  explicit TypeSnapshot(const ir::Graph& body) {
    collect_values(body, values_);
    for (const ir::Value* v : values_) types_.push_back(v->type());
  }
  void restore() const {
    for (size_t i = 0; i < values_.size(); ++i) values_[i]->set_type(types_[i]);
  }

 private:
  std::vector<ir::Value*> values_;
  std::vector<ir::Type> types_;
};

const ir::Type& element_of(const ir::Type& t) {
  static const ir::Type kUnknown{};
  return t.element ? *t.element : kUnknown;
}

// Gives body input i the type it receives, merged with the type the model declared for it.
void bind_body_input(const InferContext& ctx, ir::Graph& body, size_t i, const ir::Type& given) {
  ir::Value* in = body.inputs()[i];
  auto merged = merge_declared_type(given, in->type());
  if (!merged)
    ctx.fail("body '{}' input {} '{}' is declared {} but receives {}", body.name(), i, in->name(),
             in->type().to_string(), given.to_string());
  in->set_type(std::move(*merged));
}

// A condition or trip count: a tensor of `dtype` with one element, where the type says so much.
void check_scalar_input(const InferContext& ctx, size_t i, ir::DType dtype, const char* what) {
  if (!ctx.has_input(i)) return;
  require_dtype(ctx, i, {dtype});
  const ir::Type& t = ctx.input_type(i);
  if (!t.has_rank()) return;
  for (const ir::Dim& d : *t.shape)
    if (d.is_static() && d.value != 1)
      ctx.fail("{} '{}' must hold one element, got shape {}", what, ctx.node().input(i)->name(),
               ir::shape_to_string(*t.shape));
}

void check_body_arity(const InferContext& ctx, const ir::Graph& body, size_t inputs,
                      size_t outputs) {
  if (body.inputs().size() != inputs)
    ctx.fail("body '{}' has {} inputs, expected {}", body.name(), body.inputs().size(), inputs);
  if (body.outputs().size() != outputs)
    ctx.fail("body '{}' has {} outputs, expected {}", body.name(), body.outputs().size(), outputs);
}

// Infers a Loop or Scan body whose state variables (body inputs and outputs from index
// `first_state_in` / `first_state_out`, `num_states` of them) may change type from one
// iteration to the next: re-infers with the union of what enters and what the body returns
// until that union no longer changes. `bind_fixed` gives the other body inputs their types.
// Returns the final state types.
template <typename BindFixed>
std::vector<ir::Type> infer_stateful_body(const InferContext& ctx, ir::Graph& body,
                                          std::vector<ir::Type> states, size_t first_state_in,
                                          size_t first_state_out, BindFixed&& bind_fixed) {
  TypeSnapshot declared(body);
  for (int round = 0;; ++round) {
    SY_ASSERT(round < 256);
    declared.restore();
    bind_fixed();
    for (size_t k = 0; k < states.size(); ++k)
      bind_body_input(ctx, body, first_state_in + k, states[k]);
    ctx.infer_subgraph(body);
    bool stable = true;
    for (size_t k = 0; k < states.size(); ++k) {
      const ir::Type& entered = body.inputs()[first_state_in + k]->type();
      const ir::Type& returned = body.outputs()[first_state_out + k]->type();
      auto both = unite_types(entered, returned);
      if (!both)
        ctx.fail("state value {} enters body '{}' as {} but the body returns {}", k, body.name(),
                 entered.to_string(), returned.to_string());
      auto next = unite_types(states[k], *both);
      if (!next)
        ctx.fail("state value {} starts as {} but enters body '{}' as {}", k, states[k].to_string(),
                 body.name(), both->to_string());
      if (!same_type(*next, states[k])) {
        states[k] = std::move(*next);
        stable = false;
      }
    }
    if (stable) return states;
  }
}

// The final value of a state: what the body returns, widened by the initial value where both
// are of one kind (no iteration at all returns the initial value).
ir::Type final_state_type(const ir::Type& initial, const ir::Type& returned) {
  if (initial.kind == returned.kind) {
    if (auto u = unite_types(initial, returned)) return *u;
  }
  return returned;
}

void infer_if(InferContext& ctx) {
  ir::Node& node = ctx.node();
  check_scalar_input(ctx, 0, ir::DType::Bool, "condition");
  ir::Graph& then_branch = node.attr_graph("then_branch");
  ir::Graph& else_branch = node.attr_graph("else_branch");
  check_body_arity(ctx, then_branch, 0, node.num_outputs());
  check_body_arity(ctx, else_branch, 0, node.num_outputs());
  ctx.infer_subgraph(then_branch);
  ctx.infer_subgraph(else_branch);

  const ir::Tensor* cond = ctx.input_constant(0);
  if (cond && cond->numel() == 1) {
    const ir::Graph& taken = cond->scalar_as_int(0) ? then_branch : else_branch;
    for (size_t i = 0; i < node.num_outputs(); ++i) ctx.set_output(i, taken.outputs()[i]->type());
    return;
  }
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const ir::Type& a = then_branch.outputs()[i]->type();
    const ir::Type& b = else_branch.outputs()[i]->type();
    auto u = unite_types(a, b);
    if (!u)
      ctx.fail("output {}: then_branch gives {} but else_branch gives {}", i, a.to_string(),
               b.to_string());
    ctx.set_output(i, std::move(*u));
  }
}

void infer_loop(InferContext& ctx) {
  ir::Node& node = ctx.node();
  ir::Graph& body = node.attr_graph("body");
  size_t num_states = node.num_inputs() > 2 ? node.num_inputs() - 2 : 0;
  if (node.num_outputs() < num_states)
    ctx.fail("has {} outputs, fewer than its {} loop-carried values", node.num_outputs(),
             num_states);
  size_t num_scans = node.num_outputs() - num_states;
  check_body_arity(ctx, body, 2 + num_states, 1 + num_states + num_scans);
  check_scalar_input(ctx, 0, ir::DType::Int64, "trip count");
  check_scalar_input(ctx, 1, ir::DType::Bool, "condition");

  std::vector<ir::Type> initial;
  for (size_t k = 0; k < num_states; ++k) initial.push_back(ctx.input_type(2 + k));
  std::vector<ir::Type> states = infer_stateful_body(ctx, body, initial, 2, 1, [&] {
    bind_body_input(ctx, body, 0, ir::Type::tensor(ir::DType::Int64, ir::Shape{}));
    bind_body_input(ctx, body, 1, ir::Type::tensor(ir::DType::Bool, ir::Shape{}));
  });

  const ir::Type& cond_out = body.outputs()[0]->type();
  if (!cond_out.is_unknown() && !(cond_out.is_tensor() && (cond_out.dtype == ir::DType::Bool ||
                                                           cond_out.dtype == ir::DType::Undefined)))
    ctx.fail("body '{}' output 0 (the condition) must be a bool tensor, got {}", body.name(),
             cond_out.to_string());
  for (size_t k = 0; k < num_states; ++k)
    ctx.set_output(k, final_state_type(initial[k], body.outputs()[1 + k]->type()));
  for (size_t j = 0; j < num_scans; ++j) {
    const ir::Type& t = body.outputs()[1 + num_states + j]->type();
    if (t.is_unknown()) continue;
    if (!t.is_tensor())
      ctx.fail("scan output {} of body '{}' must be a tensor, got {}", j, body.name(),
               t.to_string());
    std::optional<ir::Shape> shape;
    if (t.shape) {
      shape = ir::Shape{ir::Dim()};
      shape->insert(shape->end(), t.shape->begin(), t.shape->end());
    }
    ctx.set_output(num_states + j, ir::Type::tensor(t.dtype, std::move(shape)));
  }
}

// Reads an optional ints attribute of `count` entries (default all zeros).
std::vector<int64_t> scan_axes_attr(const InferContext& ctx, const char* name, size_t count) {
  std::vector<int64_t> v = ctx.node().attr_ints(name, std::vector<int64_t>(count, 0));
  if (v.size() != count)
    ctx.fail("attribute '{}' has {} entries, expected {}", name, v.size(), count);
  return v;
}

void check_directions(const InferContext& ctx, const char* name, const std::vector<int64_t>& dirs) {
  for (int64_t d : dirs)
    if (d != 0 && d != 1) ctx.fail("attribute '{}' entries must be 0 or 1, got {}", name, d);
}

void infer_scan(InferContext& ctx) {
  ir::Node& node = ctx.node();
  ir::Graph& body = node.attr_graph("body");
  int64_t num_scan_inputs = node.attr_int("num_scan_inputs");
  if (num_scan_inputs < 1 || num_scan_inputs > static_cast<int64_t>(node.num_inputs()))
    ctx.fail("attribute 'num_scan_inputs' {} must be in [1, {}]", num_scan_inputs,
             node.num_inputs());
  size_t num_scan_in = static_cast<size_t>(num_scan_inputs);
  size_t num_states = node.num_inputs() - num_scan_in;
  if (node.num_outputs() < num_states)
    ctx.fail("has {} outputs, fewer than its {} state values", node.num_outputs(), num_states);
  size_t num_scan_out = node.num_outputs() - num_states;
  check_body_arity(ctx, body, node.num_inputs(), node.num_outputs());
  std::vector<int64_t> in_axes = scan_axes_attr(ctx, "scan_input_axes", num_scan_in);
  std::vector<int64_t> in_dirs = scan_axes_attr(ctx, "scan_input_directions", num_scan_in);
  std::vector<int64_t> out_axes = scan_axes_attr(ctx, "scan_output_axes", num_scan_out);
  std::vector<int64_t> out_dirs = scan_axes_attr(ctx, "scan_output_directions", num_scan_out);
  check_directions(ctx, "scan_input_directions", in_dirs);
  check_directions(ctx, "scan_output_directions", out_dirs);

  // Each scan input enters the body without its scan axis; all share one sequence length.
  std::vector<ir::Type> slices;
  ir::Dim length;
  for (size_t j = 0; j < num_scan_in; ++j) {
    size_t i = num_states + j;
    const ir::Type& t = ctx.input_tensor(i);
    if (!t.has_rank()) {
      slices.push_back(ir::Type::tensor(t.dtype));
      continue;
    }
    if (t.rank() == 0) ctx.fail("scan input {} '{}' is a scalar", j, node.input(i)->name());
    size_t a = static_cast<size_t>(normalize_axis(ctx, in_axes[j], t.rank()));
    const ir::Dim& d = (*t.shape)[a];
    if (d.is_static() && length.is_static() && d.value != length.value)
      ctx.fail("scan input {} '{}' has length {} along its scan axis, others {}", j,
               node.input(i)->name(), d.value, length.value);
    if (d.is_static() || (length.is_unknown() && d.is_symbolic())) length = d;
    ir::Shape s = *t.shape;
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(a));
    slices.push_back(ir::Type::tensor(t.dtype, std::move(s)));
  }

  std::vector<ir::Type> initial;
  for (size_t k = 0; k < num_states; ++k) initial.push_back(ctx.input_type(k));
  infer_stateful_body(ctx, body, initial, 0, 0, [&] {
    for (size_t j = 0; j < num_scan_in; ++j) bind_body_input(ctx, body, num_states + j, slices[j]);
  });

  for (size_t k = 0; k < num_states; ++k)
    ctx.set_output(k, final_state_type(initial[k], body.outputs()[k]->type()));
  for (size_t j = 0; j < num_scan_out; ++j) {
    const ir::Type& t = body.outputs()[num_states + j]->type();
    if (t.is_unknown()) continue;
    if (!t.is_tensor())
      ctx.fail("scan output {} of body '{}' must be a tensor, got {}", j, body.name(),
               t.to_string());
    if (!t.shape) {
      ctx.set_output(num_states + j, ir::Type::tensor(t.dtype));
      continue;
    }
    ir::Shape s = *t.shape;
    size_t a = static_cast<size_t>(normalize_axis(ctx, out_axes[j], t.rank() + 1));
    s.insert(s.begin() + static_cast<std::ptrdiff_t>(a), length);
    ctx.set_output(num_states + j, ir::Type::tensor(t.dtype, std::move(s)));
  }
}

void infer_sequence_map(InferContext& ctx) {
  ir::Node& node = ctx.node();
  ir::Graph& body = node.attr_graph("body");
  check_body_arity(ctx, body, node.num_inputs(), node.num_outputs());
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.fail("input {} is omitted", i);
    const ir::Type& t = ctx.input_type(i);
    if (i == 0 && !t.is_sequence() && !t.is_unknown())
      ctx.fail("input 0 '{}' must be a sequence, got {}", node.input(0)->name(), t.to_string());
    if (t.is_optional())
      ctx.fail("input {} '{}' must be a sequence or a tensor, got {}", i, node.input(i)->name(),
               t.to_string());
    bind_body_input(ctx, body, i, t.is_sequence() ? element_of(t) : t);
  }
  ctx.infer_subgraph(body);
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const ir::Type& t = body.outputs()[i]->type();
    if (!t.is_unknown() && !t.is_tensor())
      ctx.fail("body '{}' output {} must be a tensor, got {}", body.name(), i, t.to_string());
    ctx.set_output(i, ir::Type::sequence(t));
  }
}

}  // namespace

void register_control_flow_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::If, 1, 1, 1, -1, infer_if});
  r.add(OpSchema{OpKind::Loop, 0, -1, 0, -1, infer_loop});
  r.add(OpSchema{OpKind::Scan, 1, -1, 1, -1, infer_scan});
  r.add(OpSchema{OpKind::SequenceMap, 1, -1, 1, -1, infer_sequence_map});
}

}  // namespace switchyard::ops
