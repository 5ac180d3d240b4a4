// CUDA kernels of the reduction family: Reduce* (opset-18 form, which the importer normalises
// older opsets to: axes as optional host input 1, keepdims, noop_with_empty_axes), ArgMax/ArgMin,
// Softmax/LogSoftmax (opset-13: along one axis; Softmax also with the fused mask Add as input 1),
// TopK (k as host input 1; always sorted, as on the
// cpu) and CumSum (axis as host input 1). Attributes, shape rules and messages mirror the cpu
// kernels (src/backends/cpu/kernels/reduce.cc, normalization_softmax.cc and
// gather_scatter_select.cc); floats accumulate in float32 (float64 for float64), integers in 64
// bits with wrap-around. Device code: reduce.cu.
#include "backends/cuda/kernels/reduce_impl.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <optional>
#include <utility>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/fused_sum.h"
#include "ops/reduce_geometry.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using ir::DType;
using runtime::KernelContext;
using runtime::KernelDef;
using runtime::KernelInit;
using runtime::Support;

const std::vector<DType> kFloats = {DType::Float32, DType::Float16, DType::BFloat16,
                                    DType::Float64};
const std::vector<DType> kNumbers = {DType::Float32, DType::Float16, DType::BFloat16,
                                     DType::Float64, DType::Int32,   DType::Int64};

// Refuses an input whose known rank is above what the strided path's parameters hold.
Support rank_fits(const ir::Node& node) {
  const ir::Value* v = node.input(0);
  if (v && v->type().has_rank() && v->type().rank() > kReduceMaxRank)
    return Support::no(
        fmt::format("the CUDA {} kernel handles rank up to {}, the input has rank {}",
                    node.op_type(), kReduceMaxRank, v->type().rank()));
  return Support::yes();
}

// Which dims the axes input selects: all of them when absent or empty, none when empty and
// noop_with_empty_axes is set.
std::vector<bool> reduced_dims(const KernelContext& ctx, int64_t rank, bool noop) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.has_input(1)) {
    const ir::Tensor& a = ctx.input(1);
    if (a.dtype() != DType::Int64 || a.rank() != 1)
      ctx.fail("axes must be a 1-D int64 tensor, got {} of shape {}", ir::dtype_name(a.dtype()),
               ir::shape_to_string(a.shape()));
    axes = read_ints(ctx, 1);
  }
  return ops::reduced_dims(ctx.node(), rank, axes, noop);
}

// The reduction's layout: dims of size 1 dropped and neighbours of the same kind merged, so
// reduced dims forming one block become an outer x len x inner view.
ReduceShape reduce_shape(const KernelContext& ctx, const std::vector<int64_t>& shape,
                         const std::vector<bool>& reduced) {
  ReduceShape s;
  std::vector<std::pair<int64_t, bool>> dims;  // (size, reduced)
  for (size_t i = 0; i < shape.size(); ++i) {
    (reduced[i] ? s.num_reduced : s.num_out) *= shape[i];
    if (shape[i] == 1) continue;
    if (!dims.empty() && dims.back().second == reduced[i]) {
      dims.back().first *= shape[i];
    } else {
      dims.emplace_back(shape[i], reduced[i]);
    }
  }
  int blocks = 0;
  size_t at = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].second) {
      ++blocks;
      at = i;
    }
  }
  if (s.num_reduced == 0 || blocks == 0) {
    // Nothing to fold (rows of 0 elements give the identity) or one element per output.
    s.outer = s.num_out;
    s.len = s.num_reduced == 0 ? 0 : 1;
    return s;
  }
  if (blocks == 1) {
    for (size_t i = 0; i < dims.size(); ++i)
      (i < at ? s.outer : i == at ? s.len : s.inner) *= dims[i].first;
    return s;
  }
  if (dims.size() > static_cast<size_t>(kReduceMaxRank))
    ctx.fail("the CUDA kernel reduces at most {} alternating groups of dims, got {}",
             kReduceMaxRank, dims.size());
  s.generic = true;
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i].second) {
      s.reduced_dims[s.reduced_rank] = dims[i].first;
      s.reduced_strides[s.reduced_rank++] = stride;
    } else {
      s.kept_dims[s.kept_rank] = dims[i].first;
      s.kept_strides[s.kept_rank++] = stride;
    }
    stride *= dims[i].first;
  }
  // Collected innermost first; the kernels want row-major order.
  std::reverse(s.reduced_dims, s.reduced_dims + s.reduced_rank);
  std::reverse(s.reduced_strides, s.reduced_strides + s.reduced_rank);
  std::reverse(s.kept_dims, s.kept_dims + s.kept_rank);
  std::reverse(s.kept_strides, s.kept_strides + s.kept_rank);
  return s;
}

