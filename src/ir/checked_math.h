// Overflow-checked integer arithmetic: the one helper for every product or sum of dims and
// attribute values taken from a model (shape inference, attribute checks, kernels). A model can
// hold any int64, so `a * b` on two of its values is never written bare.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ir/check.h"

namespace switchyard::ir {

/// a * b; throws InvalidModel "<what>: a x b overflows int64" when it does not fit.
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    SY_THROW(InvalidModel, "{}: {} x {} overflows int64", what, a, b);
  return r;
}

/// a + b; throws InvalidModel "<what>: a + b overflows int64" when it does not fit.
inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    SY_THROW(InvalidModel, "{}: {} + {} overflows int64", what, a, b);
  return r;
}

/// a - b; throws InvalidModel when it does not fit.
inline int64_t checked_sub(int64_t a, int64_t b, std::string_view what) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r))
    SY_THROW(InvalidModel, "{}: {} - {} overflows int64", what, a, b);
  return r;
}

/// The product of `values` (1 when empty); throws InvalidModel naming `what` on overflow.
inline int64_t checked_product(const std::vector<int64_t>& values, std::string_view what) {
  int64_t p = 1;
  for (int64_t v : values) p = checked_mul(p, v, what);
  return p;
}

/// A dim computed in floating point (Resize scales): floor(v) as an int64, or InvalidModel
/// naming `what` when v is NaN, negative or too large (a bare cast would be undefined).
inline int64_t checked_floor_to_dim(double v, std::string_view what) {
  double f = std::floor(v);
  if (!(f >= 0 && f < 9.2e18)) SY_THROW(InvalidModel, "{}: {} is not a valid dimension", what, v);
  return static_cast<int64_t>(f);
}

/// Largest rank a value may have. Shape inputs (Reshape, Expand, ConstantOfShape, Unsqueeze's
/// axes, ...) longer than this are refused before anything is sized by their declared length.
inline constexpr int64_t kMaxRank = 64;

}  // namespace switchyard::ir
