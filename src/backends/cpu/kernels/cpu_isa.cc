#include "backends/cpu/kernels/cpu_isa.h"

#include <cstdlib>
#include <string>

#include "ir/check.h"

namespace switchyard::cpu {

namespace {

bool decide_avx512() {
  bool has = false;
#if SY_HAVE_AVX512_BUILD
  __builtin_cpu_init();
  has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
  const char* env = std::getenv("SWITCHYARD_CPU_ISA");
  if (env == nullptr || *env == '\0') return has;
  const std::string want = env;
  SY_CHECK(want == "avx2" || want == "avx512", InvalidArgument,
           "SWITCHYARD_CPU_ISA='{}': expected avx2 or avx512", want);
  return has && want == "avx512";
}

}  // namespace

bool use_avx512() {
  static const bool value = decide_avx512();
  return value;
}

const char* kernel_isa_name() { return use_avx512() ? "avx512" : "avx2"; }

}  // namespace switchyard::cpu
