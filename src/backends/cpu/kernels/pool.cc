// CPU kernels of the pool family: MaxPool, AveragePool, LpPool and the global pools. float32
// (and int8/uint8 max pooling) run through oneDNN's pooling for 1-3 spatial dims; the direct
// loop covers other dtypes, Indices, LpPool and the windows oneDNN cannot express.
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/dnnl_util.h"
#include "backends/cpu/kernels/pool_internal.h"
#include "backends/fusion/payload.h"
#include "ops/conv_geometry.h"

namespace switchyard::cpu {

namespace {

enum class PoolKind { Max, Average, Lp };

using MaxPoolTypes = TypeList<float, double, Float16, BFloat16, int8_t, uint8_t>;

// Offset markers in a window table besides real input offsets.
constexpr int64_t kPadding = -1;  // explicit padding: counts for count_include_pad
constexpr int64_t kOutside = -2;  // beyond the explicit pads (ceil_mode): never counts
// Largest window table (output size x window size input offsets, 8 bytes each: 512 MiB).
constexpr int64_t kMaxWindowTableEntries = int64_t{1} << 26;

// oneDNN's max pooling lets a number win over NaN, where numpy's max (and ONNX Runtime) let NaN
// win, and starts each window from the lowest finite value, so a window of -inf alone gives
// that instead of -inf; a float32 input holding a NaN or an infinity takes the direct loop
// instead. One vectorised read.
// Whether p[0..n) holds a NaN or an infinity. A float sum of x * 0 vectorizes (an integer test
// of x != x does not): it is NaN exactly when the block holds one.
bool block_holds_nan(const float* __restrict p, int64_t n) {
  float probe = 0;
#pragma omp simd reduction(+ : probe)
  for (int64_t i = 0; i < n; ++i) probe += p[i] * 0.0f;
  return probe != probe;
}

bool holds_nan(const ir::Tensor& x, int threads) {
  if (x.dtype() != DType::Float32) return false;
  const float* p = x.data<float>();
  std::atomic<bool> found{false};
  parallel_for(x.numel(), int64_t{1} << 16, threads, [p, &found](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end && !found.load(std::memory_order_relaxed); b += 16384)
      if (block_holds_nan(p + b, std::min(end, b + 16384) - b))
        found.store(true, std::memory_order_relaxed);
  });
  return found.load(std::memory_order_relaxed);
}

struct PoolPlan {
  int64_t planes = 0;  // N * C
  std::vector<int64_t> in, out;
  int64_t in_size = 0, out_size = 0, ksize = 0;
  std::vector<int64_t> out_shape;
  std::vector<int64_t> offsets;  // out_size x ksize input offsets or markers
  bool use_dnnl = false;
  dnnl::pooling_v2_forward primitive;
  dnnl::memory::desc src_md, dst_md;
};

// Channels-last float32 MaxPool in one pass, NaN winning as in run_loop (the first valid value of
// a window, then any larger one or a NaN over a number): each window pixel is a row of C
// channels, compared a vector at a time. No NaN scan and no oneDNN call: oneDNN's pooling lets
// a number win over NaN, so its path had to read the whole input once more first.
void nhwc_max_pool(const PoolPlan& plan, const float* x, float* y, int64_t batch, int64_t channels,
                   int threads) {
  const int64_t out_size = plan.out_size, ksize = plan.ksize, in_size = plan.in_size;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, ksize * channels));
  parallel_for(batch * out_size, grain, threads, [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      const int64_t n = j / out_size, o = j - n * out_size;
      const int64_t* off = plan.offsets.data() + o * ksize;
      const float* xn = x + n * in_size * channels;
      float* __restrict yo = y + j * channels;
      bool first = true;
      for (int64_t k = 0; k < ksize; ++k) {
        if (off[k] < 0) continue;
        const float* __restrict xr = xn + off[k] * channels;
        if (first) {
          std::memcpy(yo, xr, static_cast<size_t>(channels) * sizeof(float));
          first = false;
          continue;
        }
#pragma omp simd
        for (int64_t c = 0; c < channels; ++c) {
          const float v = xr[c], b = yo[c];
          yo[c] = (v > b || (v != v && b == b)) ? v : b;
        }
      }
      if (first) std::fill(yo, yo + channels, std::numeric_limits<float>::lowest());
    }
  });
}

