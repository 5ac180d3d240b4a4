// The fused attention kernel (backends/cuda/kernels/attention.cu) called through launch_attention
// on cuda:0, built into this test with attention.cu itself, against a reference in double that
// rounds where the unfused graph rounds: the scaled score and the masked score to the storage
// type. Covers what the graph-level tests (tests/gpu/transformer_fusion_test.cc, the op harness's
// attention cases) cannot reach: query and key lengths that cut tiles short, head dims that pad,
// value dims unlike the head dim, every mask kind and broadcast, any strides (the vectorized and
// the element-wise loads and stores, bit for bit the same), rows with every key masked (NaN), and
// 1, 2 and 4 warps per CTA (bit for bit the same). Every output buffer is poisoned and its gaps
// and tail must keep the poison. Label `gpu`: skips with one line where no GPU is usable.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cuda/kernels/attention_impl.h"

namespace switchyard::cuda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr uint16_t kGapBits = 0x7fff;     // NaN in both types: what no result may read
constexpr uint16_t kPoisonBits = 0x7e55;  // NaN with a payload: what the kernel must not write
constexpr int64_t kGuard = 256;           // poisoned elements after the output

// ---- storage values -----------------------------------------------------------------------

uint16_t to_bits(DType dtype, float v) {
  if (dtype == DType::Float16) return static_cast<__half_raw>(__float2half_rn(v)).x;
  return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(v)).x;
}

float from_bits(DType dtype, uint16_t bits) {
  if (dtype == DType::Float16) {
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }
  __nv_bfloat16_raw raw;
  raw.x = bits;
  return __bfloat162float(__nv_bfloat16(raw));
}

float round_to(DType dtype, float v) { return from_bits(dtype, to_bits(dtype, v)); }

// -65504, or bfloat16's -3.39e38.
float lowest_finite(DType dtype) {
  return from_bits(dtype, dtype == DType::Float16 ? 0xfbff : 0xff7f);
}

// ---- one case -----------------------------------------------------------------------------

struct Case {
  DType dtype = DType::Float16;
  int64_t batch = 1, heads = 2, q_len = 64, kv_len = 64, head_dim = 64, v_dim = 64;
  AttentionMask mask = AttentionMask::None;
  // The mask's dims that are not broadcast (its key dim always is kv_len).
  bool mask_batch = true, mask_head = false, mask_query = false;
  bool mask_keys_outer = false;  // stored [.., key, query]: the key stride is not 1
  bool causal = false;           // key j masked for query i where j > i (else random)
  float fill = -kInf;            // Where's fill
  int64_t masked_row = -1;       // this query row has keys [0, masked_keys) masked
  int64_t masked_keys = 0;
  bool finite_floor = false;  // an Add mask masks with the storage type's lowest, not -inf
  float alpha = 0;            // 0: 1 / sqrt(head_dim)
  int warps = 0;
  bool heads_inner = false;  // Q, K, V and the output [B, S, H, D], as the head split leaves them
  bool q_one_batch = false, kv_one_batch = false, kv_one_head = false;  // broadcast: stride 0
  int64_t pad = 0;      // elements between the rows of Q, K and V
  int64_t out_pad = 0;  // between the output's rows
  int64_t offset = 0;   // elements every operand starts past its 16-byte aligned buffer
  uint64_t seed = 1;
};

