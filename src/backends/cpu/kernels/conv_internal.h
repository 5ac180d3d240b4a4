// Shared pieces of the conv family's CPU kernels: concrete convolution dims of one call and the
// plain direct-loop convolution used for the dtypes and cases oneDNN does not cover.
#pragma once

#include <memory>
#include <vector>

#include "backends/cpu/kernels/common.h"
#include "backends/cpu/kernels/epilogue.h"
#include "ops/conv_geometry.h"

namespace switchyard::cpu {

/// Concrete dims of one forward convolution call.
using ops::ConvDims;
using ops::read_group;

/// Validates x [N, C, in...] and w [M, C/group, k...] against each other and the node's window
/// attributes; fails (InvalidArgument naming the node) on mismatches.
ConvDims forward_conv_dims(const runtime::KernelContext& ctx, const ir::Tensor& x,
                           const ir::Tensor& w, int64_t group);

/// For each output position and kernel position, the flat input spatial offset it reads, or
/// -1 where it falls into padding (out_size x kernel_size entries).
std::vector<int64_t> conv_input_offsets(const ConvDims& d);

/// Direct convolution: out[n, m, p] = finish(n, m, p, sum_{c, k} load_x(i) * load_w(j)) with
/// accumulator type Acc; load_x/load_w take flat indices into x [N, C, in...] and
/// w [M, C/group, k...]; padding contributes nothing.
template <typename Acc, typename LoadX, typename LoadW, typename Finish>
void direct_conv(const ConvDims& d, int threads, LoadX load_x, LoadW load_w, Finish finish) {
  const std::vector<int64_t> offsets = conv_input_offsets(d);
  const int64_t in_size = d.in_size(), out_size = d.out_size(), ksize = d.kernel_size();
  const int64_t cg = d.in_channels / d.group, mg = d.out_channels / d.group;
  int64_t work = d.batch * d.out_channels;
  int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * cg * ksize));
  parallel_for(work, grain, threads, [&](int64_t begin, int64_t end) {
    for (int64_t nm = begin; nm < end; ++nm) {
      int64_t n = nm / d.out_channels, m = nm % d.out_channels, g = m / mg;
      for (int64_t p = 0; p < out_size; ++p) {
        const int64_t* off = offsets.data() + p * ksize;
        Acc acc = 0;
        for (int64_t c = 0; c < cg; ++c) {
          int64_t xbase = (n * d.in_channels + g * cg + c) * in_size;
          int64_t wbase = (m * cg + c) * ksize;
          for (int64_t k = 0; k < ksize; ++k) {
            if (off[k] < 0) continue;
            acc += load_x(xbase + off[k]) * load_w(wbase + k);
          }
        }
        finish(n, m, p, acc);
      }
    }
  });
}

struct DnnlConvPlan;

/// A float32 forward convolution through oneDNN for one call's dims and constant float32
/// weights (conv.cc), for kernels that compute something else through it: the exact 8-bit
/// convolutions of conv_quant.cc.
class F32Conv {
 public:
  /// nullptr when oneDNN declines the shape.
  static std::shared_ptr<const F32Conv> make(const ConvDims& d, ir::Tensor weights);
  /// y [N, M, out...] = conv(x [N, C, in...]) (both float32, plain).
  void run(runtime::KernelContext& ctx, const ir::Tensor& x, ir::Tensor& y) const;

 private:
  std::shared_ptr<DnnlConvPlan> plan_;
  ir::Tensor weights_;
};

/// A channels-last float32 2-D depthwise convolution prepared for one call's dims
/// (conv_depthwise.cc): X, Z and Y stored [N, H, W, C], weights [C, 1, kH, kW].
class DepthwiseConv;

/// Whether `d` is a 2-D depthwise convolution with channel multiplier 1 (group == C == M).
bool depthwise_conv_covers(const ConvDims& d);

/// Whether a channels-last float32 convolution `d` on `threads` threads runs the depthwise loop
/// (depthwise_conv_covers, and where measured faster than oneDNN's primitive).
bool depthwise_conv_preferred(const ConvDims& d, int threads);

/// The plan of a depthwise_conv_covers() convolution with `epilogue` fused; constant weights
/// (`constant_weights`, else nullptr) are packed now, others on every run.
std::shared_ptr<const DepthwiseConv> make_depthwise_conv(const ConvDims& d,
                                                         const ir::Tensor* constant_weights,
                                                         const Epilogue& epilogue);

/// y = activation(conv(x, w) + b + z): x [N, H, W, C] (any logical view of that data), w
/// [C, 1, kH, kW], b [C] or nullptr, z and y [N, OH, OW, C] (z may be nullptr); float32, shapes
/// as the plan was made for.
void run_depthwise_conv(const DepthwiseConv& conv, runtime::KernelContext& ctx, const ir::Tensor& x,
                        const ir::Tensor& w, const ir::Tensor* b, const ir::Tensor* z,
                        ir::Tensor& y);

/// Conv-family kernels that live in conv_quant.cc (ConvInteger, QLinearConv).
void register_conv_quant_kernels(runtime::KernelRegistry& r);

}  // namespace switchyard::cpu
