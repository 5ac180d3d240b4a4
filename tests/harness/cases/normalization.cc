// The normalization family (cpu normalization.cc, normalization_softmax.cc; cuda
// normalization.cc, softmax.cu): LayerNormalization (BERT rows of 768, odd sizes, broadcast
// Scale/B, Mean/InvStdDev, stash_type double), inference BatchNormalization (resnet50 /
// mobilenet_v2 shapes, float32 parameters for 16-bit data), Instance/GroupNormalization,
// LpNormalization, MeanVarianceNormalization, and Softmax/LogSoftmax along first, middle and
// last axes with rows up to 30522, NaN and infinities, for every float dtype.
#include <cmath>
#include <limits>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Statistics accumulated in float32 (the 16-bit types too) and one rounding of 16-bit results.
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {4e-3, 4e-3};
    case DType::BFloat16:
      return {2e-2, 2e-2};
    case DType::Float64:
      return {1e-10, 1e-12};
    default:
      return {1e-4, 2e-5};
  }
}

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }
Attribute float_attr(const char* name, float v) { return Attribute::make_float(name, v); }

// A tensor's value at the broadcast of its shape against `shape`, at `index`.
double at_broadcast(const Tensor& t, const std::vector<double>& v, const Shape& shape,
                    const std::vector<int64_t>& index) {
  const Shape& s = t.shape();
  int64_t off = 0;
  for (size_t i = 0; i < s.size(); ++i)
    off = off * s[i] + (s[i] == 1 ? 0 : index[shape.size() - s.size() + i]);
  return v[static_cast<size_t>(off)];
}

// Normalizes x over groups of elements (group_of(index) -> group id), then y = affine(index,
// x̂); returns y and each group's mean and 1/stddev.
struct Normalized {
  std::vector<double> y, mean, inv_std;
};
Normalized normalize(const Tensor& x, int64_t groups,
                     const std::function<int64_t(const std::vector<int64_t>&)>& group_of,
                     double epsilon,
                     const std::function<double(const std::vector<int64_t>&, double)>& affine,
                     bool epsilon_after_sqrt = false) {
  const std::vector<double> v = to_doubles(x);
  Normalized r;
  r.mean.assign(static_cast<size_t>(groups), 0);
  r.inv_std.assign(static_cast<size_t>(groups), 0);
  std::vector<double> count(static_cast<size_t>(groups), 0), var(static_cast<size_t>(groups), 0);
  std::vector<int64_t> group(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    group[i] = group_of(unravel(static_cast<int64_t>(i), x.shape()));
    r.mean[static_cast<size_t>(group[i])] += v[i];
    count[static_cast<size_t>(group[i])] += 1;
  }
  for (size_t g = 0; g < r.mean.size(); ++g) r.mean[g] /= std::max(count[g], 1.0);
  for (size_t i = 0; i < v.size(); ++i) {
    double d = v[i] - r.mean[static_cast<size_t>(group[i])];
    var[static_cast<size_t>(group[i])] += d * d;
  }
  for (size_t g = 0; g < var.size(); ++g)
    r.inv_std[g] = epsilon_after_sqrt ? 1 / (std::sqrt(var[g] / std::max(count[g], 1.0)) + epsilon)
                                      : 1 / std::sqrt(var[g] / std::max(count[g], 1.0) + epsilon);
  r.y.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    size_t g = static_cast<size_t>(group[i]);
    r.y[i] = affine(unravel(static_cast<int64_t>(i), x.shape()), (v[i] - r.mean[g]) * r.inv_std[g]);
  }
  return r;
}

