// fold_packed_attention_operands (fusion.h): a fused attention's operand that is a head split of
// columns of one product P along its last axis,
//
//   P [B, S, W] -> Split (last axis) | Slice (last axis, step 1) -> X [B, S, w]
//     -> Reshape(X, T) -> attention input 0, 1 or 2,
//
// is read by the attention straight out of P: the input becomes P itself, the Reshape's target
// T input 4, 5 or 6, and the fusion::Attention's View (payload.h) says which columns. GPT's
// `q, k, v = qkv(x).split(c, dim=2)` then loses its Split and three Reshapes, and the sibling
// products pack_sibling_matmuls packed lose the Split it made. It fires only where the graph
// stays the same computation: P of rank 3 with a static last dim and the attention's dtype, X
// read by the Reshape alone (and by Shape nodes that measure only its leading dims, which then
// measure P: head_split.h), the Reshape's output read by this attention alone, a target that is
// or may be the head split (head_split.h), and every output of a Split read that way by the
// same attention (a Split that stays would copy all of P anyway). No value it removes is a
// graph output.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "backends/fusion/fusion.h"
#include "backends/fusion/head_split.h"
#include "backends/fusion/pattern.h"

namespace switchyard::backends {

namespace head_split {

namespace {

using pattern::is_onnx_op;

// The target's entries where the graph shows them: every entry of a constant, the constant
// pieces of a Concat of 1-D pieces (nullopt for the others). Empty when even the positions are
// unknown.
std::vector<std::optional<int64_t>> target_entries(const ir::Value* t) {
  if (t->is_constant()) {
    const ir::Tensor& c = t->constant();
    if (!ir::dtype_is_integer(c.dtype()) || c.rank() != 1) return {};
    std::vector<std::optional<int64_t>> out;
    for (int64_t i = 0; i < c.numel(); ++i) out.push_back(c.scalar_as_int(i));
    return out;
  }
  const ir::Node* concat = t->producer();
  if (!concat || !is_onnx_op(*concat, "Concat") || concat->num_outputs() != 1) return {};
  std::vector<std::optional<int64_t>> out;
  for (const ir::Value* piece : concat->inputs()) {
    if (!piece || !piece->type().has_rank() || piece->type().rank() != 1) return {};
    if (piece->is_constant()) {
      const ir::Tensor& c = piece->constant();
      if (!ir::dtype_is_integer(c.dtype())) return {};
      for (int64_t i = 0; i < c.numel(); ++i) out.push_back(c.scalar_as_int(i));
      continue;
    }
    const ir::Dim& len = piece->type().shape->front();
    if (!len.is_static()) return {};
    for (int64_t i = 0; i < len.value; ++i) out.push_back(std::nullopt);
  }
  return out;
}

}  // namespace

bool may_split_heads(const ir::Node& reshape) {
  if (!is_onnx_op(reshape, "Reshape") || reshape.num_inputs() != 2 || reshape.num_outputs() != 1 ||
      !reshape.input(0) || !reshape.input(1))
    return false;
  const ir::Type& xt = reshape.input(0)->type();
  const ir::Type& tt = reshape.input(1)->type();
  if (!xt.has_rank() || xt.rank() != 3 || !xt.shape->back().is_static() ||
      xt.shape->back().value <= 0)
    return false;
  if (!tt.has_rank() || tt.rank() != 1 || tt.dtype != ir::DType::Int64 ||
      !(*tt.shape)[0].is_static() || (*tt.shape)[0].value != 4)
    return false;
  const int64_t width = xt.shape->back().value;
  const bool allowzero = reshape.attr_int("allowzero", 0) != 0;
  const std::vector<std::optional<int64_t>> e = target_entries(reshape.input(1));
  if (e.empty()) return true;  // known at run time only
  if (e.size() != 4) return false;
  if (std::count(e.begin(), e.end(), std::optional<int64_t>(-1)) > 1) return false;
  // Whether entry j (0 or 1) provably keeps X's dim j; provably gives another.
  auto keeps = [&](size_t j) {
    const ir::Dim& d = (*xt.shape)[j];
    return e[j] && ((*e[j] == 0 && !allowzero) || (*e[j] > 0 && d.is_static() && d.value == *e[j]));
  };
  auto differs = [&](size_t j) {
    const ir::Dim& d = (*xt.shape)[j];
    return e[j] && (*e[j] < -1 || (*e[j] == 0 && allowzero) ||
                    (*e[j] > 0 && d.is_static() && d.value != *e[j]));
  };
  // The heads and head dim: [h, d] with h * d = width, or one of them -1 dividing it.
  auto heads_split = [&](bool inferred_elsewhere) {
    const int64_t h = *e[2], d = *e[3];
    if (h > 0 && d > 0) return width % h == 0 && width / h == d;
    if (inferred_elsewhere) return false;
    if (h == -1 && d > 0) return width % d == 0;
    if (d == -1 && h > 0) return width % h == 0;
    return false;
  };
  if (differs(0) || differs(1)) return false;
  if (e[2] && e[3] && !heads_split(e[0] == -1 || e[1] == -1)) return false;
  if (std::all_of(e.begin(), e.end(), [](const auto& x) { return x.has_value(); })) {
    // A constant target: the head split, batch and sequence each kept or the one inferred.
    const bool lead_ok =
        (keeps(0) && keeps(1)) || (keeps(0) && *e[1] == -1) || (*e[0] == -1 && keeps(1));
    return lead_ok;
  }
  return true;
}

bool reads_leading_dims_only(const ir::Graph& graph, const ir::Node& shape, int64_t rank) {
  if (!is_onnx_op(shape, "Shape") || shape.num_outputs() != 1 || shape.owner() != &graph)
    return false;
  auto bound = [&](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  const int64_t start = bound(shape.attr_int("start", 0));
  const int64_t end = bound(shape.attr_int("end", rank));
  if (end <= rank - 1) return true;  // the last dim is not measured at all
  const ir::Value* out = shape.output(0);
  if (graph.is_output(out)) return false;
  const int64_t len = std::max<int64_t>(end - start, 0);
  for (const auto& [reader, slot] : out->uses()) {
    if (reader->owner() != &graph || !is_onnx_op(*reader, "Gather") || slot != 0 ||
        reader->attr_int("axis", 0) != 0 || reader->input(1) == out)
      return false;
    const ir::Value* indices = reader->input(1);
    if (!indices || !indices->is_constant() || !ir::dtype_is_integer(indices->constant().dtype()))
      return false;
    for (int64_t k = 0; k < indices->constant().numel(); ++k) {
      int64_t v = indices->constant().scalar_as_int(k);
      if (v < 0) v += len;
      if (v < 0 || v >= len || start + v >= rank - 1) return false;
    }
  }
  return true;
}

}  // namespace head_split

namespace {

using pattern::is_onnx_op;
using pattern::remove_node;

// One operand slot of an attention read as a view.
struct OperandView {
  size_t slot = 0;
  ir::Node* reshape = nullptr;
  ir::Node* cut = nullptr;      // the Split or Slice
  ir::Value* part = nullptr;    // X, the cut's output the Reshape reads
  ir::Value* packed = nullptr;  // P
  int64_t offset = 0, width = 0;
  std::vector<ir::Node*> shapes;  // X's Shape readers, to measure P instead
};

// A one-element integer constant's value.
std::optional<int64_t> single_int(const ir::Value* v) {
  if (!v || !v->is_constant() || v->constant().numel() != 1 ||
      !ir::dtype_is_integer(v->constant().dtype()))
    return std::nullopt;
  return v->constant().scalar_as_int(0);
}

// The columns of P that output `part` of a Split along P's last axis (of size w) holds.
bool split_columns(const ir::Node& split, const ir::Value* part, int64_t w, int64_t& offset,
                   int64_t& width) {
  if (split.num_inputs() < 1 || split.num_inputs() > 2) return false;
  const int64_t axis = split.attr_int("axis", 0);
  if (axis != 2 && axis != -1) return false;
  const size_t parts = split.num_outputs();
  std::vector<int64_t> sizes;
  if (split.num_inputs() == 2 && split.input(1)) {
    const ir::Value* s = split.input(1);
    if (!s->is_constant() || s->constant().rank() != 1 ||
        !ir::dtype_is_integer(s->constant().dtype()) ||
        static_cast<size_t>(s->constant().numel()) != parts)
      return false;
    sizes = s->constant().to_int_vector();
  } else {
    // Equal parts (with num_outputs the last may be smaller: ops::split_sizes).
    const int64_t k = static_cast<int64_t>(parts);
    if (k == 0) return false;
    int64_t chunk = w / k;
    if (w % k != 0) {
      if (!split.has_attribute("num_outputs")) return false;
      ++chunk;
      if (chunk * (k - 1) > w) return false;
    }
    for (int64_t i = 0; i < k; ++i) sizes.push_back(i + 1 < k ? chunk : w - chunk * (k - 1));
  }
  int64_t sum = 0;
  for (int64_t s : sizes) {
    if (s < 0) return false;
    sum += s;
  }
  if (sum != w) return false;  // the Split fails at run time: leave it to say so
  offset = 0;
  for (size_t i = 0; i < parts; ++i) {
    if (split.output(i) == part) {
      width = sizes[i];
      return true;
    }
    offset += sizes[i];
  }
  return false;
}

// The columns of P that a Slice of P's last axis (of size w; constant starts and ends, step 1)
// keeps.
bool slice_columns(const ir::Node& slice, int64_t w, int64_t& offset, int64_t& width) {
  if (slice.num_inputs() < 4 || slice.num_inputs() > 5) return false;
  std::optional<int64_t> start = single_int(slice.input(1)), end = single_int(slice.input(2));
  std::optional<int64_t> axis = single_int(slice.input(3));
  if (!start || !end || !axis || (*axis != 2 && *axis != -1)) return false;
  if (slice.num_inputs() == 5 && slice.input(4)) {
    std::optional<int64_t> step = single_int(slice.input(4));
    if (!step || *step != 1) return false;
  }
  auto bound = [&](int64_t v) {
    if (v < 0) v += w;
    return std::clamp<int64_t>(v, 0, w);
  };
  offset = bound(*start);
  width = bound(*end) - offset;
  return width > 0;
}

// Operand `slot` of the attention `a` as a view, or false.
bool match_view(const ir::Graph& g, const ir::Node& a, size_t slot, OperandView& v) {
  ir::Value* r = a.input(slot);
  ir::Node* reshape = r ? r->producer() : nullptr;
  if (!reshape || reshape->owner() != &g || g.is_output(r) ||
      !head_split::may_split_heads(*reshape))
    return false;
  for (const auto& [reader, k] : r->uses())
    if (reader != &a || k > 2) return false;
  ir::Value* x = reshape->input(0);
  ir::Node* cut = x->producer();
  if (!cut || cut->owner() != &g || g.is_output(x) || reshape->input(1) == x) return false;
  const bool split = is_onnx_op(*cut, "Split");
  if (!split && !(is_onnx_op(*cut, "Slice") && cut->num_outputs() == 1)) return false;
  ir::Value* p = cut->input(0);
  if (!p) return false;
  const ir::Type& pt = p->type();
  if (!pt.has_rank() || pt.rank() != 3 || !pt.shape->back().is_static() ||
      pt.dtype != r->type().dtype || x->type().dtype != pt.dtype)
    return false;
  const int64_t w = pt.shape->back().value;
  int64_t offset = 0, width = 0;
  if (split ? !split_columns(*cut, x, w, offset, width) : !slice_columns(*cut, w, offset, width))
    return false;
  // X is [B, S, width]: its type, where inference gave it, agrees.
  const ir::Dim& xw = x->type().shape->back();
  if (width <= 0 || !xw.is_static() || xw.value != width) return false;
  std::vector<ir::Node*> shapes;
  for (const auto& [reader, k] : x->uses()) {
    if (reader == reshape && k == 0) continue;
    if (!head_split::reads_leading_dims_only(g, *reader, 3)) return false;
    shapes.push_back(reader);
  }
  v = OperandView{slot, reshape, cut, x, p, offset, width, std::move(shapes)};
  return true;
}

}  // namespace

std::vector<runtime::FusionGroup> fold_packed_attention_operands(ir::Graph& graph) {
  std::vector<ir::Node*> attentions;
  for (const auto& n : graph.nodes()) {
    const fusion::Attention* a = n->annotation<fusion::Attention>();
    if (a && (a->views.empty() || a->views.size() == 3) && n->num_inputs() >= 3 &&
        n->num_inputs() <= 7 + 4 * a->mask_slices.size())
      attentions.push_back(n.get());
  }
  std::vector<runtime::FusionGroup> groups;
  for (ir::Node* a : attentions) {
    const fusion::Attention before = *a->annotation<fusion::Attention>();
    std::vector<OperandView> found;
    for (size_t slot = 0; slot < 3; ++slot) {
      OperandView v;
      const bool view = !before.views.empty() && before.views[slot].width > 0;
      if (!view && match_view(graph, *a, slot, v)) found.push_back(std::move(v));
    }
    // A Split goes only when every output of it is a view here.
    auto covered = [&](const OperandView& v) {
      if (!is_onnx_op(*v.cut, "Split")) return true;
      for (const ir::Value* out : v.cut->outputs())
        if ((!out->uses().empty() || graph.is_output(out)) &&
            std::none_of(found.begin(), found.end(),
                         [&](const OperandView& f) { return f.part == out; }))
          return false;
      return true;
    };
    std::vector<OperandView> views;
    for (const OperandView& v : found)
      if (covered(v)) views.push_back(v);
    if (views.empty()) continue;

    auto payload = std::make_shared<fusion::Attention>(before);
    if (payload->views.empty()) payload->views.assign(3, fusion::Attention::View{});
    while (a->num_inputs() < 7) a->add_input(nullptr);
    runtime::FusionGroup group{{a->name()}};
    std::vector<ir::Node*> reshapes, cuts;
    auto add_once = [](std::vector<ir::Node*>& list, ir::Node* n) {
      if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
    };
    for (const OperandView& v : views) {
      payload->views[v.slot] = fusion::Attention::View{
          v.offset, v.width, v.reshape->attr_int("allowzero", 0) != 0, v.reshape->name()};
      a->set_input(v.slot, v.packed);
      a->set_input(4 + v.slot, v.reshape->input(1));
      add_once(reshapes, v.reshape);
      add_once(cuts, v.cut);
      // X's Shape readers measure the same leading dims of P (head_split.h).
      for (ir::Node* s : v.shapes) s->set_input(0, v.packed);
    }
    a->annotate(std::move(payload));
    for (ir::Node* n : reshapes) group.members.push_back(n->name());
    for (ir::Node* n : cuts) group.members.push_back(n->name());
    for (std::vector<ir::Node*>* list : {&reshapes, &cuts})
      for (ir::Node* n : *list) {
        for (size_t i = 0; i < n->num_inputs(); ++i) n->set_input(i, nullptr);
        remove_node(graph, n);
      }
    groups.push_back(std::move(group));
  }
  if (!groups.empty()) graph.sort_topologically();
  return groups;
}

}  // namespace switchyard::backends
