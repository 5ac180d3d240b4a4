// The pool family (cpu pool.cc, cuda pool.cc): MaxPool (with Indices in both storage orders,
// 8-bit integer ties), AveragePool (count_include_pad), LpPool and the global pools over 1-D,
// 2-D and 3-D windows with strides, dilations, explicit pads, auto_pad and ceil_mode (windows
// that start in the padding or lie wholly in it), resnet50 / mobilenet_v2 / squeezenet shapes,
// every dtype each pool takes.
#include <cmath>
#include <limits>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};
const std::vector<DType> kMaxPoolTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                          DType::Float64, DType::Int8,    DType::UInt8};

// Sums of a window in float32 and one rounding of the 16-bit results; maxima are exact.
Tolerance sum_tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {4e-3, 2e-3};
    case DType::BFloat16:
      return {2e-2, 1e-2};
    case DType::Float64:
      return {1e-10, 1e-12};
    default:
      return {1e-5, 1e-6};
  }
}

// Window attributes of one case; empty lists are left out (the op's defaults).
struct Window {
  std::vector<int64_t> x;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
  std::string auto_pad = {};
  int64_t ceil_mode = 0;
};

std::vector<Attribute> window_attrs(const Window& w) {
  std::vector<Attribute> a = {Attribute::make_ints("kernel_shape", w.kernel)};
  if (!w.strides.empty()) a.push_back(Attribute::make_ints("strides", w.strides));
  if (!w.dilations.empty()) a.push_back(Attribute::make_ints("dilations", w.dilations));
  if (!w.pads.empty()) a.push_back(Attribute::make_ints("pads", w.pads));
  if (!w.auto_pad.empty()) a.push_back(Attribute::make_string("auto_pad", w.auto_pad));
  if (w.ceil_mode) a.push_back(Attribute::make_int("ceil_mode", w.ceil_mode));
  return a;
}

std::string describe(const Window& w) {
  return fmt::format("x={}/k={}/s={}/d={}/p={}/{}/ceil={}", shape_tag(w.x), shape_tag(w.kernel),
                     shape_tag(w.strides), shape_tag(w.dilations), shape_tag(w.pads),
                     w.auto_pad.empty() ? "NOTSET" : w.auto_pad, w.ceil_mode);
}

enum class Kind { Max, Avg, Lp };

double lowest_finite(DType d) {
  switch (d) {
    case DType::Int8:
      return -128;
    case DType::UInt8:
      return 0;
    case DType::Float64:
      return std::numeric_limits<double>::lowest();
    case DType::Float16:
      return -65504;
    case DType::BFloat16:
      return -3.3895313892515355e38;
    default:
      return std::numeric_limits<float>::lowest();
  }
}

// The pool over every window in double: the first maximum wins (its flat index, row-major or
// with a column-major spatial part); a window wholly in the padding gives the lowest finite
// value at the plane's first index.
Reference pool_ref(const Window& w, Kind kind, int p, bool include_pad, bool column_major) {
  return [=](const Inputs& ins) {
    const Tensor& xt = *ins[0];
    const std::vector<double> x = to_doubles(xt);
    size_t n = w.kernel.size();
    std::vector<int64_t> in(w.x.begin() + 2, w.x.end());
    std::vector<int64_t> s = w.strides.empty() ? std::vector<int64_t>(n, 1) : w.strides;
    std::vector<int64_t> d = w.dilations.empty() ? std::vector<int64_t>(n, 1) : w.dilations;
    std::vector<int64_t> pads = w.pads.empty() ? std::vector<int64_t>(2 * n, 0) : w.pads;
    std::vector<int64_t> out(n), pb(n), pe(n);
    const std::string auto_pad = w.auto_pad.empty() ? "NOTSET" : w.auto_pad;
    for (size_t i = 0; i < n; ++i) {
      int64_t ext = (w.kernel[i] - 1) * d[i] + 1;
      if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        out[i] = (in[i] + s[i] - 1) / s[i];
        int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in[i]);
        pb[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        pe[i] = total - pb[i];
      } else {
        pb[i] = auto_pad == "VALID" ? 0 : pads[i];
        pe[i] = auto_pad == "VALID" ? 0 : pads[i + n];
        int64_t span = in[i] + pb[i] + pe[i] - ext;
        out[i] = (span + (w.ceil_mode ? s[i] - 1 : 0)) / s[i] + 1;
        if (w.ceil_mode && (out[i] - 1) * s[i] >= in[i] + pb[i]) --out[i];
      }
    }
    std::vector<int64_t> shape = {w.x[0], w.x[1]};
    shape.insert(shape.end(), out.begin(), out.end());
    int64_t planes = w.x[0] * w.x[1], in_size = product(in), out_size = product(out);
    int64_t ksize = product(w.kernel);
    std::vector<double> values, indices;
    std::vector<std::vector<int64_t>> taps;
    for (int64_t k = 0; k < ksize; ++k) taps.push_back(unravel(k, w.kernel));
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t o = 0; o < out_size; ++o) {
        std::vector<int64_t> oc = unravel(o, out);
        double best = 0, sum = 0;
        int64_t best_off = 0, count = 0;
        bool found = false;
        for (const std::vector<int64_t>& kc : taps) {
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
            if (!found || v > best) {
              best = v;
              best_off = column_major ? col : off;
              found = true;
            }
            sum += kind == Kind::Lp ? std::pow(std::fabs(v), p) : v;
            ++count;
          } else if (in_pads && include_pad) {
            ++count;
          }
        }
        if (kind == Kind::Max) {
          values.push_back(found ? best : lowest_finite(xt.dtype()));
        } else if (kind == Kind::Avg) {
          values.push_back(sum / static_cast<double>(count));
        } else {
          values.push_back(std::pow(sum, 1.0 / p));
        }
        indices.push_back(static_cast<double>(pl * in_size + best_off));
      }
    std::vector<Tensor> result = {tensor_of(xt.dtype(), shape, values)};
    if (kind == Kind::Max) result.push_back(tensor_of(DType::Int64, shape, indices));
    return result;
  };
}

