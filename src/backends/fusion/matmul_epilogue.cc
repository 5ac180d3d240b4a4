// fuse_matmul_epilogues (fusion.h): on a partition's private graph (cpu and cuda), folds
//   MatMul → Div | Mul(scalar) → Add(bias) → Relu | Gelu   (each optional, not all absent)
//   Gemm → Relu | Gelu
// into the MatMul / Gemm node: the scale becomes the alpha of its fusion::Epilogue (payload.h;
// cuBLASLt's alpha: attention's scores / sqrt(d) costs no pass of its own), the bias its input 2,
// the activation the Epilogue's activation (matmul.cc runs all three). The bias is a 1-D float
// constant (or graph input) of length N, B's static last dim, with the MatMul's dtype, in either
// Add operand order. Gelu is fused in its exact (erf) form, and in its tanh form (GeluTanh)
// where the backend's kernel asks for it (cuBLASLt's GELU epilogue is that form). A node is
// absorbed only when the value it reads from the chain has that one use and is not a graph output;
// the chain's last value is replaced by the MatMul/Gemm output everywhere (graph outputs included).
//
// The fused MatMul has three inputs, more than its ONNX schema allows: the graph still passes
// ir::verify (structure only: the bias is visible before the node, since constants and graph
// inputs are), but type inference must not run again on the fused graph.
#include <algorithm>
#include <cmath>
#include <optional>

#include "backends/fusion/fusion.h"
#include "ops/op_kind.h"

