// Graph, Node and Value: the one in-memory form of a model. Knows no op; src/ops gives nodes
// meaning. Graphs own their nodes and values; subgraphs (If/Loop/Scan bodies) live in node
// attributes and may read values of enclosing graphs by pointer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "ir/annotation.h"
#include "ir/attribute.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace switchyard::ir {

class Graph;
class Node;

/// An edge: produced by one node output, a graph input, or an initializer (constant).
class Value {
 public:
  const std::string& name() const { return name_; }
  const Type& type() const { return type_; }
  Type& mutable_type() { return type_; }
  void set_type(Type t) { type_ = std::move(t); }

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  /// (node, input index) pairs that read this value, in any graph of the tree.
  const std::vector<std::pair<Node*, int>>& uses() const { return uses_; }
  Graph* owner() const { return owner_; }

  bool is_constant() const { return constant_.has_value(); }
  /// The initializer data; only valid when is_constant().
  const Tensor& constant() const { return *constant_; }
  void set_constant(Tensor t) { constant_ = std::move(t); }
  bool is_graph_input() const { return is_graph_input_; }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  Type type_;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<std::pair<Node*, int>> uses_;
  Graph* owner_ = nullptr;
  std::optional<Tensor> constant_;
  bool is_graph_input_ = false;
};

class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }
  /// The op kind as an integer, set by src/ops (ops::OpKind); -1 until resolved.
  int kind_id() const { return kind_id_; }
  void set_kind_id(int id) { kind_id_ = id; }
  Graph* owner() const { return owner_; }

  /// Inputs; nullptr stands for an omitted optional input.
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  /// Input i, or nullptr when omitted or out of range.
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }
  void set_input(size_t i, Value* v);
  void add_input(Value* v);

  // Attributes.
  const std::vector<Attribute>& attributes() const { return attributes_; }
  const Attribute* find_attribute(const std::string& name) const;
  bool has_attribute(const std::string& name) const { return find_attribute(name) != nullptr; }
  void set_attribute(Attribute a);
  void remove_attribute(const std::string& name);
  // Typed getters: throw InvalidModel naming the node when the attribute has another kind,
  // or when a required one (no default) is missing.
  int64_t attr_int(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback) const;
  std::vector<float> attr_floats(const std::string& name) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> fallback) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  const Tensor& attr_tensor(const std::string& name) const;
  /// A subgraph attribute (If branches, Loop/Scan body).
  Graph& attr_graph(const std::string& name) const;
  /// All subgraphs held by this node's attributes.
  std::vector<Graph*> subgraphs() const;

  // Annotations (ir/annotation.h): typed payloads of the passes, at most one of each type.
  /// The annotation of exactly type T, or nullptr when the node has none.
  template <class T>
  const T* annotation() const;
  /// Attaches `a` (not null), replacing the annotation of its dynamic type if there is one.
  void annotate(std::shared_ptr<const NodeAnnotation> a);
  /// Removes the annotation of exactly type T, if any.
  template <class T>
  void remove_annotation();
  /// Every annotation, in the order first attached; copy a node's with copy_annotations.
  const std::vector<std::shared_ptr<const NodeAnnotation>>& annotations() const {
    return annotations_;
  }
  /// Attaches every annotation of `from` (shared, not copied), replacing those of the same types.
  void copy_annotations(const Node& from);

  /// "[Conv] node 'conv1'" — the prefix every message about this node starts with.
  std::string describe() const;

 private:
  friend class Graph;
  std::string name_;
  std::string op_type_;
  std::string domain_;
  int kind_id_ = -1;
  Graph* owner_ = nullptr;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Attribute> attributes_;
  std::vector<std::shared_ptr<const NodeAnnotation>> annotations_;
};

template <class T>
const T* Node::annotation() const {
  static_assert(std::is_base_of_v<NodeAnnotation, T>, "annotations derive from NodeAnnotation");
  for (const auto& a : annotations_) {
    const NodeAnnotation& held = *a;
    if (typeid(held) == typeid(T)) return static_cast<const T*>(&held);
  }
  return nullptr;
}

template <class T>
void Node::remove_annotation() {
  std::erase_if(annotations_, [](const auto& a) {
    const NodeAnnotation& held = *a;
    return typeid(held) == typeid(T);
  });
}

