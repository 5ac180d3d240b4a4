// CUDA kernels of the elementwise family, host side (device code in elementwise.cu): unary math
// and activations, Clip, binary ops with numpy broadcasting (arithmetic, Mod, PRelu, Pow,
// comparisons, logic, bit ops), the variadic Max/Min/Sum/Mean, Where, Cast/CastLike, Expand,
// and the kernel of fused elementwise chains (the representation is documented in
// elementwise_fusion.cc). Attributes, dtype rules and error messages mirror the CPU kernels
// (src/backends/cpu/kernels/elementwise_*.cc), which are the reference the GPU is tested
// against. An integer Div/Mod by zero fails the run naming the node, as on the CPU, through the
// partition's error word (the divisor lives in device memory; reading it here would sync).
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/fusion.h"
#include "backends/cuda/kernels/data_impl.h"
#include "backends/cuda/kernels/elementwise_impl.h"
#include "backends/cuda/precision.h"
#include "ops/op_traits.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {
namespace {

using ir::DType;
using ops::OpKind;
using runtime::KernelContext;
using runtime::KernelDef;
using runtime::KernelInit;
using runtime::Support;

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};
const std::vector<DType> kNumericTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                          DType::Float64, DType::Int32,   DType::Int64};
const std::vector<DType> kIntegerTypes = {DType::Int8,   DType::Int16, DType::Int32,
                                          DType::Int64,  DType::UInt8, DType::UInt16,
                                          DType::UInt32, DType::UInt64};
const std::vector<DType> kUnsignedTypes = {DType::UInt8, DType::UInt16, DType::UInt32,
                                           DType::UInt64};
/// Every fixed-width dtype (Equal, Where, Expand).
const std::vector<DType> kFixedWidthTypes = {
    DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
    DType::Int16,   DType::Int32,   DType::Int64,    DType::UInt8,   DType::UInt16,
    DType::UInt32,  DType::UInt64,  DType::Bool};
const std::vector<DType> kCastTypes = {
    DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int8,
    DType::UInt8,   DType::Int16,   DType::Int32,    DType::Int64,   DType::Bool};

bool contains(const std::vector<DType>& v, DType d) {
  return std::find(v.begin(), v.end(), d) != v.end();
}

/// The runtime dtype must be one this kernel has (the partition may retype values).
void require_dtype(const KernelContext& ctx, const ir::Tensor& t, const std::vector<DType>& ok,
                   size_t input) {
  if (!contains(ok, t.dtype()))
    ctx.fail("input {} has dtype {}, which this CUDA kernel does not support", input,
             ir::dtype_name(t.dtype()));
}

void require_same_dtype(const KernelContext& ctx, const ir::Tensor& a, const ir::Tensor& b,
                        size_t ib) {
  if (a.dtype() != b.dtype())
    ctx.fail("input {} has dtype {}, but input 0 has {}; they must match", ib,
             ir::dtype_name(b.dtype()), ir::dtype_name(a.dtype()));
}

std::vector<int64_t> broadcast_or_fail(const KernelContext& ctx,
                                       const std::vector<std::vector<int64_t>>& shapes) {
  auto out = ops::broadcast_dims(shapes);
  if (!out) {
    std::string all;
    for (const auto& s : shapes) all += ir::shape_to_string(s) + " ";
    ctx.fail("input shapes {}cannot be broadcast together", all);
  }
  return *out;
}

