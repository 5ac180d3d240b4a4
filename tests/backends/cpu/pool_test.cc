// Pool family kernels against plain reference loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

struct PoolCase {
  std::vector<int64_t> x = {};
  std::vector<int64_t> kernel = {};
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
  std::string auto_pad = "NOTSET";
  bool ceil = false;
  bool include_pad = false;
};

std::vector<Attribute> pool_attrs(const PoolCase& c) {
  std::vector<Attribute> a = {Attribute::make_ints("kernel_shape", c.kernel),
                              Attribute::make_string("auto_pad", c.auto_pad),
                              Attribute::make_int("ceil_mode", c.ceil)};
  if (!c.strides.empty()) a.push_back(Attribute::make_ints("strides", c.strides));
  if (!c.dilations.empty()) a.push_back(Attribute::make_ints("dilations", c.dilations));
  if (!c.pads.empty()) a.push_back(Attribute::make_ints("pads", c.pads));
  return a;
}

enum class Kind { Max, Avg, Lp };

struct PoolResult {
  std::vector<int64_t> shape;
  std::vector<double> values;
  std::vector<double> indices;      // row-major flat indices of max elements
  std::vector<double> indices_col;  // with column-major spatial part
};

PoolResult reference_pool(const PoolCase& c, const std::vector<double>& x, Kind kind, int p) {
  size_t n = c.kernel.size();
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end());
  std::vector<int64_t> s = c.strides.empty() ? std::vector<int64_t>(n, 1) : c.strides;
  std::vector<int64_t> d = c.dilations.empty() ? std::vector<int64_t>(n, 1) : c.dilations;
  std::vector<int64_t> pads = c.pads.empty() ? std::vector<int64_t>(2 * n, 0) : c.pads;
  std::vector<int64_t> out(n), pb(n), pe(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t ext = (c.kernel[i] - 1) * d[i] + 1;
    if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      out[i] = (in[i] + s[i] - 1) / s[i];
      int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in[i]);
      pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else {
      pb[i] = c.auto_pad == "VALID" ? 0 : pads[i];
      pe[i] = c.auto_pad == "VALID" ? 0 : pads[i + n];
      int64_t span = in[i] + pb[i] + pe[i] - ext;
      out[i] = (span + (c.ceil ? s[i] - 1 : 0)) / s[i] + 1;
      if (c.ceil && (out[i] - 1) * s[i] >= in[i] + pb[i]) --out[i];
    }
  }
  PoolResult r;
  r.shape = {c.x[0], c.x[1]};
  r.shape.insert(r.shape.end(), out.begin(), out.end());
  int64_t planes = c.x[0] * c.x[1], in_size = product(in), out_size = product(out);
  int64_t ksize = product(c.kernel);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t o = 0; o < out_size; ++o) {
      std::vector<int64_t> oc = unravel(o, out);
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t best_off = 0, best_col = 0, count = 0;
      for (int64_t k = 0; k < ksize; ++k) {
        std::vector<int64_t> kc = unravel(k, c.kernel);
        bool inside = true, in_pads = true;
        int64_t off = 0, col = 0, col_stride = 1;
        for (size_t i = 0; i < n; ++i) {
          int64_t pos = oc[i] * s[i] - pb[i] + kc[i] * d[i];
          if (pos < 0 || pos >= in[i]) inside = false;
          if (pos < -pb[i] || pos >= in[i] + pe[i]) in_pads = false;
          off = off * in[i] + pos;
          col += pos * col_stride;
          col_stride *= in[i];
        }
        if (inside) {
          double v = x[static_cast<size_t>(pl * in_size + off)];
          if (v > best) {
            best = v;
            best_off = off;
            best_col = col;
          }
          sum += kind == Kind::Lp ? std::pow(std::fabs(v), p) : v;
          ++count;
        } else if (in_pads && c.include_pad) {
          ++count;
        }
      }
      if (kind == Kind::Max) {
        r.values.push_back(best);
      } else if (kind == Kind::Avg) {
        r.values.push_back(sum / static_cast<double>(count));
      } else {
        r.values.push_back(std::pow(sum, 1.0 / p));
      }
      r.indices.push_back(static_cast<double>(pl * in_size + best_off));
      r.indices_col.push_back(static_cast<double>(pl * in_size + best_col));
    }
  return r;
}

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases = {
      {{1, 2, 6, 6}, {2, 2}, {2, 2}},
      {{2, 3, 7, 8}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {{2, 3, 7, 8}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, "NOTSET", false, true},
      {{1, 2, 4, 4}, {3, 3}, {2, 2}, {}, {}, "NOTSET", true},
      {{1, 2, 5, 6}, {3, 2}, {2, 2}, {}, {1, 0, 1, 0}, "NOTSET", true, true},
      {{1, 2, 9, 9}, {2, 2}, {1, 1}, {2, 2}, {}},
      {{1, 3, 7, 6}, {3, 3}, {2, 2}, {}, {}, "SAME_UPPER"},
      {{1, 3, 7, 6}, {3, 2}, {2, 1}, {}, {}, "SAME_LOWER", false, true},
      {{1, 3, 7, 6}, {3, 3}, {2, 2}, {}, {}, "VALID"},
      {{2, 2, 11}, {3}, {2}, {}, {1, 1}},
      {{1, 2, 5, 4, 6}, {2, 2, 3}, {1, 2, 2}, {}, {0, 1, 1, 1, 0, 1}},
      {{1, 1, 6, 5, 4, 3}, {2, 2, 2, 2}, {2, 1, 2, 1}},  // 4 spatial dims
  };
  return cases;
}

