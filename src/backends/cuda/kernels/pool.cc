// CUDA kernels of the pool family, host side: MaxPool (with the optional int64 Indices output,
// storage_order 0/1), AveragePool (count_include_pad), LpPool, and GlobalMaxPool /
// GlobalAveragePool / GlobalLpPool; 1 to 6 spatial dims, auto_pad, ceil_mode and dilations.
// Output shapes, pads and the ceil_mode windows mirror the CPU kernel (src/backends/cpu/kernels/
// pool.cc), which the GPU is tested against; device code is in pool.cu.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/pool_impl.h"
#include "backends/fusion/payload.h"
#include "ops/conv_geometry.h"
#include "ops/op_kind.h"

namespace switchyard::cuda {

namespace {

using ir::DType;
using runtime::KernelContext;
using runtime::Support;

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};
const std::vector<DType> kMaxPoolTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                          DType::Float64, DType::Int8,    DType::UInt8};

// Windowed pools: at most kPoolMaxSpatial spatial dims (the window struct passed by value).
Support check_window_rank(const ir::Node& node) {
  const ir::Attribute* kernel = node.find_attribute("kernel_shape");
  if (kernel && node.attr_ints("kernel_shape").size() > static_cast<size_t>(kPoolMaxSpatial))
    return Support::no("kernel_shape has " + std::to_string(node.attr_ints("kernel_shape").size()) +
                       " dims, the CUDA pool kernels handle at most " +
                       std::to_string(kPoolMaxSpatial));
  return Support::yes();
}

