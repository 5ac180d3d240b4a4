// Device code of the matmul family: the epilogues cuBLASLt does not do for us (exact erf GELU —
// cuBLASLt's GELU epilogue is the tanh approximation — and bias/activation, the tanh GELU
// included, where no cuBLASLt epilogue is used) and the broadcast of Gemm's C into the output
// (which also widens a 16-bit bias or C for a product that writes float32).
// Compute in float (double for float64), store in the storage type.
#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/matmul_impl.h"

namespace switchyard::cuda {

namespace {

using dev::from_float;
using dev::to_float;

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <MatMulActivation kAct, typename C>
__device__ __forceinline__ C activate(C x) {
  if constexpr (kAct == MatMulActivation::Relu) {
    return x > C(0) ? x : C(0);
  } else if constexpr (kAct == MatMulActivation::Gelu) {
    if constexpr (std::is_same_v<C, double>) {
      return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    } else {
      return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    }
  } else if constexpr (kAct == MatMulActivation::GeluTanh) {
    if constexpr (std::is_same_v<C, double>) {
      return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    } else {
      return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    }
  } else {
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

// Index i's column in rows of n: 32-bit division where the indices fit (`index32`), as 64-bit
// division is a long instruction sequence.
__device__ __forceinline__ int64_t column_of(int64_t i, int64_t n, bool index32) {
  if (index32) return static_cast<uint32_t>(i) % static_cast<uint32_t>(n);
  return i % n;
}

// y[i] = act(y[i] + bias[i % n]) elementwise: rows whose length or alignment does not allow
// bias_activation_vec_kernel.
template <typename T, MatMulActivation kAct>
__global__ void bias_activation_kernel(T* y, const T* bias, int64_t total, int64_t n,
                                       bool index32) {
  SY_GRID_STRIDE(i, total) {
    compute_t<T> v = load(y[i]);
    if (bias) v += load(bias[column_of(i, n, index32)]);
    y[i] = store<T>(activate<kAct>(v));
  }
}

// The same 16 bytes at a time: `vectors` Vec16s of y (16-byte aligned), with a bias (aligned,
// n a multiple of Vec16's size) read as `columns` Vec16s; then the `tail` elements after them
// (only without a bias).
template <typename T, MatMulActivation kAct>
__global__ void bias_activation_vec_kernel(T* y, const T* bias, int64_t vectors, int64_t columns,
                                           int tail, bool index32) {
  using Vec = dev::Vec16<T>;
  SY_GRID_STRIDE(i, vectors) {
    Vec q = dev::load_vec16(y + i * Vec::kSize);
    if (bias) {
      const Vec b = dev::load_vec16(bias + column_of(i, columns, index32) * Vec::kSize);
#pragma unroll
      for (int k = 0; k < Vec::kSize; ++k) {
        compute_t<T> v = load(q.v[k]);
        v += load(b.v[k]);
        q.v[k] = store<T>(activate<kAct>(v));
      }
    } else {
#pragma unroll
      for (int k = 0; k < Vec::kSize; ++k) q.v[k] = store<T>(activate<kAct>(load(q.v[k])));
    }
    dev::store_vec16(y + i * Vec::kSize, q);
  }
  if (blockIdx.x == 0 && static_cast<int>(threadIdx.x) < tail) {
    const int64_t i = vectors * Vec::kSize + threadIdx.x;
    y[i] = store<T>(activate<kAct>(load(y[i])));
  }
}

template <typename T, MatMulActivation kAct>
cudaError_t bias_activation_typed(T* y, const T* bias, int64_t total, int64_t n,
                                  cudaStream_t stream) {
  constexpr int kSize = dev::Vec16<T>::kSize;
  const bool index32 = total <= static_cast<int64_t>(UINT32_MAX);
  if (dev::is_aligned16(y) && (!bias || (n % kSize == 0 && dev::is_aligned16(bias)))) {
    const int64_t vectors = total / kSize;
    bias_activation_vec_kernel<T, kAct><<<dev::blocks_for(vectors), dev::kThreads, 0, stream>>>(
        y, bias, vectors, n / kSize, static_cast<int>(total % kSize), index32);
  } else {
    bias_activation_kernel<T, kAct>
        <<<dev::blocks_for(total), dev::kThreads, 0, stream>>>(y, bias, total, n, index32);
  }
  return cudaGetLastError();
}

// C of type TC read into Y of type T (the same, or float32 over a 16-bit C).
template <typename TC, typename T>
__global__ void broadcast_matrix_kernel(const TC* c, int64_t row_stride, int64_t col_stride, T* y,
                                        int64_t total, int64_t n, compute_t<T> scale) {
  SY_GRID_STRIDE(i, total) {
    int64_t row = i / n, col = i - row * n;
    y[i] =
        store<T>(scale * static_cast<compute_t<T>>(load(c[row * row_stride + col * col_stride])));
  }
}

template <typename TC, typename T>
cudaError_t broadcast_matrix_typed(const void* c, int64_t row_stride, int64_t col_stride, void* y,
                                   int64_t total, int64_t n, double scale, cudaStream_t stream) {
  broadcast_matrix_kernel<TC, T><<<dev::blocks_for(total), dev::kThreads, 0, stream>>>(
      static_cast<const TC*>(c), row_stride, col_stride, static_cast<T*>(y), total, n,
      static_cast<compute_t<T>>(scale));
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_bias_activation(DType dtype, void* y, const void* bias, int64_t rows, int64_t n,
                                   MatMulActivation act, cudaStream_t stream) {
  const int64_t total = rows * n;
  if (total == 0) return cudaSuccess;
  return SY_DISPATCH_FLOAT(dtype, T, {
    T* py = static_cast<T*>(y);
    const T* pb = static_cast<const T*>(bias);
    switch (act) {
      case MatMulActivation::Relu:
        return bias_activation_typed<T, MatMulActivation::Relu>(py, pb, total, n, stream);
      case MatMulActivation::Gelu:
        return bias_activation_typed<T, MatMulActivation::Gelu>(py, pb, total, n, stream);
      case MatMulActivation::GeluTanh:
        return bias_activation_typed<T, MatMulActivation::GeluTanh>(py, pb, total, n, stream);
      default:
        return bias_activation_typed<T, MatMulActivation::None>(py, pb, total, n, stream);
    }
  });
}

cudaError_t launch_broadcast_matrix(DType c_dtype, const void* c, int64_t row_stride,
                                    int64_t col_stride, DType y_dtype, void* y, int64_t m,
                                    int64_t n, double scale, cudaStream_t stream) {
  const int64_t total = m * n;
  if (total == 0) return cudaSuccess;
  if (c_dtype == y_dtype)
    return SY_DISPATCH_FLOAT(y_dtype, T, {
      return broadcast_matrix_typed<T, T>(c, row_stride, col_stride, y, total, n, scale, stream);
    });
  if (y_dtype != DType::Float32) return cudaErrorInvalidValue;
  switch (c_dtype) {
    case DType::Float16:
      return broadcast_matrix_typed<__half, float>(c, row_stride, col_stride, y, total, n, scale,
                                                   stream);
    case DType::BFloat16:
      return broadcast_matrix_typed<__nv_bfloat16, float>(c, row_stride, col_stride, y, total, n,
                                                          scale, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace switchyard::cuda
