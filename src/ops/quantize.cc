// Schemas of the quantize family (see op_kinds.def): QuantizeLinear and DequantizeLinear,
// per-tensor or per-axis (axis attribute), and DynamicQuantizeLinear.
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {
namespace {

using ir::DType;

const std::vector<DType>& quantized_dtypes() {
  static const std::vector<DType> v = {DType::Int8, DType::UInt8, DType::Int16, DType::UInt16};
  return v;
}

const std::vector<DType>& dequantize_input_dtypes() {
  static const std::vector<DType> v = {DType::Int8, DType::UInt8, DType::Int16, DType::UInt16,
                                       DType::Int32};
  return v;
}

const std::vector<DType>& quantize_input_dtypes() {
  static const std::vector<DType> v = {DType::Float32, DType::Float16, DType::BFloat16,
                                       DType::Int32};
  return v;
}

const std::vector<DType>& scale_dtypes() {
  static const std::vector<DType> v = {DType::Float32, DType::Float16, DType::BFloat16};
  return v;
}

/// Checks the scale (input 1) and zero point (input 2) shapes against x (input 0): a scalar
/// (or one element) for per-tensor, a 1-D tensor of x's `axis` dim for per-axis.
void check_scale_shapes(const InferContext& ctx) {
  if (ctx.node().attr_int("block_size", 0) != 0) return;  // blocked: the kernel check refuses
  const ir::Type& x = ctx.input_tensor(0);
  int64_t axis = ctx.node().attr_int("axis", 1);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    const ir::Type& t = ctx.input_tensor(i);
    if (!t.has_rank()) continue;
    const char* what = i == 1 ? "scale" : "zero point";
    if (t.rank() > 1) ctx.fail("{} has rank {}; expected a scalar or a 1-D tensor", what, t.rank());
    if (t.rank() == 0) continue;
    const ir::Dim& len = (*t.shape)[0];
    if (len.is_static() && len.value == 1) continue;
    if (!x.has_rank()) continue;
    if (x.rank() == 0) ctx.fail("{} has {} elements for a rank-0 input", what, len.to_string());
    int64_t a = normalize_axis(ctx, axis, x.rank());
    const ir::Dim& xd = (*x.shape)[static_cast<size_t>(a)];
    if (len.is_static() && xd.is_static() && len.value != xd.value)
      ctx.fail("{} has {} elements but input dim {} (axis) has {}", what, len.value, a, xd.value);
  }
  if (ctx.has_input(2)) {
    const ir::Type& s = ctx.input_tensor(1);
    const ir::Type& z = ctx.input_tensor(2);
    if (s.has_rank() && z.has_rank() && s.rank() != z.rank())
      ctx.fail("zero point has rank {} but scale has rank {}", z.rank(), s.rank());
  }
}

void infer_quantize(InferContext& ctx) {
  require_dtype(ctx, 0, quantize_input_dtypes());
  require_dtype(ctx, 1, scale_dtypes());
  ctx.node().attr_int("saturate", 1);
  int64_t output_dtype = ctx.node().attr_int("output_dtype", 0);
  DType out = DType::UInt8;
  if (ctx.has_input(2)) {
    out = require_dtype(ctx, 2, quantized_dtypes());
    if (output_dtype != 0 && out != DType::Undefined && static_cast<DType>(output_dtype) != out)
      ctx.fail("attribute 'output_dtype' = {} disagrees with the zero point's dtype {}",
               output_dtype, ir::dtype_name(out));
  } else if (output_dtype != 0) {
    out = static_cast<DType>(output_dtype);
    bool ok = false;
    for (DType d : quantized_dtypes()) ok = ok || d == out;
    if (!ok) ctx.fail("attribute 'output_dtype' = {} is not a supported dtype", output_dtype);
  }
  check_scale_shapes(ctx);
  ctx.set_output(0, ir::Type::tensor(out, ctx.input_tensor(0).shape));
}

void infer_dequantize(InferContext& ctx) {
  DType x = require_dtype(ctx, 0, dequantize_input_dtypes());
  DType scale = require_dtype(ctx, 1, scale_dtypes());
  if (ctx.has_input(2)) {
    DType z = require_dtype(ctx, 2, dequantize_input_dtypes());
    if (z != DType::Undefined && x != DType::Undefined && z != x)
      ctx.fail("zero point has dtype {} but the input has {}; they must match", ir::dtype_name(z),
               ir::dtype_name(x));
  }
  check_scale_shapes(ctx);
  ctx.set_output(0, ir::Type::tensor(scale, ctx.input_tensor(0).shape));
}

void infer_dynamic_quantize(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::Float32});
  ctx.set_output(0, ir::Type::tensor(DType::UInt8, ctx.input_tensor(0).shape));
  ctx.set_output(1, ir::Type::tensor(DType::Float32, ir::Shape{}));
  ctx.set_output(2, ir::Type::tensor(DType::UInt8, ir::Shape{}));
}

}  // namespace

void register_quantize_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::QuantizeLinear, 2, 3, 1, 1, infer_quantize});
  r.add(OpSchema{OpKind::DequantizeLinear, 2, 3, 1, 1, infer_dequantize});
  r.add(OpSchema{OpKind::DynamicQuantizeLinear, 1, 1, 3, 3, infer_dynamic_quantize});
}

}  // namespace switchyard::ops
