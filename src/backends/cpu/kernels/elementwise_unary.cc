// CPU kernels of the elementwise family: unary math, activations and Clip. Each op is a small
// functor over the compute type (float for half types); one kernel template runs them all.
#include <limits>
#include <string>

#include "backends/cpu/kernels/dnnl_util.h"
#include "backends/cpu/kernels/elementwise_internal.h"

namespace switchyard::cpu {
namespace {

template <typename T>
using C = compute_t<T>;

/// Negation that wraps for the most negative signed integer instead of overflowing.
template <typename V>
V negate(V x) {
  if constexpr (std::is_integral_v<V>) {
    return static_cast<V>(0u - static_cast<std::make_unsigned_t<V>>(x));
  } else {
    return -x;
  }
}

ir::DType declared_dtype(const ir::Node& node, size_t input) {
  const ir::Value* v = node.input(input);
  return v && v->type().is_tensor() ? v->type().dtype : DType::Undefined;
}

/// Base of the op functors: no attributes, output dtype = input dtype, cheap.
struct UnaryOp {
  static constexpr bool kBoolOut = false;
  static constexpr int64_t kGrain = kMathGrain;
  explicit UnaryOp(const ir::Node&) {}
};

#define SY_FLOAT_UNARY(Name, expr) \
  struct Name##Op : UnaryOp {      \
    using UnaryOp::UnaryOp;        \
    template <typename V>          \
    V operator()(V x) const {      \
      return expr;                 \
    }                              \
  };
SY_FLOAT_UNARY(Acos, std::acos(x))
SY_FLOAT_UNARY(Acosh, std::acosh(x))
SY_FLOAT_UNARY(Asin, std::asin(x))
SY_FLOAT_UNARY(Asinh, std::asinh(x))
SY_FLOAT_UNARY(Atan, std::atan(x))
SY_FLOAT_UNARY(Atanh, std::atanh(x))
SY_FLOAT_UNARY(Cos, std::cos(x))
SY_FLOAT_UNARY(Cosh, std::cosh(x))
SY_FLOAT_UNARY(Erf, std::erf(x))
SY_FLOAT_UNARY(Exp, std::exp(x))
SY_FLOAT_UNARY(Log, std::log(x))
SY_FLOAT_UNARY(Sin, std::sin(x))
SY_FLOAT_UNARY(Sinh, std::sinh(x))
SY_FLOAT_UNARY(Sqrt, std::sqrt(x))
SY_FLOAT_UNARY(Tan, std::tan(x))
SY_FLOAT_UNARY(Tanh, std::tanh(x))
SY_FLOAT_UNARY(Ceil, std::ceil(x))
SY_FLOAT_UNARY(Floor, std::floor(x))
// Round: half to even, as the spec says (nearbyint in the default rounding mode).
SY_FLOAT_UNARY(Round, std::nearbyint(x))
SY_FLOAT_UNARY(Softsign, x / (V(1) + std::abs(x)))
SY_FLOAT_UNARY(HardSwish, x* std::max(V(0), std::min(V(1), x / V(6) + V(0.5))))
#undef SY_FLOAT_UNARY

template <typename V>
V softplus(V x) {
  return x > V(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

struct SigmoidOp : UnaryOp {
  using UnaryOp::UnaryOp;
  template <typename V>
  V operator()(V x) const {
    return sigmoid(x);
  }
};

struct SoftplusOp : UnaryOp {
  using UnaryOp::UnaryOp;
  template <typename V>
  V operator()(V x) const {
    return softplus(x);
  }
};

struct MishOp : UnaryOp {
  using UnaryOp::UnaryOp;
  template <typename V>
  V operator()(V x) const {
    return x * std::tanh(softplus(x));
  }
};

struct ReciprocalOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr int64_t kGrain = kCheapGrain;
  template <typename V>
  V operator()(V x) const {
    return V(1) / x;
  }
};

struct AbsOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr int64_t kGrain = kCheapGrain;
  template <typename V>
  V operator()(V x) const {
    if constexpr (std::is_unsigned_v<V>) {
      return x;
    } else if constexpr (std::is_integral_v<V>) {
      return x < 0 ? negate(x) : x;
    } else {
      return std::abs(x);
    }
  }
};

struct NegOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr int64_t kGrain = kCheapGrain;
  template <typename V>
  V operator()(V x) const {
    return negate(x);
  }
};

