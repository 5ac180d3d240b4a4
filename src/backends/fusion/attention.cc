// fuse_attention (fusion.h): scaled dot-product attention as exporters write it, after the
// matmul epilogues, the Transpose folding and the mask fusion have run on the partition:
//
//   scores  = MatMul(Q, K) [Epilogue alpha: the scale; OperandPermutes: the head split]
//   masked  = scores | Where(cond, fill, scores) | Where(cond, scores, fill)   (GPT's causal mask)
//   probs   = Softmax(masked [, additive mask M]) over the last axis
//   context = MatMul(probs, V) [OperandPermutes b]
//   out     = context | Transpose(context, perm) (the head merge, perm keeping the last axis)
//
// becomes one MatMul node (the context's name and kind) with inputs Q, K, V and the mask (M, or
// cond; absent without one) and a fusion::Attention (payload.h): the permutations of Q, K and V
// to the canonical [batch, heads, sequence, head dim] operands, the head merge's permutation, the
// scale (1 without one) and the mask's kind (Add: M added; WhereTrue / WhereFalse: the score
// replaced by the fill where cond is true / false).
// It fires only for rank-4 operands of one of the rules' dtypes whose head dim is innermost in
// Q, K and V (the kernel reads rows of it), every absorbed value read once inside the pattern
// and no graph output; the kernel checks the run-time shapes (batch dims broadcast as MatMul's).
// Operands cut out of one product are then read as views of it (attention_views.cc).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/fusion/fusion.h"
#include "backends/fusion/pattern.h"

