// CPU kernels of the conv family: Conv and ConvTranspose through oneDNN for float32 (1-3
// spatial dims), a direct loop for the other float dtypes and for shapes oneDNN declines.
#include <numeric>

#include "backends/cpu/kernels/conv_internal.h"
#include "backends/cpu/kernels/dnnl_util.h"

namespace switchyard::cpu {

namespace {

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

std::vector<int64_t> tail(const std::vector<int64_t>& v, size_t from) {
  return std::vector<int64_t>(v.begin() + static_cast<std::ptrdiff_t>(from), v.end());
}

// Row-major strides with the first two dims swapped in memory order: logical [a, b, rest...]
// stored as [b, a, rest...] (ConvTranspose weights in oneDNN's logical order).
dnnl::memory::dims swapped_strides(const std::vector<int64_t>& logical, size_t first) {
  std::vector<int64_t> physical = logical;
  std::swap(physical[first], physical[first + 1]);
  std::vector<int64_t> ps = strides_of(physical);
  std::swap(ps[first], ps[first + 1]);
  return dnnl::memory::dims(ps.begin(), ps.end());
}

}  // namespace

int64_t ConvDims::in_size() const { return product(in); }
int64_t ConvDims::out_size() const { return product(out); }
int64_t ConvDims::kernel_size() const { return product(kernel); }

std::vector<int64_t> ConvDims::out_shape() const {
  std::vector<int64_t> s = {batch, out_channels};
  s.insert(s.end(), out.begin(), out.end());
  return s;
}

ConvDims forward_conv_dims(const backends::KernelContext& ctx, const ir::Tensor& x,
                           const ir::Tensor& w, int64_t group) {
  if (x.rank() < 3)
    ctx.fail("input X has shape {}, expected rank >= 3", ir::shape_to_string(x.shape()));
  if (w.rank() != x.rank())
    ctx.fail("weight W has shape {}, expected rank {} like X {}", ir::shape_to_string(w.shape()),
             x.rank(), ir::shape_to_string(x.shape()));
  ConvDims d;
  d.batch = x.dim(0);
  d.in_channels = x.dim(1);
  d.out_channels = w.dim(0);
  d.group = group;
  if (d.out_channels % group != 0)
    ctx.fail("weight W has {} output channels, not divisible by group {}", d.out_channels, group);
  if (w.dim(1) * group != d.in_channels)
    ctx.fail("input X has {} channels, expected {} (weight W {} x group {})", d.in_channels,
             w.dim(1) * group, w.dim(1), group);
  d.in = tail(x.shape(), 2);
  ops::WindowAttrs a = ops::read_window_attrs(ctx.node(), tail(w.shape(), 2));
  ops::WindowGeometry geo = ops::window_geometry(a, d.in);
  for (size_t i = 0; i < geo.out.size(); ++i)
    if (geo.out[i] < 1)
      ctx.fail("the kernel (extent {}) does not fit spatial dim {} of size {} with its pads",
               (a.kernel[i] - 1) * a.dilations[i] + 1, i, d.in[i]);
  d.kernel = a.kernel;
  d.out = geo.out;
  d.strides = a.strides;
  d.dilations = a.dilations;
  d.pad_begin = geo.pad_begin;
  d.pad_end = geo.pad_end;
  return d;
}

std::vector<int64_t> conv_input_offsets(const ConvDims& d) {
  const size_t rank = d.in.size();
  const int64_t out_size = d.out_size(), ksize = d.kernel_size();
  std::vector<int64_t> offsets(static_cast<size_t>(out_size * ksize));
  std::vector<int64_t> in_strides = strides_of(d.in);
  std::vector<int64_t> oc(rank, 0);
  for (int64_t p = 0; p < out_size; ++p) {
    std::vector<int64_t> kc(rank, 0);
    for (int64_t k = 0; k < ksize; ++k) {
      int64_t off = 0;
      for (size_t s = 0; s < rank && off >= 0; ++s) {
        int64_t i = oc[s] * d.strides[s] - d.pad_begin[s] + kc[s] * d.dilations[s];
        off = (i < 0 || i >= d.in[s]) ? -1 : off + i * in_strides[s];
      }
      offsets[static_cast<size_t>(p * ksize + k)] = off;
      for (size_t s = rank; s-- > 0;) {
        if (++kc[s] < d.kernel[s]) break;
        kc[s] = 0;
      }
    }
    for (size_t s = rank; s-- > 0;) {
      if (++oc[s] < d.out[s]) break;
      oc[s] = 0;
    }
  }
  return offsets;
}

namespace {

// The pieces of a oneDNN convolution or deconvolution prepared for one shape signature.
struct DnnlConvPlan {
  dnnl::primitive primitive;
  dnnl::memory::desc src_md, dst_md, bias_md;   // the layouts the primitive wants
  dnnl::memory::desc user_src_md, user_dst_md;  // plain NCHW, as the graph stores them
  dnnl::reorder src_reorder, dst_reorder;       // set when the layouts differ
  dnnl::memory::desc user_weights_md;           // the weights as the graph stores them
  dnnl::memory::desc weights_md;                // the layout the primitive wants
  dnnl::memory packed_weights;                  // weights_md copy of constant weights (else empty)
};

struct ConvPlan {
  ConvDims dims;
  std::shared_ptr<DnnlConvPlan> dnnl;  // nullptr: the direct loop runs
};

// Runs a prepared oneDNN plan on x, w, b (b may be null), writing y.
void run_dnnl_plan(backends::KernelContext& ctx, const DnnlConvPlan& plan, const ir::Tensor& x,
                   const ir::Tensor& w, const ir::Tensor* b, ir::Tensor& y) {
  dnnl::memory weights;
  if (plan.packed_weights) {
    weights = plan.packed_weights;
  } else {
    dnnl::memory user = wrap_memory(w, plan.user_weights_md);
    if (plan.weights_md == plan.user_weights_md) {
      weights = user;
    } else {
      weights = dnnl::memory(plan.weights_md, dnnl_engine());
      reorder_memory(user, weights);
    }
  }
  // Activations in a blocked layout go through scratch buffers from the run's pool.
  std::shared_ptr<void> src_buf, dst_buf;
  dnnl::memory src = wrap_memory(x, plan.user_src_md), dst = wrap_memory(y, plan.user_dst_md);
  dnnl::memory conv_src = src, conv_dst = dst;
  if (plan.src_reorder) {
    src_buf = ctx.scratch(plan.src_md.get_size());
    conv_src = wrap_memory(src_buf.get(), plan.src_md);
    execute_primitive(ctx, plan.src_reorder, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, conv_src}});
  }
  if (plan.dst_reorder) {
    dst_buf = ctx.scratch(plan.dst_md.get_size());
    conv_dst = wrap_memory(dst_buf.get(), plan.dst_md);
  }
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, conv_src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, conv_dst}};
  if (b) args[DNNL_ARG_BIAS] = wrap_memory(*b, plan.bias_md);
  execute_primitive(ctx, plan.primitive, args);
  if (plan.dst_reorder)
    execute_primitive(ctx, plan.dst_reorder, {{DNNL_ARG_FROM, conv_dst}, {DNNL_ARG_TO, dst}});
}

