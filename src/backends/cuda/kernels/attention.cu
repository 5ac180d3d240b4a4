// Device code of the fused attention (launch API in attention_impl.h), float16 and bfloat16.
//
// Head dims up to 128 on sm_80 and later: a FlashAttention-2 style kernel. A CTA of 1, 2 or 4
// warps takes 16 query rows per warp of one (batch, head); each warp keeps its Q fragments, its
// 16 x 64 scores, their probabilities and its 16 x D output accumulator in registers (mma.sync
// m16n8k16, fp32 accumulation). The tiles of 64 keys and values are double-buffered in shared
// memory by cp.async (zero-filled past the end) and read by ldmatrix (.trans for V): the next
// tile loads while the current one is computed. Online softmax in registers: a row lies in the
// 4 lanes of a quad, which reduce its maximum with shuffles (its sum once, at the end). The
// probabilities, rounded to the storage type, are the A operand of P V where they lie in the
// score accumulators. Where the grid would not fill the GPU, CTAs of fewer warps make more of
// them. Longer head dims, and older GPUs, take a warp per query row (any length, slower). A score
// is rounded to the storage type after the scale, and again after an additive mask, as the
// unfused MatMul and Add leave it; a row whose scores are all -inf gives NaN, as the unfused
// softmax's 0/0 does.
#include <atomic>

#include "backends/cuda/kernels/attention_impl.h"
#include "backends/cuda/kernels/common.cuh"

