#include <functional>
#include <unordered_set>

#include "passes/passes.h"

namespace switchyard::passes {

size_t remove_dead_nodes(ir::Graph& graph, const PassContext& ctx) {
  (void)ctx;
  // Mark live nodes backwards from the outputs; values read by subgraphs keep their producers.
  std::unordered_set<const ir::Node*> live;
  std::vector<const ir::Node*> work;
  auto mark_value = [&](const ir::Value* v) {
    if (v && v->owner() == &graph && v->producer() && live.insert(v->producer()).second)
      work.push_back(v->producer());
  };
  std::function<void(const ir::Graph&)> mark_subgraph_reads = [&](const ir::Graph& sub) {
    for (const auto& n : sub.nodes()) {
      for (const ir::Value* v : n->inputs()) mark_value(v);
      for (const ir::Graph* s : n->subgraphs()) mark_subgraph_reads(*s);
    }
    for (const ir::Value* v : sub.outputs()) mark_value(v);
  };
  for (const ir::Value* v : graph.outputs()) mark_value(v);
  while (!work.empty()) {
    const ir::Node* n = work.back();
    work.pop_back();
    for (const ir::Value* v : n->inputs()) mark_value(v);
    for (const ir::Graph* s : n->subgraphs()) mark_subgraph_reads(*s);
  }
  size_t before = graph.nodes().size();
  // Remove in reverse order so consumers go before producers.
  std::vector<ir::Node*> dead;
  for (const auto& n : graph.nodes())
    if (!live.count(n.get())) dead.push_back(n.get());
  for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
    ir::Node* target = *it;
    graph.remove_nodes_if([&](const ir::Node& n) { return &n == target; });
  }
  for (const auto& n : graph.nodes())
    for (ir::Graph* s : n->subgraphs()) remove_dead_nodes(*s, ctx);
  return before - graph.nodes().size();
}

}  // namespace switchyard::passes
