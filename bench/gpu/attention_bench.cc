// The fused attention kernel alone on cuda:0 (src/backends/cuda/kernels/attention.cu, through
// launch_attention, as the CUDA backend's fused MatMul calls it): BERT-base's attention (12 heads,
// head dim 64, sequence 128, an additive padding mask [B, 1, 1, 128], Q, K, V and the result read
// and written through the head split's strides [B, S, H, D]) at batch 1 and 64, and GPT-style
// causal attention (12 heads, head dim 64, sequence 1024, a bool mask [1, 1, S, S] that is true on
// and below the diagonal: WhereFalse with fill -inf; the result [B, H, S, D]) at batch 1 and 16.
// Each row: the launch's own warps per CTA, then, for BERT, each forced count (1, 2, 4). Prints
// one Markdown table: the median and the minimum of --runs calls timed one by one with CUDA
// events around each launch after --warmup untimed ones, the mean of the same number of calls
// back to back (one event pair around all of them), and the rates that median gives (the FLOPs
// of both products, 4 B H S S D, as if nothing were masked; the bytes of Q, K, V, the result and
// the mask once each).
//
// usage: attention_bench [--runs N] [--warmup N]   (defaults 50 and 10)
//
// Build: `cmake --build build --target attention_bench` (a CUDA build with tests: it links the
// tests' build of attention.cu, tests/CMakeLists.txt). Run on the GPU machine from the bundle
// (scripts/gpu-bundle, unpacked at /tmp/sy): `LD_LIBRARY_PATH=/tmp/sy/lib
// /tmp/sy/bin/attention_bench`. Results go to bench/RESULTS.md.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cuda/kernels/attention_impl.h"

using switchyard::DType;
using switchyard::cuda::AttentionArgs;
using switchyard::cuda::AttentionMask;

namespace {

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    const cudaError_t status_ = (call);                                                      \
    if (status_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "attention_bench: %s: %s\n", #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

struct Shape {
  const char* name;
  int64_t batch, heads, seq, dim;
  bool causal;  // GPT: bool mask [1, 1, S, S], result [B, H, S, D]; else BERT
  int warps;    // 0: the launch's choice
};

struct Timing {
  double median_us = 0, min_us = 0, back_to_back_us = 0;
};

// Device memory of `count` fp16 values, uniform in [lo, hi) from a fixed seed.
void* random_halves(size_t count, float lo, float hi, uint32_t seed) {
  std::vector<__half> host(count);
  uint32_t x = seed;
  for (__half& h : host) {
    x = x * 1664525u + 1013904223u;
    h = __float2half_rn(lo + (hi - lo) * static_cast<float>(x >> 8) / 16777216.0f);
  }
  void* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, count * sizeof(__half)));
  CHECK_CUDA(cudaMemcpy(dev, host.data(), count * sizeof(__half), cudaMemcpyHostToDevice));
  return dev;
}

Timing time_calls(const AttentionArgs& a, int warmup, int runs, cudaStream_t stream) {
  for (int i = 0; i < warmup; ++i) CHECK_CUDA(switchyard::cuda::launch_attention(a, stream));
  std::vector<cudaEvent_t> events(2 * static_cast<size_t>(runs) + 2);
  for (cudaEvent_t& e : events) CHECK_CUDA(cudaEventCreate(&e));
  for (int i = 0; i < runs; ++i) {
    CHECK_CUDA(cudaEventRecord(events[2 * i], stream));
    CHECK_CUDA(switchyard::cuda::launch_attention(a, stream));
    CHECK_CUDA(cudaEventRecord(events[2 * i + 1], stream));
  }
  cudaEvent_t& first = events[2 * static_cast<size_t>(runs)];
  cudaEvent_t& last = events[2 * static_cast<size_t>(runs) + 1];
  CHECK_CUDA(cudaEventRecord(first, stream));
  for (int i = 0; i < runs; ++i) CHECK_CUDA(switchyard::cuda::launch_attention(a, stream));
  CHECK_CUDA(cudaEventRecord(last, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<double> us(static_cast<size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]));
    us[static_cast<size_t>(i)] = 1000.0 * ms;
  }
  float all_ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&all_ms, first, last));
  for (cudaEvent_t e : events) CHECK_CUDA(cudaEventDestroy(e));
  std::sort(us.begin(), us.end());
  Timing t;
  t.median_us =
      runs % 2 ? us[static_cast<size_t>(runs / 2)]
               : (us[static_cast<size_t>(runs / 2 - 1)] + us[static_cast<size_t>(runs / 2)]) / 2;
  t.min_us = us.front();
  t.back_to_back_us = 1000.0 * all_ms / runs;
  return t;
}

void run_row(const Shape& s, int sm_count, int warmup, int runs, cudaStream_t stream) {
  const int64_t B = s.batch, H = s.heads, S = s.seq, D = s.dim;
  const size_t elements = static_cast<size_t>(B * S * H * D);
  AttentionArgs a;
  a.dtype = DType::Float16;
  a.q = random_halves(elements, -1.0f, 1.0f, 1);
  a.k = random_halves(elements, -1.0f, 1.0f, 2);
  a.v = random_halves(elements, -1.0f, 1.0f, 3);
  void* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, elements * sizeof(__half)));
  a.out = out;
  a.batch = B, a.heads = H, a.q_len = S, a.kv_len = S, a.head_dim = D, a.v_dim = D;
  // Q, K and V as the head split leaves them: [B, S, H, D] read as [B, H, S, D].
  const int64_t split[3] = {S * H * D, D, H * D};
  for (int i = 0; i < 3; ++i) a.q_stride[i] = a.k_stride[i] = a.v_stride[i] = split[i];
  a.alpha = 1.0f / std::sqrt(static_cast<float>(D));
  void* mask = nullptr;
  size_t mask_bytes = 0;
  if (s.causal) {
    const int64_t out_bhsd[3] = {H * S * D, S * D, D};
    for (int i = 0; i < 3; ++i) a.out_stride[i] = out_bhsd[i];
    std::vector<uint8_t> cond(static_cast<size_t>(S * S));
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < S; ++j) cond[static_cast<size_t>(i * S + j)] = j <= i;
    mask_bytes = cond.size();
    CHECK_CUDA(cudaMalloc(&mask, mask_bytes));
    CHECK_CUDA(cudaMemcpy(mask, cond.data(), mask_bytes, cudaMemcpyHostToDevice));
    a.mask_kind = AttentionMask::WhereFalse;
    a.fill = -INFINITY;
    a.mask_stride[0] = 0, a.mask_stride[1] = 0, a.mask_stride[2] = S, a.mask_stride[3] = 1;
  } else {
    for (int i = 0; i < 3; ++i) a.out_stride[i] = split[i];  // the head merge
    std::vector<__half> add(static_cast<size_t>(B * S));
    for (int64_t b = 0; b < B; ++b)  // the last quarter of each sequence is padding
      for (int64_t j = 0; j < S; ++j)
        add[static_cast<size_t>(b * S + j)] = __float2half_rn(j >= S - S / 4 ? -10000.0f : 0.0f);
    mask_bytes = add.size() * sizeof(__half);
    CHECK_CUDA(cudaMalloc(&mask, mask_bytes));
    CHECK_CUDA(cudaMemcpy(mask, add.data(), mask_bytes, cudaMemcpyHostToDevice));
    a.mask_kind = AttentionMask::Add;
    a.mask_stride[0] = S, a.mask_stride[1] = 0, a.mask_stride[2] = 0, a.mask_stride[3] = 1;
  }
  a.mask = mask;
  a.warps_per_cta = s.warps;
  const int warps = switchyard::cuda::attention_warps_per_cta(a, sm_count);
  const int64_t ctas = (S + 16 * warps - 1) / (16 * warps) * H * B;
  const Timing t = time_calls(a, warmup, runs, stream);
  const double flop = 4.0 * static_cast<double>(B * H) * static_cast<double>(S * S) * D;
  const double bytes = 4.0 * static_cast<double>(elements) * sizeof(__half) + mask_bytes;
  std::printf(
      "| %s | %lld | %lld | %lld | %lld | %s | %d%s | %lld | %.1f | %.1f | %.1f | %.1f | %.0f |\n",
      s.name, static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(S),
      static_cast<long long>(D), s.causal ? "causal bool" : "add [B,1,1,S]", warps,
      s.warps ? " (forced)" : "", static_cast<long long>(ctas), t.median_us, t.min_us,
      t.back_to_back_us, flop / (t.median_us * 1e-6) / 1e12, bytes / (t.median_us * 1e-6) / 1e9);
  std::fflush(stdout);
  CHECK_CUDA(cudaFree(const_cast<void*>(a.q)));
  CHECK_CUDA(cudaFree(const_cast<void*>(a.k)));
  CHECK_CUDA(cudaFree(const_cast<void*>(a.v)));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(mask));
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 50, warmup = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--warmup" && i + 1 < argc) {
      warmup = std::max(0, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: attention_bench [--runs N] [--warmup N]\n");
      return 2;
    }
  }
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  std::printf(
      "attention_bench: %s, %d SMs, sm_%d%d; fp16; median and min of %d calls timed one "
      "by one after %d warm-up calls, and the mean of %d calls back to back\n\n",
      prop.name, prop.multiProcessorCount, prop.major, prop.minor, runs, warmup, runs);
  std::printf(
      "| shape | batch | heads | seq | head dim | mask | warps/CTA | CTAs | median us | "
      "min us | back-to-back us | TFLOP/s | GB/s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  const Shape shapes[] = {
      {"BERT-base", 1, 12, 128, 64, false, 0},   {"BERT-base", 64, 12, 128, 64, false, 0},
      {"GPT causal", 1, 12, 1024, 64, true, 0},  {"GPT causal", 16, 12, 1024, 64, true, 0},
      {"BERT-base", 1, 12, 128, 64, false, 1},   {"BERT-base", 1, 12, 128, 64, false, 2},
      {"BERT-base", 1, 12, 128, 64, false, 4},   {"BERT-base", 64, 12, 128, 64, false, 1},
      {"BERT-base", 64, 12, 128, 64, false, 2},  {"BERT-base", 64, 12, 128, 64, false, 4},
      {"BERT-base", 64, 12, 128, 64, false, 8},  {"GPT causal", 16, 12, 1024, 64, true, 4},
      {"GPT causal", 16, 12, 1024, 64, true, 8}, {"GPT causal", 16, 12, 128, 64, true, 4},
      {"GPT causal", 16, 12, 128, 64, true, 8},
  };
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  for (const Shape& s : shapes) run_row(s, prop.multiProcessorCount, warmup, runs, stream);
  CHECK_CUDA(cudaStreamDestroy(stream));
  return 0;
}
