// Resize, GridSample, NonMaxSuppression and Col2Im against plain references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

// ---- Resize reference: the ONNX reference algorithm (nested 1-D interpolation, neighbours by
// distance in an edge-padded line).
struct ResizeRef {
  std::string mode = "nearest", ctm = "half_pixel", nearest_mode = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false, antialias = false;

  std::vector<double> coeffs(double ratio, double scale) const {
    double s = antialias ? std::min(scale, 1.0) : 1.0;
    std::vector<double> c;
    if (mode == "nearest") {
      if (ratio == 1) return {0, 1};
      bool up = nearest_mode == "round_prefer_floor"  ? ratio > 0.5
                : nearest_mode == "round_prefer_ceil" ? ratio >= 0.5
                                                      : nearest_mode == "ceil";
      return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
    }
    int64_t start;
    if (mode == "linear") {
      start = static_cast<int64_t>(std::floor(-1 / s)) + 1;
      for (int64_t i = start; i < 2 - start; ++i)
        c.push_back(std::clamp(1 - std::fabs((i - ratio) * s), 0.0, 1.0));
    } else {
      start = static_cast<int64_t>(std::floor(-2 / s)) + 1;
      for (int64_t i = start; i < 2 - start; ++i) {
        double x = std::fabs(s * (i - ratio)), a = cubic_a;
        c.push_back(x <= 1  ? (a + 2) * x * x * x - (a + 3) * x * x + 1
                    : x < 2 ? a * x * x * x - 5 * a * x * x + 8 * a * x - 4 * a
                            : 0.0);
      }
    }
    if (antialias) {
      double sum = std::accumulate(c.begin(), c.end(), 0.0);
      for (double& v : c) v /= sum;
    }
    return c;
  }

  double interp1d(const std::vector<double>& data, double scale, int64_t out_len,
                  double len_resized, int64_t x, double r0, double r1) const {
    const double in = static_cast<double>(data.size());
    double xo;
    if (ctm == "half_pixel") {
      xo = (x + 0.5) / scale - 0.5;
    } else if (ctm == "half_pixel_symmetric") {
      double adj = out_len / len_resized;
      xo = in / 2 * (1 - adj) + (x + 0.5) / scale - 0.5;
    } else if (ctm == "pytorch_half_pixel") {
      xo = len_resized > 1 ? (x + 0.5) / scale - 0.5 : 0;
    } else if (ctm == "align_corners") {
      xo = len_resized == 1 ? 0 : x * (in - 1) / (len_resized - 1);
    } else if (ctm == "asymmetric") {
      xo = x / scale;
    } else {
      xo = len_resized > 1 ? r0 * (in - 1) + x * (r1 - r0) * (in - 1) / (len_resized - 1)
                           : 0.5 * (r0 + r1) * (in - 1);
      if (xo < 0 || xo > in - 1) return extrapolation;
    }
    double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
    std::vector<double> c = coeffs(ratio, scale);
    int64_t n = static_cast<int64_t>(c.size());
    int64_t pad = (n + 1) / 2;
    int64_t plen = static_cast<int64_t>(data.size()) + 2 * pad;
    double xp = xo + pad;
    std::vector<int64_t> idx(plen);
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      return std::make_pair(std::fabs(xp - a), a) < std::make_pair(std::fabs(xp - b), b);
    });
    idx.resize(n);
    std::sort(idx.begin(), idx.end());
    if (exclude_outside) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        int64_t orig = idx[i] - pad;
        if (orig < 0 || orig >= static_cast<int64_t>(data.size())) c[i] = 0;
        sum += c[i];
      }
      for (double& v : c) v /= sum;
    }
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t orig = std::clamp<int64_t>(idx[i] - pad, 0, static_cast<int64_t>(data.size()) - 1);
      acc += c[i] * data[orig];
    }
    return acc;
  }

  // Value at output index `out` of the sub-tensor starting at axis `a` and offset `base`.
  double nd(const std::vector<double>& x, const std::vector<int64_t>& shape,
            const std::vector<int64_t>& out_shape, const std::vector<double>& scales,
            const std::vector<double>& lens, const std::vector<double>& roi,
            const std::vector<int64_t>& out, size_t a, int64_t base) const {
    const size_t rank = shape.size();
    if (a == rank) return x[base];
    int64_t stride = 1;
    for (size_t k = a + 1; k < rank; ++k) stride *= shape[k];
    std::vector<double> line(shape[a]);
    for (int64_t i = 0; i < shape[a]; ++i)
      line[i] = nd(x, shape, out_shape, scales, lens, roi, out, a + 1, base + i * stride);
    return interp1d(line, scales[a], out_shape[a], lens[a], out[a], roi[a], roi[a + rank]);
  }

  std::vector<double> run(const std::vector<double>& x, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& out_shape, const std::vector<double>& scales,
                          const std::vector<double>& lens, std::vector<double> roi = {}) const {
    const size_t rank = shape.size();
    if (roi.empty()) {
      roi.assign(rank, 0.0);
      roi.insert(roi.end(), rank, 1.0);
    }
    std::vector<double> y(product(out_shape));
    std::vector<int64_t> out(rank, 0);
    for (size_t e = 0; e < y.size(); ++e) {
      int64_t rem = static_cast<int64_t>(e);
      for (int64_t a = static_cast<int64_t>(rank) - 1; a >= 0; --a) {
        out[a] = rem % out_shape[a];
        rem /= out_shape[a];
      }
      y[e] = nd(x, shape, out_shape, scales, lens, roi, out, 0, 0);
    }
    return y;
  }
};

