// fuse_layer_norm (passes.h): the decomposed layer normalization that exporters emit below
// opset 17 (Hugging Face BERT, torch.onnx at opset 14):
//
//   mean = ReduceMean(X, axes)                 axes: the trailing k axes (input 1, constant,
//                                              absent = all), keepdims = 1
//   d    = Sub(X, mean)
//   sq   = Pow(d, 2) | Mul(d, d)
//   var  = ReduceMean(sq, axes)                the same axes
//   den  = Sqrt(Add(var, eps))                 eps: a float constant of one element
//   n    = Div(d, den)
//   [y   = Mul(n, gamma)]                      gamma, beta: float constants over the
//   [z   = Add(y, beta)]                       normalized axes (either operand order)
//
// becomes one LayerNormalization(X, scale, bias, axis = -k, epsilon = eps) producing the last
// value of the chain (its name, readers and graph-output status are kept). Every intermediate
// value must be read only inside the chain and not be a graph output; the normalized dims must
// be static (gamma and beta are expanded to them; a missing gamma becomes ones).
//
// One kernel instead of nine: fewer launches and passes over memory, and under a reduced
// precision (CUDA --precision fp16/bf16) the statistics stay in float32 inside the kernel.
#include <algorithm>
#include <optional>

#include "ir/check.h"
#include "ops/op_kind.h"
#include "passes/passes.h"

