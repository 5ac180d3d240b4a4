// The channels-last float32 depthwise convolution of the cpu backend (conv_internal.h:
// make_depthwise_conv): MobileNet's and EfficientNet's per-channel 3x3 and 5x5 filters, where
// oneDNN 2.6's NHWC depthwise primitive ran up to 2x slower than ONNX Runtime's.
//
// Loop structure: output rows (n, oh) are shared between threads. A row is computed a channel
// group at a time (channels whose weights fit in 16 KiB of L1), and in a group column block by
// column block: 8, 4 or 2 adjacent pixels times one to eight vectors of channels (16 lanes on
// AVX-512, 8 on AVX2, a masked vector for the last C % 8), their accumulators in registers
// while each tap's weight vectors are loaded once for all of them. The windows the models use
// (3 or 5 wide, stride 1 or 2) are constants of their interior blocks, whose tap rows load each
// input vector once for all the products it takes part in. Interior columns run every tap
// without bounds checks; the others take their taps clipped from a per-column table (or, for
// the constant windows, read zeros for their columns outside the input), and every row its tap
// rows from a per-row table. Bias, the fused residual and ReLU / Clip / HardSwish are applied as
// each output vector leaves the registers; sigmoid, tanh and SiLU in a pass over each finished
// row, GELU (erf) by Epilogue::apply after the loop.
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "backends/cpu/kernels/conv_internal.h"
#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/vector_math.h"

// Vectors only pass between always-inline functions (vector_math.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace switchyard::cpu {

// A prepared depthwise convolution: its geometry, tap tables, epilogue and (for constant
// weights) the weights packed [kH][kW][C], so that a vector of channels is contiguous.
class DepthwiseConv {
 public:
  DepthwiseConv(const ConvDims& d, const ir::Tensor* weights, const Epilogue& epilogue);
  void run(runtime::KernelContext& ctx, const ir::Tensor& x, const ir::Tensor& w,
           const ir::Tensor* b, const ir::Tensor* z, ir::Tensor& y) const;

  // The per-call pointers of one run.
  struct Args {
    const float* x;  // [N, H, W, C]
    const float* w;  // packed [kH, kW, C]
    const float* b;  // [C], or nullptr
    const float* z;  // [N, OH, OW, C], or nullptr
    float* y;        // [N, OH, OW, C]
  };

  // The taps of the window along one spatial dim, per output index: [begin, end) inside the
  // input; and the outputs [interior_begin, interior_end) whose every tap is inside.
  struct Taps {
    std::vector<int64_t> begin, end;
    int64_t interior_begin = 0, interior_end = 0;
  };
  static Taps taps_of(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dilation,
                      int64_t pad);
  // The channels computed together across a row, so that their weights stay in the L1 cache
  // (16 KiB of them, at least 128 channels), split evenly in multiples of 16.
  static int64_t group_of(int64_t channels, int64_t taps) {
    const int64_t most = std::max<int64_t>(128, 16384 / (taps * 4) / 128 * 128);
    const int64_t groups = (channels + most - 1) / most;
    return ((channels + groups - 1) / groups + 15) / 16 * 16;
  }

  int64_t channels, in_h, in_w, out_h, out_w, k_h, k_w;
  int64_t stride_h, stride_w, dil_h, dil_w, pad_t, pad_l;
  Epilogue epilogue;
  Taps rows, cols;
  int64_t channel_group;  // group_of
  bool one_thread;        // too little work to share (measured: see make_depthwise_conv)

 private:
  void pack(const float* w, float* packed) const;

  std::vector<float> packed_;  // empty: the weights are packed on every run
  void (*run_rows_)(const DepthwiseConv&, const Args&, int64_t, int64_t);
};

namespace {

using Act = Epilogue::Act;
using Taps = DepthwiseConv::Taps;

// One output row's pointers, with the geometry the inner loops read (copied here so that the
// compiler need not reload it around the stores).
struct Row {
  const float* x;  // the input row that the row's first tap row reads
  const float* w;  // the packed weights of that tap row
  const float* b;
  const float* z;                // the row's residual, or nullptr
  float* y;                      // the row's output
  int64_t taps_h;                // tap rows inside the input
  int64_t x_tap_row, w_tap_row;  // floats from one tap row to the next, in x and in w
  int64_t channels, k_w, stride_w, dil_w, pad_l, in_w;
  const int64_t* tap_begin;  // each output column's taps inside the input (Taps)
  const int64_t* tap_end;
  int64_t c_begin, c_end;  // the channel group being computed
  Act act;
  float lo, hi;
};

// Lanes [0, count) of an 8-lane mask (count in [1, 8]).
inline __m256i tail_mask(int64_t count) {
  static const int32_t kBits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kBits + 8 - count));
}