struct ResizeCase {
  ResizeRef ref;
  std::vector<int64_t> shape;
  std::vector<float> scales;  // empty: sizes
  std::vector<int64_t> sizes;
  std::vector<int64_t> axes;  // empty: all
  std::vector<float> roi;
  std::string policy = "stretch";
};

void check_resize(const ResizeCase& c, DType dt, double tol, uint64_t seed = 3) {
  SCOPED_TRACE(c.ref.mode + " " + c.ref.ctm + " " + std::string(ir::dtype_name(dt)));
  const size_t rank = c.shape.size();
  std::vector<int64_t> axes = c.axes;
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  for (auto& a : axes)
    if (a < 0) a += static_cast<int64_t>(rank);
  std::vector<int64_t> out_shape = c.shape;
  std::vector<double> scales(rank, 1.0), lens(rank);
  for (size_t i = 0; i < rank; ++i) lens[i] = static_cast<double>(c.shape[i]);
  if (!c.scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      scales[axes[i]] = c.scales[i];
      lens[axes[i]] = c.shape[axes[i]] * static_cast<double>(c.scales[i]);
      out_shape[axes[i]] = static_cast<int64_t>(std::floor(lens[axes[i]]));
    }
  } else if (c.policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) {
      out_shape[axes[i]] = c.sizes[i];
      scales[axes[i]] = static_cast<double>(c.sizes[i]) / c.shape[axes[i]];
      lens[axes[i]] = static_cast<double>(c.sizes[i]);
    }
  } else {
    double s = c.policy == "not_larger" ? 1e300 : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      double r = static_cast<double>(c.sizes[i]) / c.shape[axes[i]];
      s = c.policy == "not_larger" ? std::min(s, r) : std::max(s, r);
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      scales[axes[i]] = s;
      lens[axes[i]] = s * c.shape[axes[i]];
      out_shape[axes[i]] = static_cast<int64_t>(std::floor(lens[axes[i]] + 0.5));
    }
  }
  std::vector<double> roi;
  if (!c.roi.empty()) {
    roi.assign(rank, 0.0);
    roi.insert(roi.end(), rank, 1.0);
    for (size_t i = 0; i < axes.size(); ++i) {
      roi[axes[i]] = c.roi[i];
      roi[axes[i] + rank] = c.roi[i + axes.size()];
    }
  }
  bool integral = ir::dtype_is_integer(dt);
  ir::Tensor x = random_tensor(dt, c.shape, seed, integral ? 0 : -2, integral ? 100 : 2);
  std::vector<double> expected = c.ref.run(to_doubles(x), c.shape, out_shape, scales, lens, roi);
  if (integral)
    for (double& v : expected) v = std::nearbyint(v);

  OpCase oc;
  oc.op = "Resize";
  oc.inputs = {x, c.roi.empty() ? std::nullopt
                                : std::optional(tensor_of(DType::Float32, {(int64_t)c.roi.size()},
                                                          {c.roi.begin(), c.roi.end()}))};
  if (!c.scales.empty()) {
    oc.inputs.push_back(
        tensor_of(DType::Float32, {(int64_t)c.scales.size()}, {c.scales.begin(), c.scales.end()}));
  } else {
    oc.inputs.push_back(std::nullopt);
    oc.inputs.push_back(int64_tensor(c.sizes));
  }
  oc.constant_inputs = {false, true, true, true};
  oc.attributes = {
      Attribute::make_string("mode", c.ref.mode),
      Attribute::make_string("coordinate_transformation_mode", c.ref.ctm),
      Attribute::make_string("nearest_mode", c.ref.nearest_mode),
      Attribute::make_float("cubic_coeff_a", static_cast<float>(c.ref.cubic_a)),
      Attribute::make_float("extrapolation_value", static_cast<float>(c.ref.extrapolation)),
      Attribute::make_int("exclude_outside", c.ref.exclude_outside),
      Attribute::make_int("antialias", c.ref.antialias),
      Attribute::make_string("keep_aspect_ratio_policy", c.policy)};
  if (!c.axes.empty()) oc.attributes.push_back(Attribute::make_ints("axes", c.axes));
  auto g = testing::build_op_graph(oc);
  EXPECT_EQ(g->outputs()[0]->type().to_string(),
            ir::Type::tensor(dt, ir::make_shape(out_shape)).to_string());
  ir::Tensor y = run_op1(oc);
  ASSERT_EQ(y.shape(), out_shape);
  ASSERT_EQ(y.dtype(), dt);
  auto got = to_doubles(y);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], tol * (1 + std::fabs(expected[i]))) << "at " << i;
}

