// fuse_conv_epilogues (fusion.h): on a partition's private graph (cpu and cuda), folds the chains
//   Conv -> Add(bias) / Add(residual) -> Relu | Sigmoid | Tanh | Clip
// into one Conv node that the Conv kernels run as Y = act(conv(X, W) + B + Z): an Add of
// a per-channel constant ([K,1,1], [1,K,1,1], a scalar) is folded into B, an Add of a tensor of
// the conv output's shape becomes the residual input Z (input 3), and the activation becomes
// the Conv's fusion::Epilogue (payload.h) — for a Clip whose bounds are constant scalars (or
// absent), with its clip_min / clip_max (mobilenet_v2's ReLU6 is Clip(0, 6)). resnet50's
// bottleneck (conv+bn folded by the exporter) gives Conv -> Relu and Conv -> Add -> Relu. A node is
// absorbed only when the value it reads from the chain has that node as its one reader and is not a
// graph output.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "backends/fusion/fusion.h"
#include "backends/fusion/pattern.h"
#include "ir/check.h"

namespace switchyard::backends {

namespace {

using fusion::Activation;
using pattern::is_float;
using pattern::is_onnx_op;
using pattern::remove_node;
using pattern::same_shape;
using pattern::sole_reader;

// The `channels` per-channel values of a constant that, added to a [N, K, spatial...] tensor
// of `out_type`, varies along the channel axis only (or not at all); nullopt otherwise.
std::optional<std::vector<double>> channel_values(const ir::Value* v, const ir::Type& out_type,
                                                  int64_t channels) {
  if (!v->is_constant() || !out_type.has_rank()) return std::nullopt;
  const ir::Tensor& t = v->constant();
  const int64_t out_rank = out_type.rank();
  if (t.dtype() != out_type.dtype || !is_float(t.dtype()) || t.rank() > out_rank)
    return std::nullopt;
  // Dims align from the right: the output's channel axis (1) is the constant's axis `c_axis`.
  const int64_t c_axis = t.rank() - out_rank + 1;
  for (int64_t j = 0; j < t.rank(); ++j) {
    bool ok = t.dim(j) == 1 || (j == c_axis && t.dim(j) == channels);
    if (!ok) return std::nullopt;
  }
  const bool per_channel = c_axis >= 0 && t.dim(c_axis) == channels;
  std::vector<double> values(static_cast<size_t>(channels));
  for (int64_t k = 0; k < channels; ++k) values[k] = t.scalar_as_double(per_channel ? k : 0);
  return values;
}

// A 1-D tensor of `dtype` holding `values`.
ir::Tensor float_tensor(ir::DType dtype, const std::vector<double>& values) {
  ir::Tensor t(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype) {
      case ir::DType::Float32:
        t.data<float>()[i] = static_cast<float>(values[i]);
        break;
      case ir::DType::Float64:
        t.data<double>()[i] = values[i];
        break;
      case ir::DType::Float16:
        t.data<Float16>()[i] = Float16(static_cast<float>(values[i]));
        break;
      case ir::DType::BFloat16:
        t.data<BFloat16>()[i] = BFloat16(static_cast<float>(values[i]));
        break;
      default:
        SY_ASSERT(false);
    }
  }
  return t;
}

// What one conv absorbs.
struct Chain {
  std::vector<ir::Node*> absorbed;          // in chain order
  std::optional<std::vector<double>> bias;  // the folded B (conv bias plus added constants)
  ir::Value* residual = nullptr;
  Activation activation = Activation::None;
  float clip_lo = 0, clip_hi = 0;  // activation Clip
};

// Clip's bound at input `i` as a float: `fallback` when absent, nullopt when it is not a
// constant scalar.
std::optional<float> clip_bound(const ir::Node& clip, size_t i, float fallback) {
  const ir::Value* v = clip.input(i);
  if (!v) return fallback;
  if (!v->is_constant() || v->constant().numel() != 1) return std::nullopt;
  return static_cast<float>(v->constant().scalar_as_double());
}

// Follows the chain below `conv`; empty `absorbed` when nothing can be fused.
// The SiLU (swish) after `cur`: Mul(cur, Sigmoid(cur)) in either operand order, where cur's only
// readers are those two nodes and the Sigmoid's only reader is the Mul (EfficientNet's
// activation). Returns the Sigmoid and the Mul, or nulls.
std::pair<ir::Node*, ir::Node*> swish_after(const ir::Graph& g, const ir::Value* cur) {
  if (g.is_output(cur) || cur->uses().size() != 2) return {nullptr, nullptr};
  ir::Node* sig = nullptr;
  ir::Node* mul = nullptr;
  for (auto [n, idx] : cur->uses()) {
    if (n->owner() != &g) return {nullptr, nullptr};
    if (is_onnx_op(*n, "Sigmoid") && n->num_inputs() == 1 && n->num_outputs() == 1) sig = n;
    if (is_onnx_op(*n, "Mul") && n->num_inputs() == 2 && n->num_outputs() == 1) mul = n;
  }
  if (!sig || !mul || sig == mul || sole_reader(g, sig->output(0)) != mul)
    return {nullptr, nullptr};
  const bool operands = (mul->input(0) == cur && mul->input(1) == sig->output(0)) ||
                        (mul->input(1) == cur && mul->input(0) == sig->output(0));
  return operands ? std::pair{sig, mul} : std::pair<ir::Node*, ir::Node*>{nullptr, nullptr};
}

bool allowed(const std::vector<Activation>& activations, Activation a) {
  return std::find(activations.begin(), activations.end(), a) != activations.end();
}

Chain find_chain(const ir::Graph& g, ir::Node* conv, const std::vector<Activation>& activations) {
  Chain chain;
  ir::Value* conv_out = conv->output(0);
  const ir::Type& out_type = conv_out->type();
  if (!out_type.has_rank() || out_type.rank() < 3) return chain;
  const ir::Dim& channel_dim = (*out_type.shape)[1];
  ir::Value* b = conv->input(2);
  if (b && b->is_constant()) {
    const ir::Tensor& bt = b->constant();
    if (channel_dim.is_static() && bt.rank() == 1 && bt.dim(0) == channel_dim.value &&
        bt.dtype() == out_type.dtype && is_float(bt.dtype())) {
      chain.bias = std::vector<double>(static_cast<size_t>(bt.dim(0)));
      for (int64_t k = 0; k < bt.dim(0); ++k) (*chain.bias)[k] = bt.scalar_as_double(k);
    }
  }
  const bool bias_foldable = !b || chain.bias.has_value();
  bool bias_added = false;

  ir::Value* cur = conv_out;
  while (ir::Node* n = sole_reader(g, cur)) {
    if (!is_onnx_op(*n, "Add") || n->num_inputs() != 2 || n->num_outputs() != 1) break;
    ir::Value* other = n->input(0) == cur ? n->input(1) : n->input(0);
    if (!other || other == cur || !same_shape(n->output(0)->type(), out_type)) break;
    std::optional<std::vector<double>> add;
    if (bias_foldable && channel_dim.is_static())
      add = channel_values(other, out_type, channel_dim.value);
    if (add) {
      if (!chain.bias) chain.bias = std::vector<double>(add->size(), 0.0);
      for (size_t k = 0; k < add->size(); ++k) (*chain.bias)[k] += (*add)[k];
      bias_added = true;
    } else if (!chain.residual && same_shape(other->type(), out_type)) {
      chain.residual = other;
    } else {
      break;
    }
    chain.absorbed.push_back(n);
    cur = n->output(0);
  }
  if (allowed(activations, Activation::Swish)) {
    auto [sig, mul] = swish_after(g, cur);
    if (sig && same_shape(mul->output(0)->type(), out_type)) {
      chain.activation = Activation::Swish;
      chain.absorbed.push_back(sig);
      chain.absorbed.push_back(mul);
    }
  }
  if (ir::Node* n = chain.activation == Activation::None ? sole_reader(g, cur) : nullptr) {
    for (Activation act :
         {Activation::Relu, Activation::Sigmoid, Activation::Tanh, Activation::HardSwish})
      if (allowed(activations, act) && is_onnx_op(*n, fusion::activation_name(act)) &&
          n->num_inputs() == 1 && n->num_outputs() == 1 &&
          same_shape(n->output(0)->type(), out_type)) {
        chain.activation = act;
        chain.absorbed.push_back(n);
        break;
      }
    if (chain.activation == Activation::None && allowed(activations, Activation::Clip) &&
        is_onnx_op(*n, "Clip") && n->num_outputs() == 1 &&
        same_shape(n->output(0)->type(), out_type)) {
      std::optional<float> lo = clip_bound(*n, 1, -INFINITY), hi = clip_bound(*n, 2, INFINITY);
      if (lo && hi && *lo <= *hi) {
        chain.activation = Activation::Clip;
        chain.clip_lo = *lo;
        chain.clip_hi = *hi;
        chain.absorbed.push_back(n);
      }
    }
  }
  if (!bias_added) chain.bias.reset();  // B stays as it is
  return chain;
}

// Replaces `conv` and its chain by one fused Conv whose output keeps the name (and readers) of
// the chain's last value.
void fuse(ir::Graph& g, ir::Node* conv, const Chain& chain) {
  ir::Value* last = chain.absorbed.back()->output(0);
  const std::string out_name = last->name();
  const ir::Type out_type = last->type();
  const std::string name = conv->name();
  const int kind = conv->kind_id();
  const std::vector<ir::Attribute> attributes = conv->attributes();
  const auto annotations = conv->annotations();
  ir::Value* x = conv->input(0);
  ir::Value* w = conv->input(1);
  ir::Value* b = conv->input(2);
  if (chain.bias)
    b = g.add_constant(g.unique_value_name(name + "_fused_bias"),
                       float_tensor(out_type.dtype, *chain.bias));

  // Park the readers of `last` on a placeholder so the chain can go and free its name; erase
  // readers before producers so every intermediate value goes with its node.
  ir::Node* hold = g.add_node("Identity", "", {}, {g.unique_value_name(out_name + "_fusing")});
  g.replace_all_uses(last, hold->output(0));
  for (auto it = chain.absorbed.rbegin(); it != chain.absorbed.rend(); ++it) remove_node(g, *it);
  remove_node(g, conv);

  std::vector<ir::Value*> inputs = {x, w, b};
  if (chain.residual) inputs.push_back(chain.residual);
  while (inputs.size() > 2 && !inputs.back()) inputs.pop_back();
  ir::Node* fused = g.add_node("Conv", name, inputs, {out_name});
  fused->set_kind_id(kind);
  fused->output(0)->set_type(out_type);
  for (const ir::Attribute& a : attributes) fused->set_attribute(a);
  for (const auto& a : annotations) fused->annotate(a);
  if (chain.activation != Activation::None) {
    auto epilogue = std::make_shared<fusion::Epilogue>();
    epilogue->activation = chain.activation;
    if (chain.activation == Activation::Clip) {
      epilogue->clip_min = chain.clip_lo;
      epilogue->clip_max = chain.clip_hi;
    }
    fused->annotate(std::move(epilogue));
  }
  g.replace_all_uses(hold->output(0), fused->output(0));
  remove_node(g, hold);
}

}  // namespace

std::vector<runtime::FusionGroup> fuse_conv_epilogues(
    ir::Graph& graph, const std::vector<fusion::Activation>& activations) {
  std::vector<runtime::FusionGroup> groups;
  std::vector<ir::Node*> convs;
  for (const auto& n : graph.nodes())
    if (is_onnx_op(*n, "Conv") && n->num_outputs() == 1 && n->num_inputs() >= 2 &&
        n->num_inputs() <= 3 && !n->annotation<fusion::Epilogue>())
      convs.push_back(n.get());
  bool changed = false;
  for (ir::Node* conv : convs) {
    Chain chain = find_chain(graph, conv, activations);
    if (chain.absorbed.empty()) continue;
    runtime::FusionGroup group{{conv->name()}};
    for (const ir::Node* n : chain.absorbed) group.members.push_back(n->name());
    groups.push_back(std::move(group));
    fuse(graph, conv, chain);
    changed = true;
  }
  if (changed) graph.sort_topologically();
  return groups;
}

}  // namespace switchyard::backends