// A vector of V from p; masked (V is Vec8): only the lanes `mask` selects, the others 0, with no
// access past them.
template <typename V, bool kMasked>
[[gnu::always_inline]] inline V load(const float* p, __m256i mask) {
  if constexpr (kMasked) {
    static_assert(sizeof(V) == sizeof(__m256));
    return std::bit_cast<V>(_mm256_maskload_ps(p, mask));
  } else {
    return vload<V>(p);
  }
}

template <typename V, bool kMasked>
[[gnu::always_inline]] inline void store(float* p, V v, __m256i mask) {
  if constexpr (kMasked) {
    _mm256_maskstore_ps(p, mask, std::bit_cast<__m256>(v));
  } else {
    vstore<V>(p, v);
  }
}

// The standalone kernels' activations on a vector, NaN included: Relu and Clip keep NaN (each
// compare with it is false); HardSwish is x * max(0, min(1, x / 6 + 1/2)) in std::min/max's
// operand order (NaN in, NaN out; -inf gives NaN, as there).
template <typename V>
[[gnu::always_inline]] inline V activate(Act act, V v, float lo, float hi) {
  const V zero = vsplat<V>(0.0f);
  switch (act) {
    case Act::Relu:
      return vselect(v < zero, zero, v);
    case Act::Clip: {
      const V l = vsplat<V>(lo), h = vsplat<V>(hi);
      const V t = vselect(v < l, l, v);
      return vselect(t > h, h, t);
    }
    case Act::HardSwish: {
      const V one = vsplat<V>(1.0f);
      V t = v * (1.0f / 6.0f) + 0.5f;
      t = vselect(t < one, t, one);
      t = vselect(zero < t, t, zero);
      return v * t;
    }
    default:
      return v;  // None, and those in_row_pass()
  }
}

// The activations that run as a pass over each finished output row (their constants would
// not stay in registers beside the accumulators): sigmoid, tanh and SiLU.
bool in_row_pass(Act act) { return act == Act::Sigmoid || act == Act::Tanh || act == Act::Swish; }

// exp(c) for c in [-87, 87] (Cephes' expf polynomial after rounding c / ln 2, as
// vector_math.h's vexp, without its clamps and end patches): 1e-7 relative. NaN stays NaN.
[[gnu::always_inline]] inline __m256 exp_in_range8(__m256 c) {
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), c);
  r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500e-4f), r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i n = _mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127));
  return _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(n, 23)));
}

// The logistic function: exactly 0 below -87 (where it would be denormal: as the standalone
// kernels', below 1e-37), 1 above 87, NaN for NaN. vminps / vmaxps return their second operand
// for a NaN, which keeps it.
[[gnu::always_inline]] inline __m256 logistic8(__m256 x) {
  __m256 c = _mm256_sub_ps(_mm256_setzero_ps(), x);
  c = _mm256_max_ps(_mm256_set1_ps(-87.0f), _mm256_min_ps(_mm256_set1_ps(87.0f), c));
  const __m256 s =
      _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(exp_in_range8(c), _mm256_set1_ps(1.0f)));
  return _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ), s);
}

// Sigmoid, tanh or SiLU (x * sigmoid(x): NaN for -inf, as x * 0 is there) on 8 lanes.
[[gnu::always_inline]] inline __m256 activate8(Act act, __m256 x) {
  if (act == Act::Tanh) return std::bit_cast<__m256>(vtanh(std::bit_cast<Vec8>(x)));
  const __m256 s = logistic8(x);
  return act == Act::Swish ? _mm256_mul_ps(x, s) : s;
}

// p[0, n) = act(p[0, n)) for an in_row_pass() activation.
void activate_span_avx2(Act act, float* p, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(p + i, activate8(act, _mm256_loadu_ps(p + i)));
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    _mm256_maskstore_ps(p + i, mask, activate8(act, _mm256_maskload_ps(p + i, mask)));
  }
}

