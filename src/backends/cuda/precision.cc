#include "backends/cuda/precision.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ir/check.h"

namespace switchyard::cuda {

namespace {

bool is_f32_tensor(const ir::Value* v) {
  return v && v->type().is_tensor() && v->type().dtype == ir::DType::Float32;
}

const char* name_of(ir::DType t) { return t == ir::DType::Float16 ? "fp16" : "bf16"; }

std::set<int> host_slots(const ir::Node& n, const backends::KernelRegistry& kernels) {
  std::vector<int> hi = kernels.host_inputs(n);
  return {hi.begin(), hi.end()};
}

ir::Value* add_cast(ir::Graph& g, ir::Value* from, ir::DType to, const std::string& hint) {
  ir::Node* c = g.add_node("Cast", g.unique_value_name(hint + "_cast"), {from},
                           {g.unique_value_name(hint + "_" + std::string(ir::dtype_name(to)))});
  c->set_attribute(ir::Attribute::make_int("to", static_cast<int64_t>(to)));
  ir::Type t = from->type();
  t.dtype = to;
  c->output(0)->set_type(t);
  return c->output(0);
}

// Whether some kernel reads `v` on the device (not as a host input).
bool has_device_use(const ir::Value* v, const backends::KernelRegistry& kernels) {
  for (auto [node, idx] : v->uses())
    if (!host_slots(*node, kernels).count(idx)) return true;
  return false;
}

// Points every data (non-host) use of `from` at `to`, except inside `skip`.
void redirect_device_uses(ir::Value* from, ir::Value* to, const ir::Node* skip,
                          const backends::KernelRegistry& kernels) {
  auto uses = from->uses();
  for (auto [node, idx] : uses) {
    if (node == skip) continue;
    if (host_slots(*node, kernels).count(idx)) continue;
    node->set_input(static_cast<size_t>(idx), to);
  }
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

std::map<const ir::Node*, std::string> apply_precision(ir::Graph& g, ir::DType target,
                                                       const backends::KernelRegistry& kernels) {
  std::map<const ir::Node*, std::string> result;
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

  // Graph inputs: cast on entry (host-read uses keep the float32 value).
  for (ir::Value* in : std::vector<ir::Value*>(g.inputs())) {
    if (!is_f32_tensor(in)) continue;
    if (!has_device_use(in, kernels)) continue;  // read on the host only (it may live there)
    ir::Value* cast = add_cast(g, in, target, in->name());
    redirect_device_uses(in, cast, cast->producer(), kernels);
  }
  // Constants: one converted copy, used by every data use.
  for (ir::Value* c : g.constants()) {
    if (!is_f32_tensor(c)) continue;
    if (!has_device_use(c, kernels)) continue;
    ir::Value* narrow = g.add_constant(g.unique_value_name(c->name() + "_" + name_of(target)),
                                       convert_float_tensor(c->constant(), target));
    redirect_device_uses(c, narrow, nullptr, kernels);
  }
  // Node outputs and dtype attributes.
  for (ir::Node* n : original) {
    for (ir::Value* v : n->outputs()) {
      if (!is_f32_tensor(v)) continue;
      ir::Type t = v->type();
      t.dtype = target;
      v->set_type(t);
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
  // Partition outputs leave as float32.
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ir::Value* out = g.outputs()[i];
    if (!output_was_f32[i] || out->type().dtype != target) continue;
    ir::Value* back = add_cast(g, out, ir::DType::Float32, out->name());
    g.set_output(i, back);
  }
  // Nodes whose kernel lacks the narrow type run in float32 between casts.
  for (ir::Node* n : original) {
    if (!floaty.count(n)) continue;
    if (kernels.supports(*n).ok) {
      result[n] = name_of(target);
      continue;
    }
    std::set<int> hi = host_slots(*n, kernels);
    for (size_t k = 0; k < n->num_inputs(); ++k) {
      ir::Value* v = n->input(k);
      if (!v || hi.count(static_cast<int>(k)) || !v->type().is_tensor() ||
          v->type().dtype != target)
        continue;
      n->set_input(k, add_cast(g, v, ir::DType::Float32, v->name()));
    }
    for (ir::Value* v : n->outputs()) {
      if (!v->type().is_tensor() || v->type().dtype != target) continue;
      ir::Type t = v->type();
      t.dtype = ir::DType::Float32;
      v->set_type(t);
      auto uses = v->uses();
      bool is_output = std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end();
      if (uses.empty() && !is_output) continue;
      ir::Value* narrow = add_cast(g, v, target, v->name());
      for (auto [user, idx] : uses) user->set_input(static_cast<size_t>(idx), narrow);
      for (size_t i = 0; i < g.outputs().size(); ++i)
        if (g.outputs()[i] == v) g.set_output(i, narrow);
    }
    result[n] = "fp32";
  }
  g.sort_topologically();
  return result;
}

}  // namespace switchyard::cuda