/// The launch layout of operands `shapes` (each broadcastable to `out`): flat when each is the
/// whole output or one element, else the output's dims with size-1 dims dropped and neighbours
/// merged wherever every operand allows it.
EwIndexing make_indexing(const KernelContext& ctx, const std::vector<std::vector<int64_t>>& shapes,
                         const std::vector<int64_t>& out) {
  SY_ASSERT(shapes.size() <= static_cast<size_t>(kEwMaxOperands));
  EwIndexing ix;
  ix.numel = ir::checked_numel(out);
  bool flat = true;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const int64_t n = ir::checked_numel(shapes[k]);
    if (n == 1) {
      ix.scalar_mask |= 1u << k;
    } else if (n != ix.numel) {
      flat = false;
    }
  }
  if (flat || ix.numel == 0) return ix;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(shapes.size());
  const size_t rank = out.size();
  std::vector<int64_t> st(shapes.size());
  for (size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    for (size_t k = 0; k < shapes.size(); ++k) {
      const auto& s = shapes[k];
      st[k] = 0;
      if (d + s.size() < rank || s[d + s.size() - rank] == 1) continue;
      int64_t stride = 1;  // operand k's own row-major stride of this dim
      for (size_t j = d + s.size() - rank + 1; j < s.size(); ++j) stride *= s[j];
      st[k] = stride;
    }
    bool merge = !dims.empty();
    for (size_t k = 0; k < shapes.size() && merge; ++k) merge = strides[k].back() == st[k] * out[d];
    if (merge) {
      dims.back() *= out[d];
      for (size_t k = 0; k < shapes.size(); ++k) strides[k].back() = st[k];
    } else {
      dims.push_back(out[d]);
      for (size_t k = 0; k < shapes.size(); ++k) strides[k].push_back(st[k]);
    }
  }
  if (dims.size() > static_cast<size_t>(kEwMaxRank))
    ctx.fail("the broadcast of output shape {} needs {} dims; the CUDA kernels handle at most {}",
             ir::shape_to_string(out), dims.size(), kEwMaxRank);
  ix.rank = static_cast<int32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    ix.dims[d] = dims[d];
    for (size_t k = 0; k < shapes.size(); ++k) ix.strides[k][d] = strides[k][d];
  }
  return ix;
}

DType declared_dtype(const ir::Node& node, size_t input) {
  const ir::Value* v = node.input(input);
  return v && v->type().is_tensor() ? v->type().dtype : DType::Undefined;
}

bool has_chain(const ir::Node& n) { return n.annotation<ElementwiseChain>() != nullptr; }

/// Check of every plain (unfused) kernel: a fused chain node is the chain kernel's.
Support not_chain(const ir::Node& n) {
  if (has_chain(n)) return Support::no(n.describe() + ": a fused chain this kernel cannot run");
  return Support::yes();
}

/// Check of the broadcasting kernels: not a chain, and no more output dims than they index.
Support plain_node(const ir::Node& n) {
  if (has_chain(n)) return not_chain(n);
  const ir::Value* out = n.output(0);
  if (out && out->type().has_rank() && out->type().rank() > kEwMaxRank)
    return Support::no(
        fmt::format("{}: output rank {} exceeds the {} dims the CUDA elementwise "
                    "kernels broadcast over",
                    n.describe(), out->type().rank(), kEwMaxRank));
  return Support::yes();
}

// ---- unary ----

EwParams unary_params(const ir::Node& n, EwOp op) {
  EwParams p;
  switch (op) {
    case EwOp::LeakyRelu:
      p.alpha = n.attr_float("alpha", 0.01f);
      break;
    case EwOp::Elu:
    case EwOp::Celu:
    case EwOp::ThresholdedRelu:
      p.alpha = n.attr_float("alpha", 1.0f);
      break;
    case EwOp::HardSigmoid:
      p.alpha = n.attr_float("alpha", 0.2f);
      p.beta = n.attr_float("beta", 0.5f);
      break;
    case EwOp::Selu:
      p.alpha = n.attr_float("alpha", 1.67326319217681884765625f);
      p.beta = n.attr_float("gamma", 1.05070102214813232421875f);
      break;
    case EwOp::Shrink:
      p.alpha = n.attr_float("lambd", 0.5f);
      p.beta = n.attr_float("bias", 0.0f);
      break;
    case EwOp::Gelu:
      p.flag = n.attr_string("approximate", "none") == "tanh" ? 1 : 0;
      break;
    case EwOp::IsInf:
      p.flag = (n.attr_int("detect_negative", 1) != 0 ? 1 : 0) |
               (n.attr_int("detect_positive", 1) != 0 ? 2 : 0);
      break;
    default:
      break;
  }
  return p;
}