std::string describe(const Case& c) {
  std::ostringstream s;
  const char* masks[] = {"none", "add", "where_true", "where_false"};
  s << (c.dtype == DType::Float16 ? "fp16" : "bf16") << " b=" << c.batch << " h=" << c.heads
    << " q=" << c.q_len << " kv=" << c.kv_len << " d=" << c.head_dim << " dv=" << c.v_dim
    << " mask=" << masks[static_cast<int>(c.mask)];
  if (c.mask != AttentionMask::None)
    s << "[" << (c.mask_batch ? "B" : "1") << (c.mask_head ? "H" : "1")
      << (c.mask_query ? "Q" : "1") << "K" << (c.mask_keys_outer ? " keys outer" : "")
      << (c.causal ? " causal" : "") << "] fill=" << c.fill;
  if (c.masked_row >= 0) s << " row " << c.masked_row << " keys <" << c.masked_keys << " masked";
  if (c.finite_floor) s << " by the lowest finite value";
  s << " warps=" << c.warps;
  if (c.alpha != 0) s << " alpha=" << c.alpha;
  if (c.heads_inner) s << " BSHD";
  if (c.q_one_batch) s << " Q batch-broadcast";
  if (c.kv_one_batch) s << " KV batch-broadcast";
  if (c.kv_one_head) s << " KV head-broadcast";
  if (c.pad) s << " pad=" << c.pad;
  if (c.out_pad) s << " out_pad=" << c.out_pad;
  if (c.offset) s << " offset=" << c.offset;
  return s.str();
}

// An operand [batch, heads, len, dim] (a broadcast dim has size 1 and stride 0): its logical
// values and the buffer that holds them at `offset`, rows `dim + pad` apart, gaps holding NaN.
struct Operand {
  int64_t batch = 0, heads = 0, len = 0, dim = 0;
  int64_t strides[3] = {};
  int64_t offset = 0;
  std::vector<float> values;    // logical, row-major
  std::vector<uint16_t> store;  // the buffer
  float at(int64_t b, int64_t h, int64_t s, int64_t d) const {
    if (batch == 1) b = 0;
    if (heads == 1) h = 0;
    return values[static_cast<size_t>(((b * heads + h) * len + s) * dim + d)];
  }
};

// Where element (b, h, s, d) of an operand of these sizes lies (layout of Case::heads_inner).
void lay_out(Operand& x, bool heads_inner, int64_t pad) {
  const int64_t pitch = x.dim + pad;
  int64_t st[3];
  if (heads_inner) {
    st[0] = x.len * x.heads * pitch, st[1] = pitch, st[2] = x.heads * pitch;
  } else {
    st[0] = x.heads * x.len * pitch, st[1] = x.len * pitch, st[2] = pitch;
  }
  x.strides[0] = x.batch == 1 ? 0 : st[0];
  x.strides[1] = x.heads == 1 ? 0 : st[1];
  x.strides[2] = st[2];
}

int64_t position(const Operand& x, int64_t b, int64_t h, int64_t s, int64_t d) {
  return x.offset + b * x.strides[0] + h * x.strides[1] + s * x.strides[2] + d;
}

Operand make_operand(const Case& c, int64_t batch, int64_t heads, int64_t len, int64_t dim,
                     float lo, float hi, std::mt19937_64& rng) {
  Operand x;
  x.batch = batch, x.heads = heads, x.len = len, x.dim = dim, x.offset = c.offset;
  std::uniform_real_distribution<float> u(lo, hi);
  x.values.resize(static_cast<size_t>(batch * heads * len * dim));
  for (float& v : x.values) v = round_to(c.dtype, u(rng));
  lay_out(x, c.heads_inner, c.pad);
  x.store.assign(static_cast<size_t>(c.offset + batch * heads * len * (dim + c.pad)), kGapBits);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < len; ++s)
        for (int64_t d = 0; d < dim; ++d)
          x.store[static_cast<size_t>(position(x, b, h, s, d))] =
              to_bits(c.dtype, x.at(b, h, s, d));
  return x;
}

// The mask [mb, mh, mq, kv_len] (sizes 1 where broadcast): an additive mask's values or a
// condition, and its buffer (storage type or bool bytes) with element strides.
struct Mask {
  int64_t dims[4] = {};
  int64_t strides[4] = {};
  std::vector<float> values;  // logical, row-major
  std::vector<uint16_t> store16;
  std::vector<uint8_t> store8;
  float at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t idx[4] = {dims[0] == 1 ? 0 : b, dims[1] == 1 ? 0 : h, dims[2] == 1 ? 0 : i, j};
    return values[static_cast<size_t>(((idx[0] * dims[1] + idx[1]) * dims[2] + idx[2]) * dims[3] +
                                      idx[3])];
  }
};

