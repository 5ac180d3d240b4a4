// CPU kernels of the normalization family: BatchNormalization, InstanceNormalization,
// LayerNormalization, GroupNormalization, LpNormalization, LRN, MeanVarianceNormalization and
// Dropout (Softmax/LogSoftmax/Hardmax are in normalization_softmax.cc). Statistics accumulate in
// float, or double for double inputs (LayerNormalization: also for stash_type double).
#include "backends/cpu/kernels/elementwise_internal.h"
#include "backends/cpu/kernels/normalization_internal.h"
#include "backends/fusion/payload.h"

namespace switchyard::cpu {

namespace {

// n contiguous values as compute type C: the input itself, or converted into `buf`.
template <typename C, typename T>
const C* as_compute(const T* p, int64_t n, std::vector<C>& buf) {
  if constexpr (std::is_same_v<C, T>) {
    return p;
  } else {
    buf.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) buf[static_cast<size_t>(i)] = convert<C>(p[i]);
    return buf.data();
  }
}

// Elements of a small tensor (per-channel parameters) as C.
template <typename C>
std::vector<C> read_values(const ir::Tensor& t) {
  std::vector<C> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<size_t>(i)] = static_cast<C>(t.scalar_as_double(i));
  return v;
}

// Requires input i to be a 1-D float tensor of n elements.
const ir::Tensor& channel_input(const runtime::KernelContext& ctx, size_t i, int64_t n,
                                const char* what) {
  const ir::Tensor& t = ctx.input(i);
  if (!ir::dtype_is_float(t.dtype()))
    ctx.fail("{} must be a float tensor, got {}", what, ir::dtype_name(t.dtype()));
  if (t.rank() != 1 || t.dim(0) != n)
    ctx.fail("{} has shape {}, expected [{}]", what, ir::shape_to_string(t.shape()), n);
  return t;
}

// Writes doubles into a float tensor of any float dtype.
void store_values(const runtime::KernelContext& ctx, ir::Tensor& t, const std::vector<double>& v) {
  dispatch(FloatTypes{}, t.dtype(), ctx.node(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = convert<T>(v[i]);
  });
}

// ReLU as ONNX defines it: NaN stays NaN (a compare, not std::max, so the loop vectorizes).
template <typename C>
inline C relu_keep_nan(C v) {
  return v < C(0) ? C(0) : v;
}