// The two model-sized windows (resnet50's stem, squeezenet's) run at float32 and float16; the
// other dtypes share their kernels' code and meet every attribute on the smaller windows.
bool too_big_for(DType dtype, const Window& w) {
  return product(w.x) > 500000 && dtype != DType::Float32 && dtype != DType::Float16;
}

// Random data; 8-bit integers over their range (many ties, which the first tap must win).
Tensor pool_input(DType dtype, const std::vector<int64_t>& shape, uint64_t seed) {
  if (dtype == DType::Int8) return random_tensor(dtype, shape, seed, -128.0, 127.0);
  if (dtype == DType::UInt8) return random_tensor(dtype, shape, seed, 0.0, 255.0);
  return random_tensor(dtype, shape, seed, -2.0, 2.0);
}

const std::vector<Window>& windows() {
  static const std::vector<Window> w = {
      {{1, 64, 112, 112}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},            // resnet50 stem
      {{1, 96, 111, 111}, {3, 3}, {2, 2}, {}, {}, {}, 1},               // squeezenet, ceil_mode
      {{2, 5, 17}, {3}, {2}},                                           // 1-D
      {{2, 3, 7, 8, 9}, {2, 3, 2}, {2, 1, 2}, {}, {1, 0, 1, 0, 1, 1}},  // 3-D, uneven pads
      {{2, 3, 13, 11}, {3, 3}, {1, 2}, {2, 2}, {2, 1, 2, 1}},           // dilations
      {{2, 3, 9, 10}, {3, 2}, {2, 3}, {}, {}, "SAME_UPPER"},
      {{2, 3, 9, 10}, {3, 2}, {2, 3}, {}, {}, "SAME_LOWER"},
      {{2, 3, 9, 10}, {4, 3}, {2, 2}, {}, {}, "VALID"},
      // ceil_mode: the last window starts in the end padding and reaches past it.
      {{2, 3, 6, 6}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, {}, 1},
      {{1, 2, 7, 5}, {2, 3}, {3, 2}, {2, 1}, {0, 1, 2, 0}, {}, 1},
      {{3, 4, 1, 1}, {1, 1}},  // 1x1 planes
      {{0, 3, 8, 8}, {2, 2}},  // empty batch
  };
  return w;
}

// The global pools: one window over every spatial dim.
Window global_window(const std::vector<int64_t>& shape) {
  return {shape, std::vector<int64_t>(shape.begin() + 2, shape.end())};
}

