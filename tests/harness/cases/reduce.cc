// The reduce family (cpu reduce.cc, gather_scatter_select.cc's TopK; cuda reduce.cc,
// topk_cumsum.cu): every Reduce* op on every dtype over rows of 1, 7, 1000 and 65537 elements,
// axes variants (absent, empty, single, negative, several, all; keepdims 0/1;
// noop_with_empty_axes), column, strided and chunked long reductions, empty reductions
// (identity values), NaN and infinities; ArgMax/ArgMin with ties and select_last_index; TopK
// on short and long slices with ties, NaN and signed zeros; CumSum exclusive/reverse. Data for
// index-valued ops is integer-valued, so every dtype holds it exactly and ties are certain.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/ranges.h>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};
const std::vector<DType> kNumberTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                         DType::Float64, DType::Int32,   DType::Int64};
const std::vector<std::string> kReduceOps = {
    "ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
    "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Against a double reference: sums accumulated in float32 (the 16-bit types too) over up to a
// million elements, and one rounding of the 16-bit results. Integers: exact.
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {4e-3, 1e-3};
    case DType::BFloat16:
      return {2e-2, 1e-2};
    case DType::Float64:
      return {1e-10, 1e-12};
    case DType::Float32:
      return {1e-4, 1e-5};
    default:
      return {0, 0};
  }
}

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }

bool is_float(DType dtype) { return ir::dtype_is_float(dtype); }

std::vector<DType> dtypes_of(const std::string& op) {
  return op == "ReduceLogSumExp" ? kFloatTypes : kNumberTypes;
}

// Data ranges that keep each op's result well conditioned: sums without cancellation, products
// near 1, positive sums under a logarithm.
std::pair<double, double> data_range(const std::string& op, DType dtype) {
  bool f = is_float(dtype);
  if (op == "ReduceProd") return f ? std::pair{0.995, 1.005} : std::pair{1.0, 3.0};
  if (op == "ReduceLogSum") return f ? std::pair{0.1, 1.1} : std::pair{1.0, 20.0};
  if (op == "ReduceLogSumExp") return {-3.0, 3.0};
  if (op == "ReduceL2" && !f) return {-20.0, 20.0};
  return f ? std::pair{-0.5, 1.5} : std::pair{-50.0, 50.0};
}

Tensor integer_valued(DType dtype, const Shape& shape, uint64_t seed, double lo, double hi) {
  return tensor_of(dtype, shape, to_doubles(random_tensor(DType::Int64, shape, seed, lo, hi)));
}

// The kept/reduced split of a reduction: for each input element, its output's flat index.
struct Reduction {
  Shape out_shape;
  std::vector<int64_t> out_of;  ///< output index of every input element
  int64_t out_count = 0;
};

Reduction plan_reduction(const Shape& shape, const std::vector<bool>& reduced, bool keepdims) {
  Reduction r;
  // Each input dim's stride in the output (0 for a reduced dim), walked as an odometer.
  std::vector<int64_t> out_stride(shape.size(), 0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (!reduced[d]) {
      out_stride[d] = stride;
      stride *= shape[d];
    }
  }
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduced[d] || keepdims) r.out_shape.push_back(reduced[d] ? 1 : shape[d]);
  r.out_count = product(r.out_shape);
  const int64_t n = product(shape);
  r.out_of.resize(static_cast<size_t>(n));
  std::vector<int64_t> index(shape.size(), 0);
  int64_t out = 0;
  for (int64_t i = 0; i < n; ++i) {
    r.out_of[static_cast<size_t>(i)] = out;
    for (size_t d = shape.size(); d-- > 0;) {
      out += out_stride[d];
      if (++index[d] < shape[d]) break;
      out -= out_stride[d] * shape[d];
      index[d] = 0;
    }
  }
  return r;
}

