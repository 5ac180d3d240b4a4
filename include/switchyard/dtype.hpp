// switchyard/dtype.hpp — element types. Values match ONNX TensorProto.DataType.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "switchyard/export.hpp"

namespace switchyard {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
};

/// Bytes per element (String: sizeof(std::string); Undefined: 0).
SWITCHYARD_API size_t dtype_size(DType dtype);
/// Lower-case name as the ONNX spec spells it: "float", "int64", "bfloat16", ...
SWITCHYARD_API std::string_view dtype_name(DType dtype);
/// True for the dtypes this runtime knows (everything but complex and undefined).
SWITCHYARD_API bool dtype_is_known(DType dtype);
SWITCHYARD_API bool dtype_is_float(DType dtype);    ///< f16, bf16, f32, f64
SWITCHYARD_API bool dtype_is_integer(DType dtype);  ///< signed or unsigned integers (not bool)
SWITCHYARD_API bool dtype_is_signed(DType dtype);   ///< floats and signed integers

/// IEEE half precision, stored as bits.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f);
  operator float() const;  // NOLINT: implicit widening is what users of half expect
};

/// bfloat16, stored as bits (round to nearest even on conversion).
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f);
  operator float() const;  // NOLINT
};

SWITCHYARD_API float half_to_float(uint16_t bits);
SWITCHYARD_API uint16_t float_to_half(float f);
SWITCHYARD_API float bfloat16_to_float(uint16_t bits);
SWITCHYARD_API uint16_t float_to_bfloat16(float f);

inline Float16::Float16(float f) : bits(float_to_half(f)) {}
inline Float16::operator float() const { return half_to_float(bits); }
inline BFloat16::BFloat16(float f) : bits(float_to_bfloat16(f)) {}
inline BFloat16::operator float() const { return bfloat16_to_float(bits); }

/// Maps a C++ element type to its DType.
template <typename T>
struct DTypeOf;
#define SY_DTYPE_OF(T, D)                    \
  template <>                                \
  struct DTypeOf<T> {                        \
    static constexpr DType value = DType::D; \
  };
SY_DTYPE_OF(float, Float32)
SY_DTYPE_OF(double, Float64)
SY_DTYPE_OF(Float16, Float16)
SY_DTYPE_OF(BFloat16, BFloat16)
SY_DTYPE_OF(int8_t, Int8)
SY_DTYPE_OF(int16_t, Int16)
SY_DTYPE_OF(int32_t, Int32)
SY_DTYPE_OF(int64_t, Int64)
SY_DTYPE_OF(uint8_t, UInt8)
SY_DTYPE_OF(uint16_t, UInt16)
SY_DTYPE_OF(uint32_t, UInt32)
SY_DTYPE_OF(uint64_t, UInt64)
SY_DTYPE_OF(bool, Bool)
#undef SY_DTYPE_OF

}  // namespace switchyard