class BatchNormKernel : public runtime::Kernel {
 public:
  explicit BatchNormKernel(const runtime::KernelInit& init)
      : epsilon_(init.node.attr_float("epsilon", 1e-5f)),
        momentum_(init.node.attr_float("momentum", 0.9f)),
        training_(init.node.attr_int("training_mode", 0) != 0),
        nhwc_(init.node.annotation<backends::fusion::ChannelsLast>() != nullptr) {
    SY_CHECK(!nhwc_ || !training_, Internal,
             "{}: a channels-last BatchNormalization runs in inference mode only",
             init.node.describe());
    using backends::fusion::Activation;
    const auto* epilogue = init.node.annotation<backends::fusion::Epilogue>();
    const Activation act = epilogue ? epilogue->activation : Activation::None;
    relu_ = act == Activation::Relu;
    SY_CHECK(act == Activation::None || (relu_ && !training_), Internal,
             "{}: a fused BatchNormalization takes only Relu, in inference mode (got '{}')",
             init.node.describe(), backends::fusion::activation_name(act));
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("X must have rank >= 2, got {}", x.rank());
    if (nhwc_ && x.rank() != 4)
      ctx.fail("a channels-last input must have rank 4, got {}", x.rank());
    // Channels-last (fusion::ChannelsLast): the channel is the last dim, each pixel a row of C.
    int64_t n = x.dim(0);
    int64_t c = nhwc_ ? x.dim(3) : x.dim(1);
    int64_t spatial = 1;
    for (int64_t i = nhwc_ ? 1 : 2; i < x.rank() - (nhwc_ ? 1 : 0); ++i) spatial *= x.dim(i);
    const ir::Tensor& scale = channel_input(ctx, 1, c, "scale");
    const ir::Tensor& bias = channel_input(ctx, 2, c, "B");
    const ir::Tensor& in_mean = channel_input(ctx, 3, c, "input_mean");
    const ir::Tensor& in_var = channel_input(ctx, 4, c, "input_var");
    if (ctx.num_outputs() > 1 && !training_)
      ctx.fail("outputs running_mean and running_var exist only with training_mode=1");
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      std::vector<C> mean = read_values<C>(in_mean);
      std::vector<C> var = read_values<C>(in_var);
      if (training_) {
        if (n * spatial == 0) ctx.fail("training mode needs a non-empty batch");
        parallel_for(c, 1, ctx.num_threads(), [&](int64_t b, int64_t e) {
          std::vector<C> buf;
          for (int64_t ch = b; ch < e; ++ch) {
            C sum = 0;
            for (int64_t i = 0; i < n; ++i)
              sum += lane_sum(as_compute<C>(in + (i * c + ch) * spatial, spatial, buf), spatial);
            C m = sum / static_cast<C>(n * spatial);
            C sq = 0;
            for (int64_t i = 0; i < n; ++i)
              sq += lane_sum_sq_dev(as_compute<C>(in + (i * c + ch) * spatial, spatial, buf),
                                    spatial, m);
            mean[static_cast<size_t>(ch)] = m;
            var[static_cast<size_t>(ch)] = sq / static_cast<C>(n * spatial);
          }
        });
      }
      std::vector<C> sc = read_values<C>(scale);
      std::vector<C> bs = read_values<C>(bias);
      std::vector<C> mul(static_cast<size_t>(c));
      std::vector<C> add(static_cast<size_t>(c));
      for (size_t ch = 0; ch < mul.size(); ++ch) {
        mul[ch] = sc[ch] / std::sqrt(var[ch] + static_cast<C>(epsilon_));
        add[ch] = bs[ch] - mean[ch] * mul[ch];
      }
      const bool relu = relu_;
      if (nhwc_) {
        parallel_for(n * spatial, std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1)),
                     ctx.num_threads(), [&](int64_t b, int64_t e) {
                       for (int64_t pixel = b; pixel < e; ++pixel) {
                         const T* p = in + pixel * c;
                         T* q = out + pixel * c;
                         const C* m = mul.data();
                         const C* a = add.data();
                         if (relu) {
#pragma omp simd
                           for (int64_t ch = 0; ch < c; ++ch)
                             q[ch] = convert<T>(relu_keep_nan(convert<C>(p[ch]) * m[ch] + a[ch]));
                         } else {
#pragma omp simd
                           for (int64_t ch = 0; ch < c; ++ch)
                             q[ch] = convert<T>(convert<C>(p[ch]) * m[ch] + a[ch]);
                         }
                       }
                     });
        return;
      }
      parallel_for(n * c, std::max<int64_t>(1, 16384 / std::max<int64_t>(spatial, 1)),
                   ctx.num_threads(), [&](int64_t b, int64_t e) {
                     for (int64_t plane = b; plane < e; ++plane) {
                       size_t ch = static_cast<size_t>(plane % c);
                       const T* p = in + plane * spatial;
                       T* q = out + plane * spatial;
                       const C m = mul[ch], a = add[ch];
                       if (relu) {
#pragma omp simd
                         for (int64_t s = 0; s < spatial; ++s)
                           q[s] = convert<T>(relu_keep_nan(convert<C>(p[s]) * m + a));
                       } else {
#pragma omp simd
                         for (int64_t s = 0; s < spatial; ++s)
                           q[s] = convert<T>(convert<C>(p[s]) * m + a);
                       }
                     }
                   });
      if (training_ && ctx.num_outputs() > 1) {
        std::vector<double> run_mean(static_cast<size_t>(c));
        std::vector<double> run_var(static_cast<size_t>(c));
        double mom = momentum_;
        for (int64_t ch = 0; ch < c; ++ch) {
          size_t u = static_cast<size_t>(ch);
          run_mean[u] =
              in_mean.scalar_as_double(ch) * mom + static_cast<double>(mean[u]) * (1 - mom);
          run_var[u] = in_var.scalar_as_double(ch) * mom + static_cast<double>(var[u]) * (1 - mom);
        }
        store_values(ctx, ctx.allocate_output(1, in_mean.dtype(), {c}), run_mean);
        if (ctx.num_outputs() > 2)
          store_values(ctx, ctx.allocate_output(2, in_var.dtype(), {c}), run_var);
      }
    });
  }

 private:
  float epsilon_;
  float momentum_;
  bool training_;
  bool nhwc_;          // fusion::ChannelsLast (inference only): X and Y are stored [N, H, W, C]
  bool relu_ = false;  // fusion::Epilogue Relu (inference only), applied in the same pass
};

// Normalizes `groups` contiguous blocks of `block` values each: block g uses its own mean and
// variance, then element j of it gets scale[channel] and bias[channel], channel =
// g * channels_per_block + j / spatial (modulo the channel count).
template <typename T>
void normalize_blocks(const T* in, T* out, int64_t groups, int64_t block, int64_t spatial,
                      int64_t channels, int64_t channels_per_block,
                      const std::vector<compute_t<T>>& scale, const std::vector<compute_t<T>>& bias,
                      float epsilon, int threads) {
  using C = compute_t<T>;
  parallel_for(groups, std::max<int64_t>(1, 16384 / std::max<int64_t>(block, 1)), threads,
               [&](int64_t b, int64_t e) {
                 std::vector<C> buf;
                 for (int64_t g = b; g < e; ++g) {
                   const C* p = as_compute<C>(in + g * block, block, buf);
                   const auto [mean, inv] = mean_inv_std(p, block, static_cast<C>(epsilon));
                   T* q = out + g * block;
                   int64_t ch0 = (g * channels_per_block) % channels;
                   for (int64_t k = 0; k < channels_per_block; ++k) {
                     size_t ch = static_cast<size_t>(ch0 + k);
                     C mul = inv * scale[ch];
                     C add = bias[ch] - mean * mul;
                     for (int64_t s = k * spatial; s < (k + 1) * spatial; ++s)
                       q[s] = convert<T>(p[s] * mul + add);
                   }
                 }
               });
}

class InstanceNormKernel : public runtime::Kernel {
 public:
  explicit InstanceNormKernel(const runtime::KernelInit& init)
      : epsilon_(init.node.attr_float("epsilon", 1e-5f)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 3) ctx.fail("input must have rank >= 3, got {}", x.rank());
    int64_t c = x.dim(1);
    int64_t spatial = 1;
    for (int64_t i = 2; i < x.rank(); ++i) spatial *= x.dim(i);
    const ir::Tensor& scale = channel_input(ctx, 1, c, "scale");
    const ir::Tensor& bias = channel_input(ctx, 2, c, "B");
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      normalize_blocks<T>(x.data<T>(), y.data<T>(), x.dim(0) * c, spatial, spatial, c, 1,
                          read_values<C>(scale), read_values<C>(bias), epsilon_, ctx.num_threads());
    });
  }

 private:
  float epsilon_;
};

class GroupNormKernel : public runtime::Kernel {
 public:
  explicit GroupNormKernel(const runtime::KernelInit& init)
      : epsilon_(init.node.attr_float("epsilon", 1e-5f)),
        groups_(init.node.attr_int("num_groups")) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("X must have rank >= 2, got {}", x.rank());
    int64_t c = x.dim(1);
    if (groups_ <= 0 || c % groups_ != 0)
      ctx.fail("{} channels cannot be split into {} groups", c, groups_);
    int64_t spatial = 1;
    for (int64_t i = 2; i < x.rank(); ++i) spatial *= x.dim(i);
    const ir::Tensor& scale = channel_input(ctx, 1, c, "scale");
    const ir::Tensor& bias = channel_input(ctx, 2, c, "bias");
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    int64_t per_group = c / groups_;
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      normalize_blocks<T>(x.data<T>(), y.data<T>(), x.dim(0) * groups_, per_group * spatial,
                          spatial, c, per_group, read_values<C>(scale), read_values<C>(bias),
                          epsilon_, ctx.num_threads());
    });
  }

 private:
  float epsilon_;
  int64_t groups_;
};

// Values of `t` broadcast (numpy rules, unidirectional) to shape[first:], as C.
template <typename C>
std::vector<C> expand_to(const runtime::KernelContext& ctx, const ir::Tensor& t,
                         const std::vector<int64_t>& shape, size_t first, const char* what) {
  if (t.rank() > static_cast<int64_t>(shape.size()))
    ctx.fail("{} has shape {}, which does not broadcast to {}", what,
             ir::shape_to_string(t.shape()), ir::shape_to_string(shape));
  size_t off = shape.size() - t.shape().size();
  for (size_t i = 0; i < t.shape().size(); ++i)
    if (t.shape()[i] != 1 && t.shape()[i] != shape[off + i])
      ctx.fail("{} has shape {}, which does not broadcast to {}", what,
               ir::shape_to_string(t.shape()), ir::shape_to_string(shape));
  std::vector<int64_t> strides = broadcast_strides(t.shape(), shape);
  std::vector<int64_t> sub(shape.begin() + static_cast<int64_t>(first), shape.end());
  int64_t n = 1;
  for (int64_t d : sub) n *= d;
  std::vector<C> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(sub.size(), 0);
  int64_t src = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = static_cast<C>(t.scalar_as_double(src));
    for (int64_t d = static_cast<int64_t>(sub.size()) - 1; d >= 0; --d) {
      size_t u = static_cast<size_t>(d);
      src += strides[first + u];
      if (++idx[u] < sub[u]) break;
      src -= strides[first + u] * sub[u];
      idx[u] = 0;
    }
  }
  return out;
}

// True when `t` broadcast to `shape` does not vary over dims before `axis`.
bool constant_before(const ir::Tensor& t, const std::vector<int64_t>& shape, size_t axis) {
  size_t off = shape.size() - t.shape().size();
  for (size_t i = off; i < axis; ++i)
    if (t.shape()[i - off] != 1) return false;
  return true;
}

// A row of S = X + Z as the unfused Add computes it (elementwise_binary.cc's AddOp: in
// compute_t<T>, rounded to T), into `s` as C and, where `sum` is not null, into it as T.
template <typename T, typename C>
void sum_row(const T* x, const T* z, int64_t n, C* s, T* sum) {
  using A = compute_t<T>;
  if (sum) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      const T v = convert<T>(static_cast<A>(x[j]) + static_cast<A>(z[j]));
      sum[j] = v;
      s[j] = convert<C>(v);
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j)
      s[j] = convert<C>(convert<T>(static_cast<A>(x[j]) + static_cast<A>(z[j])));
  }
}

class LayerNormKernel : public runtime::Kernel {
 public:
  explicit LayerNormKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", -1)),
        epsilon_(init.node.attr_float("epsilon", 1e-5f)),
        stash_(static_cast<DType>(init.node.attr_int("stash_type", 1))),
        sum_output_(backends::fusion::residual_sum_output(init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    // Input 3 (fusion.h): a residual Z, Y = LN(X + Z). Of X's shape it is added row by row;
    // one that broadcasts otherwise is summed first.
    const ir::Tensor* residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    // A ResidualSum (payload.h) also writes that sum, so Z must be of X's shape and dtype.
    // A ResidualSum (payload.h) also writes that sum: row by row with Z of X's shape, else the
    // broadcast sum itself.
    ir::Tensor* sum_out = nullptr;
    if (sum_output_ >= 0) {
      const ir::Tensor& x = ctx.input(0);
      if (!residual) ctx.fail("the fused residual sum needs a residual (input 3), got none");
      if (residual->dtype() != x.dtype())
        ctx.fail("the fused residual sum needs a residual of X's dtype {}, got {}",
                 ir::dtype_name(x.dtype()), ir::dtype_name(residual->dtype()));
      if (residual->shape() == x.shape())
        sum_out = &ctx.allocate_output(static_cast<size_t>(sum_output_), x.dtype(), x.shape());
    }
    ir::Tensor summed;
    if (residual && residual->shape() != ctx.input(0).shape()) {
      summed = add_broadcast(ctx, ctx.input(0), *residual);
      residual = nullptr;
      if (sum_output_ >= 0) {
        ir::Tensor& s =
            ctx.allocate_output(static_cast<size_t>(sum_output_), summed.dtype(), summed.shape());
        std::memcpy(s.raw(), summed.raw(), summed.nbytes());
      }
    }
    const ir::Tensor& x = summed.defined() ? summed : ctx.input(0);
    if (residual && residual->dtype() != x.dtype())
      ctx.fail("the fused residual is {}, X is {}", ir::dtype_name(residual->dtype()),
               ir::dtype_name(x.dtype()));
    if (x.rank() == 0) ctx.fail("X must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    int64_t rows = 1;
    int64_t cols = 1;
    for (int64_t i = 0; i < x.rank(); ++i) (i < axis ? rows : cols) *= x.dim(i);
    const ir::Tensor& scale = ctx.input(1);
    if (scale.dtype() != x.dtype())
      ctx.fail("Scale has dtype {}, expected {} like X", ir::dtype_name(scale.dtype()),
               ir::dtype_name(x.dtype()));
    if (ctx.has_input(2) && ctx.input(2).dtype() != x.dtype())
      ctx.fail("B has dtype {}, expected {} like X", ir::dtype_name(ctx.input(2).dtype()),
               ir::dtype_name(x.dtype()));
    std::vector<int64_t> stats_shape = x.shape();
    for (int64_t i = axis; i < x.rank(); ++i) stats_shape[static_cast<size_t>(i)] = 1;
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    // Beside a residual sum, outputs 1 and 2 are unread placeholders.
    const bool stats = sum_output_ < 0;
    ir::Tensor* mean_out =
        stats && ctx.num_outputs() > 1 ? &ctx.allocate_output(1, stash_, stats_shape) : nullptr;
    ir::Tensor* inv_out =
        stats && ctx.num_outputs() > 2 ? &ctx.allocate_output(2, stash_, stats_shape) : nullptr;
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      if (stash_ == DType::Float64 || std::is_same_v<T, double>) {
        run_typed<T, double>(ctx, x, residual, axis, rows, cols, y, mean_out, inv_out, sum_out);
      } else {
        run_typed<T, float>(ctx, x, residual, axis, rows, cols, y, mean_out, inv_out, sum_out);
      }
    });
  }

