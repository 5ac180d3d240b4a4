// Device code of the elementwise family (launch API in elementwise_impl.h): one grid-stride
// kernel template per shape of work (unary, binary, Pow, Clip, Where, broadcast copy, Cast,
// fused chain), instantiated per op and dtype. Math mirrors the CPU kernels
// (src/backends/cpu/kernels/elementwise_*.cc) expression for expression: half types compute in
// float, float64 in double, integers wrap. Broadcast operands are addressed through
// EwIndexing: flat (same shape or one element) or by merged dims and per-operand strides.
#include <cuda_runtime.h>

#include <type_traits>

#include "backends/cuda/kernels/common.cuh"
#include "backends/cuda/kernels/data_impl.h"
#include "backends/cuda/kernels/elementwise_impl.h"

namespace switchyard::cuda {
namespace {

using dev::kThreads;

// ---- element types ----

template <typename T>
struct Tag {
  using type = T;
};

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// Compute type of a storage type: float for the half types, else itself.
template <typename T>
using compute_t = std::conditional_t<kIsHalf<T>, float, T>;

template <typename T>
__device__ __forceinline__ compute_t<T> load(T v) {
  if constexpr (kIsHalf<T>) {
    return dev::to_float(v);
  } else {
    return v;
  }
}

template <typename T, typename V>
__device__ __forceinline__ T store(V v) {
  if constexpr (kIsHalf<T>) {
    return dev::from_float<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Dispatch from a DType to f(Tag<T>{}), T the CUDA storage type.
#define SY_EW_TYPE_CASE(D, T) \
  case DType::D:              \
    return f(Tag<T>{});

template <typename F>
cudaError_t with_float(DType d, F&& f) {
  switch (d) {
    SY_EW_TYPE_CASE(Float32, float)
    SY_EW_TYPE_CASE(Float16, __half)
    SY_EW_TYPE_CASE(BFloat16, __nv_bfloat16)
    SY_EW_TYPE_CASE(Float64, double)
    default:
      return cudaErrorInvalidValue;
  }
}

/// Floats, int32 and int64: the arithmetic dtypes.
template <typename F>
cudaError_t with_numeric(DType d, F&& f) {
  switch (d) {
    SY_EW_TYPE_CASE(Int32, int32_t)
    SY_EW_TYPE_CASE(Int64, int64_t)
    default:
      return with_float(d, f);
  }
}

/// Integer dtypes as unsigned integers of their width (bitwise ops, equality).
template <typename F>
cudaError_t with_integer_bits(DType d, F&& f) {
  switch (d) {
    case DType::Int8:
    case DType::UInt8:
      return f(Tag<uint8_t>{});
    case DType::Int16:
    case DType::UInt16:
      return f(Tag<uint16_t>{});
    case DType::Int32:
    case DType::UInt32:
      return f(Tag<uint32_t>{});
    case DType::Int64:
    case DType::UInt64:
      return f(Tag<uint64_t>{});
    default:
      return cudaErrorInvalidValue;
  }
}

template <typename F>
cudaError_t with_unsigned(DType d, F&& f) {
  switch (d) {
    SY_EW_TYPE_CASE(UInt8, uint8_t)
    SY_EW_TYPE_CASE(UInt16, uint16_t)
    SY_EW_TYPE_CASE(UInt32, uint32_t)
    SY_EW_TYPE_CASE(UInt64, uint64_t)
    default:
      return cudaErrorInvalidValue;
  }
}

/// Cast's dtypes.
template <typename F>
cudaError_t with_cast_type(DType d, F&& f) {
  switch (d) {
    SY_EW_TYPE_CASE(Int8, int8_t)
    SY_EW_TYPE_CASE(UInt8, uint8_t)
    SY_EW_TYPE_CASE(Int16, int16_t)
    SY_EW_TYPE_CASE(Bool, bool)
    default:
      return with_numeric(d, f);
  }
}

/// Elements of `size` bytes as unsigned integers (moved, never interpreted).
template <typename F>
cudaError_t with_size(size_t size, F&& f) {
  switch (size) {
    case 1:
      return f(Tag<uint8_t>{});
    case 2:
      return f(Tag<uint16_t>{});
    case 4:
      return f(Tag<uint32_t>{});
    case 8:
      return f(Tag<uint64_t>{});
    default:
      return cudaErrorInvalidValue;
  }
}
#undef SY_EW_TYPE_CASE

// ---- indexing ----

/// Element offsets of output element i in each of the first K operands of `ix`.
template <bool kFlat, int K>
__device__ __forceinline__ void operand_offsets(const EwIndexing& ix, int64_t i,
                                                int64_t (&off)[K]) {
  if constexpr (kFlat) {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = ((ix.scalar_mask >> k) & 1u) ? 0 : i;
  } else {
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] = 0;
#pragma unroll
    for (int d = kEwMaxRank - 1; d >= 0; --d) {
      if (d < ix.rank) {
        const int64_t q = i / ix.dims[d];
        const int64_t c = i - q * ix.dims[d];
#pragma unroll
        for (int k = 0; k < K; ++k) off[k] += c * ix.strides[k][d];
        i = q;
      }
    }
  }
}

// ---- scalar math (the CPU kernels' expressions) ----

/// std::max / std::min, NaN behaviour included (the first argument wins a NaN comparison).
// The NaN tests are explicit: nvcc may turn a bare compare-and-select into a min/max
// instruction, which picks the number over a NaN in either position.
template <typename V>
__device__ __forceinline__ bool nan_(V v) {
  return v != v;
}
template <typename V>
__device__ __forceinline__ V smax(V a, V b) {
  if (nan_(a) || nan_(b)) return a;
  return a < b ? b : a;
}
template <typename V>
__device__ __forceinline__ V smin(V a, V b) {
  if (nan_(a) || nan_(b)) return a;
  return b < a ? b : a;
}

/// Integer arithmetic in the unsigned type of at least int's width: wraps.
template <typename V>
using wide_unsigned_t = std::make_unsigned_t<decltype(V{} + 0u)>;

template <typename V>
__device__ __forceinline__ V negate(V x) {
  if constexpr (std::is_integral_v<V>) {
    return static_cast<V>(wide_unsigned_t<V>(0) - static_cast<wide_unsigned_t<V>>(x));
  } else {
    return -x;
  }
}

template <typename V>
__device__ __forceinline__ V sigmoid(V x) {
  V e = exp(-fabs(x));
  V r = V(1) / (V(1) + e);
  return x >= V(0) ? r : e * r;
}

template <typename V>
__device__ __forceinline__ V softplus(V x) {
  return x > V(0) ? x + log1p(exp(-x)) : log1p(exp(x));
}

// The math tables keep one case per line.
// clang-format off
template <typename V>
__device__ __forceinline__ V unary_math(EwOp op, V x, const EwParams& p) {
  if constexpr (std::is_same_v<V, bool>) {
    return !x;  // Not
  } else if constexpr (std::is_unsigned_v<V>) {
    return static_cast<V>(~x);  // BitwiseNot (integers of every width run as unsigned)
  } else if constexpr (std::is_integral_v<V>) {
    switch (op) {
      case EwOp::Abs: return x < V(0) ? negate(x) : x;
      case EwOp::Neg: return negate(x);
      case EwOp::Sign: return static_cast<V>((V(0) < x) - (x < V(0)));
      case EwOp::Relu: return x > V(0) ? x : V(0);
      default: return x;
    }
  } else {
    const V alpha = V(p.alpha), beta = V(p.beta);
    switch (op) {
      case EwOp::Abs: return fabs(x);
      case EwOp::Neg: return -x;
      case EwOp::Relu: return nan_(x) || x > V(0) ? x : V(0);  // NaN stays NaN, as numpy
      case EwOp::LeakyRelu: return x < V(0) ? alpha * x : x;
      case EwOp::Elu: return x < V(0) ? alpha * expm1(x) : x;
      case EwOp::Selu: return x > V(0) ? beta * x : beta * (alpha * exp(x) - alpha);
      case EwOp::Celu: return smax(x, V(0)) + smin(alpha * expm1(x / alpha), V(0));
      case EwOp::Sigmoid: return sigmoid(x);
      case EwOp::HardSigmoid: return smax(smin(alpha * x + beta, V(1)), V(0));
      case EwOp::HardSwish: return x * smax(V(0), smin(V(1), x / V(6) + V(0.5)));
      case EwOp::Tanh: return tanh(x);
      case EwOp::Exp: return exp(x);
      case EwOp::Log: return log(x);
      case EwOp::Sqrt: return sqrt(x);
      case EwOp::Reciprocal: return V(1) / x;
      case EwOp::Floor: return floor(x);
      case EwOp::Ceil: return ceil(x);
      case EwOp::Round: return rint(x);  // half to even in the default rounding mode
      case EwOp::Sin: return sin(x);
      case EwOp::Cos: return cos(x);
      case EwOp::Tan: return tan(x);
      case EwOp::Asin: return asin(x);
      case EwOp::Acos: return acos(x);
      case EwOp::Atan: return atan(x);
      case EwOp::Sinh: return sinh(x);
      case EwOp::Cosh: return cosh(x);
      case EwOp::Asinh: return asinh(x);
      case EwOp::Acosh: return acosh(x);
      case EwOp::Atanh: return atanh(x);
      case EwOp::Erf: return erf(x);
      case EwOp::Softplus: return softplus(x);
      case EwOp::Softsign: return x / (V(1) + fabs(x));
      case EwOp::Sign:
        if (x != x) return x;
        return static_cast<V>((V(0) < x) - (x < V(0)));
      case EwOp::Gelu:
        if (p.flag) {
          const V k = V(0.7978845608028654);  // sqrt(2/pi)
          return V(0.5) * x * (V(1) + tanh(k * (x + V(0.044715) * x * x * x)));
        }
        return V(0.5) * x * (V(1) + erf(x * V(0.7071067811865476)));
      case EwOp::Mish: return x * tanh(softplus(x));
      case EwOp::ThresholdedRelu: return nan_(x) || x > alpha ? x : V(0);
      case EwOp::Shrink:  // alpha = lambd, beta = bias
        if (x < -alpha) return x + beta;
        if (x > alpha) return x - beta;
        return V(0);
      default: return x;
    }
  }
}

// clang-format on

template <typename V>
__device__ __forceinline__ bool predicate_math(EwOp op, V x, const EwParams& p) {
  if (op == EwOp::IsNaN) return isnan(x);
  return isinf(x) && (x > V(0) ? (p.flag & 2) != 0 : (p.flag & 1) != 0);
}

// clang-format off
template <typename V>
__device__ __forceinline__ V binary_math(EwOp op, V a, V b) {
  if constexpr (std::is_same_v<V, bool>) {
    switch (op) {
      case EwOp::And: return a && b;
      case EwOp::Or: return a || b;
      case EwOp::Xor: return a != b;
      default: return a;
    }
  } else if constexpr (std::is_integral_v<V>) {
    using U = wide_unsigned_t<V>;
    switch (op) {
      case EwOp::Add: return static_cast<V>(static_cast<U>(a) + static_cast<U>(b));
      case EwOp::Sub: return static_cast<V>(static_cast<U>(a) - static_cast<U>(b));
      case EwOp::Mul: return static_cast<V>(static_cast<U>(a) * static_cast<U>(b));
      case EwOp::Div:
        if (b == V(0)) return V(0);  // the CPU kernel refuses a zero divisor
        if constexpr (std::is_signed_v<V>) {
          if (b == V(-1)) return negate(a);  // INT_MIN / -1 wraps
        }
        return static_cast<V>(a / b);
      case EwOp::Max: return smax(a, b);
      case EwOp::Min: return smin(a, b);
      case EwOp::Mod:
      case EwOp::FMod: {
        if (b == V(0)) return V(0);
        if constexpr (std::is_signed_v<V>) {
          V r = b == V(-1) ? V(0) : static_cast<V>(a % b);
          // Mod (fmod=0): the remainder takes the divisor's sign.
          if (op == EwOp::Mod && r != V(0) && ((r < V(0)) != (b < V(0))))
            r = static_cast<V>(r + b);
          return r;
        } else {
          return static_cast<V>(a % b);
        }
      }
      case EwOp::PRelu:
        if constexpr (std::is_signed_v<V>) {
          return a < V(0) ? static_cast<V>(static_cast<U>(a) * static_cast<U>(b)) : a;
        } else {
          return a;
        }
      case EwOp::BitwiseAnd: return static_cast<V>(a & b);
      case EwOp::BitwiseOr: return static_cast<V>(a | b);
      case EwOp::BitwiseXor: return static_cast<V>(a ^ b);
      case EwOp::ShiftLeft:
        return b >= static_cast<V>(sizeof(V) * 8) ? V(0) : static_cast<V>(a << b);
      case EwOp::ShiftRight:
        return b >= static_cast<V>(sizeof(V) * 8) ? V(0) : static_cast<V>(a >> b);
      default: return a;
    }
  } else {
    switch (op) {
      case EwOp::Add: return a + b;
      case EwOp::Sub: return a - b;
      case EwOp::Mul: return a * b;
      case EwOp::Div: return a / b;
      case EwOp::Max:  // NaN propagates, as numpy's maximum
        if (a != a) return a;
        if (b != b) return b;
        return a < b ? b : a;
      case EwOp::Min:
        if (a != a) return a;
        if (b != b) return b;
        return b < a ? b : a;
      case EwOp::Mod:
      case EwOp::FMod: {
        V r = fmod(a, b);
        if (op == EwOp::Mod && r != V(0) && ((r < V(0)) != (b < V(0)))) r = r + b;
        return r;
      }
      case EwOp::PRelu: return a < V(0) ? a * b : a;
      case EwOp::Pow: return b == V(2) ? a * a : pow(a, b);
      default: return a;
    }
  }
}

template <typename V>
__device__ __forceinline__ bool compare_math(EwOp op, V a, V b) {
  switch (op) {
    case EwOp::Equal: return a == b;
    case EwOp::Less: return a < b;
    case EwOp::Greater: return a > b;
    case EwOp::LessOrEqual: return a <= b;
    default: return a >= b;  // GreaterOrEqual
  }
}

// clang-format on

constexpr bool is_comparison(EwOp op) {
  return op == EwOp::Equal || op == EwOp::Less || op == EwOp::Greater || op == EwOp::LessOrEqual ||
         op == EwOp::GreaterOrEqual;
}

/// Float to integer without undefined behaviour, as the CPU's float_to_int: truncation toward
/// zero wrapped to the target's width; NaN and values outside int64 give int64's minimum,
/// wrapped.
template <typename To>
__device__ __forceinline__ To float_to_int(double v) {
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (v >= 0.0 && v < 18446744073709551616.0) return static_cast<uint64_t>(v);
  }
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return static_cast<To>(static_cast<uint64_t>(1) << 63);
  return static_cast<To>(static_cast<int64_t>(v));
}

/// Integer powers by squaring (wrapping); a negative exponent gives the truncated real result.
template <typename V, typename E>
__device__ __forceinline__ V integer_pow(V base, E exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? V(-1) : V(1);
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

/// pow in double for an integer base: exact where an integral exponent's power is exactly
/// representable (the CPU's pow is correctly rounded there, CUDA's need not be, and the result
/// is truncated to an integer, so one ulp below would lose a whole unit).
__device__ __forceinline__ double real_pow(double a, double e) {
  if (e == rint(e) && fabs(e) <= 64) {
    double r = 1;
    for (int k = 0; k < static_cast<int>(fabs(e)); ++k) r *= a;
    if (fabs(r) < 9007199254740992.0) return e < 0 ? 1.0 / r : r;
  }
  return pow(a, e);
}

/// pow for base storage type A and exponent storage type B, in the CPU's arithmetic: the
/// compute type when both dtypes match, else double (int64 for two integers).
template <typename A, typename B>
__device__ __forceinline__ compute_t<A> pow_value(compute_t<A> a, compute_t<B> b) {
  using VA = compute_t<A>;
  using VB = compute_t<B>;
  if constexpr (std::is_floating_point_v<VA>) {
    if (b == VB(2)) return a * a;
    if constexpr (std::is_same_v<A, B>) {
      return pow(a, b);
    } else {
      return static_cast<VA>(pow(static_cast<double>(a), static_cast<double>(b)));
    }
  } else if constexpr (std::is_integral_v<VB>) {
    return integer_pow(a, b);
  } else {
    return float_to_int<VA>(real_pow(static_cast<double>(a), static_cast<double>(b)));
  }
}

template <typename To, typename From>
__device__ __forceinline__ To cast_value(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return load(v) != compute_t<From>(0);
  } else if constexpr (kIsHalf<To>) {
    if constexpr (std::is_same_v<From, float> || kIsHalf<From>) {
      return dev::from_float<To>(load(v));
    } else if constexpr (std::is_same_v<To, __half>) {
      return __double2half(static_cast<double>(v));  // one rounding, like the CPU's round-to-odd
    } else {
      return __double2bfloat16(static_cast<double>(v));
    }
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(load(v));
  } else if constexpr (std::is_floating_point_v<compute_t<From>>) {
    return float_to_int<To>(static_cast<double>(load(v)));
  } else {
    return static_cast<To>(v);
  }
}

// ---- kernels ----

template <EwOp kOp, typename T>
__global__ void unary_kernel(const T* x, T* y, int64_t n, EwParams p) {
  SY_GRID_STRIDE(i, n) y[i] = store<T>(unary_math<compute_t<T>>(kOp, load(x[i]), p));
}

template <typename T>
__global__ void predicate_kernel(EwOp op, const T* x, bool* y, int64_t n, EwParams p) {
  SY_GRID_STRIDE(i, n) y[i] = predicate_math(op, load(x[i]), p);
}

template <EwOp kOp, typename T, bool kFlat>
__global__ void binary_kernel(const T* a, const T* b, void* out, EwIndexing ix, int32_t* error,
                              int32_t error_code) {
  using V = compute_t<T>;
  SY_GRID_STRIDE(i, ix.numel) {
    int64_t off[2];
    operand_offsets<kFlat>(ix, i, off);
    const V va = load(a[off[0]]);
    const V vb = load(b[off[1]]);
    if constexpr (std::is_integral_v<V> &&
                  (kOp == EwOp::Div || kOp == EwOp::Mod || kOp == EwOp::FMod)) {
      if (vb == V(0) && error) atomicCAS(error, 0, error_code);  // the result stays 0
    }
    if constexpr (is_comparison(kOp)) {
      static_cast<bool*>(out)[i] = compare_math(kOp, va, vb);
    } else {
      static_cast<T*>(out)[i] = store<T>(binary_math(kOp, va, vb));
    }
  }
}

template <typename A, typename B, bool kFlat>
__global__ void pow_kernel(const A* a, const B* b, A* y, EwIndexing ix) {
  SY_GRID_STRIDE(i, ix.numel) {
    int64_t off[2];
    operand_offsets<kFlat>(ix, i, off);
    y[i] = store<A>(pow_value<A, B>(load(a[off[0]]), load(b[off[1]])));
  }
}

template <typename T>
__global__ void divide_kernel(T* y, int64_t n, compute_t<T> divisor) {
  SY_GRID_STRIDE(i, n) y[i] = store<T>(load(y[i]) / divisor);
}

template <typename T>
__global__ void clip_kernel(const T* x, T* y, int64_t n, compute_t<T> lo, compute_t<T> hi) {
  SY_GRID_STRIDE(i, n) y[i] = store<T>(smin(smax(load(x[i]), lo), hi));
}

template <typename U, bool kFlat>
__global__ void where_kernel(const uint8_t* c, const U* x, const U* y, U* out, EwIndexing ix) {
  SY_GRID_STRIDE(i, ix.numel) {
    int64_t off[3];
    operand_offsets<kFlat>(ix, i, off);
    out[i] = c[off[0]] ? x[off[1]] : y[off[2]];
  }
}

template <typename U, bool kFlat>
__global__ void broadcast_copy_kernel(const U* x, U* y, EwIndexing ix) {
  SY_GRID_STRIDE(i, ix.numel) {
    int64_t off[1];
    operand_offsets<kFlat>(ix, i, off);
    y[i] = x[off[0]];
  }
}

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  SY_GRID_STRIDE(i, n) y[i] = cast_value<To>(x[i]);
}

// A wide float into float16 or bfloat16 with finite values clamped into the target's range
// (launch_cast's saturate): `top` is its largest finite value.
template <typename From, typename To>
__global__ void saturating_cast_kernel(const From* x, To* y, int64_t n, From top) {
  SY_GRID_STRIDE(i, n) {
    const From v = x[i];  // NaN compares false and stays; infinities keep their sign
    const From c = isinf(v) ? v : (v > top ? top : (v < -top ? -top : v));
    y[i] = cast_value<To>(c);
  }
}

/// Operand slot k's element at offset off[k] (k is uniform across the grid).
template <typename T>
__device__ __forceinline__ compute_t<T> chain_operand(const T* const (&p)[kEwMaxOperands],
                                                      const int64_t (&off)[kEwMaxOperands], int k) {
  compute_t<T> v{};
#pragma unroll
  for (int j = 0; j < kEwMaxOperands; ++j)
    if (j == k) v = load(p[j][off[j]]);
  return v;
}

template <typename T>
struct ChainOperands {
  const T* p[kEwMaxOperands];
};

template <typename T, bool kFlat>
__global__ void chain_kernel(EwChain chain, ChainOperands<T> operands, T* y, EwIndexing ix) {
  using V = compute_t<T>;
  SY_GRID_STRIDE(i, ix.numel) {
    int64_t off[kEwMaxOperands];
    operand_offsets<kFlat>(ix, i, off);
    V v = load(operands.p[0][off[0]]);
    for (int s = 0; s < chain.num_steps; ++s) {
      const EwChainStep& step = chain.steps[s];
      if (step.operand == kEwUnaryStep) {
        v = unary_math(step.op, v, step.params);
        continue;
      }
      const V w = step.operand == kEwScalarStep ? V(step.params.alpha)
                                                : chain_operand(operands.p, off, step.operand);
      v = step.swapped ? binary_math(step.op, w, v) : binary_math(step.op, v, w);
    }
    y[i] = store<T>(v);
  }
}

// ---- launch helpers ----

unsigned grid_for(int64_t n) { return dev::blocks_for(n); }

template <EwOp kOp, typename T>
cudaError_t binary_typed(const void* a, const void* b, void* y, const EwIndexing& ix,
                         cudaStream_t stream, int32_t* error = nullptr, int32_t code = 0) {
  const auto* pa = static_cast<const T*>(a);
  const auto* pb = static_cast<const T*>(b);
  if (ix.rank == 0) {
    binary_kernel<kOp, T, true>
        <<<grid_for(ix.numel), kThreads, 0, stream>>>(pa, pb, y, ix, error, code);
  } else {
    binary_kernel<kOp, T, false>
        <<<grid_for(ix.numel), kThreads, 0, stream>>>(pa, pb, y, ix, error, code);
  }
  return cudaGetLastError();
}

template <EwOp kOp, typename T>
cudaError_t unary_typed(const void* x, void* y, int64_t n, const EwParams& p, cudaStream_t stream) {
  unary_kernel<kOp, T>
      <<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), n, p);
  return cudaGetLastError();
}

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16 || d == DType::Float64;
}

}  // namespace