TEST(ResizeKernel, AllModesAndTransforms4d) {
  for (std::string mode : {"nearest", "linear", "cubic"})
    for (std::string ctm : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                            "align_corners", "asymmetric"}) {
      for (std::vector<float> scales :
           {std::vector<float>{1, 1, 1.7f, 0.6f}, std::vector<float>{1, 1, 0.5f, 2.5f}}) {
        ResizeCase c;
        c.ref.mode = mode;
        c.ref.ctm = ctm;
        c.shape = {2, 3, 5, 4};
        c.scales = scales;
        check_resize(c, DType::Float32, 1e-5);
      }
      ResizeCase s;
      s.ref.mode = mode;
      s.ref.ctm = ctm;
      s.shape = {1, 2, 4, 6};
      s.sizes = {1, 2, 7, 1};
      check_resize(s, DType::Float32, 1e-5);
    }
}

// 4-D images whose last axis is not resized (a channels-last image [N, H, W, C], or NCHW
// resized over C and H) take the row walk: whole last-axis rows copied (nearest) or, for
// linear and cubic, the separable two-pass path; with taps outside (tf_crop_and_resize) or
// antialias and exclude_outside weights too, in float and double.
TEST(ResizeKernel, LastAxisNotResized) {
  for (std::string mode : {"nearest", "linear", "cubic"})
    for (std::string ctm : {"half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"})
      for (std::vector<float> scales :
           {std::vector<float>{1, 2.5f, 1.7f, 1}, std::vector<float>{1, 0.5f, 3.0f, 1},
            std::vector<float>{1, 1.5f, 1, 1}}) {
        ResizeCase c;
        c.ref.mode = mode;
        c.ref.ctm = ctm;
        c.shape = {2, 5, 4, 19};
        c.scales = scales;
        if (ctm == "tf_crop_and_resize") {
          c.ref.extrapolation = -3;
          c.roi = {0, 0.1f, -0.2f, 0, 1, 0.9f, 1.3f, 1};
        }
        check_resize(c, DType::Float32, 1e-5);
        if (mode == "cubic") check_resize(c, DType::Float64, 1e-9);
      }
  ResizeCase aa;
  aa.ref.mode = "linear";
  aa.ref.antialias = 1;
  aa.shape = {1, 12, 9, 5};
  aa.scales = {1, 0.4f, 0.5f, 1};
  check_resize(aa, DType::Float32, 1e-5);
  ResizeCase ex;
  ex.ref.mode = "cubic";
  ex.ref.exclude_outside = 1;
  ex.shape = {1, 6, 7, 3};
  ex.scales = {1, 1.6f, 0.6f, 1};
  check_resize(ex, DType::Float32, 1e-5);
}

