// The fused recurrent step (rnn_internal.h): per step, for each block of 16 hidden units, the
// product of the state rows with that block's packed recurrent weights accumulates in
// registers (the weights stream once from cache per step for up to 4 batch rows), and the
// gates, the cell update and the new state follow before the next block. Built twice, for AVX2
// and for AVX-512, chosen at run time (cpu_isa.h).
#include <algorithm>
#include <cstring>

#include "backends/cpu/kernels/cpu_isa.h"
#include "backends/cpu/kernels/rnn_internal.h"
#include "backends/cpu/kernels/vector_math.h"

// Vec16 values only pass between always-inline functions (vector_math.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace switchyard::cpu::rnn_cell {

namespace {

#define SY_ALWAYS_INLINE_LAMBDA __attribute__((always_inline))

int64_t blocks_of(int64_t hidden) { return (hidden + kUnits - 1) / kUnits; }

// Lanes [0, n) of p, zero beyond (n may be 0 or more than the vector's lanes).
template <typename V>
[[gnu::always_inline]] inline V load_lanes(const float* p, int64_t n) {
  constexpr int L = lanes_of<V>;
  if (n >= L) return vload<V>(p);
  float tmp[L] = {};
  if (n > 0) std::memcpy(tmp, p, static_cast<size_t>(n) * sizeof(float));
  return vload<V>(tmp);
}
template <typename V>
[[gnu::always_inline]] inline void store_lanes(float* p, V v, int64_t n) {
  constexpr int L = lanes_of<V>;
  if (n >= L) return vstore(p, v);
  if (n <= 0) return;
  float tmp[L];
  vstore(tmp, v);
  std::memcpy(p, tmp, static_cast<size_t>(n) * sizeof(float));
}

// One step for NB batch rows: rows[i] is the batch row, xrow[i] its X W^T + bias row of this
// step; the state is read from h_prev and written to h_next. V is the ISA's vector (P of them
// per 16-unit run of a gate).
template <typename V, Cell kCell, int NB>
[[gnu::always_inline]] inline void step_rows(const Direction& d, const int64_t* rows,
                                             const float* const* xrow, const float* h_prev,
                                             float* h_next) {
  constexpr int G = kCell == Cell::Lstm ? 4 : 3;
  constexpr int L = lanes_of<V>;
  constexpr int P = static_cast<int>(kUnits) / L;
  const int64_t H = d.hidden;
  const int64_t blocks = blocks_of(H);
  for (int64_t u = 0; u < blocks; ++u) {
    // KS interleaved sums over k, so at least 8 independent FMA chains hide the FMA latency
    // (one AVX-512 row has only G = 4 otherwise).
    constexpr int KS = NB * G * P >= 8 ? 1 : 2;
    V acc[KS][NB][G][P];
#pragma GCC unroll 2
    for (int s = 0; s < KS; ++s)
#pragma GCC unroll 4
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g)
#pragma GCC unroll 2
          for (int q = 0; q < P; ++q) acc[s][b][g][q] = vsplat<V>(0.0f);
    const float* hp[NB];
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) hp[b] = h_prev + rows[b] * H;
    const float* block = d.packed + u * H * G * kUnits;
    auto accumulate = [&](int s, int64_t k) SY_ALWAYS_INLINE_LAMBDA {
      const float* w = block + k * G * kUnits;
#pragma GCC unroll 4
      for (int b = 0; b < NB; ++b) {
        const V hv = vsplat<V>(hp[b][k]);
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g)
#pragma GCC unroll 2
          for (int q = 0; q < P; ++q) acc[s][b][g][q] += hv * vload<V>(w + g * kUnits + q * L);
      }
    };
    int64_t k = 0;
    for (; k + KS <= H; k += KS)
#pragma GCC unroll 2
      for (int s = 0; s < KS; ++s) accumulate(s, k + s);
    for (; k < H; ++k) accumulate(0, k);
    if constexpr (KS == 2) {
#pragma GCC unroll 4
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
        for (int g = 0; g < G; ++g)
#pragma GCC unroll 2
          for (int q = 0; q < P; ++q) acc[0][b][g][q] += acc[1][b][g][q];
    }
#pragma GCC unroll 4
    for (int b = 0; b < NB; ++b) {
      const int64_t row = rows[b];
#pragma GCC unroll 2
      for (int q = 0; q < P; ++q) {
        const int64_t base = u * kUnits + q * L;
        const int64_t n = H - base;  // lanes of this part inside the state (may be <= 0)
        const float* x = xrow[b] + base;
        if constexpr (kCell == Cell::Lstm) {
          // ONNX gate order i, o, f, c.
          const V ig = vsigmoid(acc[0][b][0][q] + load_lanes<V>(x, n));
          const V og = vsigmoid(acc[0][b][1][q] + load_lanes<V>(x + H, n));
          const V fg = vsigmoid(acc[0][b][2][q] + load_lanes<V>(x + 2 * H, n));
          const V cand = vtanh(acc[0][b][3][q] + load_lanes<V>(x + 3 * H, n));
          float* c = d.c + row * H + base;
          const V c_new = fg * load_lanes<V>(c, n) + ig * cand;
          store_lanes(c, c_new, n);
          store_lanes(h_next + row * H + base, og * vtanh(c_new), n);
        } else {
          // ONNX gate order z, r, h; the reset gate scales the hidden product plus its Rb.
          const V zg = vsigmoid(acc[0][b][0][q] + load_lanes<V>(x, n));
          const V rg = vsigmoid(acc[0][b][1][q] + load_lanes<V>(x + H, n));
          const V cand = vtanh(load_lanes<V>(x + 2 * H, n) +
                               rg * (acc[0][b][2][q] + load_lanes<V>(d.rb_hidden + base, n)));
          const V h_old = load_lanes<V>(h_prev + row * H + base, n);
          store_lanes(h_next + row * H + base, (1.0f - zg) * cand + zg * h_old, n);
        }
      }
    }
  }
}

