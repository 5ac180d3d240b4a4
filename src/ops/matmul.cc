// Schemas of the matmul family (see op_kinds.def): MatMul, Gemm, MatMulInteger, QLinearMatMul,
// Einsum, Det.
#include "ops/matmul_einsum.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

const std::vector<ir::DType>& matmul_dtypes() {
  static const std::vector<ir::DType> v = {
      ir::DType::Float16, ir::DType::BFloat16, ir::DType::Float32, ir::DType::Float64,
      ir::DType::Int32,   ir::DType::Int64,    ir::DType::UInt32,  ir::DType::UInt64};
  return v;
}

bool dims_conflict(const ir::Dim& a, const ir::Dim& b) {
  return a.is_static() && b.is_static() && a.value != b.value;
}

// numpy.matmul's output shape for inputs `ai` and `bi`, with dtype `out`.
void infer_matmul_shape(InferContext& ctx, size_t ai, size_t bi, ir::DType out) {
  const ir::Type& a = ctx.input_tensor(ai);
  const ir::Type& b = ctx.input_tensor(bi);
  if ((a.has_rank() && a.rank() == 0) || (b.has_rank() && b.rank() == 0))
    ctx.fail("inputs must have rank >= 1, got {} and {}", a.rank(), b.rank());
  if (!a.has_rank() || !b.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(out));
    return;
  }
  ir::Shape as = *a.shape, bs = *b.shape;
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), ir::Dim(int64_t{1}));
  if (b_vec) bs.push_back(ir::Dim(int64_t{1}));
  const ir::Dim& ka = as.back();
  const ir::Dim& kb = bs[bs.size() - 2];
  if (dims_conflict(ka, kb))
    ctx.fail("inner dims differ: A {} has K={} but B {} has K={}", ir::shape_to_string(*a.shape),
             ka.value, ir::shape_to_string(*b.shape), kb.value);
  ir::Shape batch = broadcast_shapes(
      ctx, {ir::Shape(as.begin(), as.end() - 2), ir::Shape(bs.begin(), bs.end() - 2)});
  if (!a_vec) batch.push_back(as[as.size() - 2]);
  if (!b_vec) batch.push_back(bs.back());
  ctx.set_output(0, ir::Type::tensor(out, batch));
}

void infer_matmul(InferContext& ctx) {
  ir::DType dt = require_dtype(ctx, 0, matmul_dtypes());
  ir::DType bt = require_dtype(ctx, 1, matmul_dtypes());
  if (dt != ir::DType::Undefined && bt != ir::DType::Undefined && dt != bt)
    ctx.fail("B has dtype {}, expected {} like A", ir::dtype_name(bt), ir::dtype_name(dt));
  infer_matmul_shape(ctx, 0, 1, dt);
}

void infer_gemm(InferContext& ctx) {
  const ir::Node& node = ctx.node();
  ir::DType dt = require_dtype(ctx, 0, matmul_dtypes());
  require_dtype(ctx, 1, {dt});
  if (ctx.has_input(2)) require_dtype(ctx, 2, {dt});
  int64_t ta = node.attr_int("transA", 0), tb = node.attr_int("transB", 0);
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
    ctx.fail("transA and transB must be 0 or 1, got {} and {}", ta, tb);
  node.attr_float("alpha", 1.0f);
  node.attr_float("beta", 1.0f);
  const ir::Type& a = ctx.input_tensor(0);
  const ir::Type& b = ctx.input_tensor(1);
  if (a.has_rank() && a.rank() != 2) ctx.fail("A has rank {}, expected 2", a.rank());
  if (b.has_rank() && b.rank() != 2) ctx.fail("B has rank {}, expected 2", b.rank());
  ir::Dim m, n;
  if (a.has_rank() && b.has_rank()) {
    const ir::Dim& ka = (*a.shape)[ta ? 0 : 1];
    const ir::Dim& kb = (*b.shape)[tb ? 1 : 0];
    if (dims_conflict(ka, kb))
      ctx.fail("inner dims differ: A {} (transA={}) and B {} (transB={})",
               ir::shape_to_string(*a.shape), ta, ir::shape_to_string(*b.shape), tb);
  }
  if (a.has_rank()) m = (*a.shape)[ta ? 1 : 0];
  if (b.has_rank()) n = (*b.shape)[tb ? 0 : 1];
  if (ctx.has_input(2)) {
    const ir::Type& c = ctx.input_tensor(2);
    if (c.has_rank()) {
      if (c.rank() > 2) ctx.fail("C has rank {}, expected <= 2", c.rank());
      // C must broadcast to [M, N] one way.
      ir::Shape cs = *c.shape;
      while (cs.size() < 2) cs.insert(cs.begin(), ir::Dim(int64_t{1}));
      bool m_ok = !(cs[0].is_static() && cs[0].value != 1 && dims_conflict(cs[0], m));
      bool n_ok = !(cs[1].is_static() && cs[1].value != 1 && dims_conflict(cs[1], n));
      if (!m_ok || !n_ok)
        ctx.fail("C {} cannot be broadcast to [{}, {}]", ir::shape_to_string(*c.shape),
                 m.to_string(), n.to_string());
    }
  }
  ctx.set_output(0, ir::Type::tensor(dt, ir::Shape{m, n}));
}

