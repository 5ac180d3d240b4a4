// CPU kernels of GridSample (opset 20 semantics, 4-D) and Col2Im (N-D).
#include <string>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/image_internal.h"

namespace switchyard::cpu {

namespace {

enum class SampleMode { Linear, Nearest, Cubic };
enum class Padding { Zeros, Border, Reflection };

class GridSampleKernel final : public runtime::Kernel {
 public:
  explicit GridSampleKernel(const runtime::KernelInit& init) {
    const ir::Node& n = init.node;
    std::string mode = n.attr_string("mode", "linear");
    if (mode == "linear" || mode == "bilinear") {
      mode_ = SampleMode::Linear;
    } else if (mode == "nearest") {
      mode_ = SampleMode::Nearest;
    } else if (mode == "cubic" || mode == "bicubic") {
      mode_ = SampleMode::Cubic;
    } else {
      SY_THROW(InvalidModel, "{}: mode '{}' is not supported", n.describe(), mode);
    }
    std::string padding = n.attr_string("padding_mode", "zeros");
    if (padding == "zeros") {
      padding_ = Padding::Zeros;
    } else if (padding == "border") {
      padding_ = Padding::Border;
    } else if (padding == "reflection") {
      padding_ = Padding::Reflection;
    } else {
      SY_THROW(InvalidModel, "{}: padding_mode '{}' is not supported", n.describe(), padding);
    }
    align_corners_ = n.attr_int("align_corners", 0) != 0;
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& grid = ctx.input(1);
    if (x.rank() != 4) ctx.fail("X has rank {}; this kernel supports 4-D input only", x.rank());
    if (grid.rank() != 4 || grid.dim(3) != 2 || grid.dim(0) != x.dim(0))
      ctx.fail("grid has shape {}, expected [{}, H_out, W_out, 2]",
               ir::shape_to_string(grid.shape()), x.dim(0));
    if (!ir::dtype_is_float(grid.dtype())) ctx.fail("grid must be a float tensor");
    std::vector<double> g(static_cast<size_t>(grid.numel()));
    for (int64_t i = 0; i < grid.numel(); ++i) g[static_cast<size_t>(i)] = grid.scalar_as_double(i);
    std::vector<int64_t> out_shape = {x.dim(0), x.dim(1), grid.dim(1), grid.dim(2)};
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      sample<T>(x.data<T>(), g.data(), y.data<T>(), x.shape(), out_shape, ctx.num_threads());
    });
  }

 private:
  double unnormalize(double coord, int64_t size) const {
    return align_corners_ ? (coord + 1) / 2 * static_cast<double>(size - 1)
                          : ((coord + 1) * static_cast<double>(size) - 1) / 2;
  }

  static double reflect(double v, double twice_low, double twice_high) {
    if (twice_low == twice_high) return 0;
    double low = twice_low / 2;
    double span = (twice_high - twice_low) / 2;
    v = std::fabs(v - low);
    double extra = std::fmod(v, span);
    int64_t flips = static_cast<int64_t>(std::floor(v / span));
    return flips % 2 == 0 ? extra + low : span - extra + low;
  }

  // Applies the padding mode to a source coordinate (zeros: unchanged).
  double pad_coordinate(double v, int64_t size) const {
    const double hi = static_cast<double>(size - 1);
    if (padding_ == Padding::Border) return std::clamp(v, 0.0, hi);
    if (padding_ == Padding::Reflection) {
      v = align_corners_ ? reflect(v, 0, 2 * hi)
                         : reflect(v, -1, 2 * static_cast<double>(size) - 1);
      return std::clamp(v, 0.0, hi);
    }
    return v;
  }

  static double cubic(double s) {
    constexpr double a = -0.75;
    s = std::fabs(s);
    if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
    if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
    return 0;
  }