class PoolKernel : public runtime::Kernel {
 public:
  PoolKernel(const runtime::KernelInit& init, PoolKind kind, bool global)
      : kind_(kind), global_(global) {
    const ir::Node& node = init.node;
    if (!global_) {
      attrs_ = ops::read_window_attrs(node, node.attr_ints("kernel_shape"));
    }
    count_include_pad_ = node.attr_int("count_include_pad", 0) != 0;
    storage_order_ = node.attr_int("storage_order", 0);
    SY_CHECK(storage_order_ == 0 || storage_order_ == 1, InvalidModel,
             "{}: storage_order must be 0 or 1, got {}", node.describe(), storage_order_);
    p_ = node.attr_int("p", 2);
    SY_CHECK(kind_ != PoolKind::Lp || p_ >= 1, InvalidModel, "{}: p must be >= 1, got {}",
             node.describe(), p_);
    // An omitted Indices output has no readers: skip computing it.
    const ir::Value* indices = node.output(1);
    wants_indices_ = indices && (!indices->uses().empty() || node.owner()->is_output(indices));
    nhwc_ = node.annotation<backends::fusion::ChannelsLast>() != nullptr;
    SY_CHECK(!nhwc_ || !wants_indices_, Internal, "{}: a channels-last pool has no Indices output",
             node.describe());
  }

  void run(runtime::KernelContext& ctx) const override {
    if (!nhwc_) return run_with(ctx, ctx.input(0));
    // Channels-last (fusion::ChannelsLast): shapes are worked out on the logical NCHW view of X.
    if (ctx.input(0).rank() != 4)
      ctx.fail("a channels-last input must have rank 4, got {}", ctx.input(0).rank());
    run_with(ctx, ctx.input(0).reshaped(permute4(ctx.input(0).shape(), kNhwcToNchw)));
  }