Mask make_mask(const Case& c, std::mt19937_64& rng) {
  Mask m;
  if (c.mask == AttentionMask::None) return m;
  m.dims[0] = c.mask_batch ? c.batch : 1;
  m.dims[1] = c.mask_head ? c.heads : 1;
  m.dims[2] = c.mask_query ? c.q_len : 1;
  m.dims[3] = c.kv_len;
  const bool add = c.mask == AttentionMask::Add;
  // The value that masks a key, and one that leaves it.
  const float floor = c.finite_floor ? lowest_finite(c.dtype) : -kInf;
  const float masked = add ? floor : c.mask == AttentionMask::WhereTrue ? 1.0f : 0.0f;
  const float kept = add ? 0.0f : 1.0f - masked;
  std::uniform_real_distribution<float> u(0.0f, 1.0f), add_value(-3.0f, 1.0f);
  m.values.resize(static_cast<size_t>(m.dims[0] * m.dims[1] * m.dims[2] * m.dims[3]));
  for (int64_t b = 0; b < m.dims[0]; ++b)
    for (int64_t h = 0; h < m.dims[1]; ++h)
      for (int64_t i = 0; i < m.dims[2]; ++i)
        for (int64_t j = 0; j < m.dims[3]; ++j) {
          float v = 0;
          if (c.causal) {
            v = j > i ? masked : add ? round_to(c.dtype, add_value(rng)) : kept;
          } else if (u(rng) < 0.2f) {
            v = masked;
          } else {
            v = add ? round_to(c.dtype, add_value(rng)) : kept;
          }
          const int64_t row = c.mask_query ? c.masked_row : 0;
          if (c.masked_row >= 0 && i == row && j < c.masked_keys) v = masked;
          m.values[static_cast<size_t>(((b * m.dims[1] + h) * m.dims[2] + i) * m.dims[3] + j)] = v;
        }
  // Row-major, or with the key dim before the query dim.
  int64_t st[4];
  if (c.mask_keys_outer) {
    st[3] = m.dims[2], st[2] = 1, st[1] = m.dims[2] * m.dims[3];
  } else {
    st[3] = 1, st[2] = m.dims[3], st[1] = m.dims[2] * m.dims[3];
  }
  st[0] = m.dims[1] * st[1];
  for (int i = 0; i < 4; ++i) m.strides[i] = m.dims[i] == 1 && i < 3 ? 0 : st[i];
  const size_t n = m.values.size();
  if (add) {
    m.store16.resize(n);
  } else {
    m.store8.resize(n);
  }
  for (int64_t b = 0; b < m.dims[0]; ++b)
    for (int64_t h = 0; h < m.dims[1]; ++h)
      for (int64_t i = 0; i < m.dims[2]; ++i)
        for (int64_t j = 0; j < m.dims[3]; ++j) {
          const size_t p = static_cast<size_t>(b * st[0] + h * st[1] + i * st[2] + j * st[3]);
          const float v = m.at(b, h, i, j);
          if (add) {
            m.store16[p] = to_bits(c.dtype, v);
          } else {
            m.store8[p] = v != 0;
          }
        }
  return m;
}