#if SY_HAVE_AVX512_BUILD
// The same on 16 lanes (the exponent scaled in by vscalefps).
[[gnu::always_inline]] SY_TARGET_AVX512 inline __m512 logistic16(__m512 x) {
  // The maskz forms with every lane set: GCC 12 warns of the unmasked ones' undefined
  // pass-through operand (GCC bug 105593).
  constexpr __mmask16 kAll = 0xFFFF;
  __m512 c = _mm512_sub_ps(_mm512_setzero_ps(), x);
  c = _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-87.0f),
                          _mm512_maskz_min_ps(kAll, _mm512_set1_ps(87.0f), c));
  const __m512 fx =
      _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), c);
  r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_fmadd_ps(_mm512_set1_ps(1.9875691500e-4f), r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_add_ps(_mm512_fmadd_ps(y, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512 e = _mm512_maskz_scalef_ps(kAll, y, fx);
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
  return _mm512_maskz_div_ps(static_cast<__mmask16>(~tiny), _mm512_set1_ps(1.0f),
                             _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
}

// Sigmoid and Swish (Tanh takes the 8-lane span: vector_math's vtanh is no AVX-512 function, and
// a 16-lane vector may not cross into it).
[[gnu::always_inline]] SY_TARGET_AVX512 inline __m512 activate16(Act act, __m512 x) {
  const __m512 s = logistic16(x);
  return act == Act::Swish ? _mm512_mul_ps(x, s) : s;
}

SY_TARGET_AVX512 void activate_span_avx512(Act act, float* p, int64_t n) {
  if (act == Act::Tanh) {
    activate_span_avx2(act, p, n);
    return;
  }
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(p + i, activate16(act, _mm512_loadu_ps(p + i)));
  if (i < n) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(p + i, mask, activate16(act, _mm512_maskz_loadu_ps(mask, p + i)));
  }
}
#endif

// Zeros that the columns of a block outside the input read (kGuarded): 8 vectors of 16.
alignas(64) const float kZeros[128] = {};

// R adjacent output pixels from column `ow`, over the taps [kw0, kw1) of each tap row, for CV
// adjacent vectors of channels from c: R x CV independent accumulators, each tap's CV weight
// vectors loaded once for the R pixels. KW > 0: a block of a KW-wide window at stride SW
// without dilation, whose tap rows load each input vector once for every product it takes part
// in (with a load per product, the loads and not the products bound the loop), every tap of
// every pixel; kGuarded: the block reaches into the padding, whose columns read zeros, and only
// its first `count` pixels exist (the others are computed and dropped).
template <typename V, int R, int CV, bool kMasked, int KW = 0, int SW = 0, bool kGuarded = false>
[[gnu::always_inline]] inline void pixels(const Row& r, int64_t c, int64_t ow, int64_t kw0,
                                          int64_t kw1, __m256i mask, int64_t count = R) {
  constexpr int64_t kLanes = lanes_of<V>;
  const int64_t channels = r.channels;
  V acc[CV][R];
#pragma GCC unroll 8
  for (int v = 0; v < CV; ++v) {
    const V bias = r.b ? load<V, kMasked>(r.b + c + v * kLanes, mask) : vsplat<V>(0.0f);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) acc[v][i] = bias;
  }
  if constexpr (KW > 0) {
    constexpr int kSpan = (R - 1) * SW + KW;  // input pixels of a tap row
    const int64_t base = ow * SW - r.pad_l;   // the input column of the block's first tap
    const float* xline = r.x + c;
    const float* wrow = r.w + c;
    for (int64_t kh = 0; kh < r.taps_h; ++kh, xline += r.x_tap_row, wrow += r.w_tap_row) {
      V wv[CV][KW];
#pragma GCC unroll 8
      for (int v = 0; v < CV; ++v)
#pragma GCC unroll 8
        for (int kw = 0; kw < KW; ++kw) wv[v][kw] = vload<V>(wrow + kw * channels + v * kLanes);
#pragma GCC unroll 32
      for (int j = 0; j < kSpan; ++j) {
        const int64_t iw = base + j;
        const float* xj = kGuarded && (iw < 0 || iw >= r.in_w) ? kZeros : xline + iw * channels;
#pragma GCC unroll 8
        for (int v = 0; v < CV; ++v) {
          const V xv = vload<V>(xj + v * kLanes);
#pragma GCC unroll 8
          for (int kw = 0; kw < KW; ++kw) {
            const int d = j - kw;  // pixel d / SW reads input j through tap kw
            if (d >= 0 && d % SW == 0 && d / SW < R) acc[v][d / SW] += xv * wv[v][kw];
          }
        }
      }
    }
  } else if (kw1 > kw0) {
    const int64_t step = r.stride_w * channels, dil = r.dil_w * channels;  // in floats
    const float* xrow = r.x + (ow * r.stride_w - r.pad_l + kw0 * r.dil_w) * channels + c;
    const float* wrow = r.w + kw0 * channels + c;
    for (int64_t kh = 0; kh < r.taps_h; ++kh, xrow += r.x_tap_row, wrow += r.w_tap_row) {
      const float* xp = xrow;
      const float* wp = wrow;
      for (int64_t kw = kw0; kw < kw1; ++kw, xp += dil, wp += channels) {
#pragma GCC unroll 8
        for (int v = 0; v < CV; ++v) {
          const V wv = load<V, kMasked>(wp + v * kLanes, mask);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i)
            acc[v][i] += load<V, kMasked>(xp + i * step + v * kLanes, mask) * wv;
        }
      }
    }
  }
  float* yp = r.y + ow * channels + c;
  const float* zp = r.z ? r.z + ow * channels + c : nullptr;
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    if (kGuarded && i >= count) break;
#pragma GCC unroll 8
    for (int v = 0; v < CV; ++v) {
      V out = acc[v][i];
      if (zp) out += load<V, kMasked>(zp + i * channels + v * kLanes, mask);
      store<V, kMasked>(yp + i * channels + v * kLanes, activate(r.act, out, r.lo, r.hi), mask);
    }
  }
}

// Channel vectors a block of R pixels computes at once: R x CV independent accumulators, enough
// to hide the FMA latency (16 on AVX-512, 8 on AVX2), and, for a KW-wide window kept in
// registers (KW > 0), its KW x CV weights beside them in the 32 or 16 vector registers.
template <typename V>
constexpr int vectors_per_block(int R, int KW) {
  const bool wide = lanes_of<V> == 16;
  // Accumulators and weights in 16 of the 32 registers (12 of 16 on AVX2): planned for more,
  // GCC spilled the weights and reloaded the inputs.
  const int chains = wide ? 16 : 8, registers = wide ? 16 : 12, most = wide ? 8 : 4;
  int cv = std::clamp(chains / R, 1, most);
  if (KW > 0)
    while (cv > 1 && cv * (R + KW) > registers) cv /= 2;
  return cv;
}

// R output pixels from column `ow` (taps [kw0, kw1); with KW > 0 every tap, and kGuarded as for
// pixels), the channels of the group: blocks of CV vectors of VWide, then single vectors, a full
// 8-lane one (AVX-512) and a masked one for the last C % 8 (which takes the loop with runtime
// taps, one pixel at a time in a guarded block).
template <typename VWide, int R, int KW = 0, int SW = 0, bool kGuarded = false>
[[gnu::always_inline]] inline void column_block(const Row& r, int64_t ow, int64_t kw0, int64_t kw1,
                                                int64_t count = R) {
  constexpr int64_t kLanes = lanes_of<VWide>;
  constexpr int CV = vectors_per_block<VWide>(R, KW);
  const int64_t channels = r.c_end;
  int64_t c = r.c_begin;
  if constexpr (CV >= 8)
    for (; c + 8 * kLanes <= channels; c += 8 * kLanes)
      pixels<VWide, R, 8, false, KW, SW, kGuarded>(r, c, ow, kw0, kw1, __m256i(), count);
  if constexpr (CV >= 4)
    for (; c + 4 * kLanes <= channels; c += 4 * kLanes)
      pixels<VWide, R, 4, false, KW, SW, kGuarded>(r, c, ow, kw0, kw1, __m256i(), count);
  if constexpr (CV >= 2)
    for (; c + 2 * kLanes <= channels; c += 2 * kLanes)
      pixels<VWide, R, 2, false, KW, SW, kGuarded>(r, c, ow, kw0, kw1, __m256i(), count);
  for (; c + kLanes <= channels; c += kLanes)
    pixels<VWide, R, 1, false, KW, SW, kGuarded>(r, c, ow, kw0, kw1, __m256i(), count);
  if constexpr (kLanes > 8) {
    if (c + 8 <= channels) {
      pixels<Vec8, R, 1, false, KW, SW, kGuarded>(r, c, ow, kw0, kw1, __m256i(), count);
      c += 8;
    }
  }
  if (c < channels) {
    const __m256i mask = tail_mask(channels - c);
    if constexpr (kGuarded) {
      for (int64_t o = ow; o < ow + count; ++o)
        pixels<Vec8, 1, 1, true>(r, c, o, r.tap_begin[o], r.tap_end[o], mask);
    } else {
      pixels<Vec8, R, 1, true>(r, c, ow, kw0, kw1, mask);
    }
  }
}

