// GraphBuilder: the public graph-building API over ir::Graph. Each node is inferred by the
// ops schemas as it is added; branches and loop bodies are child graphs whose nodes read the
// enclosing graphs' values by pointer, as the importer represents ONNX outer-scope references.
#include "switchyard/builder.hpp"

#include <algorithm>
#include <set>

#include "ir/check.h"
#include "ir/graph.h"
#include "ops/schema.h"
#include "switchyard/switchyard.hpp"

namespace switchyard {

namespace {

// Names shared by a builder and the builders of its subgraphs: every value and node name of
// the tree, so generated names never collide with each other or with the user's.
struct NameTable {
  std::set<std::string> used;
  int64_t counter = 0;

  std::string fresh(const std::string& base) {
    while (true) {
      std::string candidate = fmt::format("{}_{}", base, counter++);
      if (used.insert(candidate).second) return candidate;
    }
  }
  bool claim(const std::string& name) { return used.insert(name).second; }
};

// Drops the uses that a body's nodes hold on enclosing values, before the body is discarded.
void detach_body(ir::Graph& body) {
  for (const auto& node : body.nodes()) {
    for (size_t i = 0; i < node->num_inputs(); ++i) node->set_input(i, nullptr);
    for (ir::Graph* sub : node->subgraphs()) detach_body(*sub);
  }
}

std::string describe_inputs(const ir::Node& node) {
  std::string out;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* v = node.input(i);
    if (!out.empty()) out += ", ";
    out += v ? fmt::format("'{}' {}", v->name(), v->type().to_string()) : std::string("(none)");
  }
  return out;
}

ir::Attribute to_ir_attribute(const std::string& name, const AttributeValue& a) {
  return std::visit(
      [&](const auto& v) -> ir::Attribute {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) return ir::Attribute::make_int(name, v);
        if constexpr (std::is_same_v<T, float>) return ir::Attribute::make_float(name, v);
        if constexpr (std::is_same_v<T, std::string>) return ir::Attribute::make_string(name, v);
        if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return ir::Attribute::make_ints(name, v);
        if constexpr (std::is_same_v<T, std::vector<float>>)
          return ir::Attribute::make_floats(name, v);
        if constexpr (std::is_same_v<T, Tensor>) return ir::Attribute::make_tensor(name, v.clone());
      },
      a.value);
}

