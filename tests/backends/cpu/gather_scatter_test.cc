// CPU kernels of the gather_scatter family against plain references on seeded random data.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <numeric>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

using Index = std::vector<int64_t>;

// Copies element `from` of `src` to element `to` of `dst` (any dtype).
void copy_element(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
  if (src.dtype() == DType::String) {
    dst.data<std::string>()[to] = src.data<std::string>()[from];
    return;
  }
  size_t es = ir::dtype_size(src.dtype());
  std::memcpy(static_cast<char*>(dst.raw()) + to * static_cast<int64_t>(es),
              static_cast<const char*>(src.raw()) + from * static_cast<int64_t>(es), es);
}

Tensor reference(const Tensor& in, const Index& out_shape,
                 const std::function<int64_t(const Index&)>& src) {
  Tensor out(in.dtype(), out_shape);
  for (int64_t i = 0; i < out.numel(); ++i) copy_element(in, src(unravel(i, out_shape)), out, i);
  return out;
}

// Random indices in [-dim, dim) of the given dtype.
Tensor random_indices(DType dtype, Index shape, int64_t dim, uint64_t seed) {
  return random_tensor(dtype, shape, seed, static_cast<double>(-dim), static_cast<double>(dim));
}

const std::vector<DType> kMoveDtypes = {DType::Float32, DType::Float16, DType::Int64,
                                        DType::UInt8,   DType::Bool,    DType::String};

TEST(GatherScatterKernels, GatherMatchesReference) {
  uint64_t seed = 1;
  for (DType dt : kMoveDtypes) {
    for (int64_t axis : {0, 1, -1}) {
      for (Index ishape : {Index{}, Index{4}, Index{2, 3}}) {
        Index dshape{3, 4, 5};
        size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
        Tensor data = random_any(dt, dshape, seed++);
        Tensor idx =
            random_indices(seed % 2 ? DType::Int64 : DType::Int32, ishape, dshape[a], seed);
        ++seed;
        Index out_shape(dshape.begin(), dshape.begin() + static_cast<int64_t>(a));
        out_shape.insert(out_shape.end(), ishape.begin(), ishape.end());
        out_shape.insert(out_shape.end(), dshape.begin() + static_cast<int64_t>(a) + 1,
                         dshape.end());
        Tensor ref = reference(data, out_shape, [&](const Index& o) {
          Index di(o.begin(), o.begin() + static_cast<int64_t>(a));
          Index ii(o.begin() + static_cast<int64_t>(a),
                   o.begin() + static_cast<int64_t>(a + ishape.size()));
          int64_t v = idx.scalar_as_int(ravel(ii, ishape));
          di.push_back(v < 0 ? v + dshape[a] : v);
          di.insert(di.end(), o.begin() + static_cast<int64_t>(a + ishape.size()), o.end());
          return ravel(di, dshape);
        });
        Tensor out = run_op1({"Gather", {data, idx}, {Attribute::make_int("axis", axis)}});
        EXPECT_TENSOR_NEAR(out, ref, 0, 0);
      }
    }
  }
  Tensor data = random_tensor(DType::Float32, {5, 2}, 9);
  expect_error_naming_node({"Gather", {data, int64_tensor({1, 7})}},
                           "index 7 is out of range for axis 0 of size 5");
  expect_error_naming_node({"Gather", {data, int64_tensor({-6})}}, "out of range");
}

