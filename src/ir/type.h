// Static types of graph values: tensors with symbolic shapes, sequences and optionals.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace switchyard::ir {

/// One dimension: a known size, a named symbol ("batch"), or unknown (neither).
struct Dim {
  int64_t value = -1;
  std::string symbol;

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit from a size
  explicit Dim(std::string s) : symbol(std::move(s)) {}
  bool is_static() const { return value >= 0; }
  bool is_symbolic() const { return value < 0 && !symbol.empty(); }
  bool is_unknown() const { return value < 0 && symbol.empty(); }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  /// "7", "batch" or "?".
  std::string to_string() const;
};

/// A shape of symbolic dims.
using Shape = std::vector<Dim>;
std::string shape_to_string(const Shape& shape);  ///< "[batch,3,224,224]"
/// Concrete dims if every dim is static.
std::optional<std::vector<int64_t>> static_dims(const Shape& shape);
Shape make_shape(const std::vector<int64_t>& dims);

/// The type of a graph value.
struct Type {
  enum class Kind { Unknown, Tensor, Sequence, Optional };
  Kind kind = Kind::Unknown;
  DType dtype = DType::Undefined;       ///< tensor element type
  std::optional<Shape> shape;           ///< tensor shape; nullopt = rank unknown
  std::shared_ptr<const Type> element;  ///< for Sequence and Optional

  static Type tensor(DType dtype, std::optional<Shape> shape = std::nullopt);
  static Type sequence(Type element);
  static Type optional(Type element);

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  bool is_optional() const { return kind == Kind::Optional; }
  bool is_unknown() const { return kind == Kind::Unknown; }
  bool has_rank() const { return is_tensor() && shape.has_value(); }
  int64_t rank() const { return shape ? static_cast<int64_t>(shape->size()) : -1; }
  /// "float[batch,3,224,224]", "seq(int64[?])", "optional(float[2])".
  std::string to_string() const;
};

/// A value small enough to be a shape: an int32/int64 tensor of rank <= 1 with at most 64
/// elements (what placement keeps on the host as a shape computation).
bool is_shape_like(const Type& t);

}  // namespace switchyard::ir
