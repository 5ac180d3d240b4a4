// Schemas of the gather_scatter family (see op_kinds.def): indexing ops and ops whose output
// shape depends on data (NonZero, Compress, Unique).
#include <algorithm>

#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

using ir::DType;
using ir::Type;

namespace {

// Requires input i to have input 0's dtype.
void require_same_dtype(const InferContext& ctx, size_t i, DType dtype) {
  const Type& t = ctx.input_tensor(i);
  if (t.dtype != dtype && t.dtype != DType::Undefined && dtype != DType::Undefined)
    ctx.fail("input {} has dtype {}, input 0 has {}", i, ir::dtype_name(t.dtype),
             ir::dtype_name(dtype));
}

std::string check_reduction(const InferContext& ctx) {
  std::string reduction = ctx.node().attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    ctx.fail("reduction '{}' is not one of none, add, mul, max, min", reduction);
  return reduction;
}

void infer_gather(InferContext& ctx) {
  const Type& data = ctx.input_tensor(0);
  require_dtype(ctx, 1, index_dtypes());
  const Type& indices = ctx.input_tensor(1);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (!data.has_rank()) {
    ctx.set_output(0, Type::tensor(data.dtype));
    return;
  }
  if (data.rank() == 0) ctx.fail("data must have rank >= 1");
  size_t a = static_cast<size_t>(normalize_axis(ctx, axis, data.rank()));
  if (!indices.has_rank()) {
    ctx.set_output(0, Type::tensor(data.dtype));
    return;
  }
  const ir::Shape& d = *data.shape;
  ir::Shape out(d.begin(), d.begin() + static_cast<int64_t>(a));
  out.insert(out.end(), indices.shape->begin(), indices.shape->end());
  out.insert(out.end(), d.begin() + static_cast<int64_t>(a) + 1, d.end());
  ctx.set_output(0, Type::tensor(data.dtype, out));
}

// GatherElements and ScatterElements: data of rank >= 1 with the axis attribute in range, and
// indices of the same rank.
void check_element_indices(InferContext& ctx, const Type& data, const Type& indices) {
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (!data.has_rank()) return;
  if (data.rank() == 0) ctx.fail("data must have rank >= 1");
  normalize_axis(ctx, axis, data.rank());
  if (indices.has_rank() && indices.rank() != data.rank())
    ctx.fail("indices have rank {}, data has rank {}", indices.rank(), data.rank());
}

void infer_gather_elements(InferContext& ctx) {
  const Type& data = ctx.input_tensor(0);
  require_dtype(ctx, 1, index_dtypes());
  const Type& indices = ctx.input_tensor(1);
  check_element_indices(ctx, data, indices);
  ctx.set_output(0, Type::tensor(data.dtype, indices.has_rank() ? indices.shape : std::nullopt));
}

void infer_gather_nd(InferContext& ctx) {
  const Type& data = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Int64});
  const Type& indices = ctx.input_tensor(1);
  int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (b < 0) ctx.fail("batch_dims must be non-negative, got {}", b);
  if (!data.has_rank() || !indices.has_rank()) {
    ctx.set_output(0, Type::tensor(data.dtype));
    return;
  }
  int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (b >= std::min(r, q)) ctx.fail("batch_dims {} must be less than both ranks ({}, {})", b, r, q);
  const ir::Dim& last = indices.shape->back();
  if (!last.is_static()) {
    ctx.set_output(0, Type::tensor(data.dtype));
    return;
  }
  int64_t m = last.value;
  if (m < 1 || m > r - b)
    ctx.fail("indices' last dim {} must be in [1, {}] (data rank - batch_dims)", m, r - b);
  for (int64_t i = 0; i < b; ++i) {
    const ir::Dim& x = (*data.shape)[static_cast<size_t>(i)];
    const ir::Dim& y = (*indices.shape)[static_cast<size_t>(i)];
    if (x.is_static() && y.is_static() && x.value != y.value)
      ctx.fail("batch dim {} is {} in data and {} in indices", i, x.value, y.value);
  }
  ir::Shape out(indices.shape->begin(), indices.shape->end() - 1);
  out.insert(out.end(), data.shape->begin() + b + m, data.shape->end());
  ctx.set_output(0, Type::tensor(data.dtype, out));
}