 private:
  // `x` has logical NCHW dims (for a channels-last node its data is NHWC).
  void run_with(runtime::KernelContext& ctx, const ir::Tensor& x) const {
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(x.shape(), [&] { return make_plan(ctx, x); });
    ir::Tensor& y = ctx.allocate_output(
        0, x.dtype(), nhwc_ ? permute4(plan->out_shape, kNchwToNhwc) : plan->out_shape);
    ir::Tensor* indices = nullptr;
    if (wants_indices_) indices = &ctx.allocate_output(1, DType::Int64, plan->out_shape);
    if (y.numel() == 0) return;
    if (nhwc_ && kind_ == PoolKind::Max && !indices && x.dtype() == DType::Float32) {
      nhwc_max_pool(*plan, x.data<float>(), y.data<float>(), x.dim(0), x.dim(1), ctx.num_threads());
      return;
    }
    if (plan->use_dnnl && !indices &&
        !(kind_ == PoolKind::Max && holds_nan(x, ctx.num_threads()))) {
      execute_primitive(ctx, plan->primitive,
                        {{DNNL_ARG_SRC, wrap_memory(x, plan->src_md)},
                         {DNNL_ARG_DST, wrap_memory(y, plan->dst_md)}});
      return;
    }
    if (nhwc_) {
      // The loops work on NCHW: through transposed copies.
      ir::Tensor xc =
          transposed_scratch(ctx, x.reshaped(permute4(x.shape(), kNchwToNhwc)), kNhwcToNchw);
      ir::Tensor yc = scratch_tensor(ctx, x.dtype(), plan->out_shape);
      dispatch(MaxPoolTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
        using T = decltype(tag);
        run_loop<T>(ctx, *plan, xc.data<T>(), yc.data<T>(), nullptr);
      });
      ir::Tensor yt = transposed_scratch(ctx, yc, kNchwToNhwc);
      std::memcpy(y.raw(), yt.raw(), y.nbytes());
      return;
    }
    dispatch(MaxPoolTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      run_loop<T>(ctx, *plan, x.data<T>(), y.data<T>(),
                  indices ? indices->data<int64_t>() : nullptr);
    });
  }

  template <typename T>
  void run_loop(const runtime::KernelContext& ctx, const PoolPlan& plan, const T* xp, T* yp,
                int64_t* ip) const {
    using C = std::conditional_t<std::is_integral_v<T>, T, compute_t<T>>;
    const int64_t ksize = plan.ksize, out_size = plan.out_size, in_size = plan.in_size;
    std::vector<int64_t> in_strides = strides_of(plan.in);
    std::vector<int64_t> col_strides(plan.in.size(), 1);
    for (size_t i = 1; i < plan.in.size(); ++i)
      col_strides[i] = col_strides[i - 1] * plan.in[i - 1];
    auto column_major = [&](int64_t off) {
      int64_t r = 0;
      for (size_t i = 0; i < plan.in.size(); ++i) {
        r += off / in_strides[i] * col_strides[i];
        off %= in_strides[i];
      }
      return r;
    };
    const double p = static_cast<double>(p_);
    int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * ksize));
    parallel_for(plan.planes, grain, ctx.num_threads(), [&](int64_t lo, int64_t hi) {
      for (int64_t plane = lo; plane < hi; ++plane) {
        const T* xs = xp + plane * in_size;
        for (int64_t o = 0; o < out_size; ++o) {
          const int64_t* off = plan.offsets.data() + o * ksize;
          int64_t out_index = plane * out_size + o;
          if (kind_ == PoolKind::Max) {
            C best = std::numeric_limits<C>::lowest();
            int64_t best_off = -1;
            for (int64_t k = 0; k < ksize; ++k) {
              if (off[k] < 0) continue;
              C v = static_cast<C>(xs[off[k]]);
              if (best_off < 0 || v > best ||
                  (std::isnan(static_cast<double>(v)) && !std::isnan(static_cast<double>(best)))) {
                best = v;
                best_off = off[k];
              }
            }
            yp[out_index] = convert<T>(best);
            if (ip) {
              int64_t spatial = best_off < 0     ? 0
                                : storage_order_ ? column_major(best_off)
                                                 : best_off;
              ip[out_index] = plane * in_size + spatial;
            }
          } else if (kind_ == PoolKind::Average) {
            double sum = 0;
            int64_t count = 0;
            for (int64_t k = 0; k < ksize; ++k) {
              if (off[k] >= 0) {
                sum += static_cast<double>(static_cast<C>(xs[off[k]]));
                ++count;
              } else if (off[k] == kPadding && count_include_pad_) {
                ++count;
              }
            }
            yp[out_index] =
                convert<T>(static_cast<C>(count ? sum / static_cast<double>(count) : 0.0));
          } else {
            double sum = 0;
            for (int64_t k = 0; k < ksize; ++k)
              if (off[k] >= 0)
                sum += std::pow(std::fabs(static_cast<double>(static_cast<C>(xs[off[k]]))), p);
            yp[out_index] = convert<T>(static_cast<C>(std::pow(sum, 1.0 / p)));
          }
        }
      }
    });
  }

  std::shared_ptr<const PoolPlan> make_plan(const runtime::KernelContext& ctx,
                                            const ir::Tensor& x) const {
    auto plan = std::make_shared<PoolPlan>();
    if (x.rank() < 3 && !(global_ && x.rank() >= 2))
      ctx.fail("input X has shape {}, expected rank >= 3", ir::shape_to_string(x.shape()));
    ops::WindowAttrs a = attrs_;
    plan->in.assign(x.shape().begin() + 2, x.shape().end());
    size_t n = plan->in.size();
    if (global_) {
      a.kernel = plan->in;
      for (int64_t& k : a.kernel) k = std::max<int64_t>(k, 1);
      a.strides.assign(n, 1);
      a.dilations.assign(n, 1);
      a.pads.assign(2 * n, 0);
    } else if (n != a.spatial()) {
      ctx.fail("input X has shape {} but kernel_shape has {} dims", ir::shape_to_string(x.shape()),
               a.spatial());
    }
    ops::WindowGeometry geo = ops::window_geometry(a, plan->in);
    for (size_t i = 0; i < n; ++i)
      if (geo.out[i] < 1)
        ctx.fail("the window (extent {}) does not fit spatial dim {} of size {} with its pads",
                 (a.kernel[i] - 1) * a.dilations[i] + 1, i, plan->in[i]);
    plan->out = geo.out;
    plan->planes = x.dim(0) * x.dim(1);
    plan->in_size = ir::checked_numel(plan->in);
    plan->out_size = ir::checked_numel(plan->out);
    plan->ksize = ir::checked_numel(a.kernel);
    plan->out_shape = {x.dim(0), x.dim(1)};
    plan->out_shape.insert(plan->out_shape.end(), plan->out.begin(), plan->out.end());
    // The explicit end pads (what count_include_pad counts), before ceil_mode grows them.
    std::vector<int64_t> explicit_end(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t pb = a.pads[i], pe = a.pads[i + n];
      ops::AutoPad mode = a.auto_pad;
      if (mode != ops::AutoPad::NotSet) {
        ops::window_output_size(plan->in[i], a.kernel[i], a.strides[i], a.dilations[i], mode, false,
                                pb, pe);
      }
      explicit_end[i] = pe;
    }
    // The window table lives in the cached plan, outside the run's pool and its memory limit:
    // bound it (real windows need far less: a 7x7 pool over a 112x112 output takes 614656).
    int64_t entries = ir::checked_mul(plan->out_size, plan->ksize, "pool window table");
    SY_CHECK(entries <= kMaxWindowTableEntries, OutOfMemory,
             "{}: the window table needs {} entries (output {} x window {}), more than the {} "
             "allowed",
             ctx.node().describe(), entries, ir::shape_to_string(plan->out),
             ir::shape_to_string(a.kernel), kMaxWindowTableEntries);
    build_offsets(*plan, a, geo, explicit_end);
    bool ceil_grew = false;
    for (size_t i = 0; i < n; ++i) ceil_grew = ceil_grew || geo.pad_end[i] != explicit_end[i];
    auto dnnl_type = dnnl_data_type(x.dtype());
    bool dnnl_ok =
        kind_ != PoolKind::Lp && n >= 1 && n <= 3 && x.numel() > 0 &&
        (x.dtype() == DType::Float32 ||
         (kind_ == PoolKind::Max && (x.dtype() == DType::Int8 || x.dtype() == DType::UInt8))) &&
        !(kind_ == PoolKind::Average && count_include_pad_ && ceil_grew);
    if (!dnnl_ok) return plan;
    try {
      dnnl::algorithm alg = kind_ == PoolKind::Max ? dnnl::algorithm::pooling_max
                            : count_include_pad_   ? dnnl::algorithm::pooling_avg_include_padding
                                                   : dnnl::algorithm::pooling_avg_exclude_padding;
      dnnl::memory::desc src = plain_desc(x.shape(), *dnnl_type);
      dnnl::memory::desc dst = plain_desc(plan->out_shape, *dnnl_type);
      if (nhwc_) {
        src = dnnl::memory::desc(dnnl_dims(x.shape()), *dnnl_type, dnnl::memory::format_tag::nhwc);
        dst = dnnl::memory::desc(dnnl_dims(plan->out_shape), *dnnl_type,
                                 dnnl::memory::format_tag::nhwc);
      }
      dnnl::memory::dims dil;
      for (int64_t d : a.dilations) dil.push_back(d - 1);
      dnnl::pooling_v2_forward::desc desc(dnnl::prop_kind::forward_inference, alg, src, dst,
                                          dnnl_dims(a.strides), dnnl_dims(a.kernel), dil,
                                          dnnl_dims(geo.pad_begin), dnnl_dims(geo.pad_end));
      dnnl::pooling_v2_forward::primitive_desc pd(desc, user_scratchpad_attr(), dnnl_engine());
      // oneDNN's reference implementation is no faster than the loop here; keep it only for
      // float32, which must run through oneDNN.
      if (x.dtype() != DType::Float32 && std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
        return plan;
      plan->primitive = dnnl::pooling_v2_forward(pd);
      plan->src_md = pd.src_desc();
      plan->dst_md = pd.dst_desc();
      plan->use_dnnl = true;
    } catch (const dnnl::error&) {
      plan->use_dnnl = false;  // oneDNN declines: the direct loop covers it
    }
    return plan;
  }

  static void build_offsets(PoolPlan& plan, const ops::WindowAttrs& a,
                            const ops::WindowGeometry& geo,
                            const std::vector<int64_t>& explicit_end) {
    const size_t rank = plan.in.size();
    plan.offsets.resize(static_cast<size_t>(plan.out_size * plan.ksize));
    std::vector<int64_t> in_strides = strides_of(plan.in);
    for_each_window_tap(
        plan.out, a.kernel,
        [&](int64_t tap, const std::vector<int64_t>& oc, const std::vector<int64_t>& kc) {
          int64_t off = 0;
          for (size_t s = 0; s < rank; ++s) {
            int64_t i = oc[s] * a.strides[s] - geo.pad_begin[s] + kc[s] * a.dilations[s];
            if (i >= 0 && i < plan.in[s]) {
              if (off >= 0) off += i * in_strides[s];
            } else if (i < plan.in[s] + explicit_end[s]) {
              if (off != kOutside) off = kPadding;
            } else {
              off = kOutside;
            }
          }
          plan.offsets[static_cast<size_t>(tap)] = off;
        });
  }

  PoolKind kind_;
  bool global_;
  ops::WindowAttrs attrs_;
  bool count_include_pad_ = false;
  int64_t storage_order_ = 0;
  int64_t p_ = 2;
  bool wants_indices_ = false;
  bool nhwc_ = false;  // fusion::ChannelsLast: X and Y are stored [N, H, W, C]
  PlanCache<PoolPlan> cache_;
};

template <PoolKind kKind, bool kGlobal>
class Pool : public PoolKernel {
 public:
  explicit Pool(const runtime::KernelInit& init) : PoolKernel(init, kKind, kGlobal) {}
};

}  // namespace

void register_pool_kernels(runtime::KernelRegistry& r) {
  r.add<Pool<PoolKind::Max, false>>(ops::OpKind::MaxPool, dtypes_of(MaxPoolTypes{}));
  r.add<Pool<PoolKind::Average, false>>(ops::OpKind::AveragePool, dtypes_of(FloatTypes{}));
  r.add<Pool<PoolKind::Lp, false>>(ops::OpKind::LpPool, dtypes_of(FloatTypes{}));
  r.add<Pool<PoolKind::Max, true>>(ops::OpKind::GlobalMaxPool, dtypes_of(MaxPoolTypes{}));
  r.add<Pool<PoolKind::Average, true>>(ops::OpKind::GlobalAveragePool, dtypes_of(FloatTypes{}));
  r.add<Pool<PoolKind::Lp, true>>(ops::OpKind::GlobalLpPool, dtypes_of(FloatTypes{}));
  register_pool_roi_kernels(r);
}

}  // namespace switchyard::cpu
