#include "ops/resize_geometry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "ir/check.h"
#include "ir/tensor.h"
#include "ops/node_error.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

namespace {

template <typename E>
E parse_choice(const ir::Node& node, const std::string& attr, const std::string& fallback,
               std::initializer_list<std::pair<const char*, E>> choices) {
  const std::string value = node.attr_string(attr, fallback);
  for (const auto& [name, e] : choices)
    if (value == name) return e;
  SY_THROW(InvalidModel, "{}: {} '{}' is not supported", node.describe(), attr, value);
}

}  // namespace

ResizeAttributes resize_attributes(const ir::Node& n) {
  ResizeAttributes a;
  a.mode = parse_choice<ResizeMode>(n, "mode", "nearest",
                                    {{"nearest", ResizeMode::Nearest},
                                     {"linear", ResizeMode::Linear},
                                     {"cubic", ResizeMode::Cubic}});
  a.transform =
      parse_choice<ResizeTransform>(n, "coordinate_transformation_mode", "half_pixel",
                                    {{"half_pixel", ResizeTransform::HalfPixel},
                                     {"half_pixel_symmetric", ResizeTransform::HalfPixelSymmetric},
                                     {"pytorch_half_pixel", ResizeTransform::PytorchHalfPixel},
                                     {"align_corners", ResizeTransform::AlignCorners},
                                     {"asymmetric", ResizeTransform::Asymmetric},
                                     {"tf_crop_and_resize", ResizeTransform::TfCropAndResize},
                                     {"tf_half_pixel_for_nn", ResizeTransform::TfHalfPixelForNn}});
  a.rounding =
      parse_choice<NearestRounding>(n, "nearest_mode", "round_prefer_floor",
                                    {{"round_prefer_floor", NearestRounding::RoundPreferFloor},
                                     {"round_prefer_ceil", NearestRounding::RoundPreferCeil},
                                     {"floor", NearestRounding::Floor},
                                     {"ceil", NearestRounding::Ceil}});
  a.policy = parse_choice<AspectPolicy>(n, "keep_aspect_ratio_policy", "stretch",
                                        {{"stretch", AspectPolicy::Stretch},
                                         {"not_larger", AspectPolicy::NotLarger},
                                         {"not_smaller", AspectPolicy::NotSmaller}});
  a.cubic_a = n.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = n.attr_int("exclude_outside", 0) != 0;
  a.antialias = n.attr_int("antialias", 0) != 0;
  a.extrapolation = n.attr_float("extrapolation_value", 0.0f);
  a.axes = n.attr_ints("axes", {});
  return a;
}