struct SignOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr int64_t kGrain = kCheapGrain;
  template <typename V>
  V operator()(V x) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (std::isnan(x)) return x;
    }
    return static_cast<V>((V(0) < x) - (x < V(0)));
  }
};

struct NotOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr int64_t kGrain = kCheapGrain;
  bool operator()(bool x) const { return !x; }
};

struct BitwiseNotOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr int64_t kGrain = kCheapGrain;
  template <typename V>
  V operator()(V x) const {
    return static_cast<V>(~x);
  }
};

struct IsNaNOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr bool kBoolOut = true;
  static constexpr int64_t kGrain = kCheapGrain;
  template <typename V>
  bool operator()(V x) const {
    return std::isnan(x);
  }
};

struct IsInfOp : UnaryOp {
  static constexpr bool kBoolOut = true;
  static constexpr int64_t kGrain = kCheapGrain;
  bool negative_;
  bool positive_;
  explicit IsInfOp(const ir::Node& n)
      : UnaryOp(n),
        negative_(n.attr_int("detect_negative", 1) != 0),
        positive_(n.attr_int("detect_positive", 1) != 0) {}
  template <typename V>
  bool operator()(V x) const {
    return std::isinf(x) && (x > V(0) ? positive_ : negative_);
  }
};

// The activations below compare so that NaN falls through to the branch that returns it, as
// numpy's maximum/clip do: an activation never turns NaN into a number.
struct ReluOp : UnaryOp {
  using UnaryOp::UnaryOp;
  static constexpr int64_t kGrain = kCheapGrain;
  template <typename V>
  V operator()(V x) const {
    return !(x <= V(0)) ? x : V(0);
  }
};

struct LeakyReluOp : UnaryOp {
  static constexpr int64_t kGrain = kCheapGrain;
  float alpha_;
  explicit LeakyReluOp(const ir::Node& n) : UnaryOp(n), alpha_(n.attr_float("alpha", 0.01f)) {}
  template <typename V>
  V operator()(V x) const {
    return x < V(0) ? V(alpha_) * x : x;
  }
};

struct ThresholdedReluOp : UnaryOp {
  static constexpr int64_t kGrain = kCheapGrain;
  float alpha_;
  explicit ThresholdedReluOp(const ir::Node& n) : UnaryOp(n), alpha_(n.attr_float("alpha", 1.0f)) {}
  template <typename V>
  V operator()(V x) const {
    return !(x <= V(alpha_)) ? x : V(0);
  }
};

struct HardSigmoidOp : UnaryOp {
  static constexpr int64_t kGrain = kCheapGrain;
  float alpha_;
  float beta_;
  explicit HardSigmoidOp(const ir::Node& n)
      : UnaryOp(n), alpha_(n.attr_float("alpha", 0.2f)), beta_(n.attr_float("beta", 0.5f)) {}
  template <typename V>
  V operator()(V x) const {
    return std::max(std::min(V(alpha_) * x + V(beta_), V(1)), V(0));
  }
};

struct EluOp : UnaryOp {
  float alpha_;
  explicit EluOp(const ir::Node& n) : UnaryOp(n), alpha_(n.attr_float("alpha", 1.0f)) {}
  template <typename V>
  V operator()(V x) const {
    return x < V(0) ? V(alpha_) * std::expm1(x) : x;
  }
};

struct CeluOp : UnaryOp {
  float alpha_;
  explicit CeluOp(const ir::Node& n) : UnaryOp(n), alpha_(n.attr_float("alpha", 1.0f)) {}
  template <typename V>
  V operator()(V x) const {
    return std::max(x, V(0)) + std::min(V(alpha_) * std::expm1(x / V(alpha_)), V(0));
  }
};