TEST(ResizeKernel, NearestModesAndCubicOptions) {
  for (std::string nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    ResizeCase c;
    c.ref.nearest_mode = nm;
    c.ref.ctm = "asymmetric";
    c.shape = {1, 1, 4, 4};
    c.scales = {1, 1, 1.5f, 2.5f};
    check_resize(c, DType::Float32, 0);
  }
  ResizeCase c;
  c.ref.mode = "cubic";
  c.ref.cubic_a = -0.5;
  c.ref.exclude_outside = true;
  c.shape = {1, 2, 5, 6};
  c.scales = {1, 1, 0.8f, 1.9f};
  check_resize(c, DType::Float64, 1e-12);
}

TEST(ResizeKernel, AxesRanksAndNLinear) {
  ResizeCase c;
  c.ref.mode = "linear";
  c.shape = {2, 3, 4, 3, 2};  // trilinear over the last three axes
  c.axes = {2, -2, 4};
  c.scales = {1.5f, 2.0f, 0.5f};
  check_resize(c, DType::Float32, 1e-5);
  ResizeCase one;
  one.ref.mode = "cubic";
  one.shape = {7};
  one.sizes = {12};
  check_resize(one, DType::Float32, 1e-5);
  ResizeCase three;
  three.ref.mode = "linear";
  three.ref.ctm = "align_corners";
  three.shape = {3, 5, 4};
  three.axes = {1};
  three.sizes = {9};
  check_resize(three, DType::Float32, 1e-5);
}

TEST(ResizeKernel, AntialiasDownscale) {
  for (std::string mode : {"linear", "cubic"}) {
    ResizeCase c;
    c.ref.mode = mode;
    c.ref.antialias = true;
    c.shape = {1, 2, 9, 8};
    c.scales = {1, 1, 0.4f, 0.6f};
    check_resize(c, DType::Float32, 1e-5);
    c.scales = {1, 1, 0.3f, 1.5f};  // downscale one axis, upscale the other
    check_resize(c, DType::Float32, 1e-5);
  }
}

TEST(ResizeKernel, KeepAspectRatioPolicies) {
  for (std::string policy : {"not_larger", "not_smaller"}) {
    ResizeCase c;
    c.ref.mode = "linear";
    c.policy = policy;
    c.shape = {1, 1, 4, 6};
    c.axes = {2, 3};
    c.sizes = {6, 6};
    check_resize(c, DType::Float32, 1e-5);
  }
}

TEST(ResizeKernel, CropAndResizeExtrapolates) {
  ResizeCase c;
  c.ref.mode = "linear";
  c.ref.ctm = "tf_crop_and_resize";
  c.ref.extrapolation = 10;
  c.shape = {1, 1, 4, 4};
  c.axes = {2, 3};
  c.roi = {-0.2f, 0.4f, 0.6f, 1.3f};
  c.sizes = {3, 5};
  check_resize(c, DType::Float32, 1e-5);
  c.ref.mode = "nearest";
  check_resize(c, DType::Float32, 0);
}

