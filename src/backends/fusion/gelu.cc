// fuse_gelu (fusion.h): the GELU forms exporters emit below opset 20 become one Gelu node.
//
//   erf form  (torch nn.GELU(), Hugging Face BERT):   u = 1 + Erf(x / sqrt(2))    (or x * 1/sqrt 2)
//   tanh form (GPT-2's "new GELU", nn.GELU("tanh")): u = 1 + Tanh(sqrt(2/pi) * (x + 0.044715 x^3))
//                                                     (x^3 as Pow(x, 3) or x * x * x)
//   then y = (x * u) * 0.5 | (u * 0.5) * x | (x * 0.5) * u    (operands of each Mul in either
//                                                              order, u * x as x * u)
//
// becomes Gelu(x, approximate = "none" | "tanh") producing y (its name and readers kept). Every
// value inside the pattern must have its one reader inside it (x excepted) and not be a graph
// output; scalars are one-element float constants that do not widen x; their values must match
// to 1e-3 (the 1/sqrt(2) and sqrt(2/pi) factors, which exporters round) or 1e-6 (0.5, 1, 3,
// 0.044715). One kernel instead of five to eight passes over memory, and a MatMul or Conv before
// it can then take the Gelu as its epilogue.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "backends/fusion/fusion.h"
#include "ops/op_kind.h"

