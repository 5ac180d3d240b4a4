// CPU kernels of the control_flow family: If, Loop, Scan and SequenceMap. Each compiles its body
// graphs once into GraphPrograms (kernels from the same registry) and runs them with the frame
// of the enclosing graph, so bodies read outer values directly.
#include <limits>

#include "backends/cpu/kernels/sequence_internal.h"
#include "ops/scan_layout.h"

namespace switchyard::cpu {

namespace {

using runtime::GraphProgram;

std::unique_ptr<GraphProgram> compile_body(const runtime::KernelInit& init, const char* name) {
  return std::make_unique<GraphProgram>(init.node.attr_graph(name), init.registry);
}

// The slice at `index` of `src` along `axis`, without that axis; shares storage when the slice
// is contiguous.
ir::Tensor slice_along(runtime::KernelContext& ctx, const ir::Tensor& src, size_t axis,
                       int64_t index) {
  std::vector<int64_t> shape = src.shape();
  int64_t dim = shape[axis];
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  int64_t outer = dims_product(src.shape(), 0, axis);
  int64_t inner = dims_product(src.shape(), axis + 1, src.shape().size());
  if (outer == 1) return view_of(src, std::move(shape), index * inner);
  ir::Tensor out = new_tensor(ctx, src.dtype(), std::move(shape));
  copy_blocks(src, index * inner, dim * inner, out, 0, inner, outer, inner);
  return out;
}

// Writes output `out_index` as the per-iteration tensors `items` stacked along a new axis
// (`axis_attr`, counted in the output's rank; `reverse` stacks the last iteration first).
// With no iterations, the dtype and the other dims come from the body's static type `type`.
void stack_iterations(runtime::KernelContext& ctx, size_t out_index,
                      const std::vector<ir::Tensor>& items, const ir::Type& type, int64_t axis_attr,
                      bool reverse, size_t scan_index) {
  if (items.empty()) {
    if (!type.is_tensor() || type.dtype == DType::Undefined)
      ctx.fail("scan output {} ran no iteration and its dtype is not known", scan_index);
    std::vector<int64_t> shape;
    if (type.shape)
      for (const ir::Dim& d : *type.shape) shape.push_back(d.is_static() ? d.value : 0);
    int64_t rank = static_cast<int64_t>(shape.size());
    size_t axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_attr, rank + 1));
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), 0);
    ctx.allocate_output(out_index, type.dtype, std::move(shape));
    return;
  }
  const ir::Tensor& first = items[0];
  for (size_t t = 1; t < items.size(); ++t) {
    if (items[t].dtype() != first.dtype() || items[t].shape() != first.shape())
      ctx.fail("scan output {} is {} {} in iteration {} but {} {} in iteration 0", scan_index,
               ir::dtype_name(items[t].dtype()), ir::shape_to_string(items[t].shape()), t,
               ir::dtype_name(first.dtype()), ir::shape_to_string(first.shape()));
  }
  size_t axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_attr, first.rank() + 1));
  int64_t count = static_cast<int64_t>(items.size());
  std::vector<int64_t> shape = first.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), count);
  ir::Tensor& out = ctx.allocate_output(out_index, first.dtype(), shape);
  int64_t outer = dims_product(first.shape(), 0, axis);
  int64_t inner = dims_product(first.shape(), axis, first.shape().size());
  for (int64_t t = 0; t < count; ++t) {
    const ir::Tensor& item = items[static_cast<size_t>(reverse ? count - 1 - t : t)];
    copy_blocks(item, 0, inner, out, t * inner, count * inner, outer, inner);
  }
}

ir::Datum optional_input(const runtime::KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.input_datum(i) : ir::Datum();
}

class IfKernel : public runtime::Kernel {
 public:
  explicit IfKernel(const runtime::KernelInit& init)
      : then_branch_(compile_body(init, "then_branch")),
        else_branch_(compile_body(init, "else_branch")) {}