Reference layer_norm_ref(int64_t axis, double epsilon, int num_outputs) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    const size_t a = static_cast<size_t>(normalize_axis(axis, shape.size()));
    Shape outer(shape.begin(), shape.begin() + static_cast<int64_t>(a));
    const std::vector<double> scale = to_doubles(*in[1]);
    const std::vector<double> bias =
        in.size() > 2 && in[2] ? to_doubles(*in[2]) : std::vector<double>{};
    Normalized n = normalize(
        x, product(outer),
        [&](const std::vector<int64_t>& i) {
          return outer.empty() ? 0 : ravel({i.begin(), i.begin() + static_cast<int64_t>(a)}, outer);
        },
        epsilon,
        [&](const std::vector<int64_t>& i, double xn) {
          double y = xn * at_broadcast(*in[1], scale, shape, i);
          return bias.empty() ? y : y + at_broadcast(*in[2], bias, shape, i);
        });
    Shape stat_shape = outer;
    stat_shape.resize(shape.size(), 1);
    std::vector<Tensor> out = {tensor_of(x.dtype(), shape, n.y)};
    // Mean and InvStdDev are float32 unless stash_type says otherwise (the tests keep it 1).
    if (num_outputs > 1) out.push_back(tensor_of(DType::Float32, stat_shape, n.mean));
    if (num_outputs > 2) out.push_back(tensor_of(DType::Float32, stat_shape, n.inv_std));
    return out;
  };
}

Reference batch_norm_ref(double epsilon) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    std::vector<double> v = to_doubles(x), scale = to_doubles(*in[1]), bias = to_doubles(*in[2]),
                        mean = to_doubles(*in[3]), var = to_doubles(*in[4]);
    const int64_t c = x.shape()[1], inner = x.numel() == 0 ? 1 : x.numel() / (x.shape()[0] * c);
    for (size_t i = 0; i < v.size(); ++i) {
      size_t ch = static_cast<size_t>((static_cast<int64_t>(i) / inner) % c);
      v[i] = (v[i] - mean[ch]) / std::sqrt(var[ch] + epsilon) * scale[ch] + bias[ch];
    }
    return std::vector<Tensor>{tensor_of(x.dtype(), x.shape(), v)};
  };
}

// Instance (groups == C) and group normalization: statistics per (n, group of channels).
Reference channel_norm_ref(int64_t groups_per_sample, double epsilon, bool per_group_affine) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    const int64_t c = shape[1], per = c / groups_per_sample;
    const std::vector<double> scale = to_doubles(*in[1]), bias = to_doubles(*in[2]);
    Normalized n = normalize(
        x, shape[0] * groups_per_sample,
        [&](const std::vector<int64_t>& i) { return i[0] * groups_per_sample + i[1] / per; },
        epsilon,
        [&](const std::vector<int64_t>& i, double xn) {
          size_t k = static_cast<size_t>(per_group_affine ? i[1] / per : i[1]);
          return xn * scale[k] + bias[k];
        });
    return std::vector<Tensor>{tensor_of(x.dtype(), shape, n.y)};
  };
}

Reference lp_norm_ref(int64_t axis, int p) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    const size_t a = static_cast<size_t>(normalize_axis(axis, shape.size()));
    std::vector<double> v = to_doubles(x);
    Shape rest = shape;
    rest[a] = 1;
    std::vector<double> norm(static_cast<size_t>(product(rest)), 0);
    auto slot = [&](size_t i) {
      std::vector<int64_t> idx = unravel(static_cast<int64_t>(i), shape);
      idx[a] = 0;
      return static_cast<size_t>(ravel(idx, rest));
    };
    for (size_t i = 0; i < v.size(); ++i) norm[slot(i)] += p == 1 ? std::fabs(v[i]) : v[i] * v[i];
    for (size_t i = 0; i < v.size(); ++i) {
      double n = p == 1 ? norm[slot(i)] : std::sqrt(norm[slot(i)]);
      v[i] = n == 0 ? 0 : v[i] / n;
    }
    return std::vector<Tensor>{tensor_of(x.dtype(), shape, v)};
  };
}

