// Schemas of the pool family (see op_kinds.def): window pools, global pools, MaxUnpool and the
// region-of-interest pools.
#include "ops/conv_geometry.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

const std::vector<ir::DType>& max_pool_dtypes() {
  static const std::vector<ir::DType> v = {ir::DType::Float16, ir::DType::BFloat16,
                                           ir::DType::Float32, ir::DType::Float64,
                                           ir::DType::Int8,    ir::DType::UInt8};
  return v;
}

// Y of a window pool: [N, C, out...] from kernel_shape and the window attributes.
ir::Type window_pool_output(InferContext& ctx, ir::DType dt) {
  const ir::Node& node = ctx.node();
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  WindowAttrs a = read_window_attrs(node, kernel);
  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) return ir::Type::tensor(dt);
  const ir::Shape& xs = *x.shape;
  if (xs.size() != kernel.size() + 2)
    ctx.fail("input X has rank {} but kernel_shape has {} dims (expected rank {})", xs.size(),
             kernel.size(), kernel.size() + 2);
  ir::Shape out = {xs[0], xs[1]};
  size_t n = kernel.size();
  for (size_t i = 0; i < n; ++i) {
    ir::Dim d = window_output_dim(xs[i + 2], a.kernel[i], a.strides[i], a.dilations[i], a.auto_pad,
                                  a.ceil_mode, a.pads[i], a.pads[i + n]);
    if (d.is_static() && d.value < 1)
      ctx.fail("the window (extent {}) does not fit spatial dim {} of size {} with its pads",
               (a.kernel[i] - 1) * a.dilations[i] + 1, i, xs[i + 2].value);
    out.push_back(d);
  }
  return ir::Type::tensor(dt, out);
}

void infer_average_pool(InferContext& ctx) {
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  int64_t cip = ctx.node().attr_int("count_include_pad", 0);
  if (cip != 0 && cip != 1) ctx.fail("count_include_pad must be 0 or 1, got {}", cip);
  ctx.set_output(0, window_pool_output(ctx, dt));
}

void infer_max_pool(InferContext& ctx) {
  ir::DType dt = require_dtype(ctx, 0, max_pool_dtypes());
  int64_t order = ctx.node().attr_int("storage_order", 0);
  if (order != 0 && order != 1) ctx.fail("storage_order must be 0 or 1, got {}", order);
  ir::Type y = window_pool_output(ctx, dt);
  ctx.set_output(0, y);
  ctx.set_output(1, ir::Type::tensor(ir::DType::Int64, y.shape));
}

void infer_lp_pool(InferContext& ctx) {
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  ctx.node().attr_int("p", 2);
  ctx.set_output(0, window_pool_output(ctx, dt));
}

void infer_global_pool(InferContext& ctx) {
  ir::DType dt = require_dtype(
      ctx, 0, ctx.node().op_type() == "GlobalMaxPool" ? max_pool_dtypes() : float_dtypes());
  if (ctx.node().op_type() == "GlobalLpPool") ctx.node().attr_int("p", 2);
  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dt));
    return;
  }
  const ir::Shape& xs = *x.shape;
  if (xs.size() < 2) ctx.fail("input X has rank {}, expected >= 2", xs.size());
  ir::Shape out = {xs[0], xs[1]};
  for (size_t i = 2; i < xs.size(); ++i) out.push_back(ir::Dim(int64_t{1}));
  ctx.set_output(0, ir::Type::tensor(dt, out));
}

void infer_max_unpool(InferContext& ctx) {
  const ir::Node& node = ctx.node();
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  require_dtype(ctx, 1, {ir::DType::Int64});
  if (ctx.has_input(2)) require_dtype(ctx, 2, {ir::DType::Int64});
  std::vector<int64_t> kernel = node.attr_ints("kernel_shape");
  WindowAttrs a = read_window_attrs(node, kernel);
  if (a.auto_pad != AutoPad::NotSet) ctx.fail("auto_pad is not an attribute of MaxUnpool");
  const ir::Type& x = ctx.input_tensor(0);
  if (ctx.has_input(2)) {
    if (const ir::Tensor* shape = ctx.input_constant(2)) {
      ctx.set_output(0, ir::Type::tensor(dt, ir::make_shape(shape->to_int_vector())));
    } else if (std::optional<int64_t> len = static_length(ctx, 2, false)) {
      ctx.set_output(0, ir::Type::tensor(dt, ir::Shape(static_cast<size_t>(*len))));
    } else {
      ctx.set_output(0, ir::Type::tensor(dt));
    }
    return;
  }
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dt));
    return;
  }
  const ir::Shape& xs = *x.shape;
  size_t n = kernel.size();
  if (xs.size() != n + 2)
    ctx.fail("input X has rank {} but kernel_shape has {} dims", xs.size(), n);
  ir::Shape out = {xs[0], xs[1]};
  for (size_t i = 0; i < n; ++i) {
    const ir::Dim& d = xs[i + 2];
    out.push_back(d.is_static() ? ir::Dim(unpooled_size(d.value, a, i)) : ir::Dim());
  }
  ctx.set_output(0, ir::Type::tensor(dt, out));
}