struct SeluOp : UnaryOp {
  float alpha_;
  float gamma_;
  explicit SeluOp(const ir::Node& n)
      : UnaryOp(n),
        alpha_(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma_(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <typename V>
  V operator()(V x) const {
    return x > V(0) ? V(gamma_) * x : V(gamma_) * (V(alpha_) * std::exp(x) - V(alpha_));
  }
};

struct GeluOp : UnaryOp {
  bool tanh_;
  explicit GeluOp(const ir::Node& n)
      : UnaryOp(n), tanh_(n.attr_string("approximate", "none") == "tanh") {}
  template <typename V>
  V operator()(V x) const {
    if (tanh_) {
      const V k = V(0.7978845608028654);  // sqrt(2/pi)
      return V(0.5) * x * (V(1) + std::tanh(k * (x + V(0.044715) * x * x * x)));
    }
    return V(0.5) * x * (V(1) + std::erf(x * V(0.7071067811865476)));
  }
};

struct ShrinkOp : UnaryOp {
  static constexpr int64_t kGrain = kCheapGrain;
  float bias_;
  float lambd_;
  explicit ShrinkOp(const ir::Node& n)
      : UnaryOp(n), bias_(n.attr_float("bias", 0.0f)), lambd_(n.attr_float("lambd", 0.5f)) {}
  template <typename V>
  V operator()(V x) const {
    // Integers compare and shift in double so that fractional bias and lambd mean what they say.
    using W = std::conditional_t<std::is_integral_v<V>, double, V>;
    W w = static_cast<W>(x);
    if (w < -W(lambd_)) return static_cast<V>(w + W(bias_));
    if (w > W(lambd_)) return static_cast<V>(w - W(bias_));
    return V(0);
  }
};

/// One kernel for every unary op: resolves the typed loop from the declared input dtype once,
/// and again at run time only if the actual input's dtype differs.
template <typename Op, typename Types>
class UnaryKernel final : public runtime::Kernel {
 public:
  using Fn = void (*)(const Op&, const void*, void*, int64_t, int);

  explicit UnaryKernel(const runtime::KernelInit& init)
      : op_(init.node), dtype_(declared_dtype(init.node, 0)), fn_(select(dtype_, init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    Fn fn = x.dtype() == dtype_ && fn_ ? fn_ : select(x.dtype(), ctx.node());
    ir::Tensor& y = ctx.allocate_output(0, Op::kBoolOut ? DType::Bool : x.dtype(), x.shape());
    fn(op_, x.raw(), y.raw(), x.numel(), ctx.num_threads());
  }

 private:
  static Fn select(DType dtype, const ir::Node& node) {
    Fn fn = nullptr;
    if (dtype == DType::Undefined) return fn;
    dispatch(Types{}, dtype, node, [&](auto tag) { fn = &apply<decltype(tag)>; });
    return fn;
  }

  template <typename T>
  static void apply(const Op& op, const void* in, void* out, int64_t n, int threads) {
    using O = std::conditional_t<Op::kBoolOut, bool, T>;
    const T* x = static_cast<const T*>(in);
    O* y = static_cast<O*>(out);
    parallel_for(n, Op::kGrain, threads, [&](int64_t begin, int64_t end) {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) y[i] = convert<O>(op(static_cast<C<T>>(x[i])));
    });
  }

  Op op_;
  DType dtype_;
  Fn fn_;
};

/// A transcendental unary op whose float32 form runs as a oneDNN eltwise primitive: JIT code
/// that oneDNN picks at run time for the machine (AVX-512 or AVX2; ONEDNN_MAX_CPU_ISA caps it),
/// vectorized exp/tanh/erf where the loop of UnaryKernel calls the scalar libm functions (an
/// EfficientNet's 49 sigmoids took 40 of its 55 ms). Results agree with the loop to a few ulps,
/// NaN and infinities included (tests/backends/cpu/elementwise_test.cc). Small tensors and other
/// dtypes take the loop: a primitive call costs a few microseconds.
template <typename Op, typename Types>
class EltwiseUnaryKernel final : public runtime::Kernel {
 public:
  using AlgorithmOf = dnnl::algorithm (*)(const ir::Node&, float& alpha, float& beta);
  EltwiseUnaryKernel(const runtime::KernelInit& init, AlgorithmOf algorithm_of) : loop_(init) {
    algorithm_ = algorithm_of(init.node, alpha_, beta_);
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.dtype() != DType::Float32 || x.numel() < kMinElements) return loop_.run(ctx);
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get({x.numel()}, [&] {
      auto md = plain_desc({x.numel()}, dnnl::memory::data_type::f32);
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm_, md, alpha_,
                                       beta_);
      auto p = std::make_shared<EltwisePlan>();
      p->md = md;
      p->primitive = dnnl::eltwise_forward(
          dnnl::eltwise_forward::primitive_desc(desc, user_scratchpad_attr(), dnnl_engine()));
      return p;
    });
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    execute_primitive(
        ctx, plan->primitive,
        {{DNNL_ARG_SRC, wrap_memory(x, plan->md)}, {DNNL_ARG_DST, wrap_memory(y, plan->md)}});
  }

