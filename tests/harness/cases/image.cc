// The image family (cpu image_resize.cc; cuda resize.cc): Resize in the modes real models use
// (nearest with every nearest_mode, linear, cubic) under every coordinate transform, crop and
// resize with extrapolation, antialiased downscales, axes and keep_aspect_ratio_policy, on
// 4-D NCHW images of every dtype Resize takes, rank 1 and rank 5, an empty batch, and 4-D
// channels-last images whose last axis is not resized (the cpu's row-copy and separable paths).
// Compared with the cpu's result.
#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }
Attribute ints_attr(const char* name, std::vector<int64_t> v) {
  return Attribute::make_ints(name, std::move(v));
}
Attribute string_attr(const char* name, const char* v) { return Attribute::make_string(name, v); }
Attribute float_attr(const char* name, float v) { return Attribute::make_float(name, v); }

struct ResizeCase {
  std::string name;
  std::vector<Attribute> attrs;
  std::vector<float> scales;  // empty: sizes given
  std::vector<int64_t> sizes;
  std::vector<float> roi;  // tf_crop_and_resize only
};

OpCase resize_op(const Tensor& x, const ResizeCase& r) {
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

const std::vector<ResizeCase>& resize_cases() {
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

std::vector<Case> image_cases() {
  std::vector<Case> cases;
  uint64_t seed = 1700;
  auto add = [&](const std::string& name, const Tensor& x, const ResizeCase& r, Tolerance tol) {
    OpCase c = resize_op(x, r);
    cases.push_back({.name = "Resize/" + r.name + "/" + dtype_tag(x.dtype()) + "/" +
                             shape_tag(x.shape()) + name,
                     .op = "Resize",
                     .inputs = c.inputs,
                     .attributes = c.attributes,
                     .tolerance = tol});
  };
  for (const ResizeCase& r : resize_cases()) {
    add("", random_tensor(DType::Float32, {2, 3, 7, 9}, ++seed, -2.0, 2.0), r, {1e-4, 1e-5});
    add("", random_tensor(DType::Float16, {1, 3, 7, 9}, ++seed), r, {2e-3, 2e-3});
    add("", random_tensor(DType::BFloat16, {1, 3, 7, 9}, ++seed), r, {2e-2, 2e-2});
    add("", random_tensor(DType::Float64, {1, 3, 7, 9}, ++seed), r, {1e-4, 1e-5});
    add("", random_tensor(DType::UInt8, {1, 3, 7, 9}, ++seed, 0.0, 256.0), r, {});
    add("", random_any(DType::Int64, {1, 3, 7, 9}, ++seed), r, {});
    bool nearest = true;
    for (const Attribute& a : r.attrs)
      if (a.name == "mode" && a.s != "nearest") nearest = false;
    if (nearest) add("", random_any(DType::Bool, {1, 3, 7, 9}, ++seed), r, {});
  }
  add("", random_tensor(DType::Float32, {1, 2, 3, 4, 5}, ++seed),
      {"rank 5 linear", {string_attr("mode", "linear")}, {1, 1, 2, 0.5f, 1.5f}}, {1e-4, 1e-5});
  add("", random_tensor(DType::Float32, {6}, ++seed),
      {"rank 1 cubic", {string_attr("mode", "cubic")}, {2.5f}}, {1e-4, 1e-5});
  add("", random_tensor(DType::Float32, {0, 3, 4, 4}, ++seed), {"empty batch", {}, {1, 1, 2, 2}},
      {1e-4, 1e-5});
  // Channels-last images (NHWC, C = 3 and 16): the last axis keeps its size.
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const auto& [shape, scales] : std::vector<std::pair<Shape, std::vector<float>>>{
             {{1, 7, 9, 3}, {1, 2, 2, 1}}, {{2, 10, 6, 16}, {1, 0.5f, 1.5f, 1}}})
      for (DType dt : {DType::Float32, DType::UInt8}) {
        ResizeCase r{std::string("last axis kept ") + mode, {string_attr("mode", mode)}, scales};
        add("",
            dt == DType::UInt8 ? random_tensor(dt, shape, ++seed, 0.0, 256.0)
                               : random_tensor(dt, shape, ++seed, -2.0, 2.0),
            r, {1e-4, 1e-5});
      }
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(image, image_cases)

}  // namespace switchyard::testing::harness
