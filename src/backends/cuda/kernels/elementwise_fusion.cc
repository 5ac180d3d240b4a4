// fuse_elementwise_chains (fusion.h): a run of single-reader elementwise nodes on a CUDA
// partition's private graph becomes one node, run by one kernel launch in one pass over memory
// (the chain kernel, elementwise.cc / elementwise.cu).
//
// Representation. The chain's first node (the head) stays and keeps its op type, which now
// only selects the registry entry; it gains an ElementwiseChain (fusion.h, which says what the
// node computes) with one step per fused node: its op, its alpha, the operand it reads and
// whether the running value is its second operand. An input no step reads (the sqrt(2) constant
// of an exported GELU's Div) stays attached and is ignored. The head's output value takes over
// the chain result's type, readers and place among the graph outputs (they are positional); the
// absorbed nodes and their values are removed.
//
// Examples: Add(a, b) -> Relu: ops [Add, Relu], operands [1, -1]. Mul(x, s) -> Add(., t):
// ops [Mul, Add], operands [1, 2], t appended as input 2 (or alpha when t is a scalar constant).
// Sigmoid(x) -> Mul(x, .) (SiLU): ops [Sigmoid, Mul], operands [-1, 0]. Exported exact GELU
// x * 0.5 * (1 + erf(x / 1.41421)) — Div (or Mul by 0.70711) -> Erf -> Add 1 -> Mul x -> Mul 0.5
// in either operand order and either association (x * 0.5 computed first included): the
// Div/Mul node with ops [Gelu], operands [-1], x as input 0.
//
// What fuses: nodes of the default domain whose op is in kEwChainOps, with float32, float16 or
// bfloat16 tensors of one dtype in and out (float64 is left alone: alphas are floats). A node
// joins the chain when it is the only reader (in any graph of the tree) of the running value,
// which is no graph output, reads it in one input, and its other operand (if any) is a scalar
// constant of no higher rank (folded into alpha) or a tensor (at most kEwMaxOperands tensors
// per chain, kEwMaxChainSteps steps). Broadcasting commutes with elementwise ops, so a tensor
// operand may also widen the result. Recognised GELU patterns are fused first, then chains
// greedily from each head in graph order. Afterwards the graph is sorted topologically (an
// appended operand may be produced after the head) and checked with ir::verify. A fused node
// no longer matches its op's schema (Div with extra inputs), so nothing may re-infer its type.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "backends/cuda/fusion.h"
#include "backends/cuda/kernels/elementwise_impl.h"
#include "ir/check.h"
#include "ops/op_traits.h"

namespace switchyard::cuda {
namespace {

struct Chain {
  ir::Node* head = nullptr;
  std::vector<ElementwiseChain::Step> steps;
  std::vector<ir::Value*> extra_inputs;  ///< appended to the head's inputs
  std::vector<ir::Node*> absorbed;       ///< in dependency order
  ir::Value* result = nullptr;
  ir::Value* gelu_input = nullptr;  ///< x of a GELU pattern, which becomes input 0