Tensor int64_vector(const std::vector<int64_t>& values) {
  Tensor t(DType::Int64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

}  // namespace

struct GraphBuilder::Impl {
  // What graph this builder builds: assigns are graph outputs of the main graph, are lifted out
  // of an If's branch by if_else, and are refused in a loop body.
  enum class Kind { Main, Branch, LoopBody };

  std::unique_ptr<ir::Graph> owned;  // the main graph; null for a subgraph's builder
  ir::Graph* graph = nullptr;
  ir::Graph* root = nullptr;
  std::shared_ptr<NameTable> names;
  Kind kind = Kind::Main;
  bool has_outputs = false;
  // A branch's assigns, in order: the variable and its new value (an Identity of the branch).
  std::vector<std::pair<std::string, Value>> assigns;

  bool is_subgraph() const { return graph != root; }

  ir::Variable& find_variable(const std::string& name, const std::string& what) const {
    for (ir::Variable& v : root->mutable_variables())
      if (v.name == name) return v;
    SY_THROW(InvalidArgument, "GraphBuilder::{}: no variable '{}' (declare it with variable())",
             what, name);
  }

  // Throws InvalidArgument when variable `name` cannot be assigned in this graph: in a loop body,
  // or a second time.
  void check_assignable(const std::string& name) const {
    SY_CHECK(kind != Kind::LoopBody, InvalidArgument,
             "GraphBuilder::assign '{}': an assign inside a loop body is not supported; carry the "
             "value through the loop and assign its result",
             name);
    bool assigned = kind == Kind::Main
                        ? !find_variable(name, "assign").assigned.empty()
                        : std::any_of(assigns.begin(), assigns.end(),
                                      [&](const auto& a) { return a.first == name; });
    SY_CHECK(!assigned, InvalidArgument,
             "GraphBuilder::assign '{}': the variable is already assigned in graph '{}' (one "
             "assign per variable and graph; an if_else branch's assign counts for its If)",
             name, graph->name());
  }

  // Records `value` as variable `name`'s new value in this graph, through an Identity node named
  // after the variable: the main graph's hidden output, or a branch's pending assign.
  Value record_assign(const std::string& name, const Value& value) {
    check_assignable(name);
    std::string out = names->fresh(name + "_assign");
    ir::Node* id = graph->add_node("Identity", out, {value.internal()}, {out});
    ops::infer_node(*id);
    Value result(id->output(0));
    if (kind == Kind::Main) {
      graph->add_output(id->output(0));
      find_variable(name, "assign").assigned = out;
    } else {
      assigns.emplace_back(name, result);
    }
    return result;
  }

  // Whether `v` may be read by nodes of this graph: it lives here or in an enclosing graph.
  void check_visible(const Value& v, const std::string& what) const {
    SY_CHECK(v.valid(), InvalidArgument, "GraphBuilder: {}: the value is not set", what);
    for (const ir::Graph* g = graph; g; g = g->parent())
      if (v.internal()->owner() == g) return;
    SY_THROW(InvalidArgument,
             "GraphBuilder: {}: value '{}' belongs to another builder or to a branch or loop "
             "body this graph does not enclose",
             what, v.name());
  }

  // Adds a node, infers it, and returns its outputs; on rejection removes it again and throws
  // InvalidArgument naming the op and its inputs.
  std::vector<Value> add_node(const std::string& type, const std::vector<Value>& inputs,
                              std::vector<ir::Attribute> attributes, int num_outputs,
                              const std::string& domain = "") {
    SY_CHECK(num_outputs >= 0, InvalidArgument, "GraphBuilder: [{}]: {} outputs asked for", type,
             num_outputs);
    std::vector<ir::Value*> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].valid()) {
        in.push_back(nullptr);
        continue;
      }
      check_visible(inputs[i], fmt::format("[{}] input {}", type, i));
      in.push_back(inputs[i].internal());
    }
    std::string node_name = names->fresh(type);
    std::vector<std::string> out_names;
    for (int i = 0; i < num_outputs; ++i)
      out_names.push_back(num_outputs == 1 ? node_name : names->fresh(node_name + "_out"));
    ir::Node* node = graph->add_node(type, node_name, in, out_names, domain);
    for (auto& a : attributes) node->set_attribute(std::move(a));
    attributes.clear();
    try {
      ops::infer_node(*node);
    } catch (const Error& e) {
      std::string message =
          fmt::format("GraphBuilder: {} (inputs: {})", e.message(), describe_inputs(*node));
      graph->remove_nodes_if([&](const ir::Node& n) { return &n == node; });
      throw Error(ErrorCode::InvalidArgument, message);
    }
    std::vector<Value> out;
    for (size_t i = 0; i < node->num_outputs(); ++i) out.push_back(Value(node->output(i)));
    return out;
  }

  // A child graph of this one with its own builder.
  std::pair<std::shared_ptr<ir::Graph>, GraphBuilder> child(const std::string& name,
                                                            Kind child_kind) {
    auto sub = std::make_shared<ir::Graph>(name, graph);
    auto impl = std::make_unique<Impl>();
    impl->graph = sub.get();
    impl->root = root;
    impl->names = names;
    impl->kind = child_kind;
    return {sub, GraphBuilder(std::move(impl))};
  }

  // A Loop body's inputs: the iteration index, the condition, then one input typed like each of
  // `like` (the carried values); returns the index and the carried inputs.
  std::pair<Value, std::vector<Value>> add_loop_inputs(ir::Graph& body, const std::string& base,
                                                       const std::vector<Value>& like) {
    ir::Value* index =
        body.add_input(names->fresh(base + "_index"), ir::Type::tensor(DType::Int64, ir::Shape{}));
    body.add_input(names->fresh(base + "_cond"), ir::Type::tensor(DType::Bool, ir::Shape{}));
    std::vector<Value> carried;
    for (const Value& v : like)
      carried.push_back(
          Value(body.add_input(names->fresh(base + "_carried"), v.internal()->type())));
    return {Value(index), std::move(carried)};
  }

  // Makes `values` the outputs of `body` (a child graph): values produced elsewhere (outer
  // values, body inputs, repeats) pass through an Identity so each output is the body's own.
  void set_body_outputs(ir::Graph& body, const std::vector<Value>& values,
                        const std::string& what) {
    for (size_t i = 0; i < values.size(); ++i) {
      check_visible_from(body, values[i], fmt::format("{} result {}", what, i));
      ir::Value* v = values[i].internal();
      if (v->owner() != &body || v->producer() == nullptr || body.is_output(v)) {
        ir::Node* id = body.add_node("Identity", names->fresh("Identity"), {v},
                                     {names->fresh(v->name() + "_out")});
        ops::infer_node(*id);
        v = id->output(0);
      }
      body.add_output(v);
    }
  }

  void check_visible_from(const ir::Graph& body, const Value& v, const std::string& what) const {
    SY_CHECK(v.valid(), InvalidArgument, "GraphBuilder: {}: the value is not set", what);
    for (const ir::Graph* g = &body; g; g = g->parent())
      if (v.internal()->owner() == g) return;
    SY_THROW(InvalidArgument, "GraphBuilder: {}: value '{}' is not visible in the body", what,
             v.name());
  }

  // Builds a body with `fn`, detaching it from the enclosing values if `fn` throws.
  template <typename Fn>
  void build_body(ir::Graph& body, Fn&& fn) {
    try {
      fn();
    } catch (...) {
      detach_body(body);
      throw;
    }
  }
};

