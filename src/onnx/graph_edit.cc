#include "onnx/graph_edit.h"

#include <functional>

#include "ir/check.h"

namespace switchyard::onnx_import::detail {

NodeNames::NodeNames(const ir::Graph& root) { collect(root); }

void NodeNames::collect(const ir::Graph& graph) {
  for (const auto& node : graph.nodes()) {
    used_.insert(node->name());
    for (const ir::Graph* sub : node->subgraphs()) collect(*sub);
  }
}

std::string NodeNames::claim(const std::string& wanted) {
  if (used_.insert(wanted).second) return wanted;
  for (size_t k = 1;; ++k) {
    std::string candidate = fmt::format("{}_{}", wanted, k);
    if (used_.insert(candidate).second) return candidate;
  }
}

namespace {

// A constant of `values` (1-D, or a scalar holding the one value) named after `base`.
template <typename T>
ir::Value* add_values(ir::Graph& graph, const std::string& base, const std::vector<T>& values,
                      bool scalar) {
  SY_ASSERT(!scalar || values.size() == 1);
  std::vector<int64_t> shape;
  if (!scalar) shape.push_back(static_cast<int64_t>(values.size()));
  ir::Tensor t(ir::DTypeOf<T>::value, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
  return graph.add_constant(graph.unique_value_name(base), std::move(t));
}

}  // namespace

ir::Value* GraphEditor::add_int64s(ir::Graph& graph, const std::string& base,
                                   const std::vector<int64_t>& values, bool scalar) {
  return add_values(graph, base, values, scalar);
}

ir::Value* GraphEditor::add_floats(ir::Graph& graph, const std::string& base,
                                   const std::vector<float>& values, bool scalar) {
  return add_values(graph, base, values, scalar);
}

ir::Node* GraphEditor::add_node(ir::Graph& graph, const std::string& op_type,
                                const std::string& name_base, const std::vector<ir::Value*>& inputs,
                                size_t num_outputs) {
  return graph.add_node(op_type, names_.claim(name_base), inputs,
                        std::vector<std::string>(num_outputs));
}

ir::Node* GraphEditor::add_node_named_outputs(ir::Graph& graph, const std::string& op_type,
                                              const std::string& name_base,
                                              const std::vector<ir::Value*>& inputs,
                                              const std::vector<std::string>& output_names) {
  return graph.add_node(op_type, names_.claim(name_base), inputs, output_names);
}

ir::Node* GraphEditor::add_named_node(ir::Graph& graph, const std::string& op_type,
                                      const std::string& name,
                                      const std::vector<ir::Value*>& inputs,
                                      const std::vector<std::string>& output_names) {
  return graph.add_node(op_type, name, inputs, output_names);
}

void GraphEditor::redirect(ir::Value* from, ir::Value* to) {
  ir::Graph* owner = from->owner();
  owner->replace_all_uses(from, to);
  // A subgraph may name an outer value directly as one of its outputs.
  std::function<void(const ir::Graph&)> walk = [&](const ir::Graph& graph) {
    for (const auto& node : graph.nodes()) {
      for (ir::Graph* sub : node->subgraphs()) {
        for (size_t i = 0; i < sub->outputs().size(); ++i)
          if (sub->outputs()[i] == from) sub->set_output(i, to);
        walk(*sub);
      }
    }
  };
  walk(*owner);
}

DetachedNode GraphEditor::detach(ir::Node* node) {
  // A node reading its own output is a cycle, which the topological sort refuses only later;
  // detaching it would leave `inputs` naming the erased output.
  for (const ir::Value* in : node->inputs())
    SY_CHECK(in == nullptr || in->producer() != node, InvalidModel,
             "{}: reads its own output '{}' (a cycle)", node->describe(), in->name());
  DetachedNode d;
  d.graph = node->owner();
  d.name = node->name();
  d.op_type = node->op_type();
  d.domain = node->domain();
  d.inputs = node->inputs();
  d.attributes = node->attributes();
  d.annotations = node->annotations();
  for (const ir::Value* out : node->outputs()) {
    d.output_names.push_back(out->name());
    d.output_types.push_back(out->type());
  }
  d.placeholder = add_node(*d.graph, "_Detached", d.name + "/_detached", {}, d.output_names.size());
  for (size_t i = 0; i < d.output_names.size(); ++i)
    redirect(node->output(i), d.placeholder->output(i));
  d.graph->remove_nodes_if([node](const ir::Node& n) { return &n == node; });
  return d;
}

void GraphEditor::reattach(DetachedNode& d) {
  for (size_t i = 0; i < d.output_names.size(); ++i) {
    ir::Value* v = d.graph->find_local_value(d.output_names[i]);
    SY_ASSERT(v != nullptr && v->producer() != nullptr);
    if (v->type().is_unknown()) v->set_type(d.output_types[i]);
    redirect(d.placeholder->output(i), v);
  }
  ir::Node* placeholder = d.placeholder;
  d.graph->remove_nodes_if([placeholder](const ir::Node& n) { return &n == placeholder; });
  d.placeholder = nullptr;
}

std::optional<int64_t> known_rank(const ir::Value* value) {
  if (!value) return std::nullopt;
  if (value->is_constant()) return value->constant().rank();
  if (value->type().has_rank()) return value->type().rank();
  return std::nullopt;
}

std::optional<ir::DType> known_dtype(const ir::Value* value) {
  if (!value) return std::nullopt;
  if (value->is_constant()) return value->constant().dtype();
  if (value->type().is_tensor() && value->type().dtype != ir::DType::Undefined)
    return value->type().dtype;
  return std::nullopt;
}

void set_input_at(ir::Node& node, size_t index, ir::Value* value) {
  while (node.num_inputs() <= index) node.add_input(nullptr);
  node.set_input(index, value);
}

}  // namespace switchyard::onnx_import::detail