namespace switchyard::cuda {
namespace {

using dev::from_float;
using dev::to_float;

constexpr unsigned kFull = 0xffffffffu;
constexpr int kKeys = 64;  // keys per tile
constexpr float kLog2e = 1.4426950408889634f;

// One CTA of the tensor-core kernel for padded head dims kD (a multiple of 16) and kWarps warps:
// its shared memory holds Q's rows, then two stages of K's and two of V's tiles, in the storage
// type. Rows are kD + 8 elements apart: the 16 bytes of padding put the 8 rows an ldmatrix phase
// reads in distinct banks and keep every row 16-byte aligned for cp.async.
template <int kD, int kWarps>
struct TcShape {
  static_assert(kD % 16 == 0 && kD <= kAttentionTensorCoreMaxDim);
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kRows = 16 * kWarps;  // query rows per CTA
  static constexpr int kLd = kD + 8;
  static constexpr size_t kTile = size_t{kKeys} * kLd;  // elements of one K or V stage
  static constexpr size_t kQ = 0;
  static constexpr size_t kK = kQ + size_t{kRows} * kLd * 2;
  static constexpr size_t kV = kK + 2 * kTile * 2;
  static constexpr size_t kBytes = kV + 2 * kTile * 2;
};

template <typename T>
__device__ __forceinline__ float round_to(float v) {
  return to_float(from_float<T>(v));
}

// Two floats as one register of two storage values (the lower half holds `lo`), and back.
template <typename T>
struct Pair;
template <>
struct Pair<__half> {
  using Type = __half2;
  static __device__ __forceinline__ __half2 of(float lo, float hi) {
    return __floats2half2_rn(lo, hi);
  }
  static __device__ __forceinline__ float2 floats(__half2 v) { return __half22float2(v); }
};
template <>
struct Pair<__nv_bfloat16> {
  using Type = __nv_bfloat162;
  static __device__ __forceinline__ __nv_bfloat162 of(float lo, float hi) {
    return __floats2bfloat162_rn(lo, hi);
  }
  static __device__ __forceinline__ float2 floats(__nv_bfloat162 v) {
    return __bfloat1622float2(v);
  }
};

template <typename T>
__device__ __forceinline__ uint32_t pack(float lo, float hi) {
  const typename Pair<T>::Type v = Pair<T>::of(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Both values rounded to the storage type (one conversion instruction each way).
template <typename T>
__device__ __forceinline__ void round_pair(float& lo, float& hi) {
  const float2 r = Pair<T>::floats(Pair<T>::of(lo, hi));
  lo = r.x;
  hi = r.y;
}

// v, which the compiler cannot see through: what is computed from it is computed where it is
// used, not hoisted out of the key loop into registers held across it.
__device__ __forceinline__ int64_t opaque(int64_t v) {
  asm volatile("" : "+l"(v));
  return v;
}

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronously; none read (zeros written) where !valid.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(__cvta_generic_to_global(src)), "r"(valid ? 16 : 0)
               : "memory");
}

// Waits for every cp.async of this thread (the caller then syncs the CTA).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

// Four 8x8 matrices of 16-bit values; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

// d += a (16x16, row major) * b (16x8, column major), fp32 accumulation.
template <typename T>
__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1);
template <>
__device__ __forceinline__ void mma16816<__half>(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                                 uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&d)[4], const uint32_t (&a)[4],
                                                        uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Rows [0, valid) of a tile of kTileRows rows from `src` (rows `row_stride` apart, `dim`
// contiguous values each) into `dst` (rows kD + 8 apart), zeros elsewhere. `vec`: 16-byte
// cp.async chunks (the caller waits for them); else element by element.
template <typename T, int kD, int kThreads, int kTileRows>
__device__ __forceinline__ void load_tile(T* dst, const T* src, int64_t row_stride, int valid,
                                          int64_t dim, bool vec) {
  constexpr int kLd = kD + 8;
  row_stride = opaque(row_stride);  // else every row's offset stays in a register
  if (vec) {
    // A lane takes one chunk column (of a power of two >= the row's chunks) of every kStep-th row.
    constexpr int kChunks = kD / 8;
    constexpr int kLanes = kChunks <= 4 ? 4 : kChunks <= 8 ? 8 : 16;
    constexpr int kStep = kThreads / kLanes;
    static_assert(kThreads % kLanes == 0 && kTileRows % kStep == 0);
    const int c = static_cast<int>(threadIdx.x) % kLanes * 8;
    const int r0 = static_cast<int>(threadIdx.x) / kLanes;
    if (kChunks != kLanes && c >= kD) return;
    const bool dim_live = c < dim;
    const T* from = src + r0 * row_stride + c;
    const int64_t from_step = kStep * row_stride;
    T* to = dst + r0 * kLd + c;
#pragma unroll
    for (int i = 0; i < kTileRows / kStep; ++i) {
      const bool live = dim_live && r0 + i * kStep < valid;
      // A chunk not read still needs an address: the tile's first row.
      cp_async16(to + i * kStep * kLd, live ? from + i * from_step : src, live);
    }
  } else {
    static_assert(kTileRows * kD % kThreads == 0);
    const T zero = from_float<T>(0.0f);
#pragma unroll 4
    for (int i = 0; i < kTileRows * kD / kThreads; ++i) {
      const int e = static_cast<int>(threadIdx.x) + i * kThreads;
      const int r = e / kD, c = e % kD;
      dst[r * kLd + c] = r < valid && c < dim ? src[r * row_stride + c] : zero;
    }
  }
}

// Adds the mask to (Add) or fills (Where) the scores of keys [0, kv_valid) of a tile: s[j][e] is
// key 8j + 2t + e % 2 of row e / 2, whose mask offset is at[e / 2] + (8j + e % 2) * ks (kUnit:
// ks = 1, so that the offsets are constants).
template <typename T, bool kUnit>
__device__ __forceinline__ void apply_mask(float (&s)[kKeys / 8][4], const AttentionArgs& a,
                                           const int64_t (&at)[2], int64_t ks, int kv_valid,
                                           int t) {
  if (!kUnit) ks = opaque(ks);
  auto offset = [&](int j, int e) {
    return at[e / 2] + (kUnit ? 8 * j + e % 2 : (8 * j + e % 2) * ks);
  };
  if (a.mask_kind == AttentionMask::Add) {
    const T* mask = static_cast<const T*>(a.mask);
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const int col = 8 * j + 2 * t;
        if (col < kv_valid) s[j][e] += to_float(__ldg(mask + offset(j, e)));
        if (col + 1 < kv_valid) s[j][e + 1] += to_float(__ldg(mask + offset(j, e + 1)));
        round_pair<T>(s[j][e], s[j][e + 1]);
      }
  } else {
    const unsigned char* cond = static_cast<const unsigned char*>(a.mask);
    const bool fill_when = a.mask_kind == AttentionMask::WhereTrue;
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (8 * j + 2 * t + e % 2 < kv_valid && (__ldg(cond + offset(j, e)) != 0) == fill_when)
          s[j][e] = a.fill;
  }
}

// A tile's scores s (C fragments: s[j][e] is key 8j + 2t + e % 2 of row g + 8 (e / 2)) scaled by
// alpha and rounded, then masked as the unfused graph masks them; keys from kv_valid on (past
// kv_len) get -inf. mask_row[r]: the mask offset of row g + 8r; key0: the tile's first key.
template <typename T>
__device__ __forceinline__ void scale_and_mask(float (&s)[kKeys / 8][4], const AttentionArgs& a,
                                               const int64_t (&mask_row)[2], int64_t key0,
                                               int kv_valid, int t) {
#pragma unroll
  for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      s[j][e] *= a.alpha;
      s[j][e + 1] *= a.alpha;
      round_pair<T>(s[j][e], s[j][e + 1]);
    }
  if (a.mask_kind != AttentionMask::None) {
    const int64_t ks = a.mask_stride[3];
    const int64_t at[2] = {mask_row[0] + (key0 + 2 * t) * ks, mask_row[1] + (key0 + 2 * t) * ks};
    if (ks == 1) {
      apply_mask<T, true>(s, a, at, ks, kv_valid, t);
    } else {
      apply_mask<T, false>(s, a, at, ks, kv_valid, t);
    }
  }
  if (kv_valid < kKeys) {
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (8 * j + 2 * t + e % 2 >= kv_valid) s[j][e] = -INFINITY;
  }
}

