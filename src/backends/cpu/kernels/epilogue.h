// The fused epilogue of a cpu Conv / MatMul / Gemm node (backends/fusion/payload.h): the
// activation of its fusion::Epilogue as a oneDNN eltwise post-op (GELU, sigmoid, tanh,
// hard-swish, swish), or as
// a loop right after the primitive (ReLU and Clip, whose oneDNN post-ops turn NaN into 0) and on
// the paths oneDNN does not take (other dtypes, shapes it declines): the standalone kernels'
// results either way, NaN included. A convolution whose input is known to give no NaN (finite and
// bounded: bounded_input) runs ReLU and Clip as post-ops too (append_nan_dropping).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "ir/tensor.h"
#include "runtime/kernel.h"

namespace switchyard::cpu {

struct Epilogue {
  enum class Act { None, Relu, Gelu, Sigmoid, Tanh, Clip, HardSwish, Swish };
  Act act = Act::None;
  float lo = 0, hi = 0;  // Clip's bounds

  /// The node's fused activation (its fusion::Epilogue; none without one); throws Internal
  /// naming the node for one the cpu kernels do not apply (GeluTanh).
  static Epilogue of(const ir::Node& node);
  bool active() const { return act != Act::None; }
  /// Whether oneDNN runs the activation as a post-op with the standalone kernel's results
  /// (NaN included); when not, the kernel calls apply() after the primitive.
  bool as_post_op() const;
  /// Appends the activation to `ops` when as_post_op().
  void append_to(dnnl::post_ops& ops) const;
  /// Whether the activation is ReLU or Clip, whose oneDNN post-ops give the standalone kernel's
  /// results for every input but NaN (which they turn into a number).
  bool nan_dropping() const { return act == Act::Relu || act == Act::Clip; }
  /// Appends ReLU or Clip (nan_dropping()) as a oneDNN post-op: exact only where the value it
  /// acts on cannot be NaN.
  void append_nan_dropping(dnnl::post_ops& ops) const;
  /// Applies the activation in place to every element of `y` (a float tensor).
  void apply(const ir::Node& node, ir::Tensor& y, int threads) const;
  /// The same when the primitive did not (!as_post_op()).
  void finish(const ir::Node& node, ir::Tensor& y, int threads) const {
    if (active() && !as_post_op()) apply(node, y, threads);
  }
};

/// Whether every element of float32 `x` is a number of magnitude at most `bound` (no NaN, no
/// infinity): one read of x.
bool bounded_input(const ir::Tensor& x, float bound, int threads);

/// y += z elementwise (same shape and dtype; float dtypes): a fused residual on the loop paths.
void add_in_place(const ir::Node& node, ir::Tensor& y, const ir::Tensor& z, int threads);

}  // namespace switchyard::cpu
