#include "backends/cuda/precision.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "backends/fusion/pattern.h"
#include "backends/fusion/payload.h"
#include "ir/check.h"

namespace switchyard::cuda {

namespace {

bool is_f32_tensor(const ir::Value* v) {
  return v && v->type().is_tensor() && v->type().dtype == ir::DType::Float32;
}

const char* name_of(ir::DType t) { return t == ir::DType::Float16 ? "fp16" : "bf16"; }

std::set<int> host_slots(const ir::Node& n, const runtime::KernelRegistry& kernels) {
  std::vector<int> hi = kernels.host_inputs(n);
  return {hi.begin(), hi.end()};
}

ir::Value* add_cast(ir::Graph& g, ir::Value* from, ir::DType to, const std::string& hint) {
  ir::Node* c = g.add_node("Cast", g.unique_value_name(hint + "_cast"), {from},
                           {g.unique_value_name(hint + "_" + std::string(ir::dtype_name(to)))});
  c->set_attribute(ir::Attribute::make_int("to", static_cast<int64_t>(to)));
  if (to == ir::DType::Float16 || to == ir::DType::BFloat16)
    c->annotate(std::make_shared<SaturatingCast>());
  ir::Type t = from->type();
  t.dtype = to;
  c->output(0)->set_type(t);
  return c->output(0);
}

// Whether some kernel reads `v` on the device (not as a host input).
bool has_device_use(const ir::Value* v, const runtime::KernelRegistry& kernels) {
  for (auto [node, idx] : v->uses())
    if (!host_slots(*node, kernels).count(idx)) return true;
  return false;
}

// Points every data (non-host) use of `from` at `to`, except inside `skip`.
void redirect_device_uses(ir::Value* from, ir::Value* to, const ir::Node* skip,
                          const runtime::KernelRegistry& kernels) {
  auto uses = from->uses();
  for (auto [node, idx] : uses) {
    if (node == skip) continue;
    if (host_slots(*node, kernels).count(idx)) continue;
    node->set_input(static_cast<size_t>(idx), to);
  }
}

// Nodes kept in float32 under fp16/bf16 although their kernels take the narrow type: the
// residual stream of a transformer. Every LayerNormalization, and every Add whose result such a
// node reads (as a norm's X, or as the next residual add's operand): the residual adds of a
// post-LN stack, the running sum of a pre-LN one. The work is elementwise and cheap; the gain
// is that the sum carried from layer to layer is not rounded to 8 or 11 bits at every layer
// (BERT-base under bf16: 2.1e-2 → 1.5e-2 of max|ref| in a torch simulation, docs/cuda.md).
std::set<const ir::Node*> residual_stream(const std::vector<ir::Node*>& nodes,
                                          const std::set<const ir::Node*>& floaty) {
  std::set<const ir::Node*> keep;
  for (const ir::Node* n : nodes)
    if (floaty.count(n) && n->op_type() == "LayerNormalization") keep.insert(n);
  for (bool grew = !keep.empty(); grew;) {
    grew = false;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const ir::Node* n = *it;
      if (keep.count(n) || !floaty.count(n) || n->op_type() != "Add" || n->num_outputs() != 1)
        continue;
      for (auto [user, idx] : n->output(0)->uses()) {
        if (!keep.count(user) || (user->op_type() == "LayerNormalization" && idx != 0)) continue;
        keep.insert(n);
        grew = true;
        break;
      }
    }
  }
  return keep;
}

}  // namespace

ir::Tensor convert_float_tensor(const ir::Tensor& t, ir::DType target) {
  SY_ASSERT(t.dtype() == ir::DType::Float32);
  ir::Tensor out(target, t.shape());
  const float* src = t.data<float>();
  const float limit = target == ir::DType::Float16 ? 65504.0f : 3.3895313892515355e38f;
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = src[i];
    if (std::isfinite(v)) v = std::clamp(v, -limit, limit);
    if (target == ir::DType::Float16) {
      out.data<Float16>()[i] = Float16(v);
    } else {
      out.data<BFloat16>()[i] = BFloat16(v);
    }
  }
  return out;
}

std::string SaturatingCast::describe() const { return "saturate"; }

