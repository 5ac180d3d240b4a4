// CPU kernel of Resize (opset 19 semantics): nearest, N-linear and N-cubic interpolation over any
// subset of axes, every coordinate transformation, antialiasing and aspect-ratio policies. Each
// resized axis gets a table of taps (input offset and weight per output index); an output
// element is the weighted sum over the product of its axes' taps.
#include <limits>
#include <set>
#include <string>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/image_internal.h"
#include "ops/resize_geometry.h"

namespace switchyard::cpu {

namespace {

using ops::NearestRounding;
using ops::ResizeMode;
using Transform = ops::ResizeTransform;

// Taps of one axis: `width` (input offset, weight) pairs per output index, and whether that
// output index lies outside the crop (tf_crop_and_resize extrapolates there).
struct AxisTaps {
  int64_t width = 1;
  std::vector<int64_t> offset;
  std::vector<double> weight;
  std::vector<uint8_t> outside;
};

class ResizeKernel final : public runtime::Kernel {
 public:
  explicit ResizeKernel(const runtime::KernelInit& init) {
    const ops::ResizeAttributes a = ops::resize_attributes(init.node);
    mode_ = a.mode;
    transform_ = a.transform;
    rounding_ = a.rounding;
    cubic_a_ = a.cubic_a;
    exclude_outside_ = a.exclude_outside;
    antialias_ = a.antialias;
    extrapolation_ = a.extrapolation;
    attrs_ = a;
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    auto input = [&](size_t i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; };
    const ops::ResizeGeometry g =
        ops::resize_geometry(ctx.node(), attrs_, x.shape(), input(1), input(2), input(3));
    const int64_t rank = x.rank();
    const std::vector<int64_t>& in_shape = x.shape();
    const std::vector<int64_t>& out_shape = g.out_shape;

    std::vector<int64_t> in_strides = strides_of(in_shape);
    std::vector<AxisTaps> taps(static_cast<size_t>(rank));
    for (size_t a = 0; a < static_cast<size_t>(rank); ++a) {
      if (!g.resized[a]) {
        taps[a] = identity_taps(out_shape[a], in_strides[a]);
      } else {
        taps[a] = axis_taps(in_shape[a], out_shape[a], g.scale[a], g.length_resized[a],
                            g.roi_start[a], g.roi_end[a], in_strides[a]);
      }
    }

    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    dispatch(AllPodTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool>) {
        if (mode_ != ResizeMode::Nearest) ctx.fail("mode must be nearest for bool input");
      }
      fill<T>(x.data<T>(), y.data<T>(), out_shape, taps, ctx.num_threads());
    });
  }

 private:
  static AxisTaps identity_taps(int64_t size, int64_t stride) {
    AxisTaps t;
    t.offset.resize(static_cast<size_t>(size));
    t.weight.assign(static_cast<size_t>(size), 1.0);
    t.outside.assign(static_cast<size_t>(size), 0);
    for (int64_t o = 0; o < size; ++o) t.offset[static_cast<size_t>(o)] = o * stride;
    return t;
  }

  double original_coordinate(int64_t o, int64_t in_len, int64_t out_len, double scale,
                             double len_resized, double start, double end) const {
    const double xr = static_cast<double>(o);
    const double in = static_cast<double>(in_len);
    switch (transform_) {
      case Transform::HalfPixel:
        return (xr + 0.5) / scale - 0.5;
      case Transform::HalfPixelSymmetric: {
        double adjustment = static_cast<double>(out_len) / len_resized;
        double center = in / 2;
        double offset = center * (1 - adjustment);
        return offset + (xr + 0.5) / scale - 0.5;
      }
      case Transform::PytorchHalfPixel:
        return len_resized > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
      case Transform::AlignCorners:
        return len_resized == 1 ? 0.0 : xr * (in - 1) / (len_resized - 1);
      case Transform::Asymmetric:
        return xr / scale;
      case Transform::TfCropAndResize:
        return len_resized > 1
                   ? start * (in - 1) + xr * (end - start) * (in - 1) / (len_resized - 1)
                   : 0.5 * (start + end) * (in - 1);
      case Transform::TfHalfPixelForNn:
        return (xr + 0.5) / scale;
    }
    return xr;
  }