template <ReduceOp kOp>
class ReduceKernel : public runtime::Kernel {
 public:
  explicit ReduceKernel(const KernelInit& init)
      : keepdims_(init.node.attr_int("keepdims", 1) != 0),
        noop_(init.node.attr_int("noop_with_empty_axes", 0) != 0) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    std::vector<bool> reduced = reduced_dims(ctx, x.rank(), noop_);
    std::vector<int64_t> out_shape = ops::reduced_shape(x.shape(), reduced, keepdims_);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    if (y.numel() == 0) return;
    ReduceShape s = reduce_shape(ctx, x.shape(), reduced);
    size_t bytes = reduce_workspace_bytes(kOp, x.dtype(), s);
    std::shared_ptr<void> workspace = bytes ? ctx.scratch(bytes) : nullptr;
    SY_CUDA_CHECK(
        launch_reduce(kOp, x.dtype(), x.raw(), y.raw(), s, workspace.get(), stream_of(ctx)));
  }

 private:
  bool keepdims_;
  bool noop_;
};

struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

AxisSplit split_at(const ir::Tensor& x, int64_t axis) {
  AxisSplit s;
  for (int64_t i = 0; i < x.rank(); ++i)
    (i < axis ? s.outer : i == axis ? s.len : s.inner) *= x.dim(i);
  return s;
}

template <bool kMax>
class ArgReduceKernel : public runtime::Kernel {
 public:
  explicit ArgReduceKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)),
        keepdims_(init.node.attr_int("keepdims", 1) != 0),
        last_(init.node.attr_int("select_last_index", 0) != 0) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    std::vector<bool> along(static_cast<size_t>(x.rank()), false);
    along[static_cast<size_t>(axis)] = true;
    std::vector<int64_t> out_shape = ops::reduced_shape(x.shape(), along, keepdims_);
    AxisSplit s = split_at(x, axis);
    ir::Tensor& y = ctx.allocate_output(0, DType::Int64, out_shape);
    if (y.numel() == 0) return;
    if (s.len == 0) ctx.fail("cannot select an index along axis {}, which has size 0", axis);
    size_t bytes = arg_reduce_workspace_bytes(x.dtype(), s.outer, s.len, s.inner);
    std::shared_ptr<void> workspace = bytes ? ctx.scratch(bytes) : nullptr;
    SY_CUDA_CHECK(launch_arg_reduce(kMax, last_, x.dtype(), x.raw(), y.data<int64_t>(), s.outer,
                                    s.len, s.inner, workspace.get(), stream_of(ctx)));
  }

 private:
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

template <bool kLog>
class SoftmaxKernel : public runtime::Kernel {
 public:
  explicit SoftmaxKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", -1)) {}

  void run(KernelContext& ctx) const override {
    // Input 1 (backends/fusion/fusion.h): an additive mask M, softmax(X + M) along the last
    // axis. One that broadcasts into X's rows is added row by row; otherwise the sum is made
    // first, as on the cpu.
    if (!ctx.has_input(1)) {
      softmax(ctx, ctx.input(0), SoftmaxMask{});
      return;
    }
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& m = ctx.input(1);
    SoftmaxMask mask;
    if (mask_fits_rows(x, m, mask)) {
      softmax(ctx, x, mask);
      return;
    }
    softmax(ctx, broadcast_sum(ctx, x, m, "mask"), SoftmaxMask{});
  }

 private:
  // Whether mask `m` broadcasts into X's rows (each of its dims, aligned right, 1 or X's; X's
  // dtype) with the softmax along X's last axis; then fills `mask`.
  bool mask_fits_rows(const ir::Tensor& x, const ir::Tensor& m, SoftmaxMask& mask) const {
    if (x.rank() == 0 || m.dtype() != x.dtype() || m.rank() > x.rank()) return false;
    if (axis_ != -1 && axis_ != x.rank() - 1) return false;
    if (x.rank() - 1 > kSoftmaxMaskRank) return false;
    const int64_t off = x.rank() - m.rank();
    for (int64_t i = 0; i < m.rank(); ++i)
      if (m.dim(i) != 1 && m.dim(i) != x.dim(off + i)) return false;
    mask.data = m.raw();
    mask.rank = static_cast<int>(x.rank() - 1);
    int64_t stride = 1;
    for (int64_t d = x.rank(); d-- > 0;) {
      const bool present = d >= off && m.dim(d - off) != 1;
      const int64_t st = present ? stride : 0;
      if (d == x.rank() - 1) {
        mask.step = st;
      } else {
        mask.dims[d] = x.dim(d);
        mask.strides[d] = st;
      }
      if (d >= off) stride *= m.dim(d - off);
    }
    return true;
  }

  void softmax(KernelContext& ctx, const ir::Tensor& x, const SoftmaxMask& mask) const {
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    AxisSplit s = split_at(x, axis);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    SY_CUDA_CHECK(launch_softmax(kLog, x.dtype(), x.raw(), y.raw(), s.outer, s.len, s.inner,
                                 stream_of(ctx), mask));
  }

  int64_t axis_;
};