ResizeGeometry resize_geometry(const ir::Node& node, const ResizeAttributes& attrs,
                               const std::vector<int64_t>& in_shape, const ir::Tensor* roi,
                               const ir::Tensor* scales, const ir::Tensor* sizes) {
  const int64_t rank = static_cast<int64_t>(in_shape.size());
  if (rank == 0) fail_node(node, "X must have rank >= 1");
  ResizeGeometry g;
  if (attrs.axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) g.axes.push_back(i);
  } else {
    std::set<int64_t> seen;
    for (int64_t a : attrs.axes) {
      int64_t axis = normalize_axis(node, a, rank);
      if (!seen.insert(axis).second) fail_node(node, "axes has axis {} twice", a);
      g.axes.push_back(axis);
    }
  }
  const std::vector<int64_t>& axes = g.axes;
  const size_t num_axes = axes.size();
  auto present = [](const ir::Tensor* t) { return t && t->numel() > 0; };
  if (present(scales) == present(sizes))
    fail_node(node, "exactly one of scales and sizes must be given (non-empty)");

  g.out_shape = in_shape;
  g.scale.assign(static_cast<size_t>(rank), 1.0);
  g.length_resized.resize(static_cast<size_t>(rank));
  for (size_t i = 0; i < static_cast<size_t>(rank); ++i)
    g.length_resized[i] = static_cast<double>(in_shape[i]);
  g.resized.assign(static_cast<size_t>(rank), false);
  for (int64_t a : axes) g.resized[static_cast<size_t>(a)] = true;

  if (present(scales)) {
    if (!ir::dtype_is_float(scales->dtype())) fail_node(node, "scales must be a float tensor");
    if (static_cast<size_t>(scales->numel()) != num_axes)
      fail_node(node, "scales has {} values, expected {}", scales->numel(), num_axes);
    for (size_t i = 0; i < num_axes; ++i) {
      double v = scales->scalar_as_double(static_cast<int64_t>(i));
      if (!(v > 0) || !std::isfinite(v)) fail_node(node, "scales[{}] = {} must be positive", i, v);
      size_t a = static_cast<size_t>(axes[i]);
      double len = static_cast<double>(in_shape[a]) * v;
      if (len > 9.0e18) fail_node(node, "scales[{}] = {} makes axis {} too large", i, v, a);
      g.scale[a] = v;
      g.length_resized[a] = len;
      g.out_shape[a] = static_cast<int64_t>(std::floor(len));
    }
  } else {
    if (sizes->dtype() != ir::DType::Int64) fail_node(node, "sizes must be an int64 tensor");
    if (static_cast<size_t>(sizes->numel()) != num_axes)
      fail_node(node, "sizes has {} values, expected {}", sizes->numel(), num_axes);
    std::vector<int64_t> want = sizes->to_int_vector();
    for (size_t i = 0; i < num_axes; ++i) {
      if (want[i] < 0) fail_node(node, "sizes[{}] = {} is negative", i, want[i]);
      if (want[i] > 0 && in_shape[static_cast<size_t>(axes[i])] == 0)
        fail_node(node, "cannot resize empty axis {} to size {}", axes[i], want[i]);
    }
    if (attrs.policy == AspectPolicy::Stretch) {
      for (size_t i = 0; i < num_axes; ++i) {
        size_t a = static_cast<size_t>(axes[i]);
        g.out_shape[a] = want[i];
        g.length_resized[a] = static_cast<double>(want[i]);
        g.scale[a] = in_shape[a] > 0 ? static_cast<double>(want[i]) / in_shape[a] : 1.0;
      }
    } else {
      const bool not_larger = attrs.policy == AspectPolicy::NotLarger;
      double common = not_larger ? INFINITY : 0.0;
      for (size_t i = 0; i < num_axes; ++i) {
        size_t a = static_cast<size_t>(axes[i]);
        if (in_shape[a] == 0) continue;
        double r = static_cast<double>(want[i]) / static_cast<double>(in_shape[a]);
        common = not_larger ? std::min(common, r) : std::max(common, r);
      }
      if (!std::isfinite(common) || common <= 0) common = 1.0;
      for (size_t i = 0; i < num_axes; ++i) {
        size_t a = static_cast<size_t>(axes[i]);
        g.scale[a] = common;
        g.length_resized[a] = common * static_cast<double>(in_shape[a]);
        g.out_shape[a] = static_cast<int64_t>(std::floor(g.length_resized[a] + 0.5));
      }
    }
  }

  g.roi_start.assign(static_cast<size_t>(rank), 0.0);
  g.roi_end.assign(static_cast<size_t>(rank), 1.0);
  if (attrs.transform == ResizeTransform::TfCropAndResize && present(roi)) {
    if (!ir::dtype_is_float(roi->dtype())) fail_node(node, "roi must be a float tensor");
    if (static_cast<size_t>(roi->numel()) != 2 * num_axes)
      fail_node(node, "roi has {} values, expected {}", roi->numel(), 2 * num_axes);
    for (size_t i = 0; i < num_axes; ++i) {
      g.roi_start[static_cast<size_t>(axes[i])] = roi->scalar_as_double(static_cast<int64_t>(i));
      g.roi_end[static_cast<size_t>(axes[i])] =
          roi->scalar_as_double(static_cast<int64_t>(i + num_axes));
    }
  }
  (void)ir::checked_numel(g.out_shape);
  return g;
}

}  // namespace switchyard::ops
