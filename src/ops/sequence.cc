// Schemas of the sequence family (see op_kinds.def): sequences of tensors and optionals, and the
// type algebra over value kinds that the control_flow schemas share (ops/sequence_types.h).
#include "ir/checked_math.h"
#include "ops/schema.h"
#include "ops/sequence_types.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

ir::Shape unite_shapes(const ir::Shape& a, const ir::Shape& b) {
  ir::Shape out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] == b[i] ? a[i] : ir::Dim();
  return out;
}

ir::Dim merge_dim(const ir::Dim& derived, const ir::Dim& declared) {
  if (derived.is_static() && declared.is_static())
    return derived.value == declared.value ? derived : ir::Dim();
  if (derived.is_static()) return derived;
  if (declared.is_static()) return declared;
  if (derived.is_symbolic()) return derived;
  return declared;
}

}  // namespace

std::optional<ir::Type> unite_types(const ir::Type& a, const ir::Type& b) {
  if (a.is_unknown() || b.is_unknown()) return ir::Type{};
  if (a.is_optional() || b.is_optional()) {
    const ir::Type& ea = a.is_optional() ? (a.element ? *a.element : ir::Type{}) : a;
    const ir::Type& eb = b.is_optional() ? (b.element ? *b.element : ir::Type{}) : b;
    auto e = unite_types(ea, eb);
    if (!e) return std::nullopt;
    return ir::Type::optional(std::move(*e));
  }
  if (a.kind != b.kind) return std::nullopt;
  if (a.is_sequence()) {
    auto e = unite_types(a.element ? *a.element : ir::Type{}, b.element ? *b.element : ir::Type{});
    if (!e) return std::nullopt;
    return ir::Type::sequence(std::move(*e));
  }
  ir::DType dtype = a.dtype == ir::DType::Undefined ? b.dtype : a.dtype;
  if (a.dtype != ir::DType::Undefined && b.dtype != ir::DType::Undefined && a.dtype != b.dtype)
    return std::nullopt;
  if (!a.shape || !b.shape || a.shape->size() != b.shape->size())
    return ir::Type::tensor(dtype, std::nullopt);
  return ir::Type::tensor(dtype, unite_shapes(*a.shape, *b.shape));
}

std::optional<ir::Type> merge_declared_type(const ir::Type& derived, const ir::Type& declared) {
  if (declared.is_unknown()) return derived;
  if (derived.is_unknown()) return declared;
  if (declared.is_optional() && !derived.is_optional()) {
    auto e = merge_declared_type(derived, declared.element ? *declared.element : ir::Type{});
    if (!e) return std::nullopt;
    return ir::Type::optional(std::move(*e));
  }
  if (derived.kind != declared.kind) return std::nullopt;
  if (derived.is_sequence() || derived.is_optional()) {
    auto e = merge_declared_type(derived.element ? *derived.element : ir::Type{},
                                 declared.element ? *declared.element : ir::Type{});
    if (!e) return std::nullopt;
    return derived.is_sequence() ? ir::Type::sequence(std::move(*e))
                                 : ir::Type::optional(std::move(*e));
  }
  if (derived.dtype != ir::DType::Undefined && declared.dtype != ir::DType::Undefined &&
      derived.dtype != declared.dtype)
    return std::nullopt;
  ir::DType dtype = derived.dtype == ir::DType::Undefined ? declared.dtype : derived.dtype;
  if (!derived.shape) return ir::Type::tensor(dtype, declared.shape);
  if (!declared.shape) return ir::Type::tensor(dtype, derived.shape);
  if (derived.shape->size() != declared.shape->size()) return ir::Type::tensor(dtype, std::nullopt);
  ir::Shape shape(derived.shape->size());
  for (size_t i = 0; i < shape.size(); ++i)
    shape[i] = merge_dim((*derived.shape)[i], (*declared.shape)[i]);
  return ir::Type::tensor(dtype, std::move(shape));
}

bool same_type(const ir::Type& a, const ir::Type& b) {
  if (a.kind != b.kind) return false;
  if (a.is_sequence() || a.is_optional()) {
    if (!a.element || !b.element) return !a.element && !b.element;
    return same_type(*a.element, *b.element);
  }
  return a.dtype == b.dtype && a.shape == b.shape;
}

