// CPU kernels of the quantize family: QuantizeLinear / DequantizeLinear (per-tensor and
// per-axis) and DynamicQuantizeLinear. Scales and zero points are read into small float / int64
// tables first, so the typed loops depend only on the input and output element types.
#include <cstring>
#include <limits>

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {
namespace {

/// The per-channel layout: x viewed as [outer, channels, inner] with one scale per channel.
struct QuantParams {
  int64_t outer = 1;
  int64_t channels = 1;
  int64_t inner = 1;
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
};

QuantParams read_params(const runtime::KernelContext& ctx, int64_t axis_attr) {
  const ir::Tensor& x = ctx.input(0);
  const ir::Tensor& scale = ctx.input(1);
  const ir::Tensor* zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  QuantParams p;
  p.inner = x.numel();
  if (scale.rank() > 1) ctx.fail("scale has rank {}; expected a scalar or 1-D", scale.rank());
  if (!ir::dtype_is_float(scale.dtype()))
    ctx.fail("scale has dtype {}, expected a float type", ir::dtype_name(scale.dtype()));
  if (zp && zp->shape() != scale.shape())
    ctx.fail("zero point has shape {} but scale has shape {}", ir::shape_to_string(zp->shape()),
             ir::shape_to_string(scale.shape()));
  if (scale.numel() != 1) {
    if (x.rank() == 0) ctx.fail("scale has {} elements for a rank-0 input", scale.numel());
    int64_t axis = ops::normalize_axis(ctx.node(), axis_attr, x.rank());
    if (scale.numel() != x.dim(axis))
      ctx.fail("scale has {} elements but input dim {} (axis) has {}", scale.numel(), axis,
               x.dim(axis));
    p.channels = x.dim(axis);
    p.outer = 1;
    for (int64_t d = 0; d < axis; ++d) p.outer *= x.dim(d);
    p.inner = 1;
    for (int64_t d = axis + 1; d < x.rank(); ++d) p.inner *= x.dim(d);
  }
  for (int64_t c = 0; c < scale.numel(); ++c) {
    p.scale.push_back(static_cast<float>(scale.scalar_as_double(c)));
    p.zero_point.push_back(zp ? zp->scalar_as_int(c) : 0);
  }
  if (p.scale.empty()) {  // an empty axis: nothing to compute
    p.scale.push_back(1.0f);
    p.zero_point.push_back(0);
  }
  return p;
}

/// round-half-to-even(x / scale) + zero point, saturated to O (NaN goes to O's minimum).
template <typename O>
O quantize_value(float x, float scale, float zero_point) {
  float v = std::nearbyint(x / scale) + zero_point;
  v = std::fmin(std::fmax(v, static_cast<float>(std::numeric_limits<O>::min())),
                static_cast<float>(std::numeric_limits<O>::max()));
  return static_cast<O>(v);
}

/// Calls f(in, out, c) in parallel for each of the outer * channels rows of `inner` elements of
/// src and dst, c the row's channel.
template <typename X, typename O, typename F>
void for_each_channel_row(const QuantParams& p, const X* src, O* dst, int threads, F f) {
  parallel_for(p.outer * p.channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(p.inner, 1)),
               threads, [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r)
                   f(src + r * p.inner, dst + r * p.inner, static_cast<size_t>(r % p.channels));
               });
}

using QuantTypes = TypeList<int8_t, uint8_t, int16_t, uint16_t>;

class QuantizeLinearKernel final : public runtime::Kernel {
 public:
  explicit QuantizeLinearKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", 1)),
        output_dtype_(static_cast<DType>(init.node.attr_int("output_dtype", 0))) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    DType out_dtype = ctx.has_input(2)                    ? ctx.input(2).dtype()
                      : output_dtype_ != DType::Undefined ? output_dtype_
                                                          : DType::UInt8;
    QuantParams p = read_params(ctx, axis_);
    ir::Tensor& y = ctx.allocate_output(0, out_dtype, x.shape());
    dispatch(TypeList<float, Float16, BFloat16, int32_t>{}, x.dtype(), ctx.node(), [&](auto xt) {
      dispatch(QuantTypes{}, out_dtype, ctx.node(), [&](auto ot) {
        using X = decltype(xt);
        using O = decltype(ot);
        for_each_channel_row(p, x.data<X>(), y.data<O>(), ctx.num_threads(),
                             [&](const X* in, O* out, size_t c) {
                               const float s = p.scale[c];
                               const float z = static_cast<float>(p.zero_point[c]);
                               for (int64_t i = 0; i < p.inner; ++i)
                                 out[i] = quantize_value<O>(static_cast<float>(in[i]), s, z);
                             });
      });
    });
  }

 private:
  int64_t axis_;
  DType output_dtype_;
};

