// Device code of Resize (data_impl.h): nearest, N-D linear and cubic interpolation with every
// coordinate transform, reproducing the CPU kernel's arithmetic bit for bit (explicit fma() where
// GCC contracts, __dmul_rn elsewhere), so integer results round alike.
#include "backends/cuda/kernels/data_device.cuh"

namespace switchyard::cuda::data {

namespace {

// ---- Resize ------------------------------------------------------------------------------

enum ResizeMode { kNearest = 0, kLinear = 1, kCubic = 2 };
enum Transform {
  kHalfPixel = 0,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn
};
enum Rounding { kRoundPreferFloor = 0, kRoundPreferCeil, kFloor, kCeil };

__device__ double original_coordinate(int transform, const ResizeAxis& ax, int64_t o) {
  const double xr = static_cast<double>(o);
  const double in = static_cast<double>(ax.in_len);
  switch (transform) {
    case kHalfPixel:
      return (xr + 0.5) / ax.scale - 0.5;
    case kHalfPixelSymmetric: {
      double adjustment = static_cast<double>(ax.out_len) / ax.length_resized;
      double center = in / 2;
      return fma(center, 1 - adjustment, (xr + 0.5) / ax.scale) - 0.5;
    }
    case kPytorchHalfPixel:
      return ax.length_resized > 1 ? (xr + 0.5) / ax.scale - 0.5 : 0.0;
    case kAlignCorners:
      return ax.length_resized == 1 ? 0.0 : __dmul_rn(xr, in - 1) / (ax.length_resized - 1);
    case kAsymmetric:
      return xr / ax.scale;
    case kTfCropAndResize:
      return ax.length_resized > 1
                 ? fma(ax.roi_start, in - 1,
                       __dmul_rn(__dmul_rn(xr, ax.roi_end - ax.roi_start), in - 1) /
                           (ax.length_resized - 1))
                 : __dmul_rn(__dmul_rn(0.5, ax.roi_start + ax.roi_end), in - 1);
    case kTfHalfPixelForNn:
      return (xr + 0.5) / ax.scale;
  }
  return xr;
}

// The sanitised coordinate split into base = ceil(xo) - 1 and ratio = xo - base in (0, 1].
__device__ __forceinline__ void split_coordinate(double xo, int64_t& base, double& ratio) {
  if (!isfinite(xo)) xo = 0;
  xo = xo < -1.0e15 ? -1.0e15 : (1.0e15 < xo ? 1.0e15 : xo);
  double base_f = ceil(xo) - 1;
  ratio = xo - base_f;
  base = static_cast<int64_t>(base_f);
}

__device__ __forceinline__ int64_t clamp_index(int64_t i, int64_t len) {
  int64_t last = len - 1 > 0 ? len - 1 : 0;
  return i < 0 ? 0 : (i > last ? last : i);
}

__device__ int64_t nearest_index(int rounding, int64_t base, double ratio) {
  if (ratio >= 1) return base + 1;
  bool up = false;
  switch (rounding) {
    case kRoundPreferFloor:
      up = ratio > 0.5;
      break;
    case kRoundPreferCeil:
      up = ratio >= 0.5;
      break;
    case kFloor:
      up = false;
      break;
    case kCeil:
      up = true;
      break;
  }
  return up ? base + 1 : base;
}

__device__ double cubic_weight(double s, double a) {
  s = fabs(s);
  if (s <= 1) return fma(__dmul_rn(fma(a + 2, s, -(a + 3)), s), s, 1.0);
  if (s < 2) {
    double t = fma(a, s, -__dmul_rn(5.0, a));
    t = fma(t, s, __dmul_rn(8.0, a));
    return fma(t, s, -__dmul_rn(4.0, a));
  }
  return 0.0;
}

// Unnormalised weight of tap k of a resized axis (0 outside the input with exclude_outside).
__device__ double raw_weight(const ResizeParams& p, const ResizeAxis& ax, int64_t base,
                             double ratio, int64_t k) {
  int64_t off = ax.first + k;
  double arg = __dmul_rn(static_cast<double>(off) - ratio, ax.support_scale);
  double wt;
  if (p.mode == kLinear) {
    double v = 1.0 - fabs(arg);
    wt = 0.0 < v ? v : 0.0;
  } else {
    wt = cubic_weight(arg, p.cubic_a);
  }
  int64_t idx = base + off;
  if (p.exclude_outside && (idx < 0 || idx > ax.in_len - 1)) wt = 0;
  return wt;
}

template <typename T>
__global__ void resize_nearest_kernel(const T* x, T* y, int64_t n, ResizeParams p,
                                      T extrapolation) {
  SY_GRID_STRIDE(e, n) {
    int64_t rem = e, offset = 0;
    bool outside = false;
    for (int a = p.rank - 1; a >= 0; --a) {
      const ResizeAxis& ax = p.axes[a];
      int64_t q = rem / ax.out_len, o = rem - q * ax.out_len;
      rem = q;
      if (!ax.resized) {
        offset += o * ax.in_stride;
        continue;
      }
      double xo = original_coordinate(p.transform, ax, o);
      if (p.transform == kTfCropAndResize && (xo < 0 || xo > static_cast<double>(ax.in_len - 1))) {
        outside = true;
        continue;
      }
      int64_t base;
      double ratio;
      split_coordinate(xo, base, ratio);
      offset += clamp_index(nearest_index(p.rounding, base, ratio), ax.in_len) * ax.in_stride;
    }
    y[e] = outside ? extrapolation : x[offset];
  }
}

// Linear and cubic: the sum over the product of every resized axis' taps, in the CPU's order
// (row-major over the axes' taps, zero-weight products skipped), accumulated in double.
template <typename T>
__global__ void resize_interpolate_kernel(const T* x, T* y, int64_t n, ResizeParams p,
                                          T extrapolation) {
  SY_GRID_STRIDE(e, n) {
    int64_t base[kMaxRank], klo[kMaxRank], khi[kMaxRank], k[kMaxRank];
    double ratio[kMaxRank], sum[kMaxRank];
    int64_t fixed = 0;
    bool outside = false, all_zero = false;
    int64_t rem = e;
    for (int a = p.rank - 1; a >= 0; --a) {
      const ResizeAxis& ax = p.axes[a];
      int64_t q = rem / ax.out_len, o = rem - q * ax.out_len;
      rem = q;
      if (!ax.resized) {
        fixed += o * ax.in_stride;
        continue;
      }
      double xo = original_coordinate(p.transform, ax, o);
      if (p.transform == kTfCropAndResize && (xo < 0 || xo > static_cast<double>(ax.in_len - 1))) {
        outside = true;
        continue;
      }
      split_coordinate(xo, base[a], ratio[a]);
      double s = 0;
      for (int64_t t = 0; t < ax.width; ++t) s += raw_weight(p, ax, base[a], ratio[a], t);
      sum[a] = p.normalize && s != 0 ? s : 1.0;
      // The range of taps with a non-zero weight (every other product is zero).
      klo[a] = ax.width;
      khi[a] = -1;
      for (int64_t t = 0; t < ax.width; ++t) {
        if (raw_weight(p, ax, base[a], ratio[a], t) / sum[a] != 0) {
          if (klo[a] > t) klo[a] = t;
          khi[a] = t;
        }
      }
      if (khi[a] < 0) all_zero = true;
      k[a] = klo[a];
    }
    if (outside) {
      y[e] = extrapolation;
      continue;
    }
    double acc = 0;
    while (!all_zero) {
      int64_t offset = fixed;
      double w = 1;
      for (int a = 0; a < p.rank; ++a) {
        const ResizeAxis& ax = p.axes[a];
        if (!ax.resized) continue;
        offset += clamp_index(base[a] + ax.first + k[a], ax.in_len) * ax.in_stride;
        w = __dmul_rn(w, raw_weight(p, ax, base[a], ratio[a], k[a]) / sum[a]);
      }
      if (w != 0) acc = fma(w, to_double(x[offset]), acc);
      int a = p.rank - 1;
      for (; a >= 0; --a) {
        if (!p.axes[a].resized) continue;
        if (++k[a] <= khi[a]) break;
        k[a] = klo[a];
      }
      if (a < 0) break;
    }
    y[e] = from_double<T>(acc);
  }
}

}  // namespace

cudaError_t launch_resize(const void* x, void* y, DType dtype, const ResizeParams& params,
                          cudaStream_t stream) {
  int64_t n = 1;
  for (int a = 0; a < params.rank; ++a) n *= params.axes[a].out_len;
  if (n == 0) return cudaSuccess;
  if (params.mode == kNearest) {
    return dispatch_size(static_cast<int>(dtype_size(dtype)), [&](auto tag) {
      using T = decltype(tag);
      resize_nearest_kernel<T>
          <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n,
                                                   params, from_bits<T>(params.extrapolation_bits));
      return cudaGetLastError();
    });
  }
  return dispatch_numeric(dtype, [&](auto tag) {
    using T = decltype(tag);
    resize_interpolate_kernel<T>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n,
                                                 params, from_bits<T>(params.extrapolation_bits));
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda::data
