#include "ir/graph.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_set>

#include "ir/check.h"

namespace switchyard::ir {

// ---- Node -------------------------------------------------------------------------------

void Node::set_input(size_t i, Value* v) {
  SY_ASSERT(i < inputs_.size());
  if (Value* old = inputs_[i]) {
    auto& u = old->uses_;
    auto it = std::find(u.begin(), u.end(), std::make_pair(this, static_cast<int>(i)));
    if (it != u.end()) u.erase(it);
  }
  inputs_[i] = v;
  if (v) v->uses_.emplace_back(this, static_cast<int>(i));
}

void Node::add_input(Value* v) {
  inputs_.push_back(nullptr);
  set_input(inputs_.size() - 1, v);
}

const Attribute* Node::find_attribute(const std::string& name) const {
  for (const auto& a : attributes_)
    if (a.name == name) return &a;
  return nullptr;
}

void Node::set_attribute(Attribute a) {
  for (auto& existing : attributes_) {
    if (existing.name == a.name) {
      existing = std::move(a);
      return;
    }
  }
  attributes_.push_back(std::move(a));
}

void Node::remove_attribute(const std::string& name) {
  std::erase_if(attributes_, [&](const Attribute& a) { return a.name == name; });
}

void Node::annotate(std::shared_ptr<const NodeAnnotation> a) {
  SY_ASSERT(a != nullptr);
  const NodeAnnotation& added = *a;
  for (auto& existing : annotations_) {
    const NodeAnnotation& held = *existing;
    if (typeid(held) == typeid(added)) {
      existing = std::move(a);
      return;
    }
  }
  annotations_.push_back(std::move(a));
}

void Node::copy_annotations(const Node& from) {
  if (&from == this) return;
  for (const auto& a : from.annotations_) annotate(a);
}

std::string Node::describe() const { return fmt::format("[{}] node '{}'", op_type_, name_); }

namespace {
const Attribute& get_attr(const Node& n, const std::string& name, Attribute::Kind kind) {
  const Attribute* a = n.find_attribute(name);
  SY_CHECK(a != nullptr, InvalidModel, "{}: required attribute '{}' is missing", n.describe(),
           name);
  SY_CHECK(a->kind == kind, InvalidModel, "{}: attribute '{}' has type {}, expected {}",
           n.describe(), name, attribute_kind_name(a->kind), attribute_kind_name(kind));
  return *a;
}
}  // namespace

int64_t Node::attr_int(const std::string& name) const {
  return get_attr(*this, name, Attribute::Kind::Int).i;
}
int64_t Node::attr_int(const std::string& name, int64_t fallback) const {
  return has_attribute(name) ? attr_int(name) : fallback;
}
float Node::attr_float(const std::string& name) const {
  return get_attr(*this, name, Attribute::Kind::Float).f;
}
float Node::attr_float(const std::string& name, float fallback) const {
  return has_attribute(name) ? attr_float(name) : fallback;
}
std::string Node::attr_string(const std::string& name) const {
  return get_attr(*this, name, Attribute::Kind::String).s;
}
std::string Node::attr_string(const std::string& name, const std::string& fallback) const {
  return has_attribute(name) ? attr_string(name) : fallback;
}
std::vector<int64_t> Node::attr_ints(const std::string& name) const {
  return get_attr(*this, name, Attribute::Kind::Ints).ints;
}
std::vector<int64_t> Node::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  return has_attribute(name) ? attr_ints(name) : fallback;
}
std::vector<float> Node::attr_floats(const std::string& name) const {
  return get_attr(*this, name, Attribute::Kind::Floats).floats;
}
std::vector<float> Node::attr_floats(const std::string& name, std::vector<float> fallback) const {
  return has_attribute(name) ? attr_floats(name) : fallback;
}
std::vector<std::string> Node::attr_strings(const std::string& name) const {
  return get_attr(*this, name, Attribute::Kind::Strings).strings;
}
const Tensor& Node::attr_tensor(const std::string& name) const {
  return get_attr(*this, name, Attribute::Kind::Tensor).t;
}
Graph& Node::attr_graph(const std::string& name) const {
  const Attribute& a = get_attr(*this, name, Attribute::Kind::Graph);
  SY_CHECK(a.g != nullptr, InvalidModel, "{}: graph attribute '{}' is empty", describe(), name);
  return *a.g;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& a : attributes_) {
    if (a.kind == Attribute::Kind::Graph && a.g) out.push_back(a.g.get());
    if (a.kind == Attribute::Kind::Graphs)
      for (const auto& g : a.graphs)
        if (g) out.push_back(g.get());
  }
  return out;
}