class UnaryKernel final : public runtime::Kernel {
 public:
  UnaryKernel(const KernelInit& init, EwOp op, std::vector<DType> types)
      : op_(op), params_(unary_params(init.node, op)), types_(std::move(types)) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    require_dtype(ctx, x, types_, 0);
    const bool bool_out = op_ == EwOp::IsNaN || op_ == EwOp::IsInf;
    ir::Tensor& y = ctx.allocate_output(0, bool_out ? DType::Bool : x.dtype(), x.shape());
    SY_CUDA_CHECK(
        launch_unary(op_, x.dtype(), x.raw(), y.raw(), x.numel(), params_, stream_of(ctx)));
  }

 private:
  EwOp op_;
  EwParams params_;
  std::vector<DType> types_;
};

/// Clip: min and max are optional scalar host inputs. Under --precision fp16/bf16 a host-read
/// bound keeps float32 while x is narrowed, so float bounds need only be floats.
class ClipKernel final : public runtime::Kernel {
 public:
  explicit ClipKernel(const KernelInit&) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    require_dtype(ctx, x, kNumericTypes, 0);
    const bool is_float = ir::dtype_is_float(x.dtype());
    EwClipBounds b;
    b.lo_f = -std::numeric_limits<double>::infinity();
    b.hi_f = std::numeric_limits<double>::infinity();
    b.lo_i = x.dtype() == DType::Int32 ? std::numeric_limits<int32_t>::lowest()
                                       : std::numeric_limits<int64_t>::lowest();
    b.hi_i = x.dtype() == DType::Int32 ? std::numeric_limits<int32_t>::max()
                                       : std::numeric_limits<int64_t>::max();
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      const char* what = i == 1 ? "min" : "max";
      const ir::Tensor& t = ctx.input(i);
      if (is_float ? !ir::dtype_is_float(t.dtype()) : t.dtype() != x.dtype())
        ctx.fail("{} has dtype {}, expected {} like the input", what, ir::dtype_name(t.dtype()),
                 ir::dtype_name(x.dtype()));
      if (t.numel() != 1 || t.rank() > 1)
        ctx.fail("{} must be a scalar, got shape {}", what, ir::shape_to_string(t.shape()));
      if (is_float) {
        (i == 1 ? b.lo_f : b.hi_f) = read_doubles(ctx, i)[0];
      } else {
        (i == 1 ? b.lo_i : b.hi_i) = read_ints(ctx, i)[0];
      }
    }
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    SY_CUDA_CHECK(launch_clip(x.dtype(), x.raw(), y.raw(), x.numel(), b, stream_of(ctx)));
  }
};

// ---- binary, variadic, Pow, Where ----

bool is_comparison(EwOp op) {
  return op == EwOp::Equal || op == EwOp::Less || op == EwOp::Greater || op == EwOp::LessOrEqual ||
         op == EwOp::GreaterOrEqual;
}

