// Device code of the matmul family: the epilogues cuBLASLt does not do for us (exact erf GELU —
// cuBLASLt's GELU epilogue is the tanh approximation — and bias/activation, the tanh GELU
// included, where no cuBLASLt epilogue is used) and the broadcast of Gemm's C into the output.
// Compute in float (double for float64), store in the storage type.
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/matmul_impl.h"

namespace switchyard::cuda {

namespace {

using dev::from_float;
using dev::to_float;

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename C>
__device__ __forceinline__ C activate(C x, MatMulActivation act) {
  switch (act) {
    case MatMulActivation::Relu:
      return x > C(0) ? x : C(0);
    case MatMulActivation::Gelu:
      if constexpr (std::is_same_v<C, double>) {
        return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
      } else {
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
      }
    case MatMulActivation::GeluTanh:
      if constexpr (std::is_same_v<C, double>) {
        return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      } else {
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
      }
    default:
      return x;
  }
}

template <typename T>
__device__ __forceinline__ compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return to_float<T>(v);
  }
}

template <typename T>
__device__ __forceinline__ T store(compute_t<T> v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return from_float<T>(v);
  }
}

template <typename T>
__global__ void bias_activation_kernel(T* y, const T* bias, int64_t total, int64_t n,
                                       MatMulActivation act) {
  SY_GRID_STRIDE(i, total) {
    compute_t<T> v = load(y[i]);
    if (bias) v += load(bias[i % n]);
    y[i] = store<T>(activate(v, act));
  }
}

template <typename T>
__global__ void broadcast_matrix_kernel(const T* c, int64_t row_stride, int64_t col_stride, T* y,
                                        int64_t total, int64_t n, compute_t<T> scale) {
  SY_GRID_STRIDE(i, total) {
    int64_t row = i / n, col = i - row * n;
    y[i] = store<T>(scale * load(c[row * row_stride + col * col_stride]));
  }
}

}  // namespace

cudaError_t launch_bias_activation(DType dtype, void* y, const void* bias, int64_t rows, int64_t n,
                                   MatMulActivation act, cudaStream_t stream) {
  const int64_t total = rows * n;
  if (total == 0) return cudaSuccess;
  return SY_DISPATCH_FLOAT(dtype, T, {
    bias_activation_kernel<T><<<dev::blocks_for(total), dev::kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), total, n, act);
    return cudaGetLastError();
  });
}

cudaError_t launch_broadcast_matrix(DType dtype, const void* c, int64_t row_stride,
                                    int64_t col_stride, void* y, int64_t m, int64_t n, double scale,
                                    cudaStream_t stream) {
  const int64_t total = m * n;
  if (total == 0) return cudaSuccess;
  return SY_DISPATCH_FLOAT(dtype, T, {
    broadcast_matrix_kernel<T><<<dev::blocks_for(total), dev::kThreads, 0, stream>>>(
        static_cast<const T*>(c), row_stride, col_stride, static_cast<T*>(y), total, n,
        static_cast<compute_t<T>>(scale));
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda
