// CUDA kernels of the normalization family, host side: LayerNormalization, BatchNormalization
// (inference only: training_mode=1 is refused through KernelDef::check), InstanceNormalization,
// GroupNormalization (opset-21 per-channel scale/bias, like the CPU kernel),
// LpNormalization and MeanVarianceNormalization, for float32/float16/bfloat16/float64.
// LayerNormalization also takes the fused residual Add (input 3, backends/fusion/fusion.h), and
// writes the sum as well where the Add's result had other readers (fusion::ResidualSum).
// Attribute, shape and error rules mirror the CPU kernels (src/backends/cpu/kernels/
// normalization.cc), which the GPU is tested against; device code is in layer_norm.cu and
// normalization.cu.
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/data_impl.h"
#include "backends/cuda/kernels/fused_sum.h"
#include "backends/cuda/kernels/normalization_impl.h"
#include "backends/cuda/precision.h"
#include "backends/fusion/payload.h"
#include "ops/op_kind.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using ir::DType;
using runtime::KernelContext;
using runtime::Support;

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};

// Refuses nodes whose input 0 is known to have more dims than the kernels' index views hold.
Support check_rank_fits(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (x && x->type().has_rank() && x->type().rank() > kNormMaxRank)
    return Support::no("input has rank " + std::to_string(x->type().rank()) +
                       ", the CUDA kernel handles at most " + std::to_string(kNormMaxRank));
  return Support::yes();
}

// Product of shape[begin, end).
int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

// Requires input i to be a 1-D float tensor of n elements.
const ir::Tensor& channel_input(const KernelContext& ctx, size_t i, int64_t n, const char* what) {
  const ir::Tensor& t = ctx.input(i);
  if (!ir::dtype_is_float(t.dtype()))
    ctx.fail("{} must be a float tensor, got {}", what, ir::dtype_name(t.dtype()));
  if (t.rank() != 1 || t.dim(0) != n)
    ctx.fail("{} has shape {}, expected [{}]", what, ir::shape_to_string(t.shape()), n);
  return t;
}

// channel_input, also of x's dtype (the device code reads it as x's element type).
const ir::Tensor& channel_input_like(const KernelContext& ctx, size_t i, int64_t n,
                                     const char* what, const ir::Tensor& x) {
  const ir::Tensor& t = channel_input(ctx, i, n, what);
  if (t.dtype() != x.dtype())
    ctx.fail("{} has dtype {}, expected {} like X", what, ir::dtype_name(t.dtype()),
             ir::dtype_name(x.dtype()));
  return t;
}

ChannelParam channel_param(const ir::Tensor& t) { return {t.raw(), t.dtype()}; }

class BatchNormKernel : public runtime::Kernel {
 public:
  explicit BatchNormKernel(const runtime::KernelInit& init)
      : epsilon_(init.node.attr_float("epsilon", 1e-5f)) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("X must have rank >= 2, got {}", x.rank());
    const int64_t c = x.dim(1);
    BatchNormArgs a;
    a.scale = channel_param(channel_input(ctx, 1, c, "scale"));
    a.bias = channel_param(channel_input(ctx, 2, c, "B"));
    a.mean = channel_param(channel_input(ctx, 3, c, "input_mean"));
    a.var = channel_param(channel_input(ctx, 4, c, "input_var"));
    if (ctx.num_outputs() > 1)
      ctx.fail("outputs running_mean and running_var exist only with training_mode=1");
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    a.dtype = x.dtype();
    a.x = x.raw();
    a.y = y.raw();
    a.n = x.dim(0);
    a.channels = c;
    a.spatial = product(x.shape(), 2, x.shape().size());
    a.epsilon = epsilon_;
    std::shared_ptr<void> scratch = ctx.scratch(batch_norm_scratch_bytes(x.dtype(), c));
    a.scratch = scratch.get();
    SY_CUDA_CHECK(launch_batch_norm(a, stream_of(ctx)));
  }

 private:
  float epsilon_;
};

Support check_batch_norm(const ir::Node& node) {
  if (node.attr_int("training_mode", 0) != 0)
    return Support::no(
        "BatchNormalization with training_mode=1 has no CUDA kernel (inference mode only)");
  return Support::yes();
}

