// Common subexpressions: constants of equal contents become one, then nodes that compute the
// same op on the same inputs with the same attributes become one (the first in graph order).
// Exported models repeat work: each head split of a transformer takes three Shapes of one value
// and Gathers them alike, and every layer holds its own copy of the same constants (a causal
// mask, axes, scales).
#include <xxhash.h>
#include <cstring>
#include <map>
#include <unordered_map>

#include "ir/check.h"
#include "ir/tensor.h"
#include "passes/passes.h"

namespace switchyard::passes {

namespace {

// Ops whose every evaluation may differ, or that a plugin defines (its kernel may keep state).
bool mergeable_op(const ir::Node& n) {
  static const char* const kRandom[] = {
      "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
      "Multinomial",  "Bernoulli",        "Dropout"};
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  for (const char* op : kRandom)
    if (n.op_type() == op) return false;
  return n.num_outputs() > 0 && n.subgraphs().empty();
}

uint64_t tensor_hash(const ir::Tensor& t) {
  if (!t.defined()) return 0;
  uint64_t h = XXH3_64bits(t.raw(), t.nbytes());
  h ^= static_cast<uint64_t>(t.dtype()) * 0x9e3779b97f4a7c15ULL;
  for (int64_t d : t.shape()) h = h * 31 + static_cast<uint64_t>(d);
  return h;
}

bool same_tensor(const ir::Tensor& a, const ir::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

bool same_attribute(const ir::Attribute& a, const ir::Attribute& b) {
  if (a.name != b.name || a.kind != b.kind) return false;
  using K = ir::Attribute::Kind;
  switch (a.kind) {
    case K::Float:
      return std::memcmp(&a.f, &b.f, sizeof(float)) == 0;
    case K::Int:
      return a.i == b.i;
    case K::String:
      return a.s == b.s;
    case K::Tensor:
      return same_tensor(a.t, b.t);
    case K::Floats:
      return same_floats(a.floats, b.floats);
    case K::Ints:
      return a.ints == b.ints;
    case K::Strings:
      return a.strings == b.strings;
    case K::Tensors:
      if (a.tensors.size() != b.tensors.size()) return false;
      for (size_t i = 0; i < a.tensors.size(); ++i)
        if (!same_tensor(a.tensors[i], b.tensors[i])) return false;
      return true;
    case K::TypeProto:
    case K::TypeProtos:
    case K::Graph:
    case K::Graphs:
      return false;  // types and bodies are never compared: such nodes stay apart
  }
  return false;
}

bool same_node(const ir::Node& a, const ir::Node& b) {
  if (a.op_type() != b.op_type() || a.domain() != b.domain() || a.inputs() != b.inputs() ||
      a.num_outputs() != b.num_outputs() || a.attributes().size() != b.attributes().size())
    return false;
  for (size_t i = 0; i < a.num_outputs(); ++i)
    if ((a.output(i) == nullptr) != (b.output(i) == nullptr)) return false;
  // Attribute order is the file's; the same set in another order is the same node.
  for (const ir::Attribute& x : a.attributes()) {
    const ir::Attribute* y = b.find_attribute(x.name);
    if (!y || !same_attribute(x, *y)) return false;
  }
  return true;
}

uint64_t node_hash(const ir::Node& n) {
  uint64_t h = std::hash<std::string>{}(n.op_type()) ^ std::hash<std::string>{}(n.domain());
  for (const ir::Value* v : n.inputs()) h = h * 1000003 + reinterpret_cast<uintptr_t>(v);
  return h * 31 + n.num_outputs();
}

// Whether any output of `n` is an output of its graph: such a value keeps its name.
bool feeds_graph_output(const ir::Node& n) {
  for (const ir::Value* v : n.outputs())
    if (n.owner()->is_output(v)) return true;
  return false;
}

size_t merge_in(ir::Graph& graph) {
  size_t merged = 0;
  // Constants: one value per contents (graph outputs keep theirs).
  std::unordered_map<uint64_t, std::vector<ir::Value*>> constants;
  for (ir::Value* c : graph.constants()) {
    if (c->uses().empty() || graph.is_output(c)) continue;
    std::vector<ir::Value*>& bucket = constants[tensor_hash(c->constant())];
    ir::Value* twin = nullptr;
    for (ir::Value* k : bucket)
      if (same_tensor(k->constant(), c->constant())) twin = k;
    if (!twin) {
      bucket.push_back(c);
      continue;
    }
    graph.replace_all_uses(c, twin);
    ++merged;
  }
  // Nodes, in graph order: a node's inputs are already merged when it is seen.
  std::unordered_map<uint64_t, std::vector<ir::Node*>> seen;
  for (const auto& owned : graph.nodes()) {
    ir::Node* n = owned.get();
    for (ir::Graph* body : n->subgraphs()) merged += merge_in(*body);
    if (!mergeable_op(*n)) continue;
    std::vector<ir::Node*>& bucket = seen[node_hash(*n)];
    ir::Node* twin = nullptr;
    for (ir::Node* k : bucket)
      if (same_node(*k, *n)) twin = k;
    if (!twin || feeds_graph_output(*n)) {
      if (!twin) bucket.push_back(n);
      continue;
    }
    for (size_t i = 0; i < n->num_outputs(); ++i)
      if (n->output(i) && twin->output(i)) graph.replace_all_uses(n->output(i), twin->output(i));
    ++merged;
  }
  return merged;
}

}  // namespace

size_t merge_common_subexpressions(ir::Graph& graph) { return merge_in(graph); }

}  // namespace switchyard::passes
