#include "ops/gather_geometry.h"

#include <fmt/format.h>

#include <algorithm>

#include "ir/check.h"
#include "ir/tensor.h"
#include "ops/node_error.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

void check_element_indices_shape(const ir::Node& node, const std::vector<int64_t>& data,
                                 const std::vector<int64_t>& indices, size_t axis) {
  if (indices.size() != data.size())
    fail_node(node, "indices have rank {}, data has rank {}", indices.size(), data.size());
  for (size_t k = 0; k < indices.size(); ++k)
    if (k != axis && indices[k] > data[k])
      fail_node(node, "indices have shape {}, larger than data {} on axis {}",
                ir::shape_to_string(indices), ir::shape_to_string(data), k);
}

size_t check_scatter_elements(const ir::Node& node, const ir::Tensor& data,
                              const std::vector<int64_t>& indices, const ir::Tensor& updates,
                              int64_t axis) {
  if (data.rank() == 0) fail_node(node, "data must have rank >= 1");
  size_t a = static_cast<size_t>(normalize_axis(node, axis, data.rank()));
  if (updates.shape() != indices)
    fail_node(node, "updates have shape {}, indices have {}", ir::shape_to_string(updates.shape()),
              ir::shape_to_string(indices));
  if (updates.dtype() != data.dtype()) fail_node(node, "updates must have the data's dtype");
  check_element_indices_shape(node, data.shape(), indices, a);
  return a;
}

std::vector<int64_t> gather_nd_shape(const ir::Node& node, const std::vector<int64_t>& data,
                                     const std::vector<int64_t>& indices, int64_t b) {
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (r < 1 || q < 1) fail_node(node, "data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    fail_node(node, "batch_dims {} must be less than both ranks ({}, {})", b, r, q);
  const int64_t m = indices.back();
  if (m < 1 || m > r - b)
    fail_node(node, "indices' last dim {} must be in [1, {}] (data rank - batch_dims)", m, r - b);
  for (size_t i = 0; i < static_cast<size_t>(b); ++i)
    if (data[i] != indices[i])
      fail_node(node, "batch dim {} is {} in data and {} in indices", i, data[i], indices[i]);
  std::vector<int64_t> shape(indices.begin(), indices.end() - 1);
  shape.insert(shape.end(), data.begin() + b + m, data.end());
  return shape;
}

int64_t check_scatter_nd(const ir::Node& node, const ir::Tensor& data,
                         const std::vector<int64_t>& indices, const ir::Tensor& updates) {
  if (indices.empty()) fail_node(node, "indices must have rank >= 1");
  if (updates.dtype() != data.dtype()) fail_node(node, "updates must have the data's dtype");
  const int64_t k = indices.back();
  if (k > data.rank())
    fail_node(node, "indices' last dim {} exceeds the data rank {}", k, data.rank());
  std::vector<int64_t> want(indices.begin(), indices.end() - 1);
  want.insert(want.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != want)
    fail_node(node, "updates have shape {}, expected {}", ir::shape_to_string(updates.shape()),
              ir::shape_to_string(want));
  return k;
}

}  // namespace switchyard::ops