class InstanceNormKernel : public runtime::Kernel {
 public:
  explicit InstanceNormKernel(const runtime::KernelInit& init)
      : epsilon_(init.node.attr_float("epsilon", 1e-5f)) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 3) ctx.fail("input must have rank >= 3, got {}", x.rank());
    const int64_t c = x.dim(1);
    const ir::Tensor& scale = channel_input_like(ctx, 1, c, "scale", x);
    const ir::Tensor& bias = channel_input_like(ctx, 2, c, "B", x);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    const int64_t spatial = product(x.shape(), 2, x.shape().size());
    GroupNormArgs a;
    a.dtype = x.dtype();
    a.x = x.raw();
    a.y = y.raw();
    a.scale = scale.raw();
    a.bias = bias.raw();
    a.blocks = x.dim(0) * c;
    a.block_size = spatial;
    a.spatial = spatial;
    a.channels = c;
    a.channels_per_block = 1;
    a.epsilon = epsilon_;
    SY_CUDA_CHECK(launch_group_norm(a, stream_of(ctx)));
  }

 private:
  float epsilon_;
};

class GroupNormKernel : public runtime::Kernel {
 public:
  explicit GroupNormKernel(const runtime::KernelInit& init)
      : epsilon_(init.node.attr_float("epsilon", 1e-5f)),
        groups_(init.node.attr_int("num_groups")) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("X must have rank >= 2, got {}", x.rank());
    const int64_t c = x.dim(1);
    if (groups_ <= 0 || c % groups_ != 0)
      ctx.fail("{} channels cannot be split into {} groups", c, groups_);
    const ir::Tensor& scale = channel_input_like(ctx, 1, c, "scale", x);
    const ir::Tensor& bias = channel_input_like(ctx, 2, c, "bias", x);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    const int64_t spatial = product(x.shape(), 2, x.shape().size());
    const int64_t per_group = c / groups_;
    GroupNormArgs a;
    a.dtype = x.dtype();
    a.x = x.raw();
    a.y = y.raw();
    a.scale = scale.raw();
    a.bias = bias.raw();
    a.blocks = x.dim(0) * groups_;
    a.block_size = per_group * spatial;
    a.spatial = spatial;
    a.channels = c;
    a.channels_per_block = per_group;
    a.epsilon = epsilon_;
    SY_CUDA_CHECK(launch_group_norm(a, stream_of(ctx)));
  }

 private:
  float epsilon_;
  int64_t groups_;
};

// Describes how LayerNormalization's Scale or B (tensor t) broadcasts to X's shape: per column
// when it is the same for every row and contiguous over the normalized dims, else through a
// strided view over all of X's dims. Fails like the CPU kernel when t does not broadcast.
void broadcast_operand(const KernelContext& ctx, const ir::Tensor& t, const ir::Tensor& x,
                       int64_t axis, const char* what, bool& per_column, NormDims& view) {
  const std::vector<int64_t>& shape = x.shape();
  if (t.rank() > x.rank())
    ctx.fail("{} has shape {}, which does not broadcast to {}", what,
             ir::shape_to_string(t.shape()), ir::shape_to_string(shape));
  const size_t off = shape.size() - t.shape().size();
  bool constant_before_axis = true;
  for (size_t i = 0; i < t.shape().size(); ++i) {
    if (t.shape()[i] != 1 && t.shape()[i] != shape[off + i])
      ctx.fail("{} has shape {}, which does not broadcast to {}", what,
               ir::shape_to_string(t.shape()), ir::shape_to_string(shape));
    if (off + i < static_cast<size_t>(axis) && t.shape()[i] != 1) constant_before_axis = false;
  }
  // Every dim of t from the axis on is 1 or X's, so equal numel means equal dims there.
  per_column =
      constant_before_axis && t.numel() == product(shape, static_cast<size_t>(axis), shape.size());
  if (per_column) return;
  if (x.rank() > kNormMaxRank)
    ctx.fail("X has rank {}; with {} of shape {} the CUDA kernel handles at most rank {}", x.rank(),
             what, ir::shape_to_string(t.shape()), kNormMaxRank);
  view.rank = static_cast<int>(x.rank());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    view.dims[i] = shape[i];
    const bool present = i >= off && t.shape()[i - off] != 1;
    view.strides[i] = present ? stride : 0;
    if (i >= off) stride *= t.shape()[i - off];
  }
}

// The dtype to allocate output i with: its value's type when that is a float tensor type (under
// --precision fp16/bf16 the partition retypes float32 values), else `fallback`.
DType output_dtype(const ir::Node& node, size_t i, DType fallback) {
  const ir::Value* v = node.output(i);
  if (v && v->type().is_tensor() && ir::dtype_is_float(v->type().dtype)) return v->type().dtype;
  return fallback;
}

