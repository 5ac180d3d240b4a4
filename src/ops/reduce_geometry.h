// The reduce family's axes rules, shared by every backend's kernels (Reduce*, and the
// normalizations that reduce over listed axes): which dims the axes select and the output
// shape. Errors are InvalidArgument naming the node, with the same words on every device.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

/// Which dims of a rank-`rank` input `axes` select (negative axes count from the end; an axis
/// out of range or listed twice fails).
std::vector<bool> axes_mask(const ir::Node& node, const std::vector<int64_t>& axes, int64_t rank);

/// A Reduce* node's reduced dims for its axes input (`axes`: its values, absent when the input
/// is): every dim when there are none, unless noop_with_empty_axes (then none).
std::vector<bool> reduced_dims(const ir::Node& node, int64_t rank,
                               const std::optional<std::vector<int64_t>>& axes, bool noop);

/// The output shape: kept dims, and 1 for each reduced dim when `keepdims`.
std::vector<int64_t> reduced_shape(const std::vector<int64_t>& in, const std::vector<bool>& reduced,
                                   bool keepdims);

}  // namespace switchyard::ops