Reference mvn_ref(Shape axes) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    std::vector<bool> reduced(shape.size(), false);
    for (int64_t a : axes) reduced[static_cast<size_t>(normalize_axis(a, shape.size()))] = true;
    Shape kept;
    for (size_t d = 0; d < shape.size(); ++d) kept.push_back(reduced[d] ? 1 : shape[d]);
    Normalized n = normalize(
        x, product(kept),
        [&](std::vector<int64_t> i) {
          for (size_t d = 0; d < i.size(); ++d)
            if (reduced[d]) i[d] = 0;
          return ravel(i, kept);
        },
        1e-9, [](const std::vector<int64_t>&, double xn) { return xn; },
        /*epsilon_after_sqrt=*/true);  // ONNX's function body: (X - mean) / (sqrt(var) + 1e-9)
    return std::vector<Tensor>{tensor_of(x.dtype(), shape, n.y)};
  };
}

Reference softmax_ref(int64_t axis, bool log) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    const size_t a = static_cast<size_t>(normalize_axis(axis, shape.size()));
    const std::vector<int64_t> strides = strides_of(shape);
    const int64_t len = shape[a], inner = strides[a];
    const int64_t outer = len * inner == 0 ? 0 : x.numel() / (len * inner);
    std::vector<double> v = to_doubles(x), out(v.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return static_cast<size_t>((o * len + j) * inner + i); };
        double m = -kInf;
        bool nan = false;
        for (int64_t j = 0; j < len; ++j) {
          nan = nan || std::isnan(v[at(j)]);
          m = std::max(m, v[at(j)]);
        }
        double sum = 0;
        for (int64_t j = 0; j < len; ++j) sum += std::exp(v[at(j)] - m);
        for (int64_t j = 0; j < len; ++j) {
          double e = v[at(j)] - m;
          out[at(j)] = nan ? kNaN : log ? e - std::log(sum) : std::exp(e) / sum;
        }
      }
    return std::vector<Tensor>{tensor_of(x.dtype(), shape, out)};
  };
}

Case layer_norm_case(DType dtype, Shape x, Shape scale, Shape bias, int64_t axis, float epsilon,
                     std::vector<Attribute> extra, int num_outputs, uint64_t seed,
                     const std::string& tag = "") {
  Inputs inputs = {random_tensor(dtype, x, seed, -2.0, 3.0),
                   random_tensor(dtype, scale, seed + 1, 0.5, 1.5)};
  if (!bias.empty()) inputs.push_back(random_tensor(dtype, bias, seed + 2));
  std::vector<Attribute> attrs = {int_attr("axis", axis), float_attr("epsilon", epsilon)};
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  return {.name = fmt::format("LayerNormalization/{}/x={}/scale={}/bias={}/axis={}/outputs={}{}",
                              dtype_tag(dtype), shape_tag(x), shape_tag(scale),
                              bias.empty() ? "none" : shape_tag(bias), axis, num_outputs, tag),
          .op = "LayerNormalization",
          .inputs = inputs,
          .attributes = attrs,
          .num_outputs = num_outputs,
          .reference = layer_norm_ref(axis, epsilon, num_outputs),
          .tolerance = tolerance_for(dtype)};
}