class LayerNormKernel : public runtime::Kernel {
 public:
  explicit LayerNormKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", -1)),
        epsilon_(init.node.attr_float("epsilon", 1e-5f)),
        stash_(static_cast<DType>(init.node.attr_int("stash_type", 1))),
        narrow_(init.node.annotation<NarrowCopy>() != nullptr),
        stats_dtype_(narrow_ ? stash_ : output_dtype(init.node, 1, stash_)),
        y_dtype_(init.node.output(0)->type().dtype),
        narrow_dtype_(narrow_ ? init.node.output(1)->type().dtype : DType::Undefined) {
    sum_output_ = backends::fusion::residual_sum_output(init.node);
    if (sum_output_ >= 0)
      sum_dtype_ = init.node.output(static_cast<size_t>(sum_output_))->type().dtype;
    // Outputs past the copy: none, or the residual sum's.
    const size_t narrow_outputs = sum_output_ < 0 ? 2 : static_cast<size_t>(sum_output_) + 1;
    SY_CHECK(!narrow_ || (init.node.num_outputs() == narrow_outputs &&
                          (narrow_dtype_ == DType::Float16 || narrow_dtype_ == DType::BFloat16)),
             Internal,
             "{}: a narrow copy is output 1, float16 or bfloat16, of a node whose other outputs "
             "are Y and, where there is one, the residual sum",
             init.node.describe());
  }

  void run(KernelContext& ctx) const override {
    // Input 3 (fusion.h): a residual Z, Y = LN(X + Z). Of X's shape the kernel adds it row by
    // row, each widened as it is read (absorb_layer_norm_casts may leave either 16-bit and the
    // other float32);
    // one that broadcasts otherwise is summed first, in X's dtype.
    const ir::Tensor* residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const ir::Tensor& x = ctx.input(0);
    // A ResidualSum (payload.h) writes the sum the rows are normalized from: row by row with Z
    // of X's shape, else the broadcast sum itself.
    if (sum_output_ >= 0 && !residual)
      ctx.fail("the fused residual sum needs a residual (input 3), got none");
    if (!residual) {
      normalize(ctx, x, nullptr);
      return;
    }
    if (residual->shape() == x.shape() && x.rank() > 0) {
      if (!ir::dtype_is_float(residual->dtype()))
        ctx.fail("the fused residual is {}, not a float type", ir::dtype_name(residual->dtype()));
      normalize(ctx, x, residual);
      return;
    }
    // The Add the casts were absorbed from ran in Y's dtype (absorb_layer_norm_casts: a 16-bit
    // X and residual under a float32 Y): each operand is widened to it first, as the Casts did.
    const DType yd = y_dtype(x);
    const bool widen = yd != x.dtype() || residual->dtype() != x.dtype();
    if (widen && (!ir::dtype_is_float(residual->dtype()) || yd != DType::Float32))
      ctx.fail("the fused residual is {}, X is {}", ir::dtype_name(residual->dtype()),
               ir::dtype_name(x.dtype()));
    const ir::Tensor summed =
        widen ? broadcast_sum(ctx, widened(ctx, x, yd), widened(ctx, *residual, yd), "residual")
              : broadcast_sum(ctx, x, *residual, "residual");
    if (sum_output_ >= 0) {
      if (sum_dtype_ != summed.dtype())
        ctx.fail("the fused residual sum (output {}) is declared {}, but the sum is {}",
                 sum_output_, ir::dtype_name(sum_dtype_), ir::dtype_name(summed.dtype()));
      ir::Tensor& s =
          ctx.allocate_output(static_cast<size_t>(sum_output_), summed.dtype(), summed.shape());
      if (s.nbytes())
        SY_CUDA_CHECK(
            data::launch_device_copy(s.raw(), summed.raw(), s.nbytes(), run_context(ctx).stream));
    }
    normalize(ctx, summed, nullptr);
  }

