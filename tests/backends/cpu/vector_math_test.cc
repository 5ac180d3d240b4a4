// The cpu kernels' vector exp, sigmoid and tanh (vector_math.h) against libm over a sweep of
// values, NaN and the infinities, for the AVX2 vector (Vec8) and, where this CPU runs the
// AVX-512 build, for Vec16 inside a function compiled for it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/vector_math.h"

// Vectors pass only between always-inline functions (vector_math.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace switchyard::cpu {
namespace {

std::vector<float> sweep() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1e-30f,
                          -1e-30f,
                          1e-7f,
                          -1e-7f,
                          86.4f,
                          -86.4f,
                          88.6f,
                          88.8f,
                          -87.0f,
                          -104.0f,
                          1e10f,
                          -1e10f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  for (float x = -30.0f; x <= 30.0f; x += 0.0137f) v.push_back(x);
  while (v.size() % 16) v.push_back(0.5f);
  return v;
}

template <typename V>
void apply_all(const std::vector<float>& in, std::vector<float>& e, std::vector<float>& s,
               std::vector<float>& t) {
  constexpr int L = lanes_of<V>;
  for (size_t i = 0; i < in.size(); i += L) {
    const V x = vload<V>(in.data() + i);
    vstore(e.data() + i, vexp(x));
    vstore(s.data() + i, vsigmoid(x));
    vstore(t.data() + i, vtanh(x));
  }
}

#if SY_HAVE_AVX512_BUILD
SY_TARGET_AVX512 void apply_all_avx512(const std::vector<float>& in, std::vector<float>& e,
                                       std::vector<float>& s, std::vector<float>& t) {
  apply_all<Vec16>(in, e, s, t);
}
#endif

void expect_close(const std::vector<float>& in, const std::vector<float>& e,
                  const std::vector<float>& s, const std::vector<float>& t) {
  for (size_t i = 0; i < in.size(); ++i) {
    const double x = in[i];
    SCOPED_TRACE("x = " + std::to_string(x));
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(e[i]) && std::isnan(s[i]) && std::isnan(t[i]));
      continue;
    }
    const double ref_e = std::exp(x), ref_s = 1.0 / (1.0 + std::exp(-x)), ref_t = std::tanh(x);
    if (ref_e > std::numeric_limits<float>::max()) {
      EXPECT_TRUE(std::isinf(e[i]) && e[i] > 0);
    } else if (ref_e < 2.7e-38) {
      EXPECT_NEAR(e[i], 0.0, 2.7e-38);
    } else {
      EXPECT_NEAR(e[i], ref_e, 2e-7 * ref_e);
    }
    EXPECT_NEAR(s[i], ref_s, 2e-7 * ref_s + 1e-38);
    EXPECT_NEAR(t[i], ref_t, 2e-7);
    EXPECT_EQ(std::signbit(t[i]), std::signbit(ref_t));
    EXPECT_GE(s[i], 0.0f);
    EXPECT_LE(s[i], 1.0f);
    EXPECT_LE(std::fabs(t[i]), 1.0f);
  }
}

TEST(VectorMath, Avx2VectorsMatchLibm) {
  const std::vector<float> in = sweep();
  std::vector<float> e(in.size()), s(in.size()), t(in.size());
  apply_all<Vec8>(in, e, s, t);
  expect_close(in, e, s, t);
}

TEST(VectorMath, Avx512VectorsMatchLibm) {
#if SY_HAVE_AVX512_BUILD
  if (!use_avx512()) GTEST_SKIP() << "this CPU (or SWITCHYARD_CPU_ISA) runs the AVX2 build only";
  const std::vector<float> in = sweep();
  std::vector<float> e(in.size()), s(in.size()), t(in.size());
  apply_all_avx512(in, e, s, t);
  expect_close(in, e, s, t);
#else
  GTEST_SKIP() << "no AVX-512 build on this target";
#endif
}

TEST(VectorMath, IsaSwitchIsReadAndNamed) {
  const char* name = kernel_isa_name();
  EXPECT_TRUE(std::string(name) == "avx2" || std::string(name) == "avx512") << name;
}

}  // namespace
}  // namespace switchyard::cpu
