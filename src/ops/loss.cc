// Schemas of the loss family (see op_kinds.def): NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss, with reduction none/sum/mean, optional weights and ignore_index.
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

using ir::DType;

// Checks input (N, C, d1..dk), target (N, d1..dk) and weight (C); sets the loss type (target's
// shape for reduction none, else a scalar) and, for SoftmaxCrossEntropyLoss, log_prob's.
void infer_loss(InferContext& ctx) {
  DType dtype = require_dtype(ctx, 0, float_dtypes());
  require_dtype(ctx, 1, {DType::Int32, DType::Int64});
  if (ctx.has_input(2)) {
    DType w = require_dtype(ctx, 2, float_dtypes());
    if (w != DType::Undefined && dtype != DType::Undefined && w != dtype)
      ctx.fail("weight has dtype {}, expected {} like the input", ir::dtype_name(w),
               ir::dtype_name(dtype));
  }
  std::string reduction = ctx.node().attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction must be 'none', 'sum' or 'mean', got '{}'", reduction);
  if (const ir::Attribute* a = ctx.node().find_attribute("ignore_index")) {
    if (a->kind != ir::Attribute::Kind::Int)
      ctx.fail("attribute 'ignore_index' must be an int, got {}", ir::attribute_kind_name(a->kind));
  }
  const ir::Type& x = ctx.input_tensor(0);
  const ir::Type& target = ctx.input_tensor(1);
  if (x.has_rank() && x.rank() < 2)
    ctx.fail("input must have rank >= 2 (N, C, ...), got {}", x.rank());
  if (x.has_rank() && target.has_rank()) {
    if (target.rank() != x.rank() - 1)
      ctx.fail("target has rank {}, expected {} (input's rank minus one)", target.rank(),
               x.rank() - 1);
    for (int64_t i = 0; i < target.rank(); ++i) {
      const ir::Dim& t = (*target.shape)[static_cast<size_t>(i)];
      const ir::Dim& d = (*x.shape)[static_cast<size_t>(i == 0 ? 0 : i + 1)];
      if (t.is_static() && d.is_static() && t.value != d.value)
        ctx.fail("target dim {} is {}, expected {} from input {}", i, t.value, d.value,
                 ir::shape_to_string(*x.shape));
    }
  }
  if (ctx.has_input(2)) {
    const ir::Type& w = ctx.input_type(2);
    if (w.has_rank()) {
      if (w.rank() != 1) ctx.fail("weight must be 1-D, got rank {}", w.rank());
      if (x.has_rank()) {
        const ir::Dim& c = (*x.shape)[1];
        const ir::Dim& n = (*w.shape)[0];
        if (c.is_static() && n.is_static() && c.value != n.value)
          ctx.fail("weight has {} elements, expected {} classes", n.value, c.value);
      }
    }
  }
  if (reduction != "none") {
    ctx.set_output(0, ir::Type::tensor(dtype, ir::Shape{}));
  } else if (target.has_rank()) {
    // Target's known dims first, then input's where target's are not static.
    ir::Shape shape = *target.shape;
    if (x.has_rank())
      for (size_t i = 0; i < shape.size(); ++i)
        if (!shape[i].is_static()) {
          const ir::Dim& d = (*x.shape)[i == 0 ? 0 : i + 1];
          if (d.is_static() || shape[i].is_unknown()) shape[i] = d;
        }
    ctx.set_output(0, ir::Type::tensor(dtype, shape));
  } else if (x.has_rank()) {
    ir::Shape shape = *x.shape;
    shape.erase(shape.begin() + 1);
    ctx.set_output(0, ir::Type::tensor(dtype, shape));
  } else {
    ctx.set_output(0, ir::Type::tensor(dtype));
  }
  if (ctx.num_outputs() > 1) ctx.set_output(1, ir::Type::tensor(dtype, x.shape));
}

}  // namespace

void register_loss_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::NegativeLogLikelihoodLoss, 2, 3, 1, 1, infer_loss});
  r.add(OpSchema{OpKind::SoftmaxCrossEntropyLoss, 2, 3, 1, 2, infer_loss});
}

}  // namespace switchyard::ops