  void run(runtime::KernelContext& ctx) const override {
    bool cond = read_scalar(ctx, ctx.input(0), {DType::Bool}, "condition") != 0;
    const GraphProgram& branch = cond ? *then_branch_ : *else_branch_;
    std::vector<ir::Datum> outs = branch.run({}, ctx.state(), ctx.frame());
    if (outs.size() != ctx.num_outputs())
      ctx.fail("branch '{}' gave {} outputs, expected {}", branch.graph().name(), outs.size(),
               ctx.num_outputs());
    for (size_t i = 0; i < outs.size(); ++i) ctx.set_output(i, std::move(outs[i]));
  }

 private:
  std::unique_ptr<GraphProgram> then_branch_;
  std::unique_ptr<GraphProgram> else_branch_;
};

// Loop: body inputs (iteration number, condition, carried values...), body outputs (condition,
// carried values..., scan outputs...). Runs while the iteration number is below M (when given)
// and the condition holds; the condition the body returns decides each next iteration.
class LoopKernel : public runtime::Kernel {
 public:
  explicit LoopKernel(const runtime::KernelInit& init)
      : body_(compile_body(init, "body")),
        num_states_(init.node.num_inputs() > 2 ? init.node.num_inputs() - 2 : 0) {
    SY_CHECK(init.node.num_outputs() >= num_states_, InvalidModel,
             "{}: has {} outputs, fewer than its {} loop-carried values", init.node.describe(),
             init.node.num_outputs(), num_states_);
    const ir::Graph& body = body_->graph();
    SY_CHECK(body.inputs().size() == 2 + num_states_ &&
                 body.outputs().size() == 1 + init.node.num_outputs(),
             InvalidModel, "{}: body '{}' has {} inputs and {} outputs, expected {} and {}",
             init.node.describe(), body.name(), body.inputs().size(), body.outputs().size(),
             2 + num_states_, 1 + init.node.num_outputs());
    for (size_t j = num_states_; j < init.node.num_outputs(); ++j)
      scan_types_.push_back(body.outputs()[1 + j]->type());
  }

  void run(runtime::KernelContext& ctx) const override {
    int64_t max_trips = std::numeric_limits<int64_t>::max();
    if (ctx.has_input(0)) max_trips = read_scalar(ctx, ctx.input(0), {DType::Int64}, "trip count");
    bool cond = true;
    if (ctx.has_input(1)) cond = read_scalar(ctx, ctx.input(1), {DType::Bool}, "condition") != 0;
    std::vector<ir::Datum> states;
    for (size_t k = 0; k < num_states_; ++k) states.push_back(optional_input(ctx, 2 + k));

    std::vector<std::vector<ir::Tensor>> scans(scan_types_.size());
    for (int64_t iter = 0; iter < max_trips && cond; ++iter) {
      ctx.state().check_stop(ctx.node());
      std::vector<ir::Datum> in;
      in.reserve(2 + num_states_);
      ir::Tensor iter_num = new_tensor(ctx, DType::Int64, {});
      iter_num.data<int64_t>()[0] = iter;
      ir::Tensor cond_in = new_tensor(ctx, DType::Bool, {});
      cond_in.data<bool>()[0] = cond;
      in.emplace_back(std::move(iter_num));
      in.emplace_back(std::move(cond_in));
      for (ir::Datum& s : states) in.push_back(std::move(s));
      std::vector<ir::Datum> out = body_->run(std::move(in), ctx.state(), ctx.frame());
      if (!out[0].is_tensor())
        ctx.fail("body output 0 (the condition) is not a tensor in iteration {}", iter);
      cond = read_scalar(ctx, out[0].tensor, {DType::Bool}, "the body's condition output") != 0;
      for (size_t k = 0; k < num_states_; ++k) states[k] = std::move(out[1 + k]);
      for (size_t j = 0; j < scans.size(); ++j) {
        ir::Datum& d = out[1 + num_states_ + j];
        if (!d.is_tensor()) ctx.fail("scan output {} is not a tensor in iteration {}", j, iter);
        scans[j].push_back(std::move(d.tensor));
      }
    }
    for (size_t k = 0; k < num_states_; ++k) ctx.set_output(k, std::move(states[k]));
    for (size_t j = 0; j < scans.size(); ++j)
      stack_iterations(ctx, num_states_ + j, scans[j], scan_types_[j], 0, false, j);
  }