// softmax(alpha Q Kᵀ (+ mask)) V [batch, heads, q_len, v_dim] in double, rounding the scaled and
// the masked scores to the storage type as the unfused MatMul, Mul and Add do; a row whose every
// score is -inf is NaN (the unfused 0/0).
std::vector<double> reference(const Case& c, float alpha, const Operand& q, const Operand& k,
                              const Operand& v, const Mask& m) {
  std::vector<double> out(static_cast<size_t>(c.batch * c.heads * c.q_len * c.v_dim));
  std::vector<double> s(static_cast<size_t>(c.kv_len));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.q_len; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.head_dim; ++d)
            dot += double{q.at(b, h, i, d)} * k.at(b, h, j, d);
          float x = round_to(c.dtype, static_cast<float>(dot) * alpha);
          if (c.mask == AttentionMask::Add) {
            x = round_to(c.dtype, x + m.at(b, h, i, j));
          } else if (c.mask == AttentionMask::WhereTrue) {
            x = m.at(b, h, i, j) != 0 ? c.fill : x;
          } else if (c.mask == AttentionMask::WhereFalse) {
            x = m.at(b, h, i, j) != 0 ? x : c.fill;
          }
          s[static_cast<size_t>(j)] = x;
          mx = std::max(mx, double{x});
        }
        double sum = 0;
        for (double& x : s) sum += (x = std::exp(x - mx));  // mx = -inf: exp(NaN)
        for (int64_t d = 0; d < c.v_dim; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < c.kv_len; ++j)
            acc += s[static_cast<size_t>(j)] * v.at(b, h, j, d);
          out[static_cast<size_t>(((b * c.heads + h) * c.q_len + i) * c.v_dim + d)] = acc / sum;
        }
      }
  return out;
}

// |got - want| <= atol + rtol |want|: the reference rounds the scores as the kernel does, so what
// is left is the probabilities' and the result's rounding to the storage type (2^-11 of fp16,
// 2^-8 of bf16, relative) and the order of fp32 sums; the margin is twice that.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType dtype) {
  if (dtype == DType::Float16) return {2e-3, 2e-3};
  return {1e-2, 1e-2};
}

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&ptr, bytes > 0 ? bytes : 1) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

template <typename V>
void* upload(DeviceBuffer& buf, const std::vector<V>& host) {
  EXPECT_NE(buf.ptr, nullptr) << "cudaMalloc failed";
  if (!buf.ptr) return nullptr;
  EXPECT_EQ(cudaMemcpy(buf.ptr, host.data(), host.size() * sizeof(V), cudaMemcpyHostToDevice),
            cudaSuccess);
  return buf.ptr;
}

