// CPU kernels of Softmax, LogSoftmax and Hardmax (opset-13 form: along one axis). Rows along
// the last axis are contiguous and run in parallel; other axes walk the inner dims as vectors.
#include <bit>
#include <limits>

#include "backends/cpu/kernels/elementwise_internal.h"
#include "backends/cpu/kernels/normalization_internal.h"
#include "backends/cpu/kernels/vector_math.h"

namespace switchyard::cpu {

namespace {

enum class SoftmaxMode { Softmax, LogSoftmax, Hardmax };

template <typename C>
inline C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_float(x);
  } else {
    return std::exp(x);
  }
}

// Max of n contiguous values (a NaN among them still turns the row to NaN through exp).
template <typename C>
inline C row_max(const C* p, int64_t n) {
  C m = -std::numeric_limits<C>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = p[i] > m ? p[i] : m;
  return m;
}

// One contiguous row: y = softmax(p), log_softmax(p) or hardmax(p); `work` has n elements.
template <SoftmaxMode kMode, typename C>
void softmax_row(const C* p, C* work, int64_t n) {
  if constexpr (kMode == SoftmaxMode::Hardmax) {
    // The first maximum, or the first NaN, as numpy's argmax (the ONNX reference) picks.
    int64_t best = 0;
    for (int64_t i = 1; i < n && p[best] == p[best]; ++i)
      if (p[i] > p[best] || p[i] != p[i]) best = i;
    for (int64_t i = 0; i < n; ++i) work[i] = C(0);
    if (n > 0) work[best] = C(1);
  } else {
    C m = row_max(p, n);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) work[i] = exp_c(p[i] - m);
    C sum = lane_sum(work, n);
    if constexpr (kMode == SoftmaxMode::Softmax) {
      C inv = C(1) / sum;
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) work[i] *= inv;
    } else {
      C log_sum = std::log(sum);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) work[i] = (p[i] - m) - log_sum;
    }
  }
}

// An additive mask broadcast into the rows (the fused Add -> Softmax, fusion.h): row r adds
// mask[offset[r] + i * step].
template <typename T>
struct RowMask {
  const T* data = nullptr;
  std::vector<int64_t> offset;  // per row
  int64_t step = 0;             // 1, or 0 when the mask's last dim is 1
};

template <SoftmaxMode kMode, typename T>
void softmax_last_axis(const T* in, T* out, int64_t rows, int64_t n, int threads,
                       const RowMask<T>* mask = nullptr) {
  using C = compute_t<T>;
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(n, 1)), threads,
               [&](int64_t b, int64_t e) {
                 std::vector<C> in_buf;
                 std::vector<C> out_buf;
                 if constexpr (!std::is_same_v<C, T>) out_buf.resize(static_cast<size_t>(n));
                 for (int64_t r = b; r < e; ++r) {
                   const T* p = in + r * n;
                   if (mask) {
                     // The sum rounded to T, as the unfused Add leaves it.
                     in_buf.resize(static_cast<size_t>(n));
                     C* s = in_buf.data();
                     const T* m = mask->data + mask->offset[static_cast<size_t>(r)];
                     const int64_t step = mask->step;
#pragma omp simd
                     for (int64_t i = 0; i < n; ++i)
                       s[i] = convert<C>(convert<T>(convert<C>(p[i]) + convert<C>(m[i * step])));
                     if constexpr (std::is_same_v<C, T>) {
                       softmax_row<kMode, C>(s, out + r * n, n);
                     } else {
                       softmax_row<kMode, C>(s, out_buf.data(), n);
                       T* q = out + r * n;
                       for (int64_t i = 0; i < n; ++i)
                         q[i] = convert<T>(out_buf[static_cast<size_t>(i)]);
                     }
                     continue;
                   }
                   if constexpr (std::is_same_v<C, T>) {
                     softmax_row<kMode, C>(p, out + r * n, n);
                   } else {
                     in_buf.resize(static_cast<size_t>(n));
                     for (int64_t i = 0; i < n; ++i)
                       in_buf[static_cast<size_t>(i)] = convert<C>(p[i]);
                     softmax_row<kMode, C>(in_buf.data(), out_buf.data(), n);
                     T* q = out + r * n;
                     for (int64_t i = 0; i < n; ++i)
                       q[i] = convert<T>(out_buf[static_cast<size_t>(i)]);
                   }
                 }
               });
}

