// Schemas of the shape family (see op_kinds.def): constants, views (Reshape, Squeeze, ...),
// and the data-movement ops whose layout schemas live in shape_layout.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "ir/checked_math.h"
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

using ir::DType;
using ir::Type;

void register_shape_layout_schemas(SchemaRegistry& r);

namespace {

// The product of `dims` as one Dim: static when all are; the one symbol when the others are 1.
ir::Dim product_dim(const std::vector<ir::Dim>& dims) {
  int64_t p = 1;
  const ir::Dim* sym = nullptr;
  int non_static = 0;
  for (const ir::Dim& d : dims) {
    if (d.is_static()) {
      if (d.value != 0 && p > std::numeric_limits<int64_t>::max() / d.value) return ir::Dim();
      p *= d.value;
    } else {
      ++non_static;
      sym = &d;
    }
  }
  if (non_static == 0) return ir::Dim(p);
  if (non_static == 1 && p == 1) return *sym;
  return ir::Dim();
}

// Static product and symbol multiset of dims; false when some dim is unknown or it overflows.
bool factorize(const std::vector<ir::Dim>& dims, int64_t& product,
               std::multiset<std::string>& symbols) {
  product = 1;
  for (const ir::Dim& d : dims) {
    if (d.is_unknown()) return false;
    if (d.is_symbolic()) {
      symbols.insert(d.symbol);
    } else {
      if (d.value != 0 && product > std::numeric_limits<int64_t>::max() / d.value) return false;
      product *= d.value;
    }
  }
  return true;
}

// The dim a Reshape's -1 stands for, given input dims and the other output dims.
ir::Dim infer_reshape_dim(const InferContext& ctx, const ir::Shape& in, const ir::Shape& others) {
  int64_t in_p = 1, out_p = 1;
  std::multiset<std::string> in_s, out_s;
  if (!factorize(in, in_p, in_s) || !factorize(others, out_p, out_s)) return ir::Dim();
  for (auto it = out_s.begin(); it != out_s.end();) {
    auto match = in_s.find(*it);
    if (match == in_s.end()) {
      ++it;
      continue;
    }
    in_s.erase(match);
    it = out_s.erase(it);
  }
  if (!out_s.empty() || out_p == 0) return ir::Dim();
  if (in_s.empty()) {
    if (in_p % out_p != 0)
      ctx.fail("cannot reshape {} elements into a shape with {} elements per -1 slot", in_p, out_p);
    return ir::Dim(in_p / out_p);
  }
  if (in_s.size() == 1 && in_p == out_p) return ir::Dim(*in_s.begin());
  return ir::Dim();
}

void infer_constant(InferContext& ctx) {
  const ir::Node& n = ctx.node();
  if (n.has_attribute("sparse_value"))
    SY_THROW(Unsupported, "{}: sparse_value constants are not supported", n.describe());
  const ir::Tensor& v = n.attr_tensor("value");
  if (!ir::dtype_is_known(v.dtype()))
    SY_THROW(Unsupported, "{}: constant of dtype {} is not supported", n.describe(),
             ir::dtype_name(v.dtype()));
  ctx.set_output(0, Type::tensor(v.dtype(), ir::make_shape(v.shape())));
}

void infer_constant_of_shape(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::Int64});
  DType dtype = DType::Float32;
  if (ctx.node().has_attribute("value")) {
    const ir::Tensor& v = ctx.node().attr_tensor("value");
    if (v.numel() != 1) ctx.fail("'value' must hold one element, got {}", v.numel());
    if (v.dtype() == DType::String || !ir::dtype_is_known(v.dtype()))
      ctx.fail("'value' of dtype {} is not allowed", ir::dtype_name(v.dtype()));
    dtype = v.dtype();
  }
  if (auto dims = constant_ints(ctx, 0)) {
    for (int64_t d : *dims)
      if (d < 0) ctx.fail("shape has a negative dimension {}", d);
    ctx.set_output(0, Type::tensor(dtype, ir::make_shape(*dims)));
  } else if (auto len = static_length(ctx, 0)) {
    ctx.set_output(0, Type::tensor(dtype, ir::Shape(static_cast<size_t>(*len))));
  } else {
    ctx.set_output(0, Type::tensor(dtype));
  }
}

