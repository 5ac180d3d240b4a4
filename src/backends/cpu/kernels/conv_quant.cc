// Quantized convolutions: ConvInteger (int32 result) and QLinearConv (requantized result), as
// direct loops over zero-point-shifted int32 values.
#include <limits>

#include "backends/cpu/kernels/conv_internal.h"

namespace switchyard::cpu {

namespace {

using QuantTypes = TypeList<uint8_t, int8_t>;

// x - zero_point as int32, for a scalar zero point (a 1-element tensor counts as one).
std::vector<int32_t> shifted_input(const backends::KernelContext& ctx, const ir::Tensor& x,
                                   const ir::Tensor* zero_point, const char* what) {
  int32_t zp = 0;
  if (zero_point) {
    if (zero_point->numel() != 1 || zero_point->rank() > 1)
      ctx.fail("{} has shape {}, expected a scalar", what,
               ir::shape_to_string(zero_point->shape()));
    if (zero_point->dtype() != x.dtype())
      ctx.fail("{} has dtype {}, expected {}", what, ir::dtype_name(zero_point->dtype()),
               ir::dtype_name(x.dtype()));
    zp = static_cast<int32_t>(zero_point->scalar_as_int(0));
  }
  std::vector<int32_t> out(static_cast<size_t>(x.numel()));
  dispatch(QuantTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) out[static_cast<size_t>(i)] = int32_t{p[i]} - zp;
  });
  return out;
}

// w - zero_point[m] as int32 for weights [M, ...]; the zero point is a scalar or has M values.
std::vector<int32_t> shifted_weights(const backends::KernelContext& ctx, const ir::Tensor& w,
                                     const ir::Tensor* zero_point, const char* what) {
  int64_t m_count = w.dim(0);
  int64_t per = m_count == 0 ? 0 : w.numel() / m_count;
  std::vector<int32_t> zps(static_cast<size_t>(m_count), 0);
  if (zero_point) {
    if (zero_point->dtype() != w.dtype())
      ctx.fail("{} has dtype {}, expected {}", what, ir::dtype_name(zero_point->dtype()),
               ir::dtype_name(w.dtype()));
    bool scalar = zero_point->numel() == 1 && zero_point->rank() <= 1;
    if (!scalar && zero_point->shape() != std::vector<int64_t>{m_count})
      ctx.fail("{} has shape {}, expected a scalar or [{}]", what,
               ir::shape_to_string(zero_point->shape()), m_count);
    for (int64_t m = 0; m < m_count; ++m)
      zps[static_cast<size_t>(m)] = static_cast<int32_t>(zero_point->scalar_as_int(scalar ? 0 : m));
  }
  std::vector<int32_t> out(static_cast<size_t>(w.numel()));
  dispatch(QuantTypes{}, w.dtype(), ctx.node(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = w.data<T>();
    for (int64_t i = 0; i < w.numel(); ++i)
      out[static_cast<size_t>(i)] = int32_t{p[i]} - zps[static_cast<size_t>(i / per)];
  });
  return out;
}

// A float scale: scalar, or (when `count` > 0) one per output channel. Returns `count` values
// (or one).
std::vector<float> read_scales(const backends::KernelContext& ctx, const ir::Tensor& s,
                               const char* what, int64_t count) {
  if (s.dtype() != DType::Float32)
    ctx.fail("{} has dtype {}, expected float", what, ir::dtype_name(s.dtype()));
  bool scalar = s.numel() == 1 && s.rank() <= 1;
  if (!scalar && (count == 0 || s.shape() != std::vector<int64_t>{count}))
    ctx.fail("{} has shape {}, expected a scalar{}", what, ir::shape_to_string(s.shape()),
             count ? fmt::format(" or [{}]", count) : std::string());
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(count, 1)));
  for (size_t i = 0; i < out.size(); ++i) out[i] = s.data<float>()[scalar ? 0 : i];
  return out;
}

// direct_conv over zero-point-shifted int32 inputs xs and weights ws.
template <typename Finish>
void shifted_conv(const ConvDims& d, int threads, const std::vector<int32_t>& xs,
                  const std::vector<int32_t>& ws, Finish finish) {
  direct_conv<int32_t>(
      d, threads, [&](int64_t i) { return xs[static_cast<size_t>(i)]; },
      [&](int64_t i) { return ws[static_cast<size_t>(i)]; }, finish);
}