// Runs the case and checks it; returns the result's bits [batch, heads, q_len, v_dim] (empty
// when it did not run), for the callers that compare runs bit for bit.
std::vector<uint16_t> run_case(const Case& c) {
  SCOPED_TRACE(describe(c));
  std::mt19937_64 rng(c.seed);
  const Operand q =
      make_operand(c, c.q_one_batch ? 1 : c.batch, c.heads, c.q_len, c.head_dim, -1.5f, 1.5f, rng);
  const int64_t kv_batch = c.kv_one_batch ? 1 : c.batch, kv_heads = c.kv_one_head ? 1 : c.heads;
  const Operand k = make_operand(c, kv_batch, kv_heads, c.kv_len, c.head_dim, -1.5f, 1.5f, rng);
  const Operand v = make_operand(c, kv_batch, kv_heads, c.kv_len, c.v_dim, -1.0f, 1.0f, rng);
  const Mask m = make_mask(c, rng);

  // The output, poisoned, kGuard elements past its end too.
  Operand o;
  o.batch = c.batch, o.heads = c.heads, o.len = c.q_len, o.dim = c.v_dim;
  lay_out(o, c.heads_inner, c.out_pad);
  const int64_t out_elements = c.batch * c.heads * c.q_len * (c.v_dim + c.out_pad);
  std::vector<uint16_t> out(static_cast<size_t>(out_elements + kGuard), kPoisonBits);

  DeviceBuffer dq(q.store.size() * 2), dk(k.store.size() * 2), dv(v.store.size() * 2);
  DeviceBuffer dout(out.size() * 2);
  DeviceBuffer dmask(std::max(m.store16.size() * 2, m.store8.size()));
  const void* mask = nullptr;
  if (c.mask == AttentionMask::Add) mask = upload(dmask, m.store16);
  if (c.mask == AttentionMask::WhereTrue || c.mask == AttentionMask::WhereFalse)
    mask = upload(dmask, m.store8);
  if (!upload(dq, q.store) || !upload(dk, k.store) || !upload(dv, v.store) || !upload(dout, out) ||
      !dmask.ptr)
    return {};
  AttentionArgs a;
  a.dtype = c.dtype;
  a.q = static_cast<const uint16_t*>(dq.ptr) + q.offset;
  a.k = static_cast<const uint16_t*>(dk.ptr) + k.offset;
  a.v = static_cast<const uint16_t*>(dv.ptr) + v.offset;
  a.out = dout.ptr;
  a.batch = c.batch, a.heads = c.heads, a.q_len = c.q_len, a.kv_len = c.kv_len;
  a.head_dim = c.head_dim, a.v_dim = c.v_dim;
  for (int i = 0; i < 3; ++i) {
    a.q_stride[i] = q.strides[i];
    a.k_stride[i] = k.strides[i];
    a.v_stride[i] = v.strides[i];
    a.out_stride[i] = o.strides[i];
  }
  const float alpha = c.alpha != 0 ? c.alpha : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.alpha = alpha;
  a.mask_kind = c.mask;
  a.mask = mask;
  for (int i = 0; i < 4; ++i) a.mask_stride[i] = m.strides[i];
  a.fill = c.fill;
  a.warps_per_cta = c.warps;
  EXPECT_EQ(launch_attention(a, nullptr), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.data(), dout.ptr, out.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

  const std::vector<double> want = reference(c, alpha, q, k, v, m);
  const Tolerance tol = tolerance(c.dtype);
  std::vector<uint16_t> result(want.size());
  std::vector<bool> is_result(out.size(), false);
  int64_t bad = 0;
  std::string first_bad;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.q_len; ++i)
        for (int64_t d = 0; d < c.v_dim; ++d) {
          const size_t p = static_cast<size_t>(position(o, b, h, i, d));
          const size_t r = static_cast<size_t>(((b * c.heads + h) * c.q_len + i) * c.v_dim + d);
          is_result[p] = true;
          result[r] = out[p];
          const double got = from_bits(c.dtype, out[p]), w = want[r];
          const bool ok = std::isnan(w) ? std::isnan(got)
                                        : std::fabs(got - w) <= tol.atol + tol.rtol * std::fabs(w);
          if (ok) continue;
          if (bad++ == 0) {
            std::ostringstream s;
            s << "[b " << b << ", h " << h << ", q " << i << ", d " << d << "]: got " << got
              << ", want " << w;
            first_bad = s.str();
          }
        }
  EXPECT_EQ(bad, 0) << bad << " of " << want.size() << " results differ; the first " << first_bad;
  int64_t overwritten = 0;
  for (size_t p = 0; p < out.size(); ++p)
    if (!is_result[p] && out[p] != kPoisonBits) ++overwritten;
  EXPECT_EQ(overwritten, 0) << "elements outside the result (its gaps and the " << kGuard
                            << " after it) were written";
  return result;
}

std::string gpu_unavailable() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return cudaGetErrorString(status);
  if (count == 0) return "no CUDA device";
  return "";
}

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    const std::string why = gpu_unavailable();                                          \
    if (!why.empty()) GTEST_SKIP() << "no GPU, attention kernel test skipped: " << why; \
  } while (0)

const int kWarpChoices[] = {0, 1, 2, 4};

// ---- tests ----------------------------------------------------------------------------------

// The grid rule, host only: BERT-base at batch 1 (12 heads x 128 queries) on the H200's 132
// multiprocessors takes CTAs of one warp (96 of them), batch 64 four (1536); a forced count wins.
TEST(CudaAttentionKernel, WarpsPerCtaFillTheGpu) {
  AttentionArgs a;
  a.heads = 12, a.q_len = 128;
  a.batch = 1;
  EXPECT_EQ(attention_warps_per_cta(a, 132), 1);
  a.batch = 3;  // 4 warps: 72 CTAs, 2: 144, 1: 288 >= 264
  EXPECT_EQ(attention_warps_per_cta(a, 132), 1);
  a.batch = 6;  // 2 warps: 288
  EXPECT_EQ(attention_warps_per_cta(a, 132), 2);
  a.batch = 11;  // 4 warps: 264
  EXPECT_EQ(attention_warps_per_cta(a, 132), 4);
  a.batch = 64;
  EXPECT_EQ(attention_warps_per_cta(a, 132), 4);
  a.warps_per_cta = 2;
  EXPECT_EQ(attention_warps_per_cta(a, 132), 2);
  a.warps_per_cta = 0;
  a.batch = 1, a.heads = 1, a.q_len = 1;
  EXPECT_EQ(attention_warps_per_cta(a, 132), 1);
}