void add_layer_norm(std::vector<Case>& cases) {
  uint64_t seed = 100;
  struct Shapes {
    Shape x, scale, bias;
    int64_t axis;
  };
  const std::vector<Shapes> shapes = {
      {{3, 5, 33}, {33}, {33}, -1},             // the last dim
      {{3, 5, 33}, {5, 33}, {5, 33}, 1},        // two normalized dims
      {{3, 5, 33}, {3, 5, 33}, {}, 0},          // one row, no bias
      {{4, 1500}, {1500}, {1500}, 1},           // rows longer than one warp handles
      {{2, 3, 2049}, {2049}, {}, 2},            // odd long rows
      {{6, 1}, {1}, {1}, -1},                   // a single column: y = B
      {{2, 3, 4, 5}, {4, 5}, {5}, 2},           // B of fewer dims than Scale
      {{4, 9, 16}, {1}, {16}, -1},              // scalar-like Scale
      {{4, 9, 16}, {16}, {1, 1}, -1},           // B broadcast over everything
      {{4, 9, 16}, {9, 1}, {9, 16}, -1},        // Scale and B vary per row
      {{4, 9, 16}, {4, 1, 16}, {1, 9, 1}, 2},   // both vary before the axis
      {{2, 3, 5, 7}, {3, 1, 7}, {1, 5, 1}, 2},  // two normalized dims
      // cuda's row kernel: scalar rows, 16-byte rows of one and two slots a thread, several
      // short rows a block; then the generic kernel past 8192.
      {{3, 7}, {7}, {7}, -1},
      {{7, 1000}, {1000}, {1000}, -1},
      {{2, 3072}, {3072}, {3072}, -1},
      {{3, 4096}, {4096}, {4096}, -1},
      {{2, 5000}, {5000}, {5000}, -1},
      {{1030, 64}, {64}, {64}, -1},
      {{2, 9000}, {9000}, {9000}, -1},
  };
  for (DType dtype : kFloatTypes) {
    for (int64_t rows : {1, 7, 128, 512})
      cases.push_back(
          layer_norm_case(dtype, {1, rows, 768}, {768}, {768}, -1, 1e-12f, {}, 1, seed += 3));
    cases.push_back(
        layer_norm_case(dtype, {2, 64, 768}, {768}, {768}, -1, 1e-5f, {}, 3, seed += 3));
    for (const Shapes& s : shapes)
      cases.push_back(
          layer_norm_case(dtype, s.x, s.scale, s.bias, s.axis, 1e-5f, {}, 3, seed += 3));
    cases.push_back(layer_norm_case(dtype, {5, 96}, {96}, {96}, -1, 1e-3f,
                                    {int_attr("stash_type", 11)}, 1, seed += 3, "/stash=double"));
    cases.push_back(layer_norm_case(dtype, {0, 768}, {768}, {768}, -1, 1e-5f, {}, 3, seed += 3));
  }
}

void add_channel_norms(std::vector<Case>& cases) {
  uint64_t seed = 600;
  const std::vector<Shape> bn_shapes = {
      {1, 64, 56, 56},  // resnet50 stem
      {2, 256, 14, 14}, {1, 2048, 7, 7}, {1, 96, 28, 28}, {3, 5, 7},
      {4, 10},          {2, 3, 4, 5, 6}, {0, 16, 8, 8},  // empty batch
  };
  auto bn = [&](DType dtype, DType param, const Shape& x, float epsilon) {
    const int64_t c = x[1];
    cases.push_back({.name = fmt::format("BatchNormalization/{}/params={}/{}/eps={}",
                                         dtype_tag(dtype), dtype_tag(param), shape_tag(x), epsilon),
                     .op = "BatchNormalization",
                     .inputs = {random_tensor(dtype, x, seed, -2.0, 2.0),
                                random_tensor(param, {c}, seed + 1, 0.5, 1.5),
                                random_tensor(param, {c}, seed + 2),
                                random_tensor(param, {c}, seed + 3, -0.5, 0.5),
                                random_tensor(param, {c}, seed + 4, 0.25, 2.0)},
                     .attributes = {float_attr("epsilon", epsilon)},
                     .reference = batch_norm_ref(epsilon),
                     .tolerance = tolerance_for(dtype)});
    seed += 5;
  };
  for (DType dtype : kFloatTypes) {
    for (const Shape& x : bn_shapes) bn(dtype, dtype, x, 1e-5f);
    bn(dtype, DType::Float32, {2, 32, 9, 11}, 1e-3f);
  }
  auto channel_case = [&](const char* op, DType dtype, const Shape& x, int64_t groups,
                          std::vector<Attribute> attrs, double epsilon) {
    const int64_t c = x[1];
    const bool group_norm = std::string(op) == "GroupNormalization";
    const int64_t params = c;
    cases.push_back(
        {.name = fmt::format("{}/{}/{}/groups={}", op, dtype_tag(dtype), shape_tag(x), groups),
         .op = op,
         .inputs = {random_tensor(dtype, x, seed, -1.0, 3.0),
                    random_tensor(dtype, {params}, seed + 1, 0.5, 1.5),
                    random_tensor(dtype, {params}, seed + 2)},
         .attributes = attrs,
         .reference = channel_norm_ref(groups, epsilon, false),
         .tolerance = tolerance_for(dtype)});
    (void)group_norm;
    seed += 3;
  };
  for (DType dtype : kFloatTypes) {
    for (const Shape& x : std::vector<Shape>{{2, 32, 17, 19},
                                             {1, 4, 40, 40},
                                             {2, 3, 5},
                                             {1, 2, 3, 4, 5},
                                             {3, 7, 1, 1},
                                             {0, 3, 4, 4}})
      channel_case("InstanceNormalization", dtype, x, x[1], {float_attr("epsilon", 1e-4f)}, 1e-4f);
    for (const auto& [x, groups] : std::vector<std::pair<Shape, int64_t>>{{{2, 32, 14, 14}, 8},
                                                                          {{1, 6, 7}, 3},
                                                                          {{2, 64, 32, 32}, 1},
                                                                          {{2, 12, 5, 5}, 12},
                                                                          {{3, 10}, 5},
                                                                          {{0, 8, 4, 4}, 2}})
      channel_case("GroupNormalization", dtype, x, groups, {int_attr("num_groups", groups)}, 1e-5f);
  }
}

