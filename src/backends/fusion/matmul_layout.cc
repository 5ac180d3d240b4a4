// fold_transposes_into_matmul (fusion.h): a Transpose whose one reader is a MatMul operand of a
// dtype the backend's kernel reads permuted (the cpu: float32), of the same rank as the other
// operand (attention's head split of Q and V, and
// [B, S, H, D] -> [B, H, D, S] for K) is folded into that MatMul as its fusion::OperandPermutes
// (payload.h): the kernel reads the operand through the permuted strides instead of a copy.
// Only permutations that leave the operand's innermost axis among the product's two matrix
// dims fold (one of them then has unit stride, which oneDNN's GEMM kernels need).
#include <algorithm>
#include <string>
#include <vector>

#include "backends/fusion/fusion.h"
#include "backends/fusion/pattern.h"

namespace switchyard::backends {

namespace {

using pattern::is_onnx_op;
using pattern::sole_reader;

// The Transpose producing `v` when it can fold into `matmul`: its permutation (explicit, or
// the reversal ONNX defaults to), else empty.
std::vector<int64_t> foldable_perm(const ir::Graph& g, const ir::Value* v, const ir::Node* matmul,
                                   int64_t rank, ir::DType dtype) {
  const ir::Node* t = v ? v->producer() : nullptr;
  if (!t || t->owner() != &g || !is_onnx_op(*t, "Transpose") || t->num_outputs() != 1 ||
      !t->input(0) || sole_reader(g, v) != matmul)
    return {};
  // The Transpose's output type (its input's may have lost its rank to a computed Reshape).
  const ir::Type& out = v->type();
  if (out.dtype != dtype || out.rank() != rank || rank < 3) return {};
  std::vector<int64_t> perm;
  if (t->has_attribute("perm")) {
    perm = t->attr_ints("perm");
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) return {};
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) return {};
    seen[static_cast<size_t>(p)] = true;
  }
  if (perm[static_cast<size_t>(rank - 1)] != rank - 1 &&
      perm[static_cast<size_t>(rank - 2)] != rank - 1)
    return {};
  return perm;
}

}  // namespace

std::vector<runtime::FusionGroup> fold_transposes_into_matmul(
    ir::Graph& graph, const std::vector<ir::DType>& dtypes) {
  std::vector<runtime::FusionGroup> groups;
  std::vector<ir::Node*> matmuls;
  for (const auto& n : graph.nodes())
    if (is_onnx_op(*n, "MatMul") && n->num_outputs() == 1 && n->num_inputs() >= 2 && n->input(0) &&
        n->input(1) && !n->annotation<fusion::OperandPermutes>())
      matmuls.push_back(n.get());
  bool changed = false;
  for (ir::Node* mm : matmuls) {
    const ir::Type& ta = mm->input(0)->type();
    const ir::Type& tb = mm->input(1)->type();
    if (std::find(dtypes.begin(), dtypes.end(), ta.dtype) == dtypes.end() || tb.dtype != ta.dtype ||
        !ta.has_rank() || ta.rank() != tb.rank())
      continue;
    // Copied: folding input 0 removes the Transpose that owns its type.
    const int64_t rank = ta.rank();
    runtime::FusionGroup group{{mm->name()}};
    auto permutes = std::make_shared<fusion::OperandPermutes>();
    for (size_t i = 0; i < 2; ++i) {
      ir::Value* v = mm->input(i);
      std::vector<int64_t> perm = foldable_perm(graph, v, mm, rank, ta.dtype);
      if (perm.empty()) continue;
      ir::Node* transpose = v->producer();
      group.members.push_back(transpose->name());
      mm->set_input(i, transpose->input(0));
      (i == 0 ? permutes->a : permutes->b) = std::move(perm);
      graph.remove_nodes_if([&](const ir::Node& n) { return &n == transpose; });
      changed = true;
    }
    if (group.members.size() > 1) {
      mm->annotate(std::move(permutes));
      groups.push_back(std::move(group));
    }
  }
  if (changed) graph.sort_topologically();
  return groups;
}

}  // namespace switchyard::backends
