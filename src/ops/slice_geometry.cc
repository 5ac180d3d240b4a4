#include "ops/slice_geometry.h"

#include <algorithm>
#include <limits>

#include "ir/check.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

SliceView slice_view(const ir::Node& node, const std::vector<int64_t>& in_shape,
                     const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                     const std::optional<std::vector<int64_t>>& axes_in,
                     const std::optional<std::vector<int64_t>>& steps_in) {
  auto fail = [&](const std::string& what) {
    SY_THROW(InvalidArgument, "{}: {}", node.describe(), what);
  };
  int64_t rank = static_cast<int64_t>(in_shape.size());
  // normalize_axis lets axis 0 through for rank 0 (as other ops need); a scalar has no axis to
  // slice.
  if (rank == 0 && !starts.empty()) fail("a rank-0 input cannot be sliced");
  if (starts.size() != ends.size())
    fail(fmt::format("starts has {} values and ends has {}", starts.size(), ends.size()));
  std::vector<int64_t> axes;
  if (axes_in) {
    axes = *axes_in;
    if (axes.size() != starts.size())
      fail(fmt::format("axes has {} values for {} starts", axes.size(), starts.size()));
  } else {
    if (static_cast<int64_t>(starts.size()) > rank)
      fail(fmt::format("starts has {} values for an input of rank {}", starts.size(), rank));
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> steps(starts.size(), 1);
  if (steps_in) {
    steps = *steps_in;
    if (steps.size() != starts.size())
      fail(fmt::format("steps has {} values for {} starts", steps.size(), starts.size()));
  }
  SliceView view;
  view.shape = in_shape;
  std::vector<int64_t> in_strides(in_shape.size(), 1);
  for (int64_t i = rank - 2; i >= 0; --i)
    in_strides[static_cast<size_t>(i)] =
        in_strides[static_cast<size_t>(i + 1)] * in_shape[static_cast<size_t>(i + 1)];
  view.strides = in_strides;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = static_cast<size_t>(normalize_axis(node, axes[i], rank));
    if (seen[a]) fail(fmt::format("axis {} appears more than once", a));
    seen[a] = true;
    int64_t d = in_shape[a], step = steps[i];
    if (step == 0) fail("steps must not be zero");
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += d;
    if (end < 0) end += d;
    int64_t len;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, d);
      end = std::clamp<int64_t>(end, 0, d);
      len = end > start ? 1 + (end - start - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, std::max<int64_t>(d - 1, 0));
      end = std::clamp<int64_t>(end, -1, d - 1);
      int64_t neg =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      len = d > 0 && start > end ? 1 + (start - end - 1) / neg : 0;
    }
    view.shape[a] = len;
    if (len > 0) view.offset += start * in_strides[a];
    // A single element needs no stride; this also avoids overflow for huge steps.
    view.strides[a] = len > 1 ? in_strides[a] * step : in_strides[a];
  }
  return view;
}

}  // namespace switchyard::ops