void add_lp_mvn_softmax(std::vector<Case>& cases) {
  uint64_t seed = 1000;
  for (DType dtype : kFloatTypes) {
    for (int p : {1, 2})
      for (const auto& [x, axis] : std::vector<std::pair<Shape, int64_t>>{{{3, 5, 7}, -1},
                                                                          {{3, 5, 7}, 1},
                                                                          {{3, 5, 7}, 0},
                                                                          {{16, 768}, -1},
                                                                          {{9}, 0},
                                                                          {{0, 4}, 1}})
        cases.push_back({.name = fmt::format("LpNormalization/{}/{}/axis={}/p={}", dtype_tag(dtype),
                                             shape_tag(x), axis, p),
                         .op = "LpNormalization",
                         .inputs = {random_tensor(dtype, x, seed++)},
                         .attributes = {int_attr("axis", axis), int_attr("p", p)},
                         .reference = lp_norm_ref(axis, p),
                         .tolerance = tolerance_for(dtype)});
    // An all-zero row stays zero.
    cases.push_back({.name = "LpNormalization/" + dtype_tag(dtype) + "/zero row",
                     .op = "LpNormalization",
                     .inputs = {tensor_of(dtype, {2, 3}, {0, 0, 0, 0.5, -1.5, 2})},
                     .reference = lp_norm_ref(-1, 2),
                     .tolerance = tolerance_for(dtype)});
    for (const auto& [x, axes] : std::vector<std::pair<Shape, Shape>>{{{2, 3, 5, 7}, {}},
                                                                      {{2, 3, 5, 7}, {2, 3}},
                                                                      {{2, 3, 5, 7}, {1}},
                                                                      {{4, 33}, {-1}},
                                                                      {{2, 3, 40, 40}, {}},
                                                                      {{3, 4, 5}, {0, 2}},
                                                                      {{0, 3, 4, 4}, {}}}) {
      std::vector<Attribute> attrs;
      if (!axes.empty()) attrs.push_back(Attribute::make_ints("axes", axes));
      cases.push_back(
          {.name = fmt::format("MeanVarianceNormalization/{}/{}/axes={}", dtype_tag(dtype),
                               shape_tag(x), axes.empty() ? "default" : shape_tag(axes)),
           .op = "MeanVarianceNormalization",
           .inputs = {random_tensor(dtype, x, seed++, -1.0, 4.0)},
           .attributes = attrs,
           .reference = mvn_ref(axes.empty() ? Shape{0, 2, 3} : axes),
           .tolerance = tolerance_for(dtype)});
    }
  }
  const std::vector<std::pair<Shape, int64_t>> softmax_shapes = {
      {{2, 3, 30522}, -1},  // BERT vocabulary rows
      {{4, 3000}, -1},     {{3, 1000}, 1}, {{5, 100}, -1},
      {{8, 7}, -1},        {{6, 1}, -1},                 // rows of one: 1 (LogSoftmax: 0)
      {{30522, 3}, 0},                                   // the first axis
      {{2, 30522, 5}, 1},                                // a middle axis
      {{7, 40}, 0},        {{3, 4, 5}, 1}, {{0, 5}, 1},  // empty
  };
  seed = 7000;
  // Rows: plain, with a NaN, with +inf, all -inf.
  const std::vector<double> specials = {1, 2,    3, 4, 1,     kNaN,  3,     4,
                                        1, kInf, 3, 4, -kInf, -kInf, -kInf, -kInf};
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    const bool log = std::string(op) == "LogSoftmax";
    for (DType dtype : kFloatTypes) {
      Tolerance tol = tolerance_for(dtype);
      tol.atol = std::min(tol.atol, 1e-6);  // outputs near 1 / len: an absolute one hides errors
      for (const auto& [x, axis] : softmax_shapes)
        cases.push_back(
            {.name = fmt::format("{}/{}/{}/axis={}", op, dtype_tag(dtype), shape_tag(x), axis),
             .op = op,
             .inputs = {random_tensor(dtype, x, ++seed, -4.0, 4.0)},
             .attributes = {int_attr("axis", axis)},
             .reference = softmax_ref(axis, log),
             .tolerance = tol});
      for (int64_t axis : {0, 1})
        cases.push_back({.name = fmt::format("{}/{}/specials/axis={}", op, dtype_tag(dtype), axis),
                         .op = op,
                         .inputs = {tensor_of(dtype, {4, 4}, specials)},
                         .attributes = {int_attr("axis", axis)},
                         .reference = softmax_ref(axis, log),
                         .tolerance = tolerance_for(dtype)});
    }
  }
}