 private:
  template <typename T, typename C>
  void run_typed(const runtime::KernelContext& ctx, const ir::Tensor& x,
                 const ir::Tensor* residual_t, int64_t axis, int64_t rows, int64_t cols,
                 ir::Tensor& y, ir::Tensor* mean_out, ir::Tensor* inv_out,
                 ir::Tensor* sum_t) const {
    size_t first_scale = static_cast<size_t>(axis);
    const ir::Tensor& scale_t = ctx.input(1);
    bool has_bias = ctx.has_input(2);
    if (!constant_before(scale_t, x.shape(), first_scale) ||
        (has_bias && !constant_before(ctx.input(2), x.shape(), first_scale)))
      first_scale = 0;
    std::vector<C> scale = expand_to<C>(ctx, scale_t, x.shape(), first_scale, "Scale");
    std::vector<C> bias = has_bias ? expand_to<C>(ctx, ctx.input(2), x.shape(), first_scale, "B")
                                   : std::vector<C>(scale.size(), C(0));
    bool per_row = first_scale == 0 && axis > 0;
    const T* in = x.data<T>();
    const T* residual = residual_t ? residual_t->data<T>() : nullptr;
    T* sum_out = sum_t ? sum_t->data<T>() : nullptr;  // only with a residual of X's shape
    T* out = y.data<T>();
    std::vector<C> means(mean_out || inv_out ? static_cast<size_t>(rows) : 0);
    std::vector<C> invs(means.size());
    C eps = static_cast<C>(epsilon_);
    parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(cols, 1)), ctx.num_threads(),
                 [&](int64_t b, int64_t e) {
                   std::vector<C> buf;
                   if (residual) buf.resize(static_cast<size_t>(cols));
                   for (int64_t r = b; r < e; ++r) {
                     const C* p = nullptr;
                     if (residual) {
                       sum_row(in + r * cols, residual + r * cols, cols, buf.data(),
                               sum_out ? sum_out + r * cols : nullptr);
                       p = buf.data();
                     } else {
                       p = as_compute<C>(in + r * cols, cols, buf);
                     }
                     const auto [mean, inv] = mean_inv_std(p, cols, eps);
                     const C* sc = scale.data() + (per_row ? r * cols : 0);
                     const C* bs = bias.data() + (per_row ? r * cols : 0);
                     T* q = out + r * cols;
#pragma omp simd
                     for (int64_t j = 0; j < cols; ++j)
                       q[j] = convert<T>((p[j] - mean) * inv * sc[j] + bs[j]);
                     if (!means.empty()) {
                       means[static_cast<size_t>(r)] = mean;
                       invs[static_cast<size_t>(r)] = inv;
                     }
                   }
                 });
    if (mean_out) store_values(ctx, *mean_out, std::vector<double>(means.begin(), means.end()));
    if (inv_out) store_values(ctx, *inv_out, std::vector<double>(invs.begin(), invs.end()));
  }

  int64_t axis_;
  float epsilon_;
  DType stash_;
  int sum_output_ = -1;  // the output a ResidualSum writes the sum into; -1: none
};

