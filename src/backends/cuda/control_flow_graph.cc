// The graph side of CUDA control flow (control_flow.h): which If, Loop and Scan nodes the device
// runs, the values their bodies read from enclosing graphs, the partition's private copies of
// the bodies, and the bodies' float32 reads kept through the --precision rewrite.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "backends/cuda/control_flow.h"
#include "backends/cuda/cuda_kernels.h"
#include "ir/check.h"

namespace switchyard::cuda {

namespace {

using ir::DType;

bool is_control_flow_op(const std::string& op) {
  return op == "If" || op == "Loop" || op == "Scan";
}

// Why a value cannot cross a CUDA control-flow node or body, or "" when it can: only tensors.
std::string non_tensor_reason(const ir::Value* v) {
  if (!v || v->type().is_tensor()) return "";
  return fmt::format("value '{}' is {}: CUDA control flow carries tensors only", v->name(),
                     ir::Type(v->type()).to_string());
}

runtime::Support body_support(const ir::Graph& body) {
  for (const ir::Value* v : body.inputs())
    if (std::string why = non_tensor_reason(v); !why.empty())
      return runtime::Support::no(fmt::format("body '{}': {}", body.name(), why));
  for (const ir::Value* v : body.outputs())
    if (std::string why = non_tensor_reason(v); !why.empty())
      return runtime::Support::no(fmt::format("body '{}': {}", body.name(), why));
  for (const auto& n : body.nodes()) {
    runtime::Support s;
    try {
      if (!n->subgraphs().empty()) {
        s = control_flow_support(*n);
      } else {
        s = cuda_kernels().supports(*n);
        if (!s.ok) s.reason = "no CUDA kernel: " + s.reason;
      }
    } catch (const Error& e) {
      s = runtime::Support::no(e.message());
    }
    if (!s.ok)
      return runtime::Support::no(
          fmt::format("body '{}' node '{}': {}", body.name(), n->name(), s.reason));
  }
  return runtime::Support::yes();
}

bool has_dtype(const ir::Value* v, DType dtype) {
  return v && v->type().is_tensor() && v->type().dtype == dtype;
}

// The values visible while cloning one body: its own (original → copy), and the enclosing
// scopes'; the partition's graph is found by name.
struct Scope {
  ir::Graph* graph = nullptr;
  std::unordered_map<const ir::Value*, ir::Value*> map;
  const Scope* parent = nullptr;
};

ir::Value* resolve(const Scope& scope, const ir::Value* v, ir::Graph& top) {
  for (const Scope* s = &scope; s; s = s->parent) {
    auto it = s->map.find(v);
    if (it != s->map.end()) return it->second;
  }
  if (ir::Value* local = top.find_local_value(v->name())) return local;
  SY_CHECK(v->is_constant(), Internal,
           "graph '{}': a body reads value '{}', which the partition does not have", top.name(),
           v->name());
  ir::Value* c = top.add_constant(v->name(), v->constant());
  c->set_type(v->type());
  return c;
}

std::shared_ptr<ir::Graph> clone_body(const ir::Graph& src, const Scope& outer, ir::Graph& top);

ir::Attribute clone_attribute(const ir::Attribute& a, const Scope& scope, ir::Graph& top) {
  ir::Attribute c = a;
  if (a.kind == ir::Attribute::Kind::Graph && a.g) c.g = clone_body(*a.g, scope, top);
  if (a.kind == ir::Attribute::Kind::Graphs)
    for (auto& g : c.graphs)
      if (g) g = clone_body(*g, scope, top);
  return c;
}

std::shared_ptr<ir::Graph> clone_body(const ir::Graph& src, const Scope& outer, ir::Graph& top) {
  auto g = std::make_shared<ir::Graph>(src.name(), outer.graph);
  Scope scope;
  scope.graph = g.get();
  scope.parent = &outer;
  for (const ir::Value* in : src.inputs()) {
    ir::Value* v = g->add_input(in->name(), in->type());
    if (in->is_constant()) v->set_constant(in->constant());
    scope.map[in] = v;
  }
  for (const ir::Value* c : src.constants()) {
    if (scope.map.count(c)) continue;
    ir::Value* v = g->add_constant(c->name(), c->constant());
    v->set_type(c->type());
    scope.map[c] = v;
  }
  for (const auto& n : src.nodes()) {
    std::vector<ir::Value*> ins;
    for (const ir::Value* v : n->inputs()) ins.push_back(v ? resolve(scope, v, top) : nullptr);
    std::vector<std::string> outs;
    for (const ir::Value* v : n->outputs()) outs.push_back(v->name());
    ir::Node* c = g->add_node(n->op_type(), n->name(), ins, outs, n->domain());
    c->set_kind_id(n->kind_id());
    for (const ir::Attribute& a : n->attributes()) c->set_attribute(clone_attribute(a, scope, top));
    c->copy_annotations(*n);
    for (size_t i = 0; i < n->num_outputs(); ++i) {
      c->output(i)->set_type(n->output(i)->type());
      scope.map[n->output(i)] = c->output(i);
    }
  }
  for (const ir::Value* v : src.outputs()) g->add_output(resolve(scope, v, top));
  return g;
}

ir::Value* add_cast(ir::Graph& g, ir::Value* from, DType to) {
  ir::Node* c =
      g.add_node("Cast", g.unique_value_name(from->name() + "_body_cast"), {from},
                 {g.unique_value_name(fmt::format("{}_{}", from->name(), ir::dtype_name(to)))});
  c->set_attribute(ir::Attribute::make_int("to", static_cast<int64_t>(to)));
  ir::Type t = from->type();
  t.dtype = to;
  c->output(0)->set_type(t);
  return c->output(0);
}

}  // namespace

runtime::Support control_flow_support(const ir::Node& node) {
  if (!is_control_flow_op(node.op_type()))
    return runtime::Support::no(fmt::format(
        "{} has a graph body; of control flow, CUDA runs If, Loop and Scan", node.op_type()));
  for (const ir::Value* v : node.inputs())
    if (std::string why = non_tensor_reason(v); !why.empty()) return runtime::Support::no(why);
  for (const ir::Value* v : node.outputs())
    if (std::string why = non_tensor_reason(v); !why.empty()) return runtime::Support::no(why);
  if (node.op_type() == "If" && !has_dtype(node.input(0), DType::Bool))
    return runtime::Support::no("the condition is not a bool tensor");
  if (node.op_type() == "Loop") {
    if (node.input(0) && !has_dtype(node.input(0), DType::Int64))
      return runtime::Support::no("the trip count is not an int64 tensor");
    if (node.input(1) && !has_dtype(node.input(1), DType::Bool))
      return runtime::Support::no("the condition is not a bool tensor");
  }
  for (const ir::Graph* body : node.subgraphs())
    if (runtime::Support s = body_support(*body); !s.ok) return s;
  return runtime::Support::yes();
}

std::vector<int> control_flow_host_inputs(const ir::Node& node) {
  if (node.op_type() == "Loop") return {0};
  return {};
}

std::vector<const ir::Value*> implicit_inputs_of(const ir::Node& node) {
  std::vector<const ir::Value*> out;
  std::unordered_set<const ir::Value*> seen;
  for (const ir::Graph* body : node.subgraphs())
    for (const ir::Value* v : body->outer_scope_values())
      if (!v->is_constant() && seen.insert(v).second) out.push_back(v);
  return out;
}

void clone_control_flow_bodies(ir::Graph& graph) {
  Scope top;
  top.graph = &graph;
  for (const auto& n : graph.nodes()) {
    if (n->subgraphs().empty()) continue;
    const std::vector<ir::Attribute> attributes = n->attributes();
    for (const ir::Attribute& a : attributes)
      if (a.kind == ir::Attribute::Kind::Graph || a.kind == ir::Attribute::Kind::Graphs)
        n->set_attribute(clone_attribute(a, top, graph));
  }
}

BodyReads record_body_reads(const ir::Graph& graph) {
  BodyReads reads;
  std::function<void(ir::Graph&)> walk = [&](ir::Graph& body) {
    for (const auto& n : body.nodes()) {
      for (size_t i = 0; i < n->num_inputs(); ++i) {
        ir::Value* v = n->input(i);
        if (v && v->owner() == &graph && v->type().is_tensor())
          reads.push_back({n.get(), nullptr, i, v, v->type().dtype});
      }
      for (ir::Graph* sub : n->subgraphs()) walk(*sub);
    }
    for (size_t i = 0; i < body.outputs().size(); ++i) {
      ir::Value* v = body.outputs()[i];
      if (v->owner() == &graph && v->type().is_tensor())
        reads.push_back({nullptr, &body, i, v, v->type().dtype});
    }
  };
  for (const auto& n : graph.nodes())
    for (ir::Graph* body : n->subgraphs()) walk(*body);
  return reads;
}

void restore_body_reads(ir::Graph& graph, const BodyReads& reads) {
  std::map<ir::Value*, ir::Value*> casts;  // a retyped value → its cast back
  std::set<ir::Value*> dropped;            // what a read pointed at before it was restored
  for (const BodyRead& r : reads) {
    ir::Value* now = r.node ? r.node->input(r.index) : r.body->outputs()[r.index];
    ir::Value* want = r.value;
    if (want->type().dtype != r.dtype) {
      ir::Value*& cast = casts[want];
      if (!cast) cast = add_cast(graph, want, r.dtype);
      want = cast;
    }
    if (now == want) continue;
    if (r.node) {
      r.node->set_input(r.index, want);
    } else {
      r.body->set_output(r.index, want);
    }
    dropped.insert(now);
  }
  if (casts.empty() && dropped.empty()) return;
  // Casts the rewrite made for the bodies alone are read by nothing now.
  graph.remove_nodes_if([&](const ir::Node& n) {
    const ir::Value* out = n.output(0);
    return n.op_type() == "Cast" && dropped.count(const_cast<ir::Value*>(out)) &&
           out->uses().empty() && !graph.is_output(out);
  });
  graph.sort_topologically();
}

}  // namespace switchyard::cuda