// ---- the fused forms (backends/fusion/fusion.h) ---------------------------------------------

// Add(inputs[0], inputs[extra]) (the extra input first when `extra_first`) in front of the
// node, which reads the sum and inputs [1, extra): the residual Add -> LayerNormalization and
// the mask Add -> Softmax the backends fuse into one kernel.
Prelude sum_in_front(size_t extra, bool extra_first = false) {
  return [=](ir::Graph& g, const std::vector<ir::Value*>& in) {
    std::vector<ir::Value*> operands = {in[0], in[extra]};
    if (extra_first) std::swap(operands[0], operands[1]);
    std::vector<ir::Value*> reads = {g.add_node("Add", "add", operands, {"sum"})->output(0)};
    reads.insert(reads.end(), in.begin() + 1, in.begin() + static_cast<std::ptrdiff_t>(extra));
    return reads;
  };
}

// `ref` of the inputs the node reads: the sum (rounded to the dtype, as the Add leaves it) and
// inputs [1, extra).
Reference sum_then(size_t extra, Reference ref) {
  return [=](const Inputs& in) {
    Inputs reads = {map_broadcast({&*in[0], &*in[extra]}, in[0]->dtype(),
                                  [](const std::vector<double>& v) { return v[0] + v[1]; })};
    reads.insert(reads.end(), in.begin() + 1, in.begin() + static_cast<std::ptrdiff_t>(extra));
    return ref(reads);
  };
}