void infer_scatter_elements(InferContext& ctx) {
  const Type& data = ctx.input_tensor(0);
  require_dtype(ctx, 1, index_dtypes());
  require_same_dtype(ctx, 2, data.dtype);
  check_reduction(ctx);
  const Type& indices = ctx.input_tensor(1);
  const Type& updates = ctx.input_tensor(2);
  check_element_indices(ctx, data, indices);
  if (indices.has_rank() && updates.has_rank() && indices.rank() != updates.rank())
    ctx.fail("updates have rank {}, indices have rank {}", updates.rank(), indices.rank());
  propagate_input(ctx, 0);
}

void infer_scatter_nd(InferContext& ctx) {
  const Type& data = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Int64});
  require_same_dtype(ctx, 2, data.dtype);
  check_reduction(ctx);
  const Type& indices = ctx.input_tensor(1);
  const Type& updates = ctx.input_tensor(2);
  if (data.has_rank() && indices.has_rank() && updates.has_rank()) {
    if (indices.rank() < 1) ctx.fail("indices must have rank >= 1");
    const ir::Dim& k = indices.shape->back();
    if (k.is_static()) {
      if (k.value > data.rank())
        ctx.fail("indices' last dim {} exceeds the data rank {}", k.value, data.rank());
      int64_t want = indices.rank() - 1 + data.rank() - k.value;
      if (updates.rank() != want)
        ctx.fail("updates have rank {}, expected {}", updates.rank(), want);
    }
  }
  propagate_input(ctx, 0);
}

void infer_one_hot(InferContext& ctx) {
  const Type& indices = ctx.input_tensor(0);
  require_dtype(ctx, 0, numeric_dtypes());
  require_dtype(ctx, 1, numeric_dtypes());
  const Type& values = ctx.input_tensor(2);
  if (values.has_rank() && values.rank() != 1)
    ctx.fail("values must be 1-D [off, on], got {}", values.to_string());
  if (values.has_rank() && (*values.shape)[0].is_static() && (*values.shape)[0].value != 2)
    ctx.fail("values must hold 2 elements, got {}", (*values.shape)[0].value);
  int64_t axis = ctx.node().attr_int("axis", -1);
  ir::Dim depth;
  if (const ir::Tensor* t = ctx.input_constant(1)) {
    if (t->numel() != 1) ctx.fail("depth must hold one value, got {}", t->numel());
    double v = t->scalar_as_double();
    if (!(v >= 1 && v < 9.0e18)) ctx.fail("depth must be positive, got {}", v);
    depth = ir::Dim(static_cast<int64_t>(v));
  }
  if (!indices.has_rank()) {
    ctx.set_output(0, Type::tensor(values.dtype));
    return;
  }
  int64_t rank = indices.rank() + 1;
  if (axis < -rank || axis >= rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  ir::Shape out = *indices.shape;
  out.insert(out.begin() + axis, depth);
  ctx.set_output(0, Type::tensor(values.dtype, out));
}

void infer_compress(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Bool});
  const Type& cond = ctx.input_tensor(1);
  if (cond.has_rank() && cond.rank() != 1)
    ctx.fail("condition must be 1-D, got {}", cond.to_string());
  if (!ctx.node().has_attribute("axis")) {
    ctx.set_output(0, Type::tensor(in.dtype, ir::Shape{ir::Dim()}));
    return;
  }
  int64_t axis = ctx.node().attr_int("axis");
  if (!in.has_rank()) {
    ctx.set_output(0, Type::tensor(in.dtype));
    return;
  }
  if (in.rank() == 0) ctx.fail("input must have rank >= 1 when axis is given");
  ir::Shape out = *in.shape;
  out[static_cast<size_t>(normalize_axis(ctx, axis, in.rank()))] = ir::Dim();
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_top_k(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 0, numeric_dtypes());
  require_dtype(ctx, 1, {DType::Int64});
  const ir::Node& n = ctx.node();
  for (const char* flag : {"largest", "sorted"}) {
    int64_t v = n.attr_int(flag, 1);
    if (v != 0 && v != 1) ctx.fail("{} must be 0 or 1, got {}", flag, v);
  }
  int64_t axis = n.attr_int("axis", -1);
  ir::Dim k;
  if (const ir::Tensor* t = ctx.input_constant(1)) {
    if (t->numel() != 1) ctx.fail("K must hold one value, got {}", t->numel());
    int64_t v = t->scalar_as_int();
    if (v < 0) ctx.fail("K must be non-negative, got {}", v);
    k = ir::Dim(v);
  }
  if (!in.has_rank()) {
    ctx.set_output(0, Type::tensor(in.dtype));
    ctx.set_output(1, Type::tensor(DType::Int64));
    return;
  }
  if (in.rank() == 0) ctx.fail("input must have rank >= 1");
  size_t a = static_cast<size_t>(normalize_axis(ctx, axis, in.rank()));
  ir::Shape out = *in.shape;
  const ir::Dim& d = out[a];
  if (k.is_static() && d.is_static() && k.value > d.value)
    ctx.fail("K = {} exceeds axis {} of size {}", k.value, a, d.value);
  out[a] = k;
  ctx.set_output(0, Type::tensor(in.dtype, out));
  ctx.set_output(1, Type::tensor(DType::Int64, out));
}

