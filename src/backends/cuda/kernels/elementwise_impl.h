// Launch API of the elementwise family's device code (elementwise.cu): unary math and
// activations, binary ops with numpy broadcasting, Pow, Where, Clip, Cast, the broadcast copy of
// Expand, and fused elementwise chains (elementwise_fusion.cc). Plain C++: g++ and nvcc both
// include it. Every launcher enqueues on `stream`, launches nothing for zero elements and
// returns cudaGetLastError() (cudaErrorInvalidValue for a dtype it has no kernel for).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "switchyard/dtype.hpp"

namespace switchyard::cuda {

/// The device ops. Unary float ops compute in float (double for float64) and store in the
/// input's dtype; integer variants exist where noted at the launchers.
// clang-format off
enum class EwOp : int32_t {
  // unary
  Abs, Neg, Relu, LeakyRelu, Elu, Selu, Celu, Sigmoid, HardSigmoid, HardSwish, Tanh, Exp, Log,
  Sqrt, Reciprocal, Floor, Ceil, Round, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh,
  Acosh, Atanh, Erf, Softplus, Softsign, Sign, Gelu, Mish, ThresholdedRelu, Shrink,
  IsNaN, IsInf, Not, BitwiseNot,
  // binary
  Add, Sub, Mul, Div, Max, Min, Mod, FMod, PRelu, Pow,
  Equal, Less, Greater, LessOrEqual, GreaterOrEqual,
  And, Or, Xor, BitwiseAnd, BitwiseOr, BitwiseXor, ShiftLeft, ShiftRight,
};
// clang-format on

/// Attribute values of a unary op: LeakyRelu/Elu/Celu/ThresholdedRelu alpha; HardSigmoid
/// alpha, beta; Selu alpha, beta = gamma; Shrink alpha = lambd, beta = bias; Gelu flag 1 = tanh
/// approximation; IsInf flag bit 0 = detect_negative, bit 1 = detect_positive.
struct EwParams {
  float alpha = 0;
  float beta = 0;
  int32_t flag = 0;
};

constexpr int kEwMaxRank = 8;
constexpr int kEwMaxOperands = 4;

/// How up to kEwMaxOperands operands map onto a row-major output of `numel` elements.
/// rank == 0 is the flat case: each operand is either the whole output in the same order or one
/// broadcast element (its bit in scalar_mask). Otherwise `dims` are the output's dims (size-1
/// dims dropped, neighbours merged) and strides[k] operand k's strides in elements, 0 along
/// broadcast dims.
struct EwIndexing {
  int64_t numel = 0;
  int32_t rank = 0;
  uint32_t scalar_mask = 0;
  int64_t dims[kEwMaxRank] = {};
  int64_t strides[kEwMaxOperands][kEwMaxRank] = {};
};

/// y = op(x) over n elements. Float ops: float32, float16, bfloat16, float64. Abs, Neg, Sign,
/// Relu also int32, int64. IsNaN, IsInf: float in, bool out. Not: bool. BitwiseNot: any integer
/// dtype.
cudaError_t launch_unary(EwOp op, DType dtype, const void* x, void* y, int64_t n,
                         const EwParams& params, cudaStream_t stream);

/// y = op(a, b) with a, b operands 0 and 1 of `ix` (y may alias a when a is the whole output).
/// Add, Sub, Mul, Div, Max, Min, Mod, FMod, PRelu and the order comparisons: float32, float16,
/// bfloat16, float64, int32, int64 (integers wrap; a zero integer divisor of Div/Mod/FMod gives 0
/// and stores `error_code` into `*error` when `error` is set, atomicCAS from 0). Equal: those
/// and every other integer dtype and bool. And, Or, Xor: bool. BitwiseAnd/Or/Xor: any integer
/// dtype. ShiftLeft/ShiftRight: unsigned integers. Comparisons write bool.
cudaError_t launch_binary(EwOp op, DType dtype, const void* a, const void* b, void* y,
                          const EwIndexing& ix, cudaStream_t stream, int32_t* error = nullptr,
                          int32_t error_code = 0);

/// y = pow(a, b), y of the base's dtype. Base and exponent: float32, float16, bfloat16,
/// float64, int32, int64 in any pairing (integer powers wrap; a float result is truncated to an
/// integer base's dtype).
cudaError_t launch_pow(DType base, DType exponent, const void* a, const void* b, void* y,
                       const EwIndexing& ix, cudaStream_t stream);

/// y = y / divisor in place over n elements of a float dtype (Mean's division).
cudaError_t launch_divide(DType dtype, void* y, int64_t n, double divisor, cudaStream_t stream);

/// Clip bounds: the *_f fields for float dtypes, the *_i fields for integers.
struct EwClipBounds {
  double lo_f = 0, hi_f = 0;
  int64_t lo_i = 0, hi_i = 0;
};
/// y = min(max(x, lo), hi) (NaN stays NaN): float32, float16, bfloat16, float64, int32, int64.
cudaError_t launch_clip(DType dtype, const void* x, void* y, int64_t n, const EwClipBounds& b,
                        cudaStream_t stream);

/// y = cond ? x : y_in with cond, x, y_in operands 0, 1, 2 of `ix`; values of `elem_size` bytes
/// (1, 2, 4, 8) are copied, not interpreted.
cudaError_t launch_where(size_t elem_size, const void* cond, const void* x, const void* y_in,
                         void* out, const EwIndexing& ix, cudaStream_t stream);

/// y = x broadcast to the output of `ix` (x is operand 0); elements of 1, 2, 4 or 8 bytes.
cudaError_t launch_broadcast_copy(size_t elem_size, const void* x, void* y, const EwIndexing& ix,
                                  cudaStream_t stream);

/// y = Cast(x) over n elements between float32, float16, bfloat16, float64, int8, uint8, int16,
/// int32, int64 and bool, as the CPU kernel does: float to integer truncates toward zero and
/// wraps to the target's width (NaN and values outside int64 give int64's minimum, wrapped);
/// narrowing float conversions round to nearest even; anything nonzero is true.
/// `saturate`: finite values beyond a float16 or bfloat16 target's range become its largest
/// finite value, with their sign (precision.h: SaturatingCast); infinities and NaN stay.
cudaError_t launch_cast(DType from, DType to, const void* x, void* y, int64_t n, bool saturate,
                        cudaStream_t stream);

// ---- fused chains ----

constexpr int kEwMaxChainSteps = 8;
/// EwChainStep::operand values besides an operand slot (0 .. kEwMaxOperands-1).
constexpr int32_t kEwUnaryStep = -1;   ///< the step is a unary op
constexpr int32_t kEwScalarStep = -2;  ///< the other operand is params.alpha

/// One step of a chain: v = op(v) (unary, with params), or v = op(v, w) (op(w, v) when
/// swapped) where w is an operand slot's element or the scalar params.alpha.
struct EwChainStep {
  EwOp op = EwOp::Relu;
  int32_t operand = kEwUnaryStep;
  int32_t swapped = 0;
  EwParams params;
};

struct EwChain {
  int32_t num_steps = 0;
  EwChainStep steps[kEwMaxChainSteps];
};

/// Ops a chain step may be, with their ONNX op types: elementwise_fusion.cc maps a node's op type
/// to the step's op (ElementwiseChain, fusion.h) and the chain kernel (elementwise.cc) maps it
/// back to check its arity. Each is unary or broadcasting elementwise (ops/op_traits.h); a
/// broadcasting step takes two operands.
struct EwChainOpName {
  const char* name;
  EwOp op;
};
inline constexpr EwChainOpName kEwChainOps[] = {
    {"Add", EwOp::Add},
    {"Sub", EwOp::Sub},
    {"Mul", EwOp::Mul},
    {"Div", EwOp::Div},
    {"Max", EwOp::Max},
    {"Min", EwOp::Min},
    {"Pow", EwOp::Pow},
    {"Relu", EwOp::Relu},
    {"LeakyRelu", EwOp::LeakyRelu},
    {"Elu", EwOp::Elu},
    {"Celu", EwOp::Celu},
    {"ThresholdedRelu", EwOp::ThresholdedRelu},
    {"Sigmoid", EwOp::Sigmoid},
    {"HardSwish", EwOp::HardSwish},
    {"Tanh", EwOp::Tanh},
    {"Exp", EwOp::Exp},
    {"Log", EwOp::Log},
    {"Sqrt", EwOp::Sqrt},
    {"Reciprocal", EwOp::Reciprocal},
    {"Abs", EwOp::Abs},
    {"Neg", EwOp::Neg},
    {"Erf", EwOp::Erf},
    {"Softplus", EwOp::Softplus},
    {"Softsign", EwOp::Softsign},
    {"Mish", EwOp::Mish},
    {"Gelu", EwOp::Gelu},
    {"Sin", EwOp::Sin},
    {"Cos", EwOp::Cos},
    {"Floor", EwOp::Floor},
    {"Ceil", EwOp::Ceil},
    {"Round", EwOp::Round},
};

/// y = the chain evaluated per element, starting from operand slot 0, for float32, float16,
/// bfloat16 and float64 (computing in float, double for float64); `operands` holds the slots
/// `ix` describes (every operand has the output's dtype).
cudaError_t launch_chain(DType dtype, const EwChain& chain,
                         const void* const (&operands)[kEwMaxOperands], void* y,
                         const EwIndexing& ix, cudaStream_t stream);

}  // namespace switchyard::cuda