double lowest_of(DType d) {
  if (is_float(d)) return -kInf;
  return d == DType::Int32 ? std::numeric_limits<int32_t>::lowest()
                           : static_cast<double>(std::numeric_limits<int64_t>::lowest());
}
double highest_of(DType d) {
  if (is_float(d)) return kInf;
  return d == DType::Int32 ? std::numeric_limits<int32_t>::max()
                           : static_cast<double>(std::numeric_limits<int64_t>::max());
}

// An integer Reduce* exactly, with the wrap of the dtype's arithmetic; the mean of nothing
// is 0.
std::vector<Tensor> reduce_ints(const std::string& op, const Tensor& x, const Reduction& r) {
  const DType d = x.dtype();
  const bool is_max = op == "ReduceMax", is_min = op == "ReduceMin";
  const int64_t lowest = d == DType::Int32 ? std::numeric_limits<int32_t>::lowest()
                                           : std::numeric_limits<int64_t>::lowest();
  const int64_t highest =
      d == DType::Int32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
  const uint64_t init = op == "ReduceProd" ? 1
                        : is_max           ? static_cast<uint64_t>(lowest)
                        : is_min           ? static_cast<uint64_t>(highest)
                                           : 0;
  std::vector<uint64_t> acc(static_cast<size_t>(r.out_count), init);
  std::vector<int64_t> count(acc.size(), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t o = static_cast<size_t>(r.out_of[static_cast<size_t>(i)]);
    const int64_t e = int_at(x, i);
    const uint64_t u = static_cast<uint64_t>(e);
    uint64_t& a = acc[o];
    ++count[o];
    if (is_max) {
      a = static_cast<uint64_t>(std::max(static_cast<int64_t>(a), e));
    } else if (is_min) {
      a = static_cast<uint64_t>(std::min(static_cast<int64_t>(a), e));
    } else if (op == "ReduceProd") {
      a *= u;
    } else if (op == "ReduceL1") {
      a += e < 0 ? 0 - u : u;
    } else if (op == "ReduceSumSquare") {
      a += u * u;
    } else {
      a += u;
    }
  }
  Tensor out(d, r.out_shape);
  for (size_t k = 0; k < acc.size(); ++k) {
    int64_t v = static_cast<int64_t>(acc[k]);
    if (d == DType::Int32) v = static_cast<int32_t>(static_cast<uint32_t>(acc[k]));
    if (op == "ReduceMean") v = count[k] ? v / count[k] : 0;
    set_int(out, static_cast<int64_t>(k), v);
  }
  return {out};
}