TEST(CudaAttentionKernel, OnlyOneTwoOrFourWarpsPerCta) {
  AttentionArgs a;  // refused before anything is read or launched
  a.batch = a.heads = a.q_len = a.kv_len = a.head_dim = a.v_dim = 1;
  for (int warps : {3, 8, -1}) {
    a.warps_per_cta = warps;
    EXPECT_EQ(launch_attention(a, nullptr), cudaErrorInvalidValue) << warps << " warps";
  }
}

// Every pair of lengths around the tiles' sizes (16 query rows per warp, 64 keys per tile),
// fp16 and (fewer) bf16, the warps per CTA cycled.
TEST(CudaAttentionKernel, QueryAndKeyLengths) {
  SKIP_WITHOUT_GPU();
  const int64_t lengths[] = {1, 15, 16, 17, 64, 100, 128, 129, 300};
  uint64_t seed = 100;
  int n = 0;
  for (int64_t q_len : lengths)
    for (int64_t kv_len : lengths) {
      Case c;
      c.q_len = q_len, c.kv_len = kv_len;
      c.mask = AttentionMask::Add;
      c.warps = kWarpChoices[n++ % 4];
      c.seed = seed++;
      run_case(c);
      if (q_len == kv_len || kv_len == 1) {
        c.dtype = DType::BFloat16;
        c.batch = 3, c.heads = 1;
        c.seed = seed++;
        run_case(c);
      }
    }
}

// Head dims padded to a multiple of 16 (16, 40, 80, ...), value dims unlike the head dim, and
// each padded width the kernel is built for (32, 64, 96, 128).
TEST(CudaAttentionKernel, HeadAndValueDims) {
  SKIP_WITHOUT_GPU();
  const std::pair<int64_t, int64_t> dims[] = {
      {16, 16}, {32, 32},  {40, 40}, {64, 64}, {80, 80},  {96, 96},  {128, 128}, {8, 8},
      {64, 32}, {32, 128}, {128, 8}, {40, 72}, {16, 128}, {128, 16}, {24, 56},   {112, 64}};
  uint64_t seed = 300;
  int n = 0;
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (const auto& [head_dim, v_dim] : dims) {
      Case c;
      c.dtype = dtype;
      c.batch = 3, c.heads = 2, c.q_len = 100, c.kv_len = 129;
      c.head_dim = head_dim, c.v_dim = v_dim;
      c.mask = AttentionMask::Add;
      c.warps = kWarpChoices[n++ % 4];
      c.seed = seed++;
      run_case(c);
    }
}