// ---- Graph ------------------------------------------------------------------------------

int Graph::depth() const {
  int d = 0;
  for (Graph* p = parent_; p; p = p->parent_) ++d;
  return d;
}

Value* Graph::add_value(const std::string& name, Type type) {
  std::string n = name.empty() ? unique_value_name("_v") : name;
  SY_CHECK(value_by_name_.find(n) == value_by_name_.end(), InvalidModel,
           "graph '{}': value '{}' is defined twice", name_, n);
  auto v = std::make_unique<Value>();
  v->name_ = n;
  v->type_ = std::move(type);
  v->owner_ = this;
  Value* raw = v.get();
  values_.push_back(std::move(v));
  value_by_name_[n] = raw;
  return raw;
}

Value* Graph::add_input(const std::string& name, Type type) {
  Value* v = add_value(name, std::move(type));
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

const Variable* Graph::find_variable(const std::string& name) const {
  for (const Variable& v : variables_)
    if (v.name == name) return &v;
  return nullptr;
}

Value* Graph::add_constant(const std::string& name, Tensor data) {
  Type t = Type::tensor(data.dtype(), make_shape(data.shape()));
  Value* v = add_value(name, std::move(t));
  v->constant_ = std::move(data);
  return v;
}

void Graph::add_output(Value* v) { outputs_.push_back(v); }

bool Graph::is_output(const Value* v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

void Graph::set_output(size_t i, Value* v) {
  SY_ASSERT(i < outputs_.size());
  outputs_[i] = v;
}

Node* Graph::add_node(const std::string& op_type, const std::string& name,
                      const std::vector<Value*>& inputs,
                      const std::vector<std::string>& output_names, const std::string& domain) {
  auto n = std::make_unique<Node>();
  n->op_type_ = op_type;
  n->domain_ = domain;
  n->name_ = name.empty() ? fmt::format("{}_{}", op_type, nodes_.size()) : name;
  n->owner_ = this;
  Node* raw = n.get();
  nodes_.push_back(std::move(n));
  for (Value* v : inputs) raw->add_input(v);
  for (size_t i = 0; i < output_names.size(); ++i) {
    Value* out = add_value(output_names[i].empty() ? unique_value_name(raw->name_ + "_out")
                                                   : output_names[i]);
    out->producer_ = raw;
    out->producer_output_ = static_cast<int>(i);
    raw->outputs_.push_back(out);
  }
  return raw;
}

Value* Graph::find_value(const std::string& name) const {
  for (const Graph* g = this; g; g = g->parent_) {
    if (Value* v = g->find_local_value(name)) return v;
  }
  return nullptr;
}

Value* Graph::find_local_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? nullptr : it->second;
}

Node* Graph::find_node(const std::string& name) const {
  for (const auto& n : nodes_)
    if (n->name() == name) return n.get();
  return nullptr;
}

std::string Graph::unique_value_name(const std::string& base) {
  while (true) {
    std::string candidate = fmt::format("{}__{}", base, name_counter_++);
    if (!find_value(candidate)) return candidate;
  }
}

std::vector<Value*> Graph::constants() const {
  std::vector<Value*> out;
  for (const auto& v : values_)
    if (v->is_constant()) out.push_back(v.get());
  return out;
}

std::vector<Value*> Graph::outer_scope_values() const {
  std::vector<Value*> out;
  std::unordered_set<Value*> seen;
  std::function<void(const Graph&)> walk = [&](const Graph& g) {
    for (const auto& n : g.nodes()) {
      for (Value* v : n->inputs()) {
        if (!v || seen.count(v)) continue;
        // A value is outer if its owner is a strict ancestor of *this.
        for (Graph* p = parent_; p; p = p->parent_) {
          if (v->owner() == p) {
            seen.insert(v);
            out.push_back(v);
            break;
          }
        }
      }
      for (Graph* sub : n->subgraphs()) walk(*sub);
    }
    for (Value* v : g.outputs()) {
      if (!v || seen.count(v)) continue;
      for (Graph* p = parent_; p; p = p->parent_) {
        if (v->owner() == p) {
          seen.insert(v);
          out.push_back(v);
          break;
        }
      }
    }
  };
  walk(*this);
  return out;
}

void Graph::erase_node(Node* n) {
  for (size_t i = 0; i < n->inputs_.size(); ++i) n->set_input(i, nullptr);
  // The nodes of a body that dies with it (no other node or detached copy shares it) may read
  // values of enclosing graphs: drop those uses too, or the values would keep pointers to freed
  // nodes.
  std::function<void(Graph&)> drop_body_uses = [&](Graph& body) {
    for (const auto& inner : body.nodes_) {
      for (size_t i = 0; i < inner->inputs_.size(); ++i) inner->set_input(i, nullptr);
      for (Graph* sub : inner->subgraphs()) drop_body_uses(*sub);
    }
  };
  for (const Attribute& a : n->attributes_) {
    if (a.kind == Attribute::Kind::Graph && a.g && a.g.use_count() == 1) drop_body_uses(*a.g);
    if (a.kind == Attribute::Kind::Graphs)
      for (const auto& g : a.graphs)
        if (g && g.use_count() == 1) drop_body_uses(*g);
  }
  for (Value* out : n->outputs_) {
    out->producer_ = nullptr;
    auto it = std::find_if(values_.begin(), values_.end(),
                           [&](const std::unique_ptr<Value>& v) { return v.get() == out; });
    if (it != values_.end() && out->uses_.empty() &&
        std::find(outputs_.begin(), outputs_.end(), out) == outputs_.end()) {
      value_by_name_.erase(out->name_);
      values_.erase(it);
    }
  }
  auto it = std::find_if(nodes_.begin(), nodes_.end(),
                         [&](const std::unique_ptr<Node>& p) { return p.get() == n; });
  SY_ASSERT(it != nodes_.end());
  nodes_.erase(it);
}

void Graph::replace_node_with_constants(Node* node, std::vector<Tensor> data) {
  SY_ASSERT(node->owner_ == this && data.size() == node->outputs_.size());
  for (size_t i = 0; i < data.size(); ++i) {
    Value* out = node->outputs_[i];
    out->producer_ = nullptr;
    out->producer_output_ = -1;
    out->type_ = Type::tensor(data[i].dtype(), make_shape(data[i].shape()));
    out->constant_ = std::move(data[i]);
  }
  node->outputs_.clear();
  erase_node(node);
}

void Graph::adopt_output(Node* node, size_t i, Value* v) {
  SY_ASSERT(node->owner_ == this && v->owner_ == this && i < node->outputs_.size());
  SY_ASSERT(v->producer_ == nullptr && !v->constant_.has_value() && !v->is_graph_input_);
  Value* old = node->outputs_[i];
  SY_ASSERT(old->uses_.empty() &&
            std::find(outputs_.begin(), outputs_.end(), old) == outputs_.end());
  value_by_name_.erase(old->name_);
  values_.erase(std::find_if(values_.begin(), values_.end(),
                             [&](const std::unique_ptr<Value>& p) { return p.get() == old; }));
  v->producer_ = node;
  v->producer_output_ = static_cast<int>(i);
  node->outputs_[i] = v;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  auto uses = from->uses_;
  for (auto [node, idx] : uses) node->set_input(static_cast<size_t>(idx), to);
  for (auto& o : outputs_)
    if (o == from) o = to;
}

void Graph::sort_topologically() {
  // Kahn's algorithm over local dependencies, taking ready nodes in file order. Dependencies
  // through subgraphs (a body reading a value produced in this graph) count too.
  std::unordered_map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes_.size(); ++i) index[nodes_[i].get()] = i;
  std::vector<std::vector<size_t>> consumers(nodes_.size());
  std::vector<size_t> pending(nodes_.size(), 0);
  auto local_producer = [&](Value* v) -> const Node* {
    if (!v || v->owner() != this || !v->producer()) return nullptr;
    return v->producer();
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::set<size_t> deps;
    std::function<void(const Graph&)> collect = [&](const Graph& g) {
      for (const auto& n : g.nodes()) {
        for (Value* v : n->inputs())
          if (const Node* p = local_producer(v)) deps.insert(index.at(p));
        for (Graph* s : n->subgraphs()) collect(*s);
      }
      for (Value* v : g.outputs())
        if (const Node* p = local_producer(v)) deps.insert(index.at(p));
    };
    for (Value* v : nodes_[i]->inputs())
      if (const Node* p = local_producer(v)) deps.insert(index.at(p));
    for (Graph* s : nodes_[i]->subgraphs()) collect(*s);
    deps.erase(i);
    pending[i] = deps.size();
    for (size_t d : deps) consumers[d].push_back(i);
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  if (order.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (pending[i] != 0)
        SY_THROW(InvalidModel, "graph '{}': {} is on a cycle or reads a value never produced",
                 name_, nodes_[i]->describe());
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
}

size_t Graph::count_nodes_recursive() const {
  size_t n = nodes_.size();
  for (const auto& node : nodes_)
    for (Graph* s : node->subgraphs()) n += s->count_nodes_recursive();
  return n;
}

}  // namespace switchyard::ir
