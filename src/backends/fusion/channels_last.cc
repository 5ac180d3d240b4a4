// The channels-last rewrite of a partition's private graph (fusion.h: apply_channels_last). One
// forward walk in topological order: a node joins the channels-last region (and gets a
// fusion::ChannelsLast, payload.h) when its kernel reads that layout and its inputs allow it;
// each NCHW value it reads gets one NHWC twin (a
// Transpose, made once and shared), and each value it writes gets a Transpose back under the
// value's own name, which is dropped again when no NCHW reader remains.
#include "backends/fusion/fusion.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/check.h"
#include "ops/op_traits.h"

namespace switchyard::backends {

namespace {

const std::vector<int64_t> kToChannelsLast = {0, 2, 3, 1};
const std::vector<int64_t> kToChannelsFirst = {0, 3, 1, 2};

bool is_onnx(const ir::Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

// Broadcasts the same way in either layout: every dim 1 (a scalar, [1], [1,1,1,1]).
bool is_layout_free_operand(const ir::Value* v) {
  if (!v || !v->type().has_rank() || v->type().rank() > 4) return false;
  for (const ir::Dim& d : *v->type().shape)
    if (!d.is_static() || d.value != 1) return false;
  return true;
}

ir::Type permuted(const ir::Type& t, const std::vector<int64_t>& perm) {
  ir::Type out = t;
  if (t.shape && t.shape->size() == perm.size())
    for (size_t i = 0; i < perm.size(); ++i)
      (*out.shape)[i] = (*t.shape)[static_cast<size_t>(perm[i])];
  return out;
}

class ChannelsLast {
 public:
  ChannelsLast(ir::Graph& g, const ChannelsLastRules& rules) : g_(g), rules_(rules) {}

  size_t run() {
    std::vector<ir::Node*> order;
    for (const auto& n : g_.nodes()) order.push_back(n.get());
    size_t converted = 0;
    for (ir::Node* n : order) {
      std::vector<size_t> layout_inputs;  // inputs read channels-last
      if (!joins(*n, layout_inputs)) continue;
      convert(n, layout_inputs);
      ++converted;
    }
    if (converted == 0) return 0;
    // Transposes back to NCHW that no reader needs.
    g_.remove_nodes_if([&](const ir::Node& t) {
      return back_.count(&t) && t.output(0)->uses().empty() && !g_.is_output(t.output(0));
    });
    g_.sort_topologically();
    return converted;
  }

 private:
  // Whether `n` joins the region, and which of its inputs it then reads channels-last.
  bool joins(const ir::Node& n, std::vector<size_t>& layout_inputs) const {
    if (!is_onnx(n) || n.annotation<fusion::ChannelsLast>() || n.num_outputs() < 1) return false;
    const std::string& op = n.op_type();
    const ops::OpTraits& traits = ops::traits(n);
    if (op == "Conv") {
      // X, and the fused residual Z; W stays KCRS (the kernel packs it once).
      if (n.num_outputs() != 1 || !is_narrow_4d(n.input(0)) || !n.input(1) ||
          n.input(1)->type().rank() != 4)
        return false;
      layout_inputs = {0};
      if (n.input(3)) {
        if (!is_narrow_4d(n.input(3))) return false;
        layout_inputs.push_back(3);
      }
      return true;
    }
    // Other nodes join only where the region already writes their data (joining for data that
    // is merely transposed in would add a transpose back).
    if (op == "Resize" && rules_.resize) {
      // Constant scales or sizes of a 4-D value (no roi, no axes): the same Resize with them
      // permuted (the cpu kernel resizes channels-last images without a transpose).
      if (n.num_outputs() != 1 || n.has_attribute("axes")) return false;
      if (!is_narrow_4d(n.input(0)) || !in_region(n.input(0))) return false;
      auto empty_or_absent = [&](size_t i) {
        const ir::Value* v = i < n.num_inputs() ? n.input(i) : nullptr;
        return !v || (v->is_constant() && v->constant().numel() == 0);
      };
      // Four values, one per axis: a constant, or a computed 1-D value of static length 4 (an
      // FPN's sizes from Shape), which a Gather reorders at run time.
      auto constant4 = [&](size_t i) {
        const ir::Value* v = i < n.num_inputs() ? n.input(i) : nullptr;
        if (!v) return false;
        if (v->is_constant()) return v->constant().numel() == 4 && v->constant().rank() == 1;
        const ir::Type& t = v->type();
        return t.is_tensor() && t.has_rank() && t.rank() == 1 && (*t.shape)[0].is_static() &&
               (*t.shape)[0].value == 4;
      };
      if (!empty_or_absent(1)) return false;
      const bool scales = constant4(2) && empty_or_absent(3);
      const bool sizes = empty_or_absent(2) && constant4(3);
      if (!scales && !sizes) return false;
      layout_inputs = {0};
      return true;
    }
    if (op == "Pad" && rules_.pad) {
      // Constant pads of a 4-D value (no axes input): the same Pad with the pads permuted.
      if (n.num_outputs() != 1 || n.num_inputs() < 2 || n.num_inputs() > 3) return false;
      if (!is_narrow_4d(n.input(0)) || !in_region(n.input(0))) return false;
      const ir::Value* pads = n.input(1);
      if (!pads || !pads->is_constant() || pads->constant().numel() != 8) return false;
      if (n.num_inputs() == 3 && n.input(2) && !is_layout_free_operand(n.input(2))) return false;
      layout_inputs = {0};
      return true;
    }
    if (op == "BatchNormalization" && rules_.batch_norm) {
      // Inference mode: a per-channel affine map that the kernel applies along the last dim.
      if (n.num_outputs() != 1 || n.attr_int("training_mode", 0) != 0) return false;
      if (!is_narrow_4d(n.input(0)) || !in_region(n.input(0))) return false;
      layout_inputs = {0};
      return true;
    }
    if (traits.spatial_pool && rules_.pools) {
      const ir::Value* indices = n.output(1);
      if (indices && (!indices->uses().empty() || g_.is_output(indices))) return false;
      if (!is_narrow_4d(n.input(0)) || !in_region(n.input(0))) return false;
      layout_inputs = {0};
      return true;
    }
    if (op == "Concat") {
      // squeezenet's fire modules join their expand convolutions along the channels.
      if (n.num_outputs() != 1 || !is_narrow_4d(n.output(0))) return false;
      bool any = false;
      for (size_t i = 0; i < n.num_inputs(); ++i) {
        if (!n.input(i) || !twin_.count(n.input(i))) return false;
        any = any || in_region(n.input(i));
        layout_inputs.push_back(i);
      }
      return any;
    }
    if (traits.layout_free()) {
      if (n.num_outputs() != 1 || !is_narrow_4d(n.output(0))) return false;
      bool any = false;
      for (size_t i = 0; i < n.num_inputs(); ++i) {
        const ir::Value* v = n.input(i);
        if (!v) continue;
        // A unary op's other inputs are scalar parameters (Clip's min and max).
        const bool data = traits.broadcast_elementwise || i == 0;
        if (data && twin_.count(v)) {
          layout_inputs.push_back(i);
          any = any || in_region(v);
        } else if (!is_layout_free_operand(v)) {
          return false;
        }
      }
      return any;
    }
    return false;
  }

  // Whether `v` is written by a node of the region (not only transposed for one).
  bool in_region(const ir::Value* v) const {
    auto it = twin_.find(v);
    return it != twin_.end() && !transposed_.count(it->second);
  }

  // The NHWC twin of `v`, made by a Transpose on first use.
  ir::Value* channels_last_of(ir::Value* v) {
    auto it = twin_.find(v);
    if (it != twin_.end()) return it->second;
    ir::Node* t = g_.add_node("Transpose", v->name() + "/to_nhwc", {v},
                              {g_.unique_value_name(v->name() + "_nhwc")});
    t->set_attribute(ir::Attribute::make_ints("perm", kToChannelsLast));
    t->output(0)->set_type(permuted(v->type(), kToChannelsLast));
    twin_[v] = t->output(0);
    transposed_.insert(t->output(0));
    return t->output(0);
  }

  void convert(ir::Node* n, const std::vector<size_t>& layout_inputs) {
    std::vector<ir::Value*> inputs = n->inputs();
    for (size_t i : layout_inputs) inputs[i] = channels_last_of(inputs[i]);
    const std::string name = n->name(), op = n->op_type(), domain = n->domain();
    const int kind = n->kind_id();
    const std::vector<ir::Attribute> attributes = n->attributes();
    const auto annotations = n->annotations();
    ir::Value* y = n->output(0);
    const ir::Type y_type = y->type();
    const bool y_read = !y->uses().empty() || g_.is_output(y);
    // The node goes; y, when read, survives without a producer.
    g_.remove_nodes_if([&](const ir::Node& m) { return &m == n; });
    const std::string y_name = g_.unique_value_name(name + "_nhwc_out");
    ir::Node* c = g_.add_node(op, name, inputs, {y_name}, domain);
    c->set_kind_id(kind);
    for (const ir::Attribute& a : attributes) c->set_attribute(a);
    for (const auto& a : annotations) c->annotate(a);
    c->annotate(std::make_shared<fusion::ChannelsLast>());
    if (op == "Concat") {
      // NCHW axis a is NHWC axis i where kToChannelsLast[i] == a.
      int64_t axis = c->attr_int("axis");
      if (axis < 0) axis += 4;
      const auto at = std::find(kToChannelsLast.begin(), kToChannelsLast.end(), axis);
      SY_CHECK(at != kToChannelsLast.end(), InvalidModel, "{}: axis {} is out of range for rank 4",
               c->describe(), c->attr_int("axis"));
      c->set_attribute(ir::Attribute::make_int("axis", at - kToChannelsLast.begin()));
    }
    if (op == "Resize") {
      // scales (input 2) or sizes (input 3), one value per NCHW axis: reordered as the axes.
      for (size_t i : {size_t{2}, size_t{3}}) {
        if (i >= c->num_inputs() || !c->input(i)) continue;
        ir::Value* v = c->input(i);
        if (!v->is_constant()) {
          ir::Tensor perm(ir::DType::Int64, {4});
          std::copy(kToChannelsLast.begin(), kToChannelsLast.end(), perm.data<int64_t>());
          ir::Node* gather =
              g_.add_node("Gather", name + "/nhwc_" + std::to_string(i),
                          {v, g_.add_constant(g_.unique_value_name(name + "_nhwc_perm"), perm)},
                          {g_.unique_value_name(v->name() + "_nhwc")});
          gather->set_attribute(ir::Attribute::make_int("axis", 0));
          gather->output(0)->set_type(v->type());
          c->set_input(i, gather->output(0));
          continue;
        }
        if (v->constant().numel() != 4) continue;
        const ir::Tensor& t = v->constant();
        ir::Tensor p(t.dtype(), {4});
        const size_t es = ir::dtype_size(t.dtype());
        for (size_t k = 0; k < 4; ++k)
          std::memcpy(
              static_cast<char*>(p.raw()) + k * es,
              static_cast<const char*>(t.raw()) + static_cast<size_t>(kToChannelsLast[k]) * es, es);
        c->set_input(i,
                     g_.add_constant(g_.unique_value_name(name + "_nhwc_" + std::to_string(i)), p));
      }
    }
    if (op == "Pad") {
      // pads = [begin of each NCHW axis, end of each]: reorder both halves as the axes.
      const std::vector<int64_t> p = c->input(1)->constant().to_int_vector();
      ir::Tensor permuted_pads(ir::DType::Int64, {8});
      for (size_t i = 0; i < 4; ++i) {
        permuted_pads.data<int64_t>()[i] = p[static_cast<size_t>(kToChannelsLast[i])];
        permuted_pads.data<int64_t>()[4 + i] = p[4 + static_cast<size_t>(kToChannelsLast[i])];
      }
      c->set_input(1, g_.add_constant(g_.unique_value_name(name + "_pads_nhwc"), permuted_pads));
    }
    c->output(0)->set_type(permuted(y_type, kToChannelsLast));
    if (!y_read) return;
    twin_[y] = c->output(0);
    ir::Node* back = g_.add_node("Transpose", name + "/to_nchw", {c->output(0)},
                                 {g_.unique_value_name(name + "_to_nchw")});
    back->set_attribute(ir::Attribute::make_ints("perm", kToChannelsFirst));
    back->output(0)->set_type(y_type);
    g_.adopt_output(back, 0, y);
    back_.insert(back);
  }

  // A 4-D tensor of a dtype the backend's channels-last kernels take.
  bool is_narrow_4d(const ir::Value* v) const {
    if (!v || !v->type().is_tensor() || v->type().rank() != 4) return false;
    const auto& d = rules_.dtypes;
    return std::find(d.begin(), d.end(), v->type().dtype) != d.end();
  }

  ir::Graph& g_;
  const ChannelsLastRules& rules_;
  std::map<const ir::Value*, ir::Value*> twin_;  // NCHW value -> its channels-last form
  std::set<const ir::Value*> transposed_;        // twins made by a Transpose into the region
  std::set<const ir::Node*> back_;               // the Transposes back to NCHW
};

}  // namespace

size_t apply_channels_last(ir::Graph& graph, const ChannelsLastRules& rules) {
  return ChannelsLast(graph, rules).run();
}

}  // namespace switchyard::backends
