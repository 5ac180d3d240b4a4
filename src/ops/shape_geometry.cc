#include "ops/shape_geometry.h"
#include "ir/checked_math.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "ir/check.h"
#include "ir/tensor.h"
#include "ops/node_error.h"

namespace switchyard::ops {

std::vector<int64_t> reshape_shape(const ir::Node& node, const std::vector<int64_t>& in_shape,
                                   int64_t numel, std::vector<int64_t> shape, bool allowzero) {
  int infer_at = -1;
  bool has_zero = false;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& v = shape[i];
    if (v == -1) {
      if (infer_at >= 0) fail_node(node, "shape has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (v == 0 && !allowzero) {
      if (i >= in_shape.size())
        fail_node(node, "shape copies dim {} (0) but the input has rank {}", i, in_shape.size());
      v = in_shape[i];
    } else if (v < 0) {
      fail_node(node, "shape has an invalid value {}", v);
    }
    has_zero = has_zero || v == 0;
    if (v != 0 && known > std::numeric_limits<int64_t>::max() / v)
      fail_node(node, "shape [{}] has too many elements", fmt::join(shape, ","));
    known *= v;
  }
  if (infer_at >= 0) {
    if (allowzero && has_zero)
      fail_node(node, "with allowzero=1, shape may not hold both 0 and -1");
    if (known == 0 || numel % known != 0)
      fail_node(node, "cannot reshape {} into [{}]", ir::shape_to_string(in_shape),
                fmt::join(shape, ","));
    shape[static_cast<size_t>(infer_at)] = numel / known;
  } else if (known != numel) {
    fail_node(node, "cannot reshape {} ({} elements) into [{}]", ir::shape_to_string(in_shape),
              numel, fmt::join(shape, ","));
  }
  return shape;
}

std::vector<int64_t> split_sizes(const ir::Node& node, int64_t dim, int64_t axis, size_t parts,
                                 const std::optional<std::vector<int64_t>>& split, bool uneven) {
  if (split) {
    if (split->size() != parts)
      fail_node(node, "'split' has {} values for {} outputs", split->size(), parts);
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) fail_node(node, "'split' has a negative size {}", s);
      sum = ir::checked_add(sum, s, "'split' sizes");
    }
    if (sum != dim) fail_node(node, "'split' sums to {} but axis {} has size {}", sum, axis, dim);
    return *split;
  }
  const int64_t k = static_cast<int64_t>(parts);
  int64_t chunk = dim / k;
  if (dim % k != 0) {
    if (!uneven)
      fail_node(node, "axis {} of size {} does not split into {} equal parts", axis, dim, k);
    ++chunk;
    if (chunk * (k - 1) > dim)
      fail_node(node, "axis {} of size {} cannot split into {} parts", axis, dim, k);
  }
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < k; ++i) sizes.push_back(i + 1 < k ? chunk : dim - chunk * (k - 1));
  return sizes;
}

}  // namespace switchyard::ops
