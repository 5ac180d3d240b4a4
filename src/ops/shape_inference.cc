#include "ops/shape_inference.h"

#include "ir/checked_math.h"

namespace switchyard::ops {

ir::Shape broadcast_shapes(const InferContext& ctx, const std::vector<ir::Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  ir::Shape out(rank, ir::Dim(int64_t{1}));
  for (size_t k = 0; k < rank; ++k) {
    ir::Dim result(int64_t{1});
    bool unknown = false;
    for (const auto& s : shapes) {
      if (k + s.size() < rank) continue;
      const ir::Dim& d = s[k + s.size() - rank];
      if (d.is_static() && d.value == 1) continue;
      if (result.is_static() && result.value == 1 && !unknown) {
        result = d;
        continue;
      }
      if (d.is_static() && result.is_static() && d.value != result.value) {
        ctx.fail("cannot broadcast dim {} with {} (shapes {})", result.value, d.value, [&] {
          std::string all;
          for (const auto& sh : shapes) all += ir::shape_to_string(sh) + " ";
          return all;
        }());
      }
      if (d == result) continue;
      if (d.is_static()) {
        result = d;  // a symbol or unknown meeting a static dim >1 must equal it
      } else if (!result.is_static()) {
        unknown = true;
      }
    }
    out[k] = unknown ? ir::Dim() : result;
  }
  return out;
}

std::optional<std::vector<int64_t>> broadcast_dims(
    const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      return std::nullopt;
    }
  }
  return out;
}

int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    ctx.fail("axis {} is out of range for rank {}", axis, rank);
  return axis < 0 ? axis + rank : axis;
}

int64_t normalize_axis(const ir::Node& node, int64_t axis, int64_t rank) {
  SY_CHECK(axis >= -rank && axis < std::max<int64_t>(rank, 1), InvalidArgument,
           "{}: axis {} is out of range for rank {}", node.describe(), axis, rank);
  return axis < 0 ? axis + rank : axis;
}

void propagate_input(InferContext& ctx, size_t input, size_t output) {
  ctx.set_output(output, ctx.input_type(input));
}

ir::DType require_dtype(const InferContext& ctx, size_t input,
                        const std::vector<ir::DType>& allowed) {
  const ir::Type& t = ctx.input_tensor(input);
  if (t.is_unknown() || allowed.empty()) return t.dtype;
  for (ir::DType d : allowed)
    if (d == t.dtype) return t.dtype;
  ctx.fail("input {} '{}' has dtype {}, which this op does not accept", input,
           ctx.node().input(input)->name(), ir::dtype_name(t.dtype));
}

ir::Dim multiply_dims(const std::vector<ir::Dim>& dims) {
  int64_t p = 1;
  for (const auto& d : dims) {
    if (!d.is_static()) return ir::Dim();
    p = ir::checked_mul(p, d.value, "product of dims");
  }
  return ir::Dim(p);
}

const std::vector<ir::DType>& float_dtypes() {
  static const std::vector<ir::DType> v = {ir::DType::Float16, ir::DType::BFloat16,
                                           ir::DType::Float32, ir::DType::Float64};
  return v;
}

const std::vector<ir::DType>& numeric_dtypes() {
  static const std::vector<ir::DType> v = {
      ir::DType::Float16, ir::DType::BFloat16, ir::DType::Float32, ir::DType::Float64,
      ir::DType::Int8,    ir::DType::Int16,    ir::DType::Int32,   ir::DType::Int64,
      ir::DType::UInt8,   ir::DType::UInt16,   ir::DType::UInt32,  ir::DType::UInt64};
  return v;
}

const std::vector<ir::DType>& all_dtypes() {
  static const std::vector<ir::DType> v = [] {
    auto x = numeric_dtypes();
    x.push_back(ir::DType::Bool);
    x.push_back(ir::DType::String);
    return x;
  }();
  return v;
}

std::optional<std::vector<int64_t>> constant_ints(const InferContext& ctx, size_t i) {
  const ir::Tensor* t = ctx.input_constant(i);
  if (!t) return std::nullopt;
  if (!ir::dtype_is_integer(t->dtype()))
    ctx.fail("input {} must hold integers, got {}", i, ir::dtype_name(t->dtype()));
  return t->to_int_vector();
}

std::optional<int64_t> static_length(const InferContext& ctx, size_t i, bool allow_scalar) {
  const ir::Type& t = ctx.input_type(i);
  if (!t.has_rank()) return std::nullopt;
  if (allow_scalar && t.rank() == 0) return 1;
  if (t.rank() != 1) ctx.fail("input {} must be 1-D, got {}", i, t.to_string());
  const ir::Dim& d = (*t.shape)[0];
  if (!d.is_static()) return std::nullopt;
  // The length sizes an output shape: a declared length of 4e9 must not allocate 4e9 dims.
  if (d.value > ir::kMaxRank)
    ctx.fail(
        "input {} '{}' declares {} elements; it gives an output's dims, and a tensor has at "
        "most {} dims",
        i, ctx.node().input(i)->name(), d.value, ir::kMaxRank);
  return d.value;
}

void require_bool_attr(const InferContext& ctx, const std::string& attr, int64_t fallback) {
  int64_t v = ctx.node().attr_int(attr, fallback);
  if (v != 0 && v != 1) ctx.fail("{} {} must be 0 or 1", attr, v);
}

const std::vector<ir::DType>& quantized_dtypes() {
  static const std::vector<ir::DType> v = {ir::DType::UInt8, ir::DType::Int8};
  return v;
}

const std::vector<ir::DType>& index_dtypes() {
  static const std::vector<ir::DType> v = {ir::DType::Int32, ir::DType::Int64};
  return v;
}

ir::DType require_qlinear_dtypes(const InferContext& ctx) {
  ir::DType at = require_dtype(ctx, 0, quantized_dtypes());
  require_dtype(ctx, 1, {ir::DType::Float32});
  require_dtype(ctx, 2, {at});
  ir::DType bt = require_dtype(ctx, 3, quantized_dtypes());
  require_dtype(ctx, 4, {ir::DType::Float32});
  require_dtype(ctx, 5, {bt});
  require_dtype(ctx, 6, {ir::DType::Float32});
  return require_dtype(ctx, 7, quantized_dtypes());
}

}  // namespace switchyard::ops