namespace {

// The element type of sequence input i; unknown when the input's type is not known.
ir::Type sequence_element(const InferContext& ctx, size_t i) {
  const ir::Type& t = ctx.input_type(i);
  if (t.is_unknown()) return {};
  if (!t.is_sequence())
    ctx.fail("input {} '{}' must be a sequence, got {}", i, ctx.node().input(i)->name(),
             t.to_string());
  return t.element ? *t.element : ir::Type{};
}

// A position input: int32 or int64 holding one element (rank 0; [1] is accepted too).
void check_position(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return;
  require_dtype(ctx, i, {ir::DType::Int32, ir::DType::Int64});
  const ir::Type& t = ctx.input_type(i);
  bool one_element =
      t.rank() == 0 || (t.rank() == 1 && (!(*t.shape)[0].is_static() || (*t.shape)[0].value == 1));
  if (t.has_rank() && !one_element)
    ctx.fail("position '{}' must be a scalar, got shape {}", ctx.node().input(i)->name(),
             ir::shape_to_string(*t.shape));
}

void infer_sequence_construct(InferContext& ctx) {
  ir::Type element = ctx.input_tensor(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    auto u = unite_types(element, ctx.input_tensor(i));
    if (!u)
      ctx.fail("input {} has type {}, but earlier inputs are {}; a sequence holds one dtype", i,
               ctx.input_type(i).to_string(), element.to_string());
    element = std::move(*u);
  }
  ctx.set_output(0, ir::Type::sequence(std::move(element)));
}

void infer_sequence_empty(InferContext& ctx) {
  int64_t code = ctx.node().attr_int("dtype", static_cast<int64_t>(ir::DType::Float32));
  if (code < 0 || code > static_cast<int64_t>(ir::DType::BFloat16) ||
      !ir::dtype_is_known(static_cast<ir::DType>(code)))
    ctx.fail("attribute 'dtype' {} is not a supported tensor dtype", code);
  auto dtype = static_cast<ir::DType>(code);
  ctx.set_output(0, ir::Type::sequence(ir::Type::tensor(dtype)));
}

void infer_sequence_at(InferContext& ctx) {
  ir::Type element = sequence_element(ctx, 0);
  check_position(ctx, 1);
  ctx.set_output(0, std::move(element));
}

void infer_sequence_insert(InferContext& ctx) {
  ir::Type element = sequence_element(ctx, 0);
  const ir::Type& tensor = ctx.input_tensor(1);
  check_position(ctx, 2);
  if (element.is_unknown()) {
    ctx.set_output(0, ir::Type::sequence(ir::Type::tensor(tensor.dtype)));
    return;
  }
  auto u = unite_types(element, tensor);
  if (!u || !u->is_tensor())
    ctx.fail("cannot insert a {} into a sequence of {}", tensor.to_string(), element.to_string());
  ctx.set_output(0, ir::Type::sequence(std::move(*u)));
}

void infer_sequence_erase(InferContext& ctx) {
  ir::Type element = sequence_element(ctx, 0);
  check_position(ctx, 1);
  ctx.set_output(0, ir::Type::sequence(std::move(element)));
}

void infer_sequence_length(InferContext& ctx) {
  sequence_element(ctx, 0);
  ctx.set_output(0, ir::Type::tensor(ir::DType::Int64, ir::Shape{}));
}

// The size every chunk of a SplitToSequence has along the axis, when it is known to be one
// size; unknown otherwise.
ir::Dim split_chunk_dim(const InferContext& ctx, const ir::Dim& axis_dim) {
  const ir::Tensor* split = ctx.input_constant(1);
  if (!split) return {};
  if (split->dtype() != ir::DType::Int32 && split->dtype() != ir::DType::Int64)
    ctx.fail("input 'split' must be int32 or int64, got {}", ir::dtype_name(split->dtype()));
  std::vector<int64_t> sizes = split->to_int_vector();
  if (split->rank() == 0) {
    if (sizes[0] <= 0) ctx.fail("scalar 'split' must be positive, got {}", sizes[0]);
    if (!axis_dim.is_static()) return {};
    if (axis_dim.value <= sizes[0]) return axis_dim;
    return axis_dim.value % sizes[0] == 0 ? ir::Dim(sizes[0]) : ir::Dim();
  }
  if (split->rank() != 1) ctx.fail("'split' must be a scalar or 1-D, got rank {}", split->rank());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("'split' has a negative size {}", s);
    total = ir::checked_add(total, s, "'split' sizes");
  }
  if (axis_dim.is_static() && total != axis_dim.value)
    ctx.fail("'split' sizes sum to {}, but the split axis has size {}", total, axis_dim.value);
  if (sizes.empty()) return {};
  for (int64_t s : sizes)
    if (s != sizes[0]) return {};
  return ir::Dim(sizes[0]);
}