class DequantizeLinearKernel final : public runtime::Kernel {
 public:
  explicit DequantizeLinearKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", 1)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (ctx.has_input(2) && ctx.input(2).dtype() != x.dtype())
      ctx.fail("zero point has dtype {} but the input has {}", ir::dtype_name(ctx.input(2).dtype()),
               ir::dtype_name(x.dtype()));
    QuantParams p = read_params(ctx, axis_);
    ir::Tensor& y = ctx.allocate_output(0, ctx.input(1).dtype(), x.shape());
    dispatch(
        TypeList<int8_t, uint8_t, int16_t, uint16_t, int32_t>{}, x.dtype(), ctx.node(),
        [&](auto xt) {
          dispatch(TypeList<float, Float16, BFloat16>{}, y.dtype(), ctx.node(), [&](auto ot) {
            using X = decltype(xt);
            using O = decltype(ot);
            for_each_channel_row(
                p, x.data<X>(), y.data<O>(), ctx.num_threads(), [&](const X* in, O* out, size_t c) {
                  const float s = p.scale[c];
                  const int64_t z = p.zero_point[c];
                  for (int64_t i = 0; i < p.inner; ++i)
                    out[i] = convert<O>(static_cast<float>(static_cast<int64_t>(in[i]) - z) * s);
                });
          });
        });
  }

 private:
  int64_t axis_;
};

/// uint8 quantization with the range [min(0, min x), max(0, max x)] mapped onto [0, 255].
class DynamicQuantizeLinearKernel final : public runtime::Kernel {
 public:
  explicit DynamicQuantizeLinearKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.dtype() != DType::Float32)
      ctx.fail("input has dtype {}, expected float", ir::dtype_name(x.dtype()));
    const float* src = x.data<float>();
    const int64_t n = x.numel();
    float lo = 0.0f;
    float hi = 0.0f;
    // NaN elements take no part in the range (std::min/max keep the first operand) and
    // quantize to 0.
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, src[i]);
      hi = std::max(hi, src[i]);
    }
    const float scale = (hi - lo) / 255.0f;
    float zero_point = 0.0f;
    if (scale > 0.0f) zero_point = std::fmin(std::fmax(std::nearbyint(-lo / scale), 0.0f), 255.0f);
    ir::Tensor& y = ctx.allocate_output(0, DType::UInt8, x.shape());
    ctx.allocate_output(1, DType::Float32, {}).data<float>()[0] = scale;
    ctx.allocate_output(2, DType::UInt8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zero_point);
    uint8_t* dst = y.data<uint8_t>();
    if (scale > 0.0f) {
      parallel_for(n, 16384, ctx.num_threads(), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          dst[i] = quantize_value<uint8_t>(src[i], scale, zero_point);
      });
    } else if (n > 0) {
      std::memset(dst, 0, static_cast<size_t>(n));
    }
  }
};

runtime::Support check_not_blocked(const ir::Node& node) {
  if (node.attr_int("block_size", 0) != 0)
    return runtime::Support::no(
        fmt::format("{} with block_size (blocked quantization) has no cpu kernel", node.op_type()));
  return runtime::Support::yes();
}

}  // namespace

void register_quantize_kernels(runtime::KernelRegistry& r) {
  r.add(runtime::KernelDef{ops::OpKind::QuantizeLinear,
                           dtypes_of(TypeList<float, Float16, BFloat16, int32_t>{}), 0,
                           check_not_blocked, runtime::make_factory<QuantizeLinearKernel>()});
  r.add(runtime::KernelDef{ops::OpKind::DequantizeLinear,
                           dtypes_of(TypeList<int8_t, uint8_t, int16_t, uint16_t, int32_t>{}), 0,
                           check_not_blocked, runtime::make_factory<DequantizeLinearKernel>()});
  r.add<DynamicQuantizeLinearKernel>(ops::OpKind::DynamicQuantizeLinear, {DType::Float32});
}

}  // namespace switchyard::cpu