// Finishes a oneDNN plan whose primitive descriptor is known: packs constant weights.
template <typename Primitive>
std::shared_ptr<DnnlConvPlan> finish_plan(const typename Primitive::primitive_desc& pd,
                                          const dnnl::memory::desc& user_src,
                                          const dnnl::memory::desc& user_dst,
                                          const dnnl::memory::desc& user_w, const ir::Tensor& w,
                                          bool constant_weights) {
  auto plan = std::make_shared<DnnlConvPlan>();
  plan->src_md = pd.src_desc();
  plan->dst_md = pd.dst_desc();
  plan->user_src_md = user_src;
  plan->user_dst_md = user_dst;
  if (plan->src_md != user_src)
    plan->src_reorder = dnnl::reorder(
        dnnl::reorder::primitive_desc(dnnl_engine(), user_src, dnnl_engine(), plan->src_md));
  if (plan->dst_md != user_dst)
    plan->dst_reorder = dnnl::reorder(
        dnnl::reorder::primitive_desc(dnnl_engine(), plan->dst_md, dnnl_engine(), user_dst));
  plan->bias_md = pd.bias_desc();
  plan->weights_md = pd.weights_desc();
  plan->user_weights_md = user_w;
  if (constant_weights && plan->weights_md != user_w) {
    plan->packed_weights = dnnl::memory(plan->weights_md, dnnl_engine());
    reorder_memory(wrap_memory(w, user_w), plan->packed_weights);
  }
  plan->primitive = Primitive(pd);
  return plan;
}