/// Binary ops whose inputs share one dtype. PRelu: the slope must broadcast to X's shape.
class BinaryKernel final : public runtime::Kernel {
 public:
  BinaryKernel(const KernelInit&, EwOp op, std::vector<DType> types)
      : op_(op), types_(std::move(types)) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    require_same_dtype(ctx, a, b, 1);
    require_dtype(ctx, a, types_, 0);
    std::vector<int64_t> shape = broadcast_or_fail(ctx, {a.shape(), b.shape()});
    if (op_ == EwOp::PRelu && shape != a.shape())
      ctx.fail("slope of shape {} does not broadcast to the input's shape {}",
               ir::shape_to_string(b.shape()), ir::shape_to_string(a.shape()));
    EwIndexing ix = make_indexing(ctx, {a.shape(), b.shape()}, shape);
    ir::Tensor& y =
        ctx.allocate_output(0, is_comparison(op_) ? DType::Bool : a.dtype(), std::move(shape));
    // An integer zero divisor is reported through the partition's error word (no sync here).
    const bool divides = op_ == EwOp::Div || op_ == EwOp::Mod || op_ == EwOp::FMod;
    CudaRunContext& rc = run_context(ctx);
    int32_t* error = divides && ir::dtype_is_integer(a.dtype()) ? rc.device_error : nullptr;
    SY_CUDA_CHECK(launch_binary(op_, a.dtype(), a.raw(), b.raw(), y.raw(), ix, rc.stream, error,
                                fault_code(rc.error_code, KernelFault::IntegerDivisionByZero)));
  }

 private:
  EwOp op_;
  std::vector<DType> types_;
};

/// Max, Min, Sum, Mean over one or more inputs, folded pairwise into the output (as the CPU
/// does, so half types round between inputs alike); Mean divides at the end.
class VariadicKernel final : public runtime::Kernel {
 public:
  VariadicKernel(const KernelInit&, EwOp op, bool mean, std::vector<DType> types)
      : op_(op), mean_(mean), types_(std::move(types)) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& first = ctx.input(0);
    require_dtype(ctx, first, types_, 0);
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ir::Tensor& t = ctx.input(i);
      require_same_dtype(ctx, first, t, i);
      shapes.push_back(t.shape());
    }
    ir::Tensor& out = ctx.allocate_output(0, first.dtype(), broadcast_or_fail(ctx, shapes));
    if (out.numel() == 0) return;
    cudaStream_t stream = stream_of(ctx);
    if (ctx.num_inputs() == 1) {
      SY_CUDA_CHECK(data::launch_device_copy(out.raw(), first.raw(), first.nbytes(), stream));
      return;
    }
    const ir::Tensor& second = ctx.input(1);
    SY_CUDA_CHECK(launch_binary(op_, first.dtype(), first.raw(), second.raw(), out.raw(),
                                make_indexing(ctx, {first.shape(), second.shape()}, out.shape()),
                                stream));
    for (size_t i = 2; i < ctx.num_inputs(); ++i) {
      const ir::Tensor& t = ctx.input(i);
      SY_CUDA_CHECK(launch_binary(op_, out.dtype(), out.raw(), t.raw(), out.raw(),
                                  make_indexing(ctx, {out.shape(), t.shape()}, out.shape()),
                                  stream));
    }
    if (mean_)
      SY_CUDA_CHECK(launch_divide(out.dtype(), out.raw(), out.numel(),
                                  static_cast<double>(ctx.num_inputs()), stream));
  }

 private:
  EwOp op_;
  bool mean_;
  std::vector<DType> types_;
};

/// Pow: base and exponent dtypes pair freely among kNumericTypes.
class PowKernel final : public runtime::Kernel {
 public:
  explicit PowKernel(const KernelInit&) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    require_dtype(ctx, a, kNumericTypes, 0);
    require_dtype(ctx, b, kNumericTypes, 1);
    std::vector<int64_t> shape = broadcast_or_fail(ctx, {a.shape(), b.shape()});
    EwIndexing ix = make_indexing(ctx, {a.shape(), b.shape()}, shape);
    ir::Tensor& y = ctx.allocate_output(0, a.dtype(), std::move(shape));
    SY_CUDA_CHECK(launch_pow(a.dtype(), b.dtype(), a.raw(), b.raw(), y.raw(), ix, stream_of(ctx)));
  }
};