void infer_shape(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  const ir::Node& n = ctx.node();
  if (!in.has_rank()) {
    ctx.set_output(0, Type::tensor(DType::Int64, ir::Shape{ir::Dim()}));
    return;
  }
  int64_t rank = in.rank();
  auto clamp = [&](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clamp(n.attr_int("start", 0));
  int64_t end = clamp(n.attr_int("end", rank));
  ctx.set_output(0, Type::tensor(DType::Int64, ir::Shape{std::max<int64_t>(end - start, 0)}));
}

void infer_reshape(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Int64});
  int64_t allowzero = ctx.node().attr_int("allowzero", 0);
  if (allowzero != 0 && allowzero != 1) ctx.fail("allowzero must be 0 or 1, got {}", allowzero);
  auto shape = constant_ints(ctx, 1);
  if (!shape) {
    auto len = static_length(ctx, 1);
    ctx.set_output(0, len ? Type::tensor(in.dtype, ir::Shape(static_cast<size_t>(*len)))
                          : Type::tensor(in.dtype));
    return;
  }
  ir::Shape out;
  int infer_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < shape->size(); ++i) {
    int64_t v = (*shape)[i];
    if (v == -1) {
      if (infer_at >= 0) ctx.fail("shape has more than one -1");
      infer_at = static_cast<int>(i);
      out.emplace_back();
    } else if (v == 0 && allowzero == 0) {
      if (in.has_rank() && static_cast<int64_t>(i) >= in.rank())
        ctx.fail("shape copies dim {} (0) but the input has rank {}", i, in.rank());
      out.push_back(in.has_rank() ? (*in.shape)[i] : ir::Dim());
    } else if (v < 0) {
      ctx.fail("shape has an invalid value {}", v);
    } else {
      has_zero = has_zero || v == 0;
      out.emplace_back(v);
    }
  }
  if (has_zero && infer_at >= 0) ctx.fail("with allowzero=1, shape may not hold both 0 and -1");
  if (in.has_rank()) {
    if (infer_at >= 0) {
      ir::Shape others = out;
      others.erase(others.begin() + infer_at);
      out[static_cast<size_t>(infer_at)] = infer_reshape_dim(ctx, *in.shape, others);
    } else {
      auto a = ir::static_dims(*in.shape);
      auto b = ir::static_dims(out);
      if (a && b && ir::checked_numel(*a) != ir::checked_numel(*b))
        ctx.fail("cannot reshape {} into {}", ir::shape_to_string(*in.shape),
                 ir::shape_to_string(out));
    }
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_flatten(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (!in.has_rank()) {
    ctx.set_output(0, Type::tensor(in.dtype, ir::Shape(2)));
    return;
  }
  int64_t rank = in.rank();
  if (axis < -rank || axis > rank) ctx.fail("axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const ir::Shape& s = *in.shape;
  ir::Dim outer = product_dim(ir::Shape(s.begin(), s.begin() + axis));
  ir::Dim inner = product_dim(ir::Shape(s.begin() + axis, s.end()));
  ctx.set_output(0, Type::tensor(in.dtype, ir::Shape{outer, inner}));
}

// Sorted, normalized, duplicate-free axes; fails naming the node otherwise.
std::vector<int64_t> unique_axes(const InferContext& ctx, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) a = normalize_axis(ctx, a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    ctx.fail("axes contain a duplicate");
  return axes;
}

void infer_squeeze(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  if (ctx.has_input(1)) require_dtype(ctx, 1, {DType::Int64});
  auto axes = constant_ints(ctx, 1);
  if (!in.has_rank() || (ctx.has_input(1) && !axes)) {
    int64_t len = ctx.has_input(1) ? static_length(ctx, 1, true).value_or(-1) : -1;
    if (in.has_rank() && len >= 0 && len <= in.rank())
      ctx.set_output(0, Type::tensor(in.dtype, ir::Shape(static_cast<size_t>(in.rank() - len))));
    else
      ctx.set_output(0, Type::tensor(in.dtype));
    return;
  }
  const ir::Shape& s = *in.shape;
  ir::Shape out;
  if (!axes) {
    for (const ir::Dim& d : s) {
      if (!d.is_static()) {  // might be 1 at run time: the rank is unknown
        ctx.set_output(0, Type::tensor(in.dtype));
        return;
      }
      if (d.value != 1) out.push_back(d);
    }
  } else {
    // normalize_axis lets axis 0 through for rank 0; a scalar has no axis to squeeze.
    if (in.rank() == 0 && !axes->empty())
      ctx.fail("axis {} is out of range for a rank-0 input", (*axes)[0]);
    std::vector<int64_t> sorted = unique_axes(ctx, *axes, in.rank());
    for (int64_t i = 0; i < in.rank(); ++i) {
      const ir::Dim& d = s[static_cast<size_t>(i)];
      if (!std::binary_search(sorted.begin(), sorted.end(), i)) {
        out.push_back(d);
      } else if (d.is_static() && d.value != 1) {
        ctx.fail("cannot squeeze axis {} of size {}", i, d.value);
      }
    }
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_unsqueeze(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 1, {DType::Int64});
  auto axes = constant_ints(ctx, 1);
  if (!in.has_rank() || !axes) {
    auto len = static_length(ctx, 1, true);
    if (in.has_rank() && len)
      ctx.set_output(0, Type::tensor(in.dtype, ir::Shape(static_cast<size_t>(in.rank() + *len))));
    else
      ctx.set_output(0, Type::tensor(in.dtype));
    return;
  }
  int64_t out_rank = in.rank() + static_cast<int64_t>(axes->size());
  std::vector<int64_t> sorted = unique_axes(ctx, *axes, out_rank);
  ir::Shape out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::binary_search(sorted.begin(), sorted.end(), i))
      out.emplace_back(int64_t{1});
    else
      out.push_back((*in.shape)[next++]);
  }
  ctx.set_output(0, Type::tensor(in.dtype, out));
}

void infer_concat(InferContext& ctx) {
  int64_t axis = ctx.node().attr_int("axis");
  DType dtype = ctx.input_tensor(0).dtype;
  std::optional<ir::Shape> out;
  std::vector<ir::Dim> axis_dims;
  bool all_ranked = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Type& t = ctx.input_tensor(i);
    if (t.dtype != dtype && t.dtype != DType::Undefined && dtype != DType::Undefined)
      ctx.fail("input {} has dtype {}, input 0 has {}", i, ir::dtype_name(t.dtype),
               ir::dtype_name(dtype));
    if (!t.has_rank()) {
      all_ranked = false;
      continue;
    }
    if (out && t.rank() != static_cast<int64_t>(out->size()))
      ctx.fail("input {} has rank {}, input 0 has rank {}", i, t.rank(), out->size());
    int64_t rank = t.rank();
    int64_t a = normalize_axis(ctx, axis, rank);
    if (rank == 0) ctx.fail("cannot concatenate scalars");
    axis_dims.push_back((*t.shape)[static_cast<size_t>(a)]);
    if (!out) {
      out = *t.shape;
      continue;
    }
    for (int64_t k = 0; k < rank; ++k) {
      if (k == a) continue;
      ir::Dim& o = (*out)[static_cast<size_t>(k)];
      const ir::Dim& d = (*t.shape)[static_cast<size_t>(k)];
      if (o.is_static() && d.is_static() && o.value != d.value)
        ctx.fail("input {} has dim {} = {}, input 0 has {}", i, k, d.value, o.value);
      if (!o.is_static() && (d.is_static() || o.is_unknown())) o = d;
    }
  }
  if (!out) {
    ctx.set_output(0, Type::tensor(dtype));
    return;
  }
  size_t a = static_cast<size_t>(normalize_axis(ctx, axis, static_cast<int64_t>(out->size())));
  (*out)[a] = ir::Dim();
  if (all_ranked) {
    int64_t sum = 0;
    std::vector<ir::Dim> dynamic;
    for (const ir::Dim& d : axis_dims) {
      if (d.is_static())
        sum = ir::checked_add(sum, d.value, "concatenated size");
      else
        dynamic.push_back(d);
    }
    if (dynamic.empty())
      (*out)[a] = ir::Dim(sum);
    else if (dynamic.size() == 1 && sum == 0)
      (*out)[a] = dynamic[0];
  }
  ctx.set_output(0, Type::tensor(dtype, *out));
}

