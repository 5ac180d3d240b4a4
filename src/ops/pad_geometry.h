// Pad's geometry, shared by every backend's Pad kernel: the mode attribute and the pads/axes
// inputs resolved against a concrete input shape. Errors are InvalidArgument (InvalidModel for
// an unknown mode) naming the node, with the same words on every device.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

/// Pad's modes (the device kernels keep the same numbering).
enum class PadMode : int { Constant = 0, Reflect = 1, Edge = 2, Wrap = 3 };

/// The node's "mode" attribute (default constant).
PadMode pad_mode(const ir::Node& node);

/// Leading and trailing pads per axis of the input (0 on axes not listed) and the output shape.
struct PadGeometry {
  std::vector<int64_t> pre, post, shape;
};

/// Resolves Pad's `pads` (2 per listed axis: all leading, then all trailing) over `axes` (every
/// axis when absent) for an input of `in_shape`. Negative pads crop; a result below zero, pads
/// too large to add safely, or padding an empty axis in a mode other than constant fail.
PadGeometry pad_geometry(const ir::Node& node, const std::vector<int64_t>& in_shape,
                         const std::vector<int64_t>& pads,
                         const std::optional<std::vector<int64_t>>& axes, PadMode mode);

}  // namespace switchyard::ops