// Fragment layout of mma.m16n8k16 (g = lane / 4, t = lane % 4): the A fragment's registers
// hold rows g, g + 8, g, g + 8 at columns 2t, 2t, 2t + 8, 2t + 8 (two values each); B's two hold
// rows 2t and 2t + 8 of column g; C's four are rows g, g, g + 8, g + 8 at columns 2t, 2t + 1.
template <typename T, int kD, int kWarps>
__global__ void __launch_bounds__(32 * kWarps)
    attention_tc_kernel(AttentionArgs a, bool vec, bool vec_out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using S = TcShape<kD, kWarps>;
  constexpr int kLd = S::kLd;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem + S::kQ);
  T* ks = reinterpret_cast<T*>(smem + S::kK);
  T* vs = reinterpret_cast<T*>(smem + S::kV);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;

  const int64_t b = blockIdx.z, h = blockIdx.y, q0 = static_cast<int64_t>(blockIdx.x) * S::kRows;
  const T* q = static_cast<const T*>(a.q) + b * a.q_stride[0] + h * a.q_stride[1];
  const T* k = static_cast<const T*>(a.k) + b * a.k_stride[0] + h * a.k_stride[1];
  const T* v = static_cast<const T*>(a.v) + b * a.v_stride[0] + h * a.v_stride[1];
  const int64_t kv_len = a.kv_len;
  const int q_valid = static_cast<int>(a.q_len - q0 < S::kRows ? a.q_len - q0 : S::kRows);
  const int first_valid = static_cast<int>(kv_len < kKeys ? kv_len : kKeys);
  load_tile<T, kD, S::kThreads, S::kRows>(qs, q + q0 * a.q_stride[2], a.q_stride[2], q_valid,
                                          a.head_dim, vec);
  load_tile<T, kD, S::kThreads, kKeys>(ks, k, a.k_stride[2], first_valid, a.head_dim, vec);
  load_tile<T, kD, S::kThreads, kKeys>(vs, v, a.v_stride[2], first_valid, a.v_dim, vec);
  cp_async_wait_all();
  __syncthreads();
  // This warp's 16 rows of Q as A fragments, 16 dims each.
  uint32_t qf[kD / 16][4];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
    ldmatrix_x4(qf[kk], qs + (warp * 16 + lane % 16) * kLd + kk * 16 + (lane / 16) * 8);

  // Rows g and g + 8 of this warp; a row past q_len reads row 0's mask and is not stored.
  const int64_t row = q0 + warp * 16 + g;
  const int64_t mask_head = b * a.mask_stride[0] + h * a.mask_stride[1];
  const int64_t mask_row[2] = {mask_head + (row < a.q_len ? row : 0) * a.mask_stride[2],
                               mask_head + (row + 8 < a.q_len ? row + 8 : 0) * a.mask_stride[2]};
  float o[kD / 8][4];