class WhereKernel final : public runtime::Kernel {
 public:
  explicit WhereKernel(const KernelInit&) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& c = ctx.input(0);
    const ir::Tensor& x = ctx.input(1);
    const ir::Tensor& y = ctx.input(2);
    if (c.dtype() != DType::Bool)
      ctx.fail("condition has dtype {}, expected bool", ir::dtype_name(c.dtype()));
    if (x.dtype() != y.dtype())
      ctx.fail("X has dtype {} but Y has {}; they must match", ir::dtype_name(x.dtype()),
               ir::dtype_name(y.dtype()));
    require_dtype(ctx, x, kFixedWidthTypes, 1);
    std::vector<int64_t> shape = broadcast_or_fail(ctx, {c.shape(), x.shape(), y.shape()});
    EwIndexing ix = make_indexing(ctx, {c.shape(), x.shape(), y.shape()}, shape);
    ir::Tensor& out = ctx.allocate_output(0, x.dtype(), std::move(shape));
    SY_CUDA_CHECK(launch_where(ir::dtype_size(x.dtype()), c.raw(), x.raw(), y.raw(), out.raw(), ix,
                               stream_of(ctx)));
  }
};

// ---- Cast, CastLike, Expand ----

/// Cast (target from the `to` attribute) and CastLike (target = input 1's runtime dtype).
class CastKernel final : public runtime::Kernel {
 public:
  explicit CastKernel(const KernelInit& init)
      : cast_like_(ops::kind_of(init.node) == OpKind::CastLike),
        to_(cast_like_ ? DType::Undefined : static_cast<DType>(init.node.attr_int("to"))),
        saturate_(init.node.annotation<SaturatingCast>() != nullptr) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    require_dtype(ctx, x, kCastTypes, 0);
    const DType to = cast_like_ ? ctx.input(1).dtype() : to_;
    if (!contains(kCastTypes, to)) ctx.fail("cannot cast to {} on CUDA", ir::dtype_name(to));
    ir::Tensor& y = ctx.allocate_output(0, to, x.shape());
    SY_CUDA_CHECK(
        launch_cast(x.dtype(), to, x.raw(), y.raw(), x.numel(), saturate_, stream_of(ctx)));
  }

 private:
  bool cast_like_;
  DType to_;
  bool saturate_;  // precision.h: SaturatingCast
};

Support cast_check(const ir::Node& n) {
  DType to = ops::kind_of(n) == OpKind::CastLike ? declared_dtype(n, 1)
                                                 : static_cast<DType>(n.attr_int("to", 0));
  if (to != DType::Undefined && !contains(kCastTypes, to))
    return Support::no(fmt::format("no {} kernel to {} on cuda", n.op_type(), ir::dtype_name(to)));
  return not_chain(n);
}

class ExpandKernel final : public runtime::Kernel {
 public:
  explicit ExpandKernel(const KernelInit&) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    require_dtype(ctx, in, kFixedWidthTypes, 0);
    std::vector<int64_t> shape = read_ints(ctx, 1);
    for (int64_t d : shape)
      if (d < 0) ctx.fail("shape has a negative dimension {}", d);
    std::vector<int64_t> out = broadcast_or_fail(ctx, {in.shape(), shape});
    EwIndexing ix = make_indexing(ctx, {in.shape()}, out);
    ir::Tensor& y = ctx.allocate_output(0, in.dtype(), std::move(out));
    SY_CUDA_CHECK(
        launch_broadcast_copy(ir::dtype_size(in.dtype()), in.raw(), y.raw(), ix, stream_of(ctx)));
  }
};

// ---- fused chains ----

const EwChainOpName* find_chain_op(EwOp op) {
  for (const EwChainOpName& c : kEwChainOps)
    if (op == c.op) return &c;
  return nullptr;
}

/// A chain node's program: the launch's steps and, per operand slot, the node input it reads.
struct ChainPlan {
  EwChain chain;
  std::vector<size_t> slot_inputs = {0};
};