// Output columns [begin, end) of one row's channel group in blocks of 8, 4 and 2 pixels (KW > 0:
// of that constant window, kGuarded: reaching into the padding) and the last alone, with its
// taps clipped.
template <typename VWide, int KW, int SW, bool kGuarded>
[[gnu::always_inline]] inline void column_span(const Row& r, int64_t begin, int64_t end) {
  int64_t ow = begin;
  for (; ow + 8 <= end; ow += 8) column_block<VWide, 8, KW, SW, kGuarded>(r, ow, 0, r.k_w);
  if (ow + 4 <= end) {
    column_block<VWide, 4, KW, SW, kGuarded>(r, ow, 0, r.k_w);
    ow += 4;
  }
  if (ow + 2 <= end) {
    column_block<VWide, 2, KW, SW, kGuarded>(r, ow, 0, r.k_w);
    ow += 2;
  }
  if (ow < end) column_block<VWide, 1>(r, ow, r.tap_begin[ow], r.tap_end[ow]);
}

// One output row's channel group [r.c_begin, r.c_end): the interior columns in blocks, and
// those whose taps reach into the padding one at a time, or, with a constant window, in guarded
// blocks (EfficientNet's 5x5 windows have two such columns on each side).
template <typename VWide, int KW, int SW>
[[gnu::always_inline]] inline void output_row(const Row& r, const Taps& cols) {
  const int64_t lo = cols.interior_begin, hi = cols.interior_end;
  const int64_t out_w = static_cast<int64_t>(cols.begin.size());
  if constexpr (KW > 0) {
    if (KW >= 5 && out_w <= 16) {
      // Narrow rows of a 5-wide window (7 and 14 wide) are mostly border: blocks of 8 from the
      // left, the last with pixels to drop, keep 8 accumulators busy instead of single pixels
      // (EfficientNet's 7x7 layers: 66 -> 52 us; 3x3 windows lost by it).
      for (int64_t ow = 0; ow < out_w; ow += 8) {
        if (ow >= lo && ow + 8 <= hi) {
          column_block<VWide, 8, KW, SW>(r, ow, 0, KW);
        } else {
          column_block<VWide, 8, KW, SW, true>(r, ow, 0, KW, std::min<int64_t>(8, out_w - ow));
        }
      }
      return;
    }
    column_span<VWide, KW, SW, true>(r, 0, lo);
    column_span<VWide, KW, SW, false>(r, lo, hi);
    column_span<VWide, KW, SW, true>(r, hi, out_w);
  } else {
    for (int64_t ow = 0; ow < lo; ++ow)
      column_block<VWide, 1>(r, ow, r.tap_begin[ow], r.tap_end[ow]);
    column_span<VWide, 0, 0, false>(r, lo, hi);
    for (int64_t ow = hi; ow < out_w; ++ow)
      column_block<VWide, 1>(r, ow, r.tap_begin[ow], r.tap_end[ow]);
  }
}