namespace switchyard::backends {

namespace {

bool is_op(const ir::Node* n, ops::OpKind kind) {
  if (!n) return false;
  if (n->kind_id() >= 0) return n->kind_id() == static_cast<int>(kind);
  return ops::find_op_kind(n->op_type()) == kind &&
         (n->domain().empty() || n->domain() == "ai.onnx");
}

// The one node of `g` reading `v` (it may read it twice), when v is no graph output.
ir::Node* sole_reader(const ir::Graph& g, const ir::Value* v) {
  if (!v || v->uses().empty() || g.is_output(v)) return nullptr;
  ir::Node* user = v->uses().front().first;
  for (auto [node, idx] : v->uses())
    if (node != user) return nullptr;
  return user->owner() == &g && user->num_outputs() == 1 ? user : nullptr;
}

// The input of binary `n` that is not `v` (nullptr when both are v or n is not binary).
ir::Value* other_input(const ir::Node* n, const ir::Value* v) {
  if (!n || n->num_inputs() != 2) return nullptr;
  if (n->input(0) == v && n->input(1) != v) return n->input(1);
  if (n->input(1) == v && n->input(0) != v) return n->input(0);
  return nullptr;
}

// Whether `c` is a one-element float constant within `tol` of `want` whose rank does not
// exceed x's (so it cannot widen the result).
bool scalar_near(const ir::Value* c, const ir::Value* x, double want, double tol) {
  if (!c || !c->is_constant() || c->constant().numel() != 1) return false;
  if (!ir::dtype_is_float(c->constant().dtype()) || !x->type().has_rank()) return false;
  if (c->constant().rank() > x->type().rank()) return false;
  double v = c->constant().scalar_as_double(0);
  return std::isfinite(v) && std::fabs(v - want) <= tol;
}

// `n` (a binary Mul/Div/Add reading `v`) when its other operand is a scalar near `want`.
bool scalar_step(const ir::Node* n, ops::OpKind kind, const ir::Value* v, const ir::Value* x,
                 double want, double tol) {
  if (!is_op(n, kind) || n->num_inputs() != 2) return false;
  if (kind == ops::OpKind::Div && n->input(0) != v) return false;
  return scalar_near(other_input(n, v), x, want, tol);
}

constexpr double kLoose = 1e-3, kExact = 1e-6;

struct Match {
  ir::Value* x = nullptr;
  std::vector<ir::Node*> nodes;  // in execution order
  bool tanh = false;
};

// Given u = 1 + f(x) produced by `add` (already in m.nodes), matches the tail that multiplies by
// x and 0.5 and appends its nodes.
bool match_tail(const ir::Graph& g, Match& m, ir::Node* add) {
  ir::Value* u = add->output(0);
  ir::Node* m1 = sole_reader(g, u);
  if (!is_op(m1, ops::OpKind::Mul)) return false;
  ir::Value* other = other_input(m1, u);
  if (!other) return false;
  if (other == m.x) {  // (x * u) * 0.5
    ir::Node* m2 = sole_reader(g, m1->output(0));
    if (!scalar_step(m2, ops::OpKind::Mul, m1->output(0), m.x, 0.5, kExact)) return false;
    m.nodes.insert(m.nodes.end(), {m1, m2});
    return true;
  }
  if (scalar_near(other, m.x, 0.5, kExact)) {  // (u * 0.5) * x
    ir::Node* m2 = sole_reader(g, m1->output(0));
    if (!is_op(m2, ops::OpKind::Mul) || other_input(m2, m1->output(0)) != m.x) return false;
    m.nodes.insert(m.nodes.end(), {m1, m2});
    return true;
  }
  // (x * 0.5) * u: the half is computed from x elsewhere and read only here.
  ir::Node* h = other->producer();
  if (!h || h->owner() != &g || !scalar_step(h, ops::OpKind::Mul, m.x, m.x, 0.5, kExact))
    return false;
  if (sole_reader(g, h->output(0)) != m1) return false;
  m.nodes.insert(m.nodes.begin(), h);
  m.nodes.push_back(m1);
  return true;
}

// The erf form from `erf` (Erf of x / sqrt 2).
std::optional<Match> match_erf(const ir::Graph& g, ir::Node* erf) {
  if (!is_op(erf, ops::OpKind::Erf) || erf->num_inputs() != 1) return std::nullopt;
  ir::Node* scale = erf->input(0) ? erf->input(0)->producer() : nullptr;
  if (!scale || scale->owner() != &g || sole_reader(g, scale->output(0)) != erf)
    return std::nullopt;
  Match m;
  for (size_t k = 0; k < scale->num_inputs() && !m.x; ++k) {
    ir::Value* x = scale->input(k);
    if (scalar_step(scale, ops::OpKind::Div, x, x, std::sqrt(2.0), kLoose) ||
        scalar_step(scale, ops::OpKind::Mul, x, x, 1 / std::sqrt(2.0), kLoose))
      m.x = x;
  }
  if (!m.x) return std::nullopt;
  ir::Node* add = sole_reader(g, erf->output(0));
  if (!scalar_step(add, ops::OpKind::Add, erf->output(0), m.x, 1.0, kExact)) return std::nullopt;
  m.nodes = {scale, erf, add};
  if (!match_tail(g, m, add)) return std::nullopt;
  return m;
}

// x^3 computed from x by `n` (Pow(x, 3)) or by Mul(Mul(x, x), x): its nodes, in order.
std::optional<std::vector<ir::Node*>> match_cube(const ir::Graph& g, ir::Node* n, ir::Value* x) {
  if (is_op(n, ops::OpKind::Pow) && n->num_inputs() == 2 && n->input(0) == x &&
      scalar_near(n->input(1), x, 3.0, kExact))
    return std::vector<ir::Node*>{n};
  if (!is_op(n, ops::OpKind::Mul) || n->num_inputs() != 2) return std::nullopt;
  for (size_t k = 0; k < 2; ++k) {
    if (n->input(1 - k) != x || !n->input(k)) continue;
    ir::Node* sq = n->input(k)->producer();
    if (is_op(sq, ops::OpKind::Mul) && sq->owner() == &g && sq->num_inputs() == 2 &&
        sq->input(0) == x && sq->input(1) == x && sole_reader(g, sq->output(0)) == n)
      return std::vector<ir::Node*>{sq, n};
  }
  return std::nullopt;
}

// The tanh form from `tanh`.
std::optional<Match> match_tanh(const ir::Graph& g, ir::Node* tanh) {
  if (!is_op(tanh, ops::OpKind::Tanh) || tanh->num_inputs() != 1 || !tanh->input(0))
    return std::nullopt;
  // s = inner * sqrt(2/pi)
  ir::Node* s = tanh->input(0)->producer();
  if (!is_op(s, ops::OpKind::Mul) || s->owner() != &g || s->num_inputs() != 2 ||
      sole_reader(g, s->output(0)) != tanh)
    return std::nullopt;
  const double k0 = std::sqrt(2.0 / M_PI);
  ir::Value* inner = nullptr;
  for (size_t k = 0; k < 2 && !inner; ++k)
    if (s->input(k) && scalar_near(s->input(1 - k), s->input(k), k0, kLoose)) inner = s->input(k);
  // inner = x + 0.044715 * x^3
  ir::Node* a = inner ? inner->producer() : nullptr;
  if (!is_op(a, ops::OpKind::Add) || a->owner() != &g || a->num_inputs() != 2 ||
      sole_reader(g, a->output(0)) != s)
    return std::nullopt;
  for (size_t k = 0; k < 2; ++k) {
    ir::Value* x = a->input(k);
    ir::Value* cubic = a->input(1 - k);
    if (!x || !cubic || x == cubic) continue;
    ir::Node* c = cubic->producer();  // 0.044715 * x^3
    if (!is_op(c, ops::OpKind::Mul) || c->owner() != &g || c->num_inputs() != 2 ||
        sole_reader(g, c->output(0)) != a)
      continue;
    for (size_t j = 0; j < 2; ++j) {
      ir::Value* cube = c->input(j);
      if (!cube || !scalar_near(c->input(1 - j), x, 0.044715, kExact)) continue;
      ir::Node* p = cube->producer();
      if (!p || p->owner() != &g || sole_reader(g, cube) != c) continue;
      auto cube_nodes = match_cube(g, p, x);
      if (!cube_nodes) continue;
      ir::Node* add = sole_reader(g, tanh->output(0));
      if (!scalar_step(add, ops::OpKind::Add, tanh->output(0), x, 1.0, kExact)) continue;
      Match m;
      m.x = x;
      m.tanh = true;
      m.nodes = *cube_nodes;
      m.nodes.insert(m.nodes.end(), {c, a, s, tanh, add});
      if (match_tail(g, m, add)) return m;
    }
  }
  return std::nullopt;
}

bool fusable(const Match& m) {
  const ir::Type& t = m.x->type();
  if (!t.is_tensor() || !ir::dtype_is_float(t.dtype) || !t.has_rank()) return false;
  const ir::Type& y = m.nodes.back()->output(0)->type();
  return y.is_tensor() && y.dtype == t.dtype && y.has_rank() && y.rank() == t.rank();
}

// Replaces the matched nodes by Gelu(x) producing the last node's value (name kept).
void rewrite(ir::Graph& g, const Match& m) {
  ir::Value* last = m.nodes.back()->output(0);
  const std::string out_name = last->name();
  const ir::Type out_type = last->type();
  const std::string name = m.nodes.front()->name();
  ir::Node* hold = g.add_node("Identity", "", {}, {g.unique_value_name(out_name + "_fusing")});
  g.replace_all_uses(last, hold->output(0));
  for (ir::Node* n : m.nodes)
    for (size_t i = 0; i < n->num_inputs(); ++i) n->set_input(i, nullptr);
  g.remove_nodes_if([&](const ir::Node& n) {
    return std::find(m.nodes.begin(), m.nodes.end(), &n) != m.nodes.end();
  });
  ir::Node* gelu = g.add_node("Gelu", name, {m.x}, {out_name});
  gelu->set_kind_id(static_cast<int>(ops::OpKind::Gelu));
  gelu->output(0)->set_type(out_type);
  gelu->set_attribute(ir::Attribute::make_string("approximate", m.tanh ? "tanh" : "none"));
  g.replace_all_uses(hold->output(0), gelu->output(0));
  g.remove_nodes_if([&](const ir::Node& n) { return &n == hold; });
}

}  // namespace

std::vector<runtime::FusionGroup> fuse_gelu(ir::Graph& graph) {
  std::vector<runtime::FusionGroup> groups;
  std::vector<ir::Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  std::set<const ir::Node*> removed;  // erased by an earlier rewrite: never dereferenced
  for (ir::Node* n : nodes) {
    if (removed.count(n)) continue;
    std::optional<Match> m = match_erf(graph, n);
    if (!m) m = match_tanh(graph, n);
    if (!m || !fusable(*m)) continue;
    runtime::FusionGroup group;
    for (const ir::Node* member : m->nodes) group.members.push_back(member->name());
    groups.push_back(std::move(group));
    removed.insert(m->nodes.begin(), m->nodes.end());
    rewrite(graph, *m);
  }
  if (!groups.empty()) graph.sort_topologically();
  return groups;
}

std::vector<runtime::FusionGroup> merge_fusion_groups(std::vector<runtime::FusionGroup> groups) {
  std::vector<runtime::FusionGroup> merged;
  for (runtime::FusionGroup& g : groups) {
    if (g.members.empty()) continue;
    // A later group that absorbs an earlier group's fused node takes its members.
    std::vector<std::string> members;
    for (const std::string& name : g.members) {
      auto it = std::find_if(merged.begin(), merged.end(), [&](const runtime::FusionGroup& e) {
        return e.members.front() == name;
      });
      if (it == merged.end()) {
        members.push_back(name);
      } else {
        members.insert(members.end(), it->members.begin(), it->members.end());
        merged.erase(it);
      }
    }
    merged.push_back(runtime::FusionGroup{std::move(members)});
  }
  return merged;
}

std::vector<runtime::FusionGroup> keep_named_members(std::vector<runtime::FusionGroup> groups,
                                                     const std::vector<std::string>& nodes) {
  const std::set<std::string> named(nodes.begin(), nodes.end());
  std::vector<runtime::FusionGroup> kept;
  for (runtime::FusionGroup& g : groups) {
    std::erase_if(g.members, [&](const std::string& m) { return !named.count(m); });
    if (g.members.size() >= 2) kept.push_back(std::move(g));
  }
  return kept;
}

}  // namespace switchyard::backends
