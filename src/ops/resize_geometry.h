// Resize's attributes and output geometry (opset 19), shared by every backend's Resize kernel:
// which axes are resized, the output shape, and per axis the scale, the resized length and the
// crop (roi) that the coordinate transforms use. Errors are InvalidModel (attributes) or
// InvalidArgument (inputs) naming the node, with the same words on every device.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace switchyard::ops {

// The device kernels keep these numberings.
enum class ResizeMode : int { Nearest = 0, Linear = 1, Cubic = 2 };
enum class ResizeTransform : int {
  HalfPixel = 0,
  HalfPixelSymmetric = 1,
  PytorchHalfPixel = 2,
  AlignCorners = 3,
  Asymmetric = 4,
  TfCropAndResize = 5,
  TfHalfPixelForNn = 6
};
enum class NearestRounding : int { RoundPreferFloor = 0, RoundPreferCeil = 1, Floor = 2, Ceil = 3 };
enum class AspectPolicy : int { Stretch = 0, NotLarger = 1, NotSmaller = 2 };

struct ResizeAttributes {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeTransform transform = ResizeTransform::HalfPixel;
  NearestRounding rounding = NearestRounding::RoundPreferFloor;
  AspectPolicy policy = AspectPolicy::Stretch;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
  std::vector<int64_t> axes;  ///< as written (empty: every axis)
};

/// The node's attributes; an unknown choice is InvalidModel naming the node.
ResizeAttributes resize_attributes(const ir::Node& node);

struct ResizeGeometry {
  std::vector<int64_t> axes;  ///< the resized axes, normalized, in the order scales/sizes list them
  std::vector<int64_t> out_shape;
  std::vector<bool> resized;                                      ///< per input axis
  std::vector<double> scale, length_resized, roi_start, roi_end;  ///< per input axis
};

/// The geometry for an input of `in_shape`, from the host tensors of Resize's optional inputs
/// (nullptr when absent; an empty tensor counts as absent): exactly one of `scales` (float, one
/// per resized axis) and `sizes` (int64) must be given; `roi` (float, start and end per resized
/// axis) is read for tf_crop_and_resize only.
ResizeGeometry resize_geometry(const ir::Node& node, const ResizeAttributes& attrs,
                               const std::vector<int64_t>& in_shape, const ir::Tensor* roi,
                               const ir::Tensor* scales, const ir::Tensor* sizes);

}  // namespace switchyard::ops