namespace switchyard::backends {

namespace {

using fusion::Activation;
using pattern::is_onnx_op;
using pattern::remove_node;
using pattern::sole_reader;

const std::vector<int64_t> kIdentity4 = {0, 1, 2, 3};

bool has_dtype(const AttentionRules& rules, ir::DType d) {
  return std::find(rules.dtypes.begin(), rules.dtypes.end(), d) != rules.dtypes.end();
}

bool rank4(const ir::Value* v) {
  return v && v->type().is_tensor() && v->type().has_rank() && v->type().rank() == 4;
}

// A plain MatMul of two rank-4 operands: no fused activation, and no folded scale unless
// `allow_alpha` (its epilogue then holds nothing but the scale: the bias is a third input).
bool plain_matmul(const ir::Node& n, bool allow_alpha) {
  if (!is_onnx_op(n, "MatMul") || n.num_inputs() != 2 || n.num_outputs() != 1) return false;
  const fusion::Epilogue* epilogue = n.annotation<fusion::Epilogue>();
  if ((epilogue && epilogue->activation != Activation::None) || n.annotation<fusion::Attention>())
    return false;
  if (!allow_alpha && epilogue) return false;
  return rank4(n.input(0)) && rank4(n.input(1));
}

// The folded permutation of operand A (`a`) or B of `n`: the identity when none folded, empty
// when it is not of rank 4.
std::vector<int64_t> perm_of(const ir::Node& n, bool a) {
  const fusion::OperandPermutes* permutes = n.annotation<fusion::OperandPermutes>();
  const std::vector<int64_t> none;
  const std::vector<int64_t>& p = permutes ? (a ? permutes->a : permutes->b) : none;
  if (p.empty()) return kIdentity4;
  return p.size() == 4 ? p : std::vector<int64_t>{};
}

// A one-element float constant of rank <= 4 (it cannot widen the scores): its value.
bool fill_value(const ir::Value* v, float& out) {
  if (!v || !v->is_constant() || v->constant().numel() != 1 ||
      !ir::dtype_is_float(v->constant().dtype()) || v->constant().rank() > 4)
    return false;
  out = static_cast<float>(v->constant().scalar_as_double(0));
  return !std::isnan(out);
}

struct Match {
  ir::Node* scores = nullptr;
  ir::Node* where = nullptr;
  ir::Node* softmax = nullptr;
  ir::Node* context = nullptr;
  ir::Node* merge = nullptr;
  ir::Value* mask = nullptr;
  fusion::Attention::Mask mask_kind = fusion::Attention::Mask::None;
  float fill = 0;
  std::vector<int64_t> perm_q, perm_k, perm_v, perm_out;
  std::vector<ir::Node*> mask_chain;   // the Nots, bool Casts and Slices the mask came through
  std::vector<ir::Node*> mask_slices;  // its Slices, the one nearest the mask's source first
};

constexpr size_t kMaxMaskSlices = 2;  // a causal mask cut out of a constant on two axes

// A Slice the attention can read the mask through: data, starts, ends and optional axes and
// steps, every value a tensor (their contents are read at run time, on the host).
bool absorbable_slice(const ir::Node& n) {
  if (!is_onnx_op(n, "Slice") || n.num_inputs() < 3 || n.num_inputs() > 5 || n.num_outputs() != 1)
    return false;
  for (size_t i = 0; i < 3; ++i)
    if (!n.input(i)) return false;
  return true;
}

// The Where's bool condition traced back through what the kernel can do as it reads the mask:
// Nots (the kind flips), Casts of bool to bool, and up to kMaxMaskSlices Slices (read as a
// strided view of their data), each read by nothing else. Updates m.mask, m.mask_kind, the
// chain and the slices.
void trace_mask(const ir::Graph& g, Match& m) {
  const ir::Node* reader = m.where;
  for (;;) {
    ir::Node* p = m.mask->producer();
    if (!p || p->owner() != &g || p->num_outputs() != 1 || sole_reader(g, m.mask) != reader) return;
    const bool bool_in = p->input(0) && p->input(0)->type().is_tensor() &&
                         p->input(0)->type().dtype == ir::DType::Bool;
    if (!bool_in) return;
    if (is_onnx_op(*p, "Not") && p->num_inputs() == 1) {
      m.mask_kind = m.mask_kind == fusion::Attention::Mask::WhereTrue
                        ? fusion::Attention::Mask::WhereFalse
                        : fusion::Attention::Mask::WhereTrue;
    } else if (is_onnx_op(*p, "Cast") && p->num_inputs() == 1 &&
               p->attr_int("to", 0) == static_cast<int64_t>(ir::DType::Bool)) {
      // bool to bool: the same values
    } else if (absorbable_slice(*p) && m.mask_slices.size() < kMaxMaskSlices &&
               p->input(0)->type().has_rank() && p->input(0)->type().rank() <= 4) {
      m.mask_slices.insert(m.mask_slices.begin(), p);
    } else {
      return;
    }
    m.mask_chain.push_back(p);
    m.mask = p->input(0);
    reader = p;
  }
}

// The pattern ending in the context MatMul `ctx`, or false.
bool match_at(const ir::Graph& g, ir::Node* ctx, const AttentionRules& rules, Match& m) {
  const fusion::OperandPermutes* ctx_permutes = ctx->annotation<fusion::OperandPermutes>();
  if (!plain_matmul(*ctx, false) || (ctx_permutes && !ctx_permutes->a.empty())) return false;
  const ir::DType dtype = ctx->output(0)->type().dtype;
  if (!has_dtype(rules, dtype)) return false;
  m.context = ctx;
  // probs = Softmax(masked [, M]) over the last axis, read only here.
  ir::Node* sm = ctx->input(0)->producer();
  if (!sm || sm->owner() != &g || !is_onnx_op(*sm, "Softmax") || sm->num_outputs() != 1 ||
      sm->num_inputs() < 1 || sm->num_inputs() > 2 || sole_reader(g, sm->output(0)) != ctx)
    return false;
  const int64_t axis = sm->attr_int("axis", -1);
  if ((axis != -1 && axis != 3) || !rank4(sm->input(0))) return false;
  m.softmax = sm;
  if (sm->num_inputs() == 2 && sm->input(1)) {
    const ir::Type& mt = sm->input(1)->type();
    if (!mt.is_tensor() || mt.dtype != dtype || !mt.has_rank() || mt.rank() > 4) return false;
    m.mask = sm->input(1);
    m.mask_kind = fusion::Attention::Mask::Add;
  }
  // masked: the scores, or a Where over them (not with an additive mask too).
  ir::Value* s = sm->input(0);
  ir::Node* p = s->producer();
  if (p && p->owner() == &g && is_onnx_op(*p, "Where") && p->num_inputs() == 3 &&
      p->num_outputs() == 1 && !m.mask) {
    if (sole_reader(g, s) != sm) return false;
    ir::Value* cond = p->input(0);
    if (!cond || !cond->type().is_tensor() || cond->type().dtype != ir::DType::Bool ||
        !cond->type().has_rank() || cond->type().rank() > 4)
      return false;
    for (int keep = 1; keep <= 2 && !m.where; ++keep) {
      ir::Value* kept = p->input(static_cast<size_t>(keep));
      float fill = 0;
      if (!kept || !fill_value(p->input(static_cast<size_t>(3 - keep)), fill)) continue;
      m.where = p;
      m.mask = cond;
      m.mask_kind =
          keep == 2 ? fusion::Attention::Mask::WhereTrue : fusion::Attention::Mask::WhereFalse;
      m.fill = fill;
      s = kept;
    }
    if (!m.where) return false;
    if (rules.mask_views) trace_mask(g, m);
  }
  // scores = MatMul(Q, K) (its scale folded), read only by the Where or the Softmax.
  ir::Node* sc = s->producer();
  if (!sc || sc->owner() != &g || !plain_matmul(*sc, true) ||
      sole_reader(g, s) != (m.where ? m.where : sm) || sc->output(0)->type().dtype != dtype ||
      sc->input(0)->type().dtype != dtype || sc->input(1)->type().dtype != dtype ||
      ctx->input(1)->type().dtype != dtype)
    return false;
  m.scores = sc;
  m.perm_q = perm_of(*sc, true);
  const std::vector<int64_t> kt = perm_of(*sc, false);
  m.perm_v = perm_of(*ctx, false);
  if (m.perm_q.empty() || kt.empty() || m.perm_v.empty()) return false;
  // Kᵀ is [b, h, d, s]: the canonical K [b, h, s, d] swaps its last two dims.
  m.perm_k = {kt[0], kt[1], kt[3], kt[2]};
  if (m.perm_q[3] != 3 || m.perm_k[3] != 3 || m.perm_v[3] != 3) return false;
  // The head merge, when the context is read by it alone.
  ir::Node* t = sole_reader(g, ctx->output(0));
  if (t && is_onnx_op(*t, "Transpose") && t->num_outputs() == 1 && t->has_attribute("perm")) {
    std::vector<int64_t> perm = t->attr_ints("perm");
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    if (sorted == kIdentity4 && perm[3] == 3) {
      m.merge = t;
      m.perm_out = perm;
    }
  }
  return true;
}

// Replaces the matched nodes by the fused MatMul producing the pattern's last value.
void rewrite(ir::Graph& g, const Match& m) {
  ir::Node* last = m.merge ? m.merge : m.context;
  ir::Value* out = last->output(0);
  const std::string out_name = out->name();
  const ir::Type out_type = out->type();
  const std::string name = m.context->name(), op = m.context->op_type();
  const std::string domain = m.context->domain();
  const int kind = m.context->kind_id();
  std::vector<ir::Value*> inputs = {m.scores->input(0), m.scores->input(1), m.context->input(1)};
  if (m.mask) inputs.push_back(m.mask);
  if (!m.mask_slices.empty()) {
    inputs.resize(7, nullptr);  // 4-6: the operand views' Reshape targets
    for (const ir::Node* slice : m.mask_slices)
      for (size_t i = 1; i < 5; ++i) inputs.push_back(slice->input(i));
  }
  const fusion::Epilogue* scale = m.scores->annotation<fusion::Epilogue>();
  auto attention = std::make_shared<fusion::Attention>();
  attention->perm_q = m.perm_q;
  attention->perm_k = m.perm_k;
  attention->perm_v = m.perm_v;
  if (m.merge) attention->perm_out = m.perm_out;
  attention->alpha = scale ? scale->alpha : 1.0f;
  attention->mask = m.mask_kind;
  if (m.where) attention->mask_fill = m.fill;
  for (const ir::Node* slice : m.mask_slices) attention->mask_slices.push_back({slice->name()});
  // Park the readers on a placeholder so the nodes can go and free the output's name.
  ir::Node* hold = g.add_node("Identity", "", {}, {g.unique_value_name(out_name + "_fusing")});
  g.replace_all_uses(out, hold->output(0));
  std::vector<ir::Node*> gone = {m.merge, m.context, m.softmax, m.where, m.scores};
  gone.insert(gone.end(), m.mask_chain.begin(), m.mask_chain.end());
  for (ir::Node* n : gone) {
    if (!n) continue;
    for (size_t i = 0; i < n->num_inputs(); ++i) n->set_input(i, nullptr);
    remove_node(g, n);
  }
  ir::Node* fused = g.add_node(op, name, inputs, {out_name}, domain);
  fused->set_kind_id(kind);
  fused->output(0)->set_type(out_type);
  fused->annotate(std::move(attention));
  g.replace_all_uses(hold->output(0), fused->output(0));
  remove_node(g, hold);
}

}  // namespace

std::vector<runtime::FusionGroup> fuse_attention(ir::Graph& graph, const AttentionRules& rules) {
  std::vector<Match> matches;
  std::vector<const ir::Node*> taken;  // nodes of earlier matches: each node joins one
  auto free = [&](const ir::Node* n) {
    return !n || std::find(taken.begin(), taken.end(), n) == taken.end();
  };
  for (const auto& n : graph.nodes()) {
    Match m;
    if (!match_at(graph, n.get(), rules, m)) continue;
    std::vector<const ir::Node*> nodes = {m.scores, m.where, m.softmax, m.context, m.merge};
    nodes.insert(nodes.end(), m.mask_chain.begin(), m.mask_chain.end());
    if (!std::all_of(nodes.begin(), nodes.end(), free)) continue;
    taken.insert(taken.end(), nodes.begin(), nodes.end());
    matches.push_back(std::move(m));
  }
  std::vector<runtime::FusionGroup> groups;
  for (const Match& m : matches) {
    runtime::FusionGroup group{{m.context->name(), m.scores->name()}};
    if (m.where) group.members.push_back(m.where->name());
    for (const ir::Node* n : m.mask_chain) group.members.push_back(n->name());
    group.members.push_back(m.softmax->name());
    if (m.merge) group.members.push_back(m.merge->name());
    groups.push_back(std::move(group));
    rewrite(graph, m);
  }
  if (!matches.empty()) graph.sort_topologically();
  for (runtime::FusionGroup& g : fold_packed_attention_operands(graph))
    groups.push_back(std::move(g));
  return groups;
}

}  // namespace switchyard::backends
