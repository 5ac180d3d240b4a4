// Device-side helpers shared by the data-movement kernels (data.cu, gather_scatter.cu,
// resize.cu): dispatch on element size / dtype, and element conversions that reproduce the CPU
// kernels' arithmetic. Included by .cu files only.
#pragma once

#include <cuda_runtime.h>

#include <cstring>
#include <limits>
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/data_impl.h"

namespace switchyard::cuda::data {

using dev::blocks_for;
using dev::kThreads;

// ---- dispatch ----------------------------------------------------------------------------

// Calls f(T{}) with T an unsigned integer of `elem_size` bytes (pure data movement).
template <typename F>
cudaError_t dispatch_size(int elem_size, F&& f) {
  switch (elem_size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// Calls f(T{}) with T the CUDA storage type of a numeric dtype.
template <typename F>
cudaError_t dispatch_numeric(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      return f(__half{});
    case DType::BFloat16:
      return f(__nv_bfloat16{});
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
    default:
      return cudaErrorInvalidValue;
  }
}

// Calls f(I{}) with I the type of an int32 or int64 index tensor.
template <typename F>
cudaError_t dispatch_index(DType dtype, F&& f) {
  if (dtype == DType::Int32) return f(int32_t{});
  if (dtype == DType::Int64) return f(int64_t{});
  return cudaErrorInvalidValue;
}

template <typename T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(static_cast<void*>(&v), &bits, sizeof(T));
  return v;
}

inline int64_t product(const int64_t* dims, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

// ---- element conversions -----------------------------------------------------------------

template <typename To, typename From>
__device__ __forceinline__ To bit_cast(From v) {
  static_assert(sizeof(To) == sizeof(From));
  To out;
  memcpy(&out, &v, sizeof(To));
  return out;
}

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// Compute type of a storage type, as the CPU kernels use it: float for half types.
template <typename T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;

template <typename T>
__device__ __forceinline__ compute_t<T> widen(T v) {
  if constexpr (kIsHalf<T>)
    return dev::to_float(v);
  else
    return v;
}

template <typename T>
__device__ __forceinline__ T narrow(compute_t<T> v) {
  if constexpr (kIsHalf<T>)
    return dev::from_float<T>(v);
  else
    return static_cast<T>(v);
}

template <typename T>
__device__ __forceinline__ double to_double(T v) {
  return static_cast<double>(widen(v));
}

// Resize's double → T: integers round to nearest even and saturate (NaN → 0); half types go
// through float, as the CPU's conversions do.
template <typename T>
__device__ __forceinline__ T from_double(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (isnan(v)) return T(0);
    double r = rint(v);
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (r >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else if constexpr (kIsHalf<T>) {
    return dev::from_float<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace switchyard::cuda::data