// Residual Add -> LayerNormalization: residuals of X's shape (added in the cuda kernels at
// every row length and count: BERT's rows of 768 at 1 x 128 and 8 x 128, odd sizes, two
// normalized dims, rows past the register kernel's, float64), and sums that broadcast X or Z
// (summed first everywhere).
void add_fused_layer_norm(std::vector<Case>& cases) {
  struct Shapes {
    Shape x, z;
    int64_t axis;
  };
  const std::vector<Shapes> shapes = {
      {{2, 128, 768}, {2, 128, 768}, -1}, {{8, 128, 768}, {8, 128, 768}, -1},
      {{1030, 33}, {1030, 33}, -1},       {{3, 5, 33}, {3, 5, 33}, -1},
      {{3, 5, 33}, {3, 5, 33}, 1},        {{4, 1500}, {4, 1500}, -1},
      {{1, 5, 16}, {3, 5, 16}, -1},       {{3, 5, 16}, {16}, -1},
      {{3, 5, 16}, {3, 1, 16}, -1},       {{1, 128, 768}, {1, 128, 768}, -1},
      {{3, 4096}, {3, 4096}, -1},         {{2, 5000}, {2, 5000}, -1},
      {{2, 9000}, {2, 9000}, -1},
  };
  uint64_t seed = 9000;
  for (DType dtype : kFloatTypes)
    for (const Shapes& sh : shapes) {
      Shape out = broadcast_shapes({sh.x, sh.z});
      const size_t axis = static_cast<size_t>(normalize_axis(sh.axis, out.size()));
      Shape scale(out.begin() + static_cast<std::ptrdiff_t>(axis), out.end());
      cases.push_back(
          {.name = fmt::format("LayerNormalization+residual/{}/x={}/z={}/axis={}", dtype_tag(dtype),
                               shape_tag(sh.x), shape_tag(sh.z), sh.axis),
           .op = "LayerNormalization",
           .inputs = {random_tensor(dtype, sh.x, seed, -2.0, 3.0),
                      random_tensor(dtype, scale, seed + 1, 0.5, 1.5),
                      random_tensor(dtype, scale, seed + 2),
                      random_tensor(dtype, sh.z, seed + 3, -1.5, 1.5)},
           .attributes = {int_attr("axis", sh.axis), float_attr("epsilon", 1e-5f)},
           .reference = sum_then(3, layer_norm_ref(sh.axis, 1e-5, 1)),
           .tolerance = tolerance_for(dtype),
           .prelude = sum_in_front(3)});
      seed += 4;
    }
}

// Residual Add -> LayerNormalization where the sum is read by more than the norm (here: a graph
// output too; a pre-norm stack's running sum, read by the next residual Add): the fused norm
// writes the sum as well (fusion::ResidualSum), which must be the Add's, as the dtype rounds it.
// X and Z of one shape (the only form that fuses so): the row kernel at BERT's and GPT's 768, odd
// and long rows (16-byte and scalar forms), the generic kernel past 8192, every float dtype.
void add_fused_layer_norm_sum(std::vector<Case>& cases) {
  const std::vector<Shape> shapes = {{2, 128, 768}, {1, 7, 768}, {1030, 33}, {3, 5, 771},
                                     {4, 1500},     {3, 4096},   {2, 8192},  {2, 9000}};
  uint64_t seed = 9300;
  for (DType dtype : kFloatTypes)
    for (const Shape& x : shapes) {
      Shape scale = {x.back()};
      Reference norm = sum_then(3, layer_norm_ref(-1, 1e-5, 1));
      cases.push_back({.name = fmt::format("LayerNormalization+residual+sum/{}/x={}",
                                           dtype_tag(dtype), shape_tag(x)),
                       .op = "LayerNormalization",
                       .inputs = {random_tensor(dtype, x, seed, -2.0, 3.0),
                                  random_tensor(dtype, scale, seed + 1, 0.5, 1.5),
                                  random_tensor(dtype, scale, seed + 2),
                                  random_tensor(dtype, x, seed + 3, -1.5, 1.5)},
                       .attributes = {int_attr("axis", -1), float_attr("epsilon", 1e-5f)},
                       // Outputs: the sum (a graph output before the node's), then Y.
                       .reference =
                           [norm](const Inputs& in) {
                             std::vector<Tensor> out = {map_broadcast(
                                 {&*in[0], &*in[3]}, in[0]->dtype(),
                                 [](const std::vector<double>& v) { return v[0] + v[1]; })};
                             for (Tensor& t : norm(in)) out.push_back(std::move(t));
                             return out;
                           },
                       .tolerance = tolerance_for(dtype),
                       .prelude =
                           [](ir::Graph& g, const std::vector<ir::Value*>& in) {
                             std::vector<ir::Value*> reads = sum_in_front(3)(g, in);
                             g.add_output(reads[0]);
                             return reads;
                           }});
      seed += 4;
    }
}

