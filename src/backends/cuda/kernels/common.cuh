// Device-side helpers shared by the kernel families (.cu files only): element types, grid
// sizing, strided indexing. .cu files include this, <cuda_runtime.h> and their own *_impl.h —
// never the host headers (fmt, the IR), which nvcc need not see.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda::dev {

constexpr int kMaxRank = 8;
constexpr int kThreads = 256;

/// Blocks for `n` elements at `threads` per block, capped (kernels loop grid-stride).
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 32) b = 65535LL * 32;
  return static_cast<unsigned>(b);
}

#define SY_GRID_STRIDE(i, n)                                                             \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

/// Shape and strides of up to kMaxRank dims, passed to kernels by value.
struct Strides {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};  ///< in elements; 0 for broadcast dims
};

/// Offset of output element `linear` (row-major over s.dims) in a tensor with strides s.strides.
__device__ __forceinline__ int64_t strided_offset(int64_t linear, const Strides& s) {
  int64_t offset = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    int64_t q = linear / s.dims[d];
    offset += (linear - q * s.dims[d]) * s.strides[d];
    linear = q;
  }
  return offset;
}

// Float conversions for the storage types (compute in float, store in T).
template <typename T>
__device__ __forceinline__ float to_float(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float to_float<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ __forceinline__ T from_float(float v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// 16 bytes of T: the unit of one vectorized global access (LDG.128 / STG.128).
template <typename T>
struct alignas(16) Vec16 {
  static constexpr int kSize = static_cast<int>(16 / sizeof(T));
  T v[kSize];
};

/// The Vec16 at p, which must be 16-byte aligned.
template <typename T>
__device__ __forceinline__ Vec16<T> load_vec16(const T* p) {
  return *reinterpret_cast<const Vec16<T>*>(p);
}
template <typename T>
__device__ __forceinline__ void store_vec16(T* p, const Vec16<T>& v) {
  *reinterpret_cast<Vec16<T>*>(p) = v;
}

/// Whether p may be accessed as Vec16 (host side).
inline bool is_aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// Streaming multiprocessors of the current device, queried once per device (launch shapes only:
/// never what a kernel computes); 1 where the query fails.
inline int sm_count() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> cached[kMaxDevices];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) {
    (void)cudaGetLastError();  // the launch that follows reports its own status
    return 1;
  }
  int n = cached[device].load(std::memory_order_relaxed);
  if (n > 0) return n;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || n < 1) {
    (void)cudaGetLastError();
    return 1;
  }
  cached[device].store(n, std::memory_order_relaxed);
  return n;
}

}  // namespace switchyard::cuda::dev

/// Calls F.template operator()<T>() with T the CUDA storage type of a float dtype
/// (Float32 → float, Float16 → __half, BFloat16 → __nv_bfloat16, Float64 → double); returns
/// cudaErrorInvalidValue for other dtypes.
#define SY_DISPATCH_FLOAT(dtype, T, ...)    \
  [&]() -> cudaError_t {                    \
    switch (dtype) {                        \
      case ::switchyard::DType::Float32: {  \
        using T = float;                    \
        __VA_ARGS__                         \
      }                                     \
      case ::switchyard::DType::Float16: {  \
        using T = __half;                   \
        __VA_ARGS__                         \
      }                                     \
      case ::switchyard::DType::BFloat16: { \
        using T = __nv_bfloat16;            \
        __VA_ARGS__                         \
      }                                     \
      case ::switchyard::DType::Float64: {  \
        using T = double;                   \
        __VA_ARGS__                         \
      }                                     \
      default:                              \
        return cudaErrorInvalidValue;       \
    }                                       \
  }()