class ConvKernel : public backends::Kernel {
 public:
  explicit ConvKernel(const backends::KernelInit& init)
      : group_(init.node.attr_int("group", 1)), constant_weights_(input_is_constant(init.node, 1)) {
    SY_CHECK(group_ >= 1, InvalidModel, "{}: group must be >= 1, got {}", init.node.describe(),
             group_);
  }

  void run(backends::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    const ir::Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
      ctx.fail("inputs must share X's dtype {}", ir::dtype_name(x.dtype()));
    std::vector<int64_t> key = x.shape();
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    key.push_back(b ? b->numel() : -1);
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(key, [&] { return make_plan(ctx, x, w, b); });
    const ConvDims& d = plan->dims;
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), d.out_shape());
    if (y.numel() == 0) return;
    if (plan->dnnl) {
      run_dnnl_plan(ctx, *plan->dnnl, x, w, b, y);
      return;
    }
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* xp = x.data<T>();
      const T* wp = w.data<T>();
      const T* bp = b ? b->data<T>() : nullptr;
      T* yp = y.data<T>();
      int64_t out_size = d.out_size();
      direct_conv<C>(
          d, ctx.num_threads(), [&](int64_t i) { return static_cast<C>(xp[i]); },
          [&](int64_t i) { return static_cast<C>(wp[i]); },
          [&](int64_t n, int64_t m, int64_t p, C acc) {
            if (bp) acc += static_cast<C>(bp[m]);
            yp[(n * d.out_channels + m) * out_size + p] = convert<T>(acc);
          });
    });
  }

 private:
  std::shared_ptr<const ConvPlan> make_plan(const backends::KernelContext& ctx, const ir::Tensor& x,
                                            const ir::Tensor& w, const ir::Tensor* b) const {
    auto plan = std::make_shared<ConvPlan>();
    plan->dims = forward_conv_dims(ctx, x, w, group_);
    const ConvDims& d = plan->dims;
    if (b && b->shape() != std::vector<int64_t>{d.out_channels})
      ctx.fail("bias B has shape {}, expected [{}]", ir::shape_to_string(b->shape()),
               d.out_channels);
    size_t spatial = d.in.size();
    if (x.dtype() != DType::Float32 || spatial > 3 || x.numel() == 0 || product(d.out_shape()) == 0)
      return plan;
    using dt = dnnl::memory::data_type;
    std::vector<int64_t> wdims = w.shape();
    if (group_ > 1) {
      wdims[0] = group_;
      wdims.insert(wdims.begin() + 1, d.out_channels / group_);
    }
    dnnl::memory::dims strides(d.strides.begin(), d.strides.end());
    dnnl::memory::dims dil, pl(d.pad_begin.begin(), d.pad_begin.end()),
        pr(d.pad_end.begin(), d.pad_end.end());
    for (int64_t v : d.dilations) dil.push_back(v - 1);
    try {
      dnnl::memory::desc src = plain_desc(x.shape(), dt::f32);
      dnnl::memory::desc dst = plain_desc(d.out_shape(), dt::f32);
      // Spatial kernels run markedly faster (reorders included) on oneDNN's blocked
      // activation layouts; 1x1 kernels are plain GEMMs on NCHW and stay there.
      bool blocked = d.kernel_size() > 1;
      auto any_of = [](const dnnl::memory::desc& md) {
        return dnnl::memory::desc(md.dims(), md.data_type(), dnnl::memory::format_tag::any);
      };
      dnnl::memory::desc wany(dnnl_dims(wdims), dt::f32, dnnl::memory::format_tag::any);
      dnnl::memory::desc bias = b ? plain_desc({d.out_channels}, dt::f32) : dnnl::memory::desc();
      dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                           dnnl::algorithm::convolution_direct,
                                           blocked ? any_of(src) : src, wany, bias,
                                           blocked ? any_of(dst) : dst, strides, dil, pl, pr);
      dnnl::convolution_forward::primitive_desc pd(desc, dnnl_engine());
      plan->dnnl = finish_plan<dnnl::convolution_forward>(pd, src, dst, plain_desc(wdims, dt::f32),
                                                          w, constant_weights_);
    } catch (const dnnl::error&) {
      plan->dnnl = nullptr;  // oneDNN declines this shape: the direct loop covers it
    }
    return plan;
  }

  int64_t group_;
  bool constant_weights_;
  PlanCache<ConvPlan> cache_;
};

