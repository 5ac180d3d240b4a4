// CPU kernels of the elementwise family with numpy broadcasting: binary arithmetic, comparisons,
// logic and bit ops, Pow, Mod, BitShift, PRelu, the variadic Max/Min/Sum/Mean, and Where.
// Each (op, dtype) compiles to one row function with contiguous and scalar-operand loops; the
// driver picks same-shape and scalar fast paths, else walks a merged-dims BroadcastPlan.
#include <cstring>
#include <string>

#include "backends/cpu/kernels/elementwise_internal.h"

namespace switchyard::cpu {
namespace {

template <typename T>
using C = compute_t<T>;

ir::DType declared_dtype(const ir::Node& node, size_t input) {
  const ir::Value* v = node.input(input);
  return v && v->type().is_tensor() ? v->type().dtype : DType::Undefined;
}

/// Integer arithmetic in the unsigned type of at least int's width: wraps instead of overflowing.
template <typename V>
using wide_unsigned_t = std::make_unsigned_t<decltype(V{} + 0u)>;

/// A row of n outputs: bit 0 of `mode` says a advances along the row, bit 1 that b does (an
/// operand that does not advance is one broadcast value).
using BinaryRow = void (*)(const void* a, const void* b, void* out, int64_t n, int mode);

template <typename Op, typename A, typename B, typename O>
void binary_row(const void* pa, const void* pb, void* po, int64_t n, int mode) {
  const A* a = static_cast<const A*>(pa);
  const B* b = static_cast<const B*>(pb);
  O* o = static_cast<O*>(po);
  const Op op{};
  using VA = C<A>;
  using VB = C<B>;
  switch (mode) {
    case 3:
#pragma omp simd
      for (int64_t i = 0; i < n; ++i)
        o[i] = convert<O>(op(static_cast<VA>(a[i]), static_cast<VB>(b[i])));
      break;
    case 1: {
      const VB bv = static_cast<VB>(b[0]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(op(static_cast<VA>(a[i]), bv));
      break;
    }
    case 2: {
      const VA av = static_cast<VA>(a[0]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) o[i] = convert<O>(op(av, static_cast<VB>(b[i])));
      break;
    }
    default: {
      const O v = convert<O>(op(static_cast<VA>(a[0]), static_cast<VB>(b[0])));
      for (int64_t i = 0; i < n; ++i) o[i] = v;
    }
  }
}

/// String rows (Equal on strings): no compute type conversion.
template <typename Op>
void string_row(const void* pa, const void* pb, void* po, int64_t n, int mode) {
  const auto* a = static_cast<const std::string*>(pa);
  const auto* b = static_cast<const std::string*>(pb);
  bool* o = static_cast<bool*>(po);
  const Op op{};
  for (int64_t i = 0; i < n; ++i) o[i] = op(a[(mode & 1) ? i : 0], b[(mode & 2) ? i : 0]);
}

/// Writes op(a, b) into `out` (already allocated with the broadcast shape; may alias a).
void apply_binary(const ir::Tensor& a, const ir::Tensor& b, ir::Tensor& out, BinaryRow row,
                  int threads, int64_t grain) {
  const size_t ea = ir::dtype_size(a.dtype());
  const size_t eb = ir::dtype_size(b.dtype());
  const size_t eo = ir::dtype_size(out.dtype());
  const char* pa = static_cast<const char*>(a.raw());
  const char* pb = static_cast<const char*>(b.raw());
  char* po = static_cast<char*>(out.raw());
  const int64_t n = out.numel();
  if (n == 0) return;
  const bool a_full = a.numel() == n;
  const bool b_full = b.numel() == n;
  int fast_mode = -1;
  if (a_full && b_full) {
    fast_mode = 3;
  } else if (a_full && b.numel() == 1) {
    fast_mode = 1;
  } else if (b_full && a.numel() == 1) {
    fast_mode = 2;
  }
  if (fast_mode >= 0) {
    parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
      row(pa + ((fast_mode & 1) ? begin * ea : 0), pb + ((fast_mode & 2) ? begin * eb : 0),
          po + begin * eo, end - begin, fast_mode);
    });
    return;
  }
  BroadcastPlan plan({a.shape(), b.shape()}, out.shape());
  const int mode = (plan.inner_contiguous(0) ? 1 : 0) | (plan.inner_contiguous(1) ? 2 : 0);
  parallel_for(n, grain, threads, [&](int64_t begin, int64_t end) {
    plan.for_range(begin, end, [&](const int64_t* off, int64_t o, int64_t count) {
      row(pa + off[0] * ea, pb + off[1] * eb, po + o * eo, count, mode);
    });
  });
}

// ---- op functors: V is the compute type (float for half types) ----

struct BinaryOp {
  static constexpr bool kBoolOut = false;
  static constexpr bool kIntegerDivisor = false;  // integer inputs need a nonzero divisor
};

struct AddOp : BinaryOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      return static_cast<V>(static_cast<wide_unsigned_t<V>>(a) +
                            static_cast<wide_unsigned_t<V>>(b));
    } else {
      return a + b;
    }
  }
};