// Output rows [row_begin, row_end) of the flattened (n, oh); KW > 0: the window's width and
// stride as constants for its interior blocks.
template <typename VWide, int KW, int SW>
[[gnu::always_inline]] inline void rows_of(const DepthwiseConv& k, const DepthwiseConv::Args& a,
                                           int64_t row_begin, int64_t row_end) {
  const int64_t channels = k.channels;
  Row r{};
  r.b = a.b;
  r.x_tap_row = k.dil_h * k.in_w * channels;
  r.w_tap_row = k.k_w * channels;
  r.channels = channels;
  r.k_w = k.k_w;
  r.stride_w = k.stride_w;
  r.dil_w = k.dil_w;
  r.pad_l = k.pad_l;
  r.in_w = k.in_w;
  r.tap_begin = k.cols.begin.data();
  r.tap_end = k.cols.end.data();
  r.act = k.epilogue.act;
  r.lo = k.epilogue.lo;
  r.hi = k.epilogue.hi;
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t n = row / k.out_h, oh = row % k.out_h;
    const int64_t kh0 = k.rows.begin[static_cast<size_t>(oh)];
    r.taps_h = k.rows.end[static_cast<size_t>(oh)] - kh0;
    // A row whose taps all fall into the padding reads no input.
    const int64_t ih0 = r.taps_h > 0 ? oh * k.stride_h - k.pad_t + kh0 * k.dil_h : 0;
    r.x = a.x + (n * k.in_h + ih0) * k.in_w * channels;
    r.w = a.w + kh0 * r.w_tap_row;
    r.y = a.y + row * k.out_w * channels;
    r.z = a.z ? a.z + row * k.out_w * channels : nullptr;
    for (r.c_begin = 0; r.c_begin < channels; r.c_begin = r.c_end) {
      r.c_end = std::min(channels, r.c_begin + k.channel_group);
      output_row<VWide, KW, SW>(r, k.cols);
    }
    if (in_row_pass(r.act)) {
      if constexpr (lanes_of<VWide> == 16) {
        activate_span_avx512(r.act, r.y, k.out_w * channels);
      } else {
        activate_span_avx2(r.act, r.y, k.out_w * channels);
      }
    }
  }
}

// rows_of with the window MobileNet's and EfficientNet's layers have as constants: 3 or 5 wide
// at stride 1 or 2, without dilation.
template <typename VWide>
[[gnu::always_inline]] inline void run_rows(const DepthwiseConv& k, const DepthwiseConv::Args& a,
                                            int64_t begin, int64_t end) {
  const int window =
      k.dil_w == 1 && k.stride_w <= 2 ? static_cast<int>(k.k_w * 10 + k.stride_w) : 0;
  switch (window) {
    case 31:
      return rows_of<VWide, 3, 1>(k, a, begin, end);
    case 32:
      return rows_of<VWide, 3, 2>(k, a, begin, end);
    case 51:
      return rows_of<VWide, 5, 1>(k, a, begin, end);
    case 52:
      return rows_of<VWide, 5, 2>(k, a, begin, end);
    default:
      return rows_of<VWide, 0, 0>(k, a, begin, end);
  }
}

void run_rows_avx2(const DepthwiseConv& k, const DepthwiseConv::Args& a, int64_t begin,
                   int64_t end) {
  run_rows<Vec8>(k, a, begin, end);
}

#if SY_HAVE_AVX512_BUILD
SY_TARGET_AVX512 void run_rows_avx512(const DepthwiseConv& k, const DepthwiseConv::Args& a,
                                      int64_t begin, int64_t end) {
  run_rows<Vec16>(k, a, begin, end);
}
#endif

}  // namespace

DepthwiseConv::Taps DepthwiseConv::taps_of(int64_t in, int64_t out, int64_t k, int64_t stride,
                                           int64_t dilation, int64_t pad) {
  Taps t;
  t.begin.resize(static_cast<size_t>(out));
  t.end.resize(static_cast<size_t>(out));
  int64_t first = -1, last = -1;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t base = o * stride - pad;  // the input index of tap 0
    const int64_t lo = base >= 0 ? 0 : std::min(k, (-base + dilation - 1) / dilation);
    const int64_t hi =
        base > in - 1 ? lo : std::max(lo, std::min(k, (in - 1 - base) / dilation + 1));
    t.begin[static_cast<size_t>(o)] = lo;
    t.end[static_cast<size_t>(o)] = hi;
    if (lo == 0 && hi == k) {
      if (first < 0) first = o;
      last = o;
    }
  }
  // No interior: every output takes the clipped path.
  t.interior_begin = first < 0 ? out : first;
  t.interior_end = first < 0 ? out : last + 1;
  return t;
}