// ---- Value

const std::string& Value::name() const {
  SY_CHECK(valid(), InvalidArgument, "Value::name: the value is not set");
  return value_->name();
}

DType Value::dtype() const {
  SY_CHECK(valid(), InvalidArgument, "Value::dtype: the value is not set");
  return value_->type().is_tensor() ? value_->type().dtype : DType::Undefined;
}

bool Value::has_shape() const {
  SY_CHECK(valid(), InvalidArgument, "Value::has_shape: the value is not set");
  return value_->type().has_rank();
}

std::vector<Dim> Value::shape() const {
  std::vector<Dim> out;
  if (!has_shape()) return out;
  for (const ir::Dim& d : *value_->type().shape) {
    Dim dim;
    dim.value = d.value;
    dim.symbol = d.symbol;
    out.push_back(dim);
  }
  return out;
}

std::string Value::type_string() const {
  SY_CHECK(valid(), InvalidArgument, "Value::type_string: the value is not set");
  return value_->type().to_string();
}

// ---- GraphBuilder

GraphBuilder::GraphBuilder(const std::string& graph_name) : impl_(std::make_unique<Impl>()) {
  impl_->owned = std::make_unique<ir::Graph>(graph_name.empty() ? "main" : graph_name);
  impl_->graph = impl_->owned.get();
  impl_->root = impl_->graph;
  impl_->names = std::make_shared<NameTable>();
}

GraphBuilder::GraphBuilder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GraphBuilder::~GraphBuilder() = default;
GraphBuilder::GraphBuilder(GraphBuilder&&) noexcept = default;
GraphBuilder& GraphBuilder::operator=(GraphBuilder&&) noexcept = default;

Value GraphBuilder::placeholder(const std::string& name, DType dtype, std::vector<Dim> dims) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  SY_CHECK(!impl_->is_subgraph(), InvalidArgument,
           "GraphBuilder::placeholder '{}': a branch or loop body has no placeholders; use the "
           "enclosing graph's values",
           name);
  SY_CHECK(!name.empty(), InvalidArgument, "GraphBuilder::placeholder: the name is empty");
  SY_CHECK(dtype_is_known(dtype), InvalidArgument,
           "GraphBuilder::placeholder '{}': dtype {} is not supported", name, dtype_name(dtype));
  SY_CHECK(impl_->names->claim(name), InvalidArgument,
           "GraphBuilder::placeholder '{}': the name is already used", name);
  ir::Shape shape;
  for (const Dim& d : dims) {
    if (d.value >= 0)
      shape.emplace_back(d.value);
    else if (!d.symbol.empty())
      shape.emplace_back(d.symbol);
    else
      shape.emplace_back();
  }
  return Value(impl_->graph->add_input(name, ir::Type::tensor(dtype, std::move(shape))));
}

