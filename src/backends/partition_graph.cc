#include "backends/partition_graph.h"

#include <unordered_map>

#include "ir/check.h"
#include "ops/op_traits.h"

namespace switchyard::backends {

std::unique_ptr<ir::Graph> clone_partition(const backends::Partition& p,
                                           std::map<const ir::Node*, const ir::Node*>& origin) {
  auto g = std::make_unique<ir::Graph>(fmt::format("{}_partition_{}", p.device, p.index));
  std::unordered_map<const ir::Value*, ir::Value*> map;
  for (const ir::Value* v : p.inputs) map[v] = g->add_input(v->name(), v->type());
  auto lookup = [&](const ir::Value* v) -> ir::Value* {
    if (!v) return nullptr;
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    SY_CHECK(v->is_constant(), Internal, "partition {}: value '{}' has no source", p.index,
             v->name());
    ir::Value* c = g->add_constant(v->name(), v->constant());
    c->set_type(v->type());
    map[v] = c;
    return c;
  };
  for (const ir::Node* n : p.nodes) {
    const ops::OpTraits& traits = ops::traits(*n);
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const ir::Value* v = n->input(i);
      // An ordering input made by an earlier partition is not an input here: the plan runs
      // that partition first, and no data crosses for it.
      bool elsewhere = v && !v->is_constant() && !map.count(v);
      ins.push_back(elsewhere && traits.is_ordering_input(i) ? nullptr : lookup(v));
    }
    std::vector<std::string> outs;
    for (const ir::Value* v : n->outputs()) outs.push_back(v->name());
    ir::Node* c = g->add_node(n->op_type(), n->name(), ins, outs, n->domain());
    c->set_kind_id(n->kind_id());
    for (const auto& a : n->attributes()) c->set_attribute(a);
    c->copy_annotations(*n);
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      c->output(i)->set_type(n->output(i)->type());
      map[n->output(i)] = c->output(i);
    }
    origin[c] = n;
  }
  for (const ir::Value* v : p.outputs) g->add_output(map.at(v));
  return g;
}

bool has_graph_bodies(const Partition& p) {
  for (const ir::Node* n : p.nodes)
    if (!n->subgraphs().empty()) return true;
  return false;
}

}  // namespace switchyard::backends
