// Shared pieces of the matmul family's CPU kernels: numpy.matmul dims of one call and a plain
// batched matrix product for the dtypes and cases oneDNN does not cover.
#pragma once

#include <vector>

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

/// numpy.matmul dims of one call: 1-D operands are promoted (A to [1, K], B to [K, 1]) and the
/// promoted dim dropped from the output; batch dims broadcast.
struct MatMulDims {
  std::vector<int64_t> out_shape;
  int64_t m = 0, k = 0, n = 0;
  int64_t batch = 1;  ///< number of output matrices
  /// Matrix index into A and B of each output matrix (broadcast batch dims repeat one).
  std::vector<int64_t> a_index, b_index;
  std::vector<int64_t> a_batch, b_batch, out_batch;  ///< batch dims, padded to one rank
};

/// Validates shapes (fails naming the node) and computes the dims.
MatMulDims matmul_dims(const runtime::KernelContext& ctx, const std::vector<int64_t>& a,
                       const std::vector<int64_t>& b);

/// out[m, n] = sum_k a[m, k] * b[k, n] for rows [row_begin, row_end) of one matrix.
template <typename C>
void gemm_rows(const C* a, const C* b, C* out, int64_t row_begin, int64_t row_end, int64_t k,
               int64_t n) {
  for (int64_t i = row_begin; i < row_end; ++i) {
    C* o = out + i * n;
    std::fill(o, o + n, C(0));
    const C* ar = a + i * k;
    for (int64_t kk = 0; kk < k; ++kk) {
      C av = ar[kk];
      const C* br = b + kk * n;
      for (int64_t j = 0; j < n; ++j) o[j] += av * br[j];
    }
  }
}

/// The batched product of contiguous A [.., M, K] and B [.., K, N] into out [batch, M, N].
template <typename C>
void batched_gemm(const MatMulDims& d, const C* a, const C* b, C* out, int threads) {
  int64_t rows = d.batch * d.m;
  int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, d.k * d.n));
  parallel_for(rows, grain, threads, [&](int64_t begin, int64_t end) {
    while (begin < end) {
      int64_t bi = begin / d.m, r = begin % d.m;
      int64_t stop = std::min(end - begin, d.m - r);
      gemm_rows<C>(a + d.a_index[static_cast<size_t>(bi)] * d.m * d.k,
                   b + d.b_index[static_cast<size_t>(bi)] * d.k * d.n, out + bi * d.m * d.n, r,
                   r + stop, d.k, d.n);
      begin += stop;
    }
  });
}

/// Values of a tensor of storage type T as compute type C.
template <typename C, typename T>
std::vector<C> to_compute(const T* p, int64_t count) {
  std::vector<C> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = static_cast<C>(p[i]);
  return out;
}

/// Matmul-family kernels of matmul_quant.cc (MatMulInteger, QLinearMatMul) and
/// matmul_einsum.cc (Einsum, Det).
void register_matmul_quant_kernels(runtime::KernelRegistry& r);
void register_matmul_einsum_kernels(runtime::KernelRegistry& r);

}  // namespace switchyard::cpu
