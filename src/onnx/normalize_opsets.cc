// Opset normalisation: every default-domain node is rewritten to the semantics of opset 21
// (kLatestOpset), so that src/ops and the kernels know one version of each op. The table
// kRules at the end of this file lists every change handled, one line per op and version.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include "ir/check.h"
#include "onnx/import.h"
#include "onnx/normalize_rules.h"

namespace switchyard::onnx_import {

namespace detail {

ir::Value* scalar_like(RuleContext& context, ir::Node& node, ir::Value* like, double value,
                       const std::string& what) {
  ir::Graph& graph = *node.owner();
  std::optional<ir::DType> dtype = known_dtype(like);
  std::string base = node.name() + "_" + what;
  if (dtype && ir::dtype_is_float(*dtype)) {
    ir::Tensor t(*dtype, {});
    switch (*dtype) {
      case ir::DType::Float32:
        *t.data<float>() = static_cast<float>(value);
        break;
      case ir::DType::Float64:
        *t.data<double>() = value;
        break;
      case ir::DType::Float16:
        *t.data<ir::Float16>() = ir::Float16(static_cast<float>(value));
        break;
      default:
        *t.data<ir::BFloat16>() = ir::BFloat16(static_cast<float>(value));
        break;
    }
    return graph.add_constant(graph.unique_value_name(base), std::move(t));
  }
  ir::Value* f = context.edit.add_floats(graph, base, {static_cast<float>(value)}, true);
  if (!like) return f;
  return context.edit.add_node(graph, "CastLike", node.name() + "/cast_" + what, {f, like})
      ->output(0);
}

}  // namespace detail

namespace {

using detail::known_rank;
using detail::RuleContext;
using detail::set_input_at;

// Moves the ints attribute `attr` to input `index` as a 1-D int64 constant. An empty list is
// dropped (both forms then mean "all axes" / "the default").
void ints_attr_to_input(RuleContext& c, ir::Node& n, const std::string& attr, size_t index) {
  if (!n.has_attribute(attr)) return;
  std::vector<int64_t> values = n.attr_ints(attr);
  n.remove_attribute(attr);
  SY_CHECK(n.input(index) == nullptr, InvalidModel, "{}: has both the '{}' attribute and input {}",
           n.describe(), attr, index);
  if (values.empty()) return;
  set_input_at(n, index, c.edit.add_int64s(*n.owner(), n.name() + "_" + attr, values));
}

void axes_to_input(RuleContext& c, ir::Node*& n) { ints_attr_to_input(c, *n, "axes", 1); }

void split_to_input(RuleContext& c, ir::Node*& n) {
  // Split-1 could take `split` as input 1 already; the input wins.
  if (n->input(1) != nullptr) n->remove_attribute("split");
  ints_attr_to_input(c, *n, "split", 1);
}

void reshape_shape_to_input(RuleContext& c, ir::Node*& n) {
  if (!n->has_attribute("shape")) return;
  std::vector<int64_t> shape = n->attr_ints("shape");
  n->remove_attribute("shape");
  SY_CHECK(n->input(1) == nullptr, InvalidModel, "{}: has both a 'shape' attribute and input 1",
           n->describe());
  set_input_at(*n, 1, c.edit.add_int64s(*n->owner(), n->name() + "_shape", shape));
}

void slice_attrs_to_inputs(RuleContext& c, ir::Node*& n) {
  SY_CHECK(n->num_inputs() <= 1, InvalidModel, "{}: Slice before opset 10 takes one input, got {}",
           n->describe(), n->num_inputs());
  std::vector<int64_t> starts = n->attr_ints("starts");
  std::vector<int64_t> ends = n->attr_ints("ends");
  SY_CHECK(starts.size() == ends.size(), InvalidModel,
           "{}: 'starts' has {} values and 'ends' has {}", n->describe(), starts.size(),
           ends.size());
  ir::Graph& g = *n->owner();
  set_input_at(*n, 1, c.edit.add_int64s(g, n->name() + "_starts", starts));
  set_input_at(*n, 2, c.edit.add_int64s(g, n->name() + "_ends", ends));
  if (n->has_attribute("axes"))
    set_input_at(*n, 3, c.edit.add_int64s(g, n->name() + "_axes", n->attr_ints("axes")));
  for (const char* attr : {"starts", "ends", "axes"}) n->remove_attribute(attr);
}

void pad_attrs_to_inputs(RuleContext& c, ir::Node*& n) {
  // Pad-1 called the attribute `paddings`; Pad-2 `pads`.
  std::string pads_attr = n->has_attribute("pads") ? "pads" : "paddings";
  std::vector<int64_t> pads = n->attr_ints(pads_attr);
  float value = n->attr_float("value", 0.0f);
  std::string mode = n->attr_string("mode", "constant");
  for (const char* attr : {"pads", "paddings", "value"}) n->remove_attribute(attr);
  set_input_at(*n, 1, c.edit.add_int64s(*n->owner(), n->name() + "_pads", pads));
  if (mode == "constant" && value != 0.0f)
    set_input_at(*n, 2, detail::scalar_like(c, *n, n->input(0), value, "value"));
}

void clip_attrs_to_inputs(RuleContext& c, ir::Node*& n) {
  const bool has_min = n->has_attribute("min");
  const bool has_max = n->has_attribute("max");
  float lo = n->attr_float("min", 0.0f);
  float hi = n->attr_float("max", 0.0f);
  n->remove_attribute("min");
  n->remove_attribute("max");
  if (has_min) set_input_at(*n, 1, detail::scalar_like(c, *n, n->input(0), lo, "min"));
  if (has_max) set_input_at(*n, 2, detail::scalar_like(c, *n, n->input(0), hi, "max"));
}

void topk_k_to_input(RuleContext& c, ir::Node*& n) {
  int64_t k = n->attr_int("k");
  n->remove_attribute("k");
  set_input_at(*n, 1, c.edit.add_int64s(*n->owner(), n->name() + "_k", {k}));
}

void dft_axis_to_input(RuleContext& c, ir::Node*& n) {
  // DFT-17's axis attribute defaulted to 1; DFT-20's axis input defaults to -2.
  int64_t axis = n->attr_int("axis", 1);
  n->remove_attribute("axis");
  set_input_at(*n, 2, c.edit.add_int64s(*n->owner(), n->name() + "_axis", {axis}, true));
}

void drop_broadcast(RuleContext&, ir::Node*& n) { n->remove_attribute("broadcast"); }

void concat_default_axis(RuleContext&, ir::Node*& n) {
  if (!n->has_attribute("axis")) n->set_attribute(ir::Attribute::make_int("axis", 1));
}

void cast_to_from_string(RuleContext&, ir::Node*& n) {
  const ir::Attribute* to = n->find_attribute("to");
  if (!to || to->kind != ir::Attribute::Kind::String) return;
  static constexpr std::pair<std::string_view, ir::DType> kNames[] = {
      {"FLOAT", ir::DType::Float32},
      {"UINT8", ir::DType::UInt8},
      {"INT8", ir::DType::Int8},
      {"UINT16", ir::DType::UInt16},
      {"INT16", ir::DType::Int16},
      {"INT32", ir::DType::Int32},
      {"INT64", ir::DType::Int64},
      {"STRING", ir::DType::String},
      {"BOOL", ir::DType::Bool},
      {"FLOAT16", ir::DType::Float16},
      {"DOUBLE", ir::DType::Float64},
      {"UINT32", ir::DType::UInt32},
      {"UINT64", ir::DType::UInt64},
      {"COMPLEX64", ir::DType::Complex64},
      {"COMPLEX128", ir::DType::Complex128},
      {"BFLOAT16", ir::DType::BFloat16},
  };
  std::string name = to->s;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  for (const auto& [text, dtype] : kNames) {
    if (name == text) {
      n->set_attribute(ir::Attribute::make_int("to", static_cast<int64_t>(dtype)));
      return;
    }
  }
  SY_THROW(InvalidModel, "{}: 'to' names the unknown type '{}'", n->describe(), to->s);
}

void batch_norm_legacy(RuleContext& c, ir::Node*& n) {
  // Before opset 7 `is_test` chose the mode; from 7 to 13 extra outputs meant training mode.
  bool is_test = c.opset < 7 && n->attr_int("is_test", 0) != 0;
  if (c.opset < 9) {
    if (n->attr_int("spatial", 1) == 0) {
      // spatial=0 normalises per activation; it equals spatial=1 only for [N, C] inputs.
      bool two_d = known_rank(n->input(0)) == 2 || known_rank(n->input(1)) == 1;
      SY_CHECK(two_d, Unsupported,
               "{}: spatial=0 (per-activation statistics) is supported only for 2-D inputs",
               n->describe());
    }
    n->remove_attribute("spatial");
    n->remove_attribute("is_test");
  }
  if (n->num_outputs() > 1 && !is_test)
    n->set_attribute(ir::Attribute::make_int("training_mode", 1));
}

void lp_pool_p_to_int(RuleContext&, ir::Node*& n) {
  const ir::Attribute* p = n->find_attribute("p");
  if (!p || p->kind != ir::Attribute::Kind::Float) return;
  float value = p->f;
  SY_CHECK(value == std::round(value) && value >= 1.0f && value < 1e9f, Unsupported,
           "{}: p = {} is not a positive integer", n->describe(), value);
  n->set_attribute(ir::Attribute::make_int("p", static_cast<int64_t>(value)));
}

void drop_output_sequence(RuleContext&, ir::Node*& n) { n->remove_attribute("output_sequence"); }

void roi_align_output_half_pixel(RuleContext&, ir::Node*& n) {
  if (!n->has_attribute("coordinate_transformation_mode")) {
    n->set_attribute(
        ir::Attribute::make_string("coordinate_transformation_mode", "output_half_pixel"));
  }
}

void grid_sample_mode_names(RuleContext&, ir::Node*& n) {
  std::string mode = n->attr_string("mode", "bilinear");
  if (mode == "bilinear") n->set_attribute(ir::Attribute::make_string("mode", "linear"));
  if (mode == "bicubic") n->set_attribute(ir::Attribute::make_string("mode", "cubic"));
}

// Constant-12 and later accept value_float, value_ints, ...; the one form kept is `value`.
void constant_value_forms(RuleContext&, ir::Node*& n) {
  using K = ir::Attribute::Kind;
  static constexpr std::pair<std::string_view, K> kForms[] = {
      {"value_float", K::Float}, {"value_floats", K::Floats}, {"value_int", K::Int},
      {"value_ints", K::Ints},   {"value_string", K::String}, {"value_strings", K::Strings},
  };
  for (const auto& [name, kind] : kForms) {
    const ir::Attribute* a = n->find_attribute(std::string(name));
    if (!a) continue;
    SY_CHECK(!n->has_attribute("value"), InvalidModel, "{}: has both 'value' and '{}'",
             n->describe(), name);
    SY_CHECK(a->kind == kind, InvalidModel, "{}: attribute '{}' has type {}, expected {}",
             n->describe(), name, ir::attribute_kind_name(a->kind), ir::attribute_kind_name(kind));
    ir::Tensor t;
    switch (kind) {
      case K::Float:
        t = ir::Tensor(ir::DType::Float32, {});
        *t.data<float>() = a->f;
        break;
      case K::Int:
        t = ir::Tensor(ir::DType::Int64, {});
        *t.data<int64_t>() = a->i;
        break;
      case K::String:
        t = ir::Tensor(ir::DType::String, {});
        *t.data<std::string>() = a->s;
        break;
      case K::Floats:
        t = ir::Tensor(ir::DType::Float32, {static_cast<int64_t>(a->floats.size())});
        std::copy(a->floats.begin(), a->floats.end(), t.data<float>());
        break;
      case K::Ints:
        t = ir::Tensor(ir::DType::Int64, {static_cast<int64_t>(a->ints.size())});
        std::copy(a->ints.begin(), a->ints.end(), t.data<int64_t>());
        break;
      default:
        t = ir::Tensor(ir::DType::String, {static_cast<int64_t>(a->strings.size())});
        std::copy(a->strings.begin(), a->strings.end(), t.data<std::string>());
        break;
    }
    n->remove_attribute(std::string(name));
    n->set_attribute(ir::Attribute::make_tensor("value", std::move(t)));
  }
}

void refuse_tile_1(RuleContext&, ir::Node*& n) {
  SY_THROW(Unsupported,
           "{}: Tile before opset 6 (separate 'tiles' and 'axis' inputs) is not supported",
           n->describe());
}

struct Rule {
  std::string_view op_type;
  int64_t before;  ///< the rule applies to models whose default opset is below this
  detail::RuleFn apply;
  std::string_view change;
};

constexpr int64_t kAlways = kLatestOpset + 1;

// One line per op and version. Rules of one op run in this order; a rule that replaces the
// node comes last for its op.
constexpr Rule kRules[] = {
    {"Add", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Sub", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Mul", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Div", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Pow", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"And", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Or", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Xor", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Equal", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"Greater", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcast"},
    {"Less", 7, detail::rewrite_legacy_broadcast, "broadcast/axis attrs → numpy broadcasting"},
    {"PRelu", 7, detail::rewrite_legacy_prelu, "1-D slope applied per channel (axis 1)"},
    {"Gemm", 7, drop_broadcast, "broadcast attr dropped (C broadcasts unidirectionally)"},
    {"Concat", 4, concat_default_axis, "axis was optional with default 1"},
    {"Reshape", 5, reshape_shape_to_input, "shape attr → input 1"},
    {"Cast", 6, cast_to_from_string, "'to' was a type name string → TensorProto enum"},
    {"Tile", 6, refuse_tile_1, "tiles+axis inputs → refused"},
    {"LpPool", 2, lp_pool_p_to_int, "p was float → int"},
    {"GlobalLpPool", 2, lp_pool_p_to_int, "p was float → int"},
    {"LSTM", 7, drop_output_sequence, "output_sequence attr dropped"},
    {"GRU", 7, drop_output_sequence, "output_sequence attr dropped"},
    {"RNN", 7, drop_output_sequence, "output_sequence attr dropped"},
    {"Scan", 9, detail::rewrite_scan_8,
     "batched Scan-8 → Loop over the batch of Scan-9 on one element; sequence_lens refused"},
    {"BatchNormalization", 14, batch_norm_legacy,
     "<9: spatial/is_test dropped; <14: extra outputs (unless is_test=1) → training_mode=1"},
    {"Slice", 10, slice_attrs_to_inputs, "starts/ends/axes attrs → inputs 1-3"},
    {"TopK", 10, topk_k_to_input, "k attr → input 1"},
    {"Pad", 11, pad_attrs_to_inputs, "pads (Pad-1: paddings)/value attrs → inputs 1-2"},
    {"Clip", 11, clip_attrs_to_inputs, "min/max attrs → inputs 1-2"},
    {"Resize", 11, detail::rewrite_resize_10, "Resize-10 → roi omitted, asymmetric, floor"},
    {"Dropout", 12, detail::rewrite_dropout,
     "ratio attr → input 1, is_test dropped; <10: mask was T → CastLike of the bool mask"},
    {"Squeeze", 13, axes_to_input, "axes attr → input 1"},
    {"Unsqueeze", 13, axes_to_input, "axes attr → input 1"},
    {"Split", 13, split_to_input, "split attr → input 1 (num_outputs of 18 kept as attr)"},
    {"ReduceSum", 13, axes_to_input, "axes attr → input 1"},
    {"Softmax", 13, detail::rewrite_legacy_softmax,
     "2-D coercion at axis → Flatten, Softmax(-1), Reshape(Shape(x))"},
    {"LogSoftmax", 13, detail::rewrite_legacy_softmax,
     "2-D coercion at axis → Flatten, LogSoftmax(-1), Reshape(Shape(x))"},
    {"Hardmax", 13, detail::rewrite_legacy_softmax,
     "2-D coercion at axis → Flatten, Hardmax(-1), Reshape(Shape(x))"},
    {"RoiAlign", 16, roi_align_output_half_pixel,
     "implicit output_half_pixel coordinates made explicit"},
    {"ReduceMean", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceMax", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceMin", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceProd", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceL1", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceL2", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceLogSum", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceLogSumExp", 18, axes_to_input, "axes attr → input 1"},
    {"ReduceSumSquare", 18, axes_to_input, "axes attr → input 1"},
    {"GridSample", 20, grid_sample_mode_names, "mode bilinear/bicubic → linear/cubic"},
    {"DFT", 20, dft_axis_to_input, "axis attr (default 1) → input 2"},
    {"GroupNormalization", 21, detail::rewrite_group_norm_per_group,
     "per-group scale/bias → per-channel"},
    {"Constant", kAlways, constant_value_forms, "value_float(s)/int(s)/string(s) → value"},
    {"ConstantOfShape", kAlways, constant_value_forms, "value_* forms → value"},
    {"Scatter", kAlways, detail::rewrite_scatter, "Scatter (9, deprecated 11) → ScatterElements"},
    {"Upsample", kAlways, detail::rewrite_upsample,
     "→ Resize(X, , scales), asymmetric, nearest_mode floor; Upsample-1/7 scales attrs → input"},
};

void normalize_graph(ir::Graph& graph, RuleContext& context) {
  std::vector<ir::Node*> nodes;
  nodes.reserve(graph.nodes().size());
  for (const auto& n : graph.nodes()) nodes.push_back(n.get());
  for (ir::Node* node : nodes) {
    for (ir::Graph* sub : node->subgraphs()) normalize_graph(*sub, context);
    if (!node->domain().empty()) continue;
    // Opsets 1-5 marked in-place inputs on many ops; it never changed their results.
    node->remove_attribute("consumed_inputs");
    for (const Rule& rule : kRules) {
      if (rule.op_type != node->op_type() || context.opset >= rule.before) continue;
      ir::Node* before = node;
      rule.apply(context, node);
      if (node != before) break;  // replaced: the new node already has opset-21 form
    }
  }
}

}  // namespace

void normalize_opsets(ir::Graph& graph, int64_t default_opset) {
  SY_CHECK(default_opset >= 1 && default_opset <= kLatestOpset, Unsupported,
           "default opset {} is outside the known range 1-{}", default_opset, kLatestOpset);
  detail::GraphEditor editor(graph);
  RuleContext context{editor, default_opset};
  normalize_graph(graph, context);
}

}  // namespace switchyard::onnx_import
