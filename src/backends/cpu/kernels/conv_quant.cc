// Quantized convolutions: ConvInteger (int32 result) and QLinearConv (requantized result), as
// direct loops over zero-point-shifted int32 values.
#include <cstdlib>
#include <limits>

#include "backends/cpu/kernels/dnnl_util.h"
#include "ir/checked_math.h"

#include "backends/cpu/kernels/conv_internal.h"

namespace switchyard::cpu {

namespace {

using QuantTypes = TypeList<uint8_t, int8_t>;

// x - zero_point as int32, for a scalar zero point (a 1-element tensor counts as one).
std::vector<int32_t> shifted_input(const runtime::KernelContext& ctx, const ir::Tensor& x,
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
std::vector<int32_t> shifted_weights(const runtime::KernelContext& ctx, const ir::Tensor& w,
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
std::vector<float> read_scales(const runtime::KernelContext& ctx, const ir::Tensor& s,
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

// ConvInteger's fast path: float32 oneDNN convolutions that are exact. x - x_zero_point and
// w - w_zero_point are integers of magnitude at most 255, so every product is an integer below
// 2^16 and every partial sum of a convolution whose terms add up (in magnitude) to less than
// 2^24 is exact in float32, in whatever order oneDNN adds them. The input channels are split
// into chunks small enough for that bound (from the largest |w - w_zero_point| of the constant
// weights and 255 for the input); each chunk is one float convolution, and the chunks' integer
// results add up in int32. Far faster than the int32 loop (oneDNN's own int8 kernels are not
// exact on machines without VNNI: vpmaddubsw saturates).
struct ExactConvPlan {
  ConvDims dims;
  struct Chunk {
    int64_t c0 = 0, channels = 0;  // input channels [c0, c0 + channels)
    std::shared_ptr<const F32Conv> conv;
  };
  std::vector<Chunk> chunks;  // empty: the int32 loop runs
};

class ConvIntegerKernel : public runtime::Kernel {
 public:
  explicit ConvIntegerKernel(const runtime::KernelInit& init)
      : group_(read_group(init.node)),
        constant_weights_(input_is_constant(init.node, 1) &&
                          (init.node.num_inputs() < 4 || !init.node.input(3) ||
                           input_is_constant(init.node, 3))) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    const ir::Tensor* x_zp = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const ir::Tensor* w_zp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    std::vector<int64_t> key = x.shape();
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(key, [&] { return make_plan(ctx, x, w, w_zp); });
    const ConvDims& d = plan->dims;
    ir::Tensor& y = ctx.allocate_output(0, DType::Int32, d.out_shape());
    if (y.numel() == 0) return;
    std::vector<int32_t> xs = shifted_input(ctx, x, x_zp, "x_zero_point");
    int32_t* yp = y.data<int32_t>();
    if (plan->chunks.empty()) {
      std::vector<int32_t> ws = shifted_weights(ctx, w, w_zp, "w_zero_point");
      int64_t out_size = d.out_size();
      shifted_conv(d, ctx.num_threads(), xs, ws, [&](int64_t n, int64_t m, int64_t p, int32_t acc) {
        yp[(n * d.out_channels + m) * out_size + p] = acc;
      });
      return;
    }
    const int64_t in_size = d.in_size(), out_numel = y.numel();
    for (size_t ci = 0; ci < plan->chunks.size(); ++ci) {
      const ExactConvPlan::Chunk& chunk = plan->chunks[ci];
      // A grouped convolution is one chunk over every input channel.
      const int64_t channels = d.group > 1 ? d.in_channels : chunk.channels;
      std::vector<int64_t> x_shape = {d.batch, channels};
      x_shape.insert(x_shape.end(), d.in.begin(), d.in.end());
      ir::Tensor xf = scratch_tensor(ctx, DType::Float32, x_shape);
      float* xp = xf.data<float>();
      parallel_for(d.batch * channels, 16, ctx.num_threads(), [&](int64_t b, int64_t e) {
        for (int64_t nc = b; nc < e; ++nc) {
          int64_t n = nc / channels, c = nc % channels;
          const int32_t* src = xs.data() + (n * d.in_channels + chunk.c0 + c) * in_size;
          float* dst = xp + nc * in_size;
          for (int64_t i = 0; i < in_size; ++i) dst[i] = static_cast<float>(src[i]);
        }
      });
      ir::Tensor yf = scratch_tensor(ctx, DType::Float32, y.shape());
      chunk.conv->run(ctx, xf, yf);
      const float* fp = yf.data<float>();
      parallel_for(out_numel, 65536, ctx.num_threads(), [&](int64_t b, int64_t e) {
        if (ci == 0) {
          for (int64_t i = b; i < e; ++i) yp[i] = static_cast<int32_t>(fp[i]);
        } else {
          for (int64_t i = b; i < e; ++i) yp[i] += static_cast<int32_t>(fp[i]);
        }
      });
    }
  }

 private:
  std::shared_ptr<const ExactConvPlan> make_plan(const runtime::KernelContext& ctx,
                                                 const ir::Tensor& x, const ir::Tensor& w,
                                                 const ir::Tensor* w_zp) const {
    auto plan = std::make_shared<ExactConvPlan>();
    plan->dims = forward_conv_dims(ctx, x, w, group_);
    const ConvDims& d = plan->dims;
    if (!constant_weights_ || d.in.size() > 3 || x.numel() == 0 || w.numel() == 0) return plan;
    std::vector<int32_t> ws = shifted_weights(ctx, w, w_zp, "w_zero_point");
    int32_t max_w = 1;
    for (int32_t v : ws) max_w = std::max(max_w, std::abs(v));
    // Terms per output (per chunk) whose magnitudes sum below 2^24, at most.
    const int64_t max_terms = ((int64_t{1} << 24) - 1) / (int64_t{255} * max_w);
    const int64_t ksize = d.kernel_size(), cg = d.in_channels / d.group;
    if (ksize > max_terms) return plan;
    int64_t per_chunk = std::min(cg, max_terms / ksize);
    // Grouped convolutions run as one chunk (their groups already keep the sums short).
    if (d.group > 1 && per_chunk < cg) return plan;
    const int64_t m_count = d.out_channels;
    for (int64_t c0 = 0; c0 < cg; c0 += per_chunk) {
      ExactConvPlan::Chunk chunk;
      chunk.c0 = c0;
      chunk.channels = std::min(per_chunk, cg - c0);
      std::vector<int64_t> wshape = w.shape();
      wshape[1] = chunk.channels;
      ir::Tensor wf(DType::Float32, wshape);
      float* wp = wf.data<float>();
      for (int64_t m = 0; m < m_count; ++m)
        for (int64_t c = 0; c < chunk.channels; ++c)
          for (int64_t k = 0; k < ksize; ++k)
            wp[(m * chunk.channels + c) * ksize + k] =
                static_cast<float>(ws[static_cast<size_t>((m * cg + c0 + c) * ksize + k)]);
      ConvDims cd = d;
      cd.in_channels = d.group > 1 ? d.in_channels : chunk.channels;
      chunk.conv = F32Conv::make(cd, std::move(wf));
      if (!chunk.conv) {
        plan->chunks.clear();
        return plan;
      }
      plan->chunks.push_back(std::move(chunk));
    }
    return plan;
  }

  int64_t group_;
  bool constant_weights_;  // W (and its zero point): the float weights are made once per shape
  PlanCache<ExactConvPlan> cache_;
};

class QLinearConvKernel : public runtime::Kernel {
 public:
  explicit QLinearConvKernel(const runtime::KernelInit& init) : group_(read_group(init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
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

void register_conv_quant_kernels(runtime::KernelRegistry& r) {
  r.add<ConvIntegerKernel>(ops::OpKind::ConvInteger, dtypes_of(QuantTypes{}));
  r.add<QLinearConvKernel>(ops::OpKind::QLinearConv, dtypes_of(QuantTypes{}));
}

}  // namespace switchyard::cpu
