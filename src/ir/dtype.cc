#include "ir/dtype.h"

#include <string>

namespace switchyard {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32:
      return 4;
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
    case DType::Complex64:
      return 8;
    case DType::Float16:
    case DType::BFloat16:
    case DType::Int16:
    case DType::UInt16:
      return 2;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      return 1;
    case DType::Complex128:
      return 16;
    case DType::String:
      return sizeof(std::string);
    case DType::Undefined:
      return 0;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Undefined:
      return "undefined";
    case DType::Float32:
      return "float";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::UInt16:
      return "uint16";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::String:
      return "string";
    case DType::Bool:
      return "bool";
    case DType::Float16:
      return "float16";
    case DType::Float64:
      return "double";
    case DType::UInt32:
      return "uint32";
    case DType::UInt64:
      return "uint64";
    case DType::Complex64:
      return "complex64";
    case DType::Complex128:
      return "complex128";
    case DType::BFloat16:
      return "bfloat16";
  }
  return "invalid";
}

bool dtype_is_known(DType d) {
  return d != DType::Undefined && d != DType::Complex64 && d != DType::Complex128 &&
         static_cast<int>(d) >= 1 && static_cast<int>(d) <= 16;
}
bool dtype_is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}
bool dtype_is_integer(DType d) {
  switch (d) {
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
      return true;
    default:
      return false;
  }
}
bool dtype_is_signed(DType d) {
  return dtype_is_float(d) || d == DType::Int8 || d == DType::Int16 || d == DType::Int32 ||
         d == DType::Int64;
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u));
  }
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {  // subnormal or zero in half
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t exp = absx >> 23;
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;  // half subnormal = mant * 2^(exp - 150 + 24)
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    uint32_t val = mant >> shift;
    if (rem > half || (rem == half && (val & 1))) ++val;
    return static_cast<uint16_t>(sign | val);
  }
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t mant = absx & 0x7fffffu;
  uint32_t val = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (val & 1))) ++val;
  return static_cast<uint16_t>(sign | val);
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace switchyard