TEST(MaxPoolKernel, MatchesReferenceWithIndices) {
  uint64_t seed = 1;
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(ir::shape_to_string(c.x) + " k " + ir::shape_to_string(c.kernel) + " " +
                 c.auto_pad + (c.ceil ? " ceil" : ""));
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::UInt8,
                     DType::Int8}) {
      double lo = dt == DType::UInt8 ? 0 : dt == DType::Int8 ? -128 : -1;
      double hi = dt == DType::UInt8 ? 256 : dt == DType::Int8 ? 128 : 1;
      ir::Tensor x = random_tensor(dt, c.x, seed++, lo, hi);
      PoolResult r = reference_pool(c, to_doubles(x), Kind::Max, 0);
      EXPECT_TENSOR_NEAR(run_op1(make_case("MaxPool", {x}, pool_attrs(c))),
                         tensor_of(dt, r.shape, r.values), 0, 0);
      if (dt == DType::Float32 || dt == DType::UInt8) {
        // Ties among uint8 values may pick another (equal) element, so compare gathered values.
        auto outs = run_op(make_case("MaxPool", {x}, pool_attrs(c), 2));
        std::vector<double> idx = to_doubles(outs[1].tensor), xd = to_doubles(x);
        EXPECT_TENSOR_NEAR(outs[0].tensor, tensor_of(dt, r.shape, r.values), 0, 0);
        for (size_t i = 0; i < idx.size(); ++i) {
          ASSERT_GE(idx[i], 0);
          ASSERT_LT(idx[i], static_cast<double>(xd.size()));
          EXPECT_EQ(xd[static_cast<size_t>(idx[i])], r.values[i]);
        }
        if (dt == DType::Float32) {
          EXPECT_TENSOR_NEAR(outs[1].tensor, tensor_of(DType::Int64, r.shape, r.indices), 0, 0);
          auto attrs = pool_attrs(c);
          attrs.push_back(Attribute::make_int("storage_order", 1));
          auto col = run_op(make_case("MaxPool", {x}, attrs, 2));
          EXPECT_TENSOR_NEAR(col[1].tensor, tensor_of(DType::Int64, r.shape, r.indices_col), 0, 0);
        }
      }
    }
  }
}

TEST(AveragePoolKernel, MatchesReference) {
  uint64_t seed = 100;
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(ir::shape_to_string(c.x) + " k " + ir::shape_to_string(c.kernel) + " " +
                 c.auto_pad + (c.ceil ? " ceil" : "") + (c.include_pad ? " include_pad" : ""));
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16}) {
      ir::Tensor x = random_tensor(dt, c.x, seed++);
      PoolResult r = reference_pool(c, to_doubles(x), Kind::Avg, 0);
      auto attrs = pool_attrs(c);
      attrs.push_back(Attribute::make_int("count_include_pad", c.include_pad));
      double tol = dt == DType::Float16 ? 5e-3 : dt == DType::Float32 ? 1e-5 : 1e-12;
      EXPECT_TENSOR_NEAR(run_op1(make_case("AveragePool", {x}, attrs)),
                         tensor_of(dt, r.shape, r.values), tol, tol);
    }
  }
}