 private:
  static constexpr int64_t kMinElements = 2048;
  struct EltwisePlan {
    dnnl::memory::desc md;
    dnnl::eltwise_forward primitive;
  };
  UnaryKernel<Op, Types> loop_;
  dnnl::algorithm algorithm_;
  float alpha_ = 0, beta_ = 0;
  PlanCache<EltwisePlan> cache_;
};

/// Clip: min and max are optional scalar inputs read at run time.
class ClipKernel final : public runtime::Kernel {
 public:
  explicit ClipKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    dispatch(NumericTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using V = C<T>;
      V lo = std::numeric_limits<V>::lowest();
      V hi = std::numeric_limits<V>::max();
      if constexpr (std::is_floating_point_v<V>) {
        lo = -std::numeric_limits<V>::infinity();
        hi = std::numeric_limits<V>::infinity();
      }
      read_bound<T>(ctx, 1, "min", lo);
      read_bound<T>(ctx, 2, "max", hi);
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      parallel_for(x.numel(), kCheapGrain, ctx.num_threads(), [&](int64_t begin, int64_t end) {
#pragma omp simd
        for (int64_t i = begin; i < end; ++i)
          dst[i] = convert<T>(std::min(std::max(static_cast<V>(src[i]), lo), hi));
      });
    });
  }

 private:
  template <typename T>
  static void read_bound(const runtime::KernelContext& ctx, size_t i, const char* what,
                         C<T>& bound) {
    if (!ctx.has_input(i)) return;
    const ir::Tensor& t = ctx.input(i);
    if (t.dtype() != ctx.input(0).dtype())
      ctx.fail("{} has dtype {}, expected {} like the input", what, ir::dtype_name(t.dtype()),
               ir::dtype_name(ctx.input(0).dtype()));
    if (t.numel() != 1 || t.rank() > 1)
      ctx.fail("{} must be a scalar, got shape {}", what, ir::shape_to_string(t.shape()));
    bound = static_cast<C<T>>(t.data<T>()[0]);
  }
};

using SignedTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t>;

template <typename Op, typename Types>
void add_unary(runtime::KernelRegistry& r, ops::OpKind kind) {
  r.add<UnaryKernel<Op, Types>>(kind, dtypes_of(Types{}));
}

// The ops whose float32 form goes through oneDNN (EltwiseUnaryKernel), with the algorithm.
template <typename Op, typename Types>
void add_eltwise(runtime::KernelRegistry& r, ops::OpKind kind,
                 typename EltwiseUnaryKernel<Op, Types>::AlgorithmOf algorithm_of) {
  r.add(runtime::KernelDef{
      kind,
      dtypes_of(Types{}),
      0,
      {},
      [algorithm_of](const runtime::KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
        return std::make_unique<EltwiseUnaryKernel<Op, Types>>(init, algorithm_of);
      }});
}

}  // namespace

