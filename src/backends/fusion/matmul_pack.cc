// pack_sibling_matmuls (fusion.h): sibling products of one input X, after the matmul epilogues,
//
//   Y_i = act(alpha * (X @ W_i) + b_i)      i = 1..k, 2 <= k <= 4
//
// with constant weights W_i [K, N_i] (and constant biases b_i [N_i], all or none) of X's dtype
// and one epilogue, become one product of the concatenated weights [K, N_1 + ... + N_k] (and
// biases) followed by a Split of its last axis whose outputs are the Y_i (their names, types and
// readers kept): BERT's query, key and value products, three latency-bound launches at small
// batch, become one. The packed node keeps the first sibling's name and epilogue; the Split is
// "<name>/split". Column j of the packed product is the same dot product as column j of its
// sibling, so the graph computes the same values. With `attention_operands_only` a sibling
// joins only when its result is one fused attention's operand through a head split Reshape
// (head_split.h), the siblings of a pack all that one attention's, so that
// fold_packed_attention_operands then reads the operands out of the packed product and the
// Split goes; elsewhere a Split would copy what the separate products wrote directly.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/fusion/fusion.h"
#include "backends/fusion/head_split.h"
#include "backends/fusion/pattern.h"
#include "ops/op_kind.h"

namespace switchyard::backends {

namespace {

using pattern::is_onnx_op;
using pattern::remove_node;

constexpr size_t kMaxPackedProducts = 4;

struct Sibling {
  ir::Node* node = nullptr;
  int64_t n = 0;                        // N_i
  const ir::Node* attention = nullptr;  // with attention_operands_only: the one it feeds
};

// The fused attention that `y` [B, S, N] is an operand of, through a head split Reshape (its
// other readers Shape nodes of its leading dims): nullptr when there is none.
const ir::Node* attention_fed(const ir::Graph& g, const ir::Value* y) {
  if (g.is_output(y) || !y->type().has_rank() || y->type().rank() != 3) return nullptr;
  const ir::Node* reshape = nullptr;
  for (const auto& [reader, slot] : y->uses()) {
    if (!reshape && slot == 0 && reader->owner() == &g && is_onnx_op(*reader, "Reshape") &&
        reader->input(1) != y) {
      reshape = reader;
      continue;
    }
    if (!head_split::reads_leading_dims_only(g, *reader, 3)) return nullptr;
  }
  if (!reshape || !head_split::may_split_heads(*reshape)) return nullptr;
  const ir::Value* r = reshape->output(0);
  if (g.is_output(r) || r->uses().empty()) return nullptr;
  const ir::Node* attention = r->uses().front().first;
  for (const auto& [reader, slot] : r->uses())
    if (reader != attention || slot > 2 || !reader->annotation<fusion::Attention>()) return nullptr;
  return attention;
}

// Whether two epilogues (nullptr: none) apply the same function.
bool same_epilogue(const fusion::Epilogue* a, const fusion::Epilogue* b) {
  const fusion::Epilogue none;
  const fusion::Epilogue& x = a ? *a : none;
  const fusion::Epilogue& y = b ? *b : none;
  return x.activation == y.activation && x.alpha == y.alpha && x.clip_min == y.clip_min &&
         x.clip_max == y.clip_max;
}

// `node` as a sibling that may join a pack, or false.
bool sibling_of(const ir::Graph& g, ir::Node* node, const PackRules& rules, Sibling& s) {
  if (!is_onnx_op(*node, "MatMul") || node->num_inputs() < 2 || node->num_inputs() > 3 ||
      node->num_outputs() != 1)
    return false;
  for (const auto& a : node->annotations())
    if (!dynamic_cast<const fusion::Epilogue*>(a.get())) return false;  // permutes, attention
  const ir::Value* x = node->input(0);
  const ir::Value* w = node->input(1);
  const ir::Value* y = node->output(0);
  if (!x || !w || x == w || !w->is_constant() || w->constant().rank() != 2) return false;
  const ir::DType dtype = w->constant().dtype();
  if (std::find(rules.dtypes.begin(), rules.dtypes.end(), dtype) == rules.dtypes.end() ||
      x->type().dtype != dtype || y->type().dtype != dtype || !x->type().has_rank() ||
      x->type().rank() < 2 || !y->type().has_rank() || y->type().rank() != x->type().rank())
    return false;
  const int64_t k = w->constant().dim(0), n = w->constant().dim(1);
  const ir::Dim& xk = x->type().shape->back();
  const ir::Dim& yn = y->type().shape->back();
  if (k <= 0 || n <= 0 || (xk.is_static() && xk.value != k) || !yn.is_static() || yn.value != n)
    return false;
  if (node->num_inputs() == 3) {
    const ir::Value* b = node->input(2);
    if (!b || !b->is_constant() || b->constant().dtype() != dtype || b->constant().rank() != 1 ||
        b->constant().dim(0) != n)
      return false;
  }
  s = Sibling{node, n, nullptr};
  if (rules.attention_operands_only && !(s.attention = attention_fed(g, y))) return false;
  return true;
}

// Whether `b` may join the pack of `a` (same input, K, dtype, bias and epilogue; same attention).
bool packs_with(const Sibling& a, const Sibling& b) {
  const ir::Node& x = *a.node;
  const ir::Node& y = *b.node;
  return x.input(0) == y.input(0) && x.num_inputs() == y.num_inputs() &&
         x.input(1)->constant().dim(0) == y.input(1)->constant().dim(0) &&
         x.input(1)->constant().dtype() == y.input(1)->constant().dtype() &&
         same_epilogue(x.annotation<fusion::Epilogue>(), y.annotation<fusion::Epilogue>()) &&
         a.attention == b.attention;
}

// The tensors `parts` ([rows, N_i] each, one dtype) side by side: [rows, sum N_i].
ir::Tensor concat_columns(const std::vector<const ir::Tensor*>& parts, int64_t rows) {
  int64_t cols = 0;
  for (const ir::Tensor* t : parts) cols += t->shape().back();
  const ir::DType dtype = parts.front()->dtype();
  const size_t es = ir::dtype_size(dtype);
  ir::Tensor out(dtype, rows == 1 && parts.front()->rank() == 1 ? std::vector<int64_t>{cols}
                                                                : std::vector<int64_t>{rows, cols});
  auto* dst = static_cast<unsigned char*>(out.raw());
  for (int64_t r = 0; r < rows; ++r) {
    for (const ir::Tensor* t : parts) {
      const size_t row_bytes = static_cast<size_t>(t->shape().back()) * es;
      std::memcpy(dst,
                  static_cast<const unsigned char*>(t->raw()) + static_cast<size_t>(r) * row_bytes,
                  row_bytes);
      dst += row_bytes;
    }
  }
  return out;
}

// Replaces the siblings by the packed product and its Split.
void pack(ir::Graph& g, const std::vector<Sibling>& pack) {
  ir::Node* first = pack.front().node;
  ir::Value* x = first->input(0);
  const int64_t k = first->input(1)->constant().dim(0);
  std::vector<const ir::Tensor*> weights, biases;
  std::vector<int64_t> sizes;
  for (const Sibling& s : pack) {
    weights.push_back(&s.node->input(1)->constant());
    if (s.node->num_inputs() == 3) biases.push_back(&s.node->input(2)->constant());
    sizes.push_back(s.n);
  }
  std::vector<ir::Value*> inputs = {
      x, g.add_constant(g.unique_value_name(first->input(1)->name() + "_packed"),
                        concat_columns(weights, k))};
  if (!biases.empty())
    inputs.push_back(g.add_constant(g.unique_value_name(first->input(2)->name() + "_packed"),
                                    concat_columns(biases, 1)));
  ir::Tensor split_sizes(ir::DType::Int64, {static_cast<int64_t>(sizes.size())});
  std::copy(sizes.begin(), sizes.end(), split_sizes.data<int64_t>());
  ir::Value* sizes_value =
      g.add_constant(g.unique_value_name(first->name() + "/split_sizes"), std::move(split_sizes));

  const std::string name = first->name(), domain = first->domain();
  const int kind = first->kind_id();
  const auto annotations = first->annotations();
  ir::Type packed_type = first->output(0)->type();
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  packed_type.shape->back() = ir::Dim(total);
  // Park each result's readers on a placeholder so the siblings can go and free the names.
  std::vector<std::string> names;
  std::vector<ir::Type> types;
  std::vector<ir::Node*> holds;
  for (const Sibling& s : pack) {
    ir::Value* y = s.node->output(0);
    names.push_back(y->name());
    types.push_back(y->type());
    holds.push_back(g.add_node("Identity", "", {}, {g.unique_value_name(y->name() + "_fusing")}));
    g.replace_all_uses(y, holds.back()->output(0));
  }
  for (const Sibling& s : pack) {
    for (size_t i = 0; i < s.node->num_inputs(); ++i) s.node->set_input(i, nullptr);
    remove_node(g, s.node);
  }
  ir::Node* fused =
      g.add_node("MatMul", name, inputs, {g.unique_value_name(names.front() + "_packed")}, domain);
  fused->set_kind_id(kind);
  for (const auto& a : annotations) fused->annotate(a);
  fused->output(0)->set_type(packed_type);
  ir::Node* split = g.add_node("Split", name + "/split", {fused->output(0), sizes_value}, names);
  split->set_kind_id(static_cast<int>(ops::OpKind::Split));
  split->set_attribute(ir::Attribute::make_int("axis", -1));
  for (size_t i = 0; i < holds.size(); ++i) {
    split->output(i)->set_type(types[i]);
    g.replace_all_uses(holds[i]->output(0), split->output(i));
    remove_node(g, holds[i]);
  }
}

}  // namespace

std::vector<runtime::FusionGroup> pack_sibling_matmuls(ir::Graph& graph, const PackRules& rules) {
  std::vector<Sibling> candidates;
  for (const auto& n : graph.nodes()) {
    Sibling s;
    if (sibling_of(graph, n.get(), rules, s)) candidates.push_back(s);
  }
  std::vector<std::vector<Sibling>> packs;
  std::vector<bool> used(candidates.size(), false);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (used[i]) continue;
    // Siblings in graph order, up to kMaxPackedProducts and the weight bound per pack.
    std::vector<Sibling> current;
    size_t bytes = 0;
    auto close = [&] {
      if (current.size() >= 2) packs.push_back(current);
      current.clear();
      bytes = 0;
    };
    for (size_t j = i; j < candidates.size(); ++j) {
      if (used[j] || !packs_with(candidates[i], candidates[j])) continue;
      const size_t w = candidates[j].node->input(1)->constant().nbytes();
      if (current.size() == kMaxPackedProducts || bytes + w > rules.max_packed_bytes) close();
      if (w > rules.max_packed_bytes) continue;
      current.push_back(candidates[j]);
      bytes += w;
      used[j] = true;
    }
    close();
  }
  std::vector<runtime::FusionGroup> groups;
  for (const std::vector<Sibling>& p : packs) {
    runtime::FusionGroup group;
    for (const Sibling& s : p) group.members.push_back(s.node->name());
    groups.push_back(std::move(group));
    pack(graph, p);
  }
  if (!packs.empty()) graph.sort_topologically();
  return groups;
}

}  // namespace switchyard::backends