TEST(LpPoolKernel, MatchesReference) {
  uint64_t seed = 200;
  for (const PoolCase& c : pool_cases()) {
    for (int p : {1, 2, 3}) {
      ir::Tensor x = random_tensor(DType::Float32, c.x, seed++);
      PoolResult r = reference_pool(c, to_doubles(x), Kind::Lp, p);
      auto attrs = pool_attrs(c);
      attrs.push_back(Attribute::make_int("p", p));
      EXPECT_TENSOR_NEAR(run_op1(make_case("LpPool", {x}, attrs)),
                         tensor_of(DType::Float32, r.shape, r.values), 1e-5, 1e-6);
    }
  }
}

TEST(GlobalPoolKernels, MatchReference) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{2, 3, 5, 4}, {1, 4, 7}, {2, 2, 3, 2, 2}, {1, 3, 1, 1}}) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16}) {
      ir::Tensor x = random_tensor(dt, shape, 9);
      std::vector<double> xd = to_doubles(x);
      int64_t planes = shape[0] * shape[1], size = product(shape) / planes;
      std::vector<double> avg, mx, lp;
      for (int64_t pl = 0; pl < planes; ++pl) {
        double s = 0, m = -1e30, l = 0;
        for (int64_t i = 0; i < size; ++i) {
          double v = xd[static_cast<size_t>(pl * size + i)];
          s += v;
          m = std::max(m, v);
          l += v * v;
        }
        avg.push_back(s / static_cast<double>(size));
        mx.push_back(m);
        lp.push_back(std::sqrt(l));
      }
      std::vector<int64_t> out = {shape[0], shape[1]};
      out.resize(shape.size(), 1);
      double tol = dt == DType::Float16 ? 5e-3 : 1e-5;
      EXPECT_TENSOR_NEAR(run_op1(make_case("GlobalAveragePool", {x})), tensor_of(dt, out, avg), tol,
                         tol);
      EXPECT_TENSOR_NEAR(run_op1(make_case("GlobalMaxPool", {x})), tensor_of(dt, out, mx), 0, 0);
      EXPECT_TENSOR_NEAR(run_op1(make_case("GlobalLpPool", {x})), tensor_of(dt, out, lp), tol, tol);
    }
  }
}

TEST(PoolKernels, BadInputsNameTheNode) {
  ir::Tensor x = random_tensor(DType::Float32, {1, 2, 3, 3}, 1);
  for (auto attrs : {std::vector<Attribute>{Attribute::make_ints("kernel_shape", {5, 5})},
                     std::vector<Attribute>{Attribute::make_ints("kernel_shape", {2})}}) {
    try {
      run_op1(make_case("MaxPool", {x}, attrs));
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
    }
  }
}

