// The gather_scatter family (cpu gather_scatter.cc; cuda gather_scatter.cc): Gather on every
// axis with int32 and int64 (negative) indices, scalar and empty indices and an embedding lookup;
// GatherElements, GatherND (tuples of 1 to 3 indices, batch_dims), ScatterElements and ScatterND
// with every reduction over duplicate indices, and OneHot, for float32, float16, int64, bool and
// uint8 data. Gather is checked against a reference; the rest against the cpu.
#include <cmath>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kDtypes = {DType::Float32, DType::Float16, DType::Int64, DType::Bool,
                                    DType::UInt8};
const std::vector<const char*> kReductions = {"none", "add", "mul", "max", "min"};

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }
Attribute string_attr(const char* name, const char* v) { return Attribute::make_string(name, v); }

Tensor data_of(DType dtype, const Shape& shape, uint64_t seed) {
  return random_any(dtype, shape, seed);
}

// Random indices in [-dim, dim) (negative ones count from the end).
Tensor indices_of(DType dtype, const Shape& shape, int64_t dim, uint64_t seed) {
  return random_tensor(dtype, shape, seed, static_cast<double>(-dim), static_cast<double>(dim));
}

// Index tuples of shape idx_shape (last dim = dims.size()), column j in [-dims[j], dims[j]).
Tensor tuples_of(const Shape& idx_shape, const Shape& dims, uint64_t seed) {
  Tensor t(DType::Int64, idx_shape);
  Tensor r = random_tensor(DType::Float64, idx_shape, seed, 0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t d = dims[static_cast<size_t>(i) % dims.size()];
    t.data<int64_t>()[i] =
        static_cast<int64_t>(std::floor(r.data<double>()[i] * static_cast<double>(2 * d))) - d;
  }
  return t;
}

// Scatter data and updates: small values, so repeated products stay finite.
Tensor scatter_values(DType dtype, const Shape& shape, uint64_t seed) {
  if (dtype == DType::Bool) return random_any(dtype, shape, seed);
  return random_tensor(dtype, shape, seed, -3.0, 3.0);
}

// Float sums of duplicate indices may be applied in another order than the cpu's.
Tolerance scatter_tolerance(DType dtype) {
  return dtype == DType::Float16 ? Tolerance{2e-3, 2e-3} : Tolerance{1e-5, 1e-5};
}

Reference gather_ref(int64_t axis) {
  return [axis](const Inputs& in) {
    const Tensor &x = *in[0], &idx = *in[1];
    const Shape& s = x.shape();
    const size_t a = static_cast<size_t>(normalize_axis(axis, s.size()));
    Shape out(s.begin(), s.begin() + static_cast<int64_t>(a));
    out.insert(out.end(), idx.shape().begin(), idx.shape().end());
    out.insert(out.end(), s.begin() + static_cast<int64_t>(a) + 1, s.end());
    const size_t r = idx.shape().size();
    return std::vector<Tensor>{move_elements(x, out, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> i(o.begin(), o.begin() + static_cast<int64_t>(a));
      std::vector<int64_t> ii(o.begin() + static_cast<int64_t>(a),
                              o.begin() + static_cast<int64_t>(a + r));
      int64_t k = int_at(idx, idx.numel() == 0 ? 0 : ravel(ii, idx.shape()));
      i.push_back(k < 0 ? k + s[a] : k);
      i.insert(i.end(), o.begin() + static_cast<int64_t>(a + r), o.end());
      return ravel(i, s);
    })};
  };
}