 private:
  std::unique_ptr<GraphProgram> body_;
  size_t num_states_;
  std::vector<ir::Type> scan_types_;
};

// Scan (opset 9+): inputs (states..., scan inputs...), body inputs (states..., one slice of each
// scan input), body outputs (states..., scan output slices...).
class ScanKernel : public runtime::Kernel {
 public:
  explicit ScanKernel(const runtime::KernelInit& init) : body_(compile_body(init, "body")) {
    const ir::Node& node = init.node;
    layout_ = ops::scan_layout(node, body_->graph());
  }

  void run(runtime::KernelContext& ctx) const override {
    std::vector<size_t> axes;
    int64_t length = 0;
    for (size_t j = 0; j < layout_.in_axes.size(); ++j) {
      const ir::Tensor& x = ctx.input(layout_.num_states + j);
      if (x.rank() == 0) ctx.fail("scan input {} is a scalar", j);
      axes.push_back(
          static_cast<size_t>(ops::normalize_axis(ctx.node(), layout_.in_axes[j], x.rank())));
      int64_t len = x.dim(static_cast<int64_t>(axes[j]));
      if (j > 0 && len != length)
        ctx.fail("scan input {} has length {} along its scan axis, scan input 0 has {}", j, len,
                 length);
      length = len;
    }
    std::vector<ir::Datum> states;
    for (size_t k = 0; k < layout_.num_states; ++k) states.push_back(optional_input(ctx, k));

    std::vector<std::vector<ir::Tensor>> scans(layout_.scan_output_types.size());
    for (int64_t t = 0; t < length; ++t) {
      ctx.state().check_stop(ctx.node());
      std::vector<ir::Datum> in;
      in.reserve(layout_.num_states + axes.size());
      for (ir::Datum& s : states) in.push_back(std::move(s));
      for (size_t j = 0; j < axes.size(); ++j) {
        int64_t index = layout_.in_reverse[j] ? length - 1 - t : t;
        in.emplace_back(slice_along(ctx, ctx.input(layout_.num_states + j), axes[j], index));
      }
      std::vector<ir::Datum> out = body_->run(std::move(in), ctx.state(), ctx.frame());
      for (size_t k = 0; k < layout_.num_states; ++k) states[k] = std::move(out[k]);
      for (size_t j = 0; j < scans.size(); ++j) {
        ir::Datum& d = out[layout_.num_states + j];
        if (!d.is_tensor()) ctx.fail("scan output {} is not a tensor in iteration {}", j, t);
        scans[j].push_back(std::move(d.tensor));
      }
    }
    for (size_t k = 0; k < layout_.num_states; ++k) ctx.set_output(k, std::move(states[k]));
    for (size_t j = 0; j < scans.size(); ++j)
      stack_iterations(ctx, layout_.num_states + j, scans[j], layout_.scan_output_types[j],
                       layout_.out_axes[j], layout_.out_reverse[j], j);
  }

 private:
  std::unique_ptr<GraphProgram> body_;
  ops::ScanLayout layout_;  // ops/scan_layout.h
};