// Reduce* over `axes` (absent: all, or none with noop_with_empty_axes), in double; integer
// results truncate toward zero, as the kernels' integer arithmetic does.
Reference reduce_ref(const std::string& op, std::optional<Shape> axes, bool keepdims, bool noop) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const DType d = x.dtype();
    const Shape& shape = x.shape();
    std::vector<bool> reduced(shape.size(), axes && !axes->empty() ? false : !noop);
    if (axes)
      for (int64_t a : *axes) reduced[static_cast<size_t>(normalize_axis(a, shape.size()))] = true;
    bool identity = noop && (!axes || axes->empty());
    std::vector<double> v = to_doubles(x);
    if (identity) {
      if (op == "ReduceL1")
        for (double& e : v) e = std::fabs(e);
      if (op == "ReduceSumSquare")
        for (double& e : v) e = e * e;
      if (op == "ReduceL2")
        for (double& e : v) e = std::fabs(e);
      if (op == "ReduceLogSum")
        for (double& e : v) e = std::log(e);
      if (!is_float(d))
        for (double& e : v) e = std::trunc(e);
      return std::vector<Tensor>{tensor_of(d, shape, v)};
    }
    Reduction r = plan_reduction(shape, reduced, keepdims);
    if (!is_float(d) && op != "ReduceL2" && op != "ReduceLogSum") return reduce_ints(op, x, r);
    const bool is_max = op == "ReduceMax", is_min = op == "ReduceMin";
    double init = op == "ReduceProd" ? 1 : is_max ? lowest_of(d) : is_min ? highest_of(d) : 0;
    std::vector<double> acc(static_cast<size_t>(r.out_count), init), count(acc.size(), 0);
    std::vector<double> peak(acc.size(), -kInf);
    if (op == "ReduceLogSumExp")
      for (size_t i = 0; i < v.size(); ++i)
        peak[static_cast<size_t>(r.out_of[i])] =
            std::max(peak[static_cast<size_t>(r.out_of[i])], v[i]);
    for (size_t i = 0; i < v.size(); ++i) {
      double& a = acc[static_cast<size_t>(r.out_of[i])];
      const double e = v[i];
      count[static_cast<size_t>(r.out_of[i])] += 1;
      if (is_max) {
        a = std::isnan(a) || std::isnan(e) ? kNaN : std::max(a, e);
      } else if (is_min) {
        a = std::isnan(a) || std::isnan(e) ? kNaN : std::min(a, e);
      } else if (op == "ReduceProd") {
        a *= e;
      } else if (op == "ReduceL1") {
        a += std::fabs(e);
      } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
        a += e * e;
      } else if (op == "ReduceLogSumExp") {
        double m = peak[static_cast<size_t>(r.out_of[i])];
        a += std::isinf(m) ? std::exp(e) : std::exp(e - m);
      } else {
        a += e;
      }
    }
    for (size_t k = 0; k < acc.size(); ++k) {
      double& a = acc[k];
      if (op == "ReduceMean") a = is_float(d) ? a / count[k] : std::trunc(a / count[k]);
      if (op == "ReduceL2") a = std::sqrt(a);
      if (op == "ReduceLogSum") a = std::log(a);
      if (op == "ReduceLogSumExp") a = std::isinf(peak[k]) ? std::log(a) : peak[k] + std::log(a);
      if (!is_float(d)) a = std::trunc(a);
    }
    return std::vector<Tensor>{tensor_of(d, r.out_shape, acc)};
  };
}

std::string axes_tag(const std::optional<Shape>& axes) {
  return axes ? fmt::format("axes=[{}]", fmt::join(*axes, ",")) : "axes=absent";
}

void add_reduce(std::vector<Case>& cases, const std::string& op, DType dtype, const Shape& shape,
                const std::optional<Shape>& axes, int64_t keepdims, uint64_t seed,
                int64_t noop = -1) {
  auto [lo, hi] = data_range(op, dtype);
  Inputs inputs = {random_tensor(dtype, shape, seed, lo, hi)};
  if (axes) inputs.push_back(int64_tensor(*axes));
  std::vector<Attribute> attrs = {int_attr("keepdims", keepdims)};
  if (noop >= 0) attrs.push_back(int_attr("noop_with_empty_axes", noop));
  cases.push_back({.name = fmt::format("{}/{}/{}/{}/keep={}{}", op, dtype_tag(dtype),
                                       shape_tag(shape), axes_tag(axes), keepdims,
                                       noop >= 0 ? fmt::format("/noop={}", noop) : ""),
                   .op = op,
                   .inputs = inputs,
                   .attributes = attrs,
                   .reference = reduce_ref(op, axes, keepdims != 0, noop == 1),
                   .tolerance = tolerance_for(dtype)});
}