  double cubic_weight(double s) const {
    const double a = cubic_a_;
    s = std::fabs(s);
    if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
    if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    return 0.0;
  }

  AxisTaps axis_taps(int64_t in_len, int64_t out_len, double scale, double len_resized,
                     double start, double end, int64_t stride) const {
    AxisTaps t;
    // The filter is stretched by 1/scale when antialiasing a downscale.
    const double support_scale = antialias_ ? std::min(scale, 1.0) : 1.0;
    int64_t first = 0;
    if (mode_ == ResizeMode::Nearest) {
      t.width = 1;
    } else if (mode_ == ResizeMode::Linear) {
      first = static_cast<int64_t>(std::floor(-1.0 / support_scale)) + 1;
      t.width = 2 - 2 * first;
    } else {
      first = static_cast<int64_t>(std::floor(-2.0 / support_scale)) + 1;
      t.width = 2 - 2 * first;
    }
    const size_t w = static_cast<size_t>(t.width);
    t.offset.assign(static_cast<size_t>(out_len) * w, 0);
    t.weight.assign(static_cast<size_t>(out_len) * w, 0.0);
    t.outside.assign(static_cast<size_t>(out_len), 0);
    const int64_t last = std::max<int64_t>(in_len - 1, 0);
    for (int64_t o = 0; o < out_len; ++o) {
      const size_t base_slot = static_cast<size_t>(o) * w;
      double xo = original_coordinate(o, in_len, out_len, scale, len_resized, start, end);
      if (transform_ == Transform::TfCropAndResize &&
          (xo < 0 || xo > static_cast<double>(in_len - 1))) {
        t.outside[static_cast<size_t>(o)] = 1;
        continue;
      }
      if (!std::isfinite(xo)) xo = 0;
      xo = std::clamp(xo, -1.0e15, 1.0e15);
      // Neighbours are taken left of xo: base = ceil(xo) - 1, ratio in (0, 1].
      double base_f = std::ceil(xo) - 1;
      double ratio = xo - base_f;
      int64_t base = static_cast<int64_t>(base_f);
      if (mode_ == ResizeMode::Nearest) {
        int64_t idx = base + 1;
        if (ratio < 1) {
          bool up = false;
          switch (rounding_) {
            case NearestRounding::RoundPreferFloor:
              up = ratio > 0.5;
              break;
            case NearestRounding::RoundPreferCeil:
              up = ratio >= 0.5;
              break;
            case NearestRounding::Floor:
              up = false;
              break;
            case NearestRounding::Ceil:
              up = true;
              break;
          }
          idx = up ? base + 1 : base;
        }
        t.offset[base_slot] = std::clamp<int64_t>(idx, 0, last) * stride;
        t.weight[base_slot] = 1.0;
        continue;
      }
      double sum = 0;
      for (int64_t k = 0; k < t.width; ++k) {
        int64_t off = first + k;
        double arg = (static_cast<double>(off) - ratio) * support_scale;
        double wt =
            mode_ == ResizeMode::Linear ? std::max(0.0, 1.0 - std::fabs(arg)) : cubic_weight(arg);
        int64_t idx = base + off;
        if (exclude_outside_ && (idx < 0 || idx > in_len - 1)) wt = 0;
        t.offset[base_slot + static_cast<size_t>(k)] = std::clamp<int64_t>(idx, 0, last) * stride;
        t.weight[base_slot + static_cast<size_t>(k)] = wt;
        sum += wt;
      }
      if ((antialias_ || exclude_outside_) && sum != 0)
        for (size_t k = 0; k < w; ++k) t.weight[base_slot + k] /= sum;
    }
    return t;
  }

