// Launch API of the matmul family's own device code (matmul.cu): the epilogue work cuBLASLt
// does not do for us — exact (erf) GELU, bias and activation where a cuBLASLt epilogue is not
// used — and the broadcast of Gemm's C into the output (or of a 16-bit C or bias into float32).
// Plain C++ (included by matmul.cc).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

/// The activation a fused MatMul/Gemm applies after bias (its fusion::Epilogue): Gelu is the exact
/// (erf) form, GeluTanh the tanh approximation.
enum class MatMulActivation { None, Relu, Gelu, GeluTanh };

/// y[i, j] = act(y[i, j] + bias[j]) in place over a row-major [rows, n] matrix of `dtype`
/// (float32, float16, bfloat16, float64); `bias` (length n, same dtype) may be null.
cudaError_t launch_bias_activation(DType dtype, void* y, const void* bias, int64_t rows, int64_t n,
                                   MatMulActivation act, cudaStream_t stream);

/// y[i, j] = scale * c[i * row_stride + j * col_stride] over a row-major [m, n] output of
/// `y_dtype`: Gemm's C broadcast to [M, N] (a stride is 0 along a broadcast dim). `c_dtype` is
/// `y_dtype` (float32, float16, bfloat16, float64), or float16/bfloat16 under a float32 output
/// (a 16-bit C or bias widened for a product that writes float32: m = 1, strides 0 and 1, scale
/// 1 converts a vector); any other pair is cudaErrorInvalidValue.
cudaError_t launch_broadcast_matrix(DType c_dtype, const void* c, int64_t row_stride,
                                    int64_t col_stride, DType y_dtype, void* y, int64_t m,
                                    int64_t n, double scale, cudaStream_t stream);

}  // namespace switchyard::cuda
