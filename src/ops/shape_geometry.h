// Shape rules of the view and split ops, shared by every backend's kernels: Reshape's target
// shape and Split's part sizes, resolved against a concrete input. Errors are InvalidArgument
// naming the node, with the same words on every device.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

/// Reshape's output shape for an input of `in_shape` (`numel` elements) and the values of its
/// `shape` input: 0 copies the input's dim at that position (unless `allowzero`), one -1 is
/// inferred from the element count.
std::vector<int64_t> reshape_shape(const ir::Node& node, const std::vector<int64_t>& in_shape,
                                   int64_t numel, std::vector<int64_t> shape, bool allowzero);

/// Split's part sizes along `axis` (of size `dim`) for `parts` outputs: the `split` input's values
/// when given (they must sum to dim), else equal parts — with `uneven` (the num_outputs form) the
/// last part may be smaller.
std::vector<int64_t> split_sizes(const ir::Node& node, int64_t dim, int64_t axis, size_t parts,
                                 const std::optional<std::vector<int64_t>>& split, bool uneven);

}  // namespace switchyard::ops
