#include "ops/stencil_geometry.h"

#include "ir/check.h"
#include "ir/checked_math.h"

namespace switchyard::ops {

namespace {}  // namespace

StencilReduction read_stencil_reduction(const ir::Node& node) {
  std::string s = node.attr_string("reduction", "sum");
  if (s == "sum") return StencilReduction::Sum;
  if (s == "min") return StencilReduction::Min;
  if (s == "max") return StencilReduction::Max;
  if (s == "argmin") return StencilReduction::ArgMin;
  if (s == "argmax") return StencilReduction::ArgMax;
  SY_THROW(InvalidModel, "{}: reduction '{}' is unknown (expected sum, min, max, argmin or argmax)",
           node.describe(), s);
}

namespace {

StencilPadding parse_padding(const ir::Node& node) {
  std::string s = node.attr_string("padding", "zero");
  if (s == "zero") return StencilPadding::Zero;
  if (s == "clamp") return StencilPadding::Clamp;
  if (s == "reflect") return StencilPadding::Reflect;
  if (s == "symmetric") return StencilPadding::Symmetric;
  SY_THROW(InvalidModel, "{}: padding '{}' is unknown (expected zero, clamp, reflect or symmetric)",
           node.describe(), s);
}

std::vector<int64_t> read_list(const ir::Node& node, const char* name, size_t length,
                               int64_t fallback, int64_t minimum) {
  std::vector<int64_t> v = node.attr_ints(name, std::vector<int64_t>(length, fallback));
  SY_CHECK(v.size() == length, InvalidModel, "{}: {} has {} entries, expected {}", node.describe(),
           name, v.size(), length);
  for (size_t i = 0; i < v.size(); ++i)
    SY_CHECK(v[i] >= minimum, InvalidModel, "{}: {}[{}] is {}, expected at least {}",
             node.describe(), name, i, v[i], minimum);
  return v;
}

}  // namespace

StencilAttrs read_stencil_attrs(const ir::Node& node, size_t rank) {
  SY_CHECK(rank == 2 || rank == 3, InvalidModel,
           "{}: the window W has rank {}, expected 2 ([kH, kW]) or 3 ([kD, kH, kW])",
           node.describe(), rank);
  StencilAttrs a;
  a.reduction = read_stencil_reduction(node);
  a.padding = parse_padding(node);
  a.strides = read_list(node, "strides", rank, 1, 1);
  a.dilations = read_list(node, "dilations", rank, 1, 1);
  a.pads = read_list(node, "pads", 2 * rank, 0, 0);
  return a;
}

int64_t stencil_output_size(const std::string& who, const StencilAttrs& a, size_t dim, int64_t in,
                            int64_t window) {
  using ir::checked_add, ir::checked_mul;
  const size_t n = a.spatial();
  const int64_t begin = a.pads[dim], end = a.pads[dim + n];
  SY_CHECK(window >= 1, InvalidModel, "{}: window dim {} of W is {}, expected at least 1", who, dim,
           window);
  if (a.padding == StencilPadding::Reflect)
    SY_CHECK(begin < in && end < in, InvalidModel,
             "{}: reflect padding needs pads below the input size: spatial dim {} has size {} "
             "and pads {}, {}",
             who, dim, in, begin, end);
  if (a.padding == StencilPadding::Symmetric)
    SY_CHECK(begin <= in && end <= in, InvalidModel,
             "{}: symmetric padding needs pads at most the input size: spatial dim {} has size "
             "{} and pads {}, {}",
             who, dim, in, begin, end);
  int64_t extent = checked_add(checked_mul(window - 1, a.dilations[dim], "Stencil window extent"),
                               1, "Stencil window extent");
  int64_t padded =
      checked_add(checked_add(in, begin, "Stencil padded size"), end, "Stencil padded size");
  SY_CHECK(padded >= extent, InvalidModel,
           "{}: the window (extent {}) does not fit spatial dim {} of size {} with pads {}, {}: "
           "the output would be empty",
           who, extent, dim, in, begin, end);
  return (padded - extent) / a.strides[dim] + 1;
}

}  // namespace switchyard::ops
