// The conv family (cpu conv.cc, cuda conv.cc): Conv over resnet50 and mobilenet_v2 shapes,
// depthwise, grouped, dilated, automatic and asymmetric pads, 1-D and 3-D, with and without
// bias, constant and fed weights, an empty batch, on every float dtype; ConvTranspose with
// strides, pads, dilations, groups and output_padding.
#include <cmath>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

// Weights in [-0.5, 0.5]: sums of C*k products stay O(1); accumulated in float32.
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {1e-2, 1e-2};
    case DType::BFloat16:
      return {2e-2, 2e-2};
    case DType::Float64:
      return {1e-10, 1e-10};
    default:
      return {1e-4, 1e-4};
  }
}

struct ConvCase {
  std::string name;
  Shape x = {},
        w = {};  // x [N, C, in...], w [M, C/group, k...] (ConvTranspose: [C, M/group, k...])
  int64_t group = 1;
  Shape strides = {}, dilations = {}, pads = {};  // empty = default
  std::string auto_pad = "NOTSET";
  bool bias = true;
  Shape output_padding = {};
};

std::vector<Attribute> conv_attrs(const ConvCase& c) {
  std::vector<Attribute> a = {Attribute::make_int("group", c.group),
                              Attribute::make_string("auto_pad", c.auto_pad)};
  if (!c.strides.empty()) a.push_back(Attribute::make_ints("strides", c.strides));
  if (!c.dilations.empty()) a.push_back(Attribute::make_ints("dilations", c.dilations));
  if (!c.pads.empty()) a.push_back(Attribute::make_ints("pads", c.pads));
  if (!c.output_padding.empty())
    a.push_back(Attribute::make_ints("output_padding", c.output_padding));
  return a;
}

// Forward convolution in double.
Reference conv_ref(const ConvCase& c) {
  return [c](const Inputs& ins) {
    const std::vector<double> x = to_doubles(*ins[0]), w = to_doubles(*ins[1]);
    const std::vector<double> b = ins.size() > 2 ? to_doubles(*ins[2]) : std::vector<double>{};
    size_t n = c.x.size() - 2;
    Shape in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end());
    Shape s = c.strides.empty() ? Shape(n, 1) : c.strides;
    Shape d = c.dilations.empty() ? Shape(n, 1) : c.dilations;
    Shape p = c.pads.empty() ? Shape(2 * n, 0) : c.pads;
    Shape out(n), pb(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t ext = (k[i] - 1) * d[i] + 1;
      if (c.auto_pad == "VALID") {
        out[i] = (in[i] - ext) / s[i] + 1;
        pb[i] = 0;
      } else if (c.auto_pad == "NOTSET") {
        out[i] = (in[i] + p[i] + p[i + n] - ext) / s[i] + 1;
        pb[i] = p[i];
      } else {
        out[i] = (in[i] + s[i] - 1) / s[i];
        int64_t total = std::max<int64_t>(0, (out[i] - 1) * s[i] + ext - in[i]);
        pb[i] = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      }
    }
    int64_t batch = c.x[0], channels = c.x[1], m_count = c.w[0], cg = c.w[1];
    int64_t mg = m_count / c.group;
    Shape shape = {batch, m_count};
    shape.insert(shape.end(), out.begin(), out.end());
    std::vector<double> y(static_cast<size_t>(product(shape)));
    int64_t out_size = product(out), ksize = product(k), in_size = product(in);
    std::vector<Shape> taps;
    for (int64_t kk = 0; kk < ksize; ++kk) taps.push_back(unravel(kk, k));
    for (int64_t o = 0; o < out_size; ++o) {
      Shape oc = unravel(o, out);
      // The input offset of every tap (-1 outside the input), shared by every channel.
      std::vector<int64_t> offsets(static_cast<size_t>(ksize));
      for (int64_t kk = 0; kk < ksize; ++kk) {
        int64_t off = 0;
        for (size_t i = 0; i < n && off >= 0; ++i) {
          int64_t pos = oc[i] * s[i] - pb[i] + taps[static_cast<size_t>(kk)][i] * d[i];
          off = pos < 0 || pos >= in[i] ? -1 : off * in[i] + pos;
        }
        offsets[static_cast<size_t>(kk)] = off;
      }
      for (int64_t nn = 0; nn < batch; ++nn)
        for (int64_t m = 0; m < m_count; ++m) {
          double acc = b.empty() ? 0.0 : b[static_cast<size_t>(m)];
          for (int64_t ci = 0; ci < cg; ++ci) {
            int64_t ch = m / mg * cg + ci;
            for (int64_t kk = 0; kk < ksize; ++kk) {
              int64_t off = offsets[static_cast<size_t>(kk)];
              if (off < 0) continue;
              acc += x[static_cast<size_t>((nn * channels + ch) * in_size + off)] *
                     w[static_cast<size_t>((m * cg + ci) * ksize + kk)];
            }
          }
          y[static_cast<size_t>((nn * m_count + m) * out_size + o)] = acc;
        }
    }
    return std::vector<Tensor>{tensor_of(ins[0]->dtype(), shape, y)};
  };
}