Value GraphBuilder::constant(const Tensor& t, const std::string& name) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  SY_CHECK(t.defined(), InvalidArgument, "GraphBuilder::constant '{}': the tensor is empty", name);
  std::string n = name.empty() ? impl_->names->fresh("const") : name;
  SY_CHECK(name.empty() || impl_->names->claim(name), InvalidArgument,
           "GraphBuilder::constant '{}': the name is already used", name);
  // Constants live in the main graph, where every body can read them.
  return Value(impl_->root->add_constant(n, t.clone()));
}

Value GraphBuilder::scalar(DType dtype, double value) {
  Tensor t(dtype, {});
  switch (dtype) {
    case DType::Float32:
      t.data<float>()[0] = static_cast<float>(value);
      break;
    case DType::Float64:
      t.data<double>()[0] = value;
      break;
    case DType::Int32:
      t.data<int32_t>()[0] = static_cast<int32_t>(value);
      break;
    case DType::Int64:
      t.data<int64_t>()[0] = static_cast<int64_t>(value);
      break;
    case DType::Bool:
      t.data<bool>()[0] = value != 0;
      break;
    default: {
      Tensor wide(DType::Float64, {});
      wide.data<double>()[0] = value;
      return cast(constant(wide), dtype);
    }
  }
  return constant(t);
}

std::vector<Value> GraphBuilder::op(const std::string& type, const std::vector<Value>& inputs,
                                    const Attributes& attributes, int num_outputs) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  std::vector<ir::Attribute> attrs;
  for (const auto& [name, value] : attributes) attrs.push_back(to_ir_attribute(name, value));
  return impl_->add_node(type, inputs, std::move(attrs), num_outputs);
}

Value GraphBuilder::add(Value a, Value b) { return op("Add", {a, b})[0]; }
Value GraphBuilder::sub(Value a, Value b) { return op("Sub", {a, b})[0]; }
Value GraphBuilder::mul(Value a, Value b) { return op("Mul", {a, b})[0]; }
Value GraphBuilder::div(Value a, Value b) { return op("Div", {a, b})[0]; }
Value GraphBuilder::matmul(Value a, Value b) { return op("MatMul", {a, b})[0]; }
Value GraphBuilder::relu(Value x) { return op("Relu", {x})[0]; }
Value GraphBuilder::sigmoid(Value x) { return op("Sigmoid", {x})[0]; }
Value GraphBuilder::tanh(Value x) { return op("Tanh", {x})[0]; }
Value GraphBuilder::softmax(Value x, int64_t axis) {
  return op("Softmax", {x}, {{"axis", axis}})[0];
}
Value GraphBuilder::reshape(Value x, const std::vector<int64_t>& shape) {
  return op("Reshape", {x, constant(int64_vector(shape))})[0];
}
Value GraphBuilder::transpose(Value x, const std::vector<int64_t>& perm) {
  return op("Transpose", {x}, {{"perm", perm}})[0];
}
Value GraphBuilder::concat(const std::vector<Value>& values, int64_t axis) {
  return op("Concat", values, {{"axis", axis}})[0];
}
Value GraphBuilder::reduce_sum(Value x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<Value> inputs{x};
  if (!axes.empty()) inputs.push_back(constant(int64_vector(axes)));
  return op("ReduceSum", inputs, {{"keepdims", int64_t{keepdims ? 1 : 0}}})[0];
}
Value GraphBuilder::conv2d(Value x, Value weights, Value bias, const Conv2dOptions& options) {
  Attributes attrs{{"group", options.group}};
  if (!options.strides.empty()) attrs.emplace("strides", options.strides);
  if (!options.pads.empty()) attrs.emplace("pads", options.pads);
  if (!options.dilations.empty()) attrs.emplace("dilations", options.dilations);
  std::vector<Value> inputs{x, weights};
  if (bias.valid()) inputs.push_back(bias);
  return op("Conv", inputs, attrs)[0];
}
Value GraphBuilder::stencil(Value x, Value weights, const StencilOptions& options) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  std::vector<ir::Attribute> attrs = {ir::Attribute::make_string("reduction", options.reduction),
                                      ir::Attribute::make_string("padding", options.padding)};
  if (!options.strides.empty())
    attrs.push_back(ir::Attribute::make_ints("strides", options.strides));
  if (!options.dilations.empty())
    attrs.push_back(ir::Attribute::make_ints("dilations", options.dilations));
  if (!options.pads.empty()) attrs.push_back(ir::Attribute::make_ints("pads", options.pads));
  return impl_->add_node("Stencil", {x, weights}, std::move(attrs), 1,
                         std::string(ops::kSwitchyardDomain))[0];
}
Value GraphBuilder::gather_nd(Value data, Value indices, int64_t batch_dims) {
  return op("GatherND", {data, indices}, {{"batch_dims", batch_dims}})[0];
}
Value GraphBuilder::cast(Value x, DType to) {
  return op("Cast", {x}, {{"to", int64_t{static_cast<int32_t>(to)}}})[0];
}
Value GraphBuilder::less(Value a, Value b) { return op("Less", {a, b})[0]; }
Value GraphBuilder::greater(Value a, Value b) { return op("Greater", {a, b})[0]; }
Value GraphBuilder::equal(Value a, Value b) { return op("Equal", {a, b})[0]; }
Value GraphBuilder::where(Value condition, Value a, Value b) {
  return op("Where", {condition, a, b})[0];
}

