// Tensor (the public switchyard::Tensor) and Datum: a runtime value of any ONNX kind (tensor,
// sequence of tensors, or an empty optional).
#pragma once

#include <vector>

#include "ir/dtype.h"
#include "switchyard/tensor.hpp"

namespace switchyard::ir {

using switchyard::checked_nbytes;
using switchyard::checked_numel;
using switchyard::shape_to_string;
using switchyard::Tensor;

/// A runtime value of any ONNX kind.
struct Datum {
  enum class Kind { Empty, Tensor, Sequence };
  Kind kind = Kind::Empty;  ///< Empty is an optional without a value
  Tensor tensor;
  std::vector<Tensor> sequence;
  /// DType of the elements when kind == Sequence (sequences may be empty).
  DType sequence_dtype = DType::Undefined;

  Datum() = default;
  Datum(Tensor t) : kind(Kind::Tensor), tensor(std::move(t)) {}  // NOLINT: implicit by design
  static Datum make_sequence(DType dtype, std::vector<Tensor> items) {
    Datum d;
    d.kind = Kind::Sequence;
    d.sequence_dtype = dtype;
    d.sequence = std::move(items);
    return d;
  }
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  bool is_empty() const { return kind == Kind::Empty; }
};

}  // namespace switchyard::ir