// Every mask kind in every broadcast the graph can give it ([1,1,1,K] to [B,H,Q,K]), keys not
// contiguous, a finite fill (the masked keys keep a share), GPT's causal mask, and none.
TEST(CudaAttentionKernel, Masks) {
  SKIP_WITHOUT_GPU();
  struct Shape {
    bool batch, head, query, keys_outer;
  };
  const Shape shapes[] = {{false, false, false, false}, {true, false, false, false},
                          {true, true, true, false},    {false, false, true, false},
                          {false, true, false, false},  {true, false, true, true}};
  uint64_t seed = 500;
  int n = 0;
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    for (AttentionMask kind :
         {AttentionMask::Add, AttentionMask::WhereTrue, AttentionMask::WhereFalse})
      for (const Shape& s : shapes)
        for (float fill : {-kInf, -2.5f}) {
          if (kind == AttentionMask::Add && fill != -kInf) continue;  // Add has no fill
          Case c;
          c.dtype = dtype;
          c.batch = 2, c.heads = 3, c.q_len = 70, c.kv_len = 129;
          c.mask = kind;
          c.mask_batch = s.batch, c.mask_head = s.head, c.mask_query = s.query;
          c.mask_keys_outer = s.keys_outer;
          c.fill = fill;
          c.warps = kWarpChoices[n++ % 4];
          c.seed = seed++;
          run_case(c);
        }
    Case causal;
    causal.dtype = dtype;
    causal.batch = 2, causal.heads = 4, causal.q_len = causal.kv_len = 130;
    causal.mask = AttentionMask::WhereTrue;
    causal.mask_batch = false, causal.mask_query = true, causal.causal = true;
    causal.seed = seed++;
    run_case(causal);
    causal.mask = AttentionMask::WhereFalse;  // the same keys masked where cond is false
    causal.seed = seed++;
    run_case(causal);
    Case none;
    none.dtype = dtype;
    none.batch = 2, none.heads = 3, none.q_len = 33, none.kv_len = 200;
    none.seed = seed++;
    run_case(none);
  }
}

// A row whose every key is masked gives NaN, as the unfused softmax's 0/0, and only that row; a
// row whose first tile is masked whole (its running maximum -inf until the second) does not.
TEST(CudaAttentionKernel, RowWithEveryKeyMaskedIsNaN) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 700;
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (AttentionMask kind :
         {AttentionMask::Add, AttentionMask::WhereTrue, AttentionMask::WhereFalse})
      for (int64_t masked_keys : {int64_t{150}, int64_t{70}}) {
        Case c;
        c.dtype = dtype;
        c.batch = 2, c.heads = 2, c.q_len = 40, c.kv_len = 150;
        c.mask = kind;
        c.mask_batch = true, c.mask_query = true;
        c.masked_row = 21, c.masked_keys = masked_keys;
        c.seed = seed++;
        const std::vector<uint16_t> out = run_case(c);
        ASSERT_FALSE(out.empty());
        for (int64_t b = 0; b < c.batch; ++b)
          for (int64_t h = 0; h < c.heads; ++h)
            for (int64_t i : {int64_t{20}, int64_t{21}, int64_t{22}})
              for (int64_t d = 0; d < c.v_dim; ++d) {
                const float x = from_bits(
                    dtype,
                    out[static_cast<size_t>(((b * c.heads + h) * c.q_len + i) * c.v_dim + d)]);
                const bool want_nan = i == 21 && masked_keys == c.kv_len;
                ASSERT_EQ(std::isnan(x), want_nan) << describe(c) << ": [b " << b << ", h " << h
                                                   << ", q " << i << ", d " << d << "] = " << x;
              }
      }
}

// A row masked whole with the lowest finite value (an Add mask of the storage type's, or Where's
// fill of float's, as exported models mask with finfo.min) is no NaN: its scores are all equal,
// so it averages V, as the unfused softmax does.
TEST(CudaAttentionKernel, RowMaskedWithTheLowestFiniteValueAveragesV) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (AttentionMask kind : {AttentionMask::Add, AttentionMask::WhereTrue}) {
      Case c;
      c.dtype = dtype;
      c.batch = 2, c.heads = 2, c.q_len = 40, c.kv_len = 150;
      c.mask = kind;
      c.mask_batch = true, c.mask_query = true;
      c.masked_row = 21, c.masked_keys = c.kv_len;
      c.finite_floor = true;
      c.fill = std::numeric_limits<float>::lowest();
      c.seed = seed++;
      const std::vector<uint16_t> out = run_case(c);
      ASSERT_FALSE(out.empty());
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_FALSE(std::isnan(from_bits(dtype, out[i]))) << describe(c) << ": NaN at " << i;
    }
}

