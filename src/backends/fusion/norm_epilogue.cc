// The normalization fusions (fusion.h), on a partition's private graph:
//
//   fuse_norm_activation:     BatchNormalization (inference) -> Relu
//       one BatchNormalization whose kernel applies the ReLU in the same pass
//       (a fusion::Epilogue of Relu): DenseNet's pre-activation BN -> ReLU -> Conv, where the
//       ReLU cannot become a post-op of the convolution that follows.
//   fuse_concat_norm:         Concat (channel axis) -> BatchNormalization (inference, its Relu)
//       one Concat that normalizes while it copies (a fusion::ConcatAffine): DenseNet's
//       concatenated features, read and written once instead of twice.
//   fuse_residual_layernorm:  Add(X, Z) -> LayerNormalization (last axis, Y its one output in use)
//       one LayerNormalization with Z as input 3: Y = LN(X + Z), BERT's residual sum. Where the
//       sum has other readers too (a pre-norm stack's running sum, read by the next residual
//       Add): the same node also writes the sum, as output 3 (a fusion::ResidualSum), and the
//       other readers read that.
//   fuse_softmax_mask:        Add(X, M) -> Softmax (last axis), M broadcast into X
//       one Softmax with M as input 1: Y = softmax(X + M), attention's mask.
//
// A node is absorbed only when its value has the fused node as its one reader and is not a
// graph output (the pre-norm form aside, whose node still writes the sum); the fused node takes
// over the absorbed node's output values (name, type, readers), so what follows is unchanged.
#include <cmath>
#include <memory>
#include <set>
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
  return pattern::replace_nodes(g, {second, first}, *keep, std::move(inputs), {second->output(0)});
}

// Whether `axis` of a node over a value of `type` is its last axis.
bool is_last_axis(const ir::Type& type, int64_t axis) {
  if (!type.has_rank() || type.rank() == 0) return false;
  return axis == -1 || axis == type.rank() - 1;
}

// The Add of two tensors in `g` that produces `v`; nullptr otherwise.
ir::Node* add_producing(const ir::Graph& g, const ir::Value* v) {
  ir::Node* add = v->producer();
  if (!add || add->owner() != &g || !is_onnx_op(*add, "Add") || add->num_inputs() != 2 ||
      add->num_outputs() != 1 || !add->input(0) || !add->input(1))
    return nullptr;
  return add;
}

// The Add that produces `v` for `reader` alone (its one reader; not a graph output), when
// both its inputs are tensors; nullptr otherwise.
ir::Node* add_feeding(const ir::Graph& g, const ir::Value* v, const ir::Node* reader) {
  ir::Node* add = add_producing(g, v);
  return add && sole_reader(g, add->output(0)) == reader ? add : nullptr;
}

// Whether n's outputs past the first are unread and no graph outputs (LayerNormalization's Mean
// and InvStdDev unused).
bool only_first_output_used(const ir::Graph& g, const ir::Node& n) {
  for (size_t i = 1; i < n.num_outputs(); ++i)
    if (!n.output(i)->uses().empty() || g.is_output(n.output(i))) return false;
  return true;
}

// Whether `norm` may take over `add`, which produces its X, in the pre-norm form (the sum kept
// as an output): the norm reading the sum once (as X), every reader in `g`, and no input of the
// norm computed from the sum (the fused node would read itself). Shapes need not be provable:
// the kernels add a residual of X's shape row by row, writing the sum as they go, and write
// any other broadcast's sum whole first.
bool fits_residual_sum(const ir::Graph& g, const ir::Node& add, const ir::Node& norm) {
  int norm_reads = 0;
  for (auto [reader, idx] : add.output(0)->uses()) {
    if (reader->owner() != &g) return false;
    if (reader == &norm) ++norm_reads;
  }
  if (norm_reads != 1) return false;
  for (size_t i = 1; i < norm.num_inputs(); ++i)
    if (pattern::depends_on(norm.input(i), &add)) return false;
  return true;
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
  struct Match {
    ir::Node* add;
    ir::Node* norm;
    bool keep_sum;  // the pre-norm form: the sum has other readers, the node writes it too
  };
  std::vector<Match> matches;
  std::set<const ir::Node*> taken;  // a sum read by two norms fuses into the first
  for (const auto& n : graph.nodes()) {
    if (!is_onnx_op(*n, "LayerNormalization") || n->num_outputs() < 1 || n->num_inputs() < 2 ||
        n->num_inputs() > 3 || !n->input(0) || !only_first_output_used(graph, *n))
      continue;
    const ir::Type& xt = n->input(0)->type();
    if (!is_float(xt.dtype) || !is_last_axis(xt, n->attr_int("axis", -1))) continue;
    ir::Node* add = add_producing(graph, n->input(0));
    if (!add || taken.count(add)) continue;
    // Shapes are often not provable here (a Reshape of computed dims); the kernel adds a
    // residual of X's shape row by row and sums any other broadcast first.
    if (add->input(0)->type().dtype != xt.dtype || add->input(1)->type().dtype != xt.dtype)
      continue;
    const bool alone = sole_reader(graph, add->output(0)) == n.get();
    if (!alone && !fits_residual_sum(graph, *add, *n)) continue;
    taken.insert(add);
    matches.push_back({add, n.get(), !alone});
  }
  std::vector<runtime::FusionGroup> groups;
  for (const Match& m : matches) {
    groups.push_back({{m.norm->name(), m.add->name()}});
    std::vector<ir::Value*> inputs = {m.add->input(0), m.norm->input(1), m.norm->input(2),
                                      m.add->input(1)};
    if (!m.keep_sum) {
      replace_pair(graph, m.add, m.norm, m.norm, inputs);
      continue;
    }
    auto payload = std::make_shared<fusion::ResidualSum>();
    std::vector<ir::Value*> outputs(payload->output + 1, nullptr);  // Mean, InvStdDev: unread
    outputs[0] = m.norm->output(0);
    outputs[payload->output] = m.add->output(0);
    ir::Node* fused =
        pattern::replace_nodes(graph, {m.norm, m.add}, *m.norm, std::move(inputs), outputs);
    fused->annotate(std::move(payload));
  }
  if (!matches.empty()) graph.sort_topologically();
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