// ConvTranspose in double: every input element scattered through the kernel.
Reference deconv_ref(const ConvCase& c) {
  return [c](const Inputs& ins) {
    const std::vector<double> xd = to_doubles(*ins[0]), wd = to_doubles(*ins[1]);
    const std::vector<double> bd = ins.size() > 2 ? to_doubles(*ins[2]) : std::vector<double>{};
    size_t n = c.x.size() - 2;
    Shape in(c.x.begin() + 2, c.x.end()), k(c.w.begin() + 2, c.w.end());
    Shape s = c.strides.empty() ? Shape(n, 1) : c.strides;
    Shape d = c.dilations.empty() ? Shape(n, 1) : c.dilations;
    Shape p = c.pads.empty() ? Shape(2 * n, 0) : c.pads;
    Shape op = c.output_padding.empty() ? Shape(n, 0) : c.output_padding;
    Shape out(n), pb(n);
    for (size_t i = 0; i < n; ++i) {
      out[i] = s[i] * (in[i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - p[i] - p[i + n];
      pb[i] = p[i];
    }
    int64_t batch = c.x[0], channels = c.x[1], mg = c.w[1], m_count = mg * c.group;
    int64_t cg = channels / c.group;
    Shape shape = {batch, m_count};
    shape.insert(shape.end(), out.begin(), out.end());
    int64_t out_size = product(out), in_size = product(in), ksize = product(k);
    std::vector<double> y(static_cast<size_t>(product(shape)), 0);
    if (!bd.empty())
      for (int64_t i = 0; i < product(shape); ++i)
        y[static_cast<size_t>(i)] = bd[static_cast<size_t>(i / out_size % m_count)];
    for (int64_t nn = 0; nn < batch; ++nn)
      for (int64_t ch = 0; ch < channels; ++ch)
        for (int64_t ii = 0; ii < in_size; ++ii) {
          Shape ic = unravel(ii, in);
          double xv = xd[static_cast<size_t>((nn * channels + ch) * in_size + ii)];
          for (int64_t mo = 0; mo < mg; ++mo)
            for (int64_t kk = 0; kk < ksize; ++kk) {
              Shape kc = unravel(kk, k);
              int64_t off = 0;
              bool inside = true;
              for (size_t i = 0; i < n; ++i) {
                int64_t pos = ic[i] * s[i] + kc[i] * d[i] - pb[i];
                if (pos < 0 || pos >= out[i]) inside = false;
                off = off * out[i] + pos;
              }
              if (!inside) continue;
              int64_t m = ch / cg * mg + mo;
              y[static_cast<size_t>((nn * m_count + m) * out_size + off)] +=
                  xv * wd[static_cast<size_t>((ch * mg + mo) * ksize + kk)];
            }
        }
    return std::vector<Tensor>{tensor_of(ins[0]->dtype(), shape, y)};
  };
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      // resnet50: the 7x7 stride-2 stem, a 3x3 bottleneck conv, a 1x1 stride-2 downsample.
      {"resnet stem 7x7 s2 p3", {1, 3, 33, 35}, {16, 3, 7, 7}, 1, {2, 2}, {}, {3, 3, 3, 3}},
      {"resnet 3x3 batch 3",
       {3, 16, 15, 15},
       {16, 16, 3, 3},
       1,
       {},
       {},
       {1, 1, 1, 1},
       "NOTSET",
       false},
      {"resnet 1x1 s2", {1, 32, 14, 13}, {64, 32, 1, 1}, 1, {2, 2}},
      // mobilenet_v2: depthwise 3x3 (group == C), stride 1 and 2, then a 1x1 projection.
      {"depthwise 3x3", {1, 32, 17, 17}, {32, 1, 3, 3}, 32, {}, {}, {1, 1, 1, 1}},
      {"depthwise 3x3 s2 batch 3",
       {3, 24, 16, 15},
       {24, 1, 3, 3},
       24,
       {2, 2},
       {},
       {1, 1, 1, 1},
       "NOTSET",
       false},
      {"1x1 projection", {1, 24, 9, 9}, {16, 24, 1, 1}},
      {"grouped", {2, 16, 9, 11}, {24, 4, 3, 3}, 4, {}, {}, {1, 0, 1, 2}},
      {"dilated", {1, 8, 20, 19}, {8, 8, 3, 3}, 1, {}, {2, 3}, {2, 3, 2, 3}},
      {"SAME_UPPER s1", {1, 8, 10, 11}, {8, 8, 3, 3}, 1, {}, {}, {}, "SAME_UPPER"},
      {"SAME_UPPER s2 asymmetric", {1, 8, 10, 10}, {12, 8, 3, 3}, 1, {2, 2}, {}, {}, "SAME_UPPER"},
      {"SAME_LOWER even kernel", {2, 4, 9, 8}, {6, 4, 2, 2}, 1, {}, {}, {}, "SAME_LOWER", false},
      {"VALID s2", {1, 6, 13, 13}, {8, 6, 3, 3}, 1, {2, 2}, {}, {}, "VALID"},
      {"explicit asymmetric pads", {1, 4, 7, 9}, {4, 4, 3, 3}, 1, {}, {}, {0, 2, 1, 0}},
      {"1-D", {2, 4, 19}, {6, 4, 3}, 1, {}, {}, {1, 1}},
      {"1-D grouped s2 SAME_UPPER asymmetric", {1, 8, 20}, {8, 2, 3}, 4, {2}, {}, {}, "SAME_UPPER"},
      {"3-D", {1, 4, 5, 6, 7}, {8, 4, 3, 3, 3}, 1, {}, {}, {1, 1, 1, 1, 1, 1}},
      {"3-D strided", {2, 3, 6, 5, 7}, {4, 3, 2, 3, 2}, 1, {2, 1, 2}, {1, 2, 1}, {}, "VALID"},
      {"empty batch", {0, 4, 8, 8}, {6, 4, 3, 3}, 1, {}, {}, {1, 1, 1, 1}},
  };
  return cases;
}

const std::vector<ConvCase>& deconv_cases() {
  static const std::vector<ConvCase> cases = {
      {"2-D s2 p1", {1, 4, 5, 6}, {4, 3, 3, 3}, 1, {2, 2}, {}, {1, 1, 1, 1}},
      {"2-D output_padding", {2, 3, 4, 4}, {3, 2, 3, 3}, 1, {2, 2}, {}, {}, "NOTSET", true, {1, 1}},
      {"2-D grouped dilated", {1, 4, 5, 5}, {4, 2, 2, 3}, 2, {1, 2}, {2, 1}, {0, 1, 1, 0}},
      {"1-D no bias", {2, 3, 7}, {3, 4, 3}, 1, {3}, {}, {1, 2}, "NOTSET", false},
      {"3-D", {1, 2, 3, 4, 3}, {2, 3, 2, 2, 2}, 1, {2, 1, 2}},
  };
  return cases;
}

std::vector<Case> conv_family_cases() {
  std::vector<Case> cases;
  uint64_t seed = 10;
  auto add = [&](const std::string& op, const ConvCase& c, DType dtype, bool constant_w,
                 Reference ref) {
    Inputs inputs = {random_tensor(dtype, c.x, seed),
                     random_tensor(dtype, c.w, seed + 1, -0.5, 0.5)};
    const int64_t m = op == "Conv" ? c.w[0] : c.w[1] * c.group;
    if (c.bias) inputs.push_back(random_tensor(dtype, {m}, seed + 2));
    seed += 3;
    cases.push_back({.name = fmt::format("{}/{}/{}{}", op, dtype_tag(dtype), c.name,
                                         constant_w ? "/constant W" : ""),
                     .op = op,
                     .inputs = inputs,
                     .attributes = conv_attrs(c),
                     .constant_inputs = {false, constant_w, constant_w},
                     .reference = ref,
                     .tolerance = tolerance_for(dtype)});
  };
  for (const ConvCase& c : conv_cases()) {
    add("Conv", c, DType::Float32, true, conv_ref(c));
    add("Conv", c, DType::Float32, false, conv_ref(c));
    add("Conv", c, DType::Float16, true, conv_ref(c));
    add("Conv", c, DType::BFloat16, seed % 2 == 0, conv_ref(c));
    add("Conv", c, DType::Float64, true, conv_ref(c));
  }
  for (const ConvCase& c : deconv_cases())
    for (DType dtype : {DType::Float32, DType::Float16, DType::Float64})
      add("ConvTranspose", c, dtype, true, deconv_ref(c));
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(conv, conv_family_cases)

}  // namespace switchyard::testing::harness
