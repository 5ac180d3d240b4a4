// CPU kernels of the reduce family: Reduce* (axes as an optional input), ArgMax/ArgMin and
// CumSum. Floats accumulate in float (double for double), integers in 64 bits with wrap-around.
#include <algorithm>
#include <limits>
#include <optional>

#include "backends/cpu/kernels/common.h"
#include "ops/reduce_geometry.h"

namespace switchyard::cpu {

namespace {

template <typename T>
constexpr bool kIsFloat =
    std::is_floating_point_v<T> || std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Accumulator of sums and products: compute_t for floats, 64-bit integers otherwise.
template <typename T>
using wide_t = std::conditional_t<kIsFloat<T>, compute_t<T>,
                                  std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
// Accumulator of L2/LogSum/LogSumExp: compute_t for floats, double for integers.
template <typename T>
using real_t = std::conditional_t<kIsFloat<T>, compute_t<T>, double>;
// Accumulator of Max/Min: compute_t for floats, the type itself otherwise.
template <typename T>
using order_t = std::conditional_t<kIsFloat<T>, compute_t<T>, T>;

// Integer sums and products wrap around (two's complement) instead of overflowing.
template <typename A>
inline A add_acc(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <typename A>
inline A mul_acc(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

template <typename A>
inline A abs_acc(A a) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    return a < 0 ? static_cast<A>(uint64_t{0} - static_cast<uint64_t>(a)) : a;
  } else if constexpr (std::is_integral_v<A>) {
    return a;
  } else {
    return std::abs(a);
  }
}

// Real result to T; integers saturate (NaN gives 0) so the conversion is always defined.
template <typename T, typename R>
inline T from_real(R v) {
  if constexpr (kIsFloat<T>) {
    return convert<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v >= static_cast<R>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (v <= static_cast<R>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
  }
}

template <typename T>
struct SumOp {
  using A = wide_t<T>;
  static A init() { return A(0); }
  static void step(A& a, T v) { a = add_acc(a, convert<A>(v)); }
  static void combine(A& a, A b) { a = add_acc(a, b); }
  static T finish(A a, int64_t) { return convert<T>(a); }
};

template <typename T>
struct MeanOp : SumOp<T> {
  using A = wide_t<T>;
  static T finish(A a, int64_t n) {
    if constexpr (kIsFloat<T>) {
      return convert<T>(a / static_cast<A>(n));
    } else {
      return n == 0 ? T(0) : convert<T>(a / static_cast<A>(n));
    }
  }
};

template <typename T>
struct ProdOp {
  using A = wide_t<T>;
  static A init() { return A(1); }
  static void step(A& a, T v) { a = mul_acc(a, convert<A>(v)); }
  static void combine(A& a, A b) { a = mul_acc(a, b); }
  static T finish(A a, int64_t) { return convert<T>(a); }
};

template <typename T>
struct SumSquareOp : SumOp<T> {
  using A = wide_t<T>;
  static void step(A& a, T v) {
    A x = convert<A>(v);
    a = add_acc(a, mul_acc(x, x));
  }
};

template <typename T>
struct L1Op : SumOp<T> {
  using A = wide_t<T>;
  static void step(A& a, T v) { a = add_acc(a, abs_acc(convert<A>(v))); }
};

template <typename T>
struct L2Op {
  using A = real_t<T>;
  static A init() { return A(0); }
  static void step(A& a, T v) {
    A x = convert<A>(v);
    a += x * x;
  }
  static void combine(A& a, A b) { a += b; }
  static T finish(A a, int64_t) { return from_real<T>(std::sqrt(a)); }
};

template <typename T>
struct LogSumOp {
  using A = real_t<T>;
  static A init() { return A(0); }
  static void step(A& a, T v) { a += convert<A>(v); }
  static void combine(A& a, A b) { a += b; }
  static T finish(A a, int64_t) { return from_real<T>(std::log(a)); }
};

// Streaming log-sum-exp: a running maximum and the sum of exp(x - max).
template <typename T>
struct LogSumExpOp {
  using R = real_t<T>;
  struct A {
    R max;
    R sum;
  };
  static A init() { return {-std::numeric_limits<R>::infinity(), R(0)}; }
  static void add_scaled(A& a, R m, R s) {
    if (m > a.max) {
      a.sum = a.sum * std::exp(a.max - m) + s;
      a.max = m;
    } else if (m == a.max) {
      a.sum += s;
    } else {
      a.sum += s * std::exp(m - a.max);
    }
  }
  static void step(A& a, T v) { add_scaled(a, convert<R>(v), R(1)); }
  static void combine(A& a, A b) {
    if (b.sum != R(0) || std::isnan(b.sum)) add_scaled(a, b.max, b.sum);
  }
  static T finish(A a, int64_t) { return from_real<T>(a.max + std::log(a.sum)); }
};

template <typename T>
struct MaxOp {
  using A = order_t<T>;
  static A init() {
    if constexpr (kIsFloat<T>) return -std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::lowest();
  }
  static void step(A& a, T v) { combine(a, convert<A>(v)); }
  static void combine(A& a, A x) {
    if constexpr (kIsFloat<T>) {
      if (x > a || std::isnan(x)) a = x;
    } else {
      if (x > a) a = x;
    }
  }
  static T finish(A a, int64_t) { return convert<T>(a); }
};

template <typename T>
struct MinOp {
  using A = order_t<T>;
  static A init() {
    if constexpr (kIsFloat<T>) return std::numeric_limits<A>::infinity();
    return std::numeric_limits<A>::max();
  }
  static void step(A& a, T v) { combine(a, convert<A>(v)); }
  static void combine(A& a, A x) {
    if constexpr (kIsFloat<T>) {
      if (x < a || std::isnan(x)) a = x;
    } else {
      if (x < a) a = x;
    }
  }
  static T finish(A a, int64_t) { return convert<T>(a); }
};

// Reduces `in` of `shape` over the dims flagged in `reduced` into `out` (kept dims in order).
template <typename Op, typename T>
void reduce_tensor(const T* in, T* out, const std::vector<int64_t>& shape,
                   const std::vector<bool>& reduced, int threads) {
  using A = typename Op::A;
  // Drop dims of size 1 and merge neighbours of the same kind: [K, R, K] patterns get fast loops.
  std::vector<std::pair<int64_t, bool>> dims;
  int64_t out_numel = 1;
  int64_t red_numel = 1;
  // An empty input may have other dims of any size (their products would overflow): an empty
  // output gets nothing, an empty reduction gives the identity over the kept dims, whose product
  // is the output's (already allocated) size.
  bool kept_zero = false, reduced_zero = false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] == 0) (reduced[i] ? reduced_zero : kept_zero) = true;
  if (kept_zero) return;
  if (reduced_zero) {
    for (size_t i = 0; i < shape.size(); ++i)
      if (!reduced[i]) out_numel *= shape[i];
    std::fill(out, out + out_numel, Op::finish(Op::init(), 0));
    return;
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    (reduced[i] ? red_numel : out_numel) *= shape[i];
    if (shape[i] == 1) continue;
    if (!dims.empty() && dims.back().second == reduced[i]) {
      dims.back().first *= shape[i];
    } else {
      dims.emplace_back(shape[i], reduced[i]);
    }
  }
  if (out_numel == 0) return;
  if (red_numel == 0) {
    T empty = Op::finish(Op::init(), 0);
    std::fill(out, out + out_numel, empty);
    return;
  }
  bool any_reduced = false;
  for (const auto& d : dims) any_reduced = any_reduced || d.second;