void infer_unique(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  const ir::Node& n = ctx.node();
  int64_t sorted = n.attr_int("sorted", 1);
  if (sorted != 0 && sorted != 1) ctx.fail("sorted must be 0 or 1, got {}", sorted);
  ir::Dim count;
  Type y = Type::tensor(in.dtype, ir::Shape{ir::Dim()});
  ir::Dim total;
  if (n.has_attribute("axis")) {
    int64_t axis = n.attr_int("axis");
    if (in.has_rank()) {
      if (in.rank() == 0) ctx.fail("input must have rank >= 1 when axis is given");
      size_t a = static_cast<size_t>(normalize_axis(ctx, axis, in.rank()));
      ir::Shape s = *in.shape;
      total = s[a];
      s[a] = ir::Dim();
      y = Type::tensor(in.dtype, s);
    } else {
      y = Type::tensor(in.dtype);
    }
  } else if (in.has_rank()) {
    total = multiply_dims(*in.shape);
  }
  ctx.set_output(0, y);
  ctx.set_output(1, Type::tensor(DType::Int64, ir::Shape{count}));
  ctx.set_output(2, Type::tensor(DType::Int64, ir::Shape{total}));
  ctx.set_output(3, Type::tensor(DType::Int64, ir::Shape{count}));
}

}  // namespace

void register_gather_scatter_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::Gather, 2, 2, 1, 1, infer_gather});
  r.add(OpSchema{OpKind::GatherElements, 2, 2, 1, 1, infer_gather_elements});
  r.add(OpSchema{OpKind::GatherND, 2, 2, 1, 1, infer_gather_nd});
  r.add(OpSchema{OpKind::ScatterElements, 3, 3, 1, 1, infer_scatter_elements});
  r.add(OpSchema{OpKind::ScatterND, 3, 3, 1, 1, infer_scatter_nd});
  r.add(OpSchema{OpKind::OneHot, 3, 3, 1, 1, infer_one_hot});
  r.add(OpSchema{OpKind::NonZero, 1, 1, 1, 1, [](InferContext& ctx) {
                   const Type& in = ctx.input_tensor(0);
                   ir::Dim rank = in.has_rank() ? ir::Dim(in.rank()) : ir::Dim();
                   ctx.set_output(0, Type::tensor(DType::Int64, ir::Shape{rank, ir::Dim()}));
                 }});
  r.add(OpSchema{OpKind::Compress, 2, 2, 1, 1, infer_compress});
  r.add(OpSchema{OpKind::TopK, 2, 2, 2, 2, infer_top_k});
  r.add(OpSchema{OpKind::Unique, 1, 1, 1, 4, infer_unique});
}

}  // namespace switchyard::ops