std::vector<Case> gather_scatter_cases() {
  std::vector<Case> cases;
  auto add = [&](std::string name, std::string op, Inputs inputs, std::vector<Attribute> attrs = {},
                 Reference ref = {}, Tolerance tol = {}) {
    cases.push_back({.name = std::move(name),
                     .op = std::move(op),
                     .inputs = std::move(inputs),
                     .attributes = std::move(attrs),
                     .reference = std::move(ref),
                     .tolerance = tol});
  };
  uint64_t seed = 1200;
  const Shape shape = {5, 6, 7};
  for (DType dt : kDtypes)
    for (DType it : {DType::Int64, DType::Int32})
      for (int64_t axis : {0, 1, 2, -1}) {
        const std::string base =
            fmt::format("Gather/{}/{} indices/axis={}", dtype_tag(dt), dtype_tag(it), axis);
        int64_t dim = shape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
        Tensor x = data_of(dt, shape, ++seed);
        std::vector<Attribute> attrs = {int_attr("axis", axis)};
        add(base + "/2x3", "Gather", {x, indices_of(it, {2, 3}, dim, ++seed)}, attrs,
            gather_ref(axis));
        add(base + "/scalar", "Gather", {x, indices_of(it, {}, dim, ++seed)}, attrs,
            gather_ref(axis));
        add(base + "/empty", "Gather", {x, indices_of(it, {0}, dim, ++seed)}, attrs,
            gather_ref(axis));
      }
  add("Gather/float32/embedding", "Gather",
      {random_tensor(DType::Float32, {1000, 64}, ++seed),
       indices_of(DType::Int64, {4, 17}, 1000, ++seed)},
      {}, gather_ref(0));
  seed = 1300;
  for (DType dt : kDtypes) {
    const std::string d = dtype_tag(dt);
    Tensor x = data_of(dt, {4, 5, 6}, ++seed);
    add("GatherElements/" + d + "/axis 0", "GatherElements",
        {x, indices_of(DType::Int64, {3, 5, 6}, 4, ++seed)});
    add("GatherElements/" + d + "/axis 1 int32", "GatherElements",
        {x, indices_of(DType::Int32, {4, 8, 2}, 5, ++seed)}, {int_attr("axis", 1)});
    add("GatherElements/" + d + "/axis -1", "GatherElements",
        {x, indices_of(DType::Int64, {2, 5, 9}, 6, ++seed)}, {int_attr("axis", -1)});
    add("GatherElements/" + d + "/empty", "GatherElements",
        {x, indices_of(DType::Int64, {0, 5, 6}, 4, ++seed)});
    add("GatherND/" + d + "/3x1", "GatherND", {x, tuples_of({3, 1}, {4}, ++seed)});
    add("GatherND/" + d + "/2x2x2", "GatherND", {x, tuples_of({2, 2, 2}, {4, 5}, ++seed)});
    add("GatherND/" + d + "/7x3", "GatherND", {x, tuples_of({7, 3}, {4, 5, 6}, ++seed)});
    add("GatherND/" + d + "/batch_dims 1", "GatherND", {x, tuples_of({4, 3, 1}, {5}, ++seed)},
        {int_attr("batch_dims", 1)});
    add("GatherND/" + d + "/batch_dims 2", "GatherND", {x, tuples_of({4, 5, 1}, {6}, ++seed)},
        {int_attr("batch_dims", 2)});
    add("GatherND/" + d + "/empty", "GatherND", {x, tuples_of({0, 2}, {4, 5}, ++seed)});
  }
  seed = 1400;
  for (DType dt : kDtypes)
    for (const char* reduction : kReductions) {
      if (dt == DType::Bool && std::string(reduction) != "none") continue;
      for (int64_t axis : {0, 1, -1}) {
        const Shape data_shape = {4, 5, 6};
        // Indices as long as the axis or longer: duplicates are certain.
        Shape idx_shape = {3, 4, 5};
        size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
        idx_shape[a] = 9;
        add(fmt::format("ScatterElements/{}/{}/axis={}", dtype_tag(dt), reduction, axis),
            "ScatterElements",
            {scatter_values(dt, data_shape, ++seed),
             indices_of(DType::Int64, idx_shape, data_shape[a], ++seed),
             scatter_values(dt, idx_shape, ++seed)},
            {int_attr("axis", axis), string_attr("reduction", reduction)}, {},
            scatter_tolerance(dt));
      }
    }
  Tensor sx = scatter_values(DType::Float32, {3, 4}, ++seed);
  add("ScatterElements/float32/int32 indices", "ScatterElements",
      {sx, indices_of(DType::Int32, {3, 2}, 4, ++seed),
       scatter_values(DType::Float32, {3, 2}, ++seed)},
      {int_attr("axis", 1)});
  add("ScatterElements/float32/empty updates", "ScatterElements",
      {sx, indices_of(DType::Int64, {0, 4}, 3, ++seed),
       scatter_values(DType::Float32, {0, 4}, ++seed)});
  seed = 1500;
  const Shape data_shape = {4, 5, 6};
  for (DType dt : kDtypes)
    for (const char* reduction : kReductions) {
      if (dt == DType::Bool && std::string(reduction) != "none") continue;
      const std::string base = fmt::format("ScatterND/{}/{}", dtype_tag(dt), reduction);
      std::vector<Attribute> attrs = {string_attr("reduction", reduction)};
      Tensor x = scatter_values(dt, data_shape, ++seed);
      // Slices of rows (with a duplicate first index), of columns, and single elements.
      add(base + "/rows", "ScatterND",
          {x, tensor_of(DType::Int64, {3, 1}, {1, -1, 1}), scatter_values(dt, {3, 5, 6}, ++seed)},
          attrs, {}, scatter_tolerance(dt));
      add(base + "/columns", "ScatterND",
          {x, tuples_of({2, 3, 2}, {4, 5}, ++seed), scatter_values(dt, {2, 3, 6}, ++seed)}, attrs,
          {}, scatter_tolerance(dt));
      add(base + "/elements", "ScatterND",
          {x, tuples_of({40, 3}, {4, 5, 6}, ++seed), scatter_values(dt, {40}, ++seed)}, attrs, {},
          scatter_tolerance(dt));
    }
  add("ScatterND/float32/negative tuple", "ScatterND",
      {scatter_values(DType::Float32, data_shape, ++seed),
       tensor_of(DType::Int64, {2, 2}, {0, 1, 3, -2}),
       scatter_values(DType::Float32, {2, 6}, ++seed)});
  seed = 1600;
  for (DType dt : kDtypes)
    for (int64_t axis : {-1, 0, 1}) {
      const std::string base = fmt::format("OneHot/{}/axis={}", dtype_tag(dt), axis);
      Tensor values = data_of(dt, {2}, ++seed);
      std::vector<Attribute> attrs = {int_attr("axis", axis)};
      // Indices in [-6, 6) against depth 5: some lie outside and give all-off rows.
      add(base + "/int64", "OneHot",
          {indices_of(DType::Int64, {3, 4}, 6, ++seed), int64_scalar(5), values}, attrs);
      add(base + "/float indices", "OneHot",
          {random_tensor(DType::Float32, {2, 3}, ++seed, -4.5, 4.5),
           tensor_of(DType::Float32, {}, {4.5}), values},
          attrs);
      add(base + "/empty", "OneHot",
          {indices_of(DType::Int32, {0, 3}, 3, ++seed), int64_scalar(3), values}, attrs);
    }
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(gather_scatter, gather_scatter_cases)

}  // namespace switchyard::testing::harness
