// switchyard/tensor.hpp — a typed, shaped view of host memory with shared ownership.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/dtype.hpp"

namespace switchyard {

/// Number of elements of a concrete shape; throws InvalidModel on a negative dim or an int64
/// overflow (shapes come from untrusted files).
SWITCHYARD_API int64_t checked_numel(const std::vector<int64_t>& shape);
/// Byte size for `numel` elements of `dtype`, overflow-checked.
SWITCHYARD_API size_t checked_nbytes(DType dtype, int64_t numel);
/// "1x3x224x224" ("scalar" for rank 0).
SWITCHYARD_API std::string shape_to_string(const std::vector<int64_t>& shape);

class SWITCHYARD_API Tensor {
 public:
  Tensor() = default;
  /// Allocates zero-initialised host memory (strings: empty strings).
  Tensor(DType dtype, std::vector<int64_t> shape);
  /// Wraps memory owned by `owner` (kept alive as long as the tensor or a copy lives).
  static Tensor wrap(DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> owner,
                     void* data);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DType::Undefined; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  /// Same storage, new shape with the same element count (no copy).
  Tensor reshaped(std::vector<int64_t> shape) const;
  /// Deep copy into fresh host memory.
  Tensor clone() const;
  /// The owner of the storage (for aliasing checks and lifetimes).
  const std::shared_ptr<void>& storage() const { return storage_; }

  /// Reads element i (any numeric dtype or bool) as double / int64.
  double scalar_as_double(int64_t i = 0) const;
  int64_t scalar_as_int(int64_t i = 0) const;
  /// All elements as int64 (for shape-like inputs: integer dtypes only).
  std::vector<int64_t> to_int_vector() const;

 private:
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

/// A value of any ONNX kind a model takes or returns: a tensor, a sequence of tensors, or an
/// absent optional (Empty).
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

}  // namespace switchyard