// outer x len x inner view around an axis.
void split_shape(const std::vector<int64_t>& shape, int64_t axis, int64_t& outer, int64_t& len,
                 int64_t& inner) {
  outer = len = inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    (i < axis ? outer : i == axis ? len : inner) *= shape[static_cast<size_t>(i)];
}

class LpNormKernel : public runtime::Kernel {
 public:
  explicit LpNormKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", -1)), p_(init.node.attr_int("p", 2)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    int64_t outer, len, inner;
    split_shape(x.shape(), axis, outer, len, inner);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      parallel_for(outer * inner, std::max<int64_t>(1, 16384 / len), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     for (int64_t t = b; t < e; ++t) {
                       int64_t base = (t / inner) * len * inner + t % inner;
                       C norm = 0;
                       for (int64_t j = 0; j < len; ++j) {
                         C v = convert<C>(in[base + j * inner]);
                         norm += p_ == 1 ? std::abs(v) : v * v;
                       }
                       if (p_ == 2) norm = std::sqrt(norm);
                       // An all-zero slice stays zero instead of becoming 0/0.
                       C inv = norm == C(0) ? C(0) : C(1) / norm;
                       for (int64_t j = 0; j < len; ++j)
                         out[base + j * inner] = convert<T>(convert<C>(in[base + j * inner]) * inv);
                     }
                   });
    });
  }

 private:
  int64_t axis_;
  int64_t p_;
};

class LrnKernel : public runtime::Kernel {
 public:
  explicit LrnKernel(const runtime::KernelInit& init)
      : alpha_(init.node.attr_float("alpha", 1e-4f)),
        beta_(init.node.attr_float("beta", 0.75f)),
        bias_(init.node.attr_float("bias", 1.0f)),
        size_(init.node.attr_int("size")) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("input must have rank >= 2, got {}", x.rank());
    if (size_ <= 0) ctx.fail("size must be positive, got {}", size_);
    int64_t c = x.dim(1);
    int64_t spatial = 1;
    for (int64_t i = 2; i < x.rank(); ++i) spatial *= x.dim(i);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    int64_t before = (size_ - 1) / 2;
    int64_t after = size_ - 1 - before;
    // A window wider than the channels sums them all: the work per plane is bounded by c, so
    // the grain uses the clamped width (size may be anything up to 2^63 in a model file).
    int64_t window = std::min(size_, c);
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      C scale = static_cast<C>(alpha_) / static_cast<C>(size_);
      int64_t work = std::max<int64_t>(1, spatial) * window;  // <= numel: cannot overflow
      parallel_for(x.dim(0) * c, std::max<int64_t>(1, 4096 / work), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     for (int64_t plane = b; plane < e; ++plane) {
                       int64_t n = plane / c;
                       int64_t ch = plane % c;
                       int64_t lo = std::max<int64_t>(0, ch - before);
                       int64_t hi = std::min<int64_t>(c - 1, ch + after);
                       for (int64_t s = 0; s < spatial; ++s) {
                         C sum = 0;
                         for (int64_t k = lo; k <= hi; ++k) {
                           C v = convert<C>(in[(n * c + k) * spatial + s]);
                           sum += v * v;
                         }
                         C v = convert<C>(in[plane * spatial + s]);
                         out[plane * spatial + s] =
                             convert<T>(v / std::pow(static_cast<C>(bias_) + scale * sum,
                                                     static_cast<C>(beta_)));
                       }
                     }
                   });
    });
  }

 private:
  float alpha_;
  float beta_;
  float bias_;
  int64_t size_;
};

