// Transcendental functions for the cpu kernels' own loops, written so they vectorize: exp, the
// logistic sigmoid and tanh for float, as scalar functions a loop can inline (exp_float) and on
// explicit vectors (Vec8 for AVX2, Vec16 inside functions built for AVX-512; see cpu_isa.h).
// Cephes' expf polynomial, relative error below 1e-7; NaN stays NaN,
// +-inf go to the functions' limits.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

namespace switchyard::cpu {

// Vectors pass only between always-inline functions here (hence -Wpsabi off, to the end).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

// cond ? a : b on the bits, so the compiler keeps it a blend instead of a branch (a branch
// around floating-point math stops loops from vectorizing under -ftrapping-math).
inline float blend(bool cond, float a, float b) {
  int32_t mask = -static_cast<int32_t>(cond);
  return std::bit_cast<float>((std::bit_cast<int32_t>(a) & mask) |
                              (std::bit_cast<int32_t>(b) & ~mask));
}

// exp(c) for c already in [-86.5, 88.7], on a float or on a vector of them (V); I is the
// matching integer type (int32_t, or the vector's comparison mask). exp_float and vexp clamp
// and patch the ends around it.
template <typename V, typename I>
[[gnu::always_inline]] inline V exp_in_range(V c) {
  // Adding 1.5 * 2^23 rounds to an integer held in the low mantissa bits.
  V t = c * 1.44269504088896341f + 12582912.0f;
  V fx = t - 12582912.0f;
  I n = std::bit_cast<I>(t) - 0x4B400000;
  V r = c - fx * 0.693359375f + fx * 2.12194440e-4f;
  V z = r * r;
  V y =
      ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r + 4.1665795894e-2f) *
           r +
       1.6666665459e-1f) *
          r +
      5.0000001201e-1f;
  y = y * z + r + 1.0f;
  // 2^n as two factors so n = 128 does not overflow the exponent field.
  return y * std::bit_cast<V>((n + 126) << 23) * 2.0f;
}

// exp(x) for float without a library call, so loops over it vectorize: Cephes' expf
// polynomial after rounding x / ln 2 to an integer (relative error below 1e-7). Results below
// 2.7e-38 flush to 0; NaN stays NaN.
inline float exp_float(float x) {
  float c = blend(__builtin_isless(x, -86.5f), -86.5f, x);
  c = blend(__builtin_isgreater(c, 88.7f), 88.7f, c);
  float y = exp_in_range<float, int32_t>(c);
  y = blend(__builtin_isless(x, -86.5f), 0.0f, y);
  y = blend(__builtin_isgreater(x, 88.7f), std::numeric_limits<float>::infinity(), y);
  return blend(__builtin_isunordered(x, x), x, y);
}

// Float vectors as GCC/Clang vector types: Vec8 is one AVX2 register, Vec16 one AVX-512
// register (use Vec16 only inside functions built for AVX-512: cpu_isa.h; without it the
// compiler splits it badly). The functions below are templates over either, always inline, so a
// vector never passes by value across a call (hence -Wpsabi off).
using Vec8 = float __attribute__((vector_size(32)));
using Vec16 = float __attribute__((vector_size(64)));

template <typename V>
constexpr int lanes_of = static_cast<int>(sizeof(V) / sizeof(float));

template <typename V>
[[gnu::always_inline]] inline V vsplat(float v) {
  V r;
  for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(float)); ++i) r[i] = v;
  return r;
}
template <typename V>
[[gnu::always_inline]] inline V vload(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename V>
[[gnu::always_inline]] inline void vstore(float* p, V v) {
  std::memcpy(p, &v, sizeof(v));
}
// mask ? a : b, lane by lane (mask lanes all ones or all zeros, as comparisons give).
template <typename V, typename M>
[[gnu::always_inline]] inline V vselect(M mask, V a, V b) {
  return std::bit_cast<V>((std::bit_cast<M>(a) & mask) | (std::bit_cast<M>(b) & ~mask));
}

// exp_float on every lane.
template <typename V>
[[gnu::always_inline]] inline V vexp(V x) {
  using M = decltype(x < x);
  const M low = x < -86.5f;
  const M high = x > 88.7f;
  const M nan = x != x;
  V c = vselect(low, vsplat<V>(-86.5f), x);
  c = vselect(high, vsplat<V>(88.7f), c);
  V y = exp_in_range<V, M>(c);
  y = vselect(low, vsplat<V>(0.0f), y);
  y = vselect(high, vsplat<V>(std::numeric_limits<float>::infinity()), y);
  return vselect(nan, x, y);
}

// 1 / (1 + exp(-x)): 0 and 1 at the ends, NaN for NaN.
template <typename V>
[[gnu::always_inline]] inline V vsigmoid(V x) {
  return 1.0f / (1.0f + vexp(-x));
}

// tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)); absolute error below 2e-7, exactly +-1 beyond
// |x| = 44, NaN for NaN.
template <typename V>
[[gnu::always_inline]] inline V vtanh(V x) {
  using M = decltype(x < x);
  const M sign = std::bit_cast<M>(x) & static_cast<int32_t>(0x80000000u);
  const V ax = std::bit_cast<V>(std::bit_cast<M>(x) & 0x7FFFFFFF);
  const V e = vexp(ax + ax);
  const V m = 1.0f - 2.0f / (e + 1.0f);
  return std::bit_cast<V>(std::bit_cast<M>(m) | sign);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace switchyard::cpu
