// The Resize configurations both the op harness's image family (tests/harness/cases/image.cc)
// and the CUDA Resize test's precision runs (tests/gpu/data_test.cc) use: every mode and
// coordinate transform real models use, crop and resize, antialias, axes and aspect policies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "support/op_test_util.h"

namespace switchyard::testing::resize {

inline Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }
inline Attribute ints_attr(const char* name, std::vector<int64_t> v) {
  return Attribute::make_ints(name, std::move(v));
}
inline Attribute string_attr(const char* name, const char* v) {
  return Attribute::make_string(name, v);
}
inline Attribute float_attr(const char* name, float v) { return Attribute::make_float(name, v); }

struct ResizeCase {
  std::string name;
  std::vector<Attribute> attrs;
  std::vector<float> scales;  // empty: sizes given
  std::vector<int64_t> sizes;
  std::vector<float> roi;  // tf_crop_and_resize only
};

inline OpCase resize_op(const Tensor& x, const ResizeCase& r) {
  std::vector<std::optional<Tensor>> ins = {x};
  if (r.roi.empty()) {
    ins.push_back(std::nullopt);
  } else {
    ins.push_back(tensor_of(DType::Float32, {static_cast<int64_t>(r.roi.size())},
                            std::vector<double>(r.roi.begin(), r.roi.end())));
  }
  if (!r.scales.empty()) {
    ins.push_back(tensor_of(DType::Float32, {static_cast<int64_t>(r.scales.size())},
                            std::vector<double>(r.scales.begin(), r.scales.end())));
  } else {
    ins.push_back(std::nullopt);
    ins.push_back(int64_tensor(r.sizes));
  }
  return make_case("Resize", ins, r.attrs);
}

inline const std::vector<ResizeCase>& resize_cases() {
  static const std::vector<ResizeCase> cases = {
      // YOLO / FPN upsampling.
      {"nearest asymmetric floor x2",
       {string_attr("mode", "nearest"), string_attr("coordinate_transformation_mode", "asymmetric"),
        string_attr("nearest_mode", "floor")},
       {1, 1, 2, 2}},
      {"nearest default", {}, {1, 1, 1.5f, 0.6f}},
      {"nearest round_prefer_ceil half_pixel sizes",
       {string_attr("nearest_mode", "round_prefer_ceil")},
       {},
       {1, 3, 4, 13}},
      {"nearest ceil align_corners",
       {string_attr("nearest_mode", "ceil"),
        string_attr("coordinate_transformation_mode", "align_corners")},
       {1, 1, 1.7f, 0.5f}},
      {"nearest tf_half_pixel_for_nn",
       {string_attr("coordinate_transformation_mode", "tf_half_pixel_for_nn")},
       {1, 1, 0.75f, 2.5f}},
      {"linear half_pixel x2", {string_attr("mode", "linear")}, {1, 1, 2, 2}},
      {"linear half_pixel sizes", {string_attr("mode", "linear")}, {}, {1, 3, 14, 5}},
      {"linear pytorch_half_pixel",
       {string_attr("mode", "linear"),
        string_attr("coordinate_transformation_mode", "pytorch_half_pixel")},
       {},
       {1, 3, 1, 12}},
      {"linear align_corners",
       {string_attr("mode", "linear"),
        string_attr("coordinate_transformation_mode", "align_corners")},
       {1, 1, 2.3f, 1.4f}},
      {"linear asymmetric",
       {string_attr("mode", "linear"), string_attr("coordinate_transformation_mode", "asymmetric")},
       {1, 1, 0.5f, 3}},
      {"linear half_pixel_symmetric",
       {string_attr("mode", "linear"),
        string_attr("coordinate_transformation_mode", "half_pixel_symmetric")},
       {1, 1, 1.3f, 0.7f}},
      {"cubic half_pixel", {string_attr("mode", "cubic")}, {1, 1, 2, 2}},
      {"cubic a=-0.5 exclude_outside align_corners",
       {string_attr("mode", "cubic"), float_attr("cubic_coeff_a", -0.5f),
        int_attr("exclude_outside", 1),
        string_attr("coordinate_transformation_mode", "align_corners")},
       {},
       {1, 3, 11, 4}},
      {"linear tf_crop_and_resize",
       {string_attr("mode", "linear"),
        string_attr("coordinate_transformation_mode", "tf_crop_and_resize"),
        float_attr("extrapolation_value", 7.5f)},
       {},
       {1, 3, 6, 8},
       {0, 0, -0.2f, 0.1f, 1, 1, 1.3f, 0.8f}},
      {"nearest tf_crop_and_resize",
       {string_attr("coordinate_transformation_mode", "tf_crop_and_resize"),
        float_attr("extrapolation_value", -3.0f)},
       {},
       {1, 3, 5, 5},
       {0, 0, 0.1f, -0.3f, 1, 1, 0.9f, 1.2f}},
      {"linear antialias downscale",
       {string_attr("mode", "linear"), int_attr("antialias", 1)},
       {1, 1, 0.4f, 0.3f}},
      {"cubic antialias downscale",
       {string_attr("mode", "cubic"), int_attr("antialias", 1)},
       {},
       {1, 3, 3, 2}},
      {"linear axes", {string_attr("mode", "linear"), ints_attr("axes", {3, -2})}, {2.5f, 0.5f}},
      {"cubic not_larger",
       {string_attr("mode", "cubic"), ints_attr("axes", {2, 3}),
        string_attr("keep_aspect_ratio_policy", "not_larger")},
       {},
       {10, 10}},
      {"nearest not_smaller",
       {ints_attr("axes", {2, 3}), string_attr("keep_aspect_ratio_policy", "not_smaller")},
       {},
       {10, 10}},
      {"linear identity scales", {string_attr("mode", "linear")}, {1, 1, 1, 1}},
  };
  return cases;
}

}  // namespace switchyard::testing::resize
