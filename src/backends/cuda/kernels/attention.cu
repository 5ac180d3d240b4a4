// Device code of the fused attention (launch API in attention_impl.h), float16 and bfloat16.
//
// Head dims up to 128: one CTA of four warps per (query tile of 64, head, batch). Q's tile stays
// in registers as wmma fragments; each tile of 64 keys and values is staged in shared memory;
// each warp computes its 16 x 64 scores on the tensor cores (fp32 accumulation) into shared
// memory, updates its rows' running maximum and sum (online softmax: two lanes per row), writes
// the tile's probabilities in the storage type and adds P V into its float output rows, rescaled
// first by exp(old max - new max). The scores never leave the SM. Longer head dims take a warp
// per query row (any length, slower). A score is rounded to the storage type after the scale,
// and again after an additive mask, as the unfused MatMul and Add leave it; a row whose scores
// are all -inf gives NaN, as the unfused softmax's 0/0 does.
#include <mma.h>

#include <atomic>

#include "backends/cuda/kernels/attention_impl.h"
#include "backends/cuda/kernels/common.cuh"

namespace switchyard::cuda {
namespace {

using dev::from_float;
using dev::to_float;
namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;  // queries per CTA, keys per step
constexpr int kWarps = 4;  // 16 query rows each
constexpr int kThreadsPerCta = 32 * kWarps;
constexpr unsigned kFull = 0xffffffffu;

constexpr size_t align128(size_t bytes) { return (bytes + 127) / 128 * 128; }

// Shared memory of the tensor-core kernel for head dims up to kD: Q, K and V tiles in the
// storage type (rows padded by 8 elements: wmma wants 32-byte aligned fragments and the padding
// spreads banks), then per warp its scores and output rows in float and its probabilities.
template <int kD>
struct Smem {
  static constexpr int kLdT = kD + 8;
  static constexpr int kLdS = kTile + 4;
  static constexpr int kLdP = kTile + 8;
  static constexpr int kLdO = kD + 4;
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + align128(kTile * kLdT * 2);
  static constexpr size_t kV = kK + align128(kTile * kLdT * 2);
  static constexpr size_t kS = kV + align128(kTile * kLdT * 2);
  static constexpr size_t kP = kS + align128(kWarps * 16 * kLdS * 4);
  static constexpr size_t kO = kP + align128(kWarps * 16 * kLdP * 2);
  static constexpr size_t kBytes = kO + align128(kWarps * 16 * kLdO * 4);
};

template <typename T>
__device__ __forceinline__ float round_to(float v) {
  return to_float(from_float<T>(v));
}

// The masked score of query row `mask_row` (its mask offset) at key `key`.
template <typename T>
__device__ __forceinline__ float masked(const AttentionArgs& a, int64_t mask_row, int64_t key,
                                        float s) {
  switch (a.mask_kind) {
    case AttentionMask::Add:
      return round_to<T>(
          s + to_float(static_cast<const T*>(a.mask)[mask_row + key * a.mask_stride[3]]));
    case AttentionMask::WhereTrue:
      return static_cast<const bool*>(a.mask)[mask_row + key * a.mask_stride[3]] ? a.fill : s;
    case AttentionMask::WhereFalse:
      return static_cast<const bool*>(a.mask)[mask_row + key * a.mask_stride[3]] ? s : a.fill;
    default:
      return s;
  }
}

// Rows [0, valid) of a [kTile, kD] tile from `src` (rows `row_stride` apart, `dim` contiguous
// values each) into `dst` (rows kLdT apart); zeros elsewhere. `vec`: 16-byte chunks.
template <typename T, int kD>
__device__ void load_tile(T* dst, const T* src, int64_t row_stride, int64_t valid, int64_t dim,
                          bool vec) {
  constexpr int kLd = Smem<kD>::kLdT;
  if (vec) {
    constexpr int kChunks = kD / 8;
    for (int e = threadIdx.x; e < kTile * kChunks; e += kThreadsPerCta) {
      const int r = e / kChunks, c = (e % kChunks) * 8;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (r < valid && c < dim) v = *reinterpret_cast<const uint4*>(src + r * row_stride + c);
      *reinterpret_cast<uint4*>(dst + r * kLd + c) = v;
    }
  } else {
    const T zero = from_float<T>(0.0f);
    for (int e = threadIdx.x; e < kTile * kD; e += kThreadsPerCta) {
      const int r = e / kD, c = e % kD;
      dst[r * kLd + c] = r < valid && c < dim ? src[r * row_stride + c] : zero;
    }
  }
}

template <typename T, int kD>
__global__ void __launch_bounds__(kThreadsPerCta) attention_tc_kernel(AttentionArgs a, bool vec) {
  using L = Smem<kD>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem + L::kQ);
  T* ks = reinterpret_cast<T*>(smem + L::kK);
  T* vs = reinterpret_cast<T*>(smem + L::kV);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  float* sw = reinterpret_cast<float*>(smem + L::kS) + warp * 16 * L::kLdS;
  T* pw = reinterpret_cast<T*>(smem + L::kP) + warp * 16 * L::kLdP;
  float* ow = reinterpret_cast<float*>(smem + L::kO) + warp * 16 * L::kLdO;

