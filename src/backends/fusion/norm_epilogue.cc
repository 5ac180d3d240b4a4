// The normalization fusions (fusion.h), on a partition's private graph:
//
//   fuse_norm_activation:     BatchNormalization (inference) -> Relu
//       one BatchNormalization whose kernel applies the ReLU in the same pass
//       (a fusion::Epilogue of Relu): DenseNet's pre-activation BN -> ReLU -> Conv, where the
//       ReLU cannot become a post-op of the convolution that follows.
//   fuse_concat_norm:         Concat (channel axis) -> BatchNormalization (inference, its Relu)
//       one Concat that normalizes while it copies (a fusion::ConcatAffine): DenseNet's
//       concatenated features, read and written once instead of twice.
//   fuse_residual_layernorm:  Add(X, Z) -> LayerNormalization (last axis, one output)
//       one LayerNormalization with Z as input 3: Y = LN(X + Z), BERT's residual sum.
//   fuse_softmax_mask:        Add(X, M) -> Softmax (last axis), M broadcast into X
//       one Softmax with M as input 1: Y = softmax(X + M), attention's mask.
//
// A node is absorbed only when its value has the fused node as its one reader and is not a
// graph output; the fused node takes over the absorbed node's output value (name, type,
// readers), so what follows is unchanged.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/fusion/fusion.h"
#include "backends/fusion/pattern.h"

