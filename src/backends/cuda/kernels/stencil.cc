// Stencil's CUDA kernel, host side (op of domain ai.switchyard): float32, 2-D and 3-D windows,
// every reduction and padding mode. Attributes and output sizes come from
// ops/stencil_geometry.h, so the CPU and the GPU accept and refuse the same nodes; device code is
// in stencil.cu, tested against the CPU kernel (tests/gpu/stencil_test.cc).
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/stencil_impl.h"
#include "ir/checked_math.h"
#include "ops/op_kind.h"
#include "ops/stencil_geometry.h"

namespace switchyard::cuda {

namespace {

using ir::DType;
using runtime::KernelContext;

class Stencil : public runtime::Kernel {
 public:
  explicit Stencil(const runtime::KernelInit& init) : who_(init.node.describe()) {
    const ir::Node& node = init.node;
    const ir::Type& w = node.input(1)->type();
    const ir::Type& x = node.input(0)->type();
    int64_t rank = w.has_rank() ? w.rank() : x.has_rank() ? x.rank() - 2 : -1;
    SY_CHECK(rank >= 0, Unsupported,
             "{}: the CUDA Stencil kernel needs the rank of X or W known when it is compiled",
             who_);
    attrs_ = ops::read_stencil_attrs(node, static_cast<size_t>(rank));
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    const size_t rank = attrs_.spatial();
    if (w.shape().size() != rank || x.shape().size() != rank + 2)
      ctx.fail("X has rank {} and the window W rank {}; expected {} and {}", x.shape().size(),
               w.shape().size(), rank + 2, rank);
    StencilArgs args;
    args.mode = static_cast<StencilMode>(attrs_.reduction);
    args.padding = static_cast<StencilPad>(attrs_.padding);
    args.x = x.data<float>();
    args.w = w.data<float>();
    args.planes = ir::checked_mul(x.dim(0), x.dim(1), "Stencil planes");
    std::vector<int64_t> out_shape = {x.dim(0), x.dim(1)};
    StencilWindow& s = args.window;
    const size_t skip = 3 - rank;  // a 2-D window runs with depth 1
    for (size_t i = 0; i < rank; ++i) {
      const int64_t in = x.dim(static_cast<int64_t>(i) + 2);
      s.in[i + skip] = in;
      s.window[i + skip] = w.dim(static_cast<int64_t>(i));
      s.out[i + skip] = ops::stencil_output_size(who_, attrs_, i, in, s.window[i + skip]);
      s.strides[i + skip] = attrs_.strides[i];
      s.dilations[i + skip] = attrs_.dilations[i];
      s.pad_begin[i + skip] = attrs_.pads[i];
      out_shape.push_back(s.out[i + skip]);
    }
    ir::Tensor& y =
        ctx.allocate_output(0, attrs_.gives_indices() ? DType::Int64 : DType::Float32, out_shape);
    if (y.numel() == 0) return;
    args.y = y.raw();
    SY_CUDA_CHECK(launch_stencil(args, stream_of(ctx)));
  }

 private:
  std::string who_;  // the node, for errors
  ops::StencilAttrs attrs_;
};

}  // namespace

void register_stencil_kernels(runtime::KernelRegistry& r) {
  r.add<Stencil>(ops::OpKind::Stencil, {DType::Float32});
}

}  // namespace switchyard::cuda
