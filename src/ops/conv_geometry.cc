#include "ops/conv_geometry.h"

#include <fmt/format.h>

#include "ir/tensor.h"
#include "ops/node_error.h"

namespace switchyard::ops {

namespace {

int64_t product(const std::vector<int64_t>& v) { return ir::checked_product(v, "window size"); }

}  // namespace

int64_t ConvDims::in_size() const { return product(in); }
int64_t ConvDims::out_size() const { return product(out); }
int64_t ConvDims::kernel_size() const { return product(kernel); }

std::vector<int64_t> ConvDims::out_shape() const {
  std::vector<int64_t> s = {batch, out_channels};
  s.insert(s.end(), out.begin(), out.end());
  return s;
}

int64_t read_group(const ir::Node& node) {
  int64_t group = node.attr_int("group", 1);
  SY_CHECK(group >= 1, InvalidModel, "{}: group must be >= 1, got {}", node.describe(), group);
  return group;
}

ConvDims conv_dims(const ir::Node& node, const std::vector<int64_t>& x,
                   const std::vector<int64_t>& w, int64_t group) {
  if (x.size() < 3)
    fail_node(node, "input X has shape {}, expected rank >= 3", ir::shape_to_string(x));
  if (w.size() != x.size())
    fail_node(node, "weight W has shape {}, expected rank {} like X {}", ir::shape_to_string(w),
              x.size(), ir::shape_to_string(x));
  ConvDims d;
  d.batch = x[0];
  d.in_channels = x[1];
  d.out_channels = w[0];
  d.group = group;
  if (d.out_channels % group != 0)
    fail_node(node, "weight W has {} output channels, not divisible by group {}", d.out_channels,
              group);
  if (w[1] * group != d.in_channels)
    fail_node(node, "input X has {} channels, expected {} (weight W {} x group {})", d.in_channels,
              w[1] * group, w[1], group);
  d.in.assign(x.begin() + 2, x.end());
  WindowAttrs a = read_window_attrs(node, std::vector<int64_t>(w.begin() + 2, w.end()));
  WindowGeometry geo = window_geometry(a, d.in);
  for (size_t i = 0; i < geo.out.size(); ++i)
    if (geo.out[i] < 1)
      fail_node(node, "the kernel (extent {}) does not fit spatial dim {} of size {} with its pads",
                (a.kernel[i] - 1) * a.dilations[i] + 1, i, d.in[i]);
  d.kernel = a.kernel;
  d.out = geo.out;
  d.strides = a.strides;
  d.dilations = a.dilations;
  d.pad_begin = geo.pad_begin;
  d.pad_end = geo.pad_end;
  return d;
}

}  // namespace switchyard::ops