void add_reductions(std::vector<Case>& cases) {
  uint64_t seed = 100;
  // Rows of 1 and 7 (a thread per row), 1000 (a warp), 65537 (a block, split in chunks).
  for (const std::string& op : kReduceOps)
    for (DType dtype : dtypes_of(op))
      for (const Shape& shape : {Shape{4, 1}, Shape{4, 7}, Shape{3, 1000}, Shape{2, 65537}})
        for (int64_t keepdims : {0, 1})
          add_reduce(cases, op, dtype, shape, Shape{-1}, keepdims, ++seed);
  seed = 1000;
  const std::vector<std::optional<Shape>> axes_list = {
      std::nullopt, Shape{},     Shape{1},    Shape{-1},        Shape{0, 2},
      Shape{0, 1},  Shape{1, 2}, Shape{2, 0}, Shape{-3, -2, -1}};
  for (const std::string& op : kReduceOps)
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int32}) {
      if (op == "ReduceLogSumExp" && !is_float(dtype)) continue;
      for (const auto& axes : axes_list)
        for (int64_t keepdims : {0, 1})
          add_reduce(cases, op, dtype, {3, 5, 7}, axes, keepdims, ++seed);
      // Four dims: alternating reduced and kept groups take the strided path.
      add_reduce(cases, op, dtype, {2, 3, 4, 5}, Shape{1, 3}, 1, ++seed);
      add_reduce(cases, op, dtype, {2, 3, 4, 5}, Shape{0, 2}, 0, ++seed);
      add_reduce(cases, op, dtype, {2, 1, 4, 5}, Shape{0, 1, 3}, 0, ++seed);  // size-1 dim merges
    }
  seed = 2000;
  for (const std::string& op : kReduceOps)
    for (DType dtype : dtypes_of(op))
      for (int64_t noop : {0, 1}) {
        add_reduce(cases, op, dtype, {3, 5, 7}, Shape{}, 1, ++seed, noop);
        add_reduce(cases, op, dtype, {3, 5, 7}, std::nullopt, 0, ++seed, noop);
      }
  seed = 3000;
  const std::vector<std::pair<Shape, Shape>> long_cases = {
      {{65537, 3}, {0}},           // few columns, long: chunks of rows
      {{1000, 40}, {0}},           // a full tile of 32 columns and a partial one
      {{7, 1000, 33}, {1}},        // outer x len x inner
      {{1 << 20}, {0}},            // everything into one value
      {{64, 16384}, {1}},          // long rows, fewer than the GPU's blocks: chunks
      {{3, 70000, 2}, {1}},        // chunked columns with an outer dim
      {{16, 300, 16, 5}, {1, 3}},  // strided path
      {{5, 1, 3}, {1}},            // reducing a size-1 dim
  };
  for (std::string op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2",
                         "ReduceLogSumExp", "ReduceSumSquare"})
    for (DType dtype : {DType::Float32, DType::Float16, DType::Float64, DType::Int64}) {
      if (op == "ReduceLogSumExp" && !is_float(dtype)) continue;
      for (const auto& [shape, axes] : long_cases) {
        // Half sums of a million elements overflow; nothing to compare.
        if (dtype == DType::Float16 && shape.size() == 1) continue;
        add_reduce(cases, op, dtype, shape, axes, 0, ++seed);
      }
    }
  seed = 4000;
  for (const std::string& op : kReduceOps)
    for (DType dtype : dtypes_of(op)) {
      add_reduce(cases, op, dtype, {3, 0, 4}, Shape{1}, 1, ++seed);  // identity per output
      add_reduce(cases, op, dtype, {3, 0, 4}, Shape{1}, 0, ++seed);
      add_reduce(cases, op, dtype, {3, 0}, std::nullopt, 0, ++seed);    // one scalar identity
      add_reduce(cases, op, dtype, {0, 5}, Shape{1}, 1, ++seed);        // empty output
      add_reduce(cases, op, dtype, {2, 0, 3}, Shape{0, 2}, 0, ++seed);  // empty, strided
    }
  // Rows: a NaN among numbers, +inf, -inf, only -inf, mixed infinities.
  const std::vector<double> values = {1,  kNaN, -2,    3,     1,     kInf,  -2,    3,    1,   -kInf,
                                      -2, 3,    -kInf, -kInf, -kInf, -kInf, -kInf, kInf, 0.5, -0.5};
  for (DType dtype : kFloatTypes)
    for (const std::string& op : kReduceOps)
      cases.push_back({.name = op + "/" + dtype_tag(dtype) + "/specials",
                       .op = op,
                       .inputs = {tensor_of(dtype, {5, 4}, values), int64_tensor({1})},
                       .reference = reduce_ref(op, Shape{1}, true, false),
                       .tolerance = tolerance_for(dtype)});
  for (DType dtype : {DType::Float32, DType::Int64})
    cases.push_back({.name = "ReduceSum/" + dtype_tag(dtype) + "/constant axes",
                     .op = "ReduceSum",
                     .inputs = {random_tensor(dtype, {4, 6, 8}, 5000), int64_tensor({0, 2})},
                     .attributes = {int_attr("keepdims", 0)},
                     .constant_inputs = {false, true},
                     .reference = reduce_ref("ReduceSum", Shape{0, 2}, false, false),
                     .tolerance = tolerance_for(dtype)});
}

