// Schemas of the conv family (see op_kinds.def): Conv, ConvTranspose, ConvInteger, QLinearConv.
#include "ir/checked_math.h"
#include "ops/conv_geometry.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

// Static dims of a shape's spatial part (from index 2), or nullopt when any is not static.
std::optional<std::vector<int64_t>> static_spatial(const ir::Shape& shape) {
  std::vector<int64_t> out;
  for (size_t i = 2; i < shape.size(); ++i) {
    if (!shape[i].is_static()) return std::nullopt;
    out.push_back(shape[i].value);
  }
  return out;
}

// Output type of a forward convolution: x input `xi`, weight input `wi`, output dtype `out`.
void infer_conv(InferContext& ctx, size_t xi, size_t wi, ir::DType out) {
  const ir::Node& node = ctx.node();
  const ir::Type& x = ctx.input_tensor(xi);
  const ir::Type& w = ctx.input_tensor(wi);
  int64_t group = node.attr_int("group", 1);
  if (group < 1) ctx.fail("group must be >= 1, got {}", group);
  if (x.has_rank() && x.rank() < 3) ctx.fail("input X has rank {}, expected >= 3", x.rank());
  if (w.has_rank() && w.rank() < 3) ctx.fail("weight W has rank {}, expected >= 3", w.rank());
  if (x.has_rank() && w.has_rank() && x.rank() != w.rank())
    ctx.fail("input X has rank {} but weight W has rank {}", x.rank(), w.rank());
  if (!x.has_rank() || !w.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(out));
    return;
  }
  const ir::Shape& xs = *x.shape;
  const ir::Shape& ws = *w.shape;
  if (ws[0].is_static() && ws[0].value % group != 0)
    ctx.fail("weight W has {} output channels, not divisible by group {}", ws[0].value, group);
  if (xs[1].is_static() && ws[1].is_static() &&
      xs[1].value != ir::checked_mul(ws[1].value, group, "channels x group"))
    ctx.fail("input X has {} channels, expected {} (weight W {} x group {})", xs[1].value,
             ws[1].value * group, ws[1].value, group);
  auto kernel = static_spatial(ws);
  if (!kernel && node.has_attribute("kernel_shape")) kernel = node.attr_ints("kernel_shape");
  ir::Shape shape = {xs[0], ws[0]};
  if (!kernel) {
    for (size_t i = 2; i < xs.size(); ++i) shape.push_back(ir::Dim());
  } else {
    if (kernel->size() != xs.size() - 2)
      ctx.fail("kernel_shape has {} dims, expected {}", kernel->size(), xs.size() - 2);
    WindowAttrs a = read_window_attrs(node, *kernel);
    if (a.ceil_mode) ctx.fail("ceil_mode is not an attribute of convolutions");
    size_t n = a.spatial();
    for (size_t i = 0; i < n; ++i) {
      ir::Dim d = window_output_dim(xs[i + 2], a.kernel[i], a.strides[i], a.dilations[i],
                                    a.auto_pad, false, a.pads[i], a.pads[i + n]);
      if (d.is_static() && d.value < 1)
        ctx.fail("the kernel (extent {}) does not fit spatial dim {} of size {} with its pads",
                 (a.kernel[i] - 1) * a.dilations[i] + 1, i, xs[i + 2].value);
      shape.push_back(d);
    }
  }
  ctx.set_output(0, ir::Type::tensor(out, shape));
}

void infer_conv_float(InferContext& ctx) {
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  ir::DType wt = require_dtype(ctx, 1, float_dtypes());
  if (dt != ir::DType::Undefined && wt != ir::DType::Undefined && dt != wt)
    ctx.fail("weight W has dtype {}, expected {} like X", ir::dtype_name(wt), ir::dtype_name(dt));
  if (ctx.has_input(2)) {
    require_dtype(ctx, 2, {dt});
    const ir::Type& b = ctx.input_tensor(2);
    if (b.has_rank() && b.rank() != 1) ctx.fail("bias B has rank {}, expected 1", b.rank());
  }
  infer_conv(ctx, 0, 1, dt);
}