/// Reads the ElementwiseChain of `n` (fusion.h) into `plan`; returns why it is unusable, "" when
/// fine.
std::string parse_chain(const ir::Node& n, ChainPlan& plan) {
  const ElementwiseChain* chain = n.annotation<ElementwiseChain>();
  if (!chain) return "no fused chain";
  const size_t steps = chain->steps.size();
  if (steps == 0 || steps > static_cast<size_t>(kEwMaxChainSteps))
    return fmt::format("a chain of {} steps (at most {})", steps, kEwMaxChainSteps);
  if (!n.input(0)) return "a chain without input 0";
  plan.chain.num_steps = static_cast<int32_t>(steps);
  for (size_t s = 0; s < steps; ++s) {
    const ElementwiseChain::Step& fused = chain->steps[s];
    const EwChainOpName* op = find_chain_op(fused.op);
    if (!op)
      return fmt::format("chain step {} (op {}) is not a fusable op", s,
                         static_cast<int32_t>(fused.op));
    EwChainStep& step = plan.chain.steps[s];
    step.op = op->op;
    step.swapped = fused.swapped ? 1 : 0;
    const int64_t operand = fused.operand;
    if (!ops::traits(op->name).broadcast_elementwise) {
      if (operand != kEwUnaryStep) return fmt::format("unary chain step {} has an operand", s);
      if (op->op == EwOp::Gelu) {
        step.params.flag = fused.alpha != 0 ? 1 : 0;
      } else {
        step.params.alpha = fused.alpha;
      }
      step.operand = kEwUnaryStep;
    } else if (operand == kEwScalarStep) {
      step.params.alpha = fused.alpha;
      step.operand = kEwScalarStep;
    } else {
      if (operand < 0 || static_cast<size_t>(operand) >= n.num_inputs() ||
          !n.input(static_cast<size_t>(operand)))
        return fmt::format("chain step {} reads a missing input {}", s, operand);
      auto it =
          std::find(plan.slot_inputs.begin(), plan.slot_inputs.end(), static_cast<size_t>(operand));
      if (it == plan.slot_inputs.end()) {
        if (plan.slot_inputs.size() == static_cast<size_t>(kEwMaxOperands))
          return fmt::format("a chain reading more than {} tensors", kEwMaxOperands);
        plan.slot_inputs.push_back(static_cast<size_t>(operand));
        it = plan.slot_inputs.end() - 1;
      }
      step.operand = static_cast<int32_t>(it - plan.slot_inputs.begin());
    }
  }
  return "";
}

Support chain_check(const ir::Node& n) {
  if (!has_chain(n)) return Support::no(n.describe() + ": not a fused chain");
  ChainPlan plan;
  std::string why = parse_chain(n, plan);
  if (!why.empty()) return Support::no(n.describe() + ": " + why);
  return Support::yes();
}

class ChainKernel final : public runtime::Kernel {
 public:
  explicit ChainKernel(const KernelInit& init) {
    std::string why = parse_chain(init.node, plan_);
    SY_CHECK(why.empty(), InvalidModel, "{}: {}", init.node.describe(), why);
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& first = ctx.input(0);
    require_dtype(ctx, first, kFloatTypes, 0);
    std::vector<std::vector<int64_t>> shapes;
    const void* operands[kEwMaxOperands] = {};
    for (size_t k = 0; k < plan_.slot_inputs.size(); ++k) {
      const ir::Tensor& t = ctx.input(plan_.slot_inputs[k]);
      require_same_dtype(ctx, first, t, plan_.slot_inputs[k]);
      shapes.push_back(t.shape());
      operands[k] = t.raw();
    }
    std::vector<int64_t> shape = broadcast_or_fail(ctx, shapes);
    EwIndexing ix = make_indexing(ctx, shapes, shape);
    ir::Tensor& y = ctx.allocate_output(0, first.dtype(), std::move(shape));
    SY_CUDA_CHECK(launch_chain(first.dtype(), plan_.chain, operands, y.raw(), ix, stream_of(ctx)));
  }

 private:
  ChainPlan plan_;
};

// ---- registration ----