TEST(ResizeKernel, HalfAndIntegerTypes) {
  ResizeCase c;
  c.ref.mode = "linear";
  c.shape = {1, 2, 3, 5};
  c.scales = {1, 1, 2, 1.4f};
  check_resize(c, DType::Float16, 1e-2);
  check_resize(c, DType::BFloat16, 2e-2);
  check_resize(c, DType::UInt8, 0);
  c.ref.mode = "nearest";
  check_resize(c, DType::Int64, 0);
  check_resize(c, DType::Int32, 0);
}

TEST(ResizeKernel, BoolNearestAndEmpty) {
  ir::Tensor x = random_tensor(DType::Bool, {2, 3}, 5);
  OpCase oc{"Resize",
            {x, std::nullopt, tensor_of(DType::Float32, {2}, {2, 1})},
            {},
            1,
            {false, true, true}};
  ir::Tensor y = run_op1(oc);
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{4, 3}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(y.data<bool>()[i * 3 + j], x.data<bool>()[(i / 2) * 3 + j]);
  OpCase empty{"Resize",
               {random_tensor(DType::Float32, {0, 3}, 1), std::nullopt,
                tensor_of(DType::Float32, {2}, {1, 2})},
               {Attribute::make_string("mode", "linear")},
               1,
               {false, true, true}};
  EXPECT_EQ(run_op1(empty).shape(), (std::vector<int64_t>{0, 6}));
}

TEST(ResizeKernel, ErrorsNameTheNode) {
  ir::Tensor x = random_tensor(DType::Float32, {1, 1, 2, 2}, 1);

  auto scales = tensor_of(DType::Float32, {4}, {1, 1, 2, 2});
  expect_error_naming_node(
      make_case("Resize", {x, std::nullopt, scales}, {Attribute::make_string("mode", "area")}),
      "mode");
  expect_error_naming_node({"Resize",
                            {x, std::nullopt, tensor_of(DType::Float32, {3}, {1, 2, 2})},
                            {},
                            1,
                            {false, true, true}},
                           "scales");
  expect_error_naming_node({"Resize",
                            {x, std::nullopt, tensor_of(DType::Float32, {4}, {1, 1, -2, 2})},
                            {},
                            1,
                            {false, true, true}},
                           "scales");
  expect_error_naming_node({"Resize",
                            {x, std::nullopt, scales, int64_tensor({1, 1, 4, 4})},
                            {},
                            1,
                            {false, false, false, false}},
                           "sizes");
  expect_error_naming_node(
      make_case("Resize", {x, std::nullopt, scales}, {Attribute::make_ints("axes", {2, 2})}),
      "axes");
}

// ---- GridSample: PyTorch's grid_sampler semantics, written out per tap.
struct GridRef {
  std::string mode = "linear", padding = "zeros";
  bool align = false;

