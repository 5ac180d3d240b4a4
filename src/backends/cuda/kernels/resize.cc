// The CUDA Resize kernel (opset 19: nearest / linear / cubic, every coordinate transform, axes,
// keep_aspect_ratio_policy, antialias); scales, sizes and roi are host inputs. The output
// geometry is ops/resize_geometry (shared with the CPU kernel); the per-element coordinate math
// mirrors the CPU kernel's (src/backends/cpu/kernels/image_resize.cc). Device code: resize.cu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/data_host.h"
#include "backends/cuda/kernels/data_impl.h"
#include "ops/resize_geometry.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using namespace movement;  // NOLINT: the family's shared helpers
// ---- Resize ------------------------------------------------------------------------------

constexpr int kNearest = static_cast<int>(ops::ResizeMode::Nearest);
constexpr int kLinear = static_cast<int>(ops::ResizeMode::Linear);

Support check_resize(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (x && x->type().dtype == DType::Bool && node.attr_string("mode", "nearest") != "nearest")
    return Support::no("the CUDA Resize kernel interpolates bool only in mode nearest");
  return rank_fits(node, 0);
}

class ResizeKernel final : public runtime::Kernel {
 public:
  explicit ResizeKernel(const KernelInit& init) : attrs_(ops::resize_attributes(init.node)) {
    // data::ResizeParams numbers modes, transforms and roundings as ops:: does.
    mode_ = static_cast<int>(attrs_.mode);
    transform_ = static_cast<int>(attrs_.transform);
    rounding_ = static_cast<int>(attrs_.rounding);
    cubic_a_ = attrs_.cubic_a;
    exclude_outside_ = attrs_.exclude_outside;
    antialias_ = attrs_.antialias;
    extrapolation_ = attrs_.extrapolation;
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    // scales, sizes and roi are host inputs: read where they are.
    std::optional<ir::Tensor> host[4];
    auto input = [&](size_t i) -> const ir::Tensor* {
      if (!ctx.has_input(i)) return nullptr;
      host[i] = host_copy(ctx, i);
      return &*host[i];
    };
    const ops::ResizeGeometry g =
        ops::resize_geometry(ctx.node(), attrs_, x.shape(), input(1), input(2), input(3));
    const int64_t rank = x.rank();
    const std::vector<int64_t>& in_shape = x.shape();
    const std::vector<int64_t>& out_shape = g.out_shape;
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
      ax.resized = g.resized[a] ? 1 : 0;
      ax.scale = g.scale[a];
      ax.length_resized = g.length_resized[a];
      ax.roi_start = g.roi_start[a];
      ax.roi_end = g.roi_end[a];
      // The filter is stretched by 1/scale when antialiasing a downscale.
      ax.support_scale = antialias_ ? std::min(g.scale[a], 1.0) : 1.0;
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
  ops::ResizeAttributes attrs_;
  int mode_, transform_, rounding_;
  double cubic_a_ = -0.75;
  bool exclude_outside_ = false;
  bool antialias_ = false;
  double extrapolation_ = 0;
};

}  // namespace

void register_resize_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  const std::vector<DType> plain = plain_dtypes();
  r.add(def<ResizeKernel>(OpKind::Resize, plain, {1, 2, 3}, check_resize));
}

}  // namespace switchyard::cuda