/// State that persists across runs of an executable (GraphBuilder::variable): read through the
/// graph input of its name, written by the graph output `assigned` (an assign), which the
/// executable commits when a run succeeds. Only a main graph has variables.
struct Variable {
  std::string name;      ///< the variable's graph input
  Tensor initial;        ///< its value when an executable is made from the graph
  std::string assigned;  ///< the graph output holding its new value; empty: never assigned
};

class Graph {
 public:
  explicit Graph(std::string name = "main", Graph* parent = nullptr)
      : name_(std::move(name)), parent_(parent) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  Graph* parent() const { return parent_; }
  void set_parent(Graph* p) { parent_ = p; }
  /// Depth of nesting: 0 for the main graph.
  int depth() const;

  /// Creates a value owned by this graph. Names must be unique within the graph tree scope.
  Value* add_value(const std::string& name, Type type = {});
  /// Creates a graph input.
  Value* add_input(const std::string& name, Type type);
  /// Creates an initializer (a constant value).
  Value* add_constant(const std::string& name, Tensor data);
  /// Marks an existing value as a graph output.
  void add_output(Value* v);
  void set_output(size_t i, Value* v);
  /// Creates a node; `inputs` may hold nullptr for omitted optional inputs. Output values are
  /// created with the given names (empty name = omitted optional output, value still created
  /// with a unique generated name).
  Node* add_node(const std::string& op_type, const std::string& name,
                 const std::vector<Value*>& inputs, const std::vector<std::string>& output_names,
                 const std::string& domain = "");

  /// Finds a value by name here or in an enclosing graph; nullptr if none.
  Value* find_value(const std::string& name) const;
  /// Finds a value by name in this graph only.
  Value* find_local_value(const std::string& name) const;
  Node* find_node(const std::string& name) const;
  /// A name not used by any value in this graph tree, built from `base`.
  std::string unique_value_name(const std::string& base);

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  /// Whether `v` is one of this graph's outputs.
  bool is_output(const Value* v) const;
  /// Every value owned by this graph (inputs, constants, node outputs).
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  std::vector<Value*> constants() const;

  /// The variables, in declaration order (verify checks that each names a tensor input of its
  /// initial value's dtype and shape, and that `assigned` is an output of that type).
  const std::vector<Variable>& variables() const { return variables_; }
  std::vector<Variable>& mutable_variables() { return variables_; }
  /// The variable read through input `name`, or nullptr.
  const Variable* find_variable(const std::string& name) const;

  /// Values of enclosing graphs that nodes of this graph (or its subgraphs) read.
  std::vector<Value*> outer_scope_values() const;

  /// Removes nodes for which `dead(node)` is true; their outputs must be unused.
  template <typename Pred>
  void remove_nodes_if(Pred dead);
  /// Replaces a node by constants: its output values keep their names and uses and get `data`
  /// (one tensor per output); the node is removed.
  void replace_node_with_constants(Node* node, std::vector<Tensor> data);
  /// Makes `v` output `i` of `node` in place of that output (which must be unread and no graph
  /// output; it is dropped). `v` must have no producer (its node was removed): it keeps its
  /// name, readers and graph-output status. Fusion passes use it to keep a chain's last name.
  void adopt_output(Node* node, size_t i, Value* v);
  /// Rewires every use of `from` (and graph outputs) to `to`.
  void replace_all_uses(Value* from, Value* to);
  /// Reorders nodes topologically (stable with respect to file order); throws InvalidModel
  /// naming a node on a cycle.
  void sort_topologically();

  /// Total nodes including those in subgraphs.
  size_t count_nodes_recursive() const;

 private:
  friend class Node;
  void erase_node(Node* n);
  std::string name_;
  Graph* parent_ = nullptr;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> value_by_name_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::vector<Variable> variables_;
  size_t name_counter_ = 0;
};

template <typename Pred>
void Graph::remove_nodes_if(Pred dead) {
  std::vector<Node*> doomed;
  for (auto& n : nodes_)
    if (dead(*n)) doomed.push_back(n.get());
  for (Node* n : doomed) erase_node(n);
}

/// Checks structural invariants: every input defined before use (or in an enclosing scope),
/// unique value names, outputs produced, uses lists consistent, subgraphs verified
/// recursively. Throws InvalidModel naming the offending node or value.
void verify(const Graph& graph);

}  // namespace switchyard::ir