void register_elementwise_unary_kernels(runtime::KernelRegistry& r) {
  using K = ops::OpKind;
  add_unary<AbsOp, NumericTypes>(r, K::Abs);
  add_unary<AcosOp, FloatTypes>(r, K::Acos);
  add_unary<AcoshOp, FloatTypes>(r, K::Acosh);
  add_unary<AsinOp, FloatTypes>(r, K::Asin);
  add_unary<AsinhOp, FloatTypes>(r, K::Asinh);
  add_unary<AtanOp, FloatTypes>(r, K::Atan);
  add_unary<AtanhOp, FloatTypes>(r, K::Atanh);
  add_unary<CeilOp, FloatTypes>(r, K::Ceil);
  add_unary<CosOp, FloatTypes>(r, K::Cos);
  add_unary<CoshOp, FloatTypes>(r, K::Cosh);
  add_unary<ErfOp, FloatTypes>(r, K::Erf);
  add_unary<ExpOp, FloatTypes>(r, K::Exp);  // oneDNN's exp turns NaN into inf: the loop keeps it
  add_unary<FloorOp, FloatTypes>(r, K::Floor);
  add_unary<IsInfOp, FloatTypes>(r, K::IsInf);
  add_unary<IsNaNOp, FloatTypes>(r, K::IsNaN);
  add_unary<LogOp, FloatTypes>(r, K::Log);
  add_unary<NegOp, SignedTypes>(r, K::Neg);
  add_unary<NotOp, TypeList<bool>>(r, K::Not);
  add_unary<ReciprocalOp, FloatTypes>(r, K::Reciprocal);
  add_unary<RoundOp, FloatTypes>(r, K::Round);
  add_unary<SignOp, NumericTypes>(r, K::Sign);
  add_unary<SinOp, FloatTypes>(r, K::Sin);
  add_unary<SinhOp, FloatTypes>(r, K::Sinh);
  add_unary<SqrtOp, FloatTypes>(r, K::Sqrt);
  add_unary<TanOp, FloatTypes>(r, K::Tan);
  add_eltwise<TanhOp, FloatTypes>(
      r, K::Tanh, [](const ir::Node&, float&, float&) { return dnnl::algorithm::eltwise_tanh; });
  add_unary<BitwiseNotOp, IntTypes>(r, K::BitwiseNot);
  add_unary<CeluOp, FloatTypes>(r, K::Celu);
  add_eltwise<EluOp, FloatTypes>(r, K::Elu, [](const ir::Node& n, float& alpha, float&) {
    alpha = n.attr_float("alpha", 1.0f);
    return dnnl::algorithm::eltwise_elu;
  });
  add_eltwise<GeluOp, FloatTypes>(r, K::Gelu, [](const ir::Node& n, float&, float&) {
    return n.attr_string("approximate", "none") == "tanh" ? dnnl::algorithm::eltwise_gelu_tanh
                                                          : dnnl::algorithm::eltwise_gelu_erf;
  });
  add_unary<HardSigmoidOp, FloatTypes>(r, K::HardSigmoid);
  add_eltwise<HardSwishOp, FloatTypes>(r, K::HardSwish, [](const ir::Node&, float&, float&) {
    return dnnl::algorithm::eltwise_hardswish;
  });
  add_unary<LeakyReluOp, FloatTypes>(r, K::LeakyRelu);
  add_eltwise<MishOp, FloatTypes>(
      r, K::Mish, [](const ir::Node&, float&, float&) { return dnnl::algorithm::eltwise_mish; });
  add_unary<ReluOp, SignedTypes>(r, K::Relu);
  add_unary<SeluOp, FloatTypes>(r, K::Selu);
  add_unary<ShrinkOp, NumericTypes>(r, K::Shrink);
  add_eltwise<SigmoidOp, FloatTypes>(r, K::Sigmoid, [](const ir::Node&, float&, float&) {
    return dnnl::algorithm::eltwise_logistic;
  });
  add_unary<SoftplusOp, FloatTypes>(r, K::Softplus);
  add_unary<SoftsignOp, FloatTypes>(r, K::Softsign);
  add_unary<ThresholdedReluOp, FloatTypes>(r, K::ThresholdedRelu);
  r.add<ClipKernel>(K::Clip, dtypes_of(NumericTypes{}));
}

}  // namespace switchyard::cpu