struct SubOp : BinaryOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      return static_cast<V>(static_cast<wide_unsigned_t<V>>(a) -
                            static_cast<wide_unsigned_t<V>>(b));
    } else {
      return a - b;
    }
  }
};

struct MulOp : BinaryOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V>) {
      return static_cast<V>(static_cast<wide_unsigned_t<V>>(a) *
                            static_cast<wide_unsigned_t<V>>(b));
    } else {
      return a * b;
    }
  }
};

/// Integer division truncates toward zero; INT_MIN / -1 wraps (x86 would trap).
struct DivOp : BinaryOp {
  static constexpr bool kIntegerDivisor = true;
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_integral_v<V> && std::is_signed_v<V>) {
      return b == -1 ? static_cast<V>(0u - static_cast<wide_unsigned_t<V>>(a))
                     : static_cast<V>(a / b);
    } else {
      return static_cast<V>(a / b);
    }
  }
};

/// fmod=1: the remainder takes the dividend's sign (C fmod); fmod=0: the divisor's (Python).
template <bool kFmod>
struct ModOp : BinaryOp {
  static constexpr bool kIntegerDivisor = true;
  template <typename V>
  V operator()(V a, V b) const {
    V r;
    if constexpr (std::is_floating_point_v<V>) {
      r = std::fmod(a, b);
    } else if constexpr (std::is_signed_v<V>) {
      r = b == -1 ? V(0) : static_cast<V>(a % b);
    } else {
      return static_cast<V>(a % b);
    }
    if constexpr (!kFmod && std::is_signed_v<V>) {
      if (r != V(0) && ((r < V(0)) != (b < V(0)))) r = static_cast<V>(r + b);
    }
    return r;
  }
};

/// Max and Min propagate NaN, as numpy's maximum and minimum do.
struct MaxOp : BinaryOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return a < b ? b : a;
  }
};

struct MinOp : BinaryOp {
  template <typename V>
  V operator()(V a, V b) const {
    if constexpr (std::is_floating_point_v<V>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return b < a ? b : a;
  }
};

template <bool kLeft>
struct BitShiftOp : BinaryOp {
  template <typename V>
  V operator()(V a, V b) const {
    if (b >= static_cast<V>(sizeof(V) * 8)) return V(0);
    return static_cast<V>(kLeft ? a << b : a >> b);
  }
};

#define SY_BIT_OP(Name, expr)      \
  struct Name##Op : BinaryOp {     \
    template <typename V>          \
    V operator()(V a, V b) const { \
      return static_cast<V>(expr); \
    }                              \
  };
SY_BIT_OP(BitwiseAnd, a& b)
SY_BIT_OP(BitwiseOr, a | b)
SY_BIT_OP(BitwiseXor, a ^ b)
SY_BIT_OP(And, a&& b)
SY_BIT_OP(Or, a || b)
SY_BIT_OP(Xor, a != b)
#undef SY_BIT_OP

