#include "ops/pad_geometry.h"

#include <fmt/format.h>

#include <cstdlib>
#include <limits>

#include "ir/check.h"
#include "ops/node_error.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

PadMode pad_mode(const ir::Node& node) {
  std::string mode = node.attr_string("mode", "constant");
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "edge") return PadMode::Edge;
  if (mode == "wrap") return PadMode::Wrap;
  SY_THROW(InvalidModel, "{}: mode '{}' is not one of constant, reflect, edge, wrap",
           node.describe(), mode);
}

PadGeometry pad_geometry(const ir::Node& node, const std::vector<int64_t>& in_shape,
                         const std::vector<int64_t>& pads,
                         const std::optional<std::vector<int64_t>>& axes_in, PadMode mode) {
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  std::vector<int64_t> axes;
  if (axes_in) {
    axes = *axes_in;
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  if (pads.size() != 2 * axes.size())
    fail_node(node, "pads has {} values, expected {} (2 per axis)", pads.size(), 2 * axes.size());
  PadGeometry g;
  g.pre.assign(static_cast<size_t>(rank), 0);
  g.post.assign(static_cast<size_t>(rank), 0);
  if (rank == 0 && !axes.empty())
    fail_node(node, "axis {} is out of range for a rank-0 input", axes[0]);
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = static_cast<size_t>(normalize_axis(node, axes[i], rank));
    if (seen[a]) fail_node(node, "axis {} appears more than once", a);
    seen[a] = true;
    g.pre[a] = pads[i];
    g.post[a] = pads[i + axes.size()];
  }
  g.shape = in_shape;
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 4;
  for (size_t a = 0; a < g.shape.size(); ++a) {
    if (std::abs(g.pre[a]) > kLimit || std::abs(g.post[a]) > kLimit)
      fail_node(node, "pads {} / {} are too large", g.pre[a], g.post[a]);
    int64_t d = g.shape[a] + g.pre[a] + g.post[a];
    if (d < 0)
      fail_node(node, "pads {} and {} shrink axis {} of size {} below zero", g.pre[a], g.post[a], a,
                g.shape[a]);
    if (d > 0 && g.shape[a] == 0 && mode != PadMode::Constant)
      fail_node(node, "cannot pad the empty axis {} in a mode other than constant", a);
    g.shape[a] = d;
  }
  return g;
}

}  // namespace switchyard::ops
