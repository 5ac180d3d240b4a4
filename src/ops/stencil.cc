// Schema of Stencil (domain ai.switchyard, after MPSGraph's stencil): Y[n, c, o...] reduces
// X·W over the window W slid across X's spatial dims, each channel on its own. Geometry and
// attribute checks: ops/stencil_geometry.h.
#include "ops/schema.h"
#include "ops/shape_inference.h"
#include "ops/stencil_geometry.h"

namespace switchyard::ops {

namespace {

void infer_stencil(InferContext& ctx) {
  const ir::Node& node = ctx.node();
  require_dtype(ctx, 0, {ir::DType::Float32});
  require_dtype(ctx, 1, {ir::DType::Float32});
  const ir::Type& x = ctx.input_tensor(0);
  const ir::Type& w = ctx.input_tensor(1);
  StencilReduction reduction = read_stencil_reduction(node);
  bool indices = reduction == StencilReduction::ArgMin || reduction == StencilReduction::ArgMax;
  ir::DType out_dtype = indices ? ir::DType::Int64 : ir::DType::Float32;
  int64_t rank = w.has_rank() ? w.rank() : x.has_rank() ? x.rank() - 2 : -1;
  if (rank < 0) {
    ctx.set_output(0, ir::Type::tensor(out_dtype));
    return;
  }
  StencilAttrs a = read_stencil_attrs(node, static_cast<size_t>(rank));
  if (x.has_rank() && x.rank() != rank + 2)
    ctx.fail("X has rank {} but the window W has rank {} (expected X of rank {})", x.rank(), rank,
             rank + 2);
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(out_dtype));
    return;
  }
  const ir::Shape& xs = *x.shape;
  ir::Shape out = {xs[0], xs[1]};
  for (size_t i = 0; i < static_cast<size_t>(rank); ++i) {
    const ir::Dim& in = xs[i + 2];
    const ir::Dim window = w.has_rank() ? (*w.shape)[i] : ir::Dim();
    if (in.is_static() && window.is_static())
      out.push_back(stencil_output_size(node.describe(), a, i, in.value, window.value));
    else
      out.push_back(ir::Dim());
  }
  ctx.set_output(0, ir::Type::tensor(out_dtype, out));
}

}  // namespace

void register_stencil_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::Stencil, 2, 2, 1, 1, infer_stencil});
}

}  // namespace switchyard::ops