#define SY_COMPARE_OP(Name, expr)                   \
  struct Name##Op : BinaryOp {                      \
    static constexpr bool kBoolOut = true;          \
    template <typename V>                           \
    bool operator()(const V& a, const V& b) const { \
      return expr;                                  \
    }                                               \
  };
SY_COMPARE_OP(Equal, a == b)
SY_COMPARE_OP(Greater, a > b)
SY_COMPARE_OP(GreaterOrEqual, a >= b)
SY_COMPARE_OP(Less, a < b)
SY_COMPARE_OP(LessOrEqual, a <= b)
#undef SY_COMPARE_OP

struct PReluOp : BinaryOp {
  template <typename V>
  V operator()(V x, V slope) const {
    if constexpr (std::is_unsigned_v<V>) {
      return x;
    } else {
      return x < V(0) ? MulOp{}(x, slope) : x;
    }
  }
};

/// Integer powers by squaring (wrapping); a negative exponent gives the truncated real result.
template <typename V, typename E>
V integer_pow(V base, E exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<V>) {
      if (base == -1) return (exp & 1) ? V(-1) : V(1);
    }
    return 0;
  }
  using U = wide_unsigned_t<V>;
  U result = 1;
  U b = static_cast<U>(base);
  auto e = static_cast<uint64_t>(exp);
  while (e) {
    if (e & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
    e >>= 1;
  }
  return static_cast<V>(result);
}