  // Contiguous rows: [R], [K, R], or nothing reduced (rows of one).
  if (!any_reduced || (dims.back().second && dims.size() <= 2)) {
    int64_t row = any_reduced ? dims.back().first : 1;
    constexpr int kLanes = 8;
    parallel_for(out_numel, std::max<int64_t>(1, 16384 / row), threads, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* p = in + o * row;
        A lanes[kLanes];
        for (auto& l : lanes) l = Op::init();
        int64_t r = 0;
        for (; r + kLanes <= row; r += kLanes)
          for (int j = 0; j < kLanes; ++j) Op::step(lanes[j], p[r + j]);
        for (int j = 0; r < row; ++r, ++j) Op::step(lanes[j], p[r]);
        for (int j = 1; j < kLanes; ++j) Op::combine(lanes[0], lanes[j]);
        out[o] = Op::finish(lanes[0], row);
      }
    });
    return;
  }

  // Strided: [R, K] or [K1, R, K2]; each task keeps a block of inner accumulators.
  if (!dims.back().second && dims.size() <= 3 && dims[dims.size() - 2].second) {
    int64_t outer = dims.size() == 3 ? dims[0].first : 1;
    int64_t rows = dims[dims.size() - 2].first;
    int64_t inner = dims.back().first;
    constexpr int64_t kBlock = 256;
    int64_t blocks = (inner + kBlock - 1) / kBlock;
    parallel_for(outer * blocks, std::max<int64_t>(1, 16384 / (rows * kBlock)), threads,
                 [&](int64_t b, int64_t e) {
                   A acc[kBlock];
                   for (int64_t t = b; t < e; ++t) {
                     int64_t o = t / blocks;
                     int64_t k0 = (t % blocks) * kBlock;
                     int64_t n = std::min(kBlock, inner - k0);
                     for (int64_t k = 0; k < n; ++k) acc[k] = Op::init();
                     for (int64_t r = 0; r < rows; ++r) {
                       const T* p = in + (o * rows + r) * inner + k0;
#pragma omp simd
                       for (int64_t k = 0; k < n; ++k) Op::step(acc[k], p[k]);
                     }
                     T* q = out + o * inner + k0;
                     for (int64_t k = 0; k < n; ++k) q[k] = Op::finish(acc[k], rows);
                   }
                 });
    return;
  }

  // General: offsets of every reduced element relative to an output's base offset.
  std::vector<int64_t> merged;
  std::vector<bool> merged_reduced;
  for (const auto& d : dims) {
    merged.push_back(d.first);
    merged_reduced.push_back(d.second);
  }
  const ReductionWalk walk = reduction_walk(merged, merged_reduced);
  parallel_for(out_numel, std::max<int64_t>(1, 16384 / red_numel), threads,
               [&](int64_t b, int64_t e) {
                 for (int64_t o = b; o < e; ++o) {
                   const T* base = in + walk.base(o);
                   A a = Op::init();
                   for (int64_t off : walk.offsets) Op::step(a, base[off]);
                   out[o] = Op::finish(a, red_numel);
                 }
               });
}