namespace switchyard::passes {

namespace {

bool is_op(const ir::Node* n, ops::OpKind kind) {
  return n && ops::find_op_kind(n->op_type()) == kind &&
         (n->domain().empty() || n->domain() == "ai.onnx");
}

bool is_float(ir::DType t) {
  return t == ir::DType::Float32 || t == ir::DType::Float16 || t == ir::DType::BFloat16 ||
         t == ir::DType::Float64;
}

// The node reading `v` when every use of v is by that one node of `g` (it may read v twice, as
// Mul(d, d) does) and v is not a graph output.
ir::Node* only_reader(const ir::Graph& g, const ir::Value* v) {
  if (!v || v->uses().empty() || g.is_output(v)) return nullptr;
  ir::Node* user = v->uses().front().first;
  for (auto [node, idx] : v->uses())
    if (node != user) return nullptr;
  return user->owner() == &g ? user : nullptr;
}

// The other operand of a two-input node, given one of them.
ir::Value* other_operand(const ir::Node* n, const ir::Value* one) {
  if (!n || n->num_inputs() != 2 || n->num_outputs() != 1) return nullptr;
  if (n->input(0) == one) return n->input(1);
  if (n->input(1) == one) return n->input(0);
  return nullptr;
}

// A one-element constant as a double.
std::optional<double> scalar_constant(const ir::Value* v) {
  if (!v || !v->is_constant() || v->constant().numel() != 1 || v->constant().rank() > 1)
    return std::nullopt;
  return v->constant().scalar_as_double();
}

// ReduceMean's axes (its input 1, the IR's form at every opset) as negative indices, sorted,
// when they are constant, keepdims is 1 and they are the trailing axes -k..-1 of a tensor of
// rank `rank` (-1 = unknown: the axes must then be negative). No axes input means all axes.
std::optional<std::vector<int64_t>> trailing_axes(const ir::Node& mean, int64_t rank) {
  if (mean.attr_int("keepdims", 1) != 1 || mean.num_outputs() != 1) return std::nullopt;
  std::vector<int64_t> axes;
  if (mean.num_inputs() >= 2 && mean.input(1)) {
    if (!mean.input(1)->is_constant()) return std::nullopt;
    axes = mean.input(1)->constant().to_int_vector();
  }
  if (axes.empty()) {  // every axis, unless noop_with_empty_axes makes it the identity
    if (mean.attr_int("noop_with_empty_axes", 0) != 0 || rank < 1) return std::nullopt;
    for (int64_t a = -rank; a < 0; ++a) axes.push_back(a);
  }
  for (int64_t& a : axes) {
    if (a >= 0) {
      if (rank < 0 || a >= rank) return std::nullopt;
      a -= rank;
    }
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != -static_cast<int64_t>(axes.size() - i)) return std::nullopt;
  return axes;
}

// `c` (a constant broadcastable into `dims` without widening it: rank <= dims' rank, each dim
// equal or 1) expanded to `dims` in `dtype`; nullopt when it is not such a constant.
std::optional<ir::Tensor> expand_to(const ir::Value* c, const std::vector<int64_t>& dims,
                                    ir::DType dtype) {
  if (!c || !c->is_constant() || c->constant().dtype() != dtype) return std::nullopt;
  const ir::Tensor& src = c->constant();
  const int64_t r = static_cast<int64_t>(dims.size()), sr = src.rank();
  if (sr > r) return std::nullopt;
  std::vector<int64_t> stride(static_cast<size_t>(r), 0);  // source stride per output dim
  int64_t s = 1;
  for (int64_t i = sr - 1; i >= 0; --i) {
    const int64_t od = dims[static_cast<size_t>(r - sr + i)], sd = src.dim(i);
    if (sd != od && sd != 1) return std::nullopt;
    stride[static_cast<size_t>(r - sr + i)] = sd == 1 ? 0 : s;
    s *= sd;
  }
  ir::Tensor out(dtype, dims);
  const size_t esize = ir::dtype_size(dtype);
  const auto* from = static_cast<const unsigned char*>(src.raw());
  auto* to = static_cast<unsigned char*>(out.raw());
  std::vector<int64_t> idx(static_cast<size_t>(r), 0);
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t si = 0;
    for (size_t d = 0; d < idx.size(); ++d) si += idx[d] * stride[d];
    std::copy_n(from + si * esize, esize, to + o * esize);
    for (int64_t d = r - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < dims[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

ir::Tensor filled(ir::DType dtype, const std::vector<int64_t>& dims, float value) {
  ir::Tensor out(dtype, dims);
  for (int64_t i = 0; i < out.numel(); ++i) {
    switch (dtype) {
      case ir::DType::Float32:
        out.data<float>()[i] = value;
        break;
      case ir::DType::Float64:
        out.data<double>()[i] = value;
        break;
      case ir::DType::Float16:
        out.data<Float16>()[i] = Float16(value);
        break;
      default:
        out.data<BFloat16>()[i] = BFloat16(value);
        break;
    }
  }
  return out;
}

struct Match {
  std::vector<ir::Node*> chain;  // in order, first ReduceMean to the last node
  ir::Value* x = nullptr;
  ir::Value* result = nullptr;
  int64_t k = 0;
  double eps = 0;
  ir::Tensor scale, bias;  // bias undefined when there is no Add(beta)
};

std::optional<Match> match_at(const ir::Graph& g, ir::Node* mean) {
  if (!is_op(mean, ops::OpKind::ReduceMean) || mean->num_inputs() < 1) return std::nullopt;
  Match m;
  m.x = mean->input(0);
  if (!m.x || !m.x->type().is_tensor() || !is_float(m.x->type().dtype)) return std::nullopt;
  const ir::DType dtype = m.x->type().dtype;
  const int64_t rank = m.x->type().rank();
  auto axes = trailing_axes(*mean, rank);
  if (!axes || !m.x->type().has_rank()) return std::nullopt;
  m.k = static_cast<int64_t>(axes->size());
  std::vector<int64_t> dims;  // the normalized dims, static
  for (int64_t a = rank - m.k; a < rank; ++a) {
    const ir::Dim& d = (*m.x->type().shape)[static_cast<size_t>(a)];
    if (!d.is_static()) return std::nullopt;
    dims.push_back(d.value);
  }

  ir::Node* sub = only_reader(g, mean->output(0));
  if (!is_op(sub, ops::OpKind::Sub) || sub->input(0) != m.x || sub->input(1) != mean->output(0))
    return std::nullopt;
  ir::Value* d = sub->output(0);
  // d feeds the square and the Div, nothing else.
  ir::Node *square = nullptr, *div = nullptr;
  for (auto [node, idx] : d->uses()) {
    if (node->owner() != &g) return std::nullopt;
    if (is_op(node, ops::OpKind::Div) && idx == 0 && !div) {
      div = node;
    } else if (!square || node == square) {
      square = node;
    } else {
      return std::nullopt;
    }
  }
  if (!square || !div || g.is_output(d)) return std::nullopt;
  const bool is_pow = is_op(square, ops::OpKind::Pow) && square->input(0) == d &&
                      scalar_constant(square->input(1)) == 2.0;
  const bool is_mul = is_op(square, ops::OpKind::Mul) && square->num_inputs() == 2 &&
                      square->input(0) == d && square->input(1) == d;
  if (!is_pow && !is_mul) return std::nullopt;
  ir::Node* var = only_reader(g, square->output(0));
  if (!is_op(var, ops::OpKind::ReduceMean) || var->input(0) != square->output(0) ||
      trailing_axes(*var, rank) != axes)
    return std::nullopt;
  ir::Node* add_eps = only_reader(g, var->output(0));
  if (!is_op(add_eps, ops::OpKind::Add)) return std::nullopt;
  auto eps = scalar_constant(other_operand(add_eps, var->output(0)));
  if (!eps || *eps < 0) return std::nullopt;
  ir::Node* sqrt = only_reader(g, add_eps->output(0));
  if (!is_op(sqrt, ops::OpKind::Sqrt) || only_reader(g, sqrt->output(0)) != div ||
      div->input(1) != sqrt->output(0))
    return std::nullopt;
  m.eps = *eps;
  m.chain = {mean, sub, square, var, add_eps, sqrt, div};
  m.result = div->output(0);

  // The chain's one reader when it is `kind` by a constant over the normalized dims: that
  // constant (expanded), the node joining the chain.
  auto absorb = [&](ops::OpKind kind) -> std::optional<ir::Tensor> {
    ir::Node* n = only_reader(g, m.result);
    if (!is_op(n, kind) || other_operand(n, m.result) == m.result) return std::nullopt;
    std::optional<ir::Tensor> c = expand_to(other_operand(n, m.result), dims, dtype);
    if (c) {
      m.chain.push_back(n);
      m.result = n->output(0);
    }
    return c;
  };
  std::optional<ir::Tensor> gamma = absorb(ops::OpKind::Mul);
  m.scale = gamma ? std::move(*gamma) : filled(dtype, dims, 1.0f);
  if (std::optional<ir::Tensor> beta = absorb(ops::OpKind::Add)) m.bias = std::move(*beta);
  return m;
}

// The fused node's name: the chain's common scope plus "LayerNormalization" (exporters name
// nodes "/encoder/layer.0/ln/ReduceMean", ...), else the last node's name plus it; unique.
std::string fused_name(const ir::Graph& g, const std::vector<ir::Node*>& chain) {
  std::string common = chain.front()->name();
  for (const ir::Node* n : chain) {
    size_t i = 0;
    while (i < common.size() && i < n->name().size() && common[i] == n->name()[i]) ++i;
    common.resize(i);
  }
  size_t slash = common.rfind('/');
  std::string base = slash == std::string::npos
                         ? chain.back()->name() + "/LayerNormalization"
                         : common.substr(0, slash + 1) + "LayerNormalization";
  std::string name = base;
  for (int i = 1; g.find_node(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

}  // namespace

size_t fuse_layer_norm(ir::Graph& graph) {
  size_t fused = 0;
  std::vector<ir::Node*> order;
  for (const auto& n : graph.nodes()) order.push_back(n.get());
  std::vector<ir::Node*> erased;
  for (ir::Node* start : order) {
    if (std::find(erased.begin(), erased.end(), start) != erased.end()) continue;
    std::optional<Match> m = match_at(graph, start);
    if (!m || (m->result->uses().empty() && !graph.is_output(m->result))) continue;
    const std::string name = fused_name(graph, m->chain);
    const std::string prefix = graph.unique_value_name(name + "_");
    std::vector<ir::Value*> inputs = {m->x, graph.add_constant(prefix + "scale", m->scale)};
    if (m->bias.defined()) inputs.push_back(graph.add_constant(prefix + "bias", m->bias));
    ir::Node* ln = graph.add_node("LayerNormalization", name, inputs, {prefix + "out"});
    ln->set_attribute(ir::Attribute::make_int("axis", -m->k));
    ln->set_attribute(ir::Attribute::make_float("epsilon", static_cast<float>(m->eps)));
    if (m->x->type().dtype == ir::DType::Float64)  // statistics in double, as the chain had
      ln->set_attribute(
          ir::Attribute::make_int("stash_type", static_cast<int64_t>(ir::DType::Float64)));
    for (auto it = m->chain.rbegin(); it != m->chain.rend(); ++it) {  // readers first
      ir::Node* doomed = *it;
      erased.push_back(doomed);
      graph.remove_nodes_if([doomed](const ir::Node& n) { return &n == doomed; });
    }
    graph.adopt_output(ln, 0, m->result);
    ++fused;
  }
  if (fused) graph.sort_topologically();
  for (const auto& n : graph.nodes())
    for (ir::Graph* s : n->subgraphs()) fused += fuse_layer_norm(*s);
  return fused;
}

}  // namespace switchyard::passes
