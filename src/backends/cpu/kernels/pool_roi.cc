// MaxUnpool and the region-of-interest pools (MaxRoiPool, RoiAlign).
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/pool_internal.h"
#include "ops/conv_geometry.h"

namespace switchyard::cpu {

namespace {

// One bilinear sample: four input positions of a plane and their weights.
template <typename C>
struct BilinearTap {
  int64_t pos[4];
  C w[4];
};

class MaxUnpoolKernel : public runtime::Kernel {
 public:
  explicit MaxUnpoolKernel(const runtime::KernelInit& init)
      : attrs_(ops::read_window_attrs(init.node, init.node.attr_ints("kernel_shape"))) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& idx = ctx.input(1);
    size_t n = attrs_.spatial();
    if (x.rank() != static_cast<int64_t>(n + 2))
      ctx.fail("input X has shape {} but kernel_shape has {} dims", ir::shape_to_string(x.shape()),
               n);
    if (idx.dtype() != DType::Int64 || idx.shape() != x.shape())
      ctx.fail("indices I must be int64 with X's shape {}, got {} {}",
               ir::shape_to_string(x.shape()), ir::dtype_name(idx.dtype()),
               ir::shape_to_string(idx.shape()));
    // Indices address the default unpooled shape; a given output_shape pads it at the ends.
    std::vector<int64_t> unpooled = {x.dim(0), x.dim(1)};
    for (size_t i = 0; i < n; ++i)
      unpooled.push_back(ops::unpooled_size(x.dim(static_cast<int64_t>(i) + 2), attrs_, i));
    for (int64_t d : unpooled)
      if (d < 0) ctx.fail("the unpooled shape {} has a negative dim", unpooled);
    std::vector<int64_t> out_shape = unpooled;
    if (ctx.has_input(2)) {
      out_shape = ctx.input(2).to_int_vector();
      if (out_shape.size() != n + 2 || out_shape[0] != x.dim(0) || out_shape[1] != x.dim(1))
        ctx.fail("output_shape {} must be [{}, {}, ...] of rank {}", out_shape, x.dim(0), x.dim(1),
                 n + 2);
      for (size_t i = 2; i < out_shape.size(); ++i)
        if (out_shape[i] < unpooled[i])
          ctx.fail("output_shape {} is smaller than the unpooled shape {}", out_shape, unpooled);
    }
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    std::memset(y.raw(), 0, y.nbytes());
    const int64_t* ip = idx.data<int64_t>();
    const int64_t total = ir::checked_numel(unpooled);
    const std::vector<int64_t> from = strides_of(unpooled), to = strides_of(out_shape);
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        if (ip[i] < 0 || ip[i] >= total)
          ctx.fail("index {} at position {} of I is out of range for the unpooled shape {}", ip[i],
                   i, unpooled);
        int64_t rest = ip[i], target = 0;
        for (size_t k = 0; k < from.size(); ++k) {
          target += rest / from[k] * to[k];
          rest %= from[k];
        }
        yp[target] = xp[i];
      }
    });
  }

 private:
  ops::WindowAttrs attrs_;
};

// Checks X [N, C, H, W] and rois [num_rois, columns] of X's dtype.
void check_roi_inputs(const runtime::KernelContext& ctx, const ir::Tensor& x,
                      const ir::Tensor& rois, int64_t columns) {
  if (x.rank() != 4)
    ctx.fail("input X has shape {}, expected rank 4", ir::shape_to_string(x.shape()));
  if (rois.rank() != 2 || rois.dim(1) != columns || rois.dtype() != x.dtype())
    ctx.fail("rois must be [num_rois, {}] of X's dtype, got {} {}", columns,
             ir::dtype_name(rois.dtype()), ir::shape_to_string(rois.shape()));
}