// Which dims of a rank-`rank` input the axes input selects (all of them when absent or empty,
// none when empty and noop_with_empty_axes is set).
std::vector<bool> reduced_dims(const runtime::KernelContext& ctx, int64_t rank, bool noop) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(1)) {
    const ir::Tensor& a = ctx.input(1);
    if (a.dtype() != DType::Int64 || a.rank() != 1)
      ctx.fail("axes must be a 1-D int64 tensor, got {} of shape {}", ir::dtype_name(a.dtype()),
               ir::shape_to_string(a.shape()));
    axes = a.to_int_vector();
  }
  return ops::reduced_dims(ctx.node(), rank, axes, noop);
}

template <template <typename> class Op, typename Types>
class ReduceKernel : public runtime::Kernel {
 public:
  explicit ReduceKernel(const runtime::KernelInit& init)
      : keepdims_(init.node.attr_int("keepdims", 1) != 0),
        noop_(init.node.attr_int("noop_with_empty_axes", 0) != 0) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    std::vector<bool> reduced = reduced_dims(ctx, x.rank(), noop_);
    std::vector<int64_t> out_shape = ops::reduced_shape(x.shape(), reduced, keepdims_);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    dispatch(Types{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      reduce_tensor<Op<T>, T>(x.data<T>(), y.data<T>(), x.shape(), reduced, ctx.num_threads());
    });
  }

 private:
  bool keepdims_;
  bool noop_;
};

// outer x len x inner view of a shape around `axis`.
struct AxisSplit {
  int64_t outer = 1;
  int64_t len = 1;
  int64_t inner = 1;
};

// An empty shape gives 0 x 0 x 0 (its other dims may be of any size: their product would
// overflow); callers do nothing for an empty tensor.
AxisSplit split_at(const std::vector<int64_t>& shape, int64_t axis) {
  AxisSplit s;
  if (std::find(shape.begin(), shape.end(), int64_t{0}) != shape.end()) return {0, 0, 0};
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    int64_t d = shape[static_cast<size_t>(i)];
    (i < axis ? s.outer : i == axis ? s.len : s.inner) *= d;
  }
  return s;
}

// NaN-aware orders: NaN ranks above every number for ArgMax and below for ArgMin, so the first
// NaN wins as numpy's argmax/argmin do.
template <bool kMax, typename C>
inline bool better(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return kMax ? a > b : a < b;
}

template <bool kMax>
class ArgReduceKernel : public runtime::Kernel {
 public:
  explicit ArgReduceKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)),
        keepdims_(init.node.attr_int("keepdims", 1) != 0),
        last_(init.node.attr_int("select_last_index", 0) != 0) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    std::vector<bool> along(static_cast<size_t>(x.rank()), false);
    along[static_cast<size_t>(axis)] = true;
    std::vector<int64_t> out_shape = ops::reduced_shape(x.shape(), along, keepdims_);
    AxisSplit s = split_at(x.shape(), axis);
    ir::Tensor& y = ctx.allocate_output(0, DType::Int64, out_shape);
    if (y.numel() == 0) return;
    if (s.len == 0) ctx.fail("cannot select an index along axis {}, which has size 0", axis);
    dispatch(NumericTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* in = x.data<T>();
      int64_t* out = y.data<int64_t>();
      bool last = last_;
      parallel_for(s.outer, std::max<int64_t>(1, 16384 / (s.len * s.inner)), ctx.num_threads(),
                   [&](int64_t b, int64_t e) {
                     std::vector<C> best(static_cast<size_t>(s.inner));
                     for (int64_t o = b; o < e; ++o) {
                       const T* p = in + o * s.len * s.inner;
                       int64_t* q = out + o * s.inner;
                       for (int64_t k = 0; k < s.inner; ++k) {
                         best[static_cast<size_t>(k)] = convert<C>(p[k]);
                         q[k] = 0;
                       }
                       for (int64_t j = 1; j < s.len; ++j) {
                         const T* row = p + j * s.inner;
                         for (int64_t k = 0; k < s.inner; ++k) {
                           C v = convert<C>(row[k]);
                           C& cur = best[static_cast<size_t>(k)];
                           if (last ? !better<kMax>(cur, v) : better<kMax>(v, cur)) {
                             cur = v;
                             q[k] = j;
                           }
                         }
                       }
                     }
                   });
    });
  }

 private:
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