cudaError_t launch_unary(EwOp op, DType dtype, const void* x, void* y, int64_t n,
                         const EwParams& params, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
#define SY_FLOAT_UNARY(name)                                                               \
  case EwOp::name:                                                                         \
    return with_float(dtype, [&](auto t) {                                                 \
      return unary_typed<EwOp::name, typename decltype(t)::type>(x, y, n, params, stream); \
    });
#define SY_NUMERIC_UNARY(name)                                                             \
  case EwOp::name:                                                                         \
    return with_numeric(dtype, [&](auto t) {                                               \
      return unary_typed<EwOp::name, typename decltype(t)::type>(x, y, n, params, stream); \
    });
  // clang-format off
  switch (op) {
    SY_NUMERIC_UNARY(Abs) SY_NUMERIC_UNARY(Neg) SY_NUMERIC_UNARY(Relu) SY_NUMERIC_UNARY(Sign)
    SY_FLOAT_UNARY(LeakyRelu) SY_FLOAT_UNARY(Elu) SY_FLOAT_UNARY(Selu) SY_FLOAT_UNARY(Celu)
    SY_FLOAT_UNARY(Sigmoid) SY_FLOAT_UNARY(HardSigmoid) SY_FLOAT_UNARY(HardSwish)
    SY_FLOAT_UNARY(Tanh) SY_FLOAT_UNARY(Exp) SY_FLOAT_UNARY(Log) SY_FLOAT_UNARY(Sqrt)
    SY_FLOAT_UNARY(Reciprocal) SY_FLOAT_UNARY(Floor) SY_FLOAT_UNARY(Ceil) SY_FLOAT_UNARY(Round)
    SY_FLOAT_UNARY(Sin) SY_FLOAT_UNARY(Cos) SY_FLOAT_UNARY(Tan) SY_FLOAT_UNARY(Asin)
    SY_FLOAT_UNARY(Acos) SY_FLOAT_UNARY(Atan) SY_FLOAT_UNARY(Sinh) SY_FLOAT_UNARY(Cosh)
    SY_FLOAT_UNARY(Asinh) SY_FLOAT_UNARY(Acosh) SY_FLOAT_UNARY(Atanh) SY_FLOAT_UNARY(Erf)
    SY_FLOAT_UNARY(Softplus) SY_FLOAT_UNARY(Softsign) SY_FLOAT_UNARY(Gelu) SY_FLOAT_UNARY(Mish)
    SY_FLOAT_UNARY(ThresholdedRelu) SY_FLOAT_UNARY(Shrink)
        // clang-format on
        case EwOp::IsNaN : case EwOp::IsInf : return with_float(dtype, [&](auto t) {
          using T = typename decltype(t)::type;
          predicate_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(
              op, static_cast<const T*>(x), static_cast<bool*>(y), n, params);
          return cudaGetLastError();
        });
    case EwOp::Not:
      if (dtype != DType::Bool) return cudaErrorInvalidValue;
      return unary_typed<EwOp::Not, bool>(x, y, n, params, stream);
    case EwOp::BitwiseNot:
      return with_integer_bits(dtype, [&](auto t) {
        return unary_typed<EwOp::BitwiseNot, typename decltype(t)::type>(x, y, n, params, stream);
      });
    default:
      return cudaErrorInvalidValue;
  }
#undef SY_FLOAT_UNARY
#undef SY_NUMERIC_UNARY
}

