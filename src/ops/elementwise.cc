// Schemas of the elementwise family (see op_kinds.def): unary math and activations keep the
// input's type; binary and variadic ops broadcast numpy-style; comparisons give bool.
#include <string>

#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {
namespace {

using ir::DType;

const std::vector<DType>& signed_dtypes() {
  static const std::vector<DType> v = {DType::Float16, DType::BFloat16, DType::Float32,
                                       DType::Float64, DType::Int8,     DType::Int16,
                                       DType::Int32,   DType::Int64};
  return v;
}

const std::vector<DType>& integer_dtypes() {
  static const std::vector<DType> v = {DType::Int8,  DType::Int16,  DType::Int32,  DType::Int64,
                                       DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
  return v;
}

const std::vector<DType>& unsigned_dtypes() {
  static const std::vector<DType> v = {DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};
  return v;
}

const std::vector<DType>& bool_dtype() {
  static const std::vector<DType> v = {DType::Bool};
  return v;
}

const std::vector<DType>& pow_base_dtypes() {
  static const std::vector<DType> v = {DType::Float16, DType::BFloat16, DType::Float32,
                                       DType::Float64, DType::Int32,    DType::Int64};
  return v;
}

const std::vector<DType>& prelu_dtypes() {
  static const std::vector<DType> v = {DType::Float16, DType::BFloat16, DType::Float32,
                                       DType::Float64, DType::Int32,    DType::Int64,
                                       DType::UInt32,  DType::UInt64};
  return v;
}

/// Broadcast shape of the inputs, or no shape when some input's rank is unknown.
std::optional<ir::Shape> broadcast_inputs(const InferContext& ctx, size_t first, size_t count) {
  std::vector<ir::Shape> shapes;
  for (size_t i = first; i < first + count; ++i) {
    const ir::Type& t = ctx.input_tensor(i);
    if (!t.has_rank()) return std::nullopt;
    shapes.push_back(*t.shape);
  }
  return broadcast_shapes(ctx, shapes);
}

/// Requires inputs [first, first+count) to share one dtype from `allowed`; returns it.
DType require_same_dtype(const InferContext& ctx, size_t first, size_t count,
                         const std::vector<DType>& allowed) {
  DType dtype = DType::Undefined;
  size_t from = first;
  for (size_t i = first; i < first + count; ++i) {
    DType d = require_dtype(ctx, i, allowed);
    if (d == DType::Undefined) continue;
    if (dtype != DType::Undefined && d != dtype)
      ctx.fail("input {} '{}' has dtype {} but input {} has {}; they must match", i,
               ctx.node().input(i)->name(), ir::dtype_name(d), from, ir::dtype_name(dtype));
    if (dtype == DType::Undefined) {
      dtype = d;
      from = i;
    }
  }
  return dtype;
}

void add_unary(SchemaRegistry& r, OpKind kind, const std::vector<DType>& allowed,
               std::function<void(InferContext&)> check_attrs = {}, bool bool_out = false) {
  r.add(OpSchema{kind, 1, 1, 1, 1, [&allowed, check_attrs, bool_out](InferContext& ctx) {
                   if (check_attrs) check_attrs(ctx);
                   DType d = require_dtype(ctx, 0, allowed);
                   const ir::Type& t = ctx.input_tensor(0);
                   ctx.set_output(0, ir::Type::tensor(bool_out ? DType::Bool : d, t.shape));
                 }});
}

void add_binary(SchemaRegistry& r, OpKind kind, const std::vector<DType>& allowed,
                bool bool_out = false, std::function<void(InferContext&, DType)> check = {}) {
  r.add(OpSchema{kind, 2, 2, 1, 1, [&allowed, bool_out, check](InferContext& ctx) {
                   DType d = require_same_dtype(ctx, 0, 2, allowed);
                   if (check) check(ctx, d);
                   ctx.set_output(0, ir::Type::tensor(bool_out ? DType::Bool : d,
                                                      broadcast_inputs(ctx, 0, 2)));
                 }});
}

void add_variadic(SchemaRegistry& r, OpKind kind, const std::vector<DType>& allowed) {
  r.add(OpSchema{kind, 1, -1, 1, 1, [&allowed](InferContext& ctx) {
                   size_t n = ctx.num_inputs();
                   for (size_t i = 0; i < n; ++i)
                     if (!ctx.has_input(i)) ctx.fail("input {} is omitted; all are required", i);
                   DType d = require_same_dtype(ctx, 0, n, allowed);
                   ctx.set_output(0, ir::Type::tensor(d, broadcast_inputs(ctx, 0, n)));
                 }});
}

std::function<void(InferContext&)> nonzero_alpha() {
  return [](InferContext& ctx) {
    if (ctx.node().attr_float("alpha", 1.0f) == 0.0f) ctx.fail("alpha must not be 0");
  };
}

std::function<void(InferContext&)> float_attrs(std::vector<std::string> names) {
  return [names](InferContext& ctx) {
    for (const auto& n : names) ctx.node().attr_float(n, 0.0f);
  };
}

void infer_pow(InferContext& ctx) {
  DType d = require_dtype(ctx, 0, pow_base_dtypes());
  require_dtype(ctx, 1, numeric_dtypes());
  ctx.set_output(0, ir::Type::tensor(d, broadcast_inputs(ctx, 0, 2)));
}

void infer_prelu(InferContext& ctx) {
  DType d = require_same_dtype(ctx, 0, 2, prelu_dtypes());
  const ir::Type& x = ctx.input_tensor(0);
  const ir::Type& slope = ctx.input_tensor(1);
  if (x.has_rank() && slope.has_rank()) {
    const ir::Shape& xs = *x.shape;
    const ir::Shape& ss = *slope.shape;
    if (ss.size() > xs.size())
      ctx.fail("slope has rank {}, more than the input's rank {}", ss.size(), xs.size());
    for (size_t i = 0; i < ss.size(); ++i) {
      const ir::Dim& sd = ss[i];
      const ir::Dim& xd = xs[xs.size() - ss.size() + i];
      if (sd.is_static() && sd.value != 1 && xd.is_static() && sd.value != xd.value)
        ctx.fail("slope of shape {} does not broadcast to the input's shape {}",
                 ir::shape_to_string(ss), ir::shape_to_string(xs));
    }
  }
  ctx.set_output(0, ir::Type::tensor(d, x.shape));
}

void infer_where(InferContext& ctx) {
  require_dtype(ctx, 0, bool_dtype());
  DType d = require_same_dtype(ctx, 1, 2, all_dtypes());
  ctx.set_output(0, ir::Type::tensor(d, broadcast_inputs(ctx, 0, 3)));
}

void infer_clip(InferContext& ctx) {
  DType d = require_dtype(ctx, 0, numeric_dtypes());
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    DType b = require_dtype(ctx, i, numeric_dtypes());
    if (b != DType::Undefined && d != DType::Undefined && b != d)
      ctx.fail("input {} '{}' has dtype {}, expected {} like the input", i,
               ctx.node().input(i)->name(), ir::dtype_name(b), ir::dtype_name(d));
    const ir::Type& t = ctx.input_tensor(i);
    if (t.has_rank()) {
      auto dims = ir::static_dims(*t.shape);
      if (t.rank() > 1 || (dims && ir::checked_numel(*dims) != 1))
        ctx.fail("{} must be a scalar, got shape {}", i == 1 ? "min" : "max",
                 ir::shape_to_string(*t.shape));
    }
  }
  propagate_input(ctx, 0);
}

DType cast_target(const InferContext& ctx) {
  int64_t to = ctx.node().attr_int("to");
  DType d = static_cast<DType>(to);
  if (to < 0 || to > 16 || !ir::dtype_is_known(d))
    ctx.fail("attribute 'to' = {} is not a supported dtype", to);
  ctx.node().attr_int("saturate", 1);
  return d;
}

void infer_cast(InferContext& ctx) {
  DType to = cast_target(ctx);
  require_dtype(ctx, 0, all_dtypes());
  ctx.set_output(0, ir::Type::tensor(to, ctx.input_tensor(0).shape));
}

void infer_cast_like(InferContext& ctx) {
  require_dtype(ctx, 0, all_dtypes());
  DType to = require_dtype(ctx, 1, all_dtypes());
  ctx.node().attr_int("saturate", 1);
  ctx.set_output(0, ir::Type::tensor(to, ctx.input_tensor(0).shape));
}

}  // namespace