  template <typename T>
  void sample(const T* x, const double* grid, T* y, const std::vector<int64_t>& in_shape,
              const std::vector<int64_t>& out_shape, int threads) const {
    using C = compute_t<T>;
    const int64_t channels = in_shape[1], h_in = in_shape[2], w_in = in_shape[3];
    const int64_t h_out = out_shape[2], w_out = out_shape[3];
    const int64_t plane_in = h_in * w_in, plane_out = h_out * w_out;
    const int64_t points = out_shape[0] * plane_out;
    parallel_for(points, std::max<int64_t>(1, 2048 / std::max<int64_t>(channels, 1)), threads,
                 [&](int64_t begin, int64_t end) {
                   for (int64_t p = begin; p < end; ++p) {
                     const int64_t n = p / plane_out;
                     const int64_t pos = p % plane_out;
                     const double gx = grid[2 * p];
                     const double gy = grid[2 * p + 1];
                     double ix = unnormalize(gx, w_in);
                     double iy = unnormalize(gy, h_in);
                     const T* xn = x + n * channels * plane_in;
                     T* yn = y + n * channels * plane_out + pos;
                     auto at = [&](const T* plane, int64_t r, int64_t c) -> double {
                       if (r < 0 || r >= h_in || c < 0 || c >= w_in) return 0.0;
                       return static_cast<double>(convert<C>(plane[r * w_in + c]));
                     };
                     if (!std::isfinite(ix) || !std::isfinite(iy)) {
                       for (int64_t c = 0; c < channels; ++c)
                         yn[c * plane_out] = convert<T>(padding_ == Padding::Zeros ? 0.0 : NAN);
                       continue;
                     }
                     if (mode_ == SampleMode::Cubic) {
                       const double fx = std::floor(ix), fy = std::floor(iy);
                       const double tx = ix - fx, ty = iy - fy;
                       double wx[4], wy[4];
                       int64_t cx[4], cy[4];
                       for (int k = 0; k < 4; ++k) {
                         wx[k] = cubic(tx - (k - 1));
                         wy[k] = cubic(ty - (k - 1));
                         cx[k] = tap_index(fx + (k - 1), w_in);
                         cy[k] = tap_index(fy + (k - 1), h_in);
                       }
                       for (int64_t c = 0; c < channels; ++c) {
                         const T* plane = xn + c * plane_in;
                         double acc = 0;
                         for (int r = 0; r < 4; ++r) {
                           double row = 0;
                           for (int k = 0; k < 4; ++k) row += wx[k] * at(plane, cy[r], cx[k]);
                           acc += wy[r] * row;
                         }
                         yn[c * plane_out] = convert<T>(acc);
                       }
                       continue;
                     }
                     ix = std::clamp(pad_coordinate(ix, w_in), -1.0e15, 1.0e15);
                     iy = std::clamp(pad_coordinate(iy, h_in), -1.0e15, 1.0e15);
                     if (mode_ == SampleMode::Nearest) {
                       int64_t c0 = static_cast<int64_t>(std::nearbyint(ix));
                       int64_t r0 = static_cast<int64_t>(std::nearbyint(iy));
                       for (int64_t c = 0; c < channels; ++c)
                         yn[c * plane_out] = convert<T>(at(xn + c * plane_in, r0, c0));
                       continue;
                     }
                     const double fx = std::floor(ix), fy = std::floor(iy);
                     const int64_t c0 = static_cast<int64_t>(fx), r0 = static_cast<int64_t>(fy);
                     const double tx = ix - fx, ty = iy - fy;
                     for (int64_t c = 0; c < channels; ++c) {
                       const T* plane = xn + c * plane_in;
                       double v =
                           (1 - ty) * ((1 - tx) * at(plane, r0, c0) + tx * at(plane, r0, c0 + 1)) +
                           ty * ((1 - tx) * at(plane, r0 + 1, c0) + tx * at(plane, r0 + 1, c0 + 1));
                       yn[c * plane_out] = convert<T>(v);
                     }
                   }
                 });
  }

  // A cubic tap's integer index after padding (out of range stays out of range for zeros).
  int64_t tap_index(double v, int64_t size) const {
    v = std::clamp(v, -1.0e15, 1.0e15);
    if (padding_ == Padding::Zeros) return static_cast<int64_t>(v);
    return static_cast<int64_t>(pad_coordinate(v, size));
  }

  SampleMode mode_ = SampleMode::Linear;
  Padding padding_ = Padding::Zeros;
  bool align_corners_ = false;
};

runtime::Support grid_sample_supported(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (x && x->type().has_rank() && x->type().rank() != 4)
    return runtime::Support::no(
        fmt::format("{}: the CPU GridSample kernel supports 4-D input only, "
                    "got rank {}",
                    node.describe(), x->type().rank()));
  return runtime::Support::yes();
}