class CumSumKernel : public runtime::Kernel {
 public:
  explicit CumSumKernel(const runtime::KernelInit& init)
      : exclusive_(init.node.attr_int("exclusive", 0) != 0),
        reverse_(init.node.attr_int("reverse", 0) != 0) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& a = ctx.input(1);
    if (a.dtype() != DType::Int32 && a.dtype() != DType::Int64)
      ctx.fail("axis must be int32 or int64, got {}", ir::dtype_name(a.dtype()));
    if (a.numel() != 1 || a.rank() > 1)
      ctx.fail("axis must be a scalar or a 1-element 1-D tensor, got shape {}",
               ir::shape_to_string(a.shape()));
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), a.scalar_as_int(0), x.rank());
    AxisSplit s = split_at(x.shape(), axis);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    dispatch(NumericTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using A = wide_t<T>;
      const T* in = x.data<T>();
      T* out = y.data<T>();
      constexpr int64_t kBlock = 256;
      int64_t blocks = (s.inner + kBlock - 1) / kBlock;
      parallel_for(s.outer * blocks, std::max<int64_t>(1, 16384 / (s.len * kBlock)),
                   ctx.num_threads(), [&](int64_t b, int64_t e) {
                     A acc[kBlock];
                     for (int64_t t = b; t < e; ++t) {
                       int64_t o = t / blocks;
                       int64_t k0 = (t % blocks) * kBlock;
                       int64_t n = std::min(kBlock, s.inner - k0);
                       for (int64_t k = 0; k < n; ++k) acc[k] = A(0);
                       for (int64_t step = 0; step < s.len; ++step) {
                         int64_t j = reverse_ ? s.len - 1 - step : step;
                         int64_t off = (o * s.len + j) * s.inner + k0;
                         for (int64_t k = 0; k < n; ++k) {
                           A v = convert<A>(in[off + k]);
                           if (exclusive_) {
                             out[off + k] = convert<T>(acc[k]);
                             acc[k] = add_acc(acc[k], v);
                           } else {
                             acc[k] = add_acc(acc[k], v);
                             out[off + k] = convert<T>(acc[k]);
                           }
                         }
                       }
                     }
                   });
    });
  }

 private:
  bool exclusive_;
  bool reverse_;
};

using ReduceOrderTypes = AllPodTypes;

}  // namespace

void register_reduce_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  auto numeric = dtypes_of(NumericTypes{});
  r.add<ReduceKernel<SumOp, NumericTypes>>(OpKind::ReduceSum, numeric);
  r.add<ReduceKernel<MeanOp, NumericTypes>>(OpKind::ReduceMean, numeric);
  r.add<ReduceKernel<ProdOp, NumericTypes>>(OpKind::ReduceProd, numeric);
  r.add<ReduceKernel<SumSquareOp, NumericTypes>>(OpKind::ReduceSumSquare, numeric);
  r.add<ReduceKernel<L1Op, NumericTypes>>(OpKind::ReduceL1, numeric);
  r.add<ReduceKernel<L2Op, NumericTypes>>(OpKind::ReduceL2, numeric);
  r.add<ReduceKernel<LogSumOp, NumericTypes>>(OpKind::ReduceLogSum, numeric);
  r.add<ReduceKernel<LogSumExpOp, NumericTypes>>(OpKind::ReduceLogSumExp, numeric);
  r.add<ReduceKernel<MaxOp, ReduceOrderTypes>>(OpKind::ReduceMax, dtypes_of(ReduceOrderTypes{}));
  r.add<ReduceKernel<MinOp, ReduceOrderTypes>>(OpKind::ReduceMin, dtypes_of(ReduceOrderTypes{}));
  r.add<ArgReduceKernel<true>>(OpKind::ArgMax, numeric);
  r.add<ArgReduceKernel<false>>(OpKind::ArgMin, numeric);
  r.add<CumSumKernel>(OpKind::CumSum, numeric);
}

}  // namespace switchyard::cpu