class MeanVarianceNormKernel : public runtime::Kernel {
 public:
  explicit MeanVarianceNormKernel(const runtime::KernelInit& init)
      : axes_(init.node.attr_ints("axes", {0, 2, 3})) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    std::vector<bool> reduced = axes_mask(ctx, axes_, x.rank());
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    const ReductionWalk walk = reduction_walk(x.shape(), reduced);
    const int64_t count = static_cast<int64_t>(walk.offsets.size());
    const int64_t kept = x.numel() / count;
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      // The ONNX function body: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9).
      const C kEpsilon = static_cast<C>(1e-9);
      parallel_for(kept, std::max<int64_t>(1, 16384 / count), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     for (int64_t k = b; k < e; ++k) {
                       const int64_t base = walk.base(k);
                       C sum = 0;
                       for (int64_t o : walk.offsets) sum += convert<C>(in[base + o]);
                       C mean = sum / static_cast<C>(count);
                       C sq = 0;
                       for (int64_t o : walk.offsets) {
                         C dv = convert<C>(in[base + o]) - mean;
                         sq += dv * dv;
                       }
                       C inv = C(1) / (std::sqrt(sq / static_cast<C>(count)) + kEpsilon);
                       for (int64_t o : walk.offsets)
                         out[base + o] = convert<T>((convert<C>(in[base + o]) - mean) * inv);
                     }
                   });
    });
  }

 private:
  std::vector<int64_t> axes_;
};

// Training-mode dropout with a ratio above 0 needs a random generator, which this runtime does
// not have. Refused here when the inputs say so at compile time; run() checks the rest.
runtime::Support check_dropout(const ir::Node& node) {
  const ir::Value* training = node.input(2);
  if (!training || !training->is_constant()) return runtime::Support::yes();
  const ir::Tensor& t = training->constant();
  if (t.numel() != 1 || t.scalar_as_int(0) == 0) return runtime::Support::yes();
  const ir::Value* ratio = node.input(1);
  if (ratio && ratio->is_constant() && ratio->constant().numel() == 1 &&
      ratio->constant().scalar_as_double(0) == 0.0)
    return runtime::Support::yes();
  return runtime::Support::no(
      "Dropout in training mode with a ratio above 0 needs random numbers, which the CPU "
      "backend does not generate");
}

class DropoutKernel : public runtime::Kernel {
 public:
  explicit DropoutKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (ctx.has_input(2)) {
      const ir::Tensor& t = ctx.input(2);
      if (t.dtype() != DType::Bool || t.numel() != 1)
        ctx.fail("training_mode must be a bool scalar");
      double ratio = 0.5;
      if (ctx.has_input(1)) {
        const ir::Tensor& r = ctx.input(1);
        if (!ir::dtype_is_float(r.dtype()) || r.numel() != 1)
          ctx.fail("ratio must be a float scalar");
        ratio = r.scalar_as_double(0);
        if (!(ratio >= 0.0 && ratio < 1.0)) ctx.fail("ratio must be in [0, 1), got {}", ratio);
      }
      if (t.data<bool>()[0] && ratio != 0.0)
        ctx.fail(
            "training mode with ratio {} needs random numbers, which the CPU backend does "
            "not generate",
            ratio);
    }
    ctx.set_output(0, ir::Datum(x));
    if (ctx.num_outputs() > 1) {
      ir::Tensor& mask = ctx.allocate_output(1, DType::Bool, x.shape());
      std::fill(mask.data<bool>(), mask.data<bool>() + mask.numel(), true);
    }
  }
};

}  // namespace

void register_normalization_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  auto floats = dtypes_of(FloatTypes{});
  r.add<BatchNormKernel>(OpKind::BatchNormalization, floats);
  r.add<InstanceNormKernel>(OpKind::InstanceNormalization, floats);
  r.add<LayerNormKernel>(OpKind::LayerNormalization, floats);
  r.add<GroupNormKernel>(OpKind::GroupNormalization, floats);
  r.add<LpNormKernel>(OpKind::LpNormalization, floats);
  r.add<LrnKernel>(OpKind::LRN, floats);
  r.add<MeanVarianceNormKernel>(OpKind::MeanVarianceNormalization, floats);
  r.add(runtime::KernelDef{OpKind::Dropout, floats, 0, check_dropout,
                           runtime::make_factory<DropoutKernel>()});
  register_softmax_kernels(r);
}

}  // namespace switchyard::cpu
