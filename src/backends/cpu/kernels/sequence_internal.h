// Helpers shared by the sequence and control_flow CPU kernels: dtype-agnostic tensor making and
// block copies (strings included), and reading one-element control tensors.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

/// Every dtype a value-moving kernel handles (it copies elements, never computes on them).
inline std::vector<DType> movable_dtypes() {
  std::vector<DType> v = dtypes_of(AllPodTypes{});
  v.push_back(DType::String);
  return v;
}

/// A fresh tensor from the run's pool (strings: heap), for values that are not node outputs,
/// such as sequence elements and body inputs. Contents are not initialised (strings: empty).
inline ir::Tensor new_tensor(runtime::KernelContext& ctx, DType dtype, std::vector<int64_t> shape) {
  if (dtype == DType::String) return ir::Tensor(dtype, std::move(shape));
  size_t bytes = ir::checked_nbytes(dtype, ir::checked_numel(shape));
  std::shared_ptr<void> storage = ctx.scratch(bytes);
  void* data = storage.get();
  return ir::Tensor::wrap(dtype, std::move(shape), std::move(storage), data);
}

/// Copies `num_blocks` blocks of `block` elements: block b reads src from element
/// src_offset + b * src_stride and writes dst from dst_offset + b * dst_stride.
inline void copy_blocks(const ir::Tensor& src, int64_t src_offset, int64_t src_stride,
                        ir::Tensor& dst, int64_t dst_offset, int64_t dst_stride, int64_t num_blocks,
                        int64_t block) {
  if (block <= 0 || num_blocks <= 0) return;
  if (src.dtype() == DType::String) {
    const std::string* s = src.data<std::string>();
    std::string* d = dst.data<std::string>();
    for (int64_t b = 0; b < num_blocks; ++b)
      for (int64_t i = 0; i < block; ++i)
        d[dst_offset + b * dst_stride + i] = s[src_offset + b * src_stride + i];
    return;
  }
  size_t es = ir::dtype_size(src.dtype());
  const char* s = static_cast<const char*>(src.raw());
  char* d = static_cast<char*>(dst.raw());
  for (int64_t b = 0; b < num_blocks; ++b)
    std::memcpy(d + static_cast<size_t>(dst_offset + b * dst_stride) * es,
                s + static_cast<size_t>(src_offset + b * src_stride) * es,
                static_cast<size_t>(block) * es);
}

/// A tensor of `shape` sharing `src`'s storage from element `offset` on (no copy).
inline ir::Tensor view_of(const ir::Tensor& src, std::vector<int64_t> shape, int64_t offset) {
  void* base = const_cast<void*>(src.raw());
  void* data = src.dtype() == DType::String
                   ? static_cast<void*>(static_cast<std::string*>(base) + offset)
                   : static_cast<void*>(static_cast<char*>(base) +
                                        static_cast<size_t>(offset) * ir::dtype_size(src.dtype()));
  return ir::Tensor::wrap(src.dtype(), std::move(shape), src.storage(), data);
}

/// Product of dims [begin, end) of a shape.
inline int64_t dims_product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

/// Reads a tensor that must hold exactly one element of `dtype` (a condition, a trip count, a
/// position); fails naming the node and `what` otherwise.
inline int64_t read_scalar(const runtime::KernelContext& ctx, const ir::Tensor& t,
                           const std::vector<DType>& dtypes, const char* what) {
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype()) == dtypes.end())
    ctx.fail("{} has dtype {}, which is not accepted", what, ir::dtype_name(t.dtype()));
  if (t.numel() != 1)
    ctx.fail("{} must hold one element, got shape {}", what, ir::shape_to_string(t.shape()));
  return t.scalar_as_int(0);
}

}  // namespace switchyard::cpu