class MaxRoiPoolKernel : public runtime::Kernel {
 public:
  explicit MaxRoiPoolKernel(const runtime::KernelInit& init)
      : pooled_(init.node.attr_ints("pooled_shape")),
        spatial_scale_(init.node.attr_float("spatial_scale", 1.0f)) {
    SY_CHECK(pooled_.size() == 2 && pooled_[0] >= 1 && pooled_[1] >= 1, InvalidModel,
             "{}: pooled_shape must be two positive values, got {}", init.node.describe(), pooled_);
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& rois = ctx.input(1);
    check_roi_inputs(ctx, x, rois, 5);
    const int64_t num = rois.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t ph_n = pooled_[0], pw_n = pooled_[1];
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), {num, channels, ph_n, pw_n});
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* xp = x.data<T>();
      const T* rp = rois.data<T>();
      T* yp = y.data<T>();
      for (int64_t r = 0; r < num; ++r) {
        const T* roi = rp + r * 5;
        double bd = static_cast<double>(static_cast<C>(roi[0]));
        int64_t b = static_cast<int64_t>(bd);
        if (!(bd >= 0) || b >= x.dim(0))
          ctx.fail("roi {} has batch index {}, out of range for {} images", r, bd, x.dim(0));
        auto scaled = [&](int i) {
          return static_cast<int64_t>(std::round(static_cast<C>(roi[i]) * spatial_scale_));
        };
        int64_t x1 = scaled(1), y1 = scaled(2), x2 = scaled(3), y2 = scaled(4);
        double roi_h = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1));
        double roi_w = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1));
        double bin_h = roi_h / static_cast<double>(ph_n), bin_w = roi_w / static_cast<double>(pw_n);
        for (int64_t c = 0; c < channels; ++c) {
          const T* plane = xp + (b * channels + c) * height * width;
          for (int64_t ph = 0; ph < ph_n; ++ph) {
            int64_t hs = static_cast<int64_t>(std::floor(static_cast<double>(ph) * bin_h));
            int64_t he = static_cast<int64_t>(std::ceil(static_cast<double>(ph + 1) * bin_h));
            hs = std::clamp<int64_t>(hs + y1, 0, height);
            he = std::clamp<int64_t>(he + y1, 0, height);
            for (int64_t pw = 0; pw < pw_n; ++pw) {
              int64_t ws = static_cast<int64_t>(std::floor(static_cast<double>(pw) * bin_w));
              int64_t we = static_cast<int64_t>(std::ceil(static_cast<double>(pw + 1) * bin_w));
              ws = std::clamp<int64_t>(ws + x1, 0, width);
              we = std::clamp<int64_t>(we + x1, 0, width);
              C best = 0;
              bool any = false;
              for (int64_t h = hs; h < he; ++h)
                for (int64_t w = ws; w < we; ++w) {
                  C v = static_cast<C>(plane[h * width + w]);
                  if (!any || v > best) best = v;
                  any = true;
                }
              yp[((r * channels + c) * ph_n + ph) * pw_n + pw] = convert<T>(best);
            }
          }
        }
      }
    });
  }

 private:
  std::vector<int64_t> pooled_;
  float spatial_scale_;
};

// Most bilinear samples one ROI of RoiAlign may take (bins x grid): a bound on the work and the
// tap table that a model's sampling_ratio or its ROI coordinates could otherwise make unbounded.
constexpr int64_t kMaxRoiSamples = int64_t{1} << 24;

// The sampling grid along one axis of a bin: the fixed sampling_ratio, else ceil(roi / bins),
// checked before it becomes an integer (ROI coordinates are data: they may be NaN or 1e30).
template <typename C>
int64_t adaptive_grid(const runtime::KernelContext& ctx, int64_t roi_index, C roi_extent,
                      int64_t bins) {
  double g = std::ceil(static_cast<double>(roi_extent) / static_cast<double>(bins));
  if (std::isnan(g)) ctx.fail("ROI {} has a NaN coordinate", roi_index);
  if (g > static_cast<double>(kMaxRoiSamples))
    ctx.fail("ROI {} spans {} pixels: its adaptive sampling grid is too large", roi_index,
             static_cast<double>(roi_extent));
  return std::max<int64_t>(static_cast<int64_t>(g), 0);
}