std::vector<Value> GraphBuilder::if_else(Value predicate, const BranchFn& then_fn,
                                         const BranchFn& else_fn) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  impl_->check_visible(predicate, "[If] predicate");
  std::string base = impl_->names->fresh("If");
  auto then_child = impl_->child(base + "/then_branch", Impl::Kind::Branch);
  auto else_child = impl_->child(base + "/else_branch", Impl::Kind::Branch);
  std::shared_ptr<ir::Graph>& then_graph = then_child.first;
  std::shared_ptr<ir::Graph>& else_graph = else_child.first;
  GraphBuilder& then_builder = then_child.second;
  GraphBuilder& else_builder = else_child.second;
  size_t num_outputs = 0;
  size_t num_results = 0;
  // Variables assigned in either branch: each becomes an extra output of the If (the new value
  // in a branch that assigns it, the variable's current value in the other), assigned here.
  std::vector<std::string> lifted;
  impl_->build_body(*then_graph, [&] {
    impl_->build_body(*else_graph, [&] {
      std::vector<Value> a = then_fn(then_builder);
      std::vector<Value> b = else_fn(else_builder);
      SY_CHECK(a.size() == b.size(), InvalidArgument,
               "GraphBuilder: [If] '{}': then_fn returns {} values but else_fn returns {}", base,
               a.size(), b.size());
      num_results = a.size();
      for (const auto* branch : {&then_builder.impl_->assigns, &else_builder.impl_->assigns})
        for (const auto& [name, value] : *branch)
          if (std::find(lifted.begin(), lifted.end(), name) == lifted.end()) {
            impl_->check_assignable(name);
            lifted.push_back(name);
          }
      SY_CHECK(!a.empty() || !lifted.empty(), InvalidArgument,
               "GraphBuilder: [If] '{}': the branches return nothing and assign nothing", base);
      auto assigned_in = [&](const GraphBuilder& branch, const std::string& name) {
        for (const auto& [n, value] : branch.impl_->assigns)
          if (n == name) return value;
        return Value(impl_->root->find_local_value(name));
      };
      for (const std::string& name : lifted) {
        a.push_back(assigned_in(then_builder, name));
        b.push_back(assigned_in(else_builder, name));
      }
      impl_->set_body_outputs(*then_graph, a, "[If] then_fn");
      impl_->set_body_outputs(*else_graph, b, "[If] else_fn");
      num_outputs = a.size();
    });
  });
  std::vector<ir::Attribute> attrs{ir::Attribute::make_graph("then_branch", then_graph),
                                   ir::Attribute::make_graph("else_branch", else_graph)};
  then_graph.reset();
  else_graph.reset();
  std::vector<Value> outs =
      impl_->add_node("If", {predicate}, std::move(attrs), static_cast<int>(num_outputs));
  for (size_t k = 0; k < lifted.size(); ++k) impl_->record_assign(lifted[k], outs[num_results + k]);
  outs.resize(num_results);
  return outs;
}