std::map<const ir::Node*, std::string> apply_precision(ir::Graph& g, ir::DType target,
                                                       const runtime::KernelRegistry& kernels) {
  std::vector<ir::Node*> original;
  for (const auto& n : g.nodes()) original.push_back(n.get());

  // Which nodes touch float32 tensors (before retyping).
  std::set<const ir::Node*> floaty;
  for (ir::Node* n : original) {
    for (const ir::Value* v : n->inputs())
      if (is_f32_tensor(v)) floaty.insert(n);
    for (const ir::Value* v : n->outputs())
      if (is_f32_tensor(v)) floaty.insert(n);
  }
  std::vector<bool> output_was_f32;
  for (const ir::Value* out : g.outputs()) output_was_f32.push_back(is_f32_tensor(out));

  // First every float32 value becomes narrow, so that kernels.supports() sees the types each
  // node will have; wide_source maps a narrow copy (input cast, converted constant) back to its
  // float32 original.
  std::map<ir::Value*, ir::Value*> wide_source;
  for (ir::Value* in : std::vector<ir::Value*>(g.inputs())) {
    if (!is_f32_tensor(in) || !has_device_use(in, kernels)) continue;  // host-read only
    ir::Value* cast = add_cast(g, in, target, in->name());
    redirect_device_uses(in, cast, cast->producer(), kernels);
    wide_source[cast] = in;
  }
  for (ir::Value* c : g.constants()) {
    if (!is_f32_tensor(c) || !has_device_use(c, kernels)) continue;
    ir::Value* narrow = g.add_constant(g.unique_value_name(c->name() + "_" + name_of(target)),
                                       convert_float_tensor(c->constant(), target));
    redirect_device_uses(c, narrow, nullptr, kernels);
    wide_source[narrow] = c;
  }
  std::set<ir::Value*> narrowed;  // node outputs retyped float32 → target
  for (ir::Node* n : original) {
    for (ir::Value* v : n->outputs()) {
      if (!is_f32_tensor(v)) continue;
      ir::Type t = v->type();
      t.dtype = target;
      v->set_type(t);
      narrowed.insert(v);
    }
    if ((n->op_type() == "Cast" && n->attr_int("to", 0) == 1) ||
        (n->has_attribute("dtype") && n->attr_int("dtype", 0) == 1 && n->op_type() != "Cast")) {
      std::string key = n->op_type() == "Cast" ? "to" : "dtype";
      n->set_attribute(ir::Attribute::make_int(key, static_cast<int64_t>(target)));
    }
    if (n->op_type() == "ConstantOfShape" && n->has_attribute("value") &&
        n->attr_tensor("value").dtype() == ir::DType::Float32)
      n->set_attribute(ir::Attribute::make_tensor(
          "value", convert_float_tensor(n->attr_tensor("value"), target)));
  }

  // Nodes that stay float32: the residual stream, and nodes whose kernel lacks the narrow type.
  std::set<const ir::Node*> wide_nodes = residual_stream(original, floaty);
  for (ir::Node* n : original)
    if (floaty.count(n) && !wide_nodes.count(n) && !kernels.supports(*n).ok) wide_nodes.insert(n);
  std::set<ir::Value*> wide_values;  // their outputs, float32 again
  for (ir::Node* n : original) {
    if (!wide_nodes.count(n)) continue;
    for (ir::Value* v : n->outputs()) {
      if (!narrowed.erase(v)) continue;
      ir::Type t = v->type();
      t.dtype = ir::DType::Float32;
      v->set_type(t);
      wide_values.insert(v);
    }
  }

  // Each reader gets each value in its own precision: one cast per value and type, and a float32
  // reader of an input cast or converted constant reads the float32 original.
  std::map<std::pair<ir::Value*, ir::DType>, ir::Value*> casts;
  auto as_type = [&](ir::Value* v, ir::DType to) {
    if (to == ir::DType::Float32)
      if (auto it = wide_source.find(v); it != wide_source.end()) return it->second;
    ir::Value*& c = casts[{v, to}];
    if (!c) c = add_cast(g, v, to, v->name());
    return c;
  };
  std::map<const ir::Node*, std::string> result;
  for (ir::Node* n : original) {
    if (!floaty.count(n)) continue;
    const bool wide = wide_nodes.count(n) > 0;
    std::set<int> hi = host_slots(*n, kernels);
    for (size_t k = 0; k < n->num_inputs(); ++k) {
      ir::Value* v = n->input(k);
      if (!v || hi.count(static_cast<int>(k))) continue;
      if (wide && (narrowed.count(v) || wide_source.count(v)))
        n->set_input(k, as_type(v, ir::DType::Float32));
      else if (!wide && wide_values.count(v))
        n->set_input(k, as_type(v, target));
    }
    result[n] = wide ? "fp32" : name_of(target);
  }
  // Partition outputs leave as float32.
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ir::Value* out = g.outputs()[i];
    if (output_was_f32[i] && out->type().dtype == target)
      g.set_output(i, as_type(out, ir::DType::Float32));
  }
  // Input casts that only float32 readers needed are gone now.
  g.remove_nodes_if([&](const ir::Node& n) {
    const ir::Value* out = n.output(0);
    return n.op_type() == "Cast" && wide_source.count(const_cast<ir::Value*>(out)) &&
           out->uses().empty();
  });
  g.sort_topologically();
  return result;
}