  double reflect(double v, double lo2, double hi2) const {
    if (lo2 == hi2) return 0;
    double mn = lo2 / 2, span = (hi2 - lo2) / 2;
    v = std::fabs(v - mn);
    double extra = std::fmod(v, span);
    int flips = static_cast<int>(std::floor(v / span));
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
  }
  double pad(double v, int64_t size) const {
    if (padding == "border") return std::clamp(v, 0.0, size - 1.0);
    if (padding == "reflection") {
      v = align ? reflect(v, 0, 2.0 * (size - 1)) : reflect(v, -1, 2.0 * size - 1);
      return std::clamp(v, 0.0, size - 1.0);
    }
    return v;
  }
  double cubic(double s) const {
    double a = -0.75;
    s = std::fabs(s);
    return s <= 1  ? ((a + 2) * s - (a + 3)) * s * s + 1
           : s < 2 ? ((a * s - 5 * a) * s + 8 * a) * s - 4 * a
                   : 0;
  }
  double sample(const double* plane, int64_t h, int64_t w, double gx, double gy) const {
    auto un = [&](double g, int64_t size) {
      return align ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
    };
    auto get = [&](int64_t r, int64_t c) {
      return r < 0 || r >= h || c < 0 || c >= w ? 0.0 : plane[r * w + c];
    };
    double x = un(gx, w), y = un(gy, h);
    if (mode == "cubic") {
      double fx = std::floor(x), fy = std::floor(y), acc = 0;
      for (int i = -1; i <= 2; ++i)
        for (int j = -1; j <= 2; ++j) {
          double cx = fx + j, cy = fy + i;
          if (padding != "zeros") cx = pad(cx, w), cy = pad(cy, h);
          acc += cubic(x - (fx + j)) * cubic(y - (fy + i)) *
                 get(static_cast<int64_t>(cy), static_cast<int64_t>(cx));
        }
      return acc;
    }
    x = pad(x, w);
    y = pad(y, h);
    if (mode == "nearest") return get(std::llrint(y), std::llrint(x));
    int64_t x0 = static_cast<int64_t>(std::floor(x)), y0 = static_cast<int64_t>(std::floor(y));
    double tx = x - x0, ty = y - y0;
    return get(y0, x0) * (1 - tx) * (1 - ty) + get(y0, x0 + 1) * tx * (1 - ty) +
           get(y0 + 1, x0) * (1 - tx) * ty + get(y0 + 1, x0 + 1) * tx * ty;
  }
};

TEST(GridSampleKernel, ModesPaddingsAlignCorners) {
  const int64_t n = 2, c = 3, h = 4, w = 5, ho = 3, wo = 6;
  for (std::string mode : {"linear", "nearest", "cubic"})
    for (std::string padding : {"zeros", "border", "reflection"})
      for (int64_t align : {0, 1})
        for (DType dt : {DType::Float32, DType::Float16, DType::Float64}) {
          SCOPED_TRACE(mode + " " + padding + " align " + std::to_string(align));
          GridRef ref{mode, padding, align != 0};
          ir::Tensor x = random_tensor(dt, {n, c, h, w}, 11);
          ir::Tensor grid = random_tensor(DType::Float32, {n, ho, wo, 2}, 12, -1.4, 1.4);
          OpCase oc = make_case("GridSample", {x, grid},
                                {Attribute::make_string("mode", mode),
                                 Attribute::make_string("padding_mode", padding),
                                 Attribute::make_int("align_corners", align)});
          ir::Tensor y = run_op1(oc);
          ASSERT_EQ(y.shape(), (std::vector<int64_t>{n, c, ho, wo}));
          auto xs = to_doubles(x), gs = to_doubles(grid), got = to_doubles(y);
          double tol = dt == DType::Float16 ? 1e-2 : 1e-5;
          for (int64_t b = 0; b < n; ++b)
            for (int64_t ch = 0; ch < c; ++ch)
              for (int64_t p = 0; p < ho * wo; ++p) {
                double e = ref.sample(xs.data() + (b * c + ch) * h * w, h, w,
                                      gs[(b * ho * wo + p) * 2], gs[(b * ho * wo + p) * 2 + 1]);
                ASSERT_NEAR(got[(b * c + ch) * ho * wo + p], e, tol * (1 + std::fabs(e)));
              }
        }
}

TEST(GridSampleKernel, OnnxExampleAndErrors) {
  // The ONNX operator example: bilinear, zeros padding, align_corners 0.
  ir::Tensor x = tensor_of(DType::Float32, {1, 1, 3, 2}, {0, 1, 2, 3, 4, 5});
  ir::Tensor grid = tensor_of(DType::Float32, {1, 1, 4, 2}, {-10, -10, -5, -5, -0.2, -0.2, 10, 10});
  ir::Tensor y = run_op1(make_case("GridSample", {x, grid}, {}));
  EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, {1, 1, 1, 4}, {0, 0, 1.7, 0}), 1e-5, 1e-6);
  EXPECT_THROW(run_op(make_case("GridSample", {x, grid}, {Attribute::make_string("mode", "area")})),
               Error);
  EXPECT_THROW(
      run_op(make_case("GridSample", {x, random_tensor(DType::Float32, {1, 2, 2, 3}, 1)}, {})),
      Error);
}