  void add_step(EwOp op, float alpha, int64_t operand, bool swap) {
    ElementwiseChain::Step step;
    step.op = op;
    step.alpha = alpha;
    step.operand = operand;
    step.swapped = swap;
    steps.push_back(step);
  }
};

const EwChainOpName* chain_op(const ir::Node& n) {
  if (!n.domain().empty()) return nullptr;
  for (const EwChainOpName& c : kEwChainOps)
    if (n.op_type() == c.name) return &c;
  return nullptr;
}

/// The chain op of a node that chainable() accepted.
EwOp chain_op_of(const ir::Node& n) {
  const EwChainOpName* op = chain_op(n);
  SY_ASSERT(op != nullptr);
  return op->op;
}

/// A two-operand step (a broadcasting op), else a unary one.
bool binary_step(const ir::Node& n) { return ops::traits(n).broadcast_elementwise; }

bool fusable_dtype(const ir::Value* v) {
  if (!v || !v->type().is_tensor()) return false;
  ir::DType d = v->type().dtype;
  return d == ir::DType::Float32 || d == ir::DType::Float16 || d == ir::DType::BFloat16;
}

/// The node can be a chain step: a listed op over tensors of one fusable dtype.
bool chainable(const ir::Node& n) {
  const EwChainOpName* op = chain_op(n);
  if (!op || n.num_outputs() != 1 || n.annotation<ElementwiseChain>()) return false;
  if (n.num_inputs() != (binary_step(n) ? 2u : 1u)) return false;
  const ir::Value* out = n.output(0);
  if (!fusable_dtype(out)) return false;
  for (const ir::Value* v : n.inputs())
    if (!v || !v->type().is_tensor() || v->type().dtype != out->type().dtype) return false;
  if (n.op_type() == "Gelu") {
    std::string a = n.attr_string("approximate", "none");
    if (a != "none" && a != "tanh") return false;
  }
  return true;
}

/// A unary step's alpha (see the representation above).
float unary_alpha(const ir::Node& n) {
  const std::string& t = n.op_type();
  if (t == "LeakyRelu") return n.attr_float("alpha", 0.01f);
  if (t == "Elu" || t == "Celu" || t == "ThresholdedRelu") return n.attr_float("alpha", 1.0f);
  if (t == "Gelu") return n.attr_string("approximate", "none") == "tanh" ? 1.0f : 0.0f;
  return 0.0f;
}

struct Reader {
  ir::Node* node;
  int index;
};

/// The one reader of `v` when it has exactly one, in `g` itself, and v is no graph output.
std::optional<Reader> sole_reader(const ir::Graph& g, const ir::Value* v) {
  if (!v || v->uses().size() != 1) return std::nullopt;
  for (const ir::Value* o : g.outputs())
    if (o == v) return std::nullopt;
  auto [node, index] = v->uses()[0];
  if (node->owner() != &g) return std::nullopt;
  return Reader{node, index};
}

/// The value of a one-element constant whose rank is at most `rank_limit`'s (a scalar folded
/// into an alpha must not have widened the result).
std::optional<double> scalar_constant(const ir::Value* v, const ir::Value* rank_limit) {
  if (!v || !v->is_constant() || v->constant().numel() != 1) return std::nullopt;
  if (!ir::dtype_is_float(v->constant().dtype())) return std::nullopt;
  if (!rank_limit->type().has_rank() || v->constant().rank() > rank_limit->type().rank())
    return std::nullopt;
  return v->constant().scalar_as_double(0);
}

bool scalar_near(const ir::Value* v, const ir::Value* rank_limit, double want, double tol) {
  auto s = scalar_constant(v, rank_limit);
  return s && std::fabs(*s - want) <= tol;
}

/// The reader of `v` when it is the only one and a chainable node of op type `type`.
ir::Node* sole_reader_of_type(const ir::Graph& g, const ir::Value* v, const char* type) {
  auto r = sole_reader(g, v);
  if (!r || r->node->op_type() != type || !chainable(*r->node)) return nullptr;
  return r->node;
}

/// The input of binary node n that is not `v` (nullptr when both are v).
ir::Value* other_input(const ir::Node& n, const ir::Value* v) {
  if (n.input(0) == v && n.input(1) != v) return n.input(1);
  if (n.input(1) == v && n.input(0) != v) return n.input(0);
  return nullptr;
}

/// Exported exact GELU from head `n` (see the file comment).
std::optional<Chain> match_gelu(const ir::Graph& g, ir::Node* n) {
  if (!chainable(*n)) return std::nullopt;
  constexpr double kSqrt2 = 1.4142135623730951, kTol = 1e-3, kExact = 1e-6;
  ir::Value* x = nullptr;
  if (n->op_type() == "Div" && scalar_near(n->input(1), n->input(0), kSqrt2, kTol)) {
    x = n->input(0);
  } else if (n->op_type() == "Mul") {
    for (int k = 0; k < 2 && !x; ++k)
      if (scalar_near(n->input(static_cast<size_t>(1 - k)), n->input(static_cast<size_t>(k)),
                      1 / kSqrt2, kTol))
        x = n->input(static_cast<size_t>(k));
  }
  if (!x) return std::nullopt;
  ir::Node* erf = sole_reader_of_type(g, n->output(0), "Erf");
  if (!erf) return std::nullopt;
  ir::Node* add = sole_reader_of_type(g, erf->output(0), "Add");
  if (!add || !scalar_near(other_input(*add, erf->output(0)), x, 1.0, kExact)) return std::nullopt;
  ir::Node* m1 = sole_reader_of_type(g, add->output(0), "Mul");
  if (!m1) return std::nullopt;
  ir::Value* other = other_input(*m1, add->output(0));
  Chain c;
  c.head = n;
  if (other == x) {  // (x * (1 + erf)) * 0.5
    ir::Node* m2 = sole_reader_of_type(g, m1->output(0), "Mul");
    if (!m2 || !scalar_near(other_input(*m2, m1->output(0)), x, 0.5, kExact)) return std::nullopt;
    c.absorbed = {erf, add, m1, m2};
  } else if (scalar_near(other, x, 0.5, kExact)) {  // ((1 + erf) * 0.5) * x
    ir::Node* m2 = sole_reader_of_type(g, m1->output(0), "Mul");
    if (!m2 || other_input(*m2, m1->output(0)) != x) return std::nullopt;
    c.absorbed = {erf, add, m1, m2};
  } else {  // (x * 0.5) * (1 + erf)
    ir::Node* h = other ? other->producer() : nullptr;
    if (!h || h->owner() != &g || h->op_type() != "Mul" || !chainable(*h) ||
        !scalar_near(other_input(*h, x), x, 0.5, kExact))
      return std::nullopt;
    auto r = sole_reader(g, h->output(0));
    if (!r || r->node != m1) return std::nullopt;
    c.absorbed = {h, erf, add, m1};
  }
  c.result = c.absorbed.back()->output(0);
  c.gelu_input = x;
  c.add_step(EwOp::Gelu, 0.0f, kEwUnaryStep, false);
  return c;
}

/// The longest chain from head `n` (nullopt when nothing joins it).
std::optional<Chain> grow_chain(const ir::Graph& g, ir::Node* n) {
  if (!chainable(*n)) return std::nullopt;
  Chain c;
  c.head = n;
  std::vector<ir::Value*> tensors = {n->input(0)};  // the head's inputs the chain reads
  if (binary_step(*n)) {
    tensors.push_back(n->input(1));
    c.add_step(chain_op_of(*n), 0.0f, 1, false);
  } else {
    c.add_step(chain_op_of(*n), unary_alpha(*n), kEwUnaryStep, false);
  }
  ir::Value* v = n->output(0);
  while (c.steps.size() < static_cast<size_t>(kEwMaxChainSteps)) {
    auto r = sole_reader(g, v);
    if (!r || !chainable(*r->node) || r->node->output(0)->type().dtype != v->type().dtype) break;
    ir::Node* next = r->node;
    if (!binary_step(*next)) {
      c.add_step(chain_op_of(*next), unary_alpha(*next), kEwUnaryStep, false);
    } else {
      ir::Value* other = other_input(*next, v);
      if (!other) break;
      const bool swap = r->index == 1;
      if (auto s = scalar_constant(other, v)) {
        c.add_step(chain_op_of(*next), static_cast<float>(*s), kEwScalarStep, swap);
      } else {
        auto it = std::find(tensors.begin(), tensors.end(), other);
        if (it == tensors.end()) {
          if (tensors.size() == static_cast<size_t>(kEwMaxOperands)) break;
          c.extra_inputs.push_back(other);
          tensors.push_back(other);
          it = tensors.end() - 1;
        }
        c.add_step(chain_op_of(*next), 0.0f, it - tensors.begin(), swap);
      }
    }
    c.absorbed.push_back(next);
    v = next->output(0);
  }
  if (c.absorbed.empty()) return std::nullopt;
  c.result = v;
  return c;
}

void rewrite(ir::Graph& g, const Chain& c) {
  ir::Node* head = c.head;
  if (c.gelu_input && head->input(0) != c.gelu_input) {  // Mul(1/sqrt(2), x)
    ir::Value* k = head->input(0);
    head->set_input(0, c.gelu_input);
    head->set_input(1, k);
  }
  for (ir::Value* v : c.extra_inputs) head->add_input(v);
  auto chain = std::make_shared<ElementwiseChain>();
  chain->steps = c.steps;
  head->annotate(std::move(chain));
  ir::Value* out = head->output(0);
  out->set_type(c.result->type());
  g.replace_all_uses(c.result, out);
  // Last first, so each removed node's output has no reader left and goes with it.
  for (auto it = c.absorbed.rbegin(); it != c.absorbed.rend(); ++it) {
    const ir::Node* dead = *it;
    g.remove_nodes_if([dead](const ir::Node& node) { return &node == dead; });
  }
}

}  // namespace

const char* chain_op_name(EwOp op) {
  for (const EwChainOpName& c : kEwChainOps)
    if (c.op == op) return c.name;
  return "?";
}

std::string ElementwiseChain::describe() const {
  std::vector<std::string> parts;
  for (const Step& s : steps) {
    std::string part = chain_op_name(s.op);
    if (s.operand == kEwScalarStep) {
      part += fmt::format("({}{})", s.swapped ? "swapped, " : "", s.alpha);
    } else if (s.operand >= 0) {
      part += fmt::format("({}input {})", s.swapped ? "swapped, " : "", s.operand);
    } else if (s.alpha != 0) {
      part += fmt::format("(alpha {})", s.alpha);
    }
    parts.push_back(std::move(part));
  }
  return fmt::format("chain=[{}]", fmt::join(parts, ", "));
}

void fuse_elementwise_chains(ir::Graph& graph) {
  std::unordered_set<const ir::Node*> gone;
  bool changed = false;
  for (auto* match : {&match_gelu, &grow_chain}) {
    std::vector<ir::Node*> order;
    for (const auto& n : graph.nodes()) order.push_back(n.get());
    for (ir::Node* n : order) {
      if (gone.count(n)) continue;
      std::optional<Chain> c = (*match)(graph, n);
      if (!c) continue;
      for (const ir::Node* a : c->absorbed) gone.insert(a);
      rewrite(graph, *c);
      changed = true;
    }
  }
  if (!changed) return;
  // Tensor operands of absorbed nodes may be produced after the head.
  graph.sort_topologically();
  ir::verify(graph);
}

}  // namespace switchyard::cuda