TEST(MaxUnpoolKernel, InvertsMaxPool) {
  std::vector<Attribute> attrs = {Attribute::make_ints("kernel_shape", {2, 2}),
                                  Attribute::make_ints("strides", {2, 2})};
  // [6, 6] pools to [3, 3] and unpools to (3-1)*2+2 = 6; an output_shape of [7, 8] pads the
  // unpooled [6, 6] at the ends (indices keep addressing the [6, 6] layout).
  for (const std::vector<int64_t>& out : {std::vector<int64_t>{}, {2, 3, 7, 8}}) {
    for (DType dt : {DType::Float32, DType::Float16}) {
      ir::Tensor x = random_tensor(dt, {2, 3, 6, 6}, 4);
      auto pooled = run_op(make_case("MaxPool", {x}, attrs, 2));
      std::vector<std::optional<ir::Tensor>> inputs = {pooled[0].tensor, pooled[1].tensor};
      if (!out.empty()) inputs.push_back(testing::int64_tensor(out));
      ir::Tensor y = run_op1(make_case("MaxUnpool", inputs, attrs));
      std::vector<int64_t> shape = out.empty() ? std::vector<int64_t>{2, 3, 6, 6} : out;
      std::vector<double> xd = to_doubles(x), idx = to_doubles(pooled[1].tensor);
      std::vector<double> want(static_cast<size_t>(product(shape)), 0.0);
      for (double i : idx) {
        int64_t flat = static_cast<int64_t>(i), plane = flat / 36, h = flat % 36 / 6, w = flat % 6;
        want[static_cast<size_t>((plane * shape[2] + h) * shape[3] + w)] =
            xd[static_cast<size_t>(flat)];
      }
      EXPECT_TENSOR_NEAR(y, tensor_of(dt, shape, want), 0, 0);
    }
  }
  // An out-of-range index is an error naming the node.
  ir::Tensor x = random_tensor(DType::Float32, {1, 1, 4, 4}, 4);
  auto pooled = run_op(make_case("MaxPool", {x}, attrs, 2));
  ir::Tensor bad = pooled[1].tensor.clone();
  bad.data<int64_t>()[0] = 1000;
  try {
    run_op1(make_case("MaxUnpool", {pooled[0].tensor, bad}, attrs));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
}

TEST(MaxRoiPoolKernel, MatchesReference) {
  ir::Tensor x = random_tensor(DType::Float32, {2, 3, 8, 10}, 5);
  ir::Tensor rois =
      tensor_of(DType::Float32, {3, 5}, {0, 1, 1, 6, 5, 1, 0, 0, 9, 7, 1, 4.4, 2.6, 5.2, 3.1});
  std::vector<double> xd = to_doubles(x), rd = to_doubles(rois), expected;
  const int64_t ph_n = 2, pw_n = 3;
  const double scale = 0.5;
  for (int64_t r = 0; r < 3; ++r) {
    const double* roi = rd.data() + r * 5;
    int64_t b = static_cast<int64_t>(roi[0]);
    int64_t x1 = std::lround(roi[1] * scale), y1 = std::lround(roi[2] * scale);
    int64_t x2 = std::lround(roi[3] * scale), y2 = std::lround(roi[4] * scale);
    double bh = static_cast<double>(std::max<int64_t>(y2 - y1 + 1, 1)) / ph_n;
    double bw = static_cast<double>(std::max<int64_t>(x2 - x1 + 1, 1)) / pw_n;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t ph = 0; ph < ph_n; ++ph)
        for (int64_t pw = 0; pw < pw_n; ++pw) {
          int64_t hs = std::min<int64_t>(
              std::max<int64_t>(static_cast<int64_t>(std::floor(ph * bh)) + y1, 0), 8);
          int64_t he = std::min<int64_t>(
              std::max<int64_t>(static_cast<int64_t>(std::ceil((ph + 1) * bh)) + y1, 0), 8);
          int64_t ws = std::min<int64_t>(
              std::max<int64_t>(static_cast<int64_t>(std::floor(pw * bw)) + x1, 0), 10);
          int64_t we = std::min<int64_t>(
              std::max<int64_t>(static_cast<int64_t>(std::ceil((pw + 1) * bw)) + x1, 0), 10);
          double m = (he <= hs || we <= ws) ? 0 : -1e30;
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w)
              m = std::max(m, xd[static_cast<size_t>(((b * 3 + c) * 8 + h) * 10 + w)]);
          expected.push_back(m);
        }
  }
  ir::Tensor y = run_op1(make_case("MaxRoiPool", {x, rois},
                                   {Attribute::make_ints("pooled_shape", {ph_n, pw_n}),
                                    Attribute::make_float("spatial_scale", 0.5f)}));
  EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, {3, 3, ph_n, pw_n}, expected), 0, 0);
  ir::Tensor bad = tensor_of(DType::Float32, {1, 5}, {2, 0, 0, 1, 1});
  EXPECT_THROW(
      run_op1(make_case("MaxRoiPool", {x, bad}, {Attribute::make_ints("pooled_shape", {1, 1})})),
      Error);
}