namespace switchyard::backends {

namespace {

using fusion::Activation;

bool is_op(const ir::Node& node, ops::OpKind kind) {
  if (node.kind_id() >= 0) return node.kind_id() == static_cast<int>(kind);
  return ops::find_op_kind(node.op_type()) == kind &&
         (node.domain().empty() || node.domain() == "ai.onnx");
}

bool is_float_tensor(const ir::Value* v) {
  return v && v->type().is_tensor() && ir::dtype_is_float(v->type().dtype);
}

// The one node of `graph` that reads `v`, when v has exactly one use and is no graph output.
ir::Node* sole_consumer(const ir::Graph& graph, const ir::Value* v) {
  if (v->uses().size() != 1) return nullptr;
  if (graph.is_output(v)) return nullptr;
  ir::Node* user = v->uses().front().first;
  return user->owner() == &graph ? user : nullptr;
}

// B's static last dim when B is at least a matrix (then the output ends in N).
std::optional<int64_t> static_n(const ir::Node& matmul) {
  const ir::Value* b = matmul.input(1);
  if (!b || !b->type().has_rank() || b->type().rank() < 2) return std::nullopt;
  const ir::Dim& n = b->type().shape->back();
  if (!n.is_static()) return std::nullopt;
  return n.value;
}

// The bias operand of `add` (the input that is not `from`): a constant or graph input, 1-D of
// static length n, with from's dtype. nullptr when the Add is not such a bias add.
ir::Value* bias_operand(const ir::Node& add, const ir::Value* from, int64_t n) {
  if (!is_op(add, ops::OpKind::Add) || add.num_inputs() != 2 || add.num_outputs() != 1)
    return nullptr;
  ir::Value* other = add.input(0) == from ? add.input(1) : add.input(0);
  if (!other || other == from || (add.input(0) != from && add.input(1) != from)) return nullptr;
  if (!other->is_constant() && !other->is_graph_input()) return nullptr;
  const ir::Type& t = other->type();
  if (!t.has_rank() || t.rank() != 1 || t.dtype != from->type().dtype) return nullptr;
  const ir::Dim& len = t.shape->front();
  return len.is_static() && len.value == n ? other : nullptr;
}

// The factor when `node` scales `from` by a float constant of one element that does not widen
// the result: from / c (alpha 1 / c) or from * c, c * from (alpha c).
std::optional<double> scale_factor(const ir::Node& node, const ir::Value* from) {
  const bool div = is_op(node, ops::OpKind::Div), mul = is_op(node, ops::OpKind::Mul);
  if ((!div && !mul) || node.num_inputs() != 2 || node.num_outputs() != 1) return std::nullopt;
  if (div && node.input(0) != from) return std::nullopt;
  const ir::Value* c = node.input(0) == from ? node.input(1) : node.input(0);
  if (!c || c == from || !c->is_constant() || !ir::dtype_is_float(c->constant().dtype()) ||
      c->constant().numel() != 1 || !from->type().has_rank() ||
      c->constant().rank() > from->type().rank())
    return std::nullopt;
  const double v = c->constant().scalar_as_double(0);
  if (!std::isfinite(v) || (div && v == 0)) return std::nullopt;
  return div ? 1.0 / v : v;
}

// Relu, Gelu or (with tanh_gelu) GeluTanh when `node` is an activation the matmul kernels
// apply exactly, else None.
Activation activation_of(const ir::Node& node, bool tanh_gelu) {
  if (node.num_inputs() != 1 || node.num_outputs() != 1) return Activation::None;
  if (is_op(node, ops::OpKind::Relu)) return Activation::Relu;
  if (!is_op(node, ops::OpKind::Gelu)) return Activation::None;
  const std::string approximate = node.attr_string("approximate", "none");
  if (approximate == "none") return Activation::Gelu;
  if (approximate == "tanh" && tanh_gelu) return Activation::GeluTanh;
  return Activation::None;
}

// The activation reading `v` (its one use), or nullptr.
ir::Node* activation_after(const ir::Graph& graph, const ir::Value* v, bool tanh_gelu) {
  ir::Node* next = sole_consumer(graph, v);
  return next && activation_of(*next, tanh_gelu) != Activation::None ? next : nullptr;
}

}  // namespace

std::vector<runtime::FusionGroup> fuse_matmul_epilogues(ir::Graph& graph, bool tanh_gelu) {
  std::vector<runtime::FusionGroup> groups;
  std::vector<ir::Node*> absorbed;
  std::vector<ir::Node*> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  for (ir::Node* node : nodes) {
    const bool matmul = is_op(*node, ops::OpKind::MatMul) && node->num_inputs() == 2;
    const bool gemm = is_op(*node, ops::OpKind::Gemm);
    const fusion::Epilogue* fused = node->annotation<fusion::Epilogue>();
    if ((!matmul && !gemm) || node->num_outputs() != 1 ||
        (fused && fused->activation != Activation::None))
      continue;
    ir::Value* out = node->output(0);
    if (!is_float_tensor(out)) continue;

    ir::Value* tail = out;
    ir::Node* scale = nullptr;
    std::optional<double> alpha;
    ir::Node* add = nullptr;
    ir::Value* bias = nullptr;
    if (matmul) {
      ir::Node* next = sole_consumer(graph, out);
      if (next && (alpha = scale_factor(*next, out))) {
        scale = next;
        tail = scale->output(0);
      }
      next = sole_consumer(graph, tail);
      std::optional<int64_t> n = static_n(*node);
      if (next && n && (bias = bias_operand(*next, tail, *n))) {
        add = next;
        tail = add->output(0);
      }
    }
    ir::Node* act = activation_after(graph, tail, tanh_gelu);
    if (act) tail = act->output(0);
    if (!scale && !add && !act) continue;
    runtime::FusionGroup group{{node->name()}};
    for (ir::Node* n : {scale, add, act})
      if (n) group.members.push_back(n->name());
    groups.push_back(std::move(group));

    if (scale || act) {
      auto epilogue = std::make_shared<fusion::Epilogue>(fused ? *fused : fusion::Epilogue());
      if (scale) epilogue->alpha = static_cast<float>(*alpha);
      if (act) epilogue->activation = activation_of(*act, tanh_gelu);
      node->annotate(std::move(epilogue));
    }
    if (add) node->add_input(bias);
    graph.replace_all_uses(tail, out);
    // Detach the absorbed nodes first, so that erasing them leaves no orphaned values.
    for (ir::Node* gone : {scale, add, act}) {
      if (!gone) continue;
      for (size_t i = 0; i < gone->num_inputs(); ++i) gone->set_input(i, nullptr);
      absorbed.push_back(gone);
    }
  }
  graph.remove_nodes_if([&](const ir::Node& n) {
    return std::find(absorbed.begin(), absorbed.end(), &n) != absorbed.end();
  });
  return groups;
}

}  // namespace switchyard::backends
