// Schemas of the reduce family (see op_kinds.def): Reduce* with axes as an optional input,
// ArgMax/ArgMin and CumSum.
#include <algorithm>

#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

using ir::DType;

// Reduce* accept every numeric dtype; ReduceMax/ReduceMin also bool (opset 20).
std::vector<DType> reduce_dtypes(bool with_bool) {
  std::vector<DType> d = numeric_dtypes();
  if (with_bool) d.push_back(DType::Bool);
  return d;
}

void check_bool_attr(const InferContext& ctx, const char* name, int64_t value) {
  if (value != 0 && value != 1) ctx.fail("attribute '{}' must be 0 or 1, got {}", name, value);
}

// Shape after reducing `axes` (already normalized); keepdims keeps them as 1.
ir::Shape reduced_shape(const ir::Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  ir::Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (keepdims) {
      out.push_back(ir::Dim(int64_t{1}));
    }
  }
  return out;
}

void infer_reduce(InferContext& ctx, bool with_bool) {
  DType dtype = require_dtype(ctx, 0, reduce_dtypes(with_bool));
  int64_t keepdims = ctx.node().attr_int("keepdims", 1);
  int64_t noop = ctx.node().attr_int("noop_with_empty_axes", 0);
  check_bool_attr(ctx, "keepdims", keepdims);
  check_bool_attr(ctx, "noop_with_empty_axes", noop);
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, {DType::Int64});
    const ir::Type& at = ctx.input_type(1);
    if (at.has_rank() && at.rank() != 1)
      ctx.fail("axes must be a 1-D tensor, got rank {}", at.rank());
  }
  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dtype));
    return;
  }
  const ir::Shape& in = *x.shape;
  int64_t rank = static_cast<int64_t>(in.size());
  std::optional<std::vector<int64_t>> axes;
  if (!ctx.has_input(1)) {
    axes = std::vector<int64_t>{};
  } else if (const ir::Tensor* c = ctx.input_constant(1)) {
    axes = c->to_int_vector();
  }
  if (axes) {
    if (axes->empty() && noop) {
      ctx.set_output(0, ir::Type::tensor(dtype, in));
      return;
    }
    std::vector<bool> reduced(in.size(), axes->empty());
    for (int64_t a : *axes) {
      if (rank == 0) ctx.fail("axis {} is out of range for a rank-0 input", a);
      int64_t k = normalize_axis(ctx, a, rank);
      if (reduced[static_cast<size_t>(k)]) ctx.fail("axis {} appears more than once in axes", a);
      reduced[static_cast<size_t>(k)] = true;
    }
    ctx.set_output(0, ir::Type::tensor(dtype, reduced_shape(in, reduced, keepdims != 0)));
    return;
  }
  // Axes known only at run time: with keepdims the rank is kept; dims of 1 stay 1.
  if (keepdims) {
    ir::Shape out;
    for (const ir::Dim& d : in)
      out.push_back(d.is_static() && d.value == 1 ? ir::Dim(int64_t{1}) : ir::Dim());
    ctx.set_output(0, ir::Type::tensor(dtype, out));
    return;
  }
  const ir::Type& at = ctx.input_type(1);
  if (at.has_rank() && at.rank() == 1 && (*at.shape)[0].is_static() && (*at.shape)[0].value > 0 &&
      (*at.shape)[0].value <= rank) {
    ctx.set_output(
        0, ir::Type::tensor(dtype, ir::Shape(static_cast<size_t>(rank - (*at.shape)[0].value))));
    return;
  }
  ctx.set_output(0, ir::Type::tensor(dtype));
}

void infer_arg_reduce(InferContext& ctx) {
  require_dtype(ctx, 0, numeric_dtypes());
  int64_t keepdims = ctx.node().attr_int("keepdims", 1);
  check_bool_attr(ctx, "keepdims", keepdims);
  check_bool_attr(ctx, "select_last_index", ctx.node().attr_int("select_last_index", 0));
  int64_t axis = ctx.node().attr_int("axis", 0);
  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(DType::Int64));
    return;
  }
  int64_t rank = x.rank();
  if (rank == 0) ctx.fail("input must have rank >= 1");
  int64_t k = normalize_axis(ctx, axis, rank);
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  reduced[static_cast<size_t>(k)] = true;
  ctx.set_output(0, ir::Type::tensor(DType::Int64, reduced_shape(*x.shape, reduced, keepdims)));
}

void infer_cumsum(InferContext& ctx) {
  DType dtype = require_dtype(ctx, 0, numeric_dtypes());
  require_dtype(ctx, 1, {DType::Int32, DType::Int64});
  check_bool_attr(ctx, "exclusive", ctx.node().attr_int("exclusive", 0));
  check_bool_attr(ctx, "reverse", ctx.node().attr_int("reverse", 0));
  const ir::Type& axis_type = ctx.input_type(1);
  if (axis_type.has_rank() && axis_type.rank() > 1)
    ctx.fail("axis must be a scalar or a 1-element 1-D tensor, got rank {}", axis_type.rank());
  const ir::Type& x = ctx.input_tensor(0);
  if (x.has_rank()) {
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    if (const ir::Tensor* c = ctx.input_constant(1)) {
      if (c->numel() != 1) ctx.fail("axis must hold one value, got {}", c->numel());
      normalize_axis(ctx, c->scalar_as_int(0), x.rank());
    }
  }
  ctx.set_output(0, ir::Type::tensor(dtype, x.shape));
}

}  // namespace

void register_reduce_schemas(SchemaRegistry& r) {
  for (OpKind k :
       {OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceLogSum, OpKind::ReduceLogSumExp,
        OpKind::ReduceMean, OpKind::ReduceProd, OpKind::ReduceSum, OpKind::ReduceSumSquare}) {
    r.add(OpSchema{k, 1, 2, 1, 1, [](InferContext& ctx) { infer_reduce(ctx, false); }});
  }
  for (OpKind k : {OpKind::ReduceMax, OpKind::ReduceMin})
    r.add(OpSchema{k, 1, 2, 1, 1, [](InferContext& ctx) { infer_reduce(ctx, true); }});
  r.add(OpSchema{OpKind::ArgMax, 1, 1, 1, 1, infer_arg_reduce});
  r.add(OpSchema{OpKind::ArgMin, 1, 1, 1, 1, infer_arg_reduce});
  r.add(OpSchema{OpKind::CumSum, 2, 2, 1, 1, infer_cumsum});
}

}  // namespace switchyard::ops