// Checks X [N, C, H, W] and rois [num_rois, ...]; output 0 is [num_rois, C, height, width] of dt.
void set_roi_pool_output(InferContext& ctx, ir::DType dt, int64_t height, int64_t width) {
  const ir::Type& x = ctx.input_tensor(0);
  const ir::Type& rois = ctx.input_tensor(1);
  if (x.has_rank() && x.rank() != 4) ctx.fail("input X has rank {}, expected 4", x.rank());
  if (rois.has_rank() && rois.rank() != 2) ctx.fail("rois has rank {}, expected 2", rois.rank());
  ir::Dim num = rois.has_rank() ? (*rois.shape)[0] : ir::Dim();
  ir::Dim c = x.has_rank() ? (*x.shape)[1] : ir::Dim();
  ctx.set_output(0, ir::Type::tensor(dt, ir::Shape{num, c, height, width}));
}

void infer_max_roi_pool(InferContext& ctx) {
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  require_dtype(ctx, 1, {dt});
  std::vector<int64_t> pooled = ctx.node().attr_ints("pooled_shape");
  if (pooled.size() != 2 || pooled[0] < 1 || pooled[1] < 1)
    ctx.fail("pooled_shape must be two positive values, got {}", pooled);
  ctx.node().attr_float("spatial_scale", 1.0f);
  set_roi_pool_output(ctx, dt, pooled[0], pooled[1]);
}

void infer_roi_align(InferContext& ctx) {
  const ir::Node& node = ctx.node();
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  require_dtype(ctx, 1, {dt});
  require_dtype(ctx, 2, {ir::DType::Int64});
  std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be 'avg' or 'max', got '{}'", mode);
  std::string ctm = node.attr_string("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    ctx.fail(
        "coordinate_transformation_mode must be 'half_pixel' or 'output_half_pixel', got "
        "'{}'",
        ctm);
  int64_t oh = node.attr_int("output_height", 1), ow = node.attr_int("output_width", 1);
  if (oh < 1 || ow < 1) ctx.fail("output_height and output_width must be >= 1");
  int64_t ratio = node.attr_int("sampling_ratio", 0);
  if (ratio < 0) ctx.fail("sampling_ratio must be >= 0");
  // The kernel bounds each ROI's samples (bins x grid) at 2^24; larger attributes never fit.
  constexpr int64_t kMaxSamples = int64_t{1} << 24;
  if (oh > kMaxSamples || ow > kMaxSamples || ratio > kMaxSamples)
    ctx.fail("output_height {}, output_width {} and sampling_ratio {} must each be at most {}", oh,
             ow, ratio, kMaxSamples);
  node.attr_float("spatial_scale", 1.0f);
  set_roi_pool_output(ctx, dt, oh, ow);
}

}  // namespace

void register_pool_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::AveragePool, 1, 1, 1, 1, infer_average_pool});
  r.add(OpSchema{OpKind::MaxPool, 1, 1, 1, 2, infer_max_pool});
  r.add(OpSchema{OpKind::LpPool, 1, 1, 1, 1, infer_lp_pool});
  r.add(OpSchema{OpKind::GlobalAveragePool, 1, 1, 1, 1, infer_global_pool});
  r.add(OpSchema{OpKind::GlobalMaxPool, 1, 1, 1, 1, infer_global_pool});
  r.add(OpSchema{OpKind::GlobalLpPool, 1, 1, 1, 1, infer_global_pool});
  r.add(OpSchema{OpKind::MaxUnpool, 2, 3, 1, 1, infer_max_unpool});
  r.add(OpSchema{OpKind::MaxRoiPool, 2, 2, 1, 1, infer_max_roi_pool});
  r.add(OpSchema{OpKind::RoiAlign, 3, 3, 1, 1, infer_roi_align});
}

}  // namespace switchyard::ops