class RoiAlignKernel : public runtime::Kernel {
 public:
  explicit RoiAlignKernel(const runtime::KernelInit& init)
      : max_mode_(init.node.attr_string("mode", "avg") == "max"),
        half_pixel_(init.node.attr_string("coordinate_transformation_mode", "half_pixel") ==
                    "half_pixel"),
        out_h_(init.node.attr_int("output_height", 1)),
        out_w_(init.node.attr_int("output_width", 1)),
        sampling_ratio_(init.node.attr_int("sampling_ratio", 0)),
        spatial_scale_(init.node.attr_float("spatial_scale", 1.0f)) {
    SY_CHECK(out_h_ >= 1 && out_w_ >= 1 && sampling_ratio_ >= 0, InvalidModel,
             "{}: output_height/output_width must be >= 1 and sampling_ratio >= 0",
             init.node.describe());
    SY_CHECK(
        out_h_ <= kMaxRoiSamples && out_w_ <= kMaxRoiSamples && sampling_ratio_ <= kMaxRoiSamples,
        InvalidModel,
        "{}: output_height {}, output_width {} and sampling_ratio {} must each be at most {}",
        init.node.describe(), out_h_, out_w_, sampling_ratio_, kMaxRoiSamples);
  }

  template <typename C>
  int64_t sampling_grid(const runtime::KernelContext& ctx, int64_t r, C extent,
                        int64_t bins) const {
    return sampling_ratio_ > 0 ? sampling_ratio_ : adaptive_grid(ctx, r, extent, bins);
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& rois = ctx.input(1);
    const ir::Tensor& batch = ctx.input(2);
    check_roi_inputs(ctx, x, rois, 4);
    const int64_t num = rois.dim(0);
    if (batch.dtype() != DType::Int64 || batch.shape() != std::vector<int64_t>{num})
      ctx.fail("batch_indices must be int64 [{}], got {} {}", num, ir::dtype_name(batch.dtype()),
               ir::shape_to_string(batch.shape()));
    const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t* bp = batch.data<int64_t>();
    for (int64_t r = 0; r < num; ++r)
      if (bp[r] < 0 || bp[r] >= x.dim(0))
        ctx.fail("batch_indices[{}] = {} is out of range for {} images", r, bp[r], x.dim(0));
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), {num, channels, out_h_, out_w_});
    if (height == 0 || width == 0) {
      std::memset(y.raw(), 0, y.nbytes());
      return;
    }
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* xp = x.data<T>();
      const T* rp = rois.data<T>();
      T* yp = y.data<T>();
      parallel_for(num, 1, ctx.num_threads(), [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
          const T* roi = rp + r * 4;
          C offset = half_pixel_ ? C(0.5) : C(0);
          C scale = static_cast<C>(spatial_scale_);
          C x1 = static_cast<C>(roi[0]) * scale - offset,
            y1 = static_cast<C>(roi[1]) * scale - offset;
          C x2 = static_cast<C>(roi[2]) * scale - offset,
            y2 = static_cast<C>(roi[3]) * scale - offset;
          C roi_w = x2 - x1, roi_h = y2 - y1;
          if (!half_pixel_) {
            roi_w = std::max(roi_w, C(1));
            roi_h = std::max(roi_h, C(1));
          }
          C bin_h = roi_h / static_cast<C>(out_h_), bin_w = roi_w / static_cast<C>(out_w_);
          int64_t grid_h = sampling_grid(ctx, r, roi_h, out_h_);
          int64_t grid_w = sampling_grid(ctx, r, roi_w, out_w_);
          // Every count is bounded before use: the taps of one ROI fit kMaxRoiSamples.
          double total = static_cast<double>(out_h_) * static_cast<double>(out_w_) *
                         static_cast<double>(grid_h) * static_cast<double>(grid_w);
          if (total > static_cast<double>(kMaxRoiSamples))
            ctx.fail("ROI {} needs {} bilinear samples ({}x{} bins of {}x{}), more than {}", r,
                     total, out_h_, out_w_, grid_h, grid_w, kMaxRoiSamples);
          C count = static_cast<C>(std::max<int64_t>(grid_h * grid_w, 1));
          // Bilinear taps of every sample of every bin (shared by all channels).
          std::vector<BilinearTap<C>> taps;
          taps.reserve(static_cast<size_t>(out_h_ * out_w_ * grid_h * grid_w));
          for (int64_t ph = 0; ph < out_h_; ++ph)
            for (int64_t pw = 0; pw < out_w_; ++pw)
              for (int64_t iy = 0; iy < grid_h; ++iy) {
                C yy = y1 + static_cast<C>(ph) * bin_h +
                       (static_cast<C>(iy) + C(0.5)) * bin_h / static_cast<C>(grid_h);
                for (int64_t ix = 0; ix < grid_w; ++ix) {
                  C xx = x1 + static_cast<C>(pw) * bin_w +
                         (static_cast<C>(ix) + C(0.5)) * bin_w / static_cast<C>(grid_w);
                  taps.push_back(bilinear_tap<C>(yy, xx, height, width));
                }
              }
          const int64_t samples = grid_h * grid_w;
          for (int64_t c = 0; c < channels; ++c) {
            const T* plane = xp + (bp[r] * channels + c) * height * width;
            for (int64_t b = 0; b < out_h_ * out_w_; ++b) {
              C value = 0;
              for (int64_t s = 0; s < samples; ++s) {
                const BilinearTap<C>& t = taps[static_cast<size_t>(b * samples + s)];
                C v[4];
                for (int i = 0; i < 4; ++i) v[i] = t.w[i] * static_cast<C>(plane[t.pos[i]]);
                if (max_mode_) {
                  C m = std::max(std::max(std::max(v[0], v[1]), v[2]), v[3]);
                  value = s == 0 ? m : std::max(value, m);
                } else {
                  value += v[0] + v[1] + v[2] + v[3];
                }
              }
              if (!max_mode_) value /= count;
              yp[(r * channels + c) * out_h_ * out_w_ + b] = convert<T>(value);
            }
          }
        }
      });
    });
  }

 private:
  template <typename C>
  static BilinearTap<C> bilinear_tap(C y, C x, int64_t height, int64_t width) {
    BilinearTap<C> t{{0, 0, 0, 0}, {0, 0, 0, 0}};
    if (y < C(-1) || y > static_cast<C>(height) || x < C(-1) || x > static_cast<C>(width)) return t;
    y = std::max(y, C(0));
    x = std::max(x, C(0));
    int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
    int64_t y_high, x_high;
    if (y_low >= height - 1) {
      y_high = y_low = height - 1;
      y = static_cast<C>(y_low);
    } else {
      y_high = y_low + 1;
    }
    if (x_low >= width - 1) {
      x_high = x_low = width - 1;
      x = static_cast<C>(x_low);
    } else {
      x_high = x_low + 1;
    }
    C ly = y - static_cast<C>(y_low), lx = x - static_cast<C>(x_low);
    C hy = C(1) - ly, hx = C(1) - lx;
    t.pos[0] = y_low * width + x_low;
    t.pos[1] = y_low * width + x_high;
    t.pos[2] = y_high * width + x_low;
    t.pos[3] = y_high * width + x_high;
    t.w[0] = hy * hx;
    t.w[1] = hy * lx;
    t.w[2] = ly * hx;
    t.w[3] = ly * lx;
    return t;
  }

  bool max_mode_, half_pixel_;
  int64_t out_h_, out_w_, sampling_ratio_;
  float spatial_scale_;
};

}  // namespace

void register_pool_roi_kernels(runtime::KernelRegistry& r) {
  r.add<MaxUnpoolKernel>(ops::OpKind::MaxUnpool, dtypes_of(FloatTypes{}));
  r.add<MaxRoiPoolKernel>(ops::OpKind::MaxRoiPool, dtypes_of(FloatTypes{}));
  r.add<RoiAlignKernel>(ops::OpKind::RoiAlign, dtypes_of(FloatTypes{}));
}

}  // namespace switchyard::cpu
