// Schemas of the normalization family (see op_kinds.def): batch/instance/layer/group/Lp
// normalization, LRN, MeanVarianceNormalization, Softmax/LogSoftmax/Hardmax (opset-13 form, one
// axis) and Dropout (ratio and training_mode as inputs).
#include <cmath>

#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

using ir::DType;

// Requires input i (when given and ranked) to be 1-D of `size` (static dims only are checked).
void require_vector(const InferContext& ctx, size_t i, const ir::Dim& size, const char* what) {
  if (!ctx.has_input(i)) return;
  const ir::Type& t = ctx.input_tensor(i);
  if (!t.has_rank()) return;
  if (t.rank() != 1) ctx.fail("{} must be 1-D, got rank {}", what, t.rank());
  const ir::Dim& d = (*t.shape)[0];
  if (d.is_static() && size.is_static() && d.value != size.value)
    ctx.fail("{} has {} elements, expected {}", what, d.value, size.value);
}

// The channel dim (dim 1) of input 0, or unknown.
ir::Dim channel_dim(const InferContext& ctx, int64_t min_rank) {
  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) return ir::Dim();
  if (x.rank() < min_rank) ctx.fail("input must have rank >= {}, got {}", min_rank, x.rank());
  return x.rank() > 1 ? (*x.shape)[1] : ir::Dim();
}

void infer_batch_norm(InferContext& ctx) {
  require_dtype(ctx, 0, float_dtypes());
  for (size_t i = 1; i < 5; ++i) require_dtype(ctx, i, float_dtypes());
  int64_t training = ctx.node().attr_int("training_mode", 0);
  if (training != 0 && training != 1) ctx.fail("training_mode must be 0 or 1, got {}", training);
  float momentum = ctx.node().attr_float("momentum", 0.9f);
  float epsilon = ctx.node().attr_float("epsilon", 1e-5f);
  if (!(epsilon >= 0)) ctx.fail("epsilon must be >= 0, got {}", epsilon);
  if (!std::isfinite(momentum)) ctx.fail("momentum must be finite, got {}", momentum);
  if (ctx.num_outputs() > 1 && training == 0)
    ctx.fail("outputs running_mean and running_var exist only with training_mode=1");
  ir::Dim c = channel_dim(ctx, 2);
  require_vector(ctx, 1, c, "scale");
  require_vector(ctx, 2, c, "B");
  require_vector(ctx, 3, c, "input_mean");
  require_vector(ctx, 4, c, "input_var");
  propagate_input(ctx, 0, 0);
  if (ctx.num_outputs() > 1)
    ctx.set_output(1, ir::Type::tensor(ctx.input_type(3).dtype, ir::Shape{c}));
  if (ctx.num_outputs() > 2)
    ctx.set_output(2, ir::Type::tensor(ctx.input_type(4).dtype, ir::Shape{c}));
}

// Requires a float input 0 and inputs 1-2 (scale, bias) of its dtype, input 0 called `x_name` in
// the message; absent inputs 1-2 are skipped when `skip_absent`.
void require_scale_bias_dtypes(const InferContext& ctx, const char* x_name, bool skip_absent) {
  DType dtype = require_dtype(ctx, 0, float_dtypes());
  for (size_t i = 1; i < 3; ++i) {
    if (skip_absent && !ctx.has_input(i)) continue;
    DType d = require_dtype(ctx, i, float_dtypes());
    if (d != DType::Undefined && dtype != DType::Undefined && d != dtype)
      ctx.fail("input {} has dtype {}, expected {} like {}", i, ir::dtype_name(d),
               ir::dtype_name(dtype), x_name);
  }
}

void infer_instance_norm(InferContext& ctx) {
  require_scale_bias_dtypes(ctx, "the input", /*skip_absent=*/false);
  float epsilon = ctx.node().attr_float("epsilon", 1e-5f);
  if (!(epsilon >= 0)) ctx.fail("epsilon must be >= 0, got {}", epsilon);
  ir::Dim c = channel_dim(ctx, 3);
  require_vector(ctx, 1, c, "scale");
  require_vector(ctx, 2, c, "B");
  propagate_input(ctx, 0, 0);
}

// Mean/InvStdDev type of LayerNormalization: stash_type's dtype, X's shape with the normalized
// dims set to 1.
DType stash_dtype(const InferContext& ctx) {
  int64_t stash = ctx.node().attr_int("stash_type", 1);
  if (stash != static_cast<int64_t>(DType::Float32) &&
      stash != static_cast<int64_t>(DType::Float64))
    ctx.fail("stash_type {} is not supported (float = 1 or double = 11)", stash);
  return static_cast<DType>(stash);
}

void infer_layer_norm(InferContext& ctx) {
  require_scale_bias_dtypes(ctx, "X", /*skip_absent=*/true);
  float epsilon = ctx.node().attr_float("epsilon", 1e-5f);
  if (!(epsilon >= 0)) ctx.fail("epsilon must be >= 0, got {}", epsilon);
  DType stash = stash_dtype(ctx);
  const ir::Type& x = ctx.input_tensor(0);
  propagate_input(ctx, 0, 0);
  if (!x.has_rank()) {
    ctx.set_output(1, ir::Type::tensor(stash));
    ctx.set_output(2, ir::Type::tensor(stash));
    return;
  }
  int64_t rank = x.rank();
  if (rank == 0) ctx.fail("X must have rank >= 1");
  int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", -1), rank);
  std::vector<ir::Shape> shapes = {*x.shape};
  for (size_t i = 1; i < 3; ++i) {
    const ir::Type& t = ctx.input_type(i);
    if (!ctx.has_input(i) || !t.has_rank()) continue;
    if (t.rank() > rank) ctx.fail("input {} has rank {}, more than X's {}", i, t.rank(), rank);
    shapes.push_back(*t.shape);
  }
  broadcast_shapes(ctx, shapes);
  ir::Shape stats = *x.shape;
  for (int64_t i = axis; i < rank; ++i) stats[static_cast<size_t>(i)] = ir::Dim(int64_t{1});
  ctx.set_output(1, ir::Type::tensor(stash, stats));
  ctx.set_output(2, ir::Type::tensor(stash, stats));
}

