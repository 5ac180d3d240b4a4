// CPU kernels of the shape family that pad, crop or reverse: Pad, CenterCropPad,
// ReverseSequence.
#include <limits>
#include <optional>

#include "backends/cpu/kernels/shape_internal.h"
#include "ops/pad_geometry.h"

namespace switchyard::cpu {

namespace {

using runtime::KernelContext;
using runtime::KernelInit;

using ops::PadMode;

// Source index along one axis for output index j (-1: the pad value).
int64_t pad_source(PadMode mode, int64_t j, int64_t pre, int64_t d) {
  int64_t i = j - pre;
  if (i >= 0 && i < d) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : d - 1;
    case PadMode::Wrap:
      return ((i % d) + d) % d;
    case PadMode::Reflect: {
      if (d == 1) return 0;
      int64_t period = 2 * (d - 1);
      int64_t m = ((i % period) + period) % period;
      return m < d ? m : period - m;
    }
  }
  return -1;
}

class PadKernel : public runtime::Kernel {
 public:
  explicit PadKernel(const KernelInit& init) : mode_(ops::pad_mode(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::optional<std::vector<int64_t>> axes;
    if (ctx.has_input(3)) axes = int_values(ctx, 3, "axes");
    const ops::PadGeometry g =
        ops::pad_geometry(ctx.node(), in.shape(), int_values(ctx, 1, "pads"), axes, mode_);
    const std::vector<int64_t>& pre = g.pre;
    const std::vector<int64_t>& shape = g.shape;
    const ir::Tensor* value = nullptr;
    if (mode_ == PadMode::Constant && ctx.has_input(2)) {
      value = &ctx.input(2);
      if (value->dtype() != in.dtype()) ctx.fail("constant_value must have the data's dtype");
      if (value->numel() > 1) ctx.fail("constant_value must be a scalar");
      if (value->numel() == 0) value = nullptr;
    }
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), shape);
    if (out.numel() == 0) return;
    std::vector<std::vector<int64_t>> maps(shape.size());
    for (size_t a = 0; a < shape.size(); ++a) {
      maps[a].resize(static_cast<size_t>(shape[a]));
      for (int64_t j = 0; j < shape[a]; ++j)
        maps[a][static_cast<size_t>(j)] = pad_source(mode_, j, pre[a], in.shape()[a]);
    }
    dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      T fill{};
      if (value) fill = *value->data<T>();
      axis_map_copy<T>(in.data<T>(), out.data<T>(), in.shape(), shape, maps, fill,
                       ctx.num_threads());
    });
  }

 private:
  PadMode mode_;
};

class CenterCropPadKernel : public runtime::Kernel {
 public:
  explicit CenterCropPadKernel(const KernelInit& init) {
    if (init.node.has_attribute("axes")) axes_ = init.node.attr_ints("axes");
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    std::vector<int64_t> target = int_values(ctx, 1, "shape");
    std::vector<int64_t> axes = axes_;
    if (!ctx.node().has_attribute("axes"))
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    if (target.size() != axes.size())
      ctx.fail("shape has {} values for {} axes", target.size(), axes.size());
    if (rank == 0 && !axes.empty()) ctx.fail("axis {} is out of range for a rank-0 input", axes[0]);
    std::vector<int64_t> shape = in.shape();
    std::vector<int64_t> shift(static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axes[i], rank));
      if (target[i] < 0) ctx.fail("shape has a negative value {}", target[i]);
      // Crop: read from (d - t) / 2; pad: write at (t - d) / 2.
      shift[a] = target[i] <= shape[a] ? (shape[a] - target[i]) / 2 : -((target[i] - shape[a]) / 2);
      shape[a] = target[i];
    }
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), shape);
    if (out.numel() == 0) return;
    std::vector<std::vector<int64_t>> maps(shape.size());
    for (size_t a = 0; a < shape.size(); ++a) {
      maps[a].resize(static_cast<size_t>(shape[a]));
      for (int64_t j = 0; j < shape[a]; ++j) {
        int64_t i = j + shift[a];
        maps[a][static_cast<size_t>(j)] = i >= 0 && i < in.shape()[a] ? i : -1;
      }
    }
    dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      axis_map_copy<T>(in.data<T>(), out.data<T>(), in.shape(), shape, maps, T{},
                       ctx.num_threads());
    });
  }

 private:
  std::vector<int64_t> axes_;
};

class ReverseSequenceKernel : public runtime::Kernel {
 public:
  explicit ReverseSequenceKernel(const KernelInit& init)
      : batch_axis_(init.node.attr_int("batch_axis", 1)),
        time_axis_(init.node.attr_int("time_axis", 0)) {
    SY_CHECK((batch_axis_ == 0 || batch_axis_ == 1) && batch_axis_ + time_axis_ == 1, InvalidModel,
             "{}: batch_axis and time_axis must be 0 and 1 in some order", init.node.describe());
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() < 2) ctx.fail("input must have rank >= 2, got {}", in.rank());
    int64_t batch = in.dim(batch_axis_), steps = in.dim(time_axis_);
    std::vector<int64_t> lens = int_values(ctx, 1, "sequence_lens");
    if (static_cast<int64_t>(lens.size()) != batch)
      ctx.fail("sequence_lens has {} values for a batch of {}", lens.size(), batch);
    for (size_t b = 0; b < lens.size(); ++b)
      if (lens[b] < 0 || lens[b] > steps)
        ctx.fail("sequence_lens[{}] = {} is outside [0, {}]", b, lens[b], steps);
    int64_t inner = in.numel() == 0 ? 0 : in.numel() / (batch * steps);
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), in.shape());
    if (out.numel() == 0) return;
    int64_t batch_stride = batch_axis_ == 0 ? steps * inner : inner;
    int64_t time_stride = time_axis_ == 0 ? batch * inner : inner;
    dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      parallel_for(batch * steps, std::max<int64_t>(1, 4096 / inner), ctx.num_threads(),
                   [&](int64_t b0, int64_t e0) {
                     for (int64_t job = b0; job < e0; ++job) {
                       int64_t b = job / steps, t = job % steps;
                       int64_t len = lens[static_cast<size_t>(b)];
                       int64_t from = t < len ? len - 1 - t : t;
                       copy_elements(src + b * batch_stride + from * time_stride,
                                     dst + b * batch_stride + t * time_stride, inner);
                     }
                   });
    });
  }

 private:
  int64_t batch_axis_, time_axis_;
};

}  // namespace

void register_shape_pad_kernels(runtime::KernelRegistry& r) {
  r.add<PadKernel>(ops::OpKind::Pad, movable_dtypes());
  r.add<CenterCropPadKernel>(ops::OpKind::CenterCropPad, movable_dtypes());
  r.add<ReverseSequenceKernel>(ops::OpKind::ReverseSequence, movable_dtypes());
}

}  // namespace switchyard::cpu
