// The stencil family (ai.switchyard Stencil; cpu stencil.cc, cuda stencil.cc): every reduction
// (sum, min, max, argmin, argmax) and padding mode (zero, clamp, reflect, symmetric) over 2-D and
// 3-D windows with strides, dilations and pads, and an empty batch, against a reference that
// pads explicitly.
#include <algorithm>

#include "harness/cases/stencil_reference.h"
#include "harness/op_harness.h"
#include "ops/op_kind.h"

namespace switchyard::testing::harness {
namespace {

using stencil::reference_stencil;
using stencil::stencil_attrs;
using stencil::StencilCase;

std::vector<Case> stencil_cases() {
  struct Geometry {
    std::vector<int64_t> x, window, strides = {}, dilations = {}, pads = {};
  };
  const std::vector<Geometry> geometries = {
      {{2, 3, 17, 19}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {{1, 4, 9, 10}, {3, 4}, {2, 1}, {1, 2}, {2, 3, 1, 4}},
      {{2, 2, 6, 7, 8}, {3, 3, 3}, {}, {}, {1, 1, 1, 1, 1, 1}},
      {{1, 3, 9, 8, 10}, {2, 3, 2}, {3, 1, 2}, {1, 2, 3}, {1, 0, 2, 1, 2, 0}},
      {{0, 3, 8, 8}, {2, 2}},  // empty batch
  };
  std::vector<Case> cases;
  uint64_t seed = 500;
  for (const char* reduction : {"sum", "min", "max", "argmin", "argmax"})
    for (const char* padding : {"zero", "clamp", "reflect", "symmetric"})
      for (const Geometry& g : geometries) {
        StencilCase c{g.x, g.window, reduction, padding, g.strides, g.dilations, g.pads};
        cases.push_back(
            {.name = fmt::format("Stencil/{}/{}/x={}/window={}/s={}/d={}/p={}", reduction, padding,
                                 shape_tag(g.x), shape_tag(g.window), shape_tag(g.strides),
                                 shape_tag(g.dilations), shape_tag(g.pads)),
             .op = "Stencil",
             .inputs = {random_tensor(DType::Float32, g.x, seed + 1, -2.0, 2.0),
                        random_tensor(DType::Float32, g.window, seed + 2)},
             .attributes = stencil_attrs(c),
             .domain = std::string(ops::kSwitchyardDomain),
             .reference =
                 [c](const Inputs& in) {
                   return std::vector<Tensor>{reference_stencil(c, *in[0], *in[1])};
                 },
             .tolerance = {1e-5, 1e-5}});
        seed += 2;
      }
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(stencil, stencil_cases)

}  // namespace switchyard::testing::harness