 private:
  // LN(x + residual) (residual null, or of x's shape and dtype).
  void normalize(KernelContext& ctx, const ir::Tensor& x, const ir::Tensor* residual) const {
    if (x.rank() == 0) ctx.fail("X must have rank >= 1");
    const int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    // Y's dtype is X's, except where absorb_layer_norm_casts left a 16-bit X under a float32 Y;
    // Scale and B have Y's.
    const DType yd = y_dtype(x);
    const ir::Tensor& scale = ctx.input(1);
    if (scale.dtype() != yd)
      ctx.fail("Scale has dtype {}, expected {} like Y", ir::dtype_name(scale.dtype()),
               ir::dtype_name(yd));
    const bool has_bias = ctx.has_input(2);
    if (has_bias && ctx.input(2).dtype() != yd)
      ctx.fail("B has dtype {}, expected {} like Y", ir::dtype_name(ctx.input(2).dtype()),
               ir::dtype_name(yd));
    LayerNormArgs a;
    broadcast_operand(ctx, scale, x, axis, "Scale", a.scale_per_column, a.scale_view);
    if (has_bias)
      broadcast_operand(ctx, ctx.input(2), x, axis, "B", a.bias_per_column, a.bias_view);
    std::vector<int64_t> stats_shape = x.shape();
    for (int64_t i = axis; i < x.rank(); ++i) stats_shape[static_cast<size_t>(i)] = 1;
    // The sum is written in Y's dtype, which is the one the absorbed Add's result had (float32
    // in a residual stream kept so under --precision fp16/bf16).
    if (sum_output_ >= 0 && residual && sum_dtype_ != yd)
      ctx.fail(
          "the fused residual sum (output {}) is declared {}, but the kernel writes it in Y's "
          "dtype {}",
          sum_output_, ir::dtype_name(sum_dtype_), ir::dtype_name(yd));
    ir::Tensor& y = ctx.allocate_output(0, yd, x.shape());
    // A NarrowCopy's output 1 is Y in 16 bits, not Mean; beside a residual sum outputs 1 and 2
    // are otherwise unread placeholders.
    const bool stats = !narrow_ && sum_output_ < 0;
    ir::Tensor* copy = narrow_ ? &ctx.allocate_output(1, narrow_dtype_, x.shape()) : nullptr;
    ir::Tensor* mean = stats && ctx.num_outputs() > 1
                           ? &ctx.allocate_output(1, stats_dtype_, stats_shape)
                           : nullptr;
    ir::Tensor* inv = stats && ctx.num_outputs() > 2
                          ? &ctx.allocate_output(2, stats_dtype_, stats_shape)
                          : nullptr;
    // With a residual of X's shape the row pass writes the sum (run() wrote a broadcast one).
    ir::Tensor* sum = sum_output_ >= 0 && residual
                          ? &ctx.allocate_output(static_cast<size_t>(sum_output_), yd, x.shape())
                          : nullptr;
    a.rows = product(x.shape(), 0, static_cast<size_t>(axis));
    a.cols = product(x.shape(), static_cast<size_t>(axis), x.shape().size());
    // Rows of zero columns still have (NaN) statistics, as on the CPU.
    if (a.rows == 0 || (a.cols == 0 && !mean && !inv)) return;
    a.dtype = yd;
    a.x_dtype = x.dtype();
    a.x = x.raw();
    a.y_dtype = yd;
    a.y = y.raw();
    if (copy) {
      a.y_narrow = copy->raw();
      a.y_narrow_dtype = narrow_dtype_;
    }
    a.scale = scale.raw();
    a.bias = has_bias ? ctx.input(2).raw() : nullptr;
    a.residual = residual ? residual->raw() : nullptr;
    if (residual) a.residual_dtype = residual->dtype();
    a.sum = sum ? sum->raw() : nullptr;
    a.epsilon = epsilon_;
    a.double_stats =
        stash_ == DType::Float64 || x.dtype() == DType::Float64 || yd == DType::Float64;
    a.stats_dtype = stats_dtype_;
    a.mean = mean ? mean->raw() : nullptr;
    a.inv_std_dev = inv ? inv->raw() : nullptr;
    SY_CUDA_CHECK(launch_layer_norm(a, stream_of(ctx)));
  }

  // Y's dtype: X's, or float32 where the node declares a float32 Y over a 16-bit X (the form
  // absorb_layer_norm_casts makes).
  // `t` in `to` (a float type): itself, or a copy in scratch memory through the Cast kernel
  // (widening is exact).
  static ir::Tensor widened(const KernelContext& ctx, const ir::Tensor& t, DType to) {
    if (t.dtype() == to) return t;
    std::shared_ptr<void> data =
        ctx.scratch(static_cast<size_t>(t.numel()) * ir::dtype_size(to) + 1);
    ir::Tensor out = ir::Tensor::wrap(to, t.shape(), data, data.get());
    if (t.numel() > 0)
      SY_CUDA_CHECK(launch_cast(t.dtype(), to, t.raw(), out.raw(), t.numel(), false,
                                run_context(ctx).stream));
    return out;
  }