struct PowOp : BinaryOp {
  template <typename VA, typename VB>
  VA operator()(VA a, VB b) const {
    if constexpr (std::is_floating_point_v<VA>) {
      if constexpr (std::is_same_v<VA, VB>) {
        return std::pow(a, b);
      } else {
        return static_cast<VA>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      }
    } else if constexpr (std::is_integral_v<VB>) {
      return integer_pow(a, b);
    } else {
      return float_to_int<VA>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

/// Checks that both operands have the kernel's dtype family constraint: the same dtype.
void require_same_dtype(const runtime::KernelContext& ctx, const ir::Tensor& a, const ir::Tensor& b,
                        size_t ib) {
  if (a.dtype() != b.dtype())
    ctx.fail("input {} has dtype {}, but input 0 has {}; they must match", ib,
             ir::dtype_name(b.dtype()), ir::dtype_name(a.dtype()));
}

template <typename Op, typename Types>
BinaryRow select_row(DType dtype, const ir::Node& node) {
  BinaryRow row = nullptr;
  if (dtype == DType::Undefined) return row;
  if constexpr (std::is_same_v<Op, EqualOp>) {
    if (dtype == DType::String) return &string_row<Op>;
  }
  dispatch(Types{}, dtype, node, [&](auto tag) {
    using T = decltype(tag);
    row = &binary_row<Op, T, T, std::conditional_t<Op::kBoolOut, bool, T>>;
  });
  return row;
}

/// Binary ops whose inputs share one dtype. kUnidirectional: input 1 must broadcast to input
/// 0's shape, which is the output's (PRelu).
template <typename Op, typename Types, bool kUnidirectional = false>
class BinaryKernel final : public runtime::Kernel {
 public:
  explicit BinaryKernel(const runtime::KernelInit& init)
      : dtype_(declared_dtype(init.node, 0)), row_(select_row<Op, Types>(dtype_, init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    require_same_dtype(ctx, a, b, 1);
    BinaryRow row =
        a.dtype() == dtype_ && row_ ? row_ : select_row<Op, Types>(a.dtype(), ctx.node());
    std::vector<int64_t> shape = broadcast_or_fail(ctx, {a.shape(), b.shape()});
    if (kUnidirectional && shape != a.shape())
      ctx.fail("slope of shape {} does not broadcast to the input's shape {}",
               ir::shape_to_string(b.shape()), ir::shape_to_string(a.shape()));
    if (Op::kIntegerDivisor && ir::dtype_is_integer(b.dtype()) && has_zero_element(b))
      ctx.fail("integer division by zero: input 1 '{}' holds a zero",
               ctx.node().input(1) ? ctx.node().input(1)->name() : std::string("B"));
    ir::Tensor& out =
        ctx.allocate_output(0, Op::kBoolOut ? DType::Bool : a.dtype(), std::move(shape));
    apply_binary(a, b, out, row, ctx.num_threads(), kCheapGrain);
  }

 private:
  DType dtype_;
  BinaryRow row_;
};

using PowBaseTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t>;

/// Pow: the exponent may have another dtype; it is then widened to double (or int64 when both
/// are integers) so that only three row variants exist per base dtype. x^2 is x*x.
class PowKernel final : public runtime::Kernel {
 public:
  explicit PowKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    std::vector<int64_t> shape = broadcast_or_fail(ctx, {a.shape(), b.shape()});
    ir::Tensor& out = ctx.allocate_output(0, a.dtype(), std::move(shape));
    if (ir::dtype_is_float(a.dtype()) && b.numel() == 1 && b.dtype() != DType::String &&
        b.scalar_as_double(0) == 2.0) {
      BinaryRow square = select_row<MulOp, PowBaseTypes>(a.dtype(), ctx.node());
      apply_binary(a, a, out, square, ctx.num_threads(), kCheapGrain);
      return;
    }
    if (a.dtype() == b.dtype()) {
      apply_binary(a, b, out, select_row<PowOp, PowBaseTypes>(a.dtype(), ctx.node()),
                   ctx.num_threads(), kMathGrain);
      return;
    }
    bool integer_exponent = ir::dtype_is_integer(a.dtype()) && ir::dtype_is_integer(b.dtype());
    ir::Tensor wide(integer_exponent ? DType::Int64 : DType::Float64, b.shape());
    dispatch(NumericTypes{}, b.dtype(), ctx.node(), [&](auto tag) {
      using E = decltype(tag);
      for (int64_t i = 0; i < b.numel(); ++i) {
        if (integer_exponent) {
          wide.data<int64_t>()[i] = convert<int64_t>(b.data<E>()[i]);
        } else {
          wide.data<double>()[i] = convert<double>(b.data<E>()[i]);
        }
      }
    });
    BinaryRow row = nullptr;
    dispatch(PowBaseTypes{}, a.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      row = integer_exponent ? &binary_row<PowOp, T, int64_t, T> : &binary_row<PowOp, T, double, T>;
    });
    apply_binary(a, wide, out, row, ctx.num_threads(), kMathGrain);
  }
};

/// Max, Min, Sum, Mean over one or more inputs, folded pairwise into the output.
template <typename Op, typename Types, bool kMean = false>
class VariadicKernel final : public runtime::Kernel {
 public:
  explicit VariadicKernel(const runtime::KernelInit& init)
      : dtype_(declared_dtype(init.node, 0)), row_(select_row<Op, Types>(dtype_, init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& first = ctx.input(0);
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ir::Tensor& t = ctx.input(i);
      require_same_dtype(ctx, first, t, i);
      shapes.push_back(t.shape());
    }
    BinaryRow row =
        first.dtype() == dtype_ && row_ ? row_ : select_row<Op, Types>(first.dtype(), ctx.node());
    ir::Tensor& out = ctx.allocate_output(0, first.dtype(), broadcast_or_fail(ctx, shapes));
    if (ctx.num_inputs() == 1) {
      if (first.nbytes() > 0) std::memcpy(out.raw(), first.raw(), first.nbytes());
      return;
    }
    apply_binary(first, ctx.input(1), out, row, ctx.num_threads(), kCheapGrain);
    for (size_t i = 2; i < ctx.num_inputs(); ++i)
      apply_binary(out, ctx.input(i), out, row, ctx.num_threads(), kCheapGrain);
    if constexpr (kMean) {
      dispatch(Types{}, out.dtype(), ctx.node(), [&](auto tag) {
        using T = decltype(tag);
        T* p = out.data<T>();
        const C<T> count = static_cast<C<T>>(ctx.num_inputs());
        parallel_for(out.numel(), kCheapGrain, ctx.num_threads(), [&](int64_t begin, int64_t end) {
#pragma omp simd
          for (int64_t i = begin; i < end; ++i) p[i] = convert<T>(static_cast<C<T>>(p[i]) / count);
        });
      });
    }
  }

 private:
  DType dtype_;
  BinaryRow row_;
};

/// Where selects by element width: the values are copied, never interpreted.
template <typename U>
void where_rows(const bool* c, const U* x, const U* y, U* o, int64_t n, int mode) {
  if (mode == 7) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];
    return;
  }
  const int64_t sc = mode & 1, sx = (mode >> 1) & 1, sy = (mode >> 2) & 1;
  for (int64_t i = 0; i < n; ++i) o[i] = c[i * sc] ? x[i * sx] : y[i * sy];
}