cudaError_t launch_binary(EwOp op, DType dtype, const void* a, const void* b, void* y,
                          const EwIndexing& ix, cudaStream_t stream, int32_t* error,
                          int32_t error_code) {
  if (ix.numel == 0) return cudaSuccess;
#define SY_BINARY(name, dispatcher)                                                           \
  case EwOp::name:                                                                            \
    return dispatcher(dtype, [&](auto t) {                                                    \
      return binary_typed<EwOp::name, typename decltype(t)::type>(a, b, y, ix, stream, error, \
                                                                  error_code);                \
    });
  switch (op) {
    // clang-format off
    SY_BINARY(Add, with_numeric) SY_BINARY(Sub, with_numeric) SY_BINARY(Mul, with_numeric)
    SY_BINARY(Div, with_numeric) SY_BINARY(Max, with_numeric) SY_BINARY(Min, with_numeric)
    SY_BINARY(Mod, with_numeric) SY_BINARY(FMod, with_numeric) SY_BINARY(PRelu, with_numeric)
    SY_BINARY(Less, with_numeric) SY_BINARY(Greater, with_numeric)
    SY_BINARY(LessOrEqual, with_numeric) SY_BINARY(GreaterOrEqual, with_numeric)
    SY_BINARY(BitwiseAnd, with_integer_bits) SY_BINARY(BitwiseOr, with_integer_bits)
    SY_BINARY(BitwiseXor, with_integer_bits)
    SY_BINARY(ShiftLeft, with_unsigned) SY_BINARY(ShiftRight, with_unsigned)
        // clang-format on
        case EwOp::Equal : if (is_float(dtype)) {
      return with_float(dtype, [&](auto t) {
        return binary_typed<EwOp::Equal, typename decltype(t)::type>(a, b, y, ix, stream);
      });
    }
    // Integers and bool are equal exactly when their bits are.
    if (dtype == DType::Bool) return binary_typed<EwOp::Equal, uint8_t>(a, b, y, ix, stream);
    return with_integer_bits(dtype, [&](auto t) {
      return binary_typed<EwOp::Equal, typename decltype(t)::type>(a, b, y, ix, stream);
    });
    case EwOp::And:
    case EwOp::Or:
    case EwOp::Xor:
      if (dtype != DType::Bool) return cudaErrorInvalidValue;
      if (op == EwOp::And) return binary_typed<EwOp::And, bool>(a, b, y, ix, stream);
      if (op == EwOp::Or) return binary_typed<EwOp::Or, bool>(a, b, y, ix, stream);
      return binary_typed<EwOp::Xor, bool>(a, b, y, ix, stream);
    default:
      return cudaErrorInvalidValue;
  }
#undef SY_BINARY
}

