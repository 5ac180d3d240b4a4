// Slice's geometry, shared by every backend's Slice kernel: starts/ends/axes/steps resolved
// against a concrete input shape (negative values, clamping, negative steps) into a strided view
// of the input.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

/// The output of a Slice as a view of its input: element i of the output (row-major over
/// `shape`) is input element offset + sum(i_k * strides_k), in elements.
struct SliceView {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// Resolves Slice's inputs for an input of `in_shape`; `axes` and `steps` are absent when the
/// node omits them. Throws InvalidArgument naming the node on inconsistent values (sizes that
/// differ, a repeated axis, a zero step).
SliceView slice_view(const ir::Node& node, const std::vector<int64_t>& in_shape,
                     const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                     const std::optional<std::vector<int64_t>>& axes,
                     const std::optional<std::vector<int64_t>>& steps);

}  // namespace switchyard::ops