// The output is always sorted (as on the cpu), which also satisfies sorted = 0.
class TopKKernel : public runtime::Kernel {
 public:
  explicit TopKKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", -1)), largest_(init.node.attr_int("largest", 1) != 0) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    if (!ir::dtype_is_integer(ctx.input(1).dtype()))
      ctx.fail("K must hold integers, got {}", ir::dtype_name(ctx.input(1).dtype()));
    std::vector<int64_t> kv = read_ints(ctx, 1);
    if (kv.size() != 1) ctx.fail("K must hold one value, got {}", kv.size());
    int64_t k = kv[0], dim = x.dim(axis);
    if (k < 0 || k > dim) ctx.fail("K = {} is outside [0, {}] for axis {}", k, dim, axis);
    std::vector<int64_t> shape = x.shape();
    shape[static_cast<size_t>(axis)] = k;
    ir::Tensor& values = ctx.allocate_output(0, x.dtype(), shape);
    ir::Tensor& indices = ctx.allocate_output(1, DType::Int64, shape);
    if (values.numel() == 0) return;
    AxisSplit s = split_at(x, axis);
    size_t bytes = topk_workspace_bytes(x.dtype(), s.outer, s.len, s.inner, k);
    if (bytes == 0 && s.len * k > 4096 && s.len > INT_MAX)
      ctx.fail("the CUDA TopK kernel sorts axes of fewer than 2^31 elements, axis {} has {}", axis,
               s.len);
    std::shared_ptr<void> workspace = bytes ? ctx.scratch(bytes) : nullptr;
    SY_CUDA_CHECK(launch_topk(largest_, x.dtype(), x.raw(), values.raw(), indices.data<int64_t>(),
                              s.outer, s.len, s.inner, k, workspace.get(), bytes, stream_of(ctx)));
  }

 private:
  int64_t axis_;
  bool largest_;
};

class CumSumKernel : public runtime::Kernel {
 public:
  explicit CumSumKernel(const KernelInit& init)
      : exclusive_(init.node.attr_int("exclusive", 0) != 0),
        reverse_(init.node.attr_int("reverse", 0) != 0) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& a = ctx.input(1);
    if (a.dtype() != DType::Int32 && a.dtype() != DType::Int64)
      ctx.fail("axis must be int32 or int64, got {}", ir::dtype_name(a.dtype()));
    if (a.numel() != 1 || a.rank() > 1)
      ctx.fail("axis must be a scalar or a 1-element 1-D tensor, got shape {}",
               ir::shape_to_string(a.shape()));
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), read_ints(ctx, 1)[0], x.rank());
    AxisSplit s = split_at(x, axis);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    SY_CUDA_CHECK(launch_cumsum(exclusive_, reverse_, x.dtype(), x.raw(), y.raw(), s.outer, s.len,
                                s.inner, stream_of(ctx)));
  }

 private:
  bool exclusive_;
  bool reverse_;
};

template <ReduceOp kOp>
void add_reduce(runtime::KernelRegistry& r, ops::OpKind op, const std::vector<DType>& dtypes) {
  KernelDef def;
  def.op = op;
  def.dtypes = dtypes;
  def.check = rank_fits;
  def.create = runtime::make_factory<ReduceKernel<kOp>>();
  def.host_inputs = {1};
  r.add(std::move(def));
}

template <typename K>
void add_with_host_input(runtime::KernelRegistry& r, ops::OpKind op) {
  KernelDef def;
  def.op = op;
  def.dtypes = kNumbers;
  def.create = runtime::make_factory<K>();
  def.host_inputs = {1};
  r.add(std::move(def));
}

}  // namespace

void register_reduce_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  add_reduce<ReduceOp::Sum>(r, OpKind::ReduceSum, kNumbers);
  add_reduce<ReduceOp::Mean>(r, OpKind::ReduceMean, kNumbers);
  add_reduce<ReduceOp::Max>(r, OpKind::ReduceMax, kNumbers);
  add_reduce<ReduceOp::Min>(r, OpKind::ReduceMin, kNumbers);
  add_reduce<ReduceOp::Prod>(r, OpKind::ReduceProd, kNumbers);
  add_reduce<ReduceOp::L1>(r, OpKind::ReduceL1, kNumbers);
  add_reduce<ReduceOp::L2>(r, OpKind::ReduceL2, kNumbers);
  add_reduce<ReduceOp::LogSum>(r, OpKind::ReduceLogSum, kNumbers);
  add_reduce<ReduceOp::SumSquare>(r, OpKind::ReduceSumSquare, kNumbers);
  // Integer log-sum-exp truncates a rounded real, where the GPU's folding order could show.
  add_reduce<ReduceOp::LogSumExp>(r, OpKind::ReduceLogSumExp, kFloats);
  r.add<ArgReduceKernel<true>>(OpKind::ArgMax, kNumbers);
  r.add<ArgReduceKernel<false>>(OpKind::ArgMin, kNumbers);
  r.add<SoftmaxKernel<false>>(OpKind::Softmax, kFloats);
  r.add<SoftmaxKernel<true>>(OpKind::LogSoftmax, kFloats);
  add_with_host_input<TopKKernel>(r, OpKind::TopK);
  add_with_host_input<CumSumKernel>(r, OpKind::CumSum);
}

}  // namespace switchyard::cuda