// ---- ArgMax / ArgMin -----------------------------------------------------------------------

// ArgMax's order: NaN above every number; among equals the first (or, select_last_index, the
// last) wins.
bool ranks_above(double a, double b) {
  if (std::isnan(a)) return !std::isnan(b);
  if (std::isnan(b)) return false;
  return a > b;
}
// ArgMin's order (numpy's): NaN below every number, so a NaN is selected by both.
bool ranks_below(double a, double b) {
  if (std::isnan(a)) return !std::isnan(b);
  if (std::isnan(b)) return false;
  return a < b;
}

Reference arg_ref(bool is_max, int64_t axis, bool keepdims, bool last) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    const size_t a = static_cast<size_t>(normalize_axis(axis, shape.size()));
    std::vector<bool> reduced(shape.size(), false);
    reduced[a] = true;
    Reduction r = plan_reduction(shape, reduced, keepdims);
    std::vector<double> v = to_doubles(x);
    std::vector<double> best(static_cast<size_t>(r.out_count), 0), index(best.size(), -1);
    const std::vector<int64_t> strides = strides_of(shape);
    for (size_t i = 0; i < v.size(); ++i) {
      const size_t o = static_cast<size_t>(r.out_of[i]);
      const double k = static_cast<double>((static_cast<int64_t>(i) / strides[a]) % shape[a]);
      auto wins = [&](double a, double b) {
        return is_max ? ranks_above(a, b) : ranks_below(a, b);
      };
      bool better = wins(v[i], best[o]);
      bool tie = !better && !wins(best[o], v[i]);
      if (index[o] < 0 || better || (tie && last)) {
        best[o] = v[i];
        index[o] = k;
      }
    }
    return std::vector<Tensor>{tensor_of(DType::Int64, r.out_shape, index)};
  };
}

void add_arg_reductions(std::vector<Case>& cases) {
  const std::vector<std::pair<Shape, int64_t>> shapes = {
      {{3, 1000}, -1}, {{65537}, 0},   {{65537, 3}, 0}, {{4, 7, 5}, 1}, {{2, 1}, 1},
      {{5, 40}, 0},    {{2, 3000}, 1}, {{9, 17}, -2},   {{0, 4}, 1}};
  uint64_t seed = 6000;
  for (const char* op : {"ArgMax", "ArgMin"}) {
    const bool is_max = std::string(op) == "ArgMax";
    for (DType dtype : kNumberTypes)
      for (const auto& [shape, axis] : shapes)
        for (int64_t keepdims : {0, 1})
          for (int64_t last : {0, 1})
            // Values in [-20, 20]: many ties, so select_last_index matters.
            cases.push_back(
                {.name = fmt::format("{}/{}/{}/axis={}/keep={}/last={}", op, dtype_tag(dtype),
                                     shape_tag(shape), axis, keepdims, last),
                 .op = op,
                 .inputs = {integer_valued(dtype, shape, ++seed, -20, 20)},
                 .attributes = {int_attr("axis", axis), int_attr("keepdims", keepdims),
                                int_attr("select_last_index", last)},
                 .reference = arg_ref(is_max, axis, keepdims != 0, last != 0)});
    for (const auto& [shape, axis] : shapes)
      cases.push_back(
          {.name = fmt::format("{}/float32/{}/axis={}/continuous", op, shape_tag(shape), axis),
           .op = op,
           .inputs = {random_tensor(DType::Float32, shape, ++seed)},
           .attributes = {int_attr("axis", axis)},
           .reference = arg_ref(is_max, axis, true, false)});
    const std::vector<double> values = {1, kNaN, 3, kNaN, -kInf, 2, kInf, 2, -0.0, 0.0, 0.0, -0.0};
    for (DType dtype : kFloatTypes)
      for (int64_t last : {0, 1})
        cases.push_back({.name = fmt::format("{}/{}/specials/last={}", op, dtype_tag(dtype), last),
                         .op = op,
                         .inputs = {tensor_of(dtype, {3, 4}, values)},
                         .attributes = {int_attr("axis", 1), int_attr("select_last_index", last)},
                         .reference = arg_ref(is_max, 1, true, last != 0)});
  }
}

