// The image family (cpu image_resize.cc; cuda resize.cc): Resize in the modes real models use
// (nearest with every nearest_mode, linear, cubic) under every coordinate transform, crop and
// resize with extrapolation, antialiased downscales, axes and keep_aspect_ratio_policy, on
// 4-D NCHW images of every dtype Resize takes, rank 1 and rank 5, an empty batch, and 4-D
// channels-last images whose last axis is not resized (the cpu's row-copy and separable paths).
// Compared with the cpu's result.
#include "harness/cases/resize_cases.h"
#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;
using resize::resize_cases;
using resize::resize_op;
using resize::ResizeCase;
using resize::string_attr;

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