std::vector<Value> GraphBuilder::for_loop(Value iterations, std::vector<Value> initial,
                                          const ForBodyFn& body_fn) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  impl_->check_visible(iterations, "[Loop] iterations");
  for (size_t i = 0; i < initial.size(); ++i)
    impl_->check_visible(initial[i], fmt::format("[Loop] initial value {}", i));
  std::string base = impl_->names->fresh("Loop");
  auto child = impl_->child(base + "/body", Impl::Kind::LoopBody);
  std::shared_ptr<ir::Graph>& body = child.first;
  GraphBuilder& builder = child.second;
  impl_->build_body(*body, [&] {
    auto [index, carried] = impl_->add_loop_inputs(*body, base, initial);
    Value cond(body->inputs()[1]);
    std::vector<Value> next = body_fn(builder, index, carried);
    SY_CHECK(next.size() == initial.size(), InvalidArgument,
             "GraphBuilder: [Loop] '{}': the body returns {} values for {} carried values", base,
             next.size(), initial.size());
    next.insert(next.begin(), Value(cond));
    impl_->set_body_outputs(*body, next, "[Loop] body");
  });
  std::vector<ir::Attribute> attrs{ir::Attribute::make_graph("body", body)};
  body.reset();
  std::vector<Value> inputs{iterations, Value()};
  inputs.insert(inputs.end(), initial.begin(), initial.end());
  return impl_->add_node("Loop", inputs, std::move(attrs), static_cast<int>(initial.size()));
}

std::vector<Value> GraphBuilder::while_loop(std::vector<Value> initial, const BeforeFn& before,
                                            const AfterFn& after) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  for (size_t i = 0; i < initial.size(); ++i)
    impl_->check_visible(initial[i], fmt::format("[Loop] initial value {}", i));
  // The first test runs here, so a loop whose first condition fails runs no iteration.
  std::pair<Value, std::vector<Value>> first = before(*this, initial);
  Value first_cond = first.first;
  std::vector<Value>& first_results = first.second;
  impl_->check_visible(first_cond, "[Loop] while condition");
  SY_CHECK(!first_results.empty(), InvalidArgument,
           "GraphBuilder: [Loop] while: before_fn returns no values");
  std::string base = impl_->names->fresh("Loop");
  auto child = impl_->child(base + "/body", Impl::Kind::LoopBody);
  std::shared_ptr<ir::Graph>& body = child.first;
  GraphBuilder& builder = child.second;
  impl_->build_body(*body, [&] {
    for (const Value& v : first_results) impl_->check_visible(v, "[Loop] before_fn result");
    std::vector<Value> carried = impl_->add_loop_inputs(*body, base, first_results).second;
    std::vector<Value> state = after(builder, carried);
    auto [cond, results] = before(builder, state);
    SY_CHECK(results.size() == first_results.size(), InvalidArgument,
             "GraphBuilder: [Loop] '{}': before_fn returns {} values, then {}", base,
             first_results.size(), results.size());
    results.insert(results.begin(), cond);
    impl_->set_body_outputs(*body, results, "[Loop] while body");
  });
  std::vector<ir::Attribute> attrs{ir::Attribute::make_graph("body", body)};
  body.reset();
  std::vector<Value> inputs{Value(), first_cond};
  inputs.insert(inputs.end(), first_results.begin(), first_results.end());
  return impl_->add_node("Loop", inputs, std::move(attrs), static_cast<int>(first_results.size()));
}

Value GraphBuilder::variable(const std::string& name, const Tensor& initial) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  SY_CHECK(!impl_->is_subgraph(), InvalidArgument,
           "GraphBuilder::variable '{}': a branch or loop body declares no variables; declare it "
           "in the main graph and use it here",
           name);
  SY_CHECK(!name.empty(), InvalidArgument, "GraphBuilder::variable: the name is empty");
  SY_CHECK(initial.defined(), InvalidArgument,
           "GraphBuilder::variable '{}': the initial tensor is empty", name);
  SY_CHECK(dtype_is_known(initial.dtype()) && initial.dtype() != DType::String, InvalidArgument,
           "GraphBuilder::variable '{}': dtype {} is not supported", name,
           dtype_name(initial.dtype()));
  SY_CHECK(impl_->names->claim(name), InvalidArgument,
           "GraphBuilder::variable '{}': the name is already used", name);
  ir::Value* input = impl_->graph->add_input(
      name, ir::Type::tensor(initial.dtype(), ir::make_shape(initial.shape())));
  impl_->graph->mutable_variables().push_back({name, initial.clone(), ""});
  return Value(input);
}

