// Device-side helpers shared by the normalization family's .cu files (normalization.cu,
// layer_norm.cu): loads and stores in the accumulation type, dtype known at compile or at run
// time, group sums, and the generic kernel that normalizes runs of values with a warp or a
// block each. Included by .cu files only.
#pragma once

#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/normalization_impl.h"

namespace switchyard::cuda::norm {

using dev::kThreads;

// Accumulator of a storage type: double for double, float otherwise.
template <typename T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename Acc, typename T>
__device__ __forceinline__ Acc load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, double>) {
    return static_cast<Acc>(p[i]);
  } else {
    return static_cast<Acc>(dev::to_float(p[i]));
  }
}

template <typename T, typename Acc>
__device__ __forceinline__ T store_cast(Acc v) {
  if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(v);
  } else {
    return dev::from_float<T>(static_cast<float>(v));
  }
}

// Element i of a float tensor whose dtype is known only at run time (small per-channel data).
template <typename Acc>
__device__ Acc load_any(const void* p, DType dtype, int64_t i) {
  switch (dtype) {
    case DType::Float16:
      return static_cast<Acc>(__half2float(static_cast<const __half*>(p)[i]));
    case DType::BFloat16:
      return static_cast<Acc>(__bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]));
    case DType::Float64:
      return static_cast<Acc>(static_cast<const double*>(p)[i]);
    default:
      return static_cast<Acc>(static_cast<const float*>(p)[i]);
  }
}

template <typename Acc>
__device__ void store_any(void* p, DType dtype, int64_t i, Acc v) {
  switch (dtype) {
    case DType::Float16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      break;
    case DType::BFloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      break;
    case DType::Float64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      break;
    default:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
  }
}

template <typename Acc>
__device__ __forceinline__ Acc acc_sqrt(Acc v) {
  if constexpr (std::is_same_v<Acc, double>) {
    return sqrt(v);
  } else {
    return sqrtf(v);
  }
}

template <typename Acc>
__device__ __forceinline__ Acc acc_abs(Acc v) {
  if constexpr (std::is_same_v<Acc, double>) {
    return fabs(v);
  } else {
    return fabsf(v);
  }
}

inline dev::Strides to_strides(const NormDims& d) {
  dev::Strides s;
  s.rank = d.rank;
  for (int i = 0; i < d.rank; ++i) {
    s.dims[i] = d.dims[i];
    s.strides[i] = d.strides[i];
  }
  return s;
}

// Sum of v over a group of kWidth threads (a warp, or the whole kThreads block); every thread of
// the group gets the result. Block groups use `smem` (kThreads / 32 values).
template <int kWidth, typename Acc>
__device__ __forceinline__ Acc group_sum(Acc v, Acc* smem) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if constexpr (kWidth > 32) {
    constexpr int kWarps = kWidth / 32;
    const int warp = static_cast<int>(threadIdx.x) / 32;
    const int lane = static_cast<int>(threadIdx.x) % 32;
    __syncthreads();  // smem may still be read from the previous call
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < kWarps ? smem[lane] : Acc(0);
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  }
  return v;
}

// Mean and 1/sqrt(var + epsilon) of each of `segments` runs of `len` values (value j of run s is
// source(s, j)), each run reduced by kWidth threads; then epilogue(s, source, mean, inv, lane,
// kWidth) writes it.
template <int kWidth, typename Acc, typename Source, typename Epilogue>
__global__ void __launch_bounds__(kThreads)
    segment_norm_kernel(Source source, int64_t segments, int64_t len, Acc epsilon,
                        Epilogue epilogue) {
  __shared__ Acc smem[kThreads / 32];
  constexpr int kPerBlock = kThreads / kWidth;
  const int lane = static_cast<int>(threadIdx.x) % kWidth;
  for (int64_t s = static_cast<int64_t>(blockIdx.x) * kPerBlock + threadIdx.x / kWidth;
       s < segments; s += static_cast<int64_t>(gridDim.x) * kPerBlock) {
    Acc sum = 0;
    for (int64_t j = lane; j < len; j += kWidth) sum += source(s, j);
    const Acc mean = group_sum<kWidth>(sum, smem) / static_cast<Acc>(len);
    Acc sq = 0;
    for (int64_t j = lane; j < len; j += kWidth) {
      const Acc d = source(s, j) - mean;
      sq += d * d;
    }
    const Acc var = group_sum<kWidth>(sq, smem) / static_cast<Acc>(len);
    const Acc inv = Acc(1) / acc_sqrt(var + epsilon);
    epilogue(s, source, mean, inv, lane, kWidth);
  }
}

template <typename Acc, typename Source, typename Epilogue>
cudaError_t launch_segments(const Source& source, int64_t segments, int64_t len, Acc epsilon,
                            const Epilogue& epilogue, cudaStream_t stream) {
  if (len <= 1024) {
    segment_norm_kernel<32, Acc><<<dev::blocks_for(segments, kThreads / 32), kThreads, 0, stream>>>(
        source, segments, len, epsilon, epilogue);
  } else {
    segment_norm_kernel<kThreads, Acc><<<dev::blocks_for(segments, 1), kThreads, 0, stream>>>(
        source, segments, len, epsilon, epilogue);
  }
  return cudaGetLastError();
}

}  // namespace switchyard::cuda::norm
