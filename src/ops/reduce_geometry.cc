#include "ops/reduce_geometry.h"

#include "ops/node_error.h"

namespace switchyard::ops {

std::vector<bool> axes_mask(const ir::Node& node, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<bool> mask(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      fail_node(node, "axis {} is out of range for an input of rank {}", axis, rank);
    size_t k = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (mask[k]) fail_node(node, "axis {} appears more than once in axes", axis);
    mask[k] = true;
  }
  return mask;
}

std::vector<bool> reduced_dims(const ir::Node& node, int64_t rank,
                               const std::optional<std::vector<int64_t>>& axes, bool noop) {
  if (!axes || axes->empty()) return std::vector<bool>(static_cast<size_t>(rank), !noop);
  return axes_mask(node, *axes, rank);
}

std::vector<int64_t> reduced_shape(const std::vector<int64_t>& in, const std::vector<bool>& reduced,
                                   bool keepdims) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

}  // namespace switchyard::ops