TEST(GatherScatterKernels, GatherElementsAndScatterElements) {
  uint64_t seed = 20;
  for (DType dt : kMoveDtypes) {
    for (int64_t axis : {0, 1, -1}) {
      Index dshape{4, 5, 3};
      size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      Index ishape{3, 4, 2};
      ishape[a] = 6;
      Tensor data = random_any(dt, dshape, seed++);
      Tensor idx = random_indices(DType::Int64, ishape, dshape[a], seed++);
      auto target = [&](const Index& o) {
        Index di = o;
        int64_t v = idx.data<int64_t>()[ravel(o, ishape)];
        di[a] = v < 0 ? v + dshape[a] : v;
        return ravel(di, dshape);
      };
      Tensor out = run_op1({"GatherElements", {data, idx}, {Attribute::make_int("axis", axis)}});
      EXPECT_TENSOR_NEAR(out, reference(data, ishape, target), 0, 0);

      Tensor updates = random_any(dt, ishape, seed++);
      Tensor expected = data.clone();
      for (int64_t i = 0; i < updates.numel(); ++i)
        copy_element(updates, i, expected, target(unravel(i, ishape)));  // last write wins
      Tensor sc =
          run_op1({"ScatterElements", {data, idx, updates}, {Attribute::make_int("axis", axis)}});
      EXPECT_TENSOR_NEAR(sc, expected, 0, 0) << ir::dtype_name(dt) << " axis " << axis;
    }
  }
  // Reductions on duplicates.
  for (std::string red : {"add", "mul", "max", "min"}) {
    for (DType dt : {DType::Float32, DType::Float16, DType::Int32}) {
      Tensor data = random_tensor(dt, {3, 4}, seed++, -4, 4);
      Tensor idx = random_indices(DType::Int32, {5, 4}, 3, seed++);
      Tensor updates = random_tensor(dt, {5, 4}, seed++, -4, 4);
      std::vector<double> exp = testing::to_doubles(data);
      for (int64_t i = 0; i < 20; ++i) {
        int64_t r = idx.data<int32_t>()[i];
        size_t t = static_cast<size_t>((r < 0 ? r + 3 : r) * 4 + i % 4);
        double u = updates.scalar_as_double(i);
        if (red == "add") exp[t] += u;
        if (red == "mul") exp[t] *= u;
        if (red == "max") exp[t] = std::max(exp[t], u);
        if (red == "min") exp[t] = std::min(exp[t], u);
        if (dt == DType::Float16)
          exp[t] = static_cast<float>(ir::Float16(static_cast<float>(exp[t])));
      }
      Tensor out = run_op1(
          {"ScatterElements", {data, idx, updates}, {Attribute::make_string("reduction", red)}});
      EXPECT_TENSOR_NEAR(out, tensor_of(dt, {3, 4}, exp), 1e-5, 1e-5) << red;
    }
  }
  Tensor data = random_tensor(DType::Float32, {3, 3}, 40);
  expect_error_naming_node({"GatherElements", {data, tensor_of(DType::Int64, {1, 1}, {3})}},
                           "index 3 is out of range for axis 0 of size 3");
  expect_error_naming_node(
      {"ScatterElements",
       {data, tensor_of(DType::Int64, {1, 1}, {-4}), tensor_of(DType::Float32, {1, 1}, {1})}},
      "out of range");
}