// Bilinear interpolation of a plane at (y, x) as RoiAlign samples it (zero outside [-1, size]).
double bilinear(const std::vector<double>& plane, int64_t h, int64_t w, double y, double x,
                bool max_mode, double* max_term) {
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) {
    *max_term = 0;
    return 0;
  }
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<double>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<double>(x0);
  } else {
    x1 = x0 + 1;
  }
  double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0);
  double t[4] = {(1 - ly) * (1 - lx) * plane[static_cast<size_t>(y0 * w + x0)],
                 (1 - ly) * lx * plane[static_cast<size_t>(y0 * w + x1)],
                 ly * (1 - lx) * plane[static_cast<size_t>(y1 * w + x0)],
                 ly * lx * plane[static_cast<size_t>(y1 * w + x1)]};
  *max_term = std::max(std::max(t[0], t[1]), std::max(t[2], t[3]));
  (void)max_mode;
  return t[0] + t[1] + t[2] + t[3];
}

TEST(RoiAlignKernel, MatchesReference) {
  const int64_t n = 2, channels = 2, h = 6, w = 7, oh = 3, ow = 2;
  for (const char* mode : {"avg", "max"})
    for (const char* ctm : {"half_pixel", "output_half_pixel"})
      for (int64_t ratio : {0, 2}) {
        SCOPED_TRACE(std::string(mode) + " " + ctm + " ratio " + std::to_string(ratio));
        ir::Tensor x = random_tensor(DType::Float32, {n, channels, h, w}, 6);
        ir::Tensor rois =
            tensor_of(DType::Float32, {3, 4}, {0.5, 1.0, 5.5, 4.5, 2, 2, 2.5, 2.5, -1, -1, 8, 7});
        ir::Tensor batch = testing::int64_tensor({1, 0, 1});
        const double scale = 0.75;
        std::vector<double> xd = to_doubles(x), rd = to_doubles(rois), expected;
        std::vector<int64_t> bi = {1, 0, 1};
        bool half = std::string(ctm) == "half_pixel";
        for (int64_t r = 0; r < 3; ++r) {
          double off = half ? 0.5 : 0.0;
          double x1 = rd[r * 4] * scale - off, y1 = rd[r * 4 + 1] * scale - off;
          double x2 = rd[r * 4 + 2] * scale - off, y2 = rd[r * 4 + 3] * scale - off;
          double rw = x2 - x1, rh = y2 - y1;
          if (!half) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
          double bh = rh / oh, bw = rw / ow;
          int64_t gh = ratio ? ratio : static_cast<int64_t>(std::ceil(rh / oh));
          int64_t gw = ratio ? ratio : static_cast<int64_t>(std::ceil(rw / ow));
          for (int64_t c = 0; c < channels; ++c) {
            std::vector<double> plane(xd.begin() + ((bi[r] * channels + c) * h * w),
                                      xd.begin() + ((bi[r] * channels + c + 1) * h * w));
            for (int64_t ph = 0; ph < oh; ++ph)
              for (int64_t pw = 0; pw < ow; ++pw) {
                double acc = 0, best = 0;
                bool first = true;
                for (int64_t iy = 0; iy < gh; ++iy)
                  for (int64_t ix = 0; ix < gw; ++ix) {
                    double yy = y1 + ph * bh + (iy + 0.5) * bh / gh;
                    double xx = x1 + pw * bw + (ix + 0.5) * bw / gw;
                    double mt;
                    acc += bilinear(plane, h, w, yy, xx, false, &mt);
                    best = first ? mt : std::max(best, mt);
                    first = false;
                  }
                expected.push_back(std::string(mode) == "max"
                                       ? best
                                       : acc / static_cast<double>(std::max<int64_t>(gh * gw, 1)));
              }
          }
        }
        ir::Tensor y = run_op1(make_case(
            "RoiAlign", {x, rois, batch},
            {Attribute::make_string("mode", mode),
             Attribute::make_string("coordinate_transformation_mode", ctm),
             Attribute::make_int("output_height", oh), Attribute::make_int("output_width", ow),
             Attribute::make_int("sampling_ratio", ratio),
             Attribute::make_float("spatial_scale", static_cast<float>(scale))}));
        EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, {3, channels, oh, ow}, expected), 1e-5,
                           1e-5);
      }
  ir::Tensor x = random_tensor(DType::Float32, {1, 1, 4, 4}, 1);
  EXPECT_THROW(run_op1(make_case("RoiAlign", {x, tensor_of(DType::Float32, {1, 4}, {0, 0, 1, 1}),
                                              testing::int64_tensor({3})})),
               Error);
}

}  // namespace
}  // namespace switchyard::testing
