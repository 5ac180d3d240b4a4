// CPU kernel of Stencil (domain ai.switchyard): float32 X and W, 2-D or 3-D windows. Each
// spatial dim gets a table of the input coordinate every (output, tap) pair reads (padding
// resolved there), so the inner loops are lookups; planes (N·C) run in parallel.
#include <array>
#include <string>

#include "backends/cpu/kernels/common.h"
#include "ir/checked_math.h"
#include "ops/stencil_geometry.h"

namespace switchyard::cpu {

namespace {

using ops::StencilReduction;

// A window of 2-D is run as 3-D with a depth of 1.
constexpr size_t kDims = 3;

struct StencilPlan {
  int64_t planes = 0;  // N * C
  std::array<int64_t, kDims> in{}, out{}, window{};
  // Per dim: out[d] x window[d] input coordinates, -1 for a zero.
  std::array<std::vector<int64_t>, kDims> source;
  std::vector<int64_t> out_shape;
};

class Stencil : public runtime::Kernel {
 public:
  explicit Stencil(const runtime::KernelInit& init) : who_(init.node.describe()) {
    const ir::Node& node = init.node;
    const ir::Type& w = node.input(1)->type();
    const ir::Type& x = node.input(0)->type();
    int64_t rank = w.has_rank() ? w.rank() : x.has_rank() ? x.rank() - 2 : -1;
    SY_CHECK(rank >= 0, Unsupported,
             "{}: the CPU Stencil kernel needs the rank of X or W known when it is compiled", who_);
    attrs_ = ops::read_stencil_attrs(node, static_cast<size_t>(rank));
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    StencilPlan plan = make_plan(x.shape(), w.shape());
    if (attrs_.gives_indices()) {
      ir::Tensor& y = ctx.allocate_output(0, DType::Int64, plan.out_shape);
      compute(plan, x.data<float>(), w.data<float>(), y.data<int64_t>(), ctx.num_threads());
    } else {
      ir::Tensor& y = ctx.allocate_output(0, DType::Float32, plan.out_shape);
      compute(plan, x.data<float>(), w.data<float>(), y.data<float>(), ctx.num_threads());
    }
  }

 private:
  StencilPlan make_plan(const std::vector<int64_t>& xs, const std::vector<int64_t>& ws) const {
    const ops::StencilAttrs& a = attrs_;
    const size_t rank = a.spatial();
    SY_CHECK(ws.size() == rank && xs.size() == rank + 2, InvalidArgument,
             "{}: X has rank {} and the window W rank {}; expected {} and {}", who_, xs.size(),
             ws.size(), rank + 2, rank);
    StencilPlan p;
    p.planes = ir::checked_mul(xs[0], xs[1], "Stencil planes");
    p.out_shape = {xs[0], xs[1]};
    const size_t skip = kDims - rank;  // leading dims of size 1
    for (size_t d = 0; d < kDims; ++d) {
      if (d < skip) {
        p.in[d] = p.out[d] = p.window[d] = 1;
        p.source[d] = {0};
        continue;
      }
      const size_t s = d - skip;
      p.in[d] = xs[s + 2];
      p.window[d] = ws[s];
      p.out[d] = ops::stencil_output_size(who_, a, s, p.in[d], p.window[d]);
      p.out_shape.push_back(p.out[d]);
      p.source[d].resize(static_cast<size_t>(ir::checked_mul(p.out[d], p.window[d], "Stencil")));
      for (int64_t o = 0; o < p.out[d]; ++o)
        for (int64_t k = 0; k < p.window[d]; ++k) {
          int64_t i = o * a.strides[s] - a.pads[s] + k * a.dilations[s];
          p.source[d][static_cast<size_t>(o * p.window[d] + k)] =
              ops::stencil_source_index(i, p.in[d], a.padding);
        }
    }
    ir::checked_numel(p.out_shape);
    return p;
  }

  template <typename Out>
  void compute(const StencilPlan& p, const float* x, const float* w, Out* y, int threads) const {
    const int64_t in_plane = p.in[0] * p.in[1] * p.in[2];
    const int64_t out_plane = p.out[0] * p.out[1] * p.out[2];
    const StencilReduction reduction = attrs_.reduction;
    parallel_for(p.planes, 1, threads, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const float* xp = x + plane * in_plane;
        Out* yp = y + plane * out_plane;
        for (int64_t od = 0; od < p.out[0]; ++od)
          for (int64_t oh = 0; oh < p.out[1]; ++oh)
            for (int64_t ow = 0; ow < p.out[2]; ++ow)
              *yp++ = static_cast<Out>(window_value(p, xp, w, reduction, od, oh, ow));
      }
    });
  }

  // The reduced value (or flat tap index) of one output position. Ties keep the first tap.
  static double window_value(const StencilPlan& p, const float* xp, const float* w,
                             StencilReduction reduction, int64_t od, int64_t oh, int64_t ow) {
    const int64_t* sd = p.source[0].data() + od * p.window[0];
    const int64_t* sh = p.source[1].data() + oh * p.window[1];
    const int64_t* sw = p.source[2].data() + ow * p.window[2];
    float sum = 0;
    float best = 0;
    int64_t best_tap = -1;
    const bool wants_min =
        reduction == StencilReduction::Min || reduction == StencilReduction::ArgMin;
    int64_t tap = 0;
    for (int64_t kd = 0; kd < p.window[0]; ++kd)
      for (int64_t kh = 0; kh < p.window[1]; ++kh)
        for (int64_t kw = 0; kw < p.window[2]; ++kw, ++tap) {
          int64_t d = sd[kd], h = sh[kh], c = sw[kw];
          float v = d < 0 || h < 0 || c < 0 ? 0.0f : xp[(d * p.in[1] + h) * p.in[2] + c];
          float product = v * w[tap];
          if (reduction == StencilReduction::Sum) {
            sum += product;
          } else if (best_tap < 0 || (wants_min ? product < best : product > best)) {
            best = product;
            best_tap = tap;
          }
        }
    switch (reduction) {
      case StencilReduction::Sum:
        return sum;
      case StencilReduction::Min:
      case StencilReduction::Max:
        return best;
      case StencilReduction::ArgMin:
      case StencilReduction::ArgMax:
        return static_cast<double>(best_tap);
    }
    return 0;
  }

  std::string who_;  // the node, for errors
  ops::StencilAttrs attrs_;
};

}  // namespace

void register_stencil_kernels(runtime::KernelRegistry& r) {
  r.add<Stencil>(ops::OpKind::Stencil, {DType::Float32});
}

}  // namespace switchyard::cpu