void infer_group_norm(InferContext& ctx) {
  require_scale_bias_dtypes(ctx, "X", /*skip_absent=*/false);
  int64_t groups = ctx.node().attr_int("num_groups");
  if (groups <= 0) ctx.fail("num_groups must be positive, got {}", groups);
  float epsilon = ctx.node().attr_float("epsilon", 1e-5f);
  if (!(epsilon >= 0)) ctx.fail("epsilon must be >= 0, got {}", epsilon);
  stash_dtype(ctx);
  ir::Dim c = channel_dim(ctx, 2);
  if (c.is_static() && c.value % groups != 0)
    ctx.fail("{} channels cannot be split into {} groups", c.value, groups);
  require_vector(ctx, 1, c, "scale");
  require_vector(ctx, 2, c, "bias");
  propagate_input(ctx, 0, 0);
}

void infer_lp_norm(InferContext& ctx) {
  require_dtype(ctx, 0, float_dtypes());
  int64_t p = ctx.node().attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got {}", p);
  const ir::Type& x = ctx.input_tensor(0);
  if (x.has_rank()) {
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    normalize_axis(ctx, ctx.node().attr_int("axis", -1), x.rank());
  }
  propagate_input(ctx, 0, 0);
}

void infer_lrn(InferContext& ctx) {
  require_dtype(ctx, 0, float_dtypes());
  int64_t size = ctx.node().attr_int("size");
  if (size <= 0) ctx.fail("size must be positive, got {}", size);
  ctx.node().attr_float("alpha", 1e-4f);
  ctx.node().attr_float("beta", 0.75f);
  ctx.node().attr_float("bias", 1.0f);
  channel_dim(ctx, 2);
  propagate_input(ctx, 0, 0);
}

void infer_mvn(InferContext& ctx) {
  require_dtype(ctx, 0, float_dtypes());
  std::vector<int64_t> axes = ctx.node().attr_ints("axes", {0, 2, 3});
  const ir::Type& x = ctx.input_tensor(0);
  if (x.has_rank()) {
    std::vector<bool> seen(static_cast<size_t>(x.rank()), false);
    for (int64_t a : axes) {
      if (x.rank() == 0) ctx.fail("axis {} is out of range for a rank-0 input", a);
      int64_t k = normalize_axis(ctx, a, x.rank());
      if (seen[static_cast<size_t>(k)]) ctx.fail("axis {} appears more than once in axes", a);
      seen[static_cast<size_t>(k)] = true;
    }
  }
  propagate_input(ctx, 0, 0);
}

void infer_softmax(InferContext& ctx) {
  require_dtype(ctx, 0, float_dtypes());
  const ir::Type& x = ctx.input_tensor(0);
  int64_t axis = ctx.node().attr_int("axis", -1);
  if (x.has_rank()) {
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    normalize_axis(ctx, axis, x.rank());
  }
  propagate_input(ctx, 0, 0);
}

void infer_dropout(InferContext& ctx) {
  require_dtype(ctx, 0, float_dtypes());
  ctx.node().attr_int("seed", 0);
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, float_dtypes());
    const ir::Type& t = ctx.input_type(1);
    if (t.has_rank() && t.rank() != 0) ctx.fail("ratio must be a scalar, got rank {}", t.rank());
    if (const ir::Tensor* c = ctx.input_constant(1)) {
      double ratio = c->numel() == 1 ? c->scalar_as_double(0) : -1.0;
      if (!(ratio >= 0.0 && ratio < 1.0)) ctx.fail("ratio must be in [0, 1), got {}", ratio);
    }
  }
  if (ctx.has_input(2)) {
    require_dtype(ctx, 2, {DType::Bool});
    const ir::Type& t = ctx.input_type(2);
    if (t.has_rank() && t.rank() != 0)
      ctx.fail("training_mode must be a scalar, got rank {}", t.rank());
  }
  propagate_input(ctx, 0, 0);
  ctx.set_output(1, ir::Type::tensor(DType::Bool, ctx.input_tensor(0).shape));
}

}  // namespace

void register_normalization_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::BatchNormalization, 5, 5, 1, 3, infer_batch_norm});
  r.add(OpSchema{OpKind::InstanceNormalization, 3, 3, 1, 1, infer_instance_norm});
  r.add(OpSchema{OpKind::LayerNormalization, 2, 3, 1, 3, infer_layer_norm});
  r.add(OpSchema{OpKind::GroupNormalization, 3, 3, 1, 1, infer_group_norm});
  r.add(OpSchema{OpKind::LpNormalization, 1, 1, 1, 1, infer_lp_norm});
  r.add(OpSchema{OpKind::LRN, 1, 1, 1, 1, infer_lrn});
  r.add(OpSchema{OpKind::MeanVarianceNormalization, 1, 1, 1, 1, infer_mvn});
  r.add(OpSchema{OpKind::Softmax, 1, 1, 1, 1, infer_softmax});
  r.add(OpSchema{OpKind::LogSoftmax, 1, 1, 1, 1, infer_softmax});
  r.add(OpSchema{OpKind::Hardmax, 1, 1, 1, 1, infer_softmax});
  r.add(OpSchema{OpKind::Dropout, 1, 3, 1, 2, infer_dropout});
}

}  // namespace switchyard::ops