class WhereKernel final : public runtime::Kernel {
 public:
  explicit WhereKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& c = ctx.input(0);
    const ir::Tensor& x = ctx.input(1);
    const ir::Tensor& y = ctx.input(2);
    if (c.dtype() != DType::Bool)
      ctx.fail("condition has dtype {}, expected bool", ir::dtype_name(c.dtype()));
    if (x.dtype() != y.dtype())
      ctx.fail("X has dtype {} but Y has {}; they must match", ir::dtype_name(x.dtype()),
               ir::dtype_name(y.dtype()));
    std::vector<int64_t> shape = broadcast_or_fail(ctx, {c.shape(), x.shape(), y.shape()});
    ir::Tensor& out = ctx.allocate_output(0, x.dtype(), shape);
    if (out.numel() == 0) return;
    auto run_typed = [&](auto tag) {
      using U = decltype(tag);
      const bool* pc = c.data<bool>();
      const U* px = static_cast<const U*>(x.raw());
      const U* py = static_cast<const U*>(y.raw());
      U* po = static_cast<U*>(out.raw());
      const int64_t n = out.numel();
      if (c.numel() == n && x.numel() == n && y.numel() == n) {
        parallel_for(n, kCheapGrain, ctx.num_threads(), [&](int64_t begin, int64_t end) {
          where_rows(pc + begin, px + begin, py + begin, po + begin, end - begin, 7);
        });
        return;
      }
      BroadcastPlan plan({c.shape(), x.shape(), y.shape()}, shape);
      const int mode = (plan.inner_contiguous(0) ? 1 : 0) | (plan.inner_contiguous(1) ? 2 : 0) |
                       (plan.inner_contiguous(2) ? 4 : 0);
      parallel_for(n, kCheapGrain, ctx.num_threads(), [&](int64_t begin, int64_t end) {
        plan.for_range(begin, end, [&](const int64_t* off, int64_t o, int64_t count) {
          where_rows(pc + off[0], px + off[1], py + off[2], po + o, count, mode);
        });
      });
    };
    dispatch_by_size(x.dtype(), ctx.node(), run_typed);
  }
};

template <typename K>
std::unique_ptr<runtime::Kernel> make_kernel(const runtime::KernelInit& init) {
  return std::make_unique<K>(init);
}

using NumericBoolTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t,
                                  int64_t, uint8_t, uint16_t, uint32_t, uint64_t, bool>;
using PReluTypes = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;

std::vector<DType> with_string(std::vector<DType> v) {
  v.push_back(DType::String);
  return v;
}

}  // namespace

ir::Tensor add_broadcast(const runtime::KernelContext& ctx, const ir::Tensor& a,
                         const ir::Tensor& b) {
  if (a.dtype() != b.dtype())
    ctx.fail("the fused sum's operands are {} and {}", ir::dtype_name(a.dtype()),
             ir::dtype_name(b.dtype()));
  ir::Tensor out(a.dtype(), broadcast_or_fail(ctx, {a.shape(), b.shape()}));
  apply_binary(a, b, out, select_row<AddOp, FloatTypes>(a.dtype(), ctx.node()), ctx.num_threads(),
               kCheapGrain);
  return out;
}

