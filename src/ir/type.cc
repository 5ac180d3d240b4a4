#include "ir/type.h"

#include <fmt/format.h>

namespace switchyard::ir {

std::string Dim::to_string() const {
  if (value >= 0) return std::to_string(value);
  if (!symbol.empty()) return symbol;
  return "?";
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += shape[i].to_string();
  }
  return s + "]";
}

std::optional<std::vector<int64_t>> static_dims(const Shape& shape) {
  std::vector<int64_t> dims;
  dims.reserve(shape.size());
  for (const Dim& d : shape) {
    if (!d.is_static()) return std::nullopt;
    dims.push_back(d.value);
  }
  return dims;
}

Shape make_shape(const std::vector<int64_t>& dims) { return Shape(dims.begin(), dims.end()); }

Type Type::tensor(DType dtype, std::optional<Shape> shape) {
  Type t;
  t.kind = Kind::Tensor;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

Type Type::sequence(Type element) {
  Type t;
  t.kind = Kind::Sequence;
  t.element = std::make_shared<const Type>(std::move(element));
  return t;
}

Type Type::optional(Type element) {
  Type t;
  t.kind = Kind::Optional;
  t.element = std::make_shared<const Type>(std::move(element));
  return t;
}

bool is_shape_like(const Type& t) {
  if (!t.is_tensor() || (t.dtype != DType::Int64 && t.dtype != DType::Int32) || !t.shape ||
      t.shape->size() > 1)
    return false;
  return t.shape->empty() || ((*t.shape)[0].is_static() && (*t.shape)[0].value <= 64);
}

std::string Type::to_string() const {
  switch (kind) {
    case Kind::Unknown:
      return "?";
    case Kind::Tensor:
      return fmt::format("{}{}", dtype_name(dtype), shape ? shape_to_string(*shape) : "[...]");
    case Kind::Sequence:
      return fmt::format("seq({})", element ? element->to_string() : "?");
    case Kind::Optional:
      return fmt::format("optional({})", element ? element->to_string() : "?");
  }
  return "?";
}

}  // namespace switchyard::ir