// The whole recurrence; kMaxRows is the widest batch chunk this ISA keeps in registers, V its
// vector for chunks of rows and V1 for a single row (measured on an AVX-512 machine: one row
// runs faster on 256-bit vectors, several rows on 512-bit ones).
template <typename V, typename V1, Cell kCell, int kMaxRows>
[[gnu::always_inline]] inline void run_impl(const Direction& d) {
  const int64_t H = d.hidden, B = d.batch;
  std::vector<float> other(static_cast<size_t>(B * H));
  float* h_prev = d.h;
  float* h_next = other.data();
  std::vector<int64_t> active;
  std::vector<const float*> xrows;
  active.reserve(static_cast<size_t>(B));
  xrows.reserve(static_cast<size_t>(B));
  for (int64_t step = 0; step < d.seq; ++step) {
    active.clear();
    xrows.clear();
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = d.lengths[b];
      if (step >= len) {  // this row has ended: its state carries over
        std::memcpy(h_next + b * H, h_prev + b * H, static_cast<size_t>(H) * sizeof(float));
        continue;
      }
      const int64_t t = d.reverse ? len - 1 - step : step;
      active.push_back(b);
      xrows.push_back(d.xw + (t * B + b) * d.ldx);
    }
    size_t i = 0;
    const size_t count = active.size();
    if constexpr (kMaxRows >= 4) {
      for (; i + 4 <= count; i += 4)
        step_rows<V, kCell, 4>(d, &active[i], &xrows[i], h_prev, h_next);
    }
    if constexpr (kMaxRows >= 2) {
      for (; i + 2 <= count; i += 2)
        step_rows<V, kCell, 2>(d, &active[i], &xrows[i], h_prev, h_next);
    }
    for (; i < count; ++i) step_rows<V1, kCell, 1>(d, &active[i], &xrows[i], h_prev, h_next);
    for (size_t j = 0; j < count; ++j) {
      const int64_t b = active[j];
      const int64_t len = d.lengths[b];
      const int64_t t = d.reverse ? len - 1 - step : step;
      std::memcpy(d.y + t * d.y_step + b * H, h_next + b * H,
                  static_cast<size_t>(H) * sizeof(float));
    }
    std::swap(h_prev, h_next);
  }
  if (h_prev != d.h) std::memcpy(d.h, h_prev, static_cast<size_t>(B * H) * sizeof(float));
}

// AVX2: 16 ymm registers hold one row's 4 gates x 2 halves of accumulators.
void run_avx2(const Direction& d) {
  if (d.cell == Cell::Lstm) {
    run_impl<Vec8, Vec8, Cell::Lstm, 1>(d);
  } else {
    run_impl<Vec8, Vec8, Cell::GruLinearBeforeReset, 1>(d);
  }
}

#if SY_HAVE_AVX512_BUILD
// AVX-512: 32 zmm registers hold 4 rows' accumulators; a single row uses ymm registers.
SY_TARGET_AVX512 void run_avx512(const Direction& d) {
  if (d.cell == Cell::Lstm) {
    run_impl<Vec16, Vec8, Cell::Lstm, 4>(d);
  } else {
    run_impl<Vec16, Vec8, Cell::GruLinearBeforeReset, 4>(d);
  }
}
#endif

}  // namespace

int64_t packed_direction_size(Cell cell, int64_t hidden) {
  return blocks_of(hidden) * hidden * gates_of(cell) * kUnits;
}

std::vector<float> pack_recurrent(Cell cell, const float* r, int64_t dirs, int64_t hidden) {
  const int64_t G = gates_of(cell), H = hidden, per_dir = packed_direction_size(cell, H);
  std::vector<float> out(static_cast<size_t>(dirs * per_dir), 0.0f);
  for (int64_t d = 0; d < dirs; ++d) {
    const float* rd = r + d * G * H * H;
    float* od = out.data() + d * per_dir;
    for (int64_t u = 0; u < blocks_of(H); ++u)
      for (int64_t k = 0; k < H; ++k)
        for (int64_t g = 0; g < G; ++g)
          for (int64_t j = 0; j < kUnits && u * kUnits + j < H; ++j)
            od[((u * H + k) * G + g) * kUnits + j] = rd[(g * H + u * kUnits + j) * H + k];
  }
  return out;
}

void run_direction(const Direction& d) {
  if (d.seq == 0 || d.batch == 0 || d.hidden == 0) return;
#if SY_HAVE_AVX512_BUILD
  if (use_avx512()) return run_avx512(d);
#endif
  run_avx2(d);
}

}  // namespace switchyard::cpu::rnn_cell
