// CUDA kernels of Gather, GatherElements, GatherND, ScatterElements, ScatterND and OneHot. The
// host side mirrors the CPU kernels (src/backends/cpu/kernels/gather_scatter.cc); index tensors
// stay on the device, where an index out of range is never followed and fails the run through
// the partition's error word (cuda_context.h). Device code: gather_scatter.cu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/data_host.h"
#include "backends/cuda/kernels/data_impl.h"
#include "ops/gather_geometry.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using namespace movement;  // NOLINT: the family's shared helpers
// ---- gather and scatter ------------------------------------------------------------------

// The dtype of index input i, checked at run time.
DType index_dtype(const KernelContext& ctx, size_t i) {
  DType d = ctx.input(i).dtype();
  if (!is_index_dtype(d)) ctx.fail("indices must be int32 or int64, got {}", ir::dtype_name(d));
  return d;
}

class GatherKernel : public runtime::Kernel {
 public:
  explicit GatherKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    if (data.rank() == 0) ctx.fail("data must have rank >= 1");
    size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, data.rank()));
    const ir::Tensor& indices = ctx.input(1);
    DType idt = index_dtype(ctx, 1);
    std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + a);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + a + 1, data.shape().end());
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), shape);
    if (out.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_gather(
        data.raw(), indices.raw(), idt, out.raw(), elem_size(data.dtype()),
        product(data.shape(), 0, a), data.shape()[a], indices.numel(),
        product(data.shape(), a + 1, data.shape().size()), run_context(ctx).device_error,
        run_context(ctx).error_code, stream_of(ctx)));
  }

 private:
  int64_t axis_;
};

data::ElementsParams elements_params(const KernelContext& ctx, const ir::Tensor& data,
                                     const std::vector<int64_t>& idx_shape, size_t axis) {
  require_rank(ctx, idx_shape.size(), "data");
  data::ElementsParams p;
  p.error = run_context(ctx).device_error;
  p.error_code = run_context(ctx).error_code;
  p.rank = static_cast<int>(idx_shape.size());
  p.axis = static_cast<int>(axis);
  p.axis_dim = data.shape()[axis];
  copy_dims(p.idx_dims, idx_shape);
  copy_dims(p.data_strides, strides_of(data.shape()));
  return p;
}

class GatherElementsKernel : public runtime::Kernel {
 public:
  explicit GatherElementsKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    if (data.rank() == 0) ctx.fail("data must have rank >= 1");
    size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, data.rank()));
    const ir::Tensor& indices = ctx.input(1);
    DType idt = index_dtype(ctx, 1);
    ops::check_element_indices_shape(ctx.node(), data.shape(), indices.shape(), a);
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), indices.shape());
    if (out.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_gather_elements(
        data.raw(), indices.raw(), idt, out.raw(), elem_size(data.dtype()),
        elements_params(ctx, data, indices.shape(), a), stream_of(ctx)));
  }

 private:
  int64_t axis_;
};

class GatherNDKernel : public runtime::Kernel {
 public:
  explicit GatherNDKernel(const KernelInit& init)
      : batch_dims_(init.node.attr_int("batch_dims", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    std::vector<int64_t> shape =
        ops::gather_nd_shape(ctx.node(), data.shape(), indices.shape(), batch_dims_);
    const int64_t b = batch_dims_, m = indices.shape().back();
    DType idt = index_dtype(ctx, 1);
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), shape);
    if (out.numel() == 0) return;
    require_rank(ctx, static_cast<size_t>(m), "the index tuple");
    size_t ub = static_cast<size_t>(b), um = static_cast<size_t>(m);
    const std::vector<int64_t>& ds = data.shape();
    int64_t batch = product(ds, 0, ub);
    std::vector<int64_t> strides = strides_of(ds);
    data::TupleParams p;
    p.error = run_context(ctx).device_error;
    p.error_code = run_context(ctx).error_code;
    p.m = static_cast<int>(m);
    for (size_t j = 0; j < um; ++j) {
      p.dims[j] = ds[ub + j];
      p.strides[j] = strides[ub + j];
    }
    p.tuples_per_batch = batch == 0 ? 0 : indices.numel() / m / batch;
    p.num_tuples = batch * p.tuples_per_batch;
    p.tuples_per_batch = std::max<int64_t>(p.tuples_per_batch, 1);
    p.batch_stride = product(ds, ub, ds.size());
    p.slice = product(ds, ub + um, ds.size());
    SY_CUDA_CHECK(data::launch_gather_nd(data.raw(), indices.raw(), idt, out.raw(),
                                         elem_size(data.dtype()), p, stream_of(ctx)));
  }

 private:
  int64_t batch_dims_;
};

