// Run-time choice between the AVX2 and the AVX-512 builds of the cpu kernels' own hot loops
// (the rest of the project is compiled for x86-64-v3: AVX2 + FMA). oneDNN makes the same choice
// for its primitives; ONEDNN_MAX_CPU_ISA caps it, and SWITCHYARD_CPU_ISA caps ours.
#pragma once

namespace switchyard::cpu {

/// True when this CPU has AVX-512 (F, BW, DQ, VL) and the environment variable
/// SWITCHYARD_CPU_ISA does not cap the kernels at AVX2 (`SWITCHYARD_CPU_ISA=avx2`; any other
/// value but `avx512` is an error naming the variable). Read once per process.
bool use_avx512();

/// The ISA the kernels' own loops run: "avx512" or "avx2".
const char* kernel_isa_name();

}  // namespace switchyard::cpu

/// Marks a function to be compiled for AVX-512 (called only when use_avx512() is true).
/// always_inline helpers it calls are compiled inside it for that ISA.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SY_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,avx2")))
#define SY_HAVE_AVX512_BUILD 1
#else
#define SY_TARGET_AVX512
#define SY_HAVE_AVX512_BUILD 0
#endif