cudaError_t launch_pow(DType base, DType exponent, const void* a, const void* b, void* y,
                       const EwIndexing& ix, cudaStream_t stream) {
  if (ix.numel == 0) return cudaSuccess;
  return with_numeric(base, [&](auto ta) {
    return with_numeric(exponent, [&](auto tb) {
      using A = typename decltype(ta)::type;
      using B = typename decltype(tb)::type;
      const auto* pa = static_cast<const A*>(a);
      const auto* pb = static_cast<const B*>(b);
      auto* py = static_cast<A*>(y);
      if (ix.rank == 0) {
        pow_kernel<A, B, true><<<grid_for(ix.numel), kThreads, 0, stream>>>(pa, pb, py, ix);
      } else {
        pow_kernel<A, B, false><<<grid_for(ix.numel), kThreads, 0, stream>>>(pa, pb, py, ix);
      }
      return cudaGetLastError();
    });
  });
}

cudaError_t launch_divide(DType dtype, void* y, int64_t n, double divisor, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return with_float(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    divide_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<T*>(y), n,
                                                           static_cast<compute_t<T>>(divisor));
    return cudaGetLastError();
  });
}

cudaError_t launch_clip(DType dtype, const void* x, void* y, int64_t n, const EwClipBounds& b,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return with_numeric(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    using V = compute_t<T>;
    V lo, hi;
    if constexpr (std::is_floating_point_v<V>) {
      lo = static_cast<V>(b.lo_f);
      hi = static_cast<V>(b.hi_f);
    } else {
      lo = static_cast<V>(b.lo_i);
      hi = static_cast<V>(b.hi_i);
    }
    clip_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                         static_cast<T*>(y), n, lo, hi);
    return cudaGetLastError();
  });
}