data::Reduction parse_reduction(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "none");
  if (r == "none") return data::Reduction::None;
  if (r == "add") return data::Reduction::Add;
  if (r == "mul") return data::Reduction::Mul;
  if (r == "max") return data::Reduction::Max;
  if (r == "min") return data::Reduction::Min;
  SY_THROW(InvalidModel, "{}: reduction '{}' is not one of none, add, mul, max, min",
           node.describe(), r);
}

// Reductions need arithmetic: numeric dtypes only; plain scatter moves any dtype.
Support check_scatter(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "none");
  const ir::Value* v = node.input(0);
  DType dt = v ? v->type().dtype : DType::Undefined;
  if (r != "none" && dt == DType::Bool)
    return Support::no(fmt::format("no {} kernel with reduction '{}' for {} on cuda",
                                   node.op_type(), r, ir::dtype_name(dt)));
  return both(rank_fits(node, 0), indices_fit(node, 1));
}

// Copies data into a fresh output 0 (the scatter target).
ir::Tensor& copy_data_to_output(KernelContext& ctx, const ir::Tensor& data) {
  ir::Tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
  if (out.nbytes() > 0)
    SY_CUDA_CHECK(data::launch_device_copy(out.raw(), data.raw(), out.nbytes(), stream_of(ctx)));
  return out;
}

// Scratch of one int32 per destination, for resolving duplicate indices (reduction none).
std::shared_ptr<void> winners_scratch(KernelContext& ctx, data::Reduction r, int64_t slots,
                                      int64_t updates) {
  if (r != data::Reduction::None || slots == 0) return nullptr;
  if (updates > std::numeric_limits<int32_t>::max())
    ctx.fail("{} updates are more than the CUDA kernel orders (2^31 - 1)", updates);
  return ctx.scratch(static_cast<size_t>(slots) * sizeof(int32_t));
}

class ScatterElementsKernel : public runtime::Kernel {
 public:
  explicit ScatterElementsKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)), reduction_(parse_reduction(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    const ir::Tensor& updates = ctx.input(2);
    const std::vector<int64_t>& shape = indices.shape();
    const size_t a = ops::check_scatter_elements(ctx.node(), data, shape, updates, axis_);
    DType idt = index_dtype(ctx, 1);
    if (reduction_ != data::Reduction::None && data.dtype() == DType::Bool)
      ctx.fail("reduction needs a numeric dtype, got bool");
    ir::Tensor& out = copy_data_to_output(ctx, data);
    if (updates.numel() == 0 || out.numel() == 0) return;
    std::shared_ptr<void> winners = winners_scratch(ctx, reduction_, out.numel(), updates.numel());
    SY_CUDA_CHECK(data::launch_scatter_elements(
        out.raw(), out.numel(), indices.raw(), idt, updates.raw(), data.dtype(), reduction_,
        elements_params(ctx, data, shape, a), static_cast<int32_t*>(winners.get()),
        stream_of(ctx)));
  }

 private:
  int64_t axis_;
  data::Reduction reduction_;
};

