# Clang builds (fuzzing, ThreadSanitizer) against GCC's OpenMP runtime. Debian's oneDNN links
# libgomp; clang defaults to LLVM's libomp and ships no omp.h of its own, so FindOpenMP is
# pointed at libgomp and clang gets GCC's omp.h, alone in a folder so none of GCC's intrinsics
# headers come with it, less the GCC-only attribute argument `__malloc__ (omp_free)` that clang
# rejects (declarations only; the ABI is unchanged). Included before find_package(OpenMP).
execute_process(COMMAND gcc -print-file-name=include/omp.h OUTPUT_VARIABLE SY_GOMP_HEADER
                OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND gcc -print-file-name=libgomp.so OUTPUT_VARIABLE SY_GOMP_LIBRARY
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT EXISTS "${SY_GOMP_HEADER}" OR NOT EXISTS "${SY_GOMP_LIBRARY}")
  message(FATAL_ERROR "clang build: GCC's omp.h or libgomp.so not found (g++ installed?)")
endif()
file(READ "${SY_GOMP_HEADER}" SY_GOMP_HEADER_TEXT)
string(REPLACE "__malloc__ (omp_free)" "__malloc__" SY_GOMP_HEADER_TEXT "${SY_GOMP_HEADER_TEXT}")
file(WRITE "${CMAKE_BINARY_DIR}/libgomp-include/omp.h" "${SY_GOMP_HEADER_TEXT}")
set(OpenMP_CXX_FLAGS "-fopenmp=libgomp" CACHE STRING "" FORCE)
set(OpenMP_CXX_LIB_NAMES "gomp" CACHE STRING "" FORCE)
set(OpenMP_gomp_LIBRARY "${SY_GOMP_LIBRARY}" CACHE FILEPATH "" FORCE)
set(OpenMP_CXX_INCLUDE_DIR "${CMAKE_BINARY_DIR}/libgomp-include" CACHE PATH "" FORCE)
# src/runtime/executable.cc includes omp.h without linking OpenMP (GCC finds it on its own path).
include_directories(SYSTEM "${CMAKE_BINARY_DIR}/libgomp-include")
