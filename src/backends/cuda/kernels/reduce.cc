// CUDA kernels of the reduction family: Reduce* (axes as optional host input 1, keepdims,
// noop_with_empty_axes; opset-18 form, which the importer normalises older opsets to),
// ArgMax/ArgMin, Softmax/LogSoftmax (opset-13: along one axis). Semantics mirror the cpu kernels
// (src/backends/cpu/kernels/reduce.cc, normalization_softmax.cc); accumulation is float32 for
// float16/bfloat16/float32, double for float64, int64 for integers. TopK and CumSum are not
// implemented on the GPU (they run on the cpu).
#include "backends/cuda/kernels/reduce_impl.h"

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using ir::DType;

const std::vector<DType> kFloats = {DType::Float32, DType::Float16, DType::BFloat16,
                                    DType::Float64};
const std::vector<DType> kNumbers = {DType::Float32, DType::Float16, DType::BFloat16,
                                     DType::Float64, DType::Int32,   DType::Int64};

template <ReduceOp kOp>
class ReduceKernel : public backends::Kernel {
 public:
  explicit ReduceKernel(const backends::KernelInit& init)
      : keepdims_(init.node.attr_int("keepdims", 1) != 0),
        noop_(init.node.attr_int("noop_with_empty_axes", 0) != 0) {}

  void run(backends::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    int64_t rank = x.rank();
    if (rank > kReduceMaxRank) ctx.fail("rank {} is more than {} dims", rank, kReduceMaxRank);
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    std::vector<int64_t> axes;
    if (ctx.has_input(1)) {
      const ir::Tensor& a = ctx.input(1);
      if (a.dtype() != DType::Int64 || a.rank() != 1)
        ctx.fail("axes must be a 1-D int64 tensor, got {} of shape {}", ir::dtype_name(a.dtype()),
                 ir::shape_to_string(a.shape()));
      axes = read_ints(ctx, 1);
    }
    if (axes.empty()) {
      std::fill(reduced.begin(), reduced.end(), !noop_);
    } else {
      for (int64_t a : axes) {
        int64_t n = ops::normalize_axis(ctx.node(), a, rank);
        if (reduced[static_cast<size_t>(n)]) ctx.fail("axis {} is given twice", a);
        reduced[static_cast<size_t>(n)] = true;
      }
    }
    std::vector<int64_t> out_shape;
    ReduceShape s;
    std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
    for (int64_t i = rank - 2; i >= 0; --i)
      strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i + 1)] * x.dim(i + 1);
    s.num_out = 1;
    s.num_reduced = 1;
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = x.dim(i);
      if (reduced[static_cast<size_t>(i)]) {
        if (keepdims_) out_shape.push_back(1);
        s.reduced_dims[s.reduced_rank] = d;
        s.reduced_strides[s.reduced_rank++] = strides[static_cast<size_t>(i)];
        s.num_reduced *= d;
      } else {
        out_shape.push_back(d);
        s.kept_dims[s.kept_rank] = d;
        s.kept_strides[s.kept_rank++] = strides[static_cast<size_t>(i)];
        s.num_out *= d;
      }
    }
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    if (y.numel() == 0) return;
    SY_CUDA_CHECK(launch_reduce(kOp, x.dtype(), x.raw(), y.raw(), s, stream_of(ctx)));
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
  for (int64_t i = 0; i < x.rank(); ++i) (i < axis ? s.outer : i == axis ? s.len : s.inner) *= x.dim(i);
  return s;
}

template <bool kMax>
class ArgReduceKernel : public backends::Kernel {
 public:
  explicit ArgReduceKernel(const backends::KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)),
        keepdims_(init.node.attr_int("keepdims", 1) != 0),
        last_(init.node.attr_int("select_last_index", 0) != 0) {}

  void run(backends::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    std::vector<int64_t> out_shape;
    for (int64_t i = 0; i < x.rank(); ++i) {
      if (i != axis) {
        out_shape.push_back(x.dim(i));
      } else if (keepdims_) {
        out_shape.push_back(1);
      }
    }
    AxisSplit s = split_at(x, axis);
    ir::Tensor& y = ctx.allocate_output(0, DType::Int64, out_shape);
    if (y.numel() == 0) return;
    if (s.len == 0) ctx.fail("cannot select an index along axis {}, which has size 0", axis);
    SY_CUDA_CHECK(launch_arg_reduce(kMax, last_, x.dtype(), x.raw(), y.data<int64_t>(), s.outer,
                                    s.len, s.inner, stream_of(ctx)));
  }

 private:
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

template <bool kLog>
class SoftmaxKernel : public backends::Kernel {
 public:
  explicit SoftmaxKernel(const backends::KernelInit& init)
      : axis_(init.node.attr_int("axis", -1)) {}

  void run(backends::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    AxisSplit s = split_at(x, axis);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    SY_CUDA_CHECK(launch_softmax(kLog, x.dtype(), x.raw(), y.raw(), s.outer, s.len, s.inner,
                                 stream_of(ctx)));
  }

 private:
  int64_t axis_;
};

template <ReduceOp kOp>
void add_reduce(backends::KernelRegistry& r, ops::OpKind op, const std::vector<DType>& dtypes) {
  backends::KernelDef def;
  def.op = op;
  def.dtypes = dtypes;
  def.create = backends::make_factory<ReduceKernel<kOp>>();
  def.host_inputs = {1};
  r.add(std::move(def));
}

}  // namespace

void register_reduce_kernels(backends::KernelRegistry& r) {
  using ops::OpKind;
  add_reduce<ReduceOp::Sum>(r, OpKind::ReduceSum, kNumbers);
  add_reduce<ReduceOp::Mean>(r, OpKind::ReduceMean, kNumbers);
  add_reduce<ReduceOp::Max>(r, OpKind::ReduceMax, kNumbers);
  add_reduce<ReduceOp::Min>(r, OpKind::ReduceMin, kNumbers);
  add_reduce<ReduceOp::Prod>(r, OpKind::ReduceProd, kNumbers);
  add_reduce<ReduceOp::L1>(r, OpKind::ReduceL1, kNumbers);
  add_reduce<ReduceOp::SumSquare>(r, OpKind::ReduceSumSquare, kNumbers);
  add_reduce<ReduceOp::L2>(r, OpKind::ReduceL2, kFloats);
  add_reduce<ReduceOp::LogSum>(r, OpKind::ReduceLogSum, kFloats);
  add_reduce<ReduceOp::LogSumExp>(r, OpKind::ReduceLogSumExp, kFloats);
  r.add<ArgReduceKernel<true>>(OpKind::ArgMax, kNumbers);
  r.add<ArgReduceKernel<false>>(OpKind::ArgMin, kNumbers);
  r.add<SoftmaxKernel<false>>(OpKind::Softmax, kFloats);
  r.add<SoftmaxKernel<true>>(OpKind::LogSoftmax, kFloats);
}

}  // namespace switchyard::cuda