class PoolKernel : public runtime::Kernel {
 public:
  PoolKernel(const runtime::KernelInit& init, PoolMode mode, bool global)
      : mode_(mode), global_(global) {
    const ir::Node& node = init.node;
    if (!global_) attrs_ = ops::read_window_attrs(node, node.attr_ints("kernel_shape"));
    count_include_pad_ = node.attr_int("count_include_pad", 0) != 0;
    const int64_t storage_order = node.attr_int("storage_order", 0);
    SY_CHECK(storage_order == 0 || storage_order == 1, InvalidModel,
             "{}: storage_order must be 0 or 1, got {}", node.describe(), storage_order);
    column_major_indices_ = storage_order == 1;
    p_ = node.attr_int("p", 2);
    SY_CHECK(mode_ != PoolMode::Lp || p_ >= 1, InvalidModel, "{}: p must be >= 1, got {}",
             node.describe(), p_);
    // An omitted Indices output has no readers: skip computing it.
    const ir::Value* indices = node.output(1);
    wants_indices_ = indices && (!indices->uses().empty() || node.owner()->is_output(indices));
    channels_last_ = node.annotation<backends::fusion::ChannelsLast>() != nullptr;
    SY_CHECK(!channels_last_ || !wants_indices_, InvalidModel,
             "{}: a channels-last MaxPool has no Indices output", node.describe());
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() < 3 && !(global_ && x.rank() >= 2))
      ctx.fail("input X has shape {}, expected rank >= 3", ir::shape_to_string(x.shape()));
    ops::WindowAttrs a = attrs_;
    // Channels-last (fusion::ChannelsLast, layout.h): x is [N, spatial..., C].
    const int64_t channels = channels_last_ ? x.shape().back() : x.dim(1);
    const std::vector<int64_t> in =
        channels_last_ ? std::vector<int64_t>(x.shape().begin() + 1, x.shape().end() - 1)
                       : std::vector<int64_t>(x.shape().begin() + 2, x.shape().end());
    const size_t n = in.size();
    if (global_) {
      a.kernel = in;
      for (int64_t& k : a.kernel) k = std::max<int64_t>(k, 1);
      a.strides.assign(n, 1);
      a.dilations.assign(n, 1);
      a.pads.assign(2 * n, 0);
    } else if (n != a.spatial()) {
      ctx.fail("input X has shape {} but kernel_shape has {} dims", ir::shape_to_string(x.shape()),
               a.spatial());
    }
    const ops::WindowGeometry geo = ops::window_geometry(a, in);
    for (size_t i = 0; i < n; ++i)
      if (geo.out[i] < 1)
        ctx.fail("the window (extent {}) does not fit spatial dim {} of size {} with its pads",
                 (a.kernel[i] - 1) * a.dilations[i] + 1, i, in[i]);
    std::vector<int64_t> out_shape = {x.dim(0)};
    if (!channels_last_) out_shape.push_back(channels);
    out_shape.insert(out_shape.end(), geo.out.begin(), geo.out.end());
    if (channels_last_) out_shape.push_back(channels);
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    ir::Tensor* indices =
        wants_indices_ ? &ctx.allocate_output(1, DType::Int64, out_shape) : nullptr;
    if (y.numel() == 0) return;
    if (global_) {
      GlobalPoolArgs g;
      g.mode = mode_;
      g.dtype = x.dtype();
      g.x = x.raw();
      g.y = y.raw();
      g.p = p_;
      g.planes = x.dim(0) * channels;
      g.plane_size = ir::checked_numel(in);
      g.channels = channels;
      g.channels_last = channels_last_;
      SY_CUDA_CHECK(launch_global_pool(g, stream_of(ctx)));
      return;
    }
    if (n > static_cast<size_t>(kPoolMaxSpatial))
      ctx.fail("{} spatial dims; the CUDA pool kernels handle at most {}", n, kPoolMaxSpatial);
    PoolArgs args;
    args.mode = mode_;
    args.dtype = x.dtype();
    args.x = x.raw();
    args.y = y.raw();
    args.indices = indices ? indices->data<int64_t>() : nullptr;
    args.column_major_indices = column_major_indices_;
    args.count_include_pad = count_include_pad_;
    args.p = p_;
    args.planes = x.dim(0) * channels;
    args.channels = channels;
    args.channels_last = channels_last_;
    PoolWindow& w = args.window;
    w.spatial = static_cast<int>(n);
    for (size_t i = 0; i < n; ++i) {
      // The explicit end pad (what count_include_pad counts), before ceil_mode grows it.
      int64_t pb = a.pads[i], pe = a.pads[i + n];
      if (a.auto_pad != ops::AutoPad::NotSet)
        ops::window_output_size(in[i], a.kernel[i], a.strides[i], a.dilations[i], a.auto_pad, false,
                                pb, pe);
      w.in[i] = in[i];
      w.out[i] = geo.out[i];
      w.kernel[i] = a.kernel[i];
      w.strides[i] = a.strides[i];
      w.dilations[i] = a.dilations[i];
      w.pad_begin[i] = geo.pad_begin[i];
      w.explicit_end[i] = pe;
    }
    w.in_size = ir::checked_numel(in);
    w.out_size = ir::checked_numel(geo.out);
    w.ksize = ir::checked_numel(a.kernel);
    SY_CUDA_CHECK(launch_pool(args, stream_of(ctx)));
  }

 private:
  PoolMode mode_;
  bool global_;
  ops::WindowAttrs attrs_;
  bool count_include_pad_ = false;
  bool column_major_indices_ = false;
  int64_t p_ = 2;
  bool wants_indices_ = false;
  bool channels_last_ = false;
};

template <PoolMode kMode, bool kGlobal>
class Pool : public PoolKernel {
 public:
  explicit Pool(const runtime::KernelInit& init) : PoolKernel(init, kMode, kGlobal) {}
};

template <PoolMode kMode>
runtime::KernelDef windowed(ops::OpKind op, std::vector<DType> dtypes) {
  return {op, std::move(dtypes), 0, check_window_rank, runtime::make_factory<Pool<kMode, false>>()};
}

}  // namespace

void register_pool_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  r.add(windowed<PoolMode::Max>(OpKind::MaxPool, kMaxPoolTypes));
  r.add(windowed<PoolMode::Average>(OpKind::AveragePool, kFloatTypes));
  r.add(windowed<PoolMode::Lp>(OpKind::LpPool, kFloatTypes));
  r.add<Pool<PoolMode::Max, true>>(OpKind::GlobalMaxPool, kMaxPoolTypes);
  r.add<Pool<PoolMode::Average, true>>(OpKind::GlobalAveragePool, kFloatTypes);
  r.add<Pool<PoolMode::Lp, true>>(OpKind::GlobalLpPool, kFloatTypes);
}

}  // namespace switchyard::cuda