void register_elementwise_schemas(SchemaRegistry& r) {
  const auto& fl = float_dtypes();
  // Unary math.
  add_unary(r, OpKind::Abs, numeric_dtypes());
  for (OpKind k :
       {OpKind::Acos,  OpKind::Acosh,   OpKind::Asin,     OpKind::Asinh,      OpKind::Atan,
        OpKind::Atanh, OpKind::Ceil,    OpKind::Cos,      OpKind::Cosh,       OpKind::Erf,
        OpKind::Exp,   OpKind::Floor,   OpKind::Log,      OpKind::Reciprocal, OpKind::Round,
        OpKind::Sin,   OpKind::Sinh,    OpKind::Sqrt,     OpKind::Tan,        OpKind::Tanh,
        OpKind::Mish,  OpKind::Sigmoid, OpKind::Softplus, OpKind::Softsign,   OpKind::HardSwish})
    add_unary(r, k, fl);
  add_unary(
      r, OpKind::IsInf, fl,
      [](InferContext& ctx) {
        ctx.node().attr_int("detect_negative", 1);
        ctx.node().attr_int("detect_positive", 1);
      },
      true);
  add_unary(r, OpKind::IsNaN, fl, {}, true);
  add_unary(r, OpKind::Neg, signed_dtypes());
  add_unary(r, OpKind::Not, bool_dtype());
  add_unary(r, OpKind::Sign, numeric_dtypes());
  add_unary(r, OpKind::BitwiseNot, integer_dtypes());
  // Activations.
  add_unary(r, OpKind::Celu, fl, nonzero_alpha());
  add_unary(r, OpKind::Elu, fl, float_attrs({"alpha"}));
  add_unary(r, OpKind::Gelu, fl, [](InferContext& ctx) {
    std::string a = ctx.node().attr_string("approximate", "none");
    if (a != "none" && a != "tanh")
      ctx.fail("attribute 'approximate' is '{}', expected 'none' or 'tanh'", a);
  });
  add_unary(r, OpKind::HardSigmoid, fl, float_attrs({"alpha", "beta"}));
  add_unary(r, OpKind::LeakyRelu, fl, float_attrs({"alpha"}));
  add_unary(r, OpKind::Relu, signed_dtypes());
  add_unary(r, OpKind::Selu, fl, float_attrs({"alpha", "gamma"}));
  add_unary(r, OpKind::Shrink, numeric_dtypes(), float_attrs({"bias", "lambd"}));
  add_unary(r, OpKind::ThresholdedRelu, fl, float_attrs({"alpha"}));
  r.add(OpSchema{OpKind::PRelu, 2, 2, 1, 1, infer_prelu});
  // Binary with broadcasting.
  for (OpKind k : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
    add_binary(r, k, numeric_dtypes());
  r.add(OpSchema{OpKind::Pow, 2, 2, 1, 1, infer_pow});
  add_binary(r, OpKind::Mod, numeric_dtypes(), false, [](InferContext& ctx, DType d) {
    int64_t fmod = ctx.node().attr_int("fmod", 0);
    if (fmod != 0 && fmod != 1) ctx.fail("attribute 'fmod' is {}, expected 0 or 1", fmod);
    if (fmod == 0 && ir::dtype_is_float(d))
      ctx.fail("attribute 'fmod' must be 1 for floating-point inputs ({})", ir::dtype_name(d));
  });
  add_binary(r, OpKind::BitShift, unsigned_dtypes(), false, [](InferContext& ctx, DType) {
    std::string dir = ctx.node().attr_string("direction");
    if (dir != "LEFT" && dir != "RIGHT")
      ctx.fail("attribute 'direction' is '{}', expected 'LEFT' or 'RIGHT'", dir);
  });
  for (OpKind k : {OpKind::BitwiseAnd, OpKind::BitwiseOr, OpKind::BitwiseXor})
    add_binary(r, k, integer_dtypes());
  for (OpKind k : {OpKind::And, OpKind::Or, OpKind::Xor}) add_binary(r, k, bool_dtype(), true);
  add_binary(r, OpKind::Equal, all_dtypes(), true);
  for (OpKind k : {OpKind::Greater, OpKind::GreaterOrEqual, OpKind::Less, OpKind::LessOrEqual})
    add_binary(r, k, numeric_dtypes(), true);
  add_variadic(r, OpKind::Max, numeric_dtypes());
  add_variadic(r, OpKind::Min, numeric_dtypes());
  add_variadic(r, OpKind::Mean, fl);
  add_variadic(r, OpKind::Sum, fl);
  r.add(OpSchema{OpKind::Where, 3, 3, 1, 1, infer_where});
  r.add(OpSchema{OpKind::Clip, 1, 3, 1, 1, infer_clip});
  r.add(OpSchema{OpKind::Cast, 1, 1, 1, 1, infer_cast});
  r.add(OpSchema{OpKind::CastLike, 2, 2, 1, 1, infer_cast_like});
}

}  // namespace switchyard::ops
