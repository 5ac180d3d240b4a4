#include "ir/tensor.h"

#include <cstring>
#include <limits>

#include "ir/check.h"

namespace switchyard {

int64_t checked_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    SY_CHECK(d >= 0, InvalidModel, "negative dimension {} in shape {}", d, fmt::join(shape, "x"));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      SY_THROW(InvalidModel, "shape {} has more elements than int64 can count",
               fmt::join(shape, "x"));
    }
    n *= d;
  }
  return n;
}

size_t checked_nbytes(DType dtype, int64_t numel) {
  size_t es = dtype_size(dtype);
  SY_CHECK(numel >= 0, InvalidModel, "negative element count {}", numel);
  if (es != 0 && static_cast<uint64_t>(numel) > std::numeric_limits<size_t>::max() / 2 / es) {
    SY_THROW(InvalidModel, "tensor of {} {} elements is too large", numel, dtype_name(dtype));
  }
  return static_cast<size_t>(numel) * es;
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  return fmt::format("{}", fmt::join(shape, "x"));
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)), numel_(checked_numel(shape_)) {
  SY_CHECK(dtype_is_known(dtype), Unsupported, "tensor dtype {} is not supported",
           dtype_name(dtype));
  if (dtype == DType::String) {
    auto strings = std::shared_ptr<std::string[]>(new std::string[std::max<int64_t>(numel_, 1)]);
    data_ = strings.get();
    storage_ = std::shared_ptr<void>(strings, strings.get());
    return;
  }
  size_t bytes = std::max<size_t>(checked_nbytes(dtype, numel_), 1);
  // 64-byte alignment suits AVX-512 and oneDNN.
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  SY_CHECK(p != nullptr, OutOfMemory, "could not allocate {} bytes for a {} tensor of shape {}",
           bytes, dtype_name(dtype), shape_to_string(shape_));
  std::memset(p, 0, bytes);
  storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  data_ = p;
}

Tensor Tensor::wrap(DType dtype, std::vector<int64_t> shape, std::shared_ptr<void> owner,
                    void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = checked_numel(t.shape_);
  t.storage_ = std::move(owner);
  t.data_ = data;
  return t;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  Tensor t = *this;
  t.numel_ = checked_numel(shape);
  SY_ASSERT(t.numel_ == numel_);
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (dtype_ == DType::String) {
    for (int64_t i = 0; i < numel_; ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (numel_ > 0) {
    std::memcpy(t.data_, data_, nbytes());
  }
  return t;
}

template <typename F>
static auto visit_numeric(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      return f(Float16{});
    case DType::BFloat16:
      return f(BFloat16{});
    case DType::Int8:
      return f(int8_t{});
    case DType::Int16:
      return f(int16_t{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::UInt16:
      return f(uint16_t{});
    case DType::UInt32:
      return f(uint32_t{});
    case DType::UInt64:
      return f(uint64_t{});
    case DType::Bool:
      return f(bool{});
    default:
      SY_THROW(Unsupported, "dtype {} is not numeric", dtype_name(dtype));
  }
}

double Tensor::scalar_as_double(int64_t i) const {
  SY_ASSERT(i >= 0 && i < numel_);
  return visit_numeric(dtype_, [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(static_cast<const T*>(data_)[i]);
  });
}

int64_t Tensor::scalar_as_int(int64_t i) const {
  SY_ASSERT(i >= 0 && i < numel_);
  return visit_numeric(dtype_, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      return static_cast<int64_t>(static_cast<float>(static_cast<const T*>(data_)[i]));
    } else {
      return static_cast<int64_t>(static_cast<const T*>(data_)[i]);
    }
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  SY_CHECK(dtype_is_integer(dtype_), InvalidModel, "expected an integer tensor, got {}",
           dtype_name(dtype_));
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = scalar_as_int(i);
  return out;
}

}  // namespace switchyard