class ScatterNDKernel : public runtime::Kernel {
 public:
  explicit ScatterNDKernel(const KernelInit& init) : reduction_(parse_reduction(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    const ir::Tensor& updates = ctx.input(2);
    const int64_t k = ops::check_scatter_nd(ctx.node(), data, indices.shape(), updates);
    DType idt = index_dtype(ctx, 1);
    if (reduction_ != data::Reduction::None && data.dtype() == DType::Bool)
      ctx.fail("reduction needs a numeric dtype, got bool");
    ir::Tensor& out = copy_data_to_output(ctx, data);
    size_t uk = static_cast<size_t>(k);
    const std::vector<int64_t>& ds = data.shape();
    data::TupleParams p;
    p.error = run_context(ctx).device_error;
    p.error_code = run_context(ctx).error_code;
    p.m = static_cast<int>(k);
    p.slice = product(ds, uk, ds.size());
    p.num_tuples = product(indices.shape(), 0, indices.shape().size() - 1);
    p.tuples_per_batch = std::max<int64_t>(p.num_tuples, 1);
    if (out.numel() == 0 || p.num_tuples == 0) return;
    require_rank(ctx, uk, "the index tuple");
    std::vector<int64_t> strides = strides_of(ds);
    for (size_t j = 0; j < uk; ++j) {
      p.dims[j] = ds[j];
      p.strides[j] = strides[j];
    }
    std::shared_ptr<void> winners =
        winners_scratch(ctx, reduction_, out.numel() / p.slice, p.num_tuples);
    SY_CUDA_CHECK(data::launch_scatter_nd(out.raw(), out.numel(), indices.raw(), idt, updates.raw(),
                                          data.dtype(), reduction_, p,
                                          static_cast<int32_t*>(winners.get()), stream_of(ctx)));
  }

 private:
  data::Reduction reduction_;
};

class OneHotKernel : public runtime::Kernel {
 public:
  explicit OneHotKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", -1)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& indices = ctx.input(0);
    const ir::Tensor& depth_t = ctx.input(1);
    const ir::Tensor& values = ctx.input(2);
    if (depth_t.numel() != 1) ctx.fail("depth must hold one value, got {}", depth_t.numel());
    if (values.numel() != 2) ctx.fail("values must hold 2 elements, got {}", values.numel());
    if (indices.dtype() == DType::Bool || indices.dtype() == DType::String)
      ctx.fail("indices must be numeric, got {}", ir::dtype_name(indices.dtype()));
    double depth_v = read_doubles(ctx, 1)[0];
    if (!(depth_v >= 1 && depth_v < 9.0e18)) ctx.fail("depth must be positive, got {}", depth_v);
    int64_t depth = static_cast<int64_t>(depth_v);
    int64_t rank = indices.rank() + 1;
    if (axis_ < -rank || axis_ >= rank)
      ctx.fail("axis {} is out of range for rank {}", axis_, rank);
    size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    std::vector<int64_t> shape = indices.shape();
    shape.insert(shape.begin() + static_cast<int64_t>(axis), depth);
    ir::Tensor& out = ctx.allocate_output(0, values.dtype(), shape);
    if (out.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_one_hot(
        indices.raw(), indices.dtype(), values.raw(), out.raw(), elem_size(values.dtype()),
        product(indices.shape(), 0, axis), depth, depth_v,
        product(indices.shape(), axis, indices.shape().size()), stream_of(ctx)));
  }

 private:
  int64_t axis_;
};

}  // namespace

void register_gather_scatter_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  const std::vector<DType> plain = plain_dtypes();
  r.add(def<GatherKernel>(OpKind::Gather, plain, {}, check_gather));
  r.add(def<GatherElementsKernel>(OpKind::GatherElements, plain, {}, check_gather_ranked));
  r.add(def<GatherNDKernel>(OpKind::GatherND, plain, {}, check_gather_ranked));
  r.add(def<ScatterElementsKernel>(OpKind::ScatterElements, plain, {}, check_scatter));
  r.add(def<ScatterNDKernel>(OpKind::ScatterND, plain, {}, check_scatter));
  r.add(def<OneHotKernel>(
      OpKind::OneHot, plain, {1},
      [](const ir::Node& n) {
        const ir::Value* v = n.input(0);
        DType d = v ? v->type().dtype : DType::Undefined;
        if (d == DType::Bool || d == DType::String)
          return Support::no(fmt::format("the CUDA OneHot kernel takes numeric indices, got {}",
                                         ir::dtype_name(d)));
        return Support::yes();
      },
      2));
}

}  // namespace switchyard::cuda
