// The rewriting helpers of pattern.h that are more than a line or two.
#include "backends/fusion/pattern.h"

#include <algorithm>
#include <set>
#include <string>

#include "ir/check.h"

namespace switchyard::backends::pattern {

bool depends_on(const ir::Value* v, const ir::Node* node) {
  std::vector<const ir::Value*> pending = {v};
  std::set<const ir::Node*> seen;
  while (!pending.empty()) {
    const ir::Value* at = pending.back();
    pending.pop_back();
    const ir::Node* p = at ? at->producer() : nullptr;
    if (!p) continue;
    if (p == node) return true;
    if (!seen.insert(p).second) continue;
    for (const ir::Value* in : p->inputs()) pending.push_back(in);
    // A body reads values of the graph around it without naming them as inputs.
    for (const ir::Graph* body : p->subgraphs())
      for (const ir::Value* in : body->outer_scope_values()) pending.push_back(in);
  }
  return false;
}

ir::Node* replace_nodes(ir::Graph& g, const std::vector<ir::Node*>& gone, const ir::Node& like,
                        std::vector<ir::Value*> inputs, const std::vector<ir::Value*>& outputs) {
  // `like` may be one of `gone`: what the new node takes from it is copied first.
  const std::string name = like.name(), op = like.op_type(), domain = like.domain();
  const int kind = like.kind_id();
  const std::vector<ir::Attribute> attributes = like.attributes();
  const auto annotations = like.annotations();
  // Park the readers of each value taken over on a placeholder, so the nodes can go and free
  // the names.
  std::vector<std::string> names(outputs.size());
  std::vector<ir::Type> types(outputs.size());
  std::vector<ir::Node*> holds(outputs.size(), nullptr);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) continue;
    names[i] = outputs[i]->name();
    types[i] = outputs[i]->type();
    holds[i] = g.add_node("Identity", "", {}, {g.unique_value_name(names[i] + "_fusing")});
    g.replace_all_uses(outputs[i], holds[i]->output(0));
  }
  // Readers before producers: a value still read when its producer goes outlives it, name and all.
  std::vector<ir::Node*> left = gone;
  while (!left.empty()) {
    auto read_by_left = [&](const ir::Node* n) {
      for (const ir::Value* v : n->outputs())
        for (auto [reader, idx] : v->uses())
          if (reader != n && std::find(left.begin(), left.end(), reader) != left.end()) return true;
      return false;
    };
    auto next =
        std::find_if(left.begin(), left.end(), [&](ir::Node* n) { return !read_by_left(n); });
    SY_ASSERT(next != left.end());
    remove_node(g, *next);
    left.erase(next);
  }
  ir::Node* fused = g.add_node(op, name, inputs, names, domain);
  fused->set_kind_id(kind);
  for (const ir::Attribute& a : attributes) fused->set_attribute(a);
  for (const auto& a : annotations) fused->annotate(a);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!holds[i]) continue;
    fused->output(i)->set_type(types[i]);
    g.replace_all_uses(holds[i]->output(0), fused->output(i));
    remove_node(g, holds[i]);
  }
  return fused;
}

}  // namespace switchyard::backends::pattern