  const int64_t b = blockIdx.z, h = blockIdx.y, q0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const T* q = static_cast<const T*>(a.q) + b * a.q_stride[0] + h * a.q_stride[1];
  const T* k = static_cast<const T*>(a.k) + b * a.k_stride[0] + h * a.k_stride[1];
  const T* v = static_cast<const T*>(a.v) + b * a.v_stride[0] + h * a.v_stride[1];
  const int64_t q_valid = a.q_len - q0 < kTile ? a.q_len - q0 : kTile;
  load_tile<T, kD>(qs, q + q0 * a.q_stride[2], a.q_stride[2], q_valid, a.head_dim, vec);
  for (int i = lane; i < 16 * L::kLdO; i += 32) ow[i] = 0.0f;
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qf[kD / 16];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
    wmma::load_matrix_sync(qf[kk], qs + warp * 16 * L::kLdT + kk * 16, L::kLdT);

  // Two lanes per query row: columns half, half + 2, ... of each tile.
  const int row = lane / 2, half = lane % 2;
  const int64_t qi = q0 + warp * 16 + row;
  const bool live = qi < a.q_len;
  const int64_t mask_row =
      b * a.mask_stride[0] + h * a.mask_stride[1] + (live ? qi : 0) * a.mask_stride[2];
  float m = -INFINITY, l = 0.0f;
  for (int64_t k0 = 0; k0 < a.kv_len; k0 += kTile) {
    const int64_t k_valid = a.kv_len - k0 < kTile ? a.kv_len - k0 : kTile;
    __syncthreads();  // every warp is done with the previous tiles
    load_tile<T, kD>(ks, k + k0 * a.k_stride[2], a.k_stride[2], k_valid, a.head_dim, vec);
    load_tile<T, kD>(vs, v + k0 * a.v_stride[2], a.v_stride[2], k_valid, a.v_dim, vec);
    __syncthreads();
    // S = Q Kᵀ for this warp's 16 rows and the tile's 64 keys.
#pragma unroll
    for (int j = 0; j < kTile / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kf;
        wmma::load_matrix_sync(kf, ks + j * 16 * L::kLdT + kk * 16, L::kLdT);
        wmma::mma_sync(acc, qf[kk], kf, acc);
      }
      wmma::store_matrix_sync(sw + j * 16, acc, L::kLdS, wmma::mem_row_major);
    }
    __syncwarp();
    float s[kTile / 2];
    float tile_max = -INFINITY;
#pragma unroll
    for (int c = 0; c < kTile / 2; ++c) {
      const int col = 2 * c + half;
      float x = -INFINITY;
      if (live && col < k_valid)
        x = masked<T>(a, mask_row, k0 + col, round_to<T>(sw[row * L::kLdS + col] * a.alpha));
      s[c] = x;
      tile_max = fmaxf(tile_max, x);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(kFull, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float base = m_new == -INFINITY ? 0.0f : m_new;
    float sum = 0.0f;
#pragma unroll
    for (int c = 0; c < kTile / 2; ++c) {
      const float p = expf(s[c] - base);
      sum += p;
      pw[row * L::kLdP + 2 * c + half] = from_float<T>(p);
    }
    sum += __shfl_xor_sync(kFull, sum, 1);
    const float correction = expf(m - base);
    l = l * correction + sum;
    m = m_new;
    for (int c = half; c < kD; c += 2) ow[row * L::kLdO + c] *= correction;
    __syncwarp();
    // O += P V.
#pragma unroll
    for (int dj = 0; dj < kD / 16; ++dj) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, ow + dj * 16, L::kLdO, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kTile / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pf;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vf;
        wmma::load_matrix_sync(pf, pw + kk * 16, L::kLdP);
        wmma::load_matrix_sync(vf, vs + kk * 16 * L::kLdT + dj * 16, L::kLdT);
        wmma::mma_sync(acc, pf, vf, acc);
      }
      wmma::store_matrix_sync(ow + dj * 16, acc, L::kLdO, wmma::mem_row_major);
    }
    __syncwarp();
  }
  if (!live) return;
  T* o = static_cast<T*>(a.out) + b * a.out_stride[0] + h * a.out_stride[1] + qi * a.out_stride[2];
  const float inv = 1.0f / l;  // l = 0 (every score -inf): 0 * inf = NaN, as unfused
  for (int64_t c = half; c < a.v_dim; c += 2) o[c] = from_float<T>(ow[row * L::kLdO + c] * inv);
}

// Any head dims: a warp per query row walks the keys one at a time (online softmax in
// registers), kPer output values per lane per pass over the keys.
constexpr int kPer = 8;