Value GraphBuilder::assign(Value variable, Value value) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  SY_CHECK(variable.valid(), InvalidArgument, "GraphBuilder::assign: the variable is not set");
  const ir::Value* v = variable.internal();
  SY_CHECK(
      v->owner() == impl_->root && v->is_graph_input() && impl_->root->find_variable(v->name()),
      InvalidArgument,
      "GraphBuilder::assign: value '{}' is not a variable of this graph (declare one with "
      "variable())",
      v->name());
  return assign(v->name(), value);
}

Value GraphBuilder::assign(const std::string& variable, Value value) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  const ir::Variable& var = impl_->find_variable(variable, "assign");
  impl_->check_visible(value, fmt::format("assign '{}'", variable));
  const ir::Type want = ir::Type::tensor(var.initial.dtype(), ir::make_shape(var.initial.shape()));
  const ir::Type& got = value.internal()->type();
  bool fits = got.is_tensor() || got.is_unknown();
  if (got.is_tensor() && got.dtype != DType::Undefined) fits = fits && got.dtype == want.dtype;
  if (got.is_tensor() && got.shape) {
    fits = fits && got.shape->size() == want.shape->size();
    for (size_t i = 0; fits && i < got.shape->size(); ++i)
      fits = !(*got.shape)[i].is_static() || (*got.shape)[i] == (*want.shape)[i];
  }
  SY_CHECK(fits, InvalidArgument,
           "GraphBuilder::assign '{}': the value '{}' is {}, but the variable is {}", variable,
           value.name(), got.to_string(), want.to_string());
  return impl_->record_assign(variable, value);
}

std::vector<Value> GraphBuilder::control_dependency(const std::vector<Value>& dependents,
                                                    const std::vector<Value>& on) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  for (size_t i = 0; i < on.size(); ++i)
    impl_->check_visible(on[i], fmt::format("control_dependency: 'on' value {}", i));
  for (size_t i = 0; i < dependents.size(); ++i)
    impl_->check_visible(dependents[i], fmt::format("control_dependency: dependent {}", i));
  if (on.empty()) return dependents;
  std::vector<Value> out;
  for (const Value& d : dependents) {
    std::vector<Value> inputs{d};
    inputs.insert(inputs.end(), on.begin(), on.end());
    out.push_back(impl_->add_node("Depend", inputs, {}, 1, std::string(ops::kSwitchyardDomain))[0]);
  }
  return out;
}

Value GraphBuilder::control_dependency(Value dependent, const std::vector<Value>& on) {
  return control_dependency(std::vector<Value>{dependent}, on)[0];
}

void GraphBuilder::outputs(const std::vector<std::pair<std::string, Value>>& named) {
  SY_CHECK(impl_ && impl_->graph, InvalidArgument, "GraphBuilder: the builder was built");
  SY_CHECK(!impl_->is_subgraph(), InvalidArgument,
           "GraphBuilder::outputs: a branch or loop body returns its values instead");
  for (const auto& [name, value] : named) {
    impl_->check_visible(value, fmt::format("output '{}'", name));
    SY_CHECK(!name.empty(), InvalidArgument, "GraphBuilder::outputs: an output has no name");
    SY_CHECK(impl_->names->claim(name), InvalidArgument,
             "GraphBuilder::outputs: output name '{}' is already used", name);
    ir::Node* id = impl_->graph->add_node("Identity", impl_->names->fresh("Identity"),
                                          {value.internal()}, {name});
    ops::infer_node(*id);
    impl_->graph->add_output(id->output(0));
  }
  impl_->has_outputs = impl_->has_outputs || !named.empty();
}

Model GraphBuilder::build() && {
  SY_CHECK(impl_ && impl_->owned, InvalidArgument,
           "GraphBuilder::build: not a main graph's builder, or already built");
  bool assigns = false;
  for (const ir::Variable& v : impl_->owned->variables()) assigns = assigns || !v.assigned.empty();
  SY_CHECK(impl_->has_outputs || assigns, InvalidArgument,
           "GraphBuilder::build: no outputs were named and no variable is assigned");
  std::unique_ptr<ir::Graph> graph = std::move(impl_->owned);
  impl_.reset();
  ir::verify(*graph);
  return Model::from_graph(std::move(graph));
}

}  // namespace switchyard
