// Schemas of the image family (see op_kinds.def): Resize, GridSample, NonMaxSuppression, Col2Im.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "ir/checked_math.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

void require_one_of(const InferContext& ctx, const std::string& attr, const std::string& value,
                    std::initializer_list<const char*> allowed) {
  for (const char* a : allowed)
    if (value == a) return;
  std::string all;
  for (const char* a : allowed) all += std::string(all.empty() ? "" : ", ") + a;
  ctx.fail("{} '{}' must be one of {}", attr, value, all);
}

// A constant input that is present and not empty (ONNX models pass empty scales with sizes).
const ir::Tensor* nonempty_constant(const InferContext& ctx, size_t i) {
  const ir::Tensor* t = ctx.input_constant(i);
  return t && t->numel() > 0 ? t : nullptr;
}

bool known_empty(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return true;
  const ir::Type& t = ctx.input_type(i);
  if (!t.has_rank()) return false;
  auto dims = ir::static_dims(*t.shape);
  return dims && ir::checked_numel(*dims) == 0;
}

void infer_resize(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  std::string mode = n.attr_string("mode", "nearest");
  require_one_of(ctx, "mode", mode, {"nearest", "linear", "cubic"});
  require_one_of(ctx, "coordinate_transformation_mode",
                 n.attr_string("coordinate_transformation_mode", "half_pixel"),
                 {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                  "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"});
  require_one_of(ctx, "nearest_mode", n.attr_string("nearest_mode", "round_prefer_floor"),
                 {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  std::string policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  require_one_of(ctx, "keep_aspect_ratio_policy", policy, {"stretch", "not_larger", "not_smaller"});
  require_bool_attr(ctx, "antialias", 0);
  require_bool_attr(ctx, "exclude_outside", 0);
  (void)n.attr_float("cubic_coeff_a", -0.75f);
  (void)n.attr_float("extrapolation_value", 0.0f);

  const ir::DType dtype = require_dtype(ctx, 0, all_dtypes());
  if (mode != "nearest" && (dtype == ir::DType::String || dtype == ir::DType::Bool))
    ctx.fail("mode '{}' needs a numeric input, got {}", mode, ir::dtype_name(dtype));
  if (ctx.has_input(1)) require_dtype(ctx, 1, float_dtypes());
  if (ctx.has_input(2)) require_dtype(ctx, 2, {ir::DType::Float32});
  if (ctx.has_input(3)) require_dtype(ctx, 3, {ir::DType::Int64});
  if (!ctx.has_input(2) && !ctx.has_input(3)) ctx.fail("one of scales and sizes is required");

  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dtype));
    return;
  }
  const int64_t rank = x.rank();
  if (rank == 0) ctx.fail("X must have rank >= 1");
  std::vector<int64_t> axes;
  if (n.has_attribute("axes")) {
    std::set<int64_t> seen;
    for (int64_t a : n.attr_ints("axes")) {
      int64_t axis = normalize_axis(ctx, a, rank);
      if (!seen.insert(axis).second) ctx.fail("axes has axis {} twice", a);
      axes.push_back(axis);
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  const int64_t num_axes = static_cast<int64_t>(axes.size());
  ir::Shape out = *x.shape;
  const ir::Tensor* scales = nonempty_constant(ctx, 2);
  const ir::Tensor* sizes = nonempty_constant(ctx, 3);
  if (scales && sizes) ctx.fail("scales and sizes are both given; exactly one is allowed");
  if (known_empty(ctx, 2) && known_empty(ctx, 3))
    ctx.fail("one of scales and sizes must be non-empty");
  if (const ir::Tensor* roi = ctx.input_constant(1);
      roi && roi->numel() > 0 && roi->numel() != 2 * num_axes)
    ctx.fail("roi has {} values, expected {}", roi->numel(), 2 * num_axes);
  if (sizes) {
    if (sizes->numel() != num_axes)
      ctx.fail("sizes has {} values, expected {}", sizes->numel(), num_axes);
    std::vector<int64_t> s = sizes->to_int_vector();
    for (int64_t v : s)
      if (v < 0) ctx.fail("sizes has negative value {}", v);
    if (policy == "stretch") {
      for (int64_t i = 0; i < num_axes; ++i) out[static_cast<size_t>(axes[i])] = ir::Dim(s[i]);
    } else {
      bool all_static = true;
      double scale = policy == "not_larger" ? INFINITY : 0.0;
      for (int64_t i = 0; i < num_axes; ++i) {
        const ir::Dim& d = (*x.shape)[static_cast<size_t>(axes[i])];
        if (!d.is_static() || d.value == 0) {
          all_static = false;
          continue;
        }
        double r = static_cast<double>(s[i]) / static_cast<double>(d.value);
        scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
      }
      for (int64_t i = 0; i < num_axes; ++i) {
        ir::Dim& o = out[static_cast<size_t>(axes[i])];
        o = all_static ? ir::Dim(ir::checked_floor_to_dim(
                             scale * static_cast<double>(o.value) + 0.5, "resized size"))
                       : ir::Dim();
      }
    }
  } else if (scales) {
    if (scales->numel() != num_axes)
      ctx.fail("scales has {} values, expected {}", scales->numel(), num_axes);
    for (int64_t i = 0; i < num_axes; ++i) {
      double s = scales->scalar_as_double(i);
      if (!(s > 0)) ctx.fail("scales[{}] = {} must be positive", i, s);
      ir::Dim& o = out[static_cast<size_t>(axes[i])];
      if (o.is_static()) {
        o = ir::Dim(ir::checked_floor_to_dim(static_cast<double>(o.value) * s, "resized size"));
      } else if (s != 1.0) {
        o = ir::Dim();
      }
    }
  } else {
    for (int64_t a : axes) out[static_cast<size_t>(a)] = ir::Dim();
  }
  ctx.set_output(0, ir::Type::tensor(dtype, out));
}

void infer_grid_sample(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  require_one_of(ctx, "mode", n.attr_string("mode", "linear"),
                 {"linear", "nearest", "cubic", "bilinear", "bicubic"});
  require_one_of(ctx, "padding_mode", n.attr_string("padding_mode", "zeros"),
                 {"zeros", "border", "reflection"});
  require_bool_attr(ctx, "align_corners", 0);
  const ir::DType dtype = require_dtype(ctx, 0, numeric_dtypes());
  require_dtype(ctx, 1, float_dtypes());
  const ir::Type& x = ctx.input_tensor(0);
  const ir::Type& grid = ctx.input_tensor(1);
  if (x.has_rank() && x.rank() < 3) ctx.fail("X has rank {}, expected at least 3", x.rank());
  if (grid.has_rank() && grid.rank() < 3)
    ctx.fail("grid has rank {}, expected at least 3", grid.rank());
  if (x.has_rank() && grid.has_rank() && x.rank() != grid.rank())
    ctx.fail("grid has rank {}, expected {} like X", grid.rank(), x.rank());
  if (!x.has_rank() && !grid.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dtype));
    return;
  }
  const int64_t rank = x.has_rank() ? x.rank() : grid.rank();
  ir::Shape out(static_cast<size_t>(rank));
  if (x.has_rank()) {
    out[0] = (*x.shape)[0];
    out[1] = (*x.shape)[1];
  }
  if (grid.has_rank()) {
    const ir::Shape& g = *grid.shape;
    if (g.back().is_static() && g.back().value != rank - 2)
      ctx.fail("grid's last dim is {}, expected {}", g.back().value, rank - 2);
    if (out[0].is_unknown()) out[0] = g[0];
    for (int64_t i = 2; i < rank; ++i) out[static_cast<size_t>(i)] = g[static_cast<size_t>(i - 1)];
  }
  ctx.set_output(0, ir::Type::tensor(dtype, out));
}

