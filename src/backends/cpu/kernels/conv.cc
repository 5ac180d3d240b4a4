// CPU kernels of the conv family: Conv and ConvTranspose through oneDNN for float32 (1-3
// spatial dims), a direct loop for the other float dtypes and for shapes oneDNN declines.
#include <array>
#include <cstring>
#include <numeric>
#include <optional>

#include "backends/cpu/kernels/conv_internal.h"
#include "backends/cpu/kernels/dnnl_util.h"
#include "backends/cpu/kernels/epilogue.h"
#include "backends/fusion/payload.h"
#include "ir/checked_math.h"

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

// For each output position and kernel position (row-major, out_size x kernel_size entries), the
// flat input spatial offset they read: input_index(s, o, k) gives the input index along spatial
// dim s for output index o and kernel index k, or -1 where that falls outside the input.
template <typename InputIndex>
std::vector<int64_t> window_offsets(const ConvDims& d, InputIndex input_index) {
  std::vector<int64_t> offsets(static_cast<size_t>(d.out_size() * d.kernel_size()));
  const std::vector<int64_t> in_strides = strides_of(d.in);
  for_each_window_tap(
      d.out, d.kernel,
      [&](int64_t tap, const std::vector<int64_t>& oc, const std::vector<int64_t>& kc) {
        int64_t off = 0;
        for (size_t s = 0; s < oc.size() && off >= 0; ++s) {
          int64_t i = input_index(s, oc[s], kc[s]);
          off = i < 0 ? -1 : off + i * in_strides[s];
        }
        offsets[static_cast<size_t>(tap)] = off;
      });
  return offsets;
}

}  // namespace

ConvDims forward_conv_dims(const runtime::KernelContext& ctx, const ir::Tensor& x,
                           const ir::Tensor& w, int64_t group) {
  return ops::conv_dims(ctx.node(), x.shape(), w.shape(), group);
}

std::vector<int64_t> conv_input_offsets(const ConvDims& d) {
  return window_offsets(d, [&](size_t s, int64_t o, int64_t k) -> int64_t {
    int64_t i = o * d.strides[s] - d.pad_begin[s] + k * d.dilations[s];
    return (i < 0 || i >= d.in[s]) ? -1 : i;
  });
}

// The pieces of a oneDNN convolution or deconvolution prepared for one shape signature.
struct DnnlConvPlan {
  dnnl::primitive primitive;
  dnnl::memory::desc src_md, dst_md, bias_md;   // the layouts the primitive wants
  dnnl::memory::desc user_src_md, user_dst_md;  // plain NCHW, as the graph stores them
  dnnl::reorder src_reorder, dst_reorder;       // set when the layouts differ
  dnnl::reorder residual_reorder;               // a fused residual into dst_md (with dst_reorder)
  dnnl::memory::desc user_weights_md;           // the weights as the graph stores them
  dnnl::memory::desc weights_md;                // the layout the primitive wants
  dnnl::memory packed_weights;                  // weights_md copy of constant weights (else empty)
};