void infer_conv_transpose(InferContext& ctx) {
  const ir::Node& node = ctx.node();
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  ir::DType wt = require_dtype(ctx, 1, float_dtypes());
  if (dt != ir::DType::Undefined && wt != ir::DType::Undefined && dt != wt)
    ctx.fail("weight W has dtype {}, expected {} like X", ir::dtype_name(wt), ir::dtype_name(dt));
  if (ctx.has_input(2)) require_dtype(ctx, 2, {dt});
  const ir::Type& x = ctx.input_tensor(0);
  const ir::Type& w = ctx.input_tensor(1);
  int64_t group = node.attr_int("group", 1);
  if (group < 1) ctx.fail("group must be >= 1, got {}", group);
  if (x.has_rank() && x.rank() < 3) ctx.fail("input X has rank {}, expected >= 3", x.rank());
  if (x.has_rank() && w.has_rank() && x.rank() != w.rank())
    ctx.fail("input X has rank {} but weight W has rank {}", x.rank(), w.rank());
  if (!x.has_rank() || !w.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dt));
    return;
  }
  const ir::Shape& xs = *x.shape;
  const ir::Shape& ws = *w.shape;
  size_t n = xs.size() - 2;
  if (xs[1].is_static() && ws[0].is_static() && xs[1].value != ws[0].value)
    ctx.fail("input X has {} channels but weight W has {} input channels", xs[1].value,
             ws[0].value);
  if (ws[0].is_static() && ws[0].value % group != 0)
    ctx.fail("weight W has {} input channels, not divisible by group {}", ws[0].value, group);
  ir::Shape shape = {xs[0], ws[1].is_static()
                                ? ir::Dim(ir::checked_mul(ws[1].value, group, "output channels"))
                                : ir::Dim()};
  auto kernel = static_spatial(ws);
  if (!kernel && node.has_attribute("kernel_shape")) kernel = node.attr_ints("kernel_shape");
  if (!kernel) {
    for (size_t i = 0; i < n; ++i) shape.push_back(ir::Dim());
    ctx.set_output(0, ir::Type::tensor(dt, shape));
    return;
  }
  if (kernel->size() != n) ctx.fail("kernel_shape has {} dims, expected {}", kernel->size(), n);
  WindowAttrs a = read_window_attrs(node, *kernel);
  auto out_pad = node.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  if (out_pad.size() != n) ctx.fail("output_padding has {} values, expected {}", out_pad.size(), n);
  for (size_t i = 0; i < n; ++i)
    if (out_pad[i] < 0 || out_pad[i] >= std::max(a.strides[i], a.dilations[i]))
      ctx.fail("output_padding {} must be in [0, max(stride, dilation))", out_pad);
  if (node.has_attribute("output_shape")) {
    auto os = node.attr_ints("output_shape");
    if (os.size() != n && os.size() != n + 2)
      ctx.fail("output_shape has {} values, expected {}", os.size(), n);
    for (size_t i = 0; i < n; ++i) {
      int64_t v = os[os.size() - n + i];
      if (v < 1) ctx.fail("output_shape {} must be positive", os);
      shape.push_back(ir::Dim(v));
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      const ir::Dim& in = xs[i + 2];
      if (!in.is_static()) {
        shape.push_back(a.strides[i] == 1 && a.auto_pad != AutoPad::NotSet &&
                                a.auto_pad != AutoPad::Valid
                            ? in
                            : ir::Dim());
        continue;
      }
      int64_t v;
      if (a.auto_pad == AutoPad::SameUpper || a.auto_pad == AutoPad::SameLower) {
        v = ir::checked_mul(in.value, a.strides[i], "output size");
      } else {
        using ir::checked_add, ir::checked_mul;
        const char* what = "output size";
        int64_t pads =
            a.auto_pad == AutoPad::Valid ? 0 : checked_add(a.pads[i], a.pads[i + n], what);
        int64_t reach = checked_add(checked_mul(a.kernel[i] - 1, a.dilations[i], what), 1, what);
        v = checked_add(
            checked_add(checked_mul(a.strides[i], in.value - 1, what), out_pad[i], what), reach,
            what);
        v = ir::checked_sub(v, pads, what);
      }
      if (v < 1) ctx.fail("output spatial dim {} would be {}", i, v);
      shape.push_back(ir::Dim(v));
    }
  }
  ctx.set_output(0, ir::Type::tensor(dt, shape));
}

// A scale or zero-point input: a scalar (or 1-element), or 1-D per channel when `per_channel`.
void check_quant_param(InferContext& ctx, size_t i, const char* what, bool per_channel) {
  if (!ctx.has_input(i)) return;
  const ir::Type& t = ctx.input_tensor(i);
  if (!t.has_rank() || t.rank() == 0) return;
  bool single = t.rank() == 1 && (*t.shape)[0].is_static() && (*t.shape)[0].value == 1;
  if (t.rank() == 1 && (per_channel || single || !(*t.shape)[0].is_static())) return;
  ctx.fail("{} has shape {}, expected a scalar{}", what, ir::shape_to_string(*t.shape),
           per_channel ? " or a 1-D per-channel tensor" : "");
}

void infer_conv_integer(InferContext& ctx) {
  ir::DType xt = require_dtype(ctx, 0, quantized_dtypes());
  require_dtype(ctx, 1, quantized_dtypes());
  if (ctx.has_input(2)) require_dtype(ctx, 2, {xt});
  if (ctx.has_input(3)) require_dtype(ctx, 3, {ctx.input_tensor(1).dtype});
  check_quant_param(ctx, 2, "x_zero_point", false);
  check_quant_param(ctx, 3, "w_zero_point", true);
  infer_conv(ctx, 0, 1, ir::DType::Int32);
}

void infer_qlinear_conv(InferContext& ctx) {
  ir::DType yt = require_qlinear_dtypes(ctx);
  if (ctx.has_input(8)) {
    require_dtype(ctx, 8, {ir::DType::Int32});
    const ir::Type& b = ctx.input_tensor(8);
    if (b.has_rank() && b.rank() != 1) ctx.fail("bias B has rank {}, expected 1", b.rank());
  }
  check_quant_param(ctx, 1, "x_scale", false);
  check_quant_param(ctx, 2, "x_zero_point", false);
  check_quant_param(ctx, 4, "w_scale", true);
  check_quant_param(ctx, 5, "w_zero_point", true);
  check_quant_param(ctx, 6, "y_scale", false);
  check_quant_param(ctx, 7, "y_zero_point", false);
  infer_conv(ctx, 0, 3, yt);
}

}  // namespace

void register_conv_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::Conv, 2, 3, 1, 1, infer_conv_float});
  r.add(OpSchema{OpKind::ConvTranspose, 2, 3, 1, 1, infer_conv_transpose});
  r.add(OpSchema{OpKind::ConvInteger, 2, 4, 1, 1, infer_conv_integer});
  r.add(OpSchema{OpKind::QLinearConv, 8, 9, 1, 1, infer_qlinear_conv});
}

}  // namespace switchyard::ops
