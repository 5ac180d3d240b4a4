// The CUDA Resize kernel (opset 19: nearest / linear / cubic, every coordinate transform, axes,
// keep_aspect_ratio_policy, antialias); scales, sizes and roi are host inputs. Mirrors the CPU
// kernel's coordinate math (src/backends/cpu/kernels/image_resize.cc). Device code: resize.cu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/data_host.h"
#include "backends/cuda/kernels/data_impl.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using namespace movement;  // NOLINT: the family's shared helpers
// ---- Resize ------------------------------------------------------------------------------

// Enum values as data::ResizeParams documents them (the CPU kernel's order).
template <typename E>
E parse_choice(const ir::Node& node, const std::string& attr, const std::string& value,
               std::initializer_list<std::pair<const char*, E>> choices) {
  for (const auto& [name, e] : choices)
    if (value == name) return e;
  SY_THROW(InvalidModel, "{}: {} '{}' is not supported", node.describe(), attr, value);
}

constexpr int kNearest = 0, kLinear = 1;
constexpr int kTfCropAndResize = 5;
enum class AspectPolicy { Stretch, NotLarger, NotSmaller };

Support check_resize(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (x && x->type().dtype == DType::Bool && node.attr_string("mode", "nearest") != "nearest")
    return Support::no("the CUDA Resize kernel interpolates bool only in mode nearest");
  return rank_fits(node, 0);
}