  // The common case, an image resized over its last two axes (the others one tap each, none
  // outside): row by row, with the same taps, weights and summation order as the general walk
  // below (so the same bits), minus its per-element index bookkeeping (~10x faster).
  template <typename T>
  bool fill_planes(const T* x, T* y, const std::vector<int64_t>& out_shape,
                   const std::vector<AxisTaps>& taps, int threads) const {
    const size_t rank = out_shape.size();
    if (rank < 2) return false;
    // Each leading axis must read one tap per output index: its one tap of non-zero weight
    // (linear taps of an unscaled axis are (1, 0)); the zero-weight taps add nothing in the
    // general walk either. An index whose taps all weigh 0 keeps weight 0 (its sums stay 0).
    std::vector<std::vector<int64_t>> lead_offset(rank - 2);
    std::vector<std::vector<double>> lead_weight(rank - 2);
    for (size_t a = 0; a + 2 < rank; ++a) {
      const AxisTaps& t = taps[a];
      for (int64_t o = 0; o < out_shape[a]; ++o) {
        if (t.outside[static_cast<size_t>(o)]) return false;
        int64_t pick = -1;
        for (int64_t k = 0; k < t.width; ++k) {
          if (t.weight[static_cast<size_t>(o * t.width + k)] == 0) continue;
          if (pick >= 0) return false;  // two taps on a leading axis: the general walk
          pick = k;
        }
        const size_t slot = static_cast<size_t>(o * t.width + std::max<int64_t>(pick, 0));
        lead_offset[a].push_back(t.offset[slot]);
        lead_weight[a].push_back(pick >= 0 ? t.weight[slot] : 0.0);
      }
    }
    const AxisTaps& ty = taps[rank - 2];
    const AxisTaps& tx = taps[rank - 1];
    const int64_t oh = out_shape[rank - 2], ow = out_shape[rank - 1];
    int64_t planes = 1;
    for (size_t a = 0; a + 2 < rank; ++a) planes *= out_shape[a];
    const bool nearest = mode_ == ResizeMode::Nearest;
    const T extrapolated = from_double<T>(extrapolation_);
    const int64_t wy = ty.width, wx = tx.width;
    parallel_for(planes * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ow * wy * wx)),
                 threads, [&](int64_t begin, int64_t end) {
                   for (int64_t r = begin; r < end; ++r) {
                     const int64_t plane = r / oh, oy = r % oh;
                     std::vector<int64_t> lead_index(rank - 2);
                     int64_t rem = plane;
                     for (size_t a = rank - 2; a-- > 0;) {
                       lead_index[a] = rem % out_shape[a];
                       rem /= out_shape[a];
                     }
                     int64_t lead = 0;
                     double wl = 1;  // in axis order, as the general walk multiplies
                     for (size_t a = 0; a + 2 < rank; ++a) {
                       lead += lead_offset[a][static_cast<size_t>(lead_index[a])];
                       wl *= lead_weight[a][static_cast<size_t>(lead_index[a])];
                     }
                     T* row = y + r * ow;
                     if (ty.outside[static_cast<size_t>(oy)]) {
                       std::fill(row, row + ow, extrapolated);
                       continue;
                     }
                     for (int64_t ox = 0; ox < ow; ++ox) {
                       if (tx.outside[static_cast<size_t>(ox)]) {
                         row[ox] = extrapolated;
                       } else if (nearest) {
                         row[ox] = x[lead + ty.offset[static_cast<size_t>(oy * wy)] +
                                     tx.offset[static_cast<size_t>(ox * wx)]];
                       } else if (wl == 0) {
                         row[ox] = from_double<T>(0.0);
                       } else {
                         double acc = 0;
                         for (int64_t ky = 0; ky < wy; ++ky) {
                           const size_t sy = static_cast<size_t>(oy * wy + ky);
                           const double w_y = wl * ty.weight[sy];
                           const int64_t off_y = lead + ty.offset[sy];
                           for (int64_t kx = 0; kx < wx; ++kx) {
                             const size_t sx = static_cast<size_t>(ox * wx + kx);
                             const double w = w_y * tx.weight[sx];
                             if (w != 0)
                               acc += w * static_cast<double>(
                                              convert<compute_t<T>>(x[off_y + tx.offset[sx]]));
                           }
                         }
                         row[ox] = from_double<T>(acc);
                       }
                     }
                   }
                 });
    return true;
  }

  // Linear and cubic taps on a channels-last image whose C is not resized and no tap falls
  // outside: separable, as the ONNX reference computes it (interpolate along W, then along H).
  // Pass 1 interpolates every input row the H taps read along W into ow * C values; pass 2
  // weighs those rows into each output row, contiguous multiply-adds over ow * C. Taps of
  // weight 0 are skipped, as in the general walk (so a NaN they would multiply stays out).
  template <typename T>
  void separable_channels_last(const T* x, T* y, const std::vector<int64_t>& out_shape,
                               const std::vector<int64_t>& n_offset,
                               const std::vector<double>& n_weight, const AxisTaps& ty,
                               const AxisTaps& tx, int threads) const {
    using C = compute_t<T>;
    const int64_t oh = out_shape[1], ow = out_shape[2], c = out_shape[3];
    const int64_t wy = ty.width, wx = tx.width;
    const int64_t span = ow * c;
    // The input rows (as offsets) the H taps read, each with its slot in the row buffer.
    std::vector<int64_t> rows(ty.offset.begin(), ty.offset.end());
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    std::vector<int64_t> tap_slot(ty.offset.size());
    for (size_t i = 0; i < ty.offset.size(); ++i)
      tap_slot[i] = std::lower_bound(rows.begin(), rows.end(), ty.offset[i]) - rows.begin();
    const int64_t nrows = static_cast<int64_t>(rows.size());
    std::vector<C> horizontal(static_cast<size_t>(nrows * span));
    for (int64_t n = 0; n < out_shape[0]; ++n) {
      const T* image = x + n_offset[static_cast<size_t>(n)];
      const double w_n = n_weight[static_cast<size_t>(n)];
      parallel_for(nrows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, span * wx)), threads,
                   [&](int64_t begin, int64_t end) {
                     for (int64_t r = begin; r < end; ++r) {
                       C* out = horizontal.data() + r * span;
                       const T* in_row = image + rows[static_cast<size_t>(r)];
                       for (int64_t ox = 0; ox < ow; ++ox) {
                         C* px = out + ox * c;
                         for (int64_t ch = 0; ch < c; ++ch) px[ch] = C(0);
                         for (int64_t kx = 0; kx < wx; ++kx) {
                           const size_t sx = static_cast<size_t>(ox * wx + kx);
                           const C w = static_cast<C>(tx.weight[sx]);
                           if (w == C(0)) continue;
                           const T* src = in_row + tx.offset[sx];
#pragma omp simd
                           for (int64_t ch = 0; ch < c; ++ch) px[ch] += w * convert<C>(src[ch]);
                         }
                       }
                     }
                   });
      T* image_out = y + n * oh * span;
      parallel_for(oh, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, span * wy)), threads,
                   [&](int64_t begin, int64_t end) {
                     std::vector<C> acc(static_cast<size_t>(span));
                     for (int64_t oy = begin; oy < end; ++oy) {
                       C* a = acc.data();
                       std::fill(acc.begin(), acc.end(), C(0));
                       for (int64_t ky = 0; ky < wy; ++ky) {
                         const size_t sy = static_cast<size_t>(oy * wy + ky);
                         const C w = static_cast<C>(w_n * ty.weight[sy]);
                         if (w == C(0)) continue;
                         const C* src = horizontal.data() + tap_slot[sy] * span;
#pragma omp simd
                         for (int64_t i = 0; i < span; ++i) a[i] += w * src[i];
                       }
                       T* out = image_out + oy * span;
#pragma omp simd
                       for (int64_t i = 0; i < span; ++i) out[i] = convert<T>(a[i]);
                     }
                   });
    }
  }

  // A channels-last image [N, H, W, C] resized over H and W (N and C one tap each, none
  // outside): each output pixel is a weighted sum of input pixels, C values at a time, with
  // the general walk's taps, weights and summation order per element (so the same bits).
  template <typename T>
  bool fill_channels_last(const T* x, T* y, const std::vector<int64_t>& out_shape,
                          const std::vector<AxisTaps>& taps, int threads,
                          bool only_identity_c) const {
    if (out_shape.size() != 4) return false;
    // N and C must read one tap per output index (as fill_planes' leading axes).
    std::vector<int64_t> offset[2];
    std::vector<double> weight[2];
    for (size_t k = 0; k < 2; ++k) {
      const AxisTaps& t = taps[k == 0 ? 0 : 3];
      for (int64_t o = 0; o < out_shape[k == 0 ? 0 : 3]; ++o) {
        if (t.outside[static_cast<size_t>(o)]) return false;
        int64_t pick = -1;
        for (int64_t j = 0; j < t.width; ++j) {
          if (t.weight[static_cast<size_t>(o * t.width + j)] == 0) continue;
          if (pick >= 0) return false;
          pick = j;
        }
        const size_t slot = static_cast<size_t>(o * t.width + std::max<int64_t>(pick, 0));
        offset[k].push_back(t.offset[slot]);
        weight[k].push_back(pick >= 0 ? t.weight[slot] : 0.0);
      }
    }
    const AxisTaps& ty = taps[1];
    const AxisTaps& tx = taps[2];
    const int64_t oh = out_shape[1], ow = out_shape[2], c = out_shape[3];
    const bool nearest = mode_ == ResizeMode::Nearest;
    const T extrapolated = from_double<T>(extrapolation_);
    const int64_t wy = ty.width, wx = tx.width;
    // The usual case: C is not resized (channel ch reads channel ch with weight 1), so a pixel's
    // C values are contiguous in the input and every tap's weight is one number: the tap loop
    // is a vectorizable multiply-add over C (a copy of C values for nearest), with the same
    // products and order as below.
    bool c_identity = true;
    for (int64_t ch = 0; ch < c && c_identity; ++ch)
      c_identity =
          offset[1][static_cast<size_t>(ch)] == ch && weight[1][static_cast<size_t>(ch)] == 1.0;
    if (only_identity_c && !c_identity) return false;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      if (c_identity && !nearest) {
        bool outside = false;
        for (uint8_t o : ty.outside) outside = outside || o != 0;
        for (uint8_t o : tx.outside) outside = outside || o != 0;
        if (!outside) {
          separable_channels_last(x, y, out_shape, offset[0], weight[0], ty, tx, threads);
          return true;
        }
      }
    }
    parallel_for(
        out_shape[0] * oh, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, ow * c)), threads,
        [&](int64_t begin, int64_t end) {
          std::vector<double> acc(static_cast<size_t>(c));
          for (int64_t r = begin; r < end; ++r) {
            const int64_t n = r / oh, oy = r % oh;
            const int64_t lead = offset[0][static_cast<size_t>(n)];
            const double w_n = 1.0 * weight[0][static_cast<size_t>(n)];
            T* row = y + r * ow * c;
            for (int64_t ox = 0; ox < ow; ++ox) {
              T* px = row + ox * c;
              if (ty.outside[static_cast<size_t>(oy)] || tx.outside[static_cast<size_t>(ox)]) {
                std::fill(px, px + c, extrapolated);
                continue;
              }
              if (nearest) {
                const T* src = x + lead + ty.offset[static_cast<size_t>(oy * wy)] +
                               tx.offset[static_cast<size_t>(ox * wx)];
                if (c_identity) {
                  std::copy(src, src + c, px);
                  continue;
                }
                for (int64_t ch = 0; ch < c; ++ch) px[ch] = src[offset[1][static_cast<size_t>(ch)]];
                continue;
              }
              std::fill(acc.begin(), acc.end(), 0.0);
              for (int64_t ky = 0; ky < wy; ++ky) {
                const size_t sy = static_cast<size_t>(oy * wy + ky);
                const double w_y = w_n * ty.weight[sy];
                for (int64_t kx = 0; kx < wx; ++kx) {
                  const size_t sx = static_cast<size_t>(ox * wx + kx);
                  const double w_yx = w_y * tx.weight[sx];
                  const T* src = x + lead + ty.offset[sy] + tx.offset[sx];
                  for (int64_t ch = 0; ch < c; ++ch) {
                    // the general walk's product, in axis order: n, y, x, c
                    const double w = w_yx * weight[1][static_cast<size_t>(ch)];
                    if (w != 0)
                      acc[static_cast<size_t>(ch)] +=
                          w * static_cast<double>(
                                  convert<compute_t<T>>(src[offset[1][static_cast<size_t>(ch)]]));
                  }
                }
              }
              for (int64_t ch = 0; ch < c; ++ch)
                px[ch] = from_double<T>(acc[static_cast<size_t>(ch)]);
            }
          }
        });
    return true;
  }

  template <typename T>
  void fill(const T* x, T* y, const std::vector<int64_t>& out_shape,
            const std::vector<AxisTaps>& taps, int threads) const {
    // A 4-D image whose last axis is not resized (channels-last, or NCHW resized over C and H
    // only) is whole rows of that axis: the channels-last walk copies or weighs them at once.
    if (fill_channels_last(x, y, out_shape, taps, threads, /*only_identity_c=*/true)) return;
    if (fill_planes(x, y, out_shape, taps, threads)) return;
    if (fill_channels_last(x, y, out_shape, taps, threads, /*only_identity_c=*/false)) return;
    const int64_t rank = static_cast<int64_t>(out_shape.size());
    const int64_t total = ir::checked_numel(out_shape);
    const bool nearest = mode_ == ResizeMode::Nearest;
    int64_t taps_per_element = 1;
    for (const auto& t : taps) taps_per_element *= t.width;
    parallel_for(total, std::max<int64_t>(1, 16384 / taps_per_element), threads,
                 [&](int64_t begin, int64_t end) {
                   std::vector<int64_t> idx(static_cast<size_t>(rank));
                   int64_t rem = begin;
                   for (int64_t a = rank - 1; a >= 0; --a) {
                     idx[static_cast<size_t>(a)] = rem % out_shape[static_cast<size_t>(a)];
                     rem /= out_shape[static_cast<size_t>(a)];
                   }
                   std::vector<int64_t> k(static_cast<size_t>(rank));
                   for (int64_t e = begin; e < end; ++e) {
                     bool outside = false;
                     for (int64_t a = 0; a < rank; ++a)
                       outside |=
                           taps[static_cast<size_t>(a)]
                               .outside[static_cast<size_t>(idx[static_cast<size_t>(a)])] != 0;
                     if (outside) {
                       y[e] = from_double<T>(extrapolation_);
                     } else if (nearest) {
                       int64_t off = 0;
                       for (int64_t a = 0; a < rank; ++a)
                         off += taps[static_cast<size_t>(a)]
                                    .offset[static_cast<size_t>(idx[static_cast<size_t>(a)])];
                       y[e] = x[off];
                     } else {
                       y[e] = from_double<T>(interpolate(x, taps, idx, k));
                     }
                     for (int64_t a = rank - 1; a >= 0; --a) {
                       if (++idx[static_cast<size_t>(a)] < out_shape[static_cast<size_t>(a)]) break;
                       idx[static_cast<size_t>(a)] = 0;
                     }
                   }
                 });
  }

  // Sum over the product of every axis' taps for the output element at `idx`.
  template <typename T>
  static double interpolate(const T* x, const std::vector<AxisTaps>& taps,
                            const std::vector<int64_t>& idx, std::vector<int64_t>& k) {
    const size_t rank = taps.size();
    std::fill(k.begin(), k.end(), 0);
    double acc = 0;
    while (true) {
      int64_t off = 0;
      double w = 1;
      for (size_t a = 0; a < rank; ++a) {
        const AxisTaps& t = taps[a];
        size_t slot = static_cast<size_t>(idx[a] * t.width + k[a]);
        off += t.offset[slot];
        w *= t.weight[slot];
      }
      if (w != 0) acc += w * static_cast<double>(convert<compute_t<T>>(x[off]));
      size_t a = rank;
      while (a > 0) {
        --a;
        if (++k[a] < taps[a].width) break;
        k[a] = 0;
        if (a == 0) return acc;
      }
    }
  }

  template <typename T>
  static T from_double(double v) {
    if constexpr (std::is_integral_v<T>) {
      if (std::isnan(v)) return T(0);
      double r = std::nearbyint(v);
      if (r <= static_cast<double>(std::numeric_limits<T>::lowest()))
        return std::numeric_limits<T>::lowest();
      if (r >= static_cast<double>(std::numeric_limits<T>::max()))
        return std::numeric_limits<T>::max();
      return static_cast<T>(r);
    } else {
      return convert<T>(v);
    }
  }

  ResizeMode mode_;
  Transform transform_;
  NearestRounding rounding_;
  double cubic_a_ = -0.75;
  bool exclude_outside_ = false;
  bool antialias_ = false;
  double extrapolation_ = 0;
  ops::ResizeAttributes attrs_;
};

}  // namespace

void register_image_resize_kernels(runtime::KernelRegistry& r) {
  r.add<ResizeKernel>(ops::OpKind::Resize, dtypes_of(AllPodTypes{}));
}

}  // namespace switchyard::cpu