  DType y_dtype(const ir::Tensor& x) const {
    const bool narrow_x = x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16;
    return narrow_x && y_dtype_ == DType::Float32 ? DType::Float32 : x.dtype();
  }

  int64_t axis_;
  float epsilon_;
  DType stash_;
  bool narrow_;  // NarrowCopy (fusion.h): output 1 is Y converted to narrow_dtype_
  DType stats_dtype_;
  DType y_dtype_;
  DType narrow_dtype_;
  int sum_output_ = -1;  // ResidualSum (fusion/payload.h): the output S goes to; -1: none
  DType sum_dtype_ = DType::Undefined;
};

class LpNormKernel : public runtime::Kernel {
 public:
  explicit LpNormKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", -1)), p_(init.node.attr_int("p", 2)) {
    SY_CHECK(p_ == 1 || p_ == 2, InvalidModel, "{}: p must be 1 or 2, got {}", init.node.describe(),
             p_);
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    const int64_t axis = ops::normalize_axis(ctx.node(), axis_, x.rank());
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    const size_t ax = static_cast<size_t>(axis);
    SY_CUDA_CHECK(launch_lp_norm(x.dtype(), x.raw(), y.raw(), product(x.shape(), 0, ax),
                                 x.dim(axis), product(x.shape(), ax + 1, x.shape().size()),
                                 static_cast<int>(p_), stream_of(ctx)));
  }

 private:
  int64_t axis_;
  int64_t p_;
};

class MeanVarianceNormKernel : public runtime::Kernel {
 public:
  explicit MeanVarianceNormKernel(const runtime::KernelInit& init)
      : axes_(init.node.attr_ints("axes", {0, 2, 3})) {}

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    for (int64_t axis : axes_) {
      if (axis < -rank || axis >= rank)
        ctx.fail("axis {} is out of range for an input of rank {}", axis, rank);
      size_t k = static_cast<size_t>(axis < 0 ? axis + rank : axis);
      if (reduced[k]) ctx.fail("axis {} appears more than once in axes", axis);
      reduced[k] = true;
    }
    if (rank > kNormMaxRank)
      ctx.fail("input has rank {}, the CUDA kernel handles at most {}", rank, kNormMaxRank);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    if (y.numel() == 0) return;
    MvnArgs a;
    a.dtype = x.dtype();
    a.x = x.raw();
    a.y = y.raw();
    a.count = 1;
    int64_t stride = 1;
    std::vector<int64_t> strides(static_cast<size_t>(rank));
    for (size_t i = static_cast<size_t>(rank); i-- > 0;) {
      strides[i] = stride;
      stride *= x.shape()[i];
    }
    for (size_t i = 0; i < static_cast<size_t>(rank); ++i) {
      NormDims& d = reduced[i] ? a.reduced : a.kept;
      d.dims[d.rank] = x.shape()[i];
      d.strides[d.rank] = strides[i];
      ++d.rank;
      if (reduced[i]) a.count *= x.shape()[i];
    }
    a.kept_count = x.numel() / a.count;
    SY_CUDA_CHECK(launch_mean_variance_norm(a, stream_of(ctx)));
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

void register_normalization_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  r.add(runtime::KernelDef{OpKind::BatchNormalization, kFloatTypes, 0, check_batch_norm,
                           runtime::make_factory<BatchNormKernel>()});
  r.add<InstanceNormKernel>(OpKind::InstanceNormalization, kFloatTypes);
  r.add(runtime::KernelDef{OpKind::LayerNormalization, kFloatTypes, 0, check_rank_fits,
                           runtime::make_factory<LayerNormKernel>()});
  r.add<GroupNormKernel>(OpKind::GroupNormalization, kFloatTypes);
  r.add<LpNormKernel>(OpKind::LpNormalization, kFloatTypes);
  r.add(runtime::KernelDef{OpKind::MeanVarianceNormalization, kFloatTypes, 0, check_rank_fits,
                           runtime::make_factory<MeanVarianceNormKernel>()});
}

}  // namespace switchyard::cuda
