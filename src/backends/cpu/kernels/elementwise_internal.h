// Shared pieces of the elementwise CPU kernels: the broadcast iteration plan used by binary,
// variadic and ternary kernels, and the registration functions of the family's files.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

/// Registers unary math, activation and Clip kernels (elementwise_unary.cc).
void register_elementwise_unary_kernels(runtime::KernelRegistry& r);
/// Registers binary, variadic, Where and PRelu kernels (elementwise_binary.cc).
void register_elementwise_binary_kernels(runtime::KernelRegistry& r);

/// a + b of one float dtype with ONNX broadcasting, into a new tensor: the general path of a
/// fused kernel whose sum does not have the shape its fast path needs (a residual or mask that
/// broadcasts in a way the fused loop does not take).
ir::Tensor add_broadcast(const runtime::KernelContext& ctx, const ir::Tensor& a,
                         const ir::Tensor& b);
/// Registers Cast and CastLike kernels (elementwise_cast.cc).
void register_elementwise_cast_kernels(runtime::KernelRegistry& r);

/// How K inputs broadcast to one output: output dims with size-1 dims dropped and adjacent dims
/// merged wherever every input allows it, so the innermost dim is contiguous (stride 1) or
/// broadcast (stride 0) in each input. Rows of the innermost dim are handed to a callback.
class BroadcastPlan {
 public:
  /// Plans inputs of `in_shapes` broadcast to `out_shape` (which they must broadcast to).
  BroadcastPlan(const std::vector<std::vector<int64_t>>& in_shapes,
                const std::vector<int64_t>& out_shape);

  int64_t numel() const { return numel_; }
  /// Size of the innermost (merged) dim.
  int64_t inner() const { return inner_; }
  /// True when input k is contiguous along the innermost dim (false: broadcast along it).
  bool inner_contiguous(size_t k) const { return inner_vec_[k]; }

  /// Calls row(offsets, out_offset, count) for the output elements [begin, end): offsets[k]
  /// is input k's element offset of the row's first element; each input advances by 1 or 0
  /// per element along the row (inner_contiguous).
  template <typename F>
  void for_range(int64_t begin, int64_t end, F&& row) const;

 private:
  size_t num_inputs_ = 0;
  int64_t numel_ = 0;
  int64_t inner_ = 1;
  std::vector<int64_t> outer_dims_;            // merged dims without the innermost
  std::vector<std::vector<int64_t>> strides_;  // per input, per outer dim
  std::vector<bool> inner_vec_;
};

template <typename F>
void BroadcastPlan::for_range(int64_t begin, int64_t end, F&& row) const {
  if (begin >= end) return;
  const size_t rank = outer_dims_.size();
  std::vector<int64_t> index(rank, 0);
  std::vector<int64_t> base(num_inputs_, 0);
  std::vector<int64_t> offsets(num_inputs_, 0);
  int64_t outer = begin / inner_;
  int64_t pos = begin % inner_;
  for (size_t d = rank; d-- > 0;) {
    index[d] = outer % outer_dims_[d];
    outer /= outer_dims_[d];
    for (size_t k = 0; k < num_inputs_; ++k) base[k] += index[d] * strides_[k][d];
  }
  int64_t cur = begin;
  while (cur < end) {
    int64_t count = std::min(inner_ - pos, end - cur);
    for (size_t k = 0; k < num_inputs_; ++k) offsets[k] = base[k] + (inner_vec_[k] ? pos : 0);
    row(offsets.data(), cur, count);
    cur += count;
    pos = 0;
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < num_inputs_; ++k) base[k] += strides_[k][d];
      if (++index[d] < outer_dims_[d]) break;
      for (size_t k = 0; k < num_inputs_; ++k) base[k] -= strides_[k][d] * outer_dims_[d];
      index[d] = 0;
    }
  }
}

/// True when any element of the integer or bool tensor is zero (a divisor check).
bool has_zero_element(const ir::Tensor& t);

/// Float to integer conversion without undefined behaviour: values inside int64's range
/// truncate toward zero and wrap to the target width (what x86 and numpy do); NaN and values
/// outside int64 give int64's minimum, wrapped, like x86's "integer indefinite".
template <typename To>
To float_to_int(double v) {
  if constexpr (std::is_same_v<To, uint64_t>) {
    if (v >= 0.0 && v < 18446744073709551616.0) return static_cast<uint64_t>(v);
  }
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    return static_cast<To>(std::numeric_limits<int64_t>::min());
  return static_cast<To>(static_cast<int64_t>(v));
}

/// Elements per thread chunk for cheap elementwise loops, and for loops that call libm.
constexpr int64_t kCheapGrain = 32768;
constexpr int64_t kMathGrain = 4096;

/// The logistic function without overflow for large |x| (the Sigmoid kernel's, and the fused
/// sigmoid and swish epilogues' on the paths oneDNN does not take).
template <typename V>
V sigmoid(V x) {
  V e = std::exp(-std::abs(x));
  V r = V(1) / (V(1) + e);
  return x >= V(0) ? r : e * r;
}

}  // namespace switchyard::cpu