// ---- NonMaxSuppression
std::vector<int64_t> nms_reference(const std::vector<float>& boxes,
                                   const std::vector<float>& scores, int64_t batches,
                                   int64_t classes, int64_t num, int64_t max_out, float iou_th,
                                   float score_th, bool center) {
  auto corners = [&](int64_t b, int64_t i) {
    const float* p = &boxes[(b * num + i) * 4];
    std::array<float, 4> r;
    if (center) {
      r = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    } else {
      r = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
    }
    return r;
  };
  auto iou = [](std::array<float, 4> a, std::array<float, 4> b) {
    float ia = (a[2] - a[0]) * (a[3] - a[1]), ib = (b[2] - b[0]) * (b[3] - b[1]);
    float h = std::max(0.0f, std::min(a[2], b[2]) - std::max(a[0], b[0]));
    float w = std::max(0.0f, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    if (ia <= 0 || ib <= 0) return 0.0f;
    return h * w / (ia + ib - h * w);
  };
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < num; ++i)
        if (scores[(b * classes + c) * num + i] > score_th) cand.push_back(i);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t l, int64_t r) {
        return scores[(b * classes + c) * num + l] > scores[(b * classes + c) * num + r];
      });
      std::vector<int64_t> kept;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(kept.size()) == max_out) break;
        bool ok = std::all_of(kept.begin(), kept.end(), [&](int64_t k) {
          return !(iou(corners(b, k), corners(b, i)) > iou_th);
        });
        if (ok) kept.push_back(i), out.insert(out.end(), {b, c, i});
      }
    }
  return out;
}

TEST(NonMaxSuppressionKernel, RandomBoxesBothFormats) {
  const int64_t batches = 2, classes = 3, num = 40;
  for (bool center : {false, true})
    for (float iou_th : {0.0f, 0.3f, 0.7f}) {
      ir::Tensor boxes = random_tensor(DType::Float32, {batches, num, 4}, 21, 0, 10);
      if (center)
        for (int64_t i = 0; i < batches * num; ++i)
          boxes.data<float>()[i * 4 + 2] = std::fabs(boxes.data<float>()[i * 4 + 2]) / 2,
                                      boxes.data<float>()[i * 4 + 3] =
                                          std::fabs(boxes.data<float>()[i * 4 + 3]) / 2;
      ir::Tensor scores = random_tensor(DType::Float32, {batches, classes, num}, 22, 0, 1);
      OpCase oc =
          make_case("NonMaxSuppression",
                    {boxes, scores, int64_tensor({5}), tensor_of(DType::Float32, {1}, {iou_th}),
                     tensor_of(DType::Float32, {1}, {0.2})},
                    {Attribute::make_int("center_point_box", center)});
      ir::Tensor y = run_op1(oc);
      auto bv = to_doubles(boxes), sv = to_doubles(scores);
      auto ref = nms_reference({bv.begin(), bv.end()}, {sv.begin(), sv.end()}, batches, classes,
                               num, 5, iou_th, 0.2f, center);
      ASSERT_EQ(y.shape(), (std::vector<int64_t>{static_cast<int64_t>(ref.size() / 3), 3}));
      EXPECT_EQ(std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + y.numel()), ref);
    }
}