template <typename K, typename... Args>
KernelDef def_of(OpKind op, std::vector<DType> types, Support (*check)(const ir::Node&),
                 Args... args) {
  std::vector<DType> accepted = types;
  return KernelDef{op, std::move(accepted), 0, check,
                   [types = std::move(types), args...](const KernelInit& init) {
                     return std::unique_ptr<runtime::Kernel>(new K(init, args..., types));
                   }};
}

void add_unary(runtime::KernelRegistry& r, OpKind kind, EwOp op, const std::vector<DType>& types) {
  r.add(def_of<UnaryKernel>(kind, types, not_chain, op));
}

void add_binary(runtime::KernelRegistry& r, OpKind kind, EwOp op, const std::vector<DType>& types) {
  r.add(def_of<BinaryKernel>(kind, types, plain_node, op));
}

}  // namespace

void register_elementwise_kernels(runtime::KernelRegistry& r) {
  using K = OpKind;
  // Fused chains first: a node with an ElementwiseChain runs the chain kernel; every plain
  // kernel below refuses such a node (not_chain, plain_node).
  for (const EwChainOpName& c : kEwChainOps) {
    auto kind = ops::find_op_kind(c.name);
    SY_ASSERT(kind.has_value() && ops::traits(*kind).layout_free());
    r.add(KernelDef{*kind, kFloatTypes, 0, chain_check, runtime::make_factory<ChainKernel>()});
  }

  const std::vector<DType>& fl = kFloatTypes;
  // clang-format off
  const std::vector<std::pair<K, EwOp>> float_unary = {
      {K::LeakyRelu, EwOp::LeakyRelu}, {K::Elu, EwOp::Elu}, {K::Selu, EwOp::Selu},
      {K::Celu, EwOp::Celu}, {K::Sigmoid, EwOp::Sigmoid}, {K::HardSigmoid, EwOp::HardSigmoid},
      {K::HardSwish, EwOp::HardSwish}, {K::Tanh, EwOp::Tanh}, {K::Exp, EwOp::Exp},
      {K::Log, EwOp::Log}, {K::Sqrt, EwOp::Sqrt}, {K::Reciprocal, EwOp::Reciprocal},
      {K::Floor, EwOp::Floor}, {K::Ceil, EwOp::Ceil}, {K::Round, EwOp::Round},
      {K::Sin, EwOp::Sin}, {K::Cos, EwOp::Cos}, {K::Tan, EwOp::Tan}, {K::Asin, EwOp::Asin},
      {K::Acos, EwOp::Acos}, {K::Atan, EwOp::Atan}, {K::Sinh, EwOp::Sinh},
      {K::Cosh, EwOp::Cosh}, {K::Asinh, EwOp::Asinh}, {K::Acosh, EwOp::Acosh},
      {K::Atanh, EwOp::Atanh}, {K::Erf, EwOp::Erf}, {K::Softplus, EwOp::Softplus},
      {K::Softsign, EwOp::Softsign}, {K::Mish, EwOp::Mish},
      {K::ThresholdedRelu, EwOp::ThresholdedRelu}, {K::Shrink, EwOp::Shrink},
      {K::IsNaN, EwOp::IsNaN}, {K::IsInf, EwOp::IsInf}};
  // clang-format on
  for (const auto& [kind, op] : float_unary) add_unary(r, kind, op, fl);
  add_unary(r, K::Abs, EwOp::Abs, kNumericTypes);
  add_unary(r, K::Neg, EwOp::Neg, kNumericTypes);
  add_unary(r, K::Sign, EwOp::Sign, kNumericTypes);
  add_unary(r, K::Relu, EwOp::Relu, kNumericTypes);
  add_unary(r, K::Not, EwOp::Not, {DType::Bool});
  add_unary(r, K::BitwiseNot, EwOp::BitwiseNot, kIntegerTypes);
  r.add(KernelDef{K::Gelu, fl, 0,
                  [](const ir::Node& n) {
                    std::string a = n.attr_string("approximate", "none");
                    if (a != "none" && a != "tanh")
                      return Support::no(fmt::format("{}: approximate '{}' is not 'none' or 'tanh'",
                                                     n.describe(), a));
                    return not_chain(n);
                  },
                  [](const KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
                    return std::make_unique<UnaryKernel>(init, EwOp::Gelu, kFloatTypes);
                  }});
  r.add(
      KernelDef{K::Clip, kNumericTypes, 0, not_chain, runtime::make_factory<ClipKernel>(), {1, 2}});

  const std::vector<std::pair<K, EwOp>> numeric_binary = {
      {K::Add, EwOp::Add},
      {K::Sub, EwOp::Sub},
      {K::Mul, EwOp::Mul},
      {K::Div, EwOp::Div},
      {K::PRelu, EwOp::PRelu},
      {K::Less, EwOp::Less},
      {K::Greater, EwOp::Greater},
      {K::LessOrEqual, EwOp::LessOrEqual},
      {K::GreaterOrEqual, EwOp::GreaterOrEqual}};
  for (const auto& [kind, op] : numeric_binary) add_binary(r, kind, op, kNumericTypes);
  add_binary(r, K::Equal, EwOp::Equal, kFixedWidthTypes);
  add_binary(r, K::And, EwOp::And, {DType::Bool});
  add_binary(r, K::Or, EwOp::Or, {DType::Bool});
  add_binary(r, K::Xor, EwOp::Xor, {DType::Bool});
  add_binary(r, K::BitwiseAnd, EwOp::BitwiseAnd, kIntegerTypes);
  add_binary(r, K::BitwiseOr, EwOp::BitwiseOr, kIntegerTypes);
  add_binary(r, K::BitwiseXor, EwOp::BitwiseXor, kIntegerTypes);
  r.add(KernelDef{K::Mod, kNumericTypes, 0, plain_node,
                  [](const KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
                    EwOp op = init.node.attr_int("fmod", 0) != 0 ? EwOp::FMod : EwOp::Mod;
                    return std::make_unique<BinaryKernel>(init, op, kNumericTypes);
                  }});
  r.add(KernelDef{K::BitShift, kUnsignedTypes, 0, plain_node,
                  [](const KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
                    EwOp op = init.node.attr_string("direction") == "LEFT" ? EwOp::ShiftLeft
                                                                           : EwOp::ShiftRight;
                    return std::make_unique<BinaryKernel>(init, op, kUnsignedTypes);
                  }});
  r.add(KernelDef{K::Pow, kNumericTypes, 0,
                  [](const ir::Node& n) {
                    DType e = declared_dtype(n, 1);
                    if (e != DType::Undefined && !contains(kNumericTypes, e))
                      return Support::no(fmt::format("no Pow kernel for a {} exponent on cuda",
                                                     ir::dtype_name(e)));
                    return plain_node(n);
                  },
                  runtime::make_factory<PowKernel>()});

  r.add(def_of<VariadicKernel>(K::Max, kNumericTypes, plain_node, EwOp::Max, false));
  r.add(def_of<VariadicKernel>(K::Min, kNumericTypes, plain_node, EwOp::Min, false));
  r.add(def_of<VariadicKernel>(K::Sum, fl, plain_node, EwOp::Add, false));
  r.add(def_of<VariadicKernel>(K::Mean, fl, plain_node, EwOp::Add, true));
  r.add(KernelDef{K::Where, kFixedWidthTypes, 1, plain_node, runtime::make_factory<WhereKernel>()});

  r.add(KernelDef{K::Cast, kCastTypes, 0, cast_check, runtime::make_factory<CastKernel>()});
  r.add(KernelDef{K::CastLike, kCastTypes, 0, cast_check, runtime::make_factory<CastKernel>()});
  r.add(KernelDef{
      K::Expand, kFixedWidthTypes, 0, plain_node, runtime::make_factory<ExpandKernel>(), {1}});
}

}  // namespace switchyard::cuda