// SequenceMap: runs the body once per element of input 0; further sequence inputs give their
// element at the same position, tensor inputs are passed whole to every run.
class SequenceMapKernel : public runtime::Kernel {
 public:
  explicit SequenceMapKernel(const runtime::KernelInit& init) : body_(compile_body(init, "body")) {
    const ir::Graph& body = body_->graph();
    SY_CHECK(body.inputs().size() == init.node.num_inputs() &&
                 body.outputs().size() == init.node.num_outputs(),
             InvalidModel, "{}: body '{}' has {} inputs and {} outputs, expected {} and {}",
             init.node.describe(), body.name(), body.inputs().size(), body.outputs().size(),
             init.node.num_inputs(), init.node.num_outputs());
    for (const ir::Value* v : body.outputs()) out_dtypes_.push_back(v->type().dtype);
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Datum& first = ctx.input_datum(0);
    if (!first.is_sequence()) ctx.fail("input 0 must be a sequence");
    size_t length = first.sequence.size();
    for (size_t i = 1; i < ctx.num_inputs(); ++i) {
      const ir::Datum& d = ctx.input_datum(i);
      if (d.is_empty()) ctx.fail("input {} is an optional without a value", i);
      if (d.is_sequence() && d.sequence.size() != length)
        ctx.fail("input {} is a sequence of {} elements, input 0 has {}", i, d.sequence.size(),
                 length);
    }
    std::vector<std::vector<ir::Tensor>> results(ctx.num_outputs());
    for (size_t t = 0; t < length; ++t) {
      ctx.state().check_stop(ctx.node());
      std::vector<ir::Datum> in;
      in.reserve(ctx.num_inputs());
      for (size_t i = 0; i < ctx.num_inputs(); ++i) {
        const ir::Datum& d = ctx.input_datum(i);
        in.push_back(d.is_sequence() ? ir::Datum(d.sequence[t]) : d);
      }
      std::vector<ir::Datum> out = body_->run(std::move(in), ctx.state(), ctx.frame());
      for (size_t o = 0; o < out.size(); ++o) {
        if (!out[o].is_tensor()) ctx.fail("body output {} is not a tensor for element {}", o, t);
        if (!results[o].empty() && out[o].tensor.dtype() != results[o][0].dtype())
          ctx.fail("body output {} is {} for element {} but {} for element 0", o,
                   ir::dtype_name(out[o].tensor.dtype()), t, ir::dtype_name(results[o][0].dtype()));
        results[o].push_back(std::move(out[o].tensor));
      }
    }
    for (size_t o = 0; o < results.size(); ++o) {
      DType dtype = results[o].empty() ? out_dtypes_[o] : results[o][0].dtype();
      if (dtype == DType::Undefined)
        ctx.fail("output {} is an empty sequence whose dtype is not known", o);
      ctx.set_output(o, ir::Datum::make_sequence(dtype, std::move(results[o])));
    }
  }

 private:
  std::unique_ptr<GraphProgram> body_;
  std::vector<DType> out_dtypes_;
};

// A control-flow node runs on the CPU only if every node of its bodies does; the reason names
// the first body node that cannot. KernelDef::check sees no registry, so this asks the CPU
// registry itself.
runtime::Support bodies_supported(const ir::Node& node) {
  for (const ir::Graph* body : node.subgraphs()) {
    for (const auto& n : body->nodes()) {
      runtime::Support s;
      try {
        s = cpu_kernels().supports(*n);
      } catch (const Error& e) {
        s = runtime::Support::no(e.what());
      }
      if (!s.ok)
        return runtime::Support::no(
            fmt::format("body '{}' node '{}': {}", body->name(), n->name(), s.reason));
    }
  }
  return runtime::Support::yes();
}

}  // namespace

void register_control_flow_kernels(runtime::KernelRegistry& r) {
  auto add = [&r](ops::OpKind op, std::vector<DType> dtypes, auto factory) {
    r.add(runtime::KernelDef{op, std::move(dtypes), 0, bodies_supported, std::move(factory)});
  };
  add(ops::OpKind::If, {DType::Bool}, runtime::make_factory<IfKernel>());
  add(ops::OpKind::Loop, {DType::Int64}, runtime::make_factory<LoopKernel>());
  add(ops::OpKind::Scan, {}, runtime::make_factory<ScanKernel>());
  add(ops::OpKind::SequenceMap, {}, runtime::make_factory<SequenceMapKernel>());
}

}  // namespace switchyard::cpu