TEST(GatherScatterKernels, GatherNDAndScatterND) {
  uint64_t seed = 50;
  for (DType dt : kMoveDtypes) {
    // batch_dims 0 and 1; full and partial index tuples.
    for (int64_t b : {0, 1}) {
      for (int64_t m : {1, 2}) {
        Index dshape{3, 4, 5};
        Index ishape{3, 2, m};
        Tensor data = random_any(dt, dshape, seed++);
        Tensor idx(DType::Int64, ishape);
        std::mt19937_64 rng(seed++);
        for (int64_t i = 0; i < idx.numel(); ++i) {
          int64_t dim = dshape[static_cast<size_t>(b + i % m)];
          idx.data<int64_t>()[i] =
              static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * dim)) - dim;
        }
        Index out_shape(ishape.begin(), ishape.end() - 1);
        out_shape.insert(out_shape.end(), dshape.begin() + b + m, dshape.end());
        Tensor ref = reference(data, out_shape, [&](const Index& o) {
          Index di(o.begin(), o.begin() + b);
          int64_t tuple = ravel(Index(o.begin(), o.begin() + 2), {3, 2});
          for (int64_t j = 0; j < m; ++j) {
            int64_t v = idx.data<int64_t>()[tuple * m + j];
            di.push_back(v < 0 ? v + dshape[static_cast<size_t>(b + j)] : v);
          }
          di.insert(di.end(), o.begin() + 2, o.end());
          return ravel(di, dshape);
        });
        Tensor out = run_op1({"GatherND", {data, idx}, {Attribute::make_int("batch_dims", b)}});
        EXPECT_TENSOR_NEAR(out, ref, 0, 0) << "b " << b << " m " << m;
      }
    }
    // ScatterND: replace rows.
    Tensor data = random_any(dt, {4, 3}, seed++);
    Tensor idx = int64_tensor({2, -4}).reshaped({2, 1});
    Tensor updates = random_any(dt, {2, 3}, seed++);
    Tensor expected = data.clone();
    for (int64_t j = 0; j < 3; ++j) {
      copy_element(updates, j, expected, 2 * 3 + j);
      copy_element(updates, 3 + j, expected, j);
    }
    EXPECT_TENSOR_NEAR(run_op1({"ScatterND", {data, idx, updates}}), expected, 0, 0);
  }
  for (std::string red : {"add", "mul", "max", "min"}) {
    Tensor data = tensor_of(DType::Int64, {2, 2}, {1, 2, 3, 4});
    Tensor idx = tensor_of(DType::Int64, {3, 2}, {0, 1, 1, 0, 0, 1});
    Tensor upd = tensor_of(DType::Int64, {3}, {5, 6, 7});
    std::vector<double> exp = {1, 2, 3, 4};
    auto apply = [&](double& x, double u) {
      if (red == "add") x += u;
      if (red == "mul") x *= u;
      if (red == "max") x = std::max(x, u);
      if (red == "min") x = std::min(x, u);
    };
    apply(exp[1], 5);
    apply(exp[2], 6);
    apply(exp[1], 7);
    EXPECT_TENSOR_NEAR(
        run_op1({"ScatterND", {data, idx, upd}, {Attribute::make_string("reduction", red)}}),
        tensor_of(DType::Int64, {2, 2}, exp), 0, 0)
        << red;
  }
  Tensor data = random_tensor(DType::Float32, {3, 3}, 70);
  expect_error_naming_node({"GatherND", {data, tensor_of(DType::Int64, {1, 2}, {0, 3})}},
                           "index 3 is out of range for axis 1 of size 3");
  expect_error_naming_node(
      {"ScatterND",
       {data, tensor_of(DType::Int64, {1, 1}, {5}), random_tensor(DType::Float32, {1, 3}, 71)}},
      "out of range");
}

TEST(GatherScatterKernels, ScatterReductionRefusedForStrings) {
  Tensor s(DType::String, {2});
  try {
    run_op({"ScatterElements",
            {s, int64_tensor({0}), Tensor(DType::String, {1})},
            {Attribute::make_string("reduction", "add")}});
    ADD_FAILURE() << "expected Unsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("reduction 'add'"), std::string::npos) << e.what();
  }
}

TEST(GatherScatterKernels, OneHot) {
  for (int64_t axis : {-1, 0, 1}) {
    for (DType idt : {DType::Int64, DType::Float32, DType::Int8}) {
      Tensor idx = tensor_of(idt, {2, 3}, {0, 2, -1, 4, -5, 3});
      Tensor values = tensor_of(DType::Float16, {2}, {-2, 5});
      Tensor out = run_op1({"OneHot",
                            {idx, tensor_of(DType::Float32, {}, {4}), values},
                            {Attribute::make_int("axis", axis)}});
      Index shape{2, 3};
      size_t a = static_cast<size_t>(axis < 0 ? 2 : axis);
      shape.insert(shape.begin() + static_cast<int64_t>(a), 4);
      std::vector<double> exp(24);
      for (int64_t i = 0; i < 24; ++i) {
        Index o = unravel(i, shape);
        int64_t d = o[a];
        o.erase(o.begin() + static_cast<int64_t>(a));
        int64_t v = static_cast<int64_t>(idx.scalar_as_double(ravel(o, {2, 3})));
        if (v < 0) v += 4;
        exp[static_cast<size_t>(i)] = v == d ? 5 : -2;
      }
      EXPECT_TENSOR_NEAR(out, tensor_of(DType::Float16, shape, exp), 0, 0);
    }
  }
  Tensor s(DType::String, {2});
  s.data<std::string>()[0] = "off";
  s.data<std::string>()[1] = "on";
  Tensor out = run_op1({"OneHot", {int64_tensor({1}), int64_tensor({3}), s}});
  EXPECT_EQ(out.data<std::string>()[0], "off");
  EXPECT_EQ(out.data<std::string>()[1], "on");
}