std::string NarrowCopy::describe() const { return "narrow copy in output 1"; }

namespace {

bool is_narrow_float(ir::DType d) { return d == ir::DType::Float16 || d == ir::DType::BFloat16; }

// The Cast node producing `v` from a float16/bfloat16 value when `reader` is its one reader (and
// v is no graph output); nullptr otherwise.
ir::Node* widening_cast(const ir::Graph& g, const ir::Value* v, const ir::Node* reader) {
  ir::Node* c = v ? v->producer() : nullptr;
  if (!c || c->owner() != &g || c->op_type() != "Cast" || c->num_inputs() != 1 ||
      c->num_outputs() != 1 || !c->input(0) || backends::pattern::sole_reader(g, v) != reader)
    return nullptr;
  if (!is_narrow_float(c->input(0)->type().dtype) || v->type().dtype != ir::DType::Float32)
    return nullptr;
  return c;
}

}  // namespace

size_t absorb_layer_norm_casts(ir::Graph& graph) {
  // Y alone, or Y and the residual sum of the pre-norm form (fusion::ResidualSum: outputs 1 and
  // 2 unread placeholders).
  auto takes = [&](const ir::Node& n) {
    const auto* sum = n.annotation<backends::fusion::ResidualSum>();
    if (!sum) return n.num_outputs() == 1;
    if (n.num_outputs() != sum->output + 1) return false;
    for (size_t i = 1; i < sum->output; ++i)
      if (!n.output(i)->uses().empty() || graph.is_output(n.output(i))) return false;
    return true;
  };
  std::vector<ir::Node*> norms;
  for (const auto& n : graph.nodes())
    if (n->op_type() == "LayerNormalization" && takes(*n) && n->input(0) &&
        n->output(0)->type().dtype == ir::DType::Float32 && !n->annotation<NarrowCopy>())
      norms.push_back(n.get());
  size_t absorbed = 0;
  for (ir::Node* n : norms) {
    // The widening Casts of X and of the residual: the kernel widens as it reads (and writes a
    // residual sum in Y's float32, as the Add of the widened values did).
    for (size_t slot : {size_t{0}, size_t{3}}) {
      ir::Node* cast = widening_cast(graph, n->input(slot), n);
      if (!cast) continue;
      n->set_input(slot, cast->input(0));
      backends::pattern::remove_node(graph, cast);
      ++absorbed;
    }
    // One saturating Cast of Y to a 16-bit type becomes output 1.
    ir::Node* narrow = nullptr;
    for (auto [user, idx] : n->output(0)->uses())
      if (user->owner() == &graph && user->op_type() == "Cast" && user->num_outputs() == 1 &&
          user->annotation<SaturatingCast>() && is_narrow_float(user->output(0)->type().dtype)) {
        narrow = user;
        break;
      }
    if (!narrow) continue;
    // A node's outputs are fixed when it is made: a new node takes n's place with the values'
    // readers (Y's, the copy's, the sum's where there is one).
    std::vector<ir::Value*> outputs = {n->output(0), narrow->output(0)};
    if (const auto* sum = n->annotation<backends::fusion::ResidualSum>()) {
      outputs.resize(sum->output + 1, nullptr);
      outputs[sum->output] = n->output(sum->output);
    }
    ir::Node* fused =
        backends::pattern::replace_nodes(graph, {narrow, n}, *n, n->inputs(), outputs);
    fused->annotate(std::make_shared<NarrowCopy>());
    ++absorbed;
  }
  if (absorbed > 0) graph.sort_topologically();
  return absorbed;
}

}  // namespace switchyard::cuda