// Axis with inner dims: for each outer index and block of inner positions, vectors of maxima
// and sums walk the axis.
template <SoftmaxMode kMode, typename T>
void softmax_strided(const T* in, T* out, int64_t outer, int64_t len, int64_t inner, int threads) {
  using C = compute_t<T>;
  constexpr int64_t kBlock = 128;
  int64_t blocks = (inner + kBlock - 1) / kBlock;
  parallel_for(outer * blocks, std::max<int64_t>(1, 8192 / (len * kBlock)), threads,
               [&](int64_t b, int64_t e) {
                 C best[kBlock];
                 C sum[kBlock];
                 int64_t arg[kBlock];
                 for (int64_t t = b; t < e; ++t) {
                   int64_t o = t / blocks;
                   int64_t k0 = (t % blocks) * kBlock;
                   int64_t n = std::min(kBlock, inner - k0);
                   const T* p = in + o * len * inner + k0;
                   T* q = out + o * len * inner + k0;
                   for (int64_t k = 0; k < n; ++k) {
                     best[k] = convert<C>(p[k]);
                     arg[k] = 0;
                   }
                   for (int64_t j = 1; j < len; ++j)
                     for (int64_t k = 0; k < n; ++k) {
                       C v = convert<C>(p[j * inner + k]);
                       if (kMode == SoftmaxMode::Hardmax) {
                         if (v > best[k] || (v != v && best[k] == best[k])) {
                           best[k] = v;
                           arg[k] = j;
                         }
                       } else {
                         best[k] = v > best[k] || v != v ? v : best[k];
                       }
                     }
                   if constexpr (kMode == SoftmaxMode::Hardmax) {
                     for (int64_t j = 0; j < len; ++j)
                       for (int64_t k = 0; k < n; ++k)
                         q[j * inner + k] = convert<T>(arg[k] == j ? C(1) : C(0));
                     continue;
                   }
                   for (int64_t k = 0; k < n; ++k) sum[k] = C(0);
                   for (int64_t j = 0; j < len; ++j) {
#pragma omp simd
                     for (int64_t k = 0; k < n; ++k)
                       sum[k] += exp_c(convert<C>(p[j * inner + k]) - best[k]);
                   }
                   for (int64_t k = 0; k < n; ++k)
                     sum[k] = kMode == SoftmaxMode::Softmax ? C(1) / sum[k] : std::log(sum[k]);
                   for (int64_t j = 0; j < len; ++j) {
#pragma omp simd
                     for (int64_t k = 0; k < n; ++k) {
                       C v = convert<C>(p[j * inner + k]);
                       q[j * inner + k] =
                           convert<T>(kMode == SoftmaxMode::Softmax ? exp_c(v - best[k]) * sum[k]
                                                                    : (v - best[k]) - sum[k]);
                     }
                   }
                 }
               });
}

// Each row's offset into a mask broadcast into `shape` (rows: every dim but the last).
template <typename T>
RowMask<T> row_mask(const ir::Tensor& m, const std::vector<int64_t>& shape) {
  RowMask<T> mask;
  mask.data = m.data<T>();
  const int64_t rank = static_cast<int64_t>(shape.size());
  std::vector<int64_t> strides = broadcast_strides(m.shape(), shape);
  mask.step = strides[static_cast<size_t>(rank - 1)];
  int64_t rows = 1;
  for (int64_t i = 0; i + 1 < rank; ++i) rows *= shape[static_cast<size_t>(i)];
  mask.offset.resize(static_cast<size_t>(rows));
  std::vector<int64_t> index(static_cast<size_t>(std::max<int64_t>(rank - 1, 0)), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (int64_t i = 0; i + 1 < rank; ++i)
      off += index[static_cast<size_t>(i)] * strides[static_cast<size_t>(i)];
    mask.offset[static_cast<size_t>(r)] = off;
    for (int64_t i = rank - 2; i >= 0; --i) {  // next row index, last dim fastest
      if (++index[static_cast<size_t>(i)] < shape[static_cast<size_t>(i)]) break;
      index[static_cast<size_t>(i)] = 0;
    }
  }
  return mask;
}

// Whether mask `m` broadcasts into X's shape (each of its dims, aligned right, 1 or X's), with
// the softmax along X's last axis: then each row adds one mask row (row_mask).
inline bool mask_fits_rows(const ir::Tensor& x, const ir::Tensor& m, int64_t axis) {
  if (x.rank() == 0 || m.dtype() != x.dtype() || m.rank() > x.rank()) return false;
  if (axis != -1 && axis != x.rank() - 1) return false;
  for (int64_t i = 0; i < m.rank(); ++i) {
    const int64_t d = m.dim(i), xd = x.dim(x.rank() - m.rank() + i);
    if (d != 1 && d != xd) return false;
  }
  return true;
}

template <SoftmaxMode kMode>
class SoftmaxKernel : public runtime::Kernel {
 public:
  explicit SoftmaxKernel(const runtime::KernelInit& init) : axis_(init.node.attr_int("axis", -1)) {}

  void run(runtime::KernelContext& ctx) const override {
    // Input 1 (fusion.h): an additive mask M, softmax(X + M) along the last axis. One that
    // broadcasts into X's rows is added row by row; otherwise the sum is made first.
    ir::Tensor summed;
    bool masked = ctx.has_input(1);
    if (masked && !mask_fits_rows(ctx.input(0), ctx.input(1), axis_)) {
      summed = add_broadcast(ctx, ctx.input(0), ctx.input(1));
      masked = false;
    }
    const ir::Tensor& x = summed.defined() ? summed : ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t i = 0; i < x.rank(); ++i) (i < axis ? outer : i == axis ? len : inner) *= x.dim(i);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      if (masked) {
        RowMask<T> mask = row_mask<T>(ctx.input(1), x.shape());
        softmax_last_axis<kMode, T>(x.data<T>(), y.data<T>(), outer, len, ctx.num_threads(), &mask);
      } else if (inner == 1) {
        softmax_last_axis<kMode, T>(x.data<T>(), y.data<T>(), outer, len, ctx.num_threads());
      } else {
        softmax_strided<kMode, T>(x.data<T>(), y.data<T>(), outer, len, inner, ctx.num_threads());
      }
    });
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_softmax_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  auto floats = dtypes_of(FloatTypes{});
  r.add<SoftmaxKernel<SoftmaxMode::Softmax>>(OpKind::Softmax, floats);
  r.add<SoftmaxKernel<SoftmaxMode::LogSoftmax>>(OpKind::LogSoftmax, floats);
  r.add<SoftmaxKernel<SoftmaxMode::Hardmax>>(OpKind::Hardmax, floats);
}

}  // namespace switchyard::cpu