#pragma unroll
  for (int d = 0; d < kD / 8; ++d) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // l: this lane's part of the sum

  int stage = 0;
  for (int64_t k0 = 0; k0 < kv_len; k0 += kKeys, stage ^= 1) {
    const T* kt = ks + stage * S::kTile;
    const T* vt = vs + stage * S::kTile;
    if (k0 + kKeys < kv_len) {  // the next tile, into the stage the last iteration read
      const int64_t next = k0 + kKeys;
      const int valid = static_cast<int>(kv_len - next < kKeys ? kv_len - next : kKeys);
      load_tile<T, kD, S::kThreads, kKeys>(ks + (stage ^ 1) * S::kTile, k + next * a.k_stride[2],
                                           a.k_stride[2], valid, a.head_dim, vec);
      load_tile<T, kD, S::kThreads, kKeys>(vs + (stage ^ 1) * S::kTile, v + next * a.v_stride[2],
                                           a.v_stride[2], valid, a.v_dim, vec);
    }
    // S = Q Kᵀ: K's rows are B's columns, so ldmatrix without .trans gives its fragments; one
    // x4 holds two key blocks of 8 for 16 dims.
    float s[kKeys / 8][4];
#pragma unroll
    for (int j = 0; j < kKeys / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk)
#pragma unroll
      for (int jp = 0; jp < kKeys / 16; ++jp) {
        uint32_t kb[4];
        ldmatrix_x4(
            kb, kt + (jp * 16 + lane % 8 + (lane / 16) * 8) * kLd + kk * 16 + (lane / 8 % 2) * 8);
        mma16816<T>(s[2 * jp], qf[kk], kb[0], kb[1]);
        mma16816<T>(s[2 * jp + 1], qf[kk], kb[2], kb[3]);
      }
    const int kv_valid = static_cast<int>(kv_len - k0 < kKeys ? kv_len - k0 : kKeys);
    scale_and_mask<T>(s, a, mask_row, k0, kv_valid, t);

    // Online softmax of rows g (r = 0) and g + 8 (r = 1): exp(x - max) as exp2((x - max)
    // log2(e)); the difference first, as max log2(e) overflows where max is near float's lowest
    // (a fill of it: a row of such scores averages V, as unfused).
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j)
        tile_max = fmaxf(tile_max, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(kFull, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(kFull, tile_max, 2));
      const float m_new = fmaxf(m[r], tile_max);
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      const float correction = exp2f((m[r] - base) * kLog2e);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
        for (int e = 2 * r; e < 2 * r + 2; ++e) {
          s[j][e] = exp2f((s[j][e] - base) * kLog2e);
          sum += s[j][e];
        }
      l[r] = l[r] * correction + sum;
      m[r] = m_new;
#pragma unroll
      for (int d = 0; d < kD / 8; ++d) {
        o[d][2 * r] *= correction;
        o[d][2 * r + 1] *= correction;
      }
    }

    // O += P V: the C fragments of key blocks 2kk and 2kk + 1 are the A fragment of keys
    // 16kk..16kk+15; V's rows are B's rows, so ldmatrix .trans gives its fragments.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const uint32_t pa[4] = {
          pack<T>(s[2 * kk][0], s[2 * kk][1]), pack<T>(s[2 * kk][2], s[2 * kk][3]),
          pack<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(
            vb, vt + (kk * 16 + lane % 8 + (lane / 8 % 2) * 8) * kLd + dp * 16 + (lane / 16) * 8);
        mma16816<T>(o[2 * dp], pa, vb[0], vb[1]);
        mma16816<T>(o[2 * dp + 1], pa, vb[2], vb[3]);
      }
    }
    cp_async_wait_all();
    __syncthreads();  // the next tile is in; every warp is done with this one's stage
  }

  // O / sum, through this warp's rows of the Q tile (its own since the fragments were read),
  // then out in 16-byte chunks where the output's rows allow. l = 0 (every score -inf) gives
  // 0 * inf = NaN, as unfused.
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(kFull, l[r], 1);
    l[r] += __shfl_xor_sync(kFull, l[r], 2);
    inv[r] = 1.0f / l[r];
  }
  T* ow = qs + warp * 16 * kLd;
  __syncwarp();