// ---- TopK ----------------------------------------------------------------------------------

struct TopKCase {
  Shape shape;
  int64_t axis;
  int64_t k;
};

// The k largest (smallest) along the axis, NaN above every number, equal values in index
// order; values and int64 indices.
Reference topk_ref(const TopKCase& c, bool largest) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    const size_t a = static_cast<size_t>(normalize_axis(c.axis, shape.size()));
    Shape out_shape = shape;
    out_shape[a] = c.k;
    const std::vector<int64_t> strides = strides_of(shape);
    const int64_t len = shape[a], inner = strides[a],
                  outer = product(shape) / std::max<int64_t>(len * inner, 1);
    std::vector<double> v = to_doubles(x), values(static_cast<size_t>(product(out_shape)));
    std::vector<double> indices(values.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<int64_t> order(static_cast<size_t>(len));
        std::iota(order.begin(), order.end(), 0);
        auto at = [&](int64_t j) { return v[static_cast<size_t>((o * len + j) * inner + i)]; };
        std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
          return largest ? ranks_above(at(p), at(q)) : ranks_above(at(q), at(p));
        });
        for (int64_t j = 0; j < c.k; ++j) {
          size_t dst = static_cast<size_t>((o * c.k + j) * inner + i);
          values[dst] = at(order[static_cast<size_t>(j)]);
          indices[dst] = static_cast<double>(order[static_cast<size_t>(j)]);
        }
      }
    return std::vector<Tensor>{tensor_of(x.dtype(), out_shape, values),
                               tensor_of(DType::Int64, out_shape, indices)};
  };
}

void add_topk(std::vector<Case>& cases) {
  const std::vector<TopKCase> topk_cases = {
      {{5, 10}, -1, 3},      // a thread per slice
      {{4, 30, 6}, 1, 5},    // a thread per slice, strided axis
      {{6, 8}, 1, 8},        // k = the whole axis
      {{6, 8}, 1, 0},        // nothing selected
      {{3, 1000}, 1, 10},    // segmented radix sort
      {{4, 300, 6}, 1, 20},  // segmented radix sort, strided axis
      {{1, 30522}, 1, 50},   // one slice: the device-wide sort
      {{2, 5000}, 1, 5000},  // a full sort
      {{300, 4}, 0, 200},    // the first axis
  };
  auto topk = [&](const std::string& name, const Tensor& x, const TopKCase& c, int64_t largest) {
    cases.push_back({.name = fmt::format("TopK/{}/{}/axis={}/k={}/largest={}", name,
                                         shape_tag(c.shape), c.axis, c.k, largest),
                     .op = "TopK",
                     .inputs = {x, int64_tensor({c.k})},
                     .attributes = {int_attr("axis", c.axis), int_attr("largest", largest)},
                     .num_outputs = 2,
                     .reference = topk_ref(c, largest != 0)});
  };
  uint64_t seed = 8000;
  for (DType dtype : kNumberTypes)
    for (const TopKCase& c : topk_cases)
      for (int64_t largest : {0, 1})
        // Values in [-30, 30]: ties everywhere, so the order among equals is checked.
        topk(dtype_tag(dtype), integer_valued(dtype, c.shape, ++seed, -30, 30), c, largest);
  for (const TopKCase& c : topk_cases)
    for (int64_t largest : {0, 1})
      topk("float32 continuous", random_tensor(DType::Float32, c.shape, ++seed), c, largest);
  const std::vector<double> row = {kNaN, 1, -0.0, 0.0, kNaN, -kInf, kInf, 1, 0.0, -0.0};
  for (DType dtype : kFloatTypes)
    for (int64_t largest : {0, 1}) {
      topk(dtype_tag(dtype) + " specials", tensor_of(dtype, {1, 10}, row), {{1, 10}, 1, 10},
           largest);
      std::vector<double> values = to_doubles(integer_valued(dtype, {3, 2000}, ++seed, -5, 5));
      for (size_t i = 0; i < values.size(); i += 7) values[i] = row[(i / 7) % row.size()];
      topk(dtype_tag(dtype) + " long specials", tensor_of(dtype, {3, 2000}, values),
           {{3, 2000}, 1, 100}, largest);
    }
}