DepthwiseConv::DepthwiseConv(const ConvDims& d, const ir::Tensor* weights, const Epilogue& e)
    : channels(d.in_channels),
      in_h(d.in[0]),
      in_w(d.in[1]),
      out_h(d.out[0]),
      out_w(d.out[1]),
      k_h(d.kernel[0]),
      k_w(d.kernel[1]),
      stride_h(d.strides[0]),
      stride_w(d.strides[1]),
      dil_h(d.dilations[0]),
      dil_w(d.dilations[1]),
      pad_t(d.pad_begin[0]),
      pad_l(d.pad_begin[1]),
      epilogue(e),
      rows(taps_of(in_h, out_h, k_h, stride_h, dil_h, pad_t)),
      cols(taps_of(in_w, out_w, k_w, stride_w, dil_w, pad_l)),
      channel_group(group_of(channels, k_h * k_w)),
      one_thread(false),
      run_rows_(run_rows_avx2) {
#if SY_HAVE_AVX512_BUILD
  if (use_avx512()) run_rows_ = run_rows_avx512;
#endif
  if (weights) {
    packed_.resize(static_cast<size_t>(weights->numel()));
    pack(weights->data<float>(), packed_.data());
  }
}

void DepthwiseConv::pack(const float* w, float* packed) const {
  const int64_t taps = k_h * k_w;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < taps; ++t) packed[t * channels + c] = w[c * taps + t];
}

void DepthwiseConv::run(runtime::KernelContext& ctx, const ir::Tensor& x, const ir::Tensor& w,
                        const ir::Tensor* b, const ir::Tensor* z, ir::Tensor& y) const {
  std::shared_ptr<void> packed_buf;
  const float* packed = packed_.data();
  if (packed_.empty()) {
    packed_buf = ctx.scratch(static_cast<size_t>(w.numel()) * sizeof(float));
    pack(w.data<float>(), static_cast<float*>(packed_buf.get()));
    packed = static_cast<const float*>(packed_buf.get());
  }
  const Args args{x.data<float>(), packed, b ? b->data<float>() : nullptr,
                  z ? z->data<float>() : nullptr, y.data<float>()};
  const int threads = one_thread ? 1 : ctx.num_threads();
  parallel_for(x.dim(0) * out_h, 1, threads,
               [&](int64_t begin, int64_t end) { run_rows_(*this, args, begin, end); });
  if (epilogue.act == Act::Gelu) epilogue.apply(ctx.node(), y, threads);
}

bool depthwise_conv_covers(const ConvDims& d) {
  return d.in.size() == 2 && d.group == d.in_channels && d.out_channels == d.in_channels;
}

bool depthwise_conv_preferred(const ConvDims& d, int threads) {
  if (!depthwise_conv_covers(d)) return false;
  // oneDNN's primitive shares 5x5 windows over outputs of at most 7x7 better between threads
  // (bench/depthwise_conv_bench.cc, EfficientNet-B0's 7x7x1152 layers with their SiLU: 39-40 us
  // there against 44-46 here on two threads; on one, 47 here against 50-53 there).
  const bool small_wide = d.kernel[0] * d.kernel[1] >= 25 && d.out_size() <= 49;
  return threads <= 1 || !small_wide;
}

std::shared_ptr<const DepthwiseConv> make_depthwise_conv(const ConvDims& d,
                                                         const ir::Tensor* constant_weights,
                                                         const Epilogue& epilogue) {
  auto conv = std::make_shared<DepthwiseConv>(d, constant_weights, epilogue);
  // Below 64K multiply-adds the loop runs on one thread: bench/depthwise_conv_bench.cc in
  // 2-thread runs, 1-2 us (of 2-4) saved at 7x7x64, 4x4x128 and 14x14x32. Above, two threads
  // won every layer measured, also those conv_threads keeps oneDNN's primitive on one thread
  // for: MobileNetV2's 7x7x960 took 16 us on two against 23 on one (its input was written by
  // two threads, half of it sits in the other core's cache).
  constexpr int64_t kSharedWorkMacs = int64_t{1} << 16;
  const int64_t macs = d.batch * d.out_channels * d.out_size() * d.kernel_size();
  conv->one_thread = macs < kSharedWorkMacs;
  return conv;
}

void run_depthwise_conv(const DepthwiseConv& conv, runtime::KernelContext& ctx, const ir::Tensor& x,
                        const ir::Tensor& w, const ir::Tensor* b, const ir::Tensor* z,
                        ir::Tensor& y) {
  conv.run(ctx, x, w, b, z, y);
}

}  // namespace switchyard::cpu