void infer_nms(InferContext& ctx) {
  require_bool_attr(ctx, "center_point_box", 0);
  require_dtype(ctx, 0, {ir::DType::Float32});
  require_dtype(ctx, 1, {ir::DType::Float32});
  if (ctx.has_input(2)) require_dtype(ctx, 2, {ir::DType::Int64});
  if (ctx.has_input(3)) require_dtype(ctx, 3, {ir::DType::Float32});
  if (ctx.has_input(4)) require_dtype(ctx, 4, {ir::DType::Float32});
  const ir::Type& boxes = ctx.input_tensor(0);
  const ir::Type& scores = ctx.input_tensor(1);
  if (boxes.has_rank() && boxes.rank() != 3)
    ctx.fail("boxes has rank {}, expected 3", boxes.rank());
  if (scores.has_rank() && scores.rank() != 3)
    ctx.fail("scores has rank {}, expected 3", scores.rank());
  if (boxes.has_rank() && (*boxes.shape)[2].is_static() && (*boxes.shape)[2].value != 4)
    ctx.fail("boxes' last dim is {}, expected 4", (*boxes.shape)[2].value);
  ctx.set_output(0, ir::Type::tensor(ir::DType::Int64, ir::Shape{ir::Dim(), 3}));
}

void infer_col2im(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  const ir::DType dtype = require_dtype(ctx, 0, all_dtypes());
  if (dtype == ir::DType::String) ctx.fail("input must be numeric");
  require_dtype(ctx, 1, {ir::DType::Int64});
  require_dtype(ctx, 2, {ir::DType::Int64});
  const ir::Type& x = ctx.input_tensor(0);
  if (x.has_rank() && x.rank() != 3) ctx.fail("input has rank {}, expected 3", x.rank());
  const ir::Tensor* image = ctx.input_constant(1);
  const ir::Tensor* block = ctx.input_constant(2);
  int64_t spatial = -1;
  const ir::Type& image_type = ctx.input_tensor(1);
  if (image) {
    spatial = image->numel();
  } else if (image_type.has_rank() && image_type.rank() == 1 &&
             (*image_type.shape)[0].is_static()) {
    spatial = (*image_type.shape)[0].value;
  }
  if (image && block && image->numel() != block->numel())
    ctx.fail("image_shape has {} values but block_shape has {}", image->numel(), block->numel());
  auto check_len = [&](const char* attr, int64_t fallback_value) {
    auto v = n.attr_ints(attr, {});
    if (!v.empty() && spatial >= 0) {
      size_t expected = static_cast<size_t>(spatial) * (std::string(attr) == "pads" ? 2 : 1);
      if (v.size() != expected) ctx.fail("{} has {} values, expected {}", attr, v.size(), expected);
    }
    for (int64_t e : v)
      if (e < fallback_value) ctx.fail("{} has invalid value {}", attr, e);
  };
  check_len("dilations", 1);
  check_len("strides", 1);
  check_len("pads", 0);
  if (spatial < 0) {
    ctx.set_output(0, ir::Type::tensor(dtype));
    return;
  }
  ir::Shape out(static_cast<size_t>(spatial + 2));
  if (x.has_rank()) out[0] = (*x.shape)[0];
  if (block && x.has_rank() && (*x.shape)[1].is_static()) {
    int64_t prod = 1;
    for (int64_t v : block->to_int_vector()) {
      if (v <= 0) ctx.fail("block_shape has non-positive value {}", v);
      prod *= v;
    }
    int64_t c = (*x.shape)[1].value;
    if (c % prod != 0) ctx.fail("input dim 1 = {} is not a multiple of the block size {}", c, prod);
    out[1] = ir::Dim(c / prod);
  }
  if (image) {
    auto dims = image->to_int_vector();
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] < 0) ctx.fail("image_shape has negative value {}", dims[i]);
      out[i + 2] = ir::Dim(dims[i]);
    }
  }
  ctx.set_output(0, ir::Type::tensor(dtype, out));
}

}  // namespace

void register_image_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::Resize, 1, 4, 1, 1, infer_resize});
  r.add(OpSchema{OpKind::GridSample, 2, 2, 1, 1, infer_grid_sample});
  r.add(OpSchema{OpKind::NonMaxSuppression, 2, 5, 1, 1, infer_nms});
  r.add(OpSchema{OpKind::Col2Im, 3, 3, 1, 1, infer_col2im});
}

}  // namespace switchyard::ops