TEST(NonMaxSuppressionKernel, DefaultsAndErrors) {
  ir::Tensor boxes = tensor_of(DType::Float32, {1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  ir::Tensor scores = tensor_of(DType::Float32, {1, 1, 2}, {0.5, 0.9});
  // max_output_boxes_per_class defaults to 0: nothing is selected.
  EXPECT_EQ(run_op1(make_case("NonMaxSuppression", {boxes, scores}, {})).shape(),
            (std::vector<int64_t>{0, 3}));
  ir::Tensor y = run_op1(make_case("NonMaxSuppression", {boxes, scores, int64_tensor({3})}, {}));
  EXPECT_EQ(to_doubles(y), (std::vector<double>{0, 0, 1}));
  EXPECT_THROW(
      run_op(make_case("NonMaxSuppression",
                       {boxes, tensor_of(DType::Float32, {1, 1, 3}, {1, 2, 3}), int64_tensor({3})},
                       {})),
      Error);
}

// ---- Col2Im
TEST(Col2ImKernel, MatchesDirectScatter2d) {
  const int64_t n = 2, c = 3, kh = 2, kw = 3, ih = 5, iw = 6;
  const std::vector<int64_t> dil = {1, 2}, str = {2, 1}, pads = {1, 0, 0, 2};
  const int64_t bh = (ih + pads[0] + pads[2] - (dil[0] * (kh - 1) + 1)) / str[0] + 1;
  const int64_t bw = (iw + pads[1] + pads[3] - (dil[1] * (kw - 1) + 1)) / str[1] + 1;
  for (DType dt : {DType::Float32, DType::Float16, DType::Int32}) {
    ir::Tensor x = random_tensor(dt, {n, c * kh * kw, bh * bw}, 31, -5, 5);
    OpCase oc{"Col2Im",
              {x, int64_tensor({ih, iw}), int64_tensor({kh, kw})},
              {Attribute::make_ints("dilations", dil), Attribute::make_ints("strides", str),
               Attribute::make_ints("pads", pads)},
              1,
              {false, true, true}};
    ir::Tensor y = run_op1(oc);
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{n, c, ih, iw}));
    std::vector<double> ref(n * c * ih * iw, 0.0);
    auto xs = to_doubles(x);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j)
            for (int64_t p = 0; p < bh; ++p)
              for (int64_t q = 0; q < bw; ++q) {
                int64_t r = p * str[0] - pads[0] + i * dil[0];
                int64_t s = q * str[1] - pads[1] + j * dil[1];
                if (r < 0 || r >= ih || s < 0 || s >= iw) continue;
                ref[((b * c + ch) * ih + r) * iw + s] +=
                    xs[((b * c * kh * kw) + (ch * kh + i) * kw + j) * bh * bw + p * bw + q];
              }
    auto got = to_doubles(y);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], dt == DType::Float16 ? 0.05 : 1e-5) << i;
  }
}

TEST(Col2ImKernel, OneAndThreeSpatialDimsAndErrors) {
  ir::Tensor x1 = tensor_of(DType::Float32, {1, 2, 3}, {1, 2, 3, 4, 5, 6});
  ir::Tensor y1 =
      run_op1({"Col2Im", {x1, int64_tensor({4}), int64_tensor({2})}, {}, 1, {false, true, true}});
  EXPECT_TENSOR_NEAR(y1, tensor_of(DType::Float32, {1, 1, 4}, {1, 2 + 4, 3 + 5, 6}), 0, 0);
  ir::Tensor x3 = random_tensor(DType::Float64, {1, 8, 8}, 3);
  ir::Tensor y3 = run_op1({"Col2Im",
                           {x3, int64_tensor({3, 3, 3}), int64_tensor({2, 2, 2})},
                           {},
                           1,
                           {false, true, true}});
  EXPECT_EQ(y3.shape(), (std::vector<int64_t>{1, 1, 3, 3, 3}));
  // The centre voxel is covered by all 8 blocks, once per kernel position.
  double centre = 0;
  auto xs = to_doubles(x3);
  for (int64_t k = 0; k < 8; ++k) centre += xs[k * 8 + (7 - k)];
  EXPECT_NEAR(to_doubles(y3)[13], centre, 1e-12);
  EXPECT_THROW(run_op(make_case("Col2Im", {x1, int64_tensor({5}), int64_tensor({2})}, {})), Error);
}

}  // namespace
}  // namespace switchyard::testing