#pragma unroll
  for (int d = 0; d < kD / 8; ++d)
#pragma unroll
    for (int r = 0; r < 2; ++r)
      *reinterpret_cast<typename Pair<T>::Type*>(ow + (g + 8 * r) * kLd + 8 * d + 2 * t) =
          Pair<T>::of(o[d][2 * r] * inv[r], o[d][2 * r + 1] * inv[r]);
  __syncwarp();
  const int64_t first = q0 + warp * 16;
  const int rows = a.q_len - first >= 16 ? 16 : static_cast<int>(a.q_len - first);
  if (rows <= 0) return;
  T* out =
      static_cast<T*>(a.out) + b * a.out_stride[0] + h * a.out_stride[1] + first * a.out_stride[2];
  if (vec_out) {
    constexpr int kChunks = kD / 8;
#pragma unroll
    for (int i = 0; i < 16 * kChunks / 32; ++i) {
      const int e = lane + 32 * i;
      const int r = e / kChunks, c = (e % kChunks) * 8;
      if (r < rows && c < a.v_dim)
        *reinterpret_cast<uint4*>(out + r * a.out_stride[2] + c) =
            *reinterpret_cast<const uint4*>(ow + r * kLd + c);
    }
  } else {
    for (int r = 0; r < rows; ++r)
      for (int c = lane; c < a.v_dim; c += 32) out[r * a.out_stride[2] + c] = ow[r * kLd + c];
  }
#endif
}

// The masked score of query row `mask_row` (its mask offset) at key `key` (the per-row kernel).
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

// The multiprocessors and the compute capability's major version of `device`, asked once.
cudaError_t device_limits(int device, int* sm_count, int* major) {
  static std::atomic<int> cached_sms[64], cached_major[64];
  const bool cacheable = device >= 0 && device < 64;
  if (cacheable && cached_sms[device].load(std::memory_order_acquire) > 0) {
    *sm_count = cached_sms[device].load(std::memory_order_relaxed);
    *major = cached_major[device].load(std::memory_order_relaxed);
    return cudaSuccess;
  }
  cudaError_t status = cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, device);
  if (status == cudaSuccess)
    status = cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device);
  if (status != cudaSuccess) return status;
  if (cacheable && *sm_count > 0) {
    cached_major[device].store(*major, std::memory_order_relaxed);
    cached_sms[device].store(*sm_count, std::memory_order_release);
  }
  return cudaSuccess;
}

template <typename T, int kD, int kWarps>
cudaError_t opt_in(int device) {
  // Above 48 KiB a kernel opts in to its dynamic shared memory, once per device: on the
  // partition's eager first run, so the CUDA-graph capture of a later run makes no such call.
  static std::atomic<uint64_t> opted_in{0};
  const uint64_t bit = device >= 0 && device < 64 ? uint64_t{1} << device : 0;
  if (bit && (opted_in.load() & bit)) return cudaSuccess;
  const cudaError_t status = cudaFuncSetAttribute(attention_tc_kernel<T, kD, kWarps>,
                                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                  static_cast<int>(TcShape<kD, kWarps>::kBytes));
  if (status == cudaSuccess) opted_in.fetch_or(bit);
  return status;
}