void infer_split(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  const ir::Node& n = ctx.node();
  size_t num_outputs = ctx.num_outputs();
  int64_t axis = n.attr_int("axis", 0);
  bool has_num = n.has_attribute("num_outputs");
  if (has_num) {
    int64_t k = n.attr_int("num_outputs");
    if (k < 1) ctx.fail("num_outputs must be positive, got {}", k);
    if (static_cast<size_t>(k) != num_outputs)
      ctx.fail("num_outputs is {} but the node has {} outputs", k, num_outputs);
    if (ctx.has_input(1)) ctx.fail("takes either the 'split' input or num_outputs, not both");
  }
  if (ctx.has_input(1)) require_dtype(ctx, 1, {DType::Int64});
  auto split = constant_ints(ctx, 1);
  if (split) {
    if (split->size() != num_outputs)
      ctx.fail("'split' has {} values for {} outputs", split->size(), num_outputs);
    for (int64_t v : *split)
      if (v < 0) ctx.fail("'split' has a negative size {}", v);
  }
  if (!in.has_rank()) {
    for (size_t i = 0; i < num_outputs; ++i) ctx.set_output(i, Type::tensor(in.dtype));
    return;
  }
  if (in.rank() == 0) ctx.fail("cannot split a scalar");
  size_t a = static_cast<size_t>(normalize_axis(ctx, axis, in.rank()));
  const ir::Dim& d = (*in.shape)[a];
  std::vector<ir::Dim> sizes(num_outputs);
  if (split) {
    int64_t sum = 0;
    for (size_t i = 0; i < num_outputs; ++i) {
      sizes[i] = ir::Dim((*split)[i]);
      sum = ir::checked_add(sum, (*split)[i], "'split' sizes");
    }
    if (d.is_static() && sum != d.value)
      ctx.fail("'split' sums to {} but axis {} has size {}", sum, a, d.value);
  } else if (!ctx.has_input(1) && d.is_static()) {
    int64_t k = static_cast<int64_t>(num_outputs);
    int64_t chunk = d.value / k;
    if (d.value % k != 0) {
      if (!has_num)
        ctx.fail("axis {} of size {} does not split into {} equal parts", a, d.value, k);
      chunk += 1;
      if (chunk * (k - 1) > d.value)
        ctx.fail("axis {} of size {} cannot split into {} parts", a, d.value, k);
    }
    for (size_t i = 0; i < num_outputs; ++i)
      sizes[i] = ir::Dim(i + 1 < num_outputs ? chunk : d.value - chunk * (k - 1));
  } else if (num_outputs == 1) {
    sizes[0] = d;
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    ir::Shape s = *in.shape;
    s[a] = sizes[i];
    ctx.set_output(i, Type::tensor(in.dtype, s));
  }
}