void register_elementwise_binary_kernels(runtime::KernelRegistry& r) {
  using K = ops::OpKind;
  r.add<BinaryKernel<AddOp, NumericTypes>>(K::Add, dtypes_of(NumericTypes{}));
  r.add<BinaryKernel<SubOp, NumericTypes>>(K::Sub, dtypes_of(NumericTypes{}));
  r.add<BinaryKernel<MulOp, NumericTypes>>(K::Mul, dtypes_of(NumericTypes{}));
  r.add<BinaryKernel<DivOp, NumericTypes>>(K::Div, dtypes_of(NumericTypes{}));
  r.add<PowKernel>(K::Pow, dtypes_of(PowBaseTypes{}));
  r.add(runtime::KernelDef{
      K::Mod, dtypes_of(NumericTypes{}), 0, {}, [](const runtime::KernelInit& init) {
        return init.node.attr_int("fmod", 0) != 0
                   ? make_kernel<BinaryKernel<ModOp<true>, NumericTypes>>(init)
                   : make_kernel<BinaryKernel<ModOp<false>, NumericTypes>>(init);
      }});
  r.add(runtime::KernelDef{
      K::BitShift, dtypes_of(UnsignedIntTypes{}), 0, {}, [](const runtime::KernelInit& init) {
        return init.node.attr_string("direction") == "LEFT"
                   ? make_kernel<BinaryKernel<BitShiftOp<true>, UnsignedIntTypes>>(init)
                   : make_kernel<BinaryKernel<BitShiftOp<false>, UnsignedIntTypes>>(init);
      }});
  r.add<BinaryKernel<BitwiseAndOp, IntTypes>>(K::BitwiseAnd, dtypes_of(IntTypes{}));
  r.add<BinaryKernel<BitwiseOrOp, IntTypes>>(K::BitwiseOr, dtypes_of(IntTypes{}));
  r.add<BinaryKernel<BitwiseXorOp, IntTypes>>(K::BitwiseXor, dtypes_of(IntTypes{}));
  r.add<BinaryKernel<AndOp, TypeList<bool>>>(K::And, {DType::Bool});
  r.add<BinaryKernel<OrOp, TypeList<bool>>>(K::Or, {DType::Bool});
  r.add<BinaryKernel<XorOp, TypeList<bool>>>(K::Xor, {DType::Bool});
  r.add<BinaryKernel<EqualOp, NumericBoolTypes>>(K::Equal,
                                                 with_string(dtypes_of(NumericBoolTypes{})));
  r.add<BinaryKernel<GreaterOp, NumericTypes>>(K::Greater, dtypes_of(NumericTypes{}));
  r.add<BinaryKernel<GreaterOrEqualOp, NumericTypes>>(K::GreaterOrEqual, dtypes_of(NumericTypes{}));
  r.add<BinaryKernel<LessOp, NumericTypes>>(K::Less, dtypes_of(NumericTypes{}));
  r.add<BinaryKernel<LessOrEqualOp, NumericTypes>>(K::LessOrEqual, dtypes_of(NumericTypes{}));
  r.add<VariadicKernel<MaxOp, NumericTypes>>(K::Max, dtypes_of(NumericTypes{}));
  r.add<VariadicKernel<MinOp, NumericTypes>>(K::Min, dtypes_of(NumericTypes{}));
  r.add<VariadicKernel<AddOp, FloatTypes>>(K::Sum, dtypes_of(FloatTypes{}));
  r.add<VariadicKernel<AddOp, FloatTypes, true>>(K::Mean, dtypes_of(FloatTypes{}));
  r.add<BinaryKernel<PReluOp, PReluTypes, true>>(K::PRelu, dtypes_of(PReluTypes{}));
  r.add<WhereKernel>(K::Where, with_string(dtypes_of(AllPodTypes{})), 1);
}

}  // namespace switchyard::cpu