// A zero point or scale of a quantized matmul: scalar or 1-D.
void check_vector_param(InferContext& ctx, size_t i, const char* what) {
  if (!ctx.has_input(i)) return;
  const ir::Type& t = ctx.input_tensor(i);
  if (t.has_rank() && t.rank() > 1)
    ctx.fail("{} has rank {}, expected a scalar or a 1-D tensor", what, t.rank());
}

void infer_matmul_integer(InferContext& ctx) {
  ir::DType at = require_dtype(ctx, 0, quantized_dtypes());
  ir::DType bt = require_dtype(ctx, 1, quantized_dtypes());
  if (ctx.has_input(2)) require_dtype(ctx, 2, {at});
  if (ctx.has_input(3)) require_dtype(ctx, 3, {bt});
  check_vector_param(ctx, 2, "a_zero_point");
  check_vector_param(ctx, 3, "b_zero_point");
  infer_matmul_shape(ctx, 0, 1, ir::DType::Int32);
}

void infer_qlinear_matmul(InferContext& ctx) {
  ir::DType yt = require_qlinear_dtypes(ctx);
  const char* names[] = {"",        "a_scale",      "a_zero_point", "",
                         "b_scale", "b_zero_point", "y_scale",      "y_zero_point"};
  for (size_t i : {1, 2, 4, 5, 6, 7}) check_vector_param(ctx, i, names[i]);
  infer_matmul_shape(ctx, 0, 3, yt);
}

void infer_einsum(InferContext& ctx) {
  std::string equation = ctx.node().attr_string("equation");
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  ir::DType dt = require_dtype(ctx, 0, numeric_dtypes());
  std::vector<int64_t> ranks;
  bool ranks_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ir::DType t = require_dtype(ctx, i, {dt});
    (void)t;
    const ir::Type& ty = ctx.input_tensor(i);
    ranks_known = ranks_known && ty.has_rank();
    ranks.push_back(ty.rank());
  }
  if (!ranks_known) {
    ctx.set_output(0, ir::Type::tensor(dt));
    return;
  }
  std::string error;
  auto spec = parse_einsum(equation, ranks, error);
  if (!spec) ctx.fail("equation '{}': {}", equation, error);
  // Each label's size: a static size other than 1 wins (ellipsis dims broadcast).
  std::vector<ir::Dim> size(EinsumSpec::kEllipsisLabel + 64, ir::Dim(int64_t{1}));
  std::vector<bool> seen(size.size(), false);
  for (size_t i = 0; i < spec->inputs.size(); ++i) {
    const ir::Shape& s = *ctx.input_type(i).shape;
    for (size_t k = 0; k < s.size(); ++k) {
      size_t l = static_cast<size_t>(spec->inputs[i][k]);
      if (l >= size.size()) ctx.fail("equation '{}': too many ellipsis dims", equation);
      const ir::Dim& d = s[k];
      if (!seen[l]) {
        size[l] = d;
        seen[l] = true;
      } else if (dims_conflict(size[l], d) && size[l].value != 1 && d.value != 1) {
        ctx.fail("equation '{}': a label has sizes {} and {}", equation, size[l].value, d.value);
      } else if (d.is_static() && d.value != 1) {
        size[l] = d;
      } else if (!size[l].is_static() && !(size[l] == d)) {
        size[l] = ir::Dim();
      }
    }
  }
  ir::Shape out;
  for (int l : spec->output) out.push_back(size[static_cast<size_t>(l)]);
  ctx.set_output(0, ir::Type::tensor(dt, out));
}

void infer_det(InferContext& ctx) {
  ir::DType dt = require_dtype(ctx, 0, float_dtypes());
  const ir::Type& x = ctx.input_tensor(0);
  if (!x.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(dt));
    return;
  }
  const ir::Shape& s = *x.shape;
  if (s.size() < 2) ctx.fail("input has rank {}, expected >= 2", s.size());
  if (dims_conflict(s[s.size() - 1], s[s.size() - 2]))
    ctx.fail("input {} is not a batch of square matrices", ir::shape_to_string(s));
  ctx.set_output(0, ir::Type::tensor(dt, ir::Shape(s.begin(), s.end() - 2)));
}

}  // namespace

void register_matmul_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::MatMul, 2, 2, 1, 1, infer_matmul});
  r.add(OpSchema{OpKind::Gemm, 2, 3, 1, 1, infer_gemm});
  r.add(OpSchema{OpKind::MatMulInteger, 2, 4, 1, 1, infer_matmul_integer});
  r.add(OpSchema{OpKind::QLinearMatMul, 8, 8, 1, 1, infer_qlinear_matmul});
  r.add(OpSchema{OpKind::Einsum, 1, -1, 1, 1, infer_einsum});
  r.add(OpSchema{OpKind::Det, 1, 1, 1, 1, infer_det});
}

}  // namespace switchyard::ops
