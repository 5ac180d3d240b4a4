// The Stencil configuration and its plain reference (X padded explicitly into a bigger array,
// then every window reduced in double precision), shared by the cpu's Stencil tests
// (tests/backends/cpu/stencil_test.cc) and the op harness's stencil family.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "support/op_test_util.h"

namespace switchyard::testing::stencil {

struct StencilCase {
  std::vector<int64_t> x;
  std::vector<int64_t> window;
  std::string reduction = "sum";
  std::string padding = "zero";
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
};

inline std::vector<Attribute> stencil_attrs(const StencilCase& c) {
  std::vector<Attribute> a = {Attribute::make_string("reduction", c.reduction),
                              Attribute::make_string("padding", c.padding)};
  if (!c.strides.empty()) a.push_back(Attribute::make_ints("strides", c.strides));
  if (!c.dilations.empty()) a.push_back(Attribute::make_ints("dilations", c.dilations));
  if (!c.pads.empty()) a.push_back(Attribute::make_ints("pads", c.pads));
  return a;
}

// Where padded coordinate i of a dim of size n reads, by repeated mirroring; -1 for a zero.
inline int64_t reference_source(int64_t i, int64_t n, const std::string& mode) {
  if (mode == "zero") return i >= 0 && i < n ? i : -1;
  if (mode == "clamp") return std::clamp<int64_t>(i, 0, n - 1);
  while (i < 0 || i >= n) {
    if (mode == "reflect")
      i = i < 0 ? -i : 2 * (n - 1) - i;
    else
      i = i < 0 ? -i - 1 : 2 * n - 1 - i;  // symmetric
  }
  return i;
}

inline Tensor reference_stencil(const StencilCase& c, const Tensor& x, const Tensor& w) {
  const size_t rank = c.window.size();
  std::vector<int64_t> in(c.x.begin() + 2, c.x.end());
  std::vector<int64_t> s = c.strides.empty() ? std::vector<int64_t>(rank, 1) : c.strides;
  std::vector<int64_t> d = c.dilations.empty() ? std::vector<int64_t>(rank, 1) : c.dilations;
  std::vector<int64_t> pads = c.pads.empty() ? std::vector<int64_t>(2 * rank, 0) : c.pads;
  std::vector<int64_t> padded(rank), out(rank);
  for (size_t i = 0; i < rank; ++i) {
    padded[i] = in[i] + pads[i] + pads[i + rank];
    out[i] = (padded[i] - d[i] * (c.window[i] - 1) - 1) / s[i] + 1;
  }
  std::vector<double> xv = to_doubles(x), wv = to_doubles(w);
  const int64_t planes = c.x[0] * c.x[1];
  const int64_t in_plane = product(in), padded_plane = product(padded);
  // Pad explicitly.
  std::vector<double> px(static_cast<size_t>(planes * padded_plane));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t j = 0; j < padded_plane; ++j) {
      std::vector<int64_t> at = unravel(j, padded);
      bool zero = false;
      for (size_t i = 0; i < rank; ++i) {
        at[i] = reference_source(at[i] - pads[i], in[i], c.padding);
        zero = zero || at[i] < 0;
      }
      px[static_cast<size_t>(p * padded_plane + j)] =
          zero ? 0.0 : xv[static_cast<size_t>(p * in_plane + ravel(at, in))];
    }
  std::vector<int64_t> out_shape = {c.x[0], c.x[1]};
  out_shape.insert(out_shape.end(), out.begin(), out.end());
  const int64_t out_plane = product(out), taps = product(c.window);
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < out_plane; ++o) {
      std::vector<int64_t> oc = unravel(o, out);
      double sum = 0, best = 0;
      int64_t best_tap = -1;
      for (int64_t t = 0; t < taps; ++t) {
        std::vector<int64_t> kc = unravel(t, c.window), at(rank);
        for (size_t i = 0; i < rank; ++i) at[i] = oc[i] * s[i] + kc[i] * d[i];
        double v = px[static_cast<size_t>(p * padded_plane + ravel(at, padded))] *
                   wv[static_cast<size_t>(t)];
        sum += v;
        bool min = c.reduction == "min" || c.reduction == "argmin";
        if (best_tap < 0 || (min ? v < best : v > best)) {
          best = v;
          best_tap = t;
        }
      }
      if (c.reduction == "sum")
        y.push_back(sum);
      else if (c.reduction == "min" || c.reduction == "max")
        y.push_back(best);
      else
        y.push_back(static_cast<double>(best_tap));
    }
  bool indices = c.reduction == "argmin" || c.reduction == "argmax";
  return tensor_of(indices ? DType::Int64 : DType::Float32, out_shape, y);
}

}  // namespace switchyard::testing::stencil