// Mask Add -> Softmax: masks that broadcast into X's rows (BERT's [B,1,1,S], a causal [1,1,S,S]
// written first in the Add, a row [S], a scalar, a per-row [B,H,S,1], rows of one warp and of a
// block), and where the kernel sums first: a mask that widens X, a softmax over a middle axis.
void add_fused_softmax(std::vector<Case>& cases) {
  struct Shapes {
    Shape x, m;
    int64_t axis;
    bool mask_first;
  };
  const std::vector<Shapes> shapes = {
      {{2, 12, 128, 128}, {2, 1, 1, 128}, -1, false},
      {{2, 3, 4, 6}, {1, 1, 4, 6}, -1, true},
      {{2, 3, 4, 6}, {6}, 3, false},
      {{2, 3, 4, 6}, {}, -1, false},
      {{2, 3, 4, 6}, {2, 3, 4, 1}, -1, false},
      {{4, 3000}, {1, 3000}, -1, false},
      {{1, 3, 4, 6}, {2, 1, 4, 6}, -1, false},
      {{2, 3, 6}, {2, 1, 6}, 1, false},
  };
  uint64_t seed = 9500;
  for (DType dtype : kFloatTypes)
    for (const Shapes& sh : shapes) {
      Tolerance tol = tolerance_for(dtype);
      tol.atol = std::min(tol.atol, 1e-6);  // outputs near 1 / len: an absolute one hides errors
      // Mask values in [-20, 0], and a padded position as an exported additive mask writes it:
      // float32's lowest (-inf in the 16-bit types).
      std::vector<double> mv = to_doubles(random_tensor(dtype, sh.m, seed + 1, -20.0, 0.0));
      if (mv.size() > 2) mv[1] = std::numeric_limits<float>::lowest();
      Tensor m = tensor_of(dtype, sh.m, mv);
      cases.push_back({.name = fmt::format("Softmax+mask/{}/x={}/m={}/axis={}{}", dtype_tag(dtype),
                                           shape_tag(sh.x), shape_tag(sh.m), sh.axis,
                                           sh.mask_first ? "/mask first" : ""),
                       .op = "Softmax",
                       .inputs = {random_tensor(dtype, sh.x, seed, -4.0, 4.0), m},
                       .attributes = {int_attr("axis", sh.axis)},
                       .reference = sum_then(1, softmax_ref(sh.axis, false)),
                       .tolerance = tol,
                       .prelude = sum_in_front(1, sh.mask_first)});
      seed += 2;
    }
}

std::vector<Case> normalization_cases() {
  std::vector<Case> cases;
  add_layer_norm(cases);
  add_channel_norms(cases);
  add_lp_mvn_softmax(cases);
  add_fused_layer_norm(cases);
  add_fused_layer_norm_sum(cases);
  add_fused_softmax(cases);
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(normalization, normalization_cases)

}  // namespace switchyard::testing::harness