void infer_range(InferContext& ctx) {
  DType dtype = require_dtype(
      ctx, 0, {DType::Float32, DType::Float64, DType::Int16, DType::Int32, DType::Int64});
  for (size_t i = 0; i < 3; ++i) {
    const Type& t = ctx.input_tensor(i);
    if (t.dtype != dtype && t.dtype != DType::Undefined)
      ctx.fail("input {} has dtype {}, start has {}", i, ir::dtype_name(t.dtype),
               ir::dtype_name(dtype));
    if (t.has_rank() && t.rank() != 0 && !(t.rank() == 1 && (*t.shape)[0] == ir::Dim(1)))
      ctx.fail("input {} must be a scalar, got {}", i, t.to_string());
  }
  const ir::Tensor* start = ctx.input_constant(0);
  const ir::Tensor* limit = ctx.input_constant(1);
  const ir::Tensor* delta = ctx.input_constant(2);
  ir::Dim len;
  if (start && limit && delta && start->numel() == 1 && limit->numel() == 1 &&
      delta->numel() == 1) {
    double s = start->scalar_as_double(), l = limit->scalar_as_double();
    double d = delta->scalar_as_double();
    if (d == 0) ctx.fail("delta must not be zero");
    double count = std::ceil((l - s) / d);
    if (!(count < 9.0e18)) ctx.fail("range of {} elements is too large", count);
    len = ir::Dim(std::max<int64_t>(static_cast<int64_t>(count), 0));
  }
  ctx.set_output(0, Type::tensor(dtype, ir::Shape{len}));
}