namespace {

// The output must be able to exist before any oneDNN plan is sized by it (oneDNN divides by
// sizes that wrap for absurd shapes). Its work (out x kernel x in-channels) must fit int64 too.
void check_output_fits(const runtime::KernelContext& ctx, const ConvDims& d, DType dtype) {
  std::string what = ctx.node().describe() + ": output";
  int64_t numel = ir::checked_product(d.out_shape(), what);
  ir::checked_nbytes(dtype, numel);
  int64_t per_group = d.group > 0 ? d.in_channels / d.group : d.in_channels;
  ir::checked_mul(ir::checked_mul(numel, d.kernel_size(), what), std::max<int64_t>(per_group, 1),
                  what + " work");
}

// Whether a float32 convolution is one where oneDNN's Winograd algorithm beats its direct one
// (measured in bench/RESULTS.md): 2-D 3x3, stride 1, no dilation, one group, at least 64 input
// and output channels (below that the transforms cost more than the products save) and at least
// 256 output pixels over the batch (below that the product reads its weights, 16/9 as large as
// the direct algorithm's, once per few pixels and is bound by memory).
bool winograd_pays(const ConvDims& d) {
  if (d.in.size() != 2 || d.group != 1) return false;
  for (size_t s = 0; s < 2; ++s)
    if (d.kernel[s] != 3 || d.strides[s] != 1 || d.dilations[s] != 1) return false;
  return d.in_channels >= 64 && d.out_channels >= 64 && d.batch * d.out_size() >= 256;
}

// A conv-family call's dims and, where oneDNN takes it, its oneDNN plan.
struct ConvPlan {
  ConvDims dims;
  std::shared_ptr<DnnlConvPlan> dnnl;  // nullptr: the direct loop runs
  // A channels-last float32 depthwise convolution runs its own loop (conv_depthwise.cc).
  std::shared_ptr<const DepthwiseConv> depthwise;
  // The same convolution with its ReLU or Clip as a oneDNN post-op, which is exact when no output
  // can be NaN: when every input is finite and at most `input_bound` in magnitude (bounded by the
  // constant weights' largest row sum of magnitudes and bias), so that no sum can overflow.
  // nullptr: the activation always runs after the primitive.
  std::shared_ptr<DnnlConvPlan> dnnl_fused;
  float input_bound = 0;
  // The threads oneDNN's primitives were made for and run with (0: the run's): one for a
  // convolution too small to share (conv_threads).
  int threads = 0;
};

// Below about a million multiply-adds a convolution runs slower on two threads than on one
// (bench/RESULTS.md: mobilenet_v2's 7x7 and 14x14 depthwise layers, 21-33 us on one thread and
// 27-46 us on two): those run on one thread whatever the run's count.
int conv_threads(const ConvDims& d, int run_threads) {
  constexpr int64_t kSharedWorkMacs = int64_t{1} << 20;
  const int64_t per_group = d.group > 0 ? d.in_channels / d.group : d.in_channels;
  const int64_t macs = product(d.out_shape()) * d.kernel_size() * std::max<int64_t>(per_group, 1);
  return macs < kSharedWorkMacs ? 1 : run_threads;
}

// Runs a prepared oneDNN plan on x, w, b (b may be null), writing y. A fused residual z (may be
// null) is put in the destination first, for the plan's sum post-op to add to.
void run_dnnl_plan(runtime::KernelContext& ctx, const DnnlConvPlan& plan, const ir::Tensor& x,
                   const ir::Tensor& w, const ir::Tensor* b, const ir::Tensor* z, ir::Tensor& y) {
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
    if (z)
      execute_primitive(
          ctx, plan.residual_reorder,
          {{DNNL_ARG_FROM, wrap_memory(*z, plan.user_dst_md)}, {DNNL_ARG_TO, conv_dst}});
  } else if (z) {
    std::memcpy(y.raw(), z->raw(), y.nbytes());
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
                                          bool constant_weights, bool residual = false) {
  auto plan = std::make_shared<DnnlConvPlan>();
  plan->src_md = pd.src_desc();
  plan->dst_md = pd.dst_desc();
  plan->user_src_md = user_src;
  plan->user_dst_md = user_dst;
  if (plan->src_md != user_src) plan->src_reorder = make_reorder(user_src, plan->src_md);
  if (plan->dst_md != user_dst) {
    plan->dst_reorder = make_reorder(plan->dst_md, user_dst);
    if (residual) plan->residual_reorder = make_reorder(user_dst, plan->dst_md);
  }
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

// The float32 oneDNN descriptors and window of a conv-family call: plain src [N, C, in...] and
// dst, weights of `wdims` in any layout, bias (empty when absent), and oneDNN's strides,
// zero-based dilations and pads.
struct DnnlConvArgs {
  dnnl::memory::desc src, dst, weights_any, bias;
  dnnl::memory::dims strides, dilations, pad_begin, pad_end;
};

DnnlConvArgs dnnl_conv_args(const ConvDims& d, const std::vector<int64_t>& x_shape,
                            const std::vector<int64_t>& wdims, bool has_bias) {
  using dt = dnnl::memory::data_type;
  DnnlConvArgs args;
  args.src = plain_desc(x_shape, dt::f32);
  args.dst = plain_desc(d.out_shape(), dt::f32);
  args.weights_any = dnnl::memory::desc(dnnl_dims(wdims), dt::f32, dnnl::memory::format_tag::any);
  if (has_bias) args.bias = plain_desc({d.out_channels}, dt::f32);
  args.strides = dnnl_dims(d.strides);
  for (int64_t v : d.dilations) args.dilations.push_back(v - 1);
  args.pad_begin = dnnl_dims(d.pad_begin);
  args.pad_end = dnnl_dims(d.pad_end);
  return args;
}

// Conv and ConvTranspose: X, W and optional B of X's dtype; a plan per shape signature; oneDNN
// where the plan has it, else the subclass's direct loop.
class ConvFamilyKernel : public runtime::Kernel {
 public:
  explicit ConvFamilyKernel(const runtime::KernelInit& init)
      : group_(read_group(init.node)),
        constant_weights_(input_is_constant(init.node, 1)),
        epilogue_(Epilogue::of(init.node)),
        fixed_bias_(init.node.num_inputs() <= 2 ||
                    (init.node.input(2) != nullptr && input_is_constant(init.node, 2))),
        residual_(init.node.num_inputs() > 3 && init.node.input(3) != nullptr),
        nhwc_(init.node.annotation<backends::fusion::ChannelsLast>() != nullptr) {}

  void run(runtime::KernelContext& ctx) const override {
    if (nhwc_) {
      if (ctx.input(0).rank() != 4)
        ctx.fail("a channels-last input must have rank 4, got {}", ctx.input(0).rank());
      // Shapes are worked out on the logical NCHW view of X (its data stays NHWC).
      const ir::Tensor x = ctx.input(0).reshaped(permute4(ctx.input(0).shape(), kNhwcToNchw));
      run_with(ctx, x);
    } else {
      run_with(ctx, ctx.input(0));
    }
  }

 private:
  // `x` has logical NCHW dims (for a channels-last node its data is NHWC).
  void run_with(runtime::KernelContext& ctx, const ir::Tensor& x) const {
    const ir::Tensor& w = ctx.input(1);
    const ir::Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
      ctx.fail("inputs must share X's dtype {}", ir::dtype_name(x.dtype()));
    std::vector<int64_t> key = x.shape();
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    key.push_back(b ? b->numel() : -1);
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(key, [&] { return make_plan(ctx, x, w, b); });
    ir::Tensor& y = ctx.allocate_output(
        0, x.dtype(),
        nhwc_ ? permute4(plan->dims.out_shape(), kNchwToNhwc) : plan->dims.out_shape());
    const ir::Tensor* z = residual_ ? &ctx.input(3) : nullptr;
    if (z && (z->dtype() != y.dtype() || z->shape() != y.shape()))
      ctx.fail("fused residual {}{} does not match the output {}{}", ir::dtype_name(z->dtype()),
               ir::shape_to_string(z->shape()), ir::dtype_name(y.dtype()),
               ir::shape_to_string(y.shape()));
    if (y.numel() == 0) return;
    if (plan->depthwise) {
      run_depthwise_conv(*plan->depthwise, ctx, x, w, b, z, y);
      return;
    }
    std::optional<OmpThreadScope> plan_threads;
    if (plan->threads > 0) plan_threads.emplace(plan->threads);
    if (plan->dnnl_fused && bounded_input(x, plan->input_bound, ctx.num_threads())) {
      run_dnnl_plan(ctx, *plan->dnnl_fused, x, w, b, z, y);
      return;
    }
    if (plan->dnnl) {
      run_dnnl_plan(ctx, *plan->dnnl, x, w, b, z, y);  // the residual runs as a post-op
      epilogue_.finish(ctx.node(), y, ctx.num_threads());
      return;
    }
    if (nhwc_) {
      // The direct loop works on NCHW: through transposed copies.
      ir::Tensor xc =
          transposed_scratch(ctx, x.reshaped(permute4(x.shape(), kNchwToNhwc)), kNhwcToNchw);
      ir::Tensor yc = scratch_tensor(ctx, x.dtype(), plan->dims.out_shape());
      run_direct(ctx, plan->dims, xc, w, b, yc);
      ir::Tensor yt = transposed_scratch(ctx, yc, kNchwToNhwc);
      std::memcpy(y.raw(), yt.raw(), y.nbytes());
    } else {
      run_direct(ctx, plan->dims, x, w, b, y);
    }
    if (z) add_in_place(ctx.node(), y, *z, ctx.num_threads());
    epilogue_.apply(ctx.node(), y, ctx.num_threads());
  }

 protected:
  // The dims of a call (failing on bad shapes) and, where oneDNN takes it, its oneDNN plan.
  virtual std::shared_ptr<const ConvPlan> make_plan(const runtime::KernelContext& ctx,
                                                    const ir::Tensor& x, const ir::Tensor& w,
                                                    const ir::Tensor* b) const = 0;
  // The direct loop for what oneDNN does not run.
  virtual void run_direct(const runtime::KernelContext& ctx, const ConvDims& d, const ir::Tensor& x,
                          const ir::Tensor& w, const ir::Tensor* b, ir::Tensor& y) const = 0;

  // The attributes of oneDNN plans: a user scratchpad and the fused epilogue as post-ops
  // (the residual as a sum onto the destination, then the activation).
  // `nan_dropping`: ReLU and Clip as post-ops too (ConvPlan::dnnl_fused).
  dnnl::primitive_attr plan_attr(bool nan_dropping = false) const {
    dnnl::primitive_attr attr = user_scratchpad_attr();
    dnnl::post_ops ops;
    if (residual_) ops.append_sum(1.0f);
    if (nan_dropping) {
      epilogue_.append_nan_dropping(ops);
    } else {
      epilogue_.append_to(ops);
    }
    if (ops.len() > 0) attr.set_post_ops(ops);
    return attr;
  }

  // Whether a plan for x gets a dnnl_fused twin: ReLU or Clip after a convolution with constant
  // weights and bias and no residual, whose input is cheaper to check than the output to
  // activate: no larger than the output, and small enough to be in cache still from the node
  // that wrote it (a check from memory costs about what the activation's own pass does).
  bool wants_fused_twin(const ir::Tensor& x, const ConvDims& d) const {
    constexpr size_t kCachedInputBytes = size_t{1} << 20;
    return epilogue_.nan_dropping() && !residual_ && constant_weights_ && fixed_bias_ &&
           x.nbytes() <= kCachedInputBytes && x.numel() <= product(d.out_shape());
  }

  // The largest input magnitude for which no sum of w's products (plus the bias) can overflow,
  // with a wide margin for the order oneDNN sums in and Winograd's transforms; 0 when the
  // weights or bias are not finite.
  static float overflow_free_bound(const ir::Tensor& w, const ir::Tensor* b) {
    const int64_t rows = w.dim(0), row = rows > 0 ? w.numel() / rows : 0;
    const float* wp = w.data<float>();
    double worst = 0;
    for (int64_t o = 0; o < rows; ++o) {
      double sum = 0;
      for (int64_t i = 0; i < row; ++i) sum += std::fabs(static_cast<double>(wp[o * row + i]));
      worst = std::max(worst, sum);
    }
    if (b)
      for (int64_t o = 0; o < b->numel(); ++o) {
        double v = std::fabs(static_cast<double>(b->data<float>()[o]));
        if (!(v <= 1e30)) return 0;
      }
    if (!(worst < 1e30)) return 0;
    return static_cast<float>(1e32 / (worst + 1.0));
  }

  int64_t group_;
  bool constant_weights_;
  Epilogue epilogue_;  // fusion::Epilogue's activation (Conv only)
  bool fixed_bias_;    // no bias input, or a constant one
  bool residual_;      // fusion.h: input 3 is a residual added before the activation
  bool nhwc_;          // fusion::ChannelsLast: X, Z and Y are stored [N, H, W, C]

 private:
  PlanCache<ConvPlan> cache_;
};

class ConvKernel : public ConvFamilyKernel {
 public:
  using ConvFamilyKernel::ConvFamilyKernel;

 private:
  void run_direct(const runtime::KernelContext& ctx, const ConvDims& d, const ir::Tensor& x,
                  const ir::Tensor& w, const ir::Tensor* b, ir::Tensor& y) const override {
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

  std::shared_ptr<const ConvPlan> make_plan(const runtime::KernelContext& ctx, const ir::Tensor& x,
                                            const ir::Tensor& w,
                                            const ir::Tensor* b) const override {
    auto plan = std::make_shared<ConvPlan>();
    plan->dims = forward_conv_dims(ctx, x, w, group_);
    const ConvDims& d = plan->dims;
    check_output_fits(ctx, d, x.dtype());
    if (b && b->shape() != std::vector<int64_t>{d.out_channels})
      ctx.fail("bias B has shape {}, expected [{}]", ir::shape_to_string(b->shape()),
               d.out_channels);
    size_t spatial = d.in.size();
    if (x.dtype() != DType::Float32 || spatial > 3 || x.numel() == 0 || product(d.out_shape()) == 0)
      return plan;
    if (nhwc_ && depthwise_conv_preferred(d, ctx.num_threads())) {
      plan->depthwise = make_depthwise_conv(d, constant_weights_ ? &w : nullptr, epilogue_);
      return plan;
    }
    std::vector<int64_t> wdims = w.shape();
    if (group_ > 1) {
      wdims[0] = group_;
      wdims.insert(wdims.begin() + 1, d.out_channels / group_);
    }
    plan->threads = conv_threads(d, ctx.num_threads());
    OmpThreadScope plan_threads(plan->threads);  // oneDNN sizes its work split for them
    try {
      DnnlConvArgs a = dnnl_conv_args(d, x.shape(), wdims, b != nullptr);
      // Spatial kernels run markedly faster (reorders included) on oneDNN's blocked
      // activation layouts; 1x1 kernels are plain GEMMs on NCHW and stay there. Channels-last
      // activations are taken as they are (oneDNN's nhwc kernels need no reorder).
      bool blocked = d.kernel_size() > 1 && !nhwc_;
      if (nhwc_) {
        a.src = dnnl::memory::desc(a.src.dims(), dnnl::memory::data_type::f32,
                                   dnnl::memory::format_tag::nhwc);
        a.dst = dnnl::memory::desc(a.dst.dims(), dnnl::memory::data_type::f32,
                                   dnnl::memory::format_tag::nhwc);
      }
      auto any_of = [](const dnnl::memory::desc& md) {
        return dnnl::memory::desc(md.dims(), md.data_type(), dnnl::memory::format_tag::any);
      };
      auto primitive_desc = [&](dnnl::algorithm alg, bool any_layout, bool nan_dropping) {
        dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, alg,
                                             any_layout ? any_of(a.src) : a.src, a.weights_any,
                                             a.bias, any_layout ? any_of(a.dst) : a.dst, a.strides,
                                             a.dilations, a.pad_begin, a.pad_end);
        return dnnl::convolution_forward::primitive_desc(desc, plan_attr(nan_dropping),
                                                         dnnl_engine());
      };
      std::optional<dnnl::convolution_forward::primitive_desc> pd;
      dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
      bool any_layout = blocked;
      if (winograd_pays(d)) {
        // Winograd works on oneDNN's blocked layouts (reorders from and to the graph's layout
        // included, it still wins for these shapes); oneDNN declines it on CPUs without
        // AVX-512 and for some post-ops, and then the direct algorithm runs.
        try {
          pd = primitive_desc(dnnl::algorithm::convolution_winograd, true, false);
          alg = dnnl::algorithm::convolution_winograd;
          any_layout = true;
        } catch (const dnnl::error&) {
        }
      }
      if (!pd) pd = primitive_desc(alg, any_layout, false);
      const dnnl::memory::desc user_w = plain_desc(wdims, dnnl::memory::data_type::f32);
      plan->dnnl = finish_plan<dnnl::convolution_forward>(*pd, a.src, a.dst, user_w, w,
                                                          constant_weights_, residual_);
      if (wants_fused_twin(x, d)) {
        plan->input_bound = overflow_free_bound(w, b);
        if (plan->input_bound > 0) {
          try {
            plan->dnnl_fused = finish_plan<dnnl::convolution_forward>(
                primitive_desc(alg, any_layout, true), a.src, a.dst, user_w, w, true, false);
          } catch (const dnnl::error&) {
            plan->dnnl_fused = nullptr;  // the activation runs after the primitive
          }
        }
      }
    } catch (const dnnl::error&) {
      plan->dnnl = nullptr;  // oneDNN declines this shape: the direct loop covers it
    }
    return plan;
  }
};

}  // namespace

std::shared_ptr<const F32Conv> F32Conv::make(const ConvDims& d, ir::Tensor weights) {
  std::vector<int64_t> wdims = weights.shape();
  if (d.group > 1) {
    wdims[0] = d.group;
    wdims.insert(wdims.begin() + 1, d.out_channels / d.group);
  }
  std::vector<int64_t> x_shape = {d.batch, d.in_channels};
  x_shape.insert(x_shape.end(), d.in.begin(), d.in.end());
  try {
    DnnlConvArgs a = dnnl_conv_args(d, x_shape, wdims, false);
    auto any_of = [](const dnnl::memory::desc& md) {
      return dnnl::memory::desc(md.dims(), md.data_type(), dnnl::memory::format_tag::any);
    };
    bool blocked = d.kernel_size() > 1;
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        blocked ? any_of(a.src) : a.src, a.weights_any, a.bias, blocked ? any_of(a.dst) : a.dst,
        a.strides, a.dilations, a.pad_begin, a.pad_end);
    dnnl::convolution_forward::primitive_desc pd(desc, user_scratchpad_attr(), dnnl_engine());
    auto conv = std::make_shared<F32Conv>();
    conv->plan_ = finish_plan<dnnl::convolution_forward>(
        pd, a.src, a.dst, plain_desc(wdims, dnnl::memory::data_type::f32), weights, true);
    conv->weights_ = std::move(weights);
    return conv;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

void F32Conv::run(runtime::KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y) const {
  run_dnnl_plan(ctx, *plan_, x, weights_, nullptr, nullptr, y);
}

namespace {

class ConvTransposeKernel : public ConvFamilyKernel {
 public:
  explicit ConvTransposeKernel(const runtime::KernelInit& init)
      : ConvFamilyKernel(init),
        output_padding_(init.node.attr_ints("output_padding", {})),
        output_shape_(init.node.attr_ints("output_shape", {})) {
    SY_CHECK(!epilogue_.active() && !residual_ && !nhwc_, Internal,
             "{}: ConvTranspose has no fused epilogue or channels-last form", init.node.describe());
  }

 private:
  void run_direct(const runtime::KernelContext& ctx, const ConvDims& d, const ir::Tensor& x,
                  const ir::Tensor& w, const ir::Tensor* b, ir::Tensor& y) const override {
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      direct_deconv<T>(ctx, d, x.data<T>(), w.data<T>(), b ? b->data<T>() : nullptr, y.data<T>());
    });
  }

  template <typename T>
  static void direct_deconv(const runtime::KernelContext& ctx, const ConvDims& d, const T* xp,
                            const T* wp, const T* bp, T* yp) {
    using C = compute_t<T>;
    const int64_t in_size = d.in_size(), out_size = d.out_size(), ksize = d.kernel_size();
    const int64_t cg = d.in_channels / d.group, mg = d.out_channels / d.group;
    // For each output position and kernel position: the input offset it gathers, or -1.
    const std::vector<int64_t> offsets =
        window_offsets(d, [&](size_t s, int64_t o, int64_t k) -> int64_t {
          int64_t v = o + d.pad_begin[s] - k * d.dilations[s];
          if (v < 0 || v % d.strides[s] != 0 || v / d.strides[s] >= d.in[s]) return -1;
          return v / d.strides[s];
        });
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

  // The dims of a ConvTranspose call; pads may be negative at the end (output_shape larger than
  // the full result), where the extra outputs get only the bias.
  std::shared_ptr<const ConvPlan> make_plan(const runtime::KernelContext& ctx, const ir::Tensor& x,
                                            const ir::Tensor& w,
                                            const ir::Tensor* b) const override {
    auto plan = std::make_shared<ConvPlan>();
    ConvDims& d = plan->dims;
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
    d.out_channels = ir::checked_mul(w.dim(1), group_, "output channels");
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
      using ir::checked_add, ir::checked_mul;
      int64_t full = checked_add(
          checked_add(checked_mul(a.strides[i], d.in[i] - 1, "output size"), op[i], "output size"),
          checked_add(checked_mul(a.kernel[i] - 1, a.dilations[i], "output size"), 1,
                      "output size"),
          "output size");
      int64_t out;
      int64_t pb, pe;
      if (!output_shape_.empty() || same) {
        out = !output_shape_.empty() ? output_shape_[output_shape_.size() - n + i]
                                     : checked_mul(d.in[i], a.strides[i], "output size");
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
        out = ir::checked_sub(ir::checked_sub(full, pb, "output size"), pe, "output size");
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
    check_output_fits(ctx, d, x.dtype());
    if (x.dtype() != DType::Float32 || n > 3 || x.numel() == 0 || product(d.out_shape()) == 0)
      return plan;
    for (size_t i = 0; i < n; ++i)
      if (d.pad_end[i] < 0 || d.pad_begin[i] < 0) return plan;
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
    try {
      DnnlConvArgs a = dnnl_conv_args(d, x.shape(), wdims, b != nullptr);
      dnnl::deconvolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, a.src,
          a.weights_any, a.bias, a.dst, a.strides, a.dilations, a.pad_begin, a.pad_end);
      dnnl::deconvolution_forward::primitive_desc pd(desc, user_scratchpad_attr(), dnnl_engine());
      dnnl::memory::desc user_w(dnnl_dims(wdims), dnnl::memory::data_type::f32, user_strides);
      plan->dnnl =
          finish_plan<dnnl::deconvolution_forward>(pd, a.src, a.dst, user_w, w, constant_weights_);
    } catch (const dnnl::error&) {
      plan->dnnl = nullptr;  // oneDNN declines this shape: the direct loop covers it
    }
    return plan;
  }

  std::vector<int64_t> output_padding_;
  std::vector<int64_t> output_shape_;
};

}  // namespace

void register_conv_kernels(runtime::KernelRegistry& r) {
  r.add<ConvKernel>(ops::OpKind::Conv, dtypes_of(FloatTypes{}));
  r.add<ConvTransposeKernel>(ops::OpKind::ConvTranspose, dtypes_of(FloatTypes{}));
  register_conv_quant_kernels(r);
}

}  // namespace switchyard::cpu