template <typename T, int kD, int kWarps>
void launch_tc_warps(const AttentionArgs& a, bool vec, bool vec_out, cudaStream_t stream) {
  using S = TcShape<kD, kWarps>;
  const dim3 grid(static_cast<unsigned>((a.q_len + S::kRows - 1) / S::kRows),
                  static_cast<unsigned>(a.heads), static_cast<unsigned>(a.batch));
  attention_tc_kernel<T, kD, kWarps><<<grid, S::kThreads, S::kBytes, stream>>>(a, vec, vec_out);
}

template <typename T, int kD>
cudaError_t launch_tc(const AttentionArgs& a, int device, int warps, bool vec, bool vec_out,
                      cudaStream_t stream) {
  // Every warp count at once: a later run of another shape may choose another.
  cudaError_t status = opt_in<T, kD, 1>(device);
  if (status == cudaSuccess) status = opt_in<T, kD, 2>(device);
  if (status == cudaSuccess) status = opt_in<T, kD, 4>(device);
  if (status != cudaSuccess) return status;
  if (warps == 1) {
    launch_tc_warps<T, kD, 1>(a, vec, vec_out, stream);
  } else if (warps == 2) {
    launch_tc_warps<T, kD, 2>(a, vec, vec_out, stream);
  } else {
    launch_tc_warps<T, kD, 4>(a, vec, vec_out, stream);
  }
  return cudaGetLastError();
}

// Whether every row of an operand starts 16-byte aligned and holds whole 16-byte chunks.
bool rows_in_chunks(const void* p, const int64_t* stride, int64_t dim) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0 || dim % 8 != 0) return false;
  for (int i = 0; i < 3; ++i)
    if (stride[i] % 8 != 0) return false;
  return true;
}

constexpr int kRowThreads = 128;  // the per-row kernel's CTA: a query row per warp

template <typename T>
cudaError_t attention_typed(const AttentionArgs& a, cudaStream_t stream) {
  const int64_t dim = a.head_dim > a.v_dim ? a.head_dim : a.v_dim;
  int device = 0, sm_count = 0, major = 0;
  cudaError_t status = cudaGetDevice(&device);
  if (status == cudaSuccess) status = device_limits(device, &sm_count, &major);
  if (status != cudaSuccess) return status;
  const int warps = attention_warps_per_cta(a, sm_count);
  const int64_t rows_per_cta = 16 * warps;
  const bool grid_fits = a.heads <= 65535 && a.batch <= 65535 &&
                         (a.q_len + rows_per_cta - 1) / rows_per_cta <= 0x7fffffffLL;
  if (dim <= kAttentionTensorCoreMaxDim && grid_fits && major >= 8) {
    const bool vec = rows_in_chunks(a.q, a.q_stride, a.head_dim) &&
                     rows_in_chunks(a.k, a.k_stride, a.head_dim) &&
                     rows_in_chunks(a.v, a.v_stride, a.v_dim);
    const bool vec_out = rows_in_chunks(a.out, a.out_stride, a.v_dim);
    if (dim <= 32) return launch_tc<T, 32>(a, device, warps, vec, vec_out, stream);
    if (dim <= 64) return launch_tc<T, 64>(a, device, warps, vec, vec_out, stream);
    if (dim <= 96) return launch_tc<T, 96>(a, device, warps, vec, vec_out, stream);
    return launch_tc<T, 128>(a, device, warps, vec, vec_out, stream);
  }
  const int64_t rows = a.batch * a.heads * a.q_len;
  attention_row_kernel<T><<<dev::blocks_for(rows, kRowThreads / 32), kRowThreads, 0, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace

int attention_warps_per_cta(const AttentionArgs& a, int sm_count) {
  if (a.warps_per_cta != 0) return a.warps_per_cta;
  for (const int warps : {4, 2}) {
    const int64_t tiles = (a.q_len + 16 * warps - 1) / (16 * warps);
    if (tiles * a.heads * a.batch >= 2 * int64_t{sm_count}) return warps;
  }
  return 1;
}

cudaError_t launch_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (a.warps_per_cta != 0 && a.warps_per_cta != 1 && a.warps_per_cta != 2 && a.warps_per_cta != 4)
    return cudaErrorInvalidValue;
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