// Strides: the head split's [B, S, H, D], K and V shared by every head (multi-query) or batch,
// Q shared by the batch; rows with gaps (16-byte chunks: the vectorized loads; else the
// element-wise ones), operands that start off a 16-byte boundary, an odd head dim, an output with
// gaps between its rows. The vectorized and the element-wise paths give the same bits.
TEST(CudaAttentionKernel, StridesAndBroadcast) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    Case base;
    base.dtype = dtype;
    base.batch = 2, base.heads = 3, base.q_len = 90, base.kv_len = 140;
    base.mask = AttentionMask::Add;
    base.seed = seed++;
    const std::vector<uint16_t> plain = run_case(base);
    ASSERT_FALSE(plain.empty());
    for (int variant = 0; variant < 6; ++variant) {
      Case c = base;
      c.heads_inner = variant == 0;
      c.pad = variant == 1 ? 8 : variant == 2 ? 3 : 0;
      c.offset = variant == 3 ? 1 : 0;
      c.out_pad = variant == 4 ? 8 : variant == 5 ? 1 : 0;
      EXPECT_EQ(run_case(c), plain) << describe(c) << ": not the bits of " << describe(base);
    }
    for (int variant = 0; variant < 4; ++variant) {
      Case c = base;
      c.seed = seed++;
      c.kv_one_head = variant == 0 || variant == 3;
      c.kv_one_batch = variant == 1 || variant == 3;
      c.q_one_batch = variant == 2 || variant == 3;
      c.heads_inner = variant == 3;
      run_case(c);
    }
    Case odd = base;  // rows of 36 values: no 16-byte chunks
    odd.head_dim = odd.v_dim = 36;
    odd.seed = seed++;
    run_case(odd);
    odd.head_dim = 48, odd.v_dim = 20;
    odd.out_pad = 5;
    odd.seed = seed++;
    run_case(odd);
  }
}

// BERT-base's shape (and heads 1, 2) at batch 1 and 3 with CTAs of 1, 2 and 4 warps and the
// launch's own choice: each warp computes its rows alone, so every count gives the same bits;
// also where the last CTA's last warps have no rows (q 300).
TEST(CudaAttentionKernel, WarpsPerCtaGiveTheSameBits) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 1100;
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (int64_t batch : {1, 3})
      for (int64_t heads : {1, 2, 12})
        for (int64_t len : {128, 300}) {
          if (heads == 12 && len != 128) continue;
          Case c;
          c.dtype = dtype;
          c.batch = batch, c.heads = heads, c.q_len = c.kv_len = len;
          c.mask = AttentionMask::Add;
          c.heads_inner = true;
          c.seed = seed++;
          std::vector<uint16_t> first;
          for (int warps : kWarpChoices) {
            c.warps = warps;
            std::vector<uint16_t> out = run_case(c);
            ASSERT_FALSE(out.empty());
            if (first.empty()) {
              first = std::move(out);
            } else {
              EXPECT_EQ(out, first) << describe(c) << ": not the bits of the launch's own choice";
            }
          }
        }
}

// Alpha other than 1/sqrt(D) (the graph's Mul or Div constant), and the per-row kernel that head
// and value dims above kAttentionTensorCoreMaxDim take.
TEST(CudaAttentionKernel, AlphaAndLongHeadDims) {
  SKIP_WITHOUT_GPU();
  uint64_t seed = 1300;
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    for (float alpha : {1.0f, 0.3f}) {
      Case c;
      c.dtype = dtype;
      c.q_len = 50, c.kv_len = 77, c.head_dim = 32, c.v_dim = 32;
      c.alpha = alpha;
      c.mask = AttentionMask::Add;
      c.seed = seed++;
      run_case(c);
    }
    for (const auto& [head_dim, v_dim] : {std::pair<int64_t, int64_t>{160, 160}, {64, 200}}) {
      Case c;
      c.dtype = dtype;
      c.q_len = 20, c.kv_len = 70, c.head_dim = head_dim, c.v_dim = v_dim;
      c.mask = AttentionMask::WhereTrue;
      c.mask_query = true;
      c.seed = seed++;
      run_case(c);
    }
  }
}

}  // namespace
}  // namespace switchyard::cuda