void infer_eye_like(InferContext& ctx) {
  std::vector<DType> allowed = numeric_dtypes();
  allowed.push_back(DType::Bool);
  const Type& in = ctx.input_tensor(0);
  require_dtype(ctx, 0, allowed);
  DType dtype = in.dtype;
  if (ctx.node().has_attribute("dtype")) {
    dtype = static_cast<DType>(ctx.node().attr_int("dtype"));
    if (std::find(allowed.begin(), allowed.end(), dtype) == allowed.end())
      ctx.fail("dtype {} is not allowed", static_cast<int>(dtype));
  }
  ctx.node().attr_int("k", 0);
  if (in.has_rank() && in.rank() != 2) ctx.fail("input must be 2-D, got {}", in.to_string());
  ctx.set_output(0, Type::tensor(dtype, in.shape ? in.shape : std::optional(ir::Shape(2))));
}

void infer_trilu(InferContext& ctx) {
  const Type& in = ctx.input_tensor(0);
  int64_t upper = ctx.node().attr_int("upper", 1);
  if (upper != 0 && upper != 1) ctx.fail("upper must be 0 or 1, got {}", upper);
  if (in.has_rank() && in.rank() < 2) ctx.fail("input must have rank >= 2, got {}", in.rank());
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, {DType::Int64});
    const Type& k = ctx.input_tensor(1);
    if (k.has_rank() && k.rank() != 0 && !(k.rank() == 1 && (*k.shape)[0] == ir::Dim(1)))
      ctx.fail("k must be a scalar, got {}", k.to_string());
  }
  propagate_input(ctx, 0);
}

}  // namespace

void register_shape_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::Constant, 0, 0, 1, 1, infer_constant});
  r.add(OpSchema{OpKind::ConstantOfShape, 1, 1, 1, 1, infer_constant_of_shape});
  r.add(OpSchema{OpKind::Identity, 1, 1, 1, 1, [](InferContext& ctx) {
                   if (ctx.node().input(0) == nullptr) ctx.fail("input 0 is required");
                   propagate_input(ctx, 0);
                 }});
  r.add(OpSchema{OpKind::Shape, 1, 1, 1, 1, infer_shape});
  r.add(OpSchema{OpKind::Size, 1, 1, 1, 1, [](InferContext& ctx) {
                   ctx.input_tensor(0);
                   ctx.set_output(0, Type::tensor(DType::Int64, ir::Shape{}));
                 }});
  r.add(OpSchema{OpKind::Reshape, 2, 2, 1, 1, infer_reshape});
  r.add(OpSchema{OpKind::Flatten, 1, 1, 1, 1, infer_flatten});
  r.add(OpSchema{OpKind::Squeeze, 1, 2, 1, 1, infer_squeeze});
  r.add(OpSchema{OpKind::Unsqueeze, 2, 2, 1, 1, infer_unsqueeze});
  r.add(OpSchema{OpKind::Concat, 1, -1, 1, 1, infer_concat});
  r.add(OpSchema{OpKind::Split, 1, 2, 1, -1, infer_split});
  r.add(OpSchema{OpKind::Range, 3, 3, 1, 1, infer_range});
  r.add(OpSchema{OpKind::EyeLike, 1, 1, 1, 1, infer_eye_like});
  r.add(OpSchema{OpKind::Trilu, 1, 2, 1, 1, infer_trilu});
  register_shape_layout_schemas(r);
}

}  // namespace switchyard::ops
