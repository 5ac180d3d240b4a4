// Stencil's geometry (ai.switchyard domain), shared by its schema and every backend's kernel:
// the attributes checked against the window rank, the output size per spatial dim, and where a
// padded coordinate reads from under each padding mode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

/// How the window's products x·w are combined.
enum class StencilReduction { Sum, Min, Max, ArgMin, ArgMax };
/// What padded positions read: zero, the edge (clamp), a mirror without the edge (reflect) or
/// with it (symmetric).
enum class StencilPadding { Zero, Clamp, Reflect, Symmetric };

/// Stencil's attributes, checked; one entry per spatial dim (pads: begins then ends).
struct StencilAttrs {
  StencilReduction reduction = StencilReduction::Sum;
  StencilPadding padding = StencilPadding::Zero;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;
  size_t spatial() const { return strides.size(); }
  /// ArgMin and ArgMax give int64 indices; the others float32 values.
  bool gives_indices() const {
    return reduction == StencilReduction::ArgMin || reduction == StencilReduction::ArgMax;
  }
};

/// The reduction attribute ("sum" when absent); throws InvalidModel naming the node when unknown.
StencilReduction read_stencil_reduction(const ir::Node& node);

/// Reads reduction, padding, strides, dilations and pads for a window of `rank` spatial dims
/// (2 or 3). Throws InvalidModel naming the node on unknown names, wrong list lengths, strides
/// or dilations below 1 and negative pads.
StencilAttrs read_stencil_attrs(const ir::Node& node, size_t rank);

/// The output size of spatial dim `dim`: floor((in + pads - dilation·(window-1) - 1) / stride)
/// + 1. `who` names the node in errors (ir::Node::describe()). Throws InvalidModel when it is below
/// 1, when a window dim is below 1, when reflect pads reach the input size or symmetric pads exceed
/// it, or on overflow.
int64_t stencil_output_size(const std::string& who, const StencilAttrs& attrs, size_t dim,
                            int64_t in, int64_t window);

/// The input coordinate that padded coordinate `i` (in [-pad_begin, n + pad_end)) reads under
/// `mode`, or -1 for a zero. The pads must have passed stencil_output_size's checks.
inline int64_t stencil_source_index(int64_t i, int64_t n, StencilPadding mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case StencilPadding::Zero:
      return -1;
    case StencilPadding::Clamp:
      return i < 0 ? 0 : n - 1;
    case StencilPadding::Reflect:
      return i < 0 ? -i : 2 * (n - 1) - i;
    case StencilPadding::Symmetric:
      return i < 0 ? -i - 1 : 2 * n - 1 - i;
  }
  return -1;
}

}  // namespace switchyard::ops