cudaError_t launch_where(size_t elem_size, const void* cond, const void* x, const void* y_in,
                         void* out, const EwIndexing& ix, cudaStream_t stream) {
  if (ix.numel == 0) return cudaSuccess;
  return with_size(elem_size, [&](auto t) {
    using U = typename decltype(t)::type;
    const auto* c = static_cast<const uint8_t*>(cond);
    const auto* px = static_cast<const U*>(x);
    const auto* py = static_cast<const U*>(y_in);
    auto* po = static_cast<U*>(out);
    if (ix.rank == 0) {
      where_kernel<U, true><<<grid_for(ix.numel), kThreads, 0, stream>>>(c, px, py, po, ix);
    } else {
      where_kernel<U, false><<<grid_for(ix.numel), kThreads, 0, stream>>>(c, px, py, po, ix);
    }
    return cudaGetLastError();
  });
}

cudaError_t launch_broadcast_copy(size_t elem_size, const void* x, void* y, const EwIndexing& ix,
                                  cudaStream_t stream) {
  if (ix.numel == 0) return cudaSuccess;
  return with_size(elem_size, [&](auto t) {
    using U = typename decltype(t)::type;
    const auto* px = static_cast<const U*>(x);
    auto* py = static_cast<U*>(y);
    if (ix.rank == 0) {
      broadcast_copy_kernel<U, true><<<grid_for(ix.numel), kThreads, 0, stream>>>(px, py, ix);
    } else {
      broadcast_copy_kernel<U, false><<<grid_for(ix.numel), kThreads, 0, stream>>>(px, py, ix);
    }
    return cudaGetLastError();
  });
}