class ResizeKernel final : public backends::Kernel {
 public:
  explicit ResizeKernel(const KernelInit& init) {
    const ir::Node& n = init.node;
    mode_ = parse_choice<int>(n, "mode", n.attr_string("mode", "nearest"),
                              {{"nearest", 0}, {"linear", 1}, {"cubic", 2}});
    transform_ = parse_choice<int>(n, "coordinate_transformation_mode",
                                   n.attr_string("coordinate_transformation_mode", "half_pixel"),
                                   {{"half_pixel", 0},
                                    {"half_pixel_symmetric", 1},
                                    {"pytorch_half_pixel", 2},
                                    {"align_corners", 3},
                                    {"asymmetric", 4},
                                    {"tf_crop_and_resize", 5},
                                    {"tf_half_pixel_for_nn", 6}});
    rounding_ = parse_choice<int>(
        n, "nearest_mode", n.attr_string("nearest_mode", "round_prefer_floor"),
        {{"round_prefer_floor", 0}, {"round_prefer_ceil", 1}, {"floor", 2}, {"ceil", 3}});
    policy_ = parse_choice<AspectPolicy>(n, "keep_aspect_ratio_policy",
                                         n.attr_string("keep_aspect_ratio_policy", "stretch"),
                                         {{"stretch", AspectPolicy::Stretch},
                                          {"not_larger", AspectPolicy::NotLarger},
                                          {"not_smaller", AspectPolicy::NotSmaller}});
    cubic_a_ = n.attr_float("cubic_coeff_a", -0.75f);
    exclude_outside_ = n.attr_int("exclude_outside", 0) != 0;
    antialias_ = n.attr_int("antialias", 0) != 0;
    extrapolation_ = n.attr_float("extrapolation_value", 0.0f);
    axes_attr_ = n.attr_ints("axes", {});
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    if (rank == 0) ctx.fail("X must have rank >= 1");
    std::vector<int64_t> axes;
    if (axes_attr_.empty()) {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    } else {
      std::set<int64_t> seen;
      for (int64_t a : axes_attr_) {
        int64_t axis = ops::normalize_axis(ctx.node(), a, rank);
        if (!seen.insert(axis).second) ctx.fail("axes has axis {} twice", a);
        axes.push_back(axis);
      }
    }
    const size_t num_axes = axes.size();
    auto present = [&](size_t i) { return ctx.has_input(i) && ctx.input(i).numel() > 0; };
    const bool has_scales = present(2);
    const bool has_sizes = present(3);
    if (has_scales == has_sizes)
      ctx.fail("exactly one of scales and sizes must be given (non-empty)");

    std::vector<int64_t> in_shape = x.shape();
    std::vector<int64_t> out_shape = in_shape;
    std::vector<double> scale(static_cast<size_t>(rank), 1.0);
    std::vector<double> length_resized(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i)
      length_resized[static_cast<size_t>(i)] =
          static_cast<double>(in_shape[static_cast<size_t>(i)]);
    std::vector<bool> resized(static_cast<size_t>(rank), false);
    for (int64_t a : axes) resized[static_cast<size_t>(a)] = true;

    if (has_scales) {
      const ir::Tensor& s = ctx.input(2);
      if (!ir::dtype_is_float(s.dtype())) ctx.fail("scales must be a float tensor");
      if (static_cast<size_t>(s.numel()) != num_axes)
        ctx.fail("scales has {} values, expected {}", s.numel(), num_axes);
      std::vector<double> values = read_doubles(ctx, 2);
      for (size_t i = 0; i < num_axes; ++i) {
        double v = values[i];
        if (!(v > 0) || !std::isfinite(v)) ctx.fail("scales[{}] = {} must be positive", i, v);
        size_t a = static_cast<size_t>(axes[i]);
        double len = static_cast<double>(in_shape[a]) * v;
        if (len > 9.0e18) ctx.fail("scales[{}] = {} makes axis {} too large", i, v, a);
        scale[a] = v;
        length_resized[a] = len;
        out_shape[a] = static_cast<int64_t>(std::floor(len));
      }
    } else {
      const ir::Tensor& s = ctx.input(3);
      if (s.dtype() != DType::Int64) ctx.fail("sizes must be an int64 tensor");
      if (static_cast<size_t>(s.numel()) != num_axes)
        ctx.fail("sizes has {} values, expected {}", s.numel(), num_axes);
      std::vector<int64_t> sizes = read_ints(ctx, 3);
      for (size_t i = 0; i < num_axes; ++i) {
        if (sizes[i] < 0) ctx.fail("sizes[{}] = {} is negative", i, sizes[i]);
        if (sizes[i] > 0 && in_shape[static_cast<size_t>(axes[i])] == 0)
          ctx.fail("cannot resize empty axis {} to size {}", axes[i], sizes[i]);
      }
      if (policy_ == AspectPolicy::Stretch) {
        for (size_t i = 0; i < num_axes; ++i) {
          size_t a = static_cast<size_t>(axes[i]);
          out_shape[a] = sizes[i];
          length_resized[a] = static_cast<double>(sizes[i]);
          scale[a] = in_shape[a] > 0 ? static_cast<double>(sizes[i]) / in_shape[a] : 1.0;
        }
      } else {
        double common = policy_ == AspectPolicy::NotLarger ? INFINITY : 0.0;
        for (size_t i = 0; i < num_axes; ++i) {
          size_t a = static_cast<size_t>(axes[i]);
          if (in_shape[a] == 0) continue;
          double r = static_cast<double>(sizes[i]) / static_cast<double>(in_shape[a]);
          common = policy_ == AspectPolicy::NotLarger ? std::min(common, r) : std::max(common, r);
        }
        if (!std::isfinite(common) || common <= 0) common = 1.0;
        for (size_t i = 0; i < num_axes; ++i) {
          size_t a = static_cast<size_t>(axes[i]);
          scale[a] = common;
          length_resized[a] = common * static_cast<double>(in_shape[a]);
          out_shape[a] = static_cast<int64_t>(std::floor(length_resized[a] + 0.5));
        }
      }
    }

    std::vector<double> roi_start(static_cast<size_t>(rank), 0.0);
    std::vector<double> roi_end(static_cast<size_t>(rank), 1.0);
    if (transform_ == kTfCropAndResize && present(1)) {
      const ir::Tensor& roi = ctx.input(1);
      if (!ir::dtype_is_float(roi.dtype())) ctx.fail("roi must be a float tensor");
      if (static_cast<size_t>(roi.numel()) != 2 * num_axes)
        ctx.fail("roi has {} values, expected {}", roi.numel(), 2 * num_axes);
      std::vector<double> values = read_doubles(ctx, 1);
      for (size_t i = 0; i < num_axes; ++i) {
        roi_start[static_cast<size_t>(axes[i])] = values[i];
        roi_end[static_cast<size_t>(axes[i])] = values[i + num_axes];
      }
    }
    (void)ir::checked_numel(out_shape);
    if (x.dtype() == DType::Bool && mode_ != kNearest)
      ctx.fail("mode must be nearest for bool input");
    require_rank(ctx, static_cast<size_t>(rank), "X");

    data::ResizeParams p;
    p.rank = static_cast<int>(rank);
    p.mode = mode_;
    p.transform = transform_;
    p.rounding = rounding_;
    p.exclude_outside = exclude_outside_ ? 1 : 0;
    p.normalize = antialias_ || exclude_outside_ ? 1 : 0;
    p.cubic_a = cubic_a_;
    p.extrapolation_bits = bits_from_double(x.dtype(), extrapolation_);
    std::vector<int64_t> in_strides = strides_of(in_shape);
    for (size_t a = 0; a < static_cast<size_t>(rank); ++a) {
      data::ResizeAxis& ax = p.axes[a];
      ax.in_len = in_shape[a];
      ax.out_len = out_shape[a];
      ax.in_stride = in_strides[a];
      ax.resized = resized[a] ? 1 : 0;
      ax.scale = scale[a];
      ax.length_resized = length_resized[a];
      ax.roi_start = roi_start[a];
      ax.roi_end = roi_end[a];
      // The filter is stretched by 1/scale when antialiasing a downscale.
      ax.support_scale = antialias_ ? std::min(scale[a], 1.0) : 1.0;
      if (mode_ != kNearest) {
        double reach = mode_ == kLinear ? 1.0 : 2.0;
        ax.first = static_cast<int64_t>(std::floor(-reach / ax.support_scale)) + 1;
        ax.width = 2 - 2 * ax.first;
      }
    }
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    if (y.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_resize(x.raw(), y.raw(), x.dtype(), p, stream_of(ctx)));
  }

 private:
  int mode_, transform_, rounding_;
  AspectPolicy policy_;
  double cubic_a_ = -0.75;
  bool exclude_outside_ = false;
  bool antialias_ = false;
  double extrapolation_ = 0;
  std::vector<int64_t> axes_attr_;
};

}  // namespace

void register_resize_kernels(backends::KernelRegistry& r) {
  using ops::OpKind;
  const std::vector<DType> plain = plain_dtypes();
  r.add(def<ResizeKernel>(OpKind::Resize, plain, {1, 2, 3}, check_resize));
}

}  // namespace switchyard::cuda
