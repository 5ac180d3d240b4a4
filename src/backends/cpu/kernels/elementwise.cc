// CPU kernels of the elementwise family: the broadcast plan shared by the family's files, and
// the family's registration (the kernels live in elementwise_{unary,binary,cast}.cc).
#include "backends/cpu/kernels/elementwise_internal.h"

namespace switchyard::cpu {

BroadcastPlan::BroadcastPlan(const std::vector<std::vector<int64_t>>& in_shapes,
                             const std::vector<int64_t>& out_shape)
    : num_inputs_(in_shapes.size()), numel_(ir::checked_numel(out_shape)) {
  // Output dims of size 1 carry no iteration; drop them, then merge neighbours.
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides(num_inputs_);
  std::vector<std::vector<int64_t>> own;
  for (const auto& s : in_shapes) own.push_back(strides_of(s));
  const size_t rank = out_shape.size();
  for (size_t d = 0; d < rank; ++d) {
    if (out_shape[d] == 1) continue;
    std::vector<int64_t> st(num_inputs_, 0);
    for (size_t k = 0; k < num_inputs_; ++k) {
      const auto& s = in_shapes[k];
      SY_ASSERT(s.size() <= rank);
      if (d + s.size() < rank) continue;
      size_t i = d + s.size() - rank;
      st[k] = s[i] == 1 ? 0 : own[k][i];
    }
    bool merge = !dims.empty();
    for (size_t k = 0; k < num_inputs_ && merge; ++k)
      merge = strides[k].back() == st[k] * out_shape[d];
    if (merge) {
      dims.back() *= out_shape[d];
      for (size_t k = 0; k < num_inputs_; ++k) strides[k].back() = st[k];
    } else {
      dims.push_back(out_shape[d]);
      for (size_t k = 0; k < num_inputs_; ++k) strides[k].push_back(st[k]);
    }
  }
  inner_vec_.assign(num_inputs_, false);
  if (!dims.empty()) {
    inner_ = dims.back();
    dims.pop_back();
    for (size_t k = 0; k < num_inputs_; ++k) {
      SY_ASSERT(strides[k].back() == 0 || strides[k].back() == 1);
      inner_vec_[k] = strides[k].back() == 1;
      strides[k].pop_back();
    }
  }
  outer_dims_ = std::move(dims);
  strides_ = std::move(strides);
}

bool has_zero_element(const ir::Tensor& t) {
  auto scan = [&](auto tag) {
    using U = decltype(tag);
    const U* p = static_cast<const U*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i)
      if (p[i] == 0) return true;
    return false;
  };
  switch (ir::dtype_size(t.dtype())) {
    case 1:
      return scan(uint8_t{});
    case 2:
      return scan(uint16_t{});
    case 4:
      return scan(uint32_t{});
    case 8:
      return scan(uint64_t{});
    default:
      SY_ASSERT(false);
  }
  return false;
}

void register_elementwise_kernels(runtime::KernelRegistry& r) {
  register_elementwise_unary_kernels(r);
  register_elementwise_binary_kernels(r);
  register_elementwise_cast_kernels(r);
}

}  // namespace switchyard::cpu