class Col2ImKernel final : public runtime::Kernel {
 public:
  explicit Col2ImKernel(const runtime::KernelInit& init) {
    dilations_ = init.node.attr_ints("dilations", {});
    pads_ = init.node.attr_ints("pads", {});
    strides_ = init.node.attr_ints("strides", {});
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& image_t = ctx.input(1);
    const ir::Tensor& block_t = ctx.input(2);
    if (x.rank() != 3) ctx.fail("input has rank {}, expected 3", x.rank());
    if (image_t.rank() != 1 || block_t.rank() != 1 || image_t.numel() != block_t.numel() ||
        image_t.numel() == 0)
      ctx.fail("image_shape {} and block_shape {} must be 1-D of one non-zero length",
               ir::shape_to_string(image_t.shape()), ir::shape_to_string(block_t.shape()));
    const std::vector<int64_t> image = image_t.to_int_vector();
    const std::vector<int64_t> block = block_t.to_int_vector();
    const size_t dims = image.size();
    auto attr_or = [&](const std::vector<int64_t>& v, size_t count, int64_t fallback,
                       const char* name) {
      if (v.empty()) return std::vector<int64_t>(count, fallback);
      if (v.size() != count) ctx.fail("{} has {} values, expected {}", name, v.size(), count);
      return v;
    };
    const std::vector<int64_t> dil = attr_or(dilations_, dims, 1, "dilations");
    const std::vector<int64_t> str = attr_or(strides_, dims, 1, "strides");
    const std::vector<int64_t> pad = attr_or(pads_, 2 * dims, 0, "pads");
    int64_t block_size = 1;
    int64_t num_blocks = 1;
    std::vector<int64_t> blocks_per_dim(dims);
    for (size_t d = 0; d < dims; ++d) {
      if (image[d] < 0) ctx.fail("image_shape[{}] = {} is negative", d, image[d]);
      if (block[d] <= 0) ctx.fail("block_shape[{}] = {} must be positive", d, block[d]);
      if (dil[d] <= 0 || str[d] <= 0 || pad[d] < 0 || pad[d + dims] < 0)
        ctx.fail("dilations, strides and pads of dim {} are invalid", d);
      int64_t effective = dil[d] * (block[d] - 1) + 1;
      int64_t span = image[d] + pad[d] + pad[d + dims] - effective;
      if (span < 0) ctx.fail("block of dim {} ({}) is larger than the padded image", d, effective);
      blocks_per_dim[d] = span / str[d] + 1;
      block_size *= block[d];
      num_blocks *= blocks_per_dim[d];
    }
    if (x.dim(1) % block_size != 0)
      ctx.fail("input dim 1 = {} is not a multiple of the block size {}", x.dim(1), block_size);
    if (x.dim(2) != num_blocks)
      ctx.fail("input dim 2 = {} does not match the {} blocks the image holds", x.dim(2),
               num_blocks);
    const int64_t channels = x.dim(1) / block_size;
    std::vector<int64_t> out_shape = {x.dim(0), channels};
    out_shape.insert(out_shape.end(), image.begin(), image.end());
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    const int64_t image_size = ir::checked_numel(image);
    const std::vector<int64_t> image_strides = strides_of(image);
    dispatch(NumericTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      parallel_for(x.dim(0) * channels, 1, ctx.num_threads(), [&](int64_t begin, int64_t end) {
        std::vector<C> acc(static_cast<size_t>(image_size));
        std::vector<int64_t> k(dims), b(dims);
        for (int64_t nc = begin; nc < end; ++nc) {
          std::fill(acc.begin(), acc.end(), C(0));
          const T* src = xp + nc * block_size * num_blocks;
          for (int64_t kl = 0; kl < block_size; ++kl) {
            for (int64_t rem = kl, d = static_cast<int64_t>(dims) - 1; d >= 0; --d) {
              k[static_cast<size_t>(d)] = rem % block[static_cast<size_t>(d)];
              rem /= block[static_cast<size_t>(d)];
            }
            for (int64_t bl = 0; bl < num_blocks; ++bl) {
              int64_t off = 0;
              bool inside = true;
              for (int64_t rem = bl, d = static_cast<int64_t>(dims) - 1; d >= 0; --d) {
                size_t ds = static_cast<size_t>(d);
                b[ds] = rem % blocks_per_dim[ds];
                rem /= blocks_per_dim[ds];
                int64_t coord = b[ds] * str[ds] - pad[ds] + k[ds] * dil[ds];
                if (coord < 0 || coord >= image[ds]) inside = false;
                off += coord * image_strides[ds];
              }
              if (inside) acc[static_cast<size_t>(off)] += convert<C>(src[kl * num_blocks + bl]);
            }
          }
          T* dst = yp + nc * image_size;
          for (int64_t i = 0; i < image_size; ++i) dst[i] = convert<T>(acc[static_cast<size_t>(i)]);
        }
      });
    });
  }

 private:
  std::vector<int64_t> dilations_, pads_, strides_;
};

}  // namespace

void register_image_sampling_kernels(runtime::KernelRegistry& r) {
  r.add(runtime::KernelDef{ops::OpKind::GridSample, dtypes_of(FloatTypes{}), 0,
                           grid_sample_supported, runtime::make_factory<GridSampleKernel>()});
  r.add<Col2ImKernel>(ops::OpKind::Col2Im, dtypes_of(NumericTypes{}));
}

}  // namespace switchyard::cpu