template <typename T>
__global__ void attention_row_kernel(AttentionArgs a) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int64_t rows = a.batch * a.heads * a.q_len;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       r < rows; r += warps) {
    const int64_t qi = r % a.q_len, h = (r / a.q_len) % a.heads, b = r / (a.q_len * a.heads);
    const T* q =
        static_cast<const T*>(a.q) + b * a.q_stride[0] + h * a.q_stride[1] + qi * a.q_stride[2];
    const T* k = static_cast<const T*>(a.k) + b * a.k_stride[0] + h * a.k_stride[1];
    const T* v = static_cast<const T*>(a.v) + b * a.v_stride[0] + h * a.v_stride[1];
    T* o =
        static_cast<T*>(a.out) + b * a.out_stride[0] + h * a.out_stride[1] + qi * a.out_stride[2];
    const int64_t mask_row = b * a.mask_stride[0] + h * a.mask_stride[1] + qi * a.mask_stride[2];
    for (int64_t d0 = 0; d0 < a.v_dim; d0 += 32 * kPer) {
      float acc[kPer] = {};
      float m = -INFINITY, l = 0.0f;
      for (int64_t key = 0; key < a.kv_len; ++key) {
        const T* kr = k + key * a.k_stride[2];
        float dot = 0.0f;
        for (int64_t d = lane; d < a.head_dim; d += 32) dot += to_float(q[d]) * to_float(kr[d]);
        for (int off = 16; off > 0; off /= 2) dot += __shfl_xor_sync(kFull, dot, off);
        const float s = masked<T>(a, mask_row, key, round_to<T>(dot * a.alpha));
        const float m_new = fmaxf(m, s);
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        const float correction = expf(m - base), p = expf(s - base);
        l = l * correction + p;
        m = m_new;
        const T* vr = v + key * a.v_stride[2];
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
          const int64_t d = d0 + lane + 32 * i;
          acc[i] = acc[i] * correction + (d < a.v_dim ? p * to_float(vr[d]) : 0.0f);
        }
      }
      const float inv = 1.0f / l;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const int64_t d = d0 + lane + 32 * i;
        if (d < a.v_dim) o[d] = from_float<T>(acc[i] * inv);
      }
    }
  }
}

template <typename T, int kD>
cudaError_t launch_tc(const AttentionArgs& a, bool vec, cudaStream_t stream) {
  constexpr size_t kBytes = Smem<kD>::kBytes;
  // Above 48 KiB a kernel opts in to its dynamic shared memory, once per device: on the
  // partition's eager first run, so the CUDA-graph capture of a later run makes no such call.
  static std::atomic<uint64_t> opted_in{0};
  int device = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status != cudaSuccess) return status;
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (!bit || !(opted_in.load() & bit)) {
    status = cudaFuncSetAttribute(attention_tc_kernel<T, kD>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, kBytes);
    if (status != cudaSuccess) return status;
    opted_in.fetch_or(bit);
  }
  const dim3 grid(static_cast<unsigned>((a.q_len + kTile - 1) / kTile),
                  static_cast<unsigned>(a.heads), static_cast<unsigned>(a.batch));
  attention_tc_kernel<T, kD><<<grid, kThreadsPerCta, kBytes, stream>>>(a, vec);
  return cudaGetLastError();
}

// Whether every row of an operand starts 16-byte aligned and holds whole 16-byte chunks.
bool rows_in_chunks(const void* p, const int64_t* stride, int64_t dim) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0 || dim % 8 != 0) return false;
  for (int i = 0; i < 3; ++i)
    if (stride[i] % 8 != 0) return false;
  return true;
}

template <typename T>
cudaError_t attention_typed(const AttentionArgs& a, cudaStream_t stream) {
  const int64_t dim = a.head_dim > a.v_dim ? a.head_dim : a.v_dim;
  const bool grid_fits =
      a.heads <= 65535 && a.batch <= 65535 && (a.q_len + kTile - 1) / kTile <= 0x7fffffffLL;
  if (dim <= kAttentionTensorCoreMaxDim && grid_fits) {
    const bool vec = rows_in_chunks(a.q, a.q_stride, a.head_dim) &&
                     rows_in_chunks(a.k, a.k_stride, a.head_dim) &&
                     rows_in_chunks(a.v, a.v_stride, a.v_dim);
    if (dim <= 32) return launch_tc<T, 32>(a, vec, stream);
    if (dim <= 64) return launch_tc<T, 64>(a, vec, stream);
    return launch_tc<T, 128>(a, vec, stream);
  }
  const int64_t rows = a.batch * a.heads * a.q_len;
  attention_row_kernel<T>
      <<<dev::blocks_for(rows, kThreadsPerCta / 32), kThreadsPerCta, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.batch * a.heads * a.q_len == 0 || a.v_dim == 0) return cudaSuccess;
  if (a.kv_len <= 0) return cudaErrorInvalidValue;
  switch (a.dtype) {
    case DType::Float16:
      return attention_typed<__half>(a, stream);
    case DType::BFloat16:
      return attention_typed<__nv_bfloat16>(a, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace switchyard::cuda