void infer_split_to_sequence(InferContext& ctx) {
  const ir::Type& in = ctx.input_tensor(0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  int64_t keepdims = ctx.node().attr_int("keepdims", 1);
  if (keepdims != 0 && keepdims != 1)
    ctx.fail("attribute 'keepdims' must be 0 or 1, got {}", keepdims);
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, {ir::DType::Int32, ir::DType::Int64});
    const ir::Type& st = ctx.input_type(1);
    if (st.has_rank() && st.rank() > 1)
      ctx.fail("'split' must be a scalar or 1-D, got rank {}", st.rank());
  }
  if (!in.has_rank()) {
    ctx.set_output(0, ir::Type::sequence(ir::Type::tensor(in.dtype)));
    return;
  }
  if (in.rank() == 0) ctx.fail("input must have rank >= 1 to be split");
  size_t a = static_cast<size_t>(normalize_axis(ctx, axis, in.rank()));
  ir::Shape shape = *in.shape;
  if (!ctx.has_input(1)) {
    if (keepdims)
      shape[a] = ir::Dim(int64_t{1});
    else
      shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(a));
  } else {
    shape[a] = split_chunk_dim(ctx, shape[a]);
  }
  ctx.set_output(0, ir::Type::sequence(ir::Type::tensor(in.dtype, std::move(shape))));
}

void infer_concat_from_sequence(InferContext& ctx) {
  ir::Type element = sequence_element(ctx, 0);
  int64_t axis = ctx.node().attr_int("axis");
  int64_t new_axis = ctx.node().attr_int("new_axis", 0);
  if (new_axis != 0 && new_axis != 1)
    ctx.fail("attribute 'new_axis' must be 0 or 1, got {}", new_axis);
  if (!element.is_unknown() && !element.is_tensor())
    ctx.fail("sequence elements must be tensors, got {}", element.to_string());
  if (!element.has_rank()) {
    ctx.set_output(0, ir::Type::tensor(element.dtype));
    return;
  }
  ir::Shape shape = *element.shape;
  if (new_axis) {
    size_t a = static_cast<size_t>(normalize_axis(ctx, axis, element.rank() + 1));
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(a), ir::Dim());
  } else {
    if (element.rank() == 0) ctx.fail("cannot concatenate scalars without 'new_axis'");
    shape[static_cast<size_t>(normalize_axis(ctx, axis, element.rank()))] = ir::Dim();
  }
  ctx.set_output(0, ir::Type::tensor(element.dtype, std::move(shape)));
}

void infer_optional(InferContext& ctx) {
  const ir::Attribute* attr = ctx.node().find_attribute("type");
  if (attr && attr->kind != ir::Attribute::Kind::TypeProto)
    ctx.fail("attribute 'type' has type {}, expected type", ir::attribute_kind_name(attr->kind));
  if (!ctx.has_input(0)) {
    if (!attr) ctx.fail("needs an input or the 'type' attribute");
    if (attr->tp.is_optional()) ctx.fail("attribute 'type' may not itself be optional");
    ctx.set_output(0, ir::Type::optional(attr->tp));
    return;
  }
  const ir::Type& in = ctx.input_type(0);
  if (in.is_optional()) ctx.fail("input must be a tensor or a sequence, got {}", in.to_string());
  if (!attr) {
    ctx.set_output(0, ir::Type::optional(in));
    return;
  }
  auto merged = merge_declared_type(in, attr->tp);
  if (!merged)
    ctx.fail("input type {} does not match attribute 'type' {}", in.to_string(),
             attr->tp.to_string());
  ctx.set_output(0, ir::Type::optional(std::move(*merged)));
}

void infer_optional_has_element(InferContext& ctx) {
  ctx.set_output(0, ir::Type::tensor(ir::DType::Bool, ir::Shape{}));
}

void infer_optional_get_element(InferContext& ctx) {
  const ir::Type& in = ctx.input_type(0);
  if (in.is_optional()) {
    ctx.set_output(0, in.element ? *in.element : ir::Type{});
    return;
  }
  ctx.set_output(0, in);
}

}  // namespace

void register_sequence_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::SequenceConstruct, 1, -1, 1, 1, infer_sequence_construct});
  r.add(OpSchema{OpKind::SequenceEmpty, 0, 0, 1, 1, infer_sequence_empty});
  r.add(OpSchema{OpKind::SequenceAt, 2, 2, 1, 1, infer_sequence_at});
  r.add(OpSchema{OpKind::SequenceInsert, 2, 3, 1, 1, infer_sequence_insert});
  r.add(OpSchema{OpKind::SequenceErase, 1, 2, 1, 1, infer_sequence_erase});
  r.add(OpSchema{OpKind::SequenceLength, 1, 1, 1, 1, infer_sequence_length});
  r.add(OpSchema{OpKind::SplitToSequence, 1, 2, 1, 1, infer_split_to_sequence});
  r.add(OpSchema{OpKind::ConcatFromSequence, 1, 1, 1, 1, infer_concat_from_sequence});
  r.add(OpSchema{OpKind::Optional, 0, 1, 1, 1, infer_optional});
  r.add(OpSchema{OpKind::OptionalHasElement, 0, 1, 1, 1, infer_optional_has_element});
  r.add(OpSchema{OpKind::OptionalGetElement, 1, 1, 1, 1, infer_optional_get_element});
}

}  // namespace switchyard::ops
