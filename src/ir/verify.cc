#include <unordered_set>

#include "ir/check.h"
#include "ir/graph.h"

namespace switchyard::ir {

namespace {

void verify_graph(const Graph& g, std::unordered_set<const Value*>& visible) {
  std::vector<const Value*> added;
  auto make_visible = [&](const Value* v) {
    if (visible.insert(v).second) added.push_back(v);
  };
  for (Value* v : g.inputs()) {
    SY_CHECK(v && v->owner() == &g, InvalidModel, "graph '{}': an input belongs to another graph",
             g.name());
    make_visible(v);
  }
  for (const auto& v : g.values())
    if (v->is_constant()) make_visible(v.get());
  for (const auto& n : g.nodes()) {
    SY_CHECK(n->owner() == &g, InvalidModel, "{}: owned by another graph", n->describe());
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      if (!v) continue;
      SY_CHECK(visible.count(v), InvalidModel,
               "{}: input {} '{}' is not produced before it is used in graph '{}'", n->describe(),
               i, v->name(), g.name());
      bool listed = false;
      for (auto [user, idx] : v->uses())
        if (user == n.get() && idx == static_cast<int>(i)) listed = true;
      SY_CHECK(listed, InvalidModel, "{}: value '{}' does not list this use", n->describe(),
               v->name());
    }
    for (Graph* sub : n->subgraphs()) {
      SY_CHECK(sub->parent() == &g, InvalidModel, "{}: subgraph '{}' has the wrong parent",
               n->describe(), sub->name());
      verify_graph(*sub, visible);
    }
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      const Value* v = n->output(i);
      SY_CHECK(v && v->producer() == n.get() && v->producer_output() == static_cast<int>(i),
               InvalidModel, "{}: output {} does not point back at its producer", n->describe(),
               i);
      make_visible(v);
    }
  }
  for (Value* v : g.outputs()) {
    SY_CHECK(v && visible.count(v), InvalidModel, "graph '{}': output '{}' is never produced",
             g.name(), v ? v->name() : std::string("<null>"));
  }
  for (const Value* v : added) visible.erase(v);
}

}  // namespace

void verify(const Graph& graph) {
  std::unordered_set<const Value*> visible;
  // Values of enclosing graphs are visible to a subgraph verified on its own.
  for (Graph* p = graph.parent(); p; p = p->parent())
    for (const auto& v : p->values()) visible.insert(v.get());
  verify_graph(graph, visible);
}

}  // namespace switchyard::ir