cudaError_t launch_cast(DType from, DType to, const void* x, void* y, int64_t n, bool saturate,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const bool narrow = to == DType::Float16 || to == DType::BFloat16;
  if (saturate && narrow && (from == DType::Float32 || from == DType::Float64)) {
    // The largest finite float16 and bfloat16 values.
    const double top = to == DType::Float16 ? 65504.0 : 3.3895313892515355e38;
    auto launch = [&](auto* out) {
      if (from == DType::Float32) {
        saturating_cast_kernel<<<grid_for(n), kThreads, 0, stream>>>(
            static_cast<const float*>(x), out, n, static_cast<float>(top));
      } else {
        saturating_cast_kernel<<<grid_for(n), kThreads, 0, stream>>>(static_cast<const double*>(x),
                                                                     out, n, top);
      }
    };
    if (to == DType::Float16) {
      launch(static_cast<__half*>(y));
    } else {
      launch(static_cast<__nv_bfloat16*>(y));
    }
    return cudaGetLastError();
  }
  return with_cast_type(from, [&](auto tf) {
    return with_cast_type(to, [&](auto tt) {
      using From = typename decltype(tf)::type;
      using To = typename decltype(tt)::type;
      if constexpr (std::is_same_v<From, To>) {
        return data::launch_device_copy(y, x, static_cast<size_t>(n) * sizeof(From), stream);
      } else {
        cast_kernel<From, To><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const From*>(x),
                                                                    static_cast<To*>(y), n);
        return cudaGetLastError();
      }
    });
  });
}

cudaError_t launch_chain(DType dtype, const EwChain& chain,
                         const void* const (&operands)[kEwMaxOperands], void* y,
                         const EwIndexing& ix, cudaStream_t stream) {
  if (ix.numel == 0) return cudaSuccess;
  return with_float(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    ChainOperands<T> ops;
    for (int k = 0; k < kEwMaxOperands; ++k) ops.p[k] = static_cast<const T*>(operands[k]);
    auto* py = static_cast<T*>(y);
    if (ix.rank == 0) {
      chain_kernel<T, true><<<grid_for(ix.numel), kThreads, 0, stream>>>(chain, ops, py, ix);
    } else {
      chain_kernel<T, false><<<grid_for(ix.numel), kThreads, 0, stream>>>(chain, ops, py, ix);
    }
    return cudaGetLastError();
  });
}

}  // namespace switchyard::cuda
