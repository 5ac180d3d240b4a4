// The layout of a Scan node (opset 9+), read and checked once for every backend's kernel:
// inputs (states..., scan inputs...), body inputs (states..., one slice of each scan input),
// body outputs (states..., scan output slices...), each scan input and output with its axis
// and direction. Errors are InvalidModel naming the node, with the same words on every device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

struct ScanLayout {
  size_t num_states = 0;
  std::vector<int64_t> in_axes, out_axes;  // per scan input / output (not normalized)
  std::vector<bool> in_reverse, out_reverse;
  std::vector<ir::Type> scan_output_types;  // the body's scan output slices
};

/// `node`'s Scan attributes against its inputs, outputs and `body` (its "body" graph).
ScanLayout scan_layout(const ir::Node& node, const ir::Graph& body);

}  // namespace switchyard::ops