std::vector<Case> pool_cases() {
  std::vector<Case> cases;
  uint64_t seed = 100;
  for (DType dtype : kMaxPoolTypes)
    for (const Window& w : windows()) {
      if (too_big_for(dtype, w)) continue;
      Tensor x = pool_input(dtype, w.x, ++seed);
      cases.push_back(
          {.name = "MaxPool/" + dtype_tag(dtype) + "/" + describe(w),
           .op = "MaxPool",
           .inputs = {x},
           .attributes = window_attrs(w),
           .reference = [r = pool_ref(w, Kind::Max, 0, false, false)](const Inputs& in) {
             return std::vector<Tensor>{r(in)[0]};
           }});
      for (int64_t storage_order : {0, 1}) {
        std::vector<Attribute> attrs = window_attrs(w);
        attrs.push_back(Attribute::make_int("storage_order", storage_order));
        cases.push_back({.name = fmt::format("MaxPool+Indices/{}/order={}/{}", dtype_tag(dtype),
                                             storage_order, describe(w)),
                         .op = "MaxPool",
                         .inputs = {pool_input(dtype, w.x, ++seed)},
                         .attributes = attrs,
                         .num_outputs = 2,
                         .reference = pool_ref(w, Kind::Max, 0, false, storage_order == 1)});
      }
    }
  // Corner windows see padding only.
  Window padded{{1, 2, 3, 3}, {2, 2}, {2, 2}, {}, {2, 2, 2, 2}};
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int8, DType::UInt8})
    cases.push_back({.name = "MaxPool+Indices/" + dtype_tag(dtype) + "/windows in padding",
                     .op = "MaxPool",
                     .inputs = {pool_input(dtype, padded.x, 300)},
                     .attributes = window_attrs(padded),
                     .num_outputs = 2,
                     .reference = pool_ref(padded, Kind::Max, 0, false, false)});
  seed = 400;
  for (DType dtype : kFloatTypes)
    for (const Window& w : windows()) {
      if (too_big_for(dtype, w)) continue;
      for (int64_t include_pad : {0, 1}) {
        std::vector<Attribute> attrs = window_attrs(w);
        attrs.push_back(Attribute::make_int("count_include_pad", include_pad));
        cases.push_back({.name = fmt::format("AveragePool/{}/include_pad={}/{}", dtype_tag(dtype),
                                             include_pad, describe(w)),
                         .op = "AveragePool",
                         .inputs = {pool_input(dtype, w.x, ++seed)},
                         .attributes = attrs,
                         .reference = pool_ref(w, Kind::Avg, 0, include_pad == 1, false),
                         .tolerance = sum_tolerance(dtype)});
      }
      for (int p : {1, 2, 3}) {
        std::vector<Attribute> attrs = window_attrs(w);
        attrs.push_back(Attribute::make_int("p", p));
        cases.push_back({.name = fmt::format("LpPool/{}/p={}/{}", dtype_tag(dtype), p, describe(w)),
                         .op = "LpPool",
                         .inputs = {pool_input(dtype, w.x, ++seed)},
                         .attributes = attrs,
                         .reference = pool_ref(w, Kind::Lp, p, false, false),
                         .tolerance = sum_tolerance(dtype)});
      }
    }
  // resnet50's, mobilenet_v2's and squeezenet's heads, planes longer than one warp handles, no
  // spatial dims, one and three spatial dims, an empty batch.
  const std::vector<std::vector<int64_t>> global_shapes = {
      {2, 2048, 7, 7}, {1, 1280, 7, 7}, {1, 1000, 13, 13}, {1, 8, 64, 64}, {3, 5, 2000},
      {4, 5},          {2, 3, 17},      {2, 3, 4, 5, 6},   {0, 3, 4, 4},
  };
  seed = 600;
  for (DType dtype : kMaxPoolTypes)
    for (const auto& shape : global_shapes)
      cases.push_back(
          {.name = "GlobalMaxPool/" + dtype_tag(dtype) + "/" + shape_tag(shape),
           .op = "GlobalMaxPool",
           .inputs = {pool_input(dtype, shape, ++seed)},
           .reference = [r = pool_ref(global_window(shape), Kind::Max, 0, false, false)](
                            const Inputs& in) { return std::vector<Tensor>{r(in)[0]}; }});
  for (DType dtype : kFloatTypes)
    for (const auto& shape : global_shapes) {
      cases.push_back({.name = "GlobalAveragePool/" + dtype_tag(dtype) + "/" + shape_tag(shape),
                       .op = "GlobalAveragePool",
                       .inputs = {pool_input(dtype, shape, ++seed)},
                       .reference = pool_ref(global_window(shape), Kind::Avg, 0, false, false),
                       .tolerance = sum_tolerance(dtype)});
      for (int p : {1, 2, 3})
        cases.push_back(
            {.name = fmt::format("GlobalLpPool/{}/p={}/{}", dtype_tag(dtype), p, shape_tag(shape)),
             .op = "GlobalLpPool",
             .inputs = {pool_input(dtype, shape, ++seed)},
             .attributes = {Attribute::make_int("p", p)},
             .reference = pool_ref(global_window(shape), Kind::Lp, p, false, false),
             .tolerance = sum_tolerance(dtype)});
    }
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(pool, pool_cases)

}  // namespace switchyard::testing::harness