TEST(GatherScatterKernels, NonZeroAndCompress) {
  uint64_t seed = 80;
  for (DType dt : {DType::Float32, DType::Float16, DType::Int32, DType::Bool}) {
    Tensor x = random_tensor(dt, {3, 4, 2}, seed++, -1.5, 1.5);
    Tensor out = run_op1({"NonZero", {x}});
    std::vector<Index> coords;
    for (int64_t i = 0; i < x.numel(); ++i)
      if (x.scalar_as_double(i) != 0) coords.push_back(unravel(i, x.shape()));
    ASSERT_EQ(out.shape(), (Index{3, static_cast<int64_t>(coords.size())}));
    for (size_t n = 0; n < coords.size(); ++n)
      for (size_t k = 0; k < 3; ++k)
        EXPECT_EQ(out.data<int64_t>()[k * coords.size() + n], coords[n][k]);
  }
  Tensor strings(DType::String, {3});
  strings.data<std::string>()[1] = "x";
  EXPECT_TENSOR_NEAR(run_op1({"NonZero", {strings}}), int64_tensor({1}).reshaped({1, 1}), 0, 0);

  for (DType dt : kMoveDtypes) {
    Tensor x = random_any(dt, {3, 4}, seed++);
    Tensor cond = tensor_of(DType::Bool, {3}, {1, 0, 1});
    Tensor out = run_op1({"Compress", {x, cond}, {Attribute::make_int("axis", -1)}});
    EXPECT_TENSOR_NEAR(
        out, reference(x, {3, 2}, [](const Index& o) { return o[0] * 4 + o[1] * 2; }), 0, 0);
    out = run_op1({"Compress", {x, cond}});
    EXPECT_TENSOR_NEAR(out, reference(x, {2}, [](const Index& o) { return o[0] * 2; }), 0, 0);
    out = run_op1({"Compress", {x, cond}, {Attribute::make_int("axis", 0)}});
    EXPECT_TENSOR_NEAR(out, reference(x, {2, 4}, [](const Index& o) { return o[0] * 8 + o[1]; }), 0,
                       0);
  }
  Tensor x = random_tensor(DType::Float32, {2}, 90);
  expect_error_naming_node(
      {"Compress", {x, tensor_of(DType::Bool, {3}, {0, 0, 1})}, {Attribute::make_int("axis", 0)}},
      "beyond");
}

TEST(GatherScatterKernels, TopKMatchesReference) {
  uint64_t seed = 100;
  for (DType dt : {DType::Float32, DType::Float16, DType::Int32, DType::UInt8, DType::Float64}) {
    for (int64_t axis : {0, -1, 1}) {
      for (int64_t largest : {0, 1}) {
        Index shape{4, 9, 3};
        // A narrow range forces ties, which must keep the lower index first.
        Tensor x = random_tensor(dt, shape, seed++, 0, 5);
        size_t a = static_cast<size_t>(axis < 0 ? 2 : axis);
        int64_t dim = shape[a], k = dim / 2 + 1;
        Index oshape = shape;
        oshape[a] = k;
        std::vector<double> ev, ei;
        ev.resize(static_cast<size_t>(4 * 9 * 3 / dim * k));
        ei.resize(ev.size());
        for (int64_t i = 0; i < static_cast<int64_t>(ev.size()); ++i) {
          Index o = unravel(i, oshape);
          std::vector<std::pair<double, int64_t>> items;
          for (int64_t j = 0; j < dim; ++j) {
            Index src = o;
            src[a] = j;
            items.push_back({x.scalar_as_double(ravel(src, shape)), j});
          }
          std::stable_sort(items.begin(), items.end(), [&](const auto& p, const auto& q) {
            return largest ? p.first > q.first : p.first < q.first;
          });
          ev[static_cast<size_t>(i)] = items[static_cast<size_t>(o[a])].first;
          ei[static_cast<size_t>(i)] = static_cast<double>(items[static_cast<size_t>(o[a])].second);
        }
        auto out =
            run_op({"TopK",
                    {x, int64_tensor({k})},
                    {Attribute::make_int("axis", axis), Attribute::make_int("largest", largest)},
                    2});
        EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(dt, oshape, ev), 0, 0);
        EXPECT_TENSOR_NEAR(out[1].tensor, tensor_of(DType::Int64, oshape, ei), 0, 0);
      }
    }
  }
  Tensor x = random_tensor(DType::Float32, {3}, 120);
  expect_error_naming_node({"TopK", {x, int64_tensor({4})}, {}, 2}, "K = 4");
  EXPECT_EQ(run_op({"TopK", {x, int64_tensor({0})}, {}, 2})[0].tensor.shape(), Index{0});
}