class ConvIntegerKernel : public backends::Kernel {
 public:
  explicit ConvIntegerKernel(const backends::KernelInit& init) : group_(read_group(init.node)) {}

  void run(backends::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    ConvDims d = forward_conv_dims(ctx, x, w, group_);
    ir::Tensor& y = ctx.allocate_output(0, DType::Int32, d.out_shape());
    if (y.numel() == 0) return;
    std::vector<int32_t> xs =
        shifted_input(ctx, x, ctx.has_input(2) ? &ctx.input(2) : nullptr, "x_zero_point");
    std::vector<int32_t> ws =
        shifted_weights(ctx, w, ctx.has_input(3) ? &ctx.input(3) : nullptr, "w_zero_point");
    int32_t* yp = y.data<int32_t>();
    int64_t out_size = d.out_size();
    shifted_conv(d, ctx.num_threads(), xs, ws, [&](int64_t n, int64_t m, int64_t p, int32_t acc) {
      yp[(n * d.out_channels + m) * out_size + p] = acc;
    });
  }

 private:
  int64_t group_;
};

class QLinearConvKernel : public backends::Kernel {
 public:
  explicit QLinearConvKernel(const backends::KernelInit& init) : group_(read_group(init.node)) {}

  void run(backends::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(3);
    const ir::Tensor& y_zp = ctx.input(7);
    ConvDims d = forward_conv_dims(ctx, x, w, group_);
    float x_scale = read_scales(ctx, ctx.input(1), "x_scale", 0)[0];
    std::vector<float> w_scale = read_scales(ctx, ctx.input(4), "w_scale", d.out_channels);
    float y_scale = read_scales(ctx, ctx.input(6), "y_scale", 0)[0];
    if (y_zp.numel() != 1 || y_zp.rank() > 1)
      ctx.fail("y_zero_point has shape {}, expected a scalar", ir::shape_to_string(y_zp.shape()));
    const ir::Tensor* bias = ctx.has_input(8) ? &ctx.input(8) : nullptr;
    if (bias &&
        (bias->dtype() != DType::Int32 || bias->shape() != std::vector<int64_t>{d.out_channels}))
      ctx.fail("bias B must be int32 of shape [{}], got {} {}", d.out_channels,
               ir::dtype_name(bias->dtype()), ir::shape_to_string(bias->shape()));
    ir::Tensor& y = ctx.allocate_output(0, y_zp.dtype(), d.out_shape());
    if (y.numel() == 0) return;
    std::vector<int32_t> xs = shifted_input(ctx, x, &ctx.input(2), "x_zero_point");
    std::vector<int32_t> ws = shifted_weights(ctx, w, &ctx.input(5), "w_zero_point");
    std::vector<float> multiplier(static_cast<size_t>(d.out_channels));
    for (int64_t m = 0; m < d.out_channels; ++m)
      multiplier[static_cast<size_t>(m)] =
          x_scale * w_scale[w_scale.size() == 1 ? 0 : static_cast<size_t>(m)] / y_scale;
    const int32_t* bp = bias ? bias->data<int32_t>() : nullptr;
    int64_t out_size = d.out_size();
    float zp = static_cast<float>(y_zp.scalar_as_int(0));
    dispatch(QuantTypes{}, y_zp.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      T* yp = y.data<T>();
      const float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
      shifted_conv(d, ctx.num_threads(), xs, ws, [&](int64_t n, int64_t m, int64_t p, int32_t acc) {
        if (bp) acc += bp[m];
        float v = std::nearbyint(static_cast<float>(acc) * multiplier[static_cast<size_t>(m)]) + zp;
        yp[(n * d.out_channels + m) * out_size + p] = static_cast<T>(std::clamp(v, lo, hi));
      });
    });
  }

 private:
  int64_t group_;
};

}  // namespace

void register_conv_quant_kernels(backends::KernelRegistry& r) {
  r.add<ConvIntegerKernel>(ops::OpKind::ConvInteger, dtypes_of(QuantTypes{}));
  r.add<QLinearConvKernel>(ops::OpKind::QLinearConv, dtypes_of(QuantTypes{}));
}

}  // namespace switchyard::cpu