namespace switchyard::backends {

namespace {

using pattern::is_float;
using pattern::is_onnx_op;
using pattern::remove_node;
using pattern::same_shape;
using pattern::sole_reader;

// Replaces `first -> second` (second reads first's only output) by one node with `inputs` that
// produces second's output value (name, type, readers) and takes `keep`'s op type, name,
// attributes and annotations (`keep` is first or second).
ir::Node* replace_pair(ir::Graph& g, ir::Node* first, ir::Node* second, const ir::Node* keep,
                       std::vector<ir::Value*> inputs) {  // a copy: it may be first's inputs
  ir::Value* out = second->output(0);
  const std::string out_name = out->name();
  const ir::Type out_type = out->type();
  const std::string name = keep->name(), op = keep->op_type(), domain = keep->domain();
  const int kind = keep->kind_id();
  const std::vector<ir::Attribute> attributes = keep->attributes();
  const auto annotations = keep->annotations();
  // Park the readers on a placeholder so both nodes can go and free the output's name.
  ir::Node* hold = g.add_node("Identity", "", {}, {g.unique_value_name(out_name + "_fusing")});
  g.replace_all_uses(out, hold->output(0));
  remove_node(g, second);
  remove_node(g, first);
  ir::Node* fused = g.add_node(op, name, inputs, {out_name}, domain);
  fused->set_kind_id(kind);
  fused->output(0)->set_type(out_type);
  for (const ir::Attribute& a : attributes) fused->set_attribute(a);
  for (const auto& a : annotations) fused->annotate(a);
  g.replace_all_uses(hold->output(0), fused->output(0));
  remove_node(g, hold);
  return fused;
}

// Whether `axis` of a node over a value of `type` is its last axis.
bool is_last_axis(const ir::Type& type, int64_t axis) {
  if (!type.has_rank() || type.rank() == 0) return false;
  return axis == -1 || axis == type.rank() - 1;
}

// The Add that produces `v` for `reader` alone (its one reader; not a graph output), when
// both its inputs are tensors; nullptr otherwise.
ir::Node* add_feeding(const ir::Graph& g, const ir::Value* v, const ir::Node* reader) {
  ir::Node* add = v->producer();
  if (!add || add->owner() != &g || !is_onnx_op(*add, "Add") || add->num_inputs() != 2 ||
      add->num_outputs() != 1 || !add->input(0) || !add->input(1))
    return nullptr;
  return sole_reader(g, add->output(0)) == reader ? add : nullptr;
}

}  // namespace

std::vector<runtime::FusionGroup> fuse_norm_activation(ir::Graph& graph) {
  std::vector<std::pair<ir::Node*, ir::Node*>> pairs;
  for (const auto& n : graph.nodes()) {
    if (!is_onnx_op(*n, "BatchNormalization") || n->num_outputs() != 1 ||
        n->attr_int("training_mode", 0) != 0 || n->annotation<fusion::Epilogue>())
      continue;
    ir::Node* relu = sole_reader(graph, n->output(0));
    if (!relu || !is_onnx_op(*relu, "Relu") || relu->num_outputs() != 1) continue;
    pairs.emplace_back(n.get(), relu);
  }
  std::vector<runtime::FusionGroup> groups;
  for (auto [norm, relu] : pairs) {
    groups.push_back({{norm->name(), relu->name()}});
    // The normalization takes the ReLU's place: its op, name and attributes, the ReLU's value.
    ir::Node* fused = replace_pair(graph, norm, relu, norm, norm->inputs());
    auto epilogue = std::make_shared<fusion::Epilogue>();
    epilogue->activation = fusion::Activation::Relu;
    fused->annotate(std::move(epilogue));
  }
  if (!pairs.empty()) graph.sort_topologically();
  return groups;
}

std::vector<runtime::FusionGroup> fuse_concat_norm(ir::Graph& graph) {
  struct Match {
    ir::Node* concat;
    ir::Node* norm;
    std::shared_ptr<fusion::ConcatAffine> affine;
  };
  std::vector<Match> matches;
  for (const auto& n : graph.nodes()) {
    if (!is_onnx_op(*n, "BatchNormalization") || n->num_outputs() != 1 || n->num_inputs() != 5 ||
        n->attr_int("training_mode", 0) != 0 || !n->input(0))
      continue;
    const auto* epilogue = n->annotation<fusion::Epilogue>();
    if (epilogue && epilogue->activation != fusion::Activation::Relu) continue;
    ir::Node* concat = n->input(0)->producer();
    if (!concat || concat->owner() != &graph || !is_onnx_op(*concat, "Concat") ||
        concat->num_outputs() != 1 || sole_reader(graph, concat->output(0)) != n.get())
      continue;
    const ir::Type& t = concat->output(0)->type();
    if (t.dtype != ir::DType::Float32 || !t.has_rank() || t.rank() < 2) continue;
    const int64_t axis = concat->attr_int("axis", 0);
    if (axis != 1 && axis != 1 - t.rank()) continue;  // the channel axis
    bool ok = true;
    for (size_t i = 0; i < concat->num_inputs(); ++i) ok = ok && concat->input(i) != nullptr;
    // The statistics, as float32 constants of one length.
    std::vector<const float*> stats;
    int64_t channels = -1;
    for (size_t i = 1; i < 5 && ok; ++i) {
      const ir::Value* v = n->input(i);
      ok = v && v->is_constant() && v->constant().dtype() == ir::DType::Float32 &&
           v->constant().rank() == 1 && (channels < 0 || v->constant().numel() == channels);
      if (ok) {
        channels = v->constant().numel();
        stats.push_back(v->constant().data<float>());
      }
    }
    if (!ok || channels <= 0) continue;
    if (const ir::Dim& c = (*t.shape)[1]; c.is_static() && c.value != channels) continue;
    // As the BatchNormalization kernel folds them (cpu/kernels/normalization.cc), in float.
    auto affine = std::make_shared<fusion::ConcatAffine>();
    const float epsilon = n->attr_float("epsilon", 1e-5f);
    affine->scale.resize(static_cast<size_t>(channels));
    affine->shift.resize(static_cast<size_t>(channels));
    for (size_t c = 0; c < affine->scale.size(); ++c) {
      const float mul = stats[0][c] / std::sqrt(stats[3][c] + epsilon);
      affine->scale[c] = mul;
      affine->shift[c] = stats[1][c] - stats[2][c] * mul;
    }
    affine->relu = epilogue != nullptr;
    matches.push_back({concat, n.get(), std::move(affine)});
  }
  std::vector<runtime::FusionGroup> groups;
  for (Match& m : matches) {
    groups.push_back({{m.concat->name(), m.norm->name()}});
    ir::Node* fused = replace_pair(graph, m.concat, m.norm, m.concat, m.concat->inputs());
    fused->annotate(std::move(m.affine));
  }
  if (!matches.empty()) graph.sort_topologically();
  return groups;
}

std::vector<runtime::FusionGroup> fuse_residual_layernorm(ir::Graph& graph) {
  std::vector<std::pair<ir::Node*, ir::Node*>> pairs;
  for (const auto& n : graph.nodes()) {
    if (!is_onnx_op(*n, "LayerNormalization") || n->num_outputs() != 1 || n->num_inputs() < 2 ||
        n->num_inputs() > 3 || !n->input(0))
      continue;
    const ir::Type& xt = n->input(0)->type();
    if (!is_float(xt.dtype) || !is_last_axis(xt, n->attr_int("axis", -1))) continue;
    ir::Node* add = add_feeding(graph, n->input(0), n.get());
    if (!add) continue;
    // Shapes are often not provable here (a Reshape of computed dims); the kernel adds a
    // residual of X's shape row by row and sums any other broadcast first.
    if (add->input(0)->type().dtype != xt.dtype || add->input(1)->type().dtype != xt.dtype)
      continue;
    pairs.emplace_back(add, n.get());
  }
  std::vector<runtime::FusionGroup> groups;
  for (auto [add, norm] : pairs) {
    groups.push_back({{norm->name(), add->name()}});
    std::vector<ir::Value*> inputs = {add->input(0), norm->input(1), norm->input(2), add->input(1)};
    replace_pair(graph, add, norm, norm, inputs);
  }
  if (!pairs.empty()) graph.sort_topologically();
  return groups;
}

std::vector<runtime::FusionGroup> fuse_softmax_mask(ir::Graph& graph) {
  struct Match {
    ir::Node* add;
    ir::Node* softmax;
    ir::Value* x;
    ir::Value* mask;
  };
  std::vector<Match> matches;
  for (const auto& n : graph.nodes()) {
    if (!is_onnx_op(*n, "Softmax") || n->num_outputs() != 1 || n->num_inputs() != 1) continue;
    const ir::Type& t = n->input(0)->type();
    if (!is_float(t.dtype) || !is_last_axis(t, n->attr_int("axis", -1))) continue;
    ir::Node* add = add_feeding(graph, n->input(0), n.get());
    if (!add) continue;
    // X: the operand of the sum's own shape where that is provable (else input 0), M the
    // other; the kernel adds a mask that broadcasts into X's rows row by row and sums any
    // other broadcast first, so shapes not provable here still give the Add's result.
    ir::Value* a = add->input(0);
    ir::Value* b = add->input(1);
    if (a->type().dtype != t.dtype || b->type().dtype != t.dtype) continue;
    const bool swap = !same_shape(a->type(), t) && same_shape(b->type(), t);
    matches.push_back({add, n.get(), swap ? b : a, swap ? a : b});
  }
  std::vector<runtime::FusionGroup> groups;
  for (const Match& m : matches) {
    groups.push_back({{m.softmax->name(), m.add->name()}});
    replace_pair(graph, m.add, m.softmax, m.softmax, {m.x, m.mask});
  }
  if (!matches.empty()) graph.sort_topologically();
  return groups;
}

}  // namespace switchyard::backends