TEST(GatherScatterKernels, UniqueAllOutputs) {
  Tensor x = tensor_of(DType::Float32, {6}, {2, 1, 1, 3, 4, 3});
  auto out = run_op({"Unique", {x}, {}, 4});
  EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(DType::Float32, {4}, {1, 2, 3, 4}), 0, 0);
  EXPECT_TENSOR_NEAR(out[1].tensor, int64_tensor({1, 0, 3, 4}), 0, 0);
  EXPECT_TENSOR_NEAR(out[2].tensor, int64_tensor({1, 0, 0, 2, 3, 2}), 0, 0);
  EXPECT_TENSOR_NEAR(out[3].tensor, int64_tensor({2, 1, 2, 1}), 0, 0);
  out = run_op({"Unique", {x}, {Attribute::make_int("sorted", 0)}, 4});
  EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(DType::Float32, {4}, {2, 1, 3, 4}), 0, 0);
  EXPECT_TENSOR_NEAR(out[1].tensor, int64_tensor({0, 1, 3, 4}), 0, 0);
  EXPECT_TENSOR_NEAR(out[2].tensor, int64_tensor({0, 1, 1, 2, 3, 2}), 0, 0);
  EXPECT_TENSOR_NEAR(out[3].tensor, int64_tensor({1, 2, 2, 1}), 0, 0);

  // Random data against a std::map reference, several dtypes.
  uint64_t seed = 130;
  for (DType dt : {DType::Float16, DType::Int16, DType::Bool, DType::String}) {
    Tensor r = random_any(dt, {5, 4}, seed++);
    if (dt != DType::String && dt != DType::Bool) r = random_tensor(dt, {5, 4}, seed++, 0, 6);
    auto res = run_op({"Unique", {r}, {}, 4});
    std::map<std::string, std::pair<int64_t, int64_t>> groups;  // key -> (first, count)
    auto key = [&](int64_t i) {
      if (dt == DType::String) return r.data<std::string>()[i];
      return fmt::format("{:020.6f}", r.scalar_as_double(i) + 1000);
    };
    for (int64_t i = 0; i < r.numel(); ++i) {
      auto [it, fresh] = groups.emplace(key(i), std::make_pair(i, 0));
      ++it->second.second;
    }
    ASSERT_EQ(res[0].tensor.numel(), static_cast<int64_t>(groups.size()));
    int64_t g = 0;
    for (const auto& [k, fc] : groups) {
      EXPECT_EQ(res[1].tensor.data<int64_t>()[g], fc.first);
      EXPECT_EQ(res[3].tensor.data<int64_t>()[g], fc.second);
      ++g;
    }
    for (int64_t i = 0; i < r.numel(); ++i) {
      int64_t inv = res[2].tensor.data<int64_t>()[i];
      EXPECT_EQ(key(res[1].tensor.data<int64_t>()[inv]), key(i));
    }
  }

  // With an axis: unique rows, sorted lexicographically.
  Tensor m = tensor_of(DType::Int32, {4, 2}, {3, 1, 1, 2, 3, 1, 1, 0});
  out = run_op({"Unique", {m}, {Attribute::make_int("axis", 0)}, 4});
  EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(DType::Int32, {3, 2}, {1, 0, 1, 2, 3, 1}), 0, 0);
  EXPECT_TENSOR_NEAR(out[1].tensor, int64_tensor({3, 1, 0}), 0, 0);
  EXPECT_TENSOR_NEAR(out[2].tensor, int64_tensor({2, 1, 2, 0}), 0, 0);
  EXPECT_TENSOR_NEAR(out[3].tensor, int64_tensor({1, 1, 2}), 0, 0);
  out = run_op(
      {"Unique", {m}, {Attribute::make_int("axis", -1), Attribute::make_int("sorted", 0)}, 1});
  EXPECT_TENSOR_NEAR(out[0].tensor, m, 0, 0);
}

}  // namespace
}  // namespace switchyard::testing