// ---- CumSum --------------------------------------------------------------------------------

Reference cumsum_ref(int64_t axis, bool exclusive, bool reverse) {
  return [=](const Inputs& in) {
    const Tensor& x = *in[0];
    const Shape& shape = x.shape();
    const size_t a = static_cast<size_t>(normalize_axis(axis, shape.size()));
    const std::vector<int64_t> strides = strides_of(shape);
    const int64_t len = shape[a], inner = strides[a];
    const int64_t outer = len * inner == 0 ? 0 : product(shape) / (len * inner);
    std::vector<double> v = to_doubles(x), out(v.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t s = 0; s < len; ++s) {
          int64_t j = reverse ? len - 1 - s : s;
          size_t at = static_cast<size_t>((o * len + j) * inner + i);
          if (exclusive) {
            out[at] = sum;
            sum += v[at];
          } else {
            sum += v[at];
            out[at] = sum;
          }
        }
      }
    return std::vector<Tensor>{tensor_of(x.dtype(), shape, out)};
  };
}

void add_cumsum(std::vector<Case>& cases) {
  const std::vector<std::pair<Shape, int64_t>> shapes = {
      {{4, 7}, 1},       // a thread per row
      {{64}, 0},         // the longest row a thread walks
      {{65}, 0},         // the shortest row a block scans
      {{3, 1000}, 1},    // a block per row, several tiles
      {{2, 65537}, -1},  // a long row
      {{1000, 3}, 0},    // a thread per column
      {{5, 6, 7}, 1},    //
      {{5, 6, 7}, -3},   //
      {{0, 4}, 1},       // empty
  };
  uint64_t seed = 9000;
  for (DType dtype : kNumberTypes)
    for (const auto& [shape, axis] : shapes)
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          // Mostly positive floats: running sums grow instead of cancelling.
          auto [lo, hi] = is_float(dtype) ? std::pair{-0.5, 1.5} : std::pair{-50.0, 50.0};
          cases.push_back(
              {.name = fmt::format("CumSum/{}/{}/axis={}/exclusive={}/reverse={}", dtype_tag(dtype),
                                   shape_tag(shape), axis, exclusive, reverse),
               .op = "CumSum",
               .inputs = {random_tensor(dtype, shape, ++seed, lo, hi), int64_tensor({axis})},
               .attributes = {int_attr("exclusive", exclusive), int_attr("reverse", reverse)},
               .reference = cumsum_ref(axis, exclusive != 0, reverse != 0),
               .tolerance = tolerance_for(dtype)});
        }
  cases.push_back({.name = "CumSum/int64/3x200/int32 scalar axis",
                   .op = "CumSum",
                   .inputs = {random_tensor(DType::Int64, {3, 200}, 9500, -50, 50),
                              tensor_of(DType::Int32, {}, {1})},
                   .reference = cumsum_ref(1, false, false)});
}

std::vector<Case> reduce_cases() {
  std::vector<Case> cases;
  add_reductions(cases);
  add_arg_reductions(cases);
  add_topk(cases);
  add_cumsum(cases);
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(reduce, reduce_cases)

}  // namespace switchyard::testing::harness