// Concrete dims of one ConvTranspose call; pads may be negative at the end (output_shape larger
// than the full result), where the extra outputs get only the bias.
struct DeconvDims {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  std::vector<int64_t> in, kernel, out, strides, dilations, pad_begin, pad_end;
  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> s = {batch, out_channels};
    s.insert(s.end(), out.begin(), out.end());
    return s;
  }
};

struct DeconvPlan {
  DeconvDims dims;
  std::shared_ptr<DnnlConvPlan> dnnl;
};

class ConvTransposeKernel : public backends::Kernel {
 public:
  explicit ConvTransposeKernel(const backends::KernelInit& init)
      : group_(init.node.attr_int("group", 1)),
        output_padding_(init.node.attr_ints("output_padding", {})),
        output_shape_(init.node.attr_ints("output_shape", {})),
        constant_weights_(input_is_constant(init.node, 1)) {
    SY_CHECK(group_ >= 1, InvalidModel, "{}: group must be >= 1, got {}", init.node.describe(),
             group_);
  }

  void run(backends::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    const ir::Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
      ctx.fail("inputs must share X's dtype {}", ir::dtype_name(x.dtype()));
    std::vector<int64_t> key = x.shape();
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    key.push_back(b ? b->numel() : -1);
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(key, [&] { return make_plan(ctx, x, w, b); });
    const DeconvDims& d = plan->dims;
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), d.out_shape());
    if (y.numel() == 0) return;
    if (plan->dnnl) {
      run_dnnl_plan(ctx, *plan->dnnl, x, w, b, y);
      return;
    }
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      direct_deconv<T>(ctx, d, x.data<T>(), w.data<T>(), b ? b->data<T>() : nullptr, y.data<T>());
    });
  }

 private:
  template <typename T>
  static void direct_deconv(const backends::KernelContext& ctx, const DeconvDims& d, const T* xp,
                            const T* wp, const T* bp, T* yp) {
    using C = compute_t<T>;
    const size_t rank = d.in.size();
    const int64_t in_size = product(d.in), out_size = product(d.out);
    const int64_t ksize = product(d.kernel);
    const int64_t cg = d.in_channels / d.group, mg = d.out_channels / d.group;
    // For each output position and kernel position: the input offset it gathers, or -1.
    std::vector<int64_t> offsets(static_cast<size_t>(out_size * ksize));
    std::vector<int64_t> in_strides = strides_of(d.in);
    std::vector<int64_t> oc(rank, 0);
    for (int64_t p = 0; p < out_size; ++p) {
      std::vector<int64_t> kc(rank, 0);
      for (int64_t k = 0; k < ksize; ++k) {
        int64_t off = 0;
        for (size_t s = 0; s < rank && off >= 0; ++s) {
          int64_t v = oc[s] + d.pad_begin[s] - kc[s] * d.dilations[s];
          if (v < 0 || v % d.strides[s] != 0 || v / d.strides[s] >= d.in[s]) {
            off = -1;
          } else {
            off += v / d.strides[s] * in_strides[s];
          }
        }
        offsets[static_cast<size_t>(p * ksize + k)] = off;
        for (size_t s = rank; s-- > 0;) {
          if (++kc[s] < d.kernel[s]) break;
          kc[s] = 0;
        }
      }
      for (size_t s = rank; s-- > 0;) {
        if (++oc[s] < d.out[s]) break;
        oc[s] = 0;
      }
    }
    int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * cg * ksize));
    parallel_for(d.batch * d.out_channels, grain, ctx.num_threads(), [&](int64_t lo, int64_t hi) {
      for (int64_t nm = lo; nm < hi; ++nm) {
        int64_t n = nm / d.out_channels, m = nm % d.out_channels;
        int64_t g = m / mg, mo = m % mg;
        C bias = bp ? static_cast<C>(bp[m]) : C(0);
        for (int64_t p = 0; p < out_size; ++p) {
          const int64_t* off = offsets.data() + p * ksize;
          C acc = bias;
          for (int64_t c = 0; c < cg; ++c) {
            int64_t ci = g * cg + c;
            const T* xc = xp + (n * d.in_channels + ci) * in_size;
            const T* wc = wp + (ci * mg + mo) * ksize;
            for (int64_t k = 0; k < ksize; ++k)
              if (off[k] >= 0) acc += static_cast<C>(xc[off[k]]) * static_cast<C>(wc[k]);
          }
          yp[nm * out_size + p] = convert<T>(acc);
        }
      }
    });
  }

  std::shared_ptr<const DeconvPlan> make_plan(const backends::KernelContext& ctx,
                                              const ir::Tensor& x, const ir::Tensor& w,
                                              const ir::Tensor* b) const {
    auto plan = std::make_shared<DeconvPlan>();
    DeconvDims& d = plan->dims;
    if (x.rank() < 3)
      ctx.fail("input X has shape {}, expected rank >= 3", ir::shape_to_string(x.shape()));
    if (w.rank() != x.rank())
      ctx.fail("weight W has shape {}, expected rank {} like X", ir::shape_to_string(w.shape()),
               x.rank());
    size_t n = static_cast<size_t>(x.rank() - 2);
    d.batch = x.dim(0);
    d.in_channels = x.dim(1);
    d.group = group_;
    if (w.dim(0) != d.in_channels)
      ctx.fail("weight W has {} input channels, expected {} like X", w.dim(0), d.in_channels);
    if (d.in_channels % group_ != 0)
      ctx.fail("input X has {} channels, not divisible by group {}", d.in_channels, group_);
    d.out_channels = w.dim(1) * group_;
    d.in = tail(x.shape(), 2);
    ops::WindowAttrs a = ops::read_window_attrs(ctx.node(), tail(w.shape(), 2));
    d.kernel = a.kernel;
    d.strides = a.strides;
    d.dilations = a.dilations;
    std::vector<int64_t> op =
        output_padding_.empty() ? std::vector<int64_t>(n, 0) : output_padding_;
    if (op.size() != n) ctx.fail("output_padding has {} values, expected {}", op.size(), n);
    if (!output_shape_.empty() && output_shape_.size() != n && output_shape_.size() != n + 2)
      ctx.fail("output_shape has {} values, expected {}", output_shape_.size(), n);
    bool same = a.auto_pad == ops::AutoPad::SameUpper || a.auto_pad == ops::AutoPad::SameLower;
    for (size_t i = 0; i < n; ++i) {
      int64_t full = a.strides[i] * (d.in[i] - 1) + op[i] + (a.kernel[i] - 1) * a.dilations[i] + 1;
      int64_t out;
      int64_t pb, pe;
      if (!output_shape_.empty() || same) {
        out = !output_shape_.empty() ? output_shape_[output_shape_.size() - n + i]
                                     : d.in[i] * a.strides[i];
        int64_t total = full - out;
        if (total < 0) {
          pb = 0;
        } else if (a.auto_pad == ops::AutoPad::SameLower) {
          pb = total - total / 2;
        } else {
          pb = total / 2;
        }
        pe = total - pb;
      } else {
        pb = a.auto_pad == ops::AutoPad::Valid ? 0 : a.pads[i];
        pe = a.auto_pad == ops::AutoPad::Valid ? 0 : a.pads[i + n];
        out = full - pb - pe;
      }
      if (out < 1) ctx.fail("output spatial dim {} would be {}", i, out);
      d.out.push_back(out);
      d.pad_begin.push_back(pb);
      // oneDNN's end padding excludes output_padding (it only grows the output).
      d.pad_end.push_back(pe - op[i]);
    }
    if (b && b->shape() != std::vector<int64_t>{d.out_channels})
      ctx.fail("bias B has shape {}, expected [{}]", ir::shape_to_string(b->shape()),
               d.out_channels);
    if (x.dtype() != DType::Float32 || n > 3 || x.numel() == 0 || product(d.out_shape()) == 0)
      return plan;
    for (size_t i = 0; i < n; ++i)
      if (d.pad_end[i] < 0 || d.pad_begin[i] < 0) return plan;
    using dt = dnnl::memory::data_type;
    // oneDNN's logical weights are [G, OC/G, IC/G, k...]; ONNX stores [IC, OC/G, k...].
    std::vector<int64_t> wdims = w.shape();
    dnnl::memory::dims user_strides;
    if (group_ > 1) {
      wdims = {group_, w.dim(1), d.in_channels / group_};
      for (size_t i = 2; i < w.shape().size(); ++i) wdims.push_back(w.dim(static_cast<int64_t>(i)));
      user_strides = swapped_strides(wdims, 1);
    } else {
      std::swap(wdims[0], wdims[1]);
      user_strides = swapped_strides(wdims, 0);
    }
    dnnl::memory::dims strides(d.strides.begin(), d.strides.end());
    dnnl::memory::dims dil, pl(d.pad_begin.begin(), d.pad_begin.end()),
        pr(d.pad_end.begin(), d.pad_end.end());
    for (int64_t v : d.dilations) dil.push_back(v - 1);
    try {
      dnnl::memory::desc src = plain_desc(x.shape(), dt::f32);
      dnnl::memory::desc dst = plain_desc(d.out_shape(), dt::f32);
      dnnl::memory::desc wany(dnnl_dims(wdims), dt::f32, dnnl::memory::format_tag::any);
      dnnl::memory::desc bias = b ? plain_desc({d.out_channels}, dt::f32) : dnnl::memory::desc();
      dnnl::deconvolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                             dnnl::algorithm::deconvolution_direct, src, wany, bias,
                                             dst, strides, dil, pl, pr);
      dnnl::deconvolution_forward::primitive_desc pd(desc, dnnl_engine());
      dnnl::memory::desc user_w(dnnl_dims(wdims), dt::f32, user_strides);
      plan->dnnl =
          finish_plan<dnnl::deconvolution_forward>(pd, src, dst, user_w, w, constant_weights_);
    } catch (const dnnl::error&) {
      plan->dnnl = nullptr;  // oneDNN declines this shape: the direct loop covers it
    }
    return plan;
  }

  int64_t group_;
  std::vector<int64_t> output_padding_;
  std::vector<int64_t> output_shape_;
  bool constant_weights_;
  PlanCache<DeconvPlan> cache_;
};

}  // namespace

void register_conv_kernels(backends::KernelRegistry& r) {
  r.add<ConvKernel>(ops::OpKind::Conv, dtypes_of(FloatTypes{}));
  r.add<ConvTransposeKernel>(ops::OpKind::ConvTranspose, dtypes_of(FloatTypes{}));
  register_conv_quant_kernels(r);
}

}  // namespace switchyard::cpu
