# Compiler setup of the fuzz build (SWITCHYARD_FUZZ=ON), included by the top-level CMakeLists.txt
# before it looks for OpenMP. Needs clang (libFuzzer): CC=clang-16 CXX=clang++-16.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "SWITCHYARD_FUZZ=ON needs clang (libFuzzer): configure with "
                      "CC=clang-16 CXX=clang++-16 (scripts/install-deps installs them)")
endif()

# Every object of the library is instrumented for coverage (fuzzer-no-link), ASan and UBSan; only
# the fuzz targets' executables link the libFuzzer driver (tests/fuzz/CMakeLists.txt). Findings
# abort (no recovery), so libFuzzer records them. -O1 with line tables: readable stack traces at
# a fraction of -O2's compile time on a 2-core machine. `undefined` includes
# signed-integer-overflow; why unsigned-integer-overflow is left out: tests/fuzz/README.md.
set(SY_FUZZ_SANITIZERS "address,undefined")
add_compile_options(
  "$<${SY_CXX}:-fsanitize=fuzzer-no-link,${SY_FUZZ_SANITIZERS};-fno-sanitize-recover=all>"
  "$<${SY_CXX}:-fno-omit-frame-pointer;-O1;-gline-tables-only>")
add_link_options(-fsanitize=${SY_FUZZ_SANITIZERS})

# Debian's oneDNN links GCC's libgomp: clang compiles against it (and a copy of GCC's omp.h).
include(${PROJECT_SOURCE_DIR}/cmake/clang_libgomp.cmake)
