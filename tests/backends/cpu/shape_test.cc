// CPU kernels of the shape family against plain references on seeded random data.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

using Index = std::vector<int64_t>;

// Expected output: element at index i is in[src(i)], or the fill (zero bytes / "") when -1.
Tensor reference(const Tensor& in, const Index& out_shape,
                 const std::function<int64_t(const Index&)>& src, const Tensor* fill = nullptr) {
  Tensor out(in.dtype(), out_shape);
  size_t es = ir::dtype_size(in.dtype());
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t s = src(unravel(i, out_shape));
    if (in.dtype() == DType::String) {
      out.data<std::string>()[i] =
          s >= 0 ? in.data<std::string>()[s] : (fill ? fill->data<std::string>()[0] : "");
    } else if (s >= 0) {
      std::memcpy(static_cast<char*>(out.raw()) + i * es,
                  static_cast<const char*>(in.raw()) + s * es, es);
    } else if (fill) {
      std::memcpy(static_cast<char*>(out.raw()) + i * es, fill->raw(), es);
    }
  }
  return out;
}

const std::vector<DType> kMoveDtypes = {DType::Float32, DType::Float16, DType::Int64,
                                        DType::Int8,    DType::Bool,    DType::String};

TEST(ShapeKernels, ConstantAndConstantOfShape) {
  Tensor v = random_tensor(DType::Float32, {2, 3}, 1);
  EXPECT_TENSOR_NEAR(run_op1({"Constant", {}, {Attribute::make_tensor("value", v)}}), v, 0, 0);
  Tensor s = random_any(DType::String, {3}, 2);
  EXPECT_TENSOR_NEAR(run_op1({"Constant", {}, {Attribute::make_tensor("value", s)}}), s, 0, 0);

  Tensor seven = tensor_of(DType::Int32, {1}, {7});
  Tensor out = run_op1(
      {"ConstantOfShape", {int64_tensor({2, 3})}, {Attribute::make_tensor("value", seven)}});
  EXPECT_TENSOR_NEAR(out, tensor_of(DType::Int32, {2, 3}, {7, 7, 7, 7, 7, 7}), 0, 0);
  Tensor half = tensor_of(DType::Float16, {1}, {1.5});
  out = run_op1({"ConstantOfShape", {int64_tensor({4})}, {Attribute::make_tensor("value", half)}});
  EXPECT_TENSOR_NEAR(out, tensor_of(DType::Float16, {4}, {1.5, 1.5, 1.5, 1.5}), 0, 0);
  out = run_op1({"ConstantOfShape", {int64_tensor({2, 0})}});
  EXPECT_EQ(out.dtype(), DType::Float32);
  EXPECT_EQ(out.shape(), (Index{2, 0}));
  out = run_op1({"ConstantOfShape", {int64_tensor({3})}});
  EXPECT_TENSOR_NEAR(out, tensor_of(DType::Float32, {3}, {0, 0, 0}), 0, 0);
  expect_error_naming_node({"ConstantOfShape", {int64_tensor({2, -1})}}, "negative");
}

TEST(ShapeKernels, IdentityShapeSize) {
  for (DType dt : kMoveDtypes) {
    Tensor x = random_any(dt, {2, 3, 4}, 3);
    EXPECT_TENSOR_NEAR(run_op1({"Identity", {x}}), x, 0, 0);
    EXPECT_TENSOR_NEAR(run_op1({"Shape", {x}}), int64_tensor({2, 3, 4}), 0, 0);
    Tensor size = run_op1({"Size", {x}});
    EXPECT_EQ(size.shape(), Index{});
    EXPECT_EQ(size.data<int64_t>()[0], 24);
  }
  Tensor x = random_tensor(DType::Float32, {2, 3, 4, 5}, 4);
  auto shape = [&](std::vector<Attribute> attrs) { return run_op1({"Shape", {x}, attrs}); };
  EXPECT_TENSOR_NEAR(shape({Attribute::make_int("start", 1)}), int64_tensor({3, 4, 5}), 0, 0);
  EXPECT_TENSOR_NEAR(shape({Attribute::make_int("end", -1)}), int64_tensor({2, 3, 4}), 0, 0);
  EXPECT_TENSOR_NEAR(shape({Attribute::make_int("start", -10), Attribute::make_int("end", 2)}),
                     int64_tensor({2, 3}), 0, 0);
  EXPECT_EQ(shape({Attribute::make_int("start", 3), Attribute::make_int("end", 1)}).numel(), 0);
  Tensor scalar = random_tensor(DType::Int32, {}, 5);
  EXPECT_EQ(run_op1({"Shape", {scalar}}).shape(), Index{0});
  EXPECT_EQ(run_op1({"Size", {scalar}}).data<int64_t>()[0], 1);
}

TEST(ShapeKernels, ReshapeAliasesAndInfers) {
  Tensor x = random_tensor(DType::Float32, {2, 3, 4}, 6);
  auto out = run_op({"Reshape", {x, int64_tensor({0, -1})}});
  ASSERT_TRUE(out[0].is_tensor());
  EXPECT_EQ(out[0].tensor.shape(), (Index{2, 12}));
  EXPECT_EQ(out[0].tensor.raw(), x.raw());  // zero-copy
  EXPECT_EQ(testing::to_doubles(out[0].tensor), testing::to_doubles(x));
  EXPECT_EQ(run_op1({"Reshape", {x, int64_tensor({4, -1, 2})}}).shape(), (Index{4, 3, 2}));
  EXPECT_EQ(run_op1({"Reshape", {x, int64_tensor({24})}}).shape(), (Index{24}));
  Tensor empty = random_tensor(DType::Int64, {0, 3}, 7);
  EXPECT_EQ(
      run_op1({"Reshape", {empty, int64_tensor({3, 0})}, {Attribute::make_int("allowzero", 1)}})
          .shape(),
      (Index{3, 0}));
  EXPECT_EQ(run_op1({"Reshape", {empty, int64_tensor({0, 3})}}).shape(), (Index{0, 3}));
  expect_error_naming_node({"Reshape", {x, int64_tensor({5, -1})}}, "cannot reshape");
  expect_error_naming_node({"Reshape", {x, int64_tensor({-1, -1})}}, "more than one -1");
  expect_error_naming_node({"Reshape", {x, int64_tensor({7})}}, "cannot reshape");
}

TEST(ShapeKernels, FlattenSqueezeUnsqueeze) {
  for (DType dt : {DType::Float16, DType::String}) {
    Tensor x = random_any(dt, {2, 1, 3, 1}, 8);
    EXPECT_EQ(run_op1({"Flatten", {x}}).shape(), (Index{2, 3}));
    EXPECT_EQ(run_op1({"Flatten", {x}, {Attribute::make_int("axis", 0)}}).shape(), (Index{1, 6}));
    EXPECT_EQ(run_op1({"Flatten", {x}, {Attribute::make_int("axis", -1)}}).shape(), (Index{6, 1}));
    EXPECT_EQ(run_op1({"Flatten", {x}, {Attribute::make_int("axis", 4)}}).shape(), (Index{6, 1}));
    Tensor sq = run_op1({"Squeeze", {x}});
    EXPECT_EQ(sq.shape(), (Index{2, 3}));
    EXPECT_TENSOR_NEAR(sq, x.reshaped({2, 3}), 0, 0);
    EXPECT_EQ(run_op1({"Squeeze", {x, int64_tensor({-1})}}).shape(), (Index{2, 1, 3}));
    Tensor un = run_op1({"Unsqueeze", {x, int64_tensor({0, -1})}});
    EXPECT_EQ(un.shape(), (Index{1, 2, 1, 3, 1, 1}));
    EXPECT_TENSOR_NEAR(un, x.reshaped({1, 2, 1, 3, 1, 1}), 0, 0);
  }
  Tensor x = random_tensor(DType::Float32, {2, 3}, 9);
  expect_error_naming_node({"Squeeze", {x, int64_tensor({0})}}, "cannot squeeze");
  expect_error_naming_node({"Unsqueeze", {x, int64_tensor({1, 1})}}, "duplicate");
  expect_error_naming_node({"Unsqueeze", {x, int64_tensor({5})}}, "out of range");
  Tensor scalar = random_tensor(DType::Int32, {}, 10);
  EXPECT_EQ(run_op1({"Unsqueeze", {scalar, int64_tensor({0})}}).shape(), (Index{1}));
  EXPECT_EQ(run_op1({"Unsqueeze", {x, int64_tensor({-1}).reshaped({})}}).shape(), (Index{2, 3, 1}));
}

Tensor transpose_ref(const Tensor& x, const Index& perm) {
  Index out_shape;
  for (int64_t p : perm) out_shape.push_back(x.dim(p));
  return reference(x, out_shape, [&](const Index& o) {
    Index i(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) i[static_cast<size_t>(perm[k])] = o[k];
    return ravel(i, x.shape());
  });
}

TEST(ShapeKernels, TransposeMatchesReference) {
  struct Case {
    Index shape, perm;
  };
  std::vector<Case> cases = {
      {{5, 7}, {1, 0}},
      {{70, 33}, {1, 0}},
      {{2, 3, 4, 5}, {0, 2, 3, 1}},
      {{2, 3, 4, 5}, {0, 3, 1, 2}},
      {{2, 3, 4, 5}, {0, 2, 1, 3}},
      {{3, 1, 4, 2, 3}, {4, 2, 0, 3, 1}},
      {{6}, {0}},
      {{0, 3}, {1, 0}},
      {{2, 64, 65}, {0, 2, 1}},
      {{1, 1, 1}, {2, 0, 1}},
  };
  uint64_t seed = 11;
  for (const Case& c : cases) {
    for (DType dt : kMoveDtypes) {
      Tensor x = random_any(dt, c.shape, seed++);
      Tensor out = run_op1({"Transpose", {x}, {Attribute::make_ints("perm", c.perm)}});
      EXPECT_TENSOR_NEAR(out, transpose_ref(x, c.perm), 0, 0)
          << ir::shape_to_string(c.shape) << " perm " << fmt::format("{}", fmt::join(c.perm, ","));
    }
  }
  Tensor x = random_tensor(DType::Float64, {2, 3, 4}, 12);
  EXPECT_TENSOR_NEAR(run_op1({"Transpose", {x}}), transpose_ref(x, {2, 1, 0}), 0, 0);
  Tensor big = random_tensor(DType::Float32, {4, 96, 130}, 13);
  EXPECT_TENSOR_NEAR(run_op1({"Transpose", {big}, {Attribute::make_ints("perm", {2, 0, 1})}}),
                     transpose_ref(big, {2, 0, 1}), 0, 0);
}

TEST(ShapeKernels, ConcatAndSplit) {
  uint64_t seed = 20;
  for (DType dt : kMoveDtypes) {
    for (int64_t axis : {0, 1, -1}) {
      Index sa{2, 3, 4}, sb{2, 3, 4};
      size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      sb[a] = 0;
      Index sc = sa;
      sc[a] = 5;
      Tensor x = random_any(dt, sa, seed++), y = random_any(dt, sb, seed++),
             z = random_any(dt, sc, seed++);
      Index out_shape = sa;
      out_shape[a] = sa[a] + sb[a] + sc[a];
      Tensor out = run_op1({"Concat", {x, y, z}, {Attribute::make_int("axis", axis)}});
      Tensor ref = reference(
          x, out_shape, [&](const Index& o) { return o[a] < sa[a] ? ravel(o, sa) : int64_t{-1}; });
      Tensor ref_z = reference(z, out_shape, [&](const Index& o) {
        Index i = o;
        i[a] -= sa[a];
        return o[a] >= sa[a] ? ravel(i, sc) : int64_t{-1};
      });
      ASSERT_EQ(out.shape(), out_shape);
      for (int64_t i = 0; i < out.numel(); ++i) {
        const Tensor& src = unravel(i, out_shape)[a] < sa[a] ? ref : ref_z;
        if (dt == DType::String) {
          EXPECT_EQ(out.data<std::string>()[i], src.data<std::string>()[i]);
        } else {
          EXPECT_EQ(out.scalar_as_double(i), src.scalar_as_double(i));
        }
      }
      // Split the result back.
      auto parts = run_op({"Split",
                           {out, int64_tensor({sa[a], 0, sc[a]})},
                           {Attribute::make_int("axis", axis)},
                           3});
      ASSERT_EQ(parts.size(), 3u);
      EXPECT_TENSOR_NEAR(parts[0].tensor, x, 0, 0);
      EXPECT_EQ(parts[1].tensor.shape(), sb);
      EXPECT_TENSOR_NEAR(parts[2].tensor, z, 0, 0);
    }
  }
  Tensor x = random_tensor(DType::Int32, {7, 2}, 30);
  auto parts = run_op({"Split", {x}, {Attribute::make_int("num_outputs", 3)}, 3});
  EXPECT_EQ(parts[0].tensor.shape(), (Index{3, 2}));
  EXPECT_EQ(parts[1].tensor.shape(), (Index{3, 2}));
  EXPECT_EQ(parts[2].tensor.shape(), (Index{1, 2}));
  EXPECT_EQ(parts[2].tensor.data<int32_t>()[1], x.data<int32_t>()[13]);
  Tensor y = random_tensor(DType::BFloat16, {2, 6}, 31);
  parts = run_op({"Split", {y}, {Attribute::make_int("axis", 1)}, 2});
  EXPECT_TENSOR_NEAR(parts[1].tensor,
                     reference(y, {2, 3}, [](const Index& o) { return o[0] * 6 + o[1] + 3; }), 0,
                     0);
  expect_error_naming_node({"Split", {x}, {}, 2}, "equal parts");
  expect_error_naming_node({"Split", {x, int64_tensor({3, 3})}, {}, 2}, "sums to");
  expect_error_naming_node(
      {"Concat", {x, random_tensor(DType::Int32, {7, 3}, 32)}, {Attribute::make_int("axis", 0)}},
      "dim 1");
}

// Python-style slice indices of one axis, as ONNX defines them.
std::vector<int64_t> slice_indices(int64_t d, int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> out;
  if (start < 0) start += d;
  if (end < 0) end += d;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    for (int64_t i = start; i < end; i += step) out.push_back(i);
  } else {
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
    for (int64_t i = start; i > end; i += step) out.push_back(i);
  }
  return out;
}

TEST(ShapeKernels, SliceMatchesReference) {
  std::mt19937_64 rng(40);
  Index shape{5, 6, 7};
  for (int trial = 0; trial < 60; ++trial) {
    DType dt = kMoveDtypes[static_cast<size_t>(trial) % kMoveDtypes.size()];
    Tensor x = random_any(dt, shape, 100 + static_cast<uint64_t>(trial));
    std::vector<int64_t> starts, ends, axes, steps;
    std::vector<std::vector<int64_t>> picks(3);
    for (size_t a = 0; a < 3; ++a) {
      int64_t d = shape[a];
      picks[a].resize(static_cast<size_t>(d));
      std::iota(picks[a].begin(), picks[a].end(), 0);
    }
    for (int64_t a : {2, 0, 1}) {
      if (rng() % 3 == 0) continue;
      int64_t d = shape[static_cast<size_t>(a)];
      int64_t start = static_cast<int64_t>(rng() % (2 * d + 4)) - d - 2;
      int64_t end = static_cast<int64_t>(rng() % (2 * d + 4)) - d - 2;
      if (rng() % 5 == 0) end = rng() % 2 ? INT64_MAX : INT64_MIN;
      int64_t step = static_cast<int64_t>(rng() % 7) - 3;
      if (step == 0) step = 1;
      starts.push_back(start);
      ends.push_back(end);
      axes.push_back(rng() % 2 ? a : a - 3);
      steps.push_back(step);
      picks[static_cast<size_t>(a)] = slice_indices(d, start, end, step);
    }
    if (starts.empty()) continue;
    Index out_shape{static_cast<int64_t>(picks[0].size()), static_cast<int64_t>(picks[1].size()),
                    static_cast<int64_t>(picks[2].size())};
    Tensor ref = reference(x, out_shape, [&](const Index& o) {
      return ravel({picks[0][static_cast<size_t>(o[0])], picks[1][static_cast<size_t>(o[1])],
                    picks[2][static_cast<size_t>(o[2])]},
                   shape);
    });
    Tensor st = int64_tensor(starts);
    Tensor out =
        run_op1({"Slice", {x, st, int64_tensor(ends), int64_tensor(axes), int64_tensor(steps)}});
    EXPECT_TENSOR_NEAR(out, ref, 0, 0) << "trial " << trial;
  }
  // int32 index inputs, default axes and steps.
  Tensor x = random_tensor(DType::Float16, {4, 5}, 41);
  Tensor out =
      run_op1({"Slice",
               {x, tensor_of(DType::Int32, {2}, {1, -3}), tensor_of(DType::Int32, {2}, {3, 100})}});
  EXPECT_TENSOR_NEAR(
      out, reference(x, {2, 3}, [](const Index& o) { return (o[0] + 1) * 5 + o[1] + 2; }), 0, 0);
  expect_error_naming_node(
      {"Slice", {x, int64_tensor({0}), int64_tensor({1}), int64_tensor({0}), int64_tensor({0})}},
      "zero");
}

TEST(ShapeKernels, ExpandAndTile) {
  uint64_t seed = 50;
  for (DType dt : kMoveDtypes) {
    Tensor x = random_any(dt, {3, 1, 2}, seed++);
    Tensor out = run_op1({"Expand", {x, int64_tensor({2, 1, 4, 1})}});
    EXPECT_TENSOR_NEAR(
        out, reference(x, {2, 3, 4, 2}, [](const Index& o) { return o[1] * 2 + o[3]; }), 0, 0);
    Tensor tiled = run_op1({"Tile", {x, int64_tensor({2, 3, 2})}});
    EXPECT_TENSOR_NEAR(
        tiled, reference(x, {6, 3, 4}, [](const Index& o) { return (o[0] % 3) * 2 + o[2] % 2; }), 0,
        0);
  }
  Tensor x = random_tensor(DType::Int16, {2, 3}, 60);
  EXPECT_EQ(run_op1({"Tile", {x, int64_tensor({0, 2})}}).shape(), (Index{0, 6}));
  EXPECT_EQ(run_op1({"Expand", {x.reshaped({6, 1}), int64_tensor({0, 1, 1})}}).shape(),
            (Index{0, 6, 1}));
  expect_error_naming_node({"Expand", {x, int64_tensor({4, 3})}}, "broadcast");
  expect_error_naming_node({"Tile", {x, int64_tensor({2})}}, "repeats");
}

// numpy.pad index mapping for one axis (reference written independently of the kernel).
int64_t numpy_pad_index(const std::string& mode, int64_t i, int64_t d) {
  if (i >= 0 && i < d) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : d - 1;
  if (mode == "wrap") {
    while (i < 0) i += d;
    return i % d;
  }
  while (i < 0 || i >= d) i = i < 0 ? -i : 2 * (d - 1) - i;  // reflect, repeatedly
  return i;
}

TEST(ShapeKernels, PadAllModes) {
  uint64_t seed = 70;
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    for (DType dt : {DType::Float32, DType::Float16, DType::Int32, DType::Bool, DType::String}) {
      if (dt == DType::Bool && mode == "constant") continue;
      Tensor x = random_any(dt, {3, 4, 5}, seed++);
      std::vector<int64_t> pads = {1, 0, 2, 2, 3, -1};
      Index out_shape{3 + 1 + 2, 4 + 0 + 3, 5 + 2 - 1};
      Tensor fill =
          dt == DType::String ? random_any(DType::String, {}, seed++) : tensor_of(dt, {}, {7});
      std::vector<std::optional<Tensor>> inputs = {x, int64_tensor(pads)};
      if (mode == "constant") inputs.push_back(fill);
      Tensor out = run_op1({"Pad", inputs, {Attribute::make_string("mode", mode)}});
      Tensor ref = reference(
          x, out_shape,
          [&](const Index& o) {
            Index i(3);
            for (size_t a = 0; a < 3; ++a) {
              i[a] = numpy_pad_index(mode, o[a] - pads[a], x.dim(static_cast<int64_t>(a)));
              if (i[a] < 0) return int64_t{-1};
            }
            return ravel(i, x.shape());
          },
          &fill);
      EXPECT_TENSOR_NEAR(out, ref, 0, 0) << mode << " " << ir::dtype_name(dt);
    }
  }
  // Pads larger than the axis, as numpy does them.
  Tensor v = tensor_of(DType::Int64, {3}, {1, 2, 3});
  EXPECT_TENSOR_NEAR(
      run_op1({"Pad", {v, int64_tensor({5, 5})}, {Attribute::make_string("mode", "reflect")}}),
      tensor_of(DType::Int64, {13}, {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}), 0, 0);
  EXPECT_TENSOR_NEAR(
      run_op1({"Pad", {v, int64_tensor({5, 5})}, {Attribute::make_string("mode", "wrap")}}),
      tensor_of(DType::Int64, {13}, {2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}), 0, 0);
  // The axes input (opset 18) pads only the listed axes.
  Tensor x = random_tensor(DType::Float32, {2, 3}, 80);
  Tensor out = run_op1({"Pad", {x, int64_tensor({1, 2}), std::nullopt, int64_tensor({-1})}});
  EXPECT_TENSOR_NEAR(out,
                     reference(x, {2, 6},
                               [](const Index& o) {
                                 return o[1] >= 1 && o[1] < 4 ? o[0] * 3 + o[1] - 1 : int64_t{-1};
                               }),
                     0, 0);
  expect_error_naming_node({"Pad", {x, int64_tensor({0, -4, 0, 0})}}, "below zero");
  expect_error_naming_node({"Pad", {x, int64_tensor({1, 1})}}, "pads has 2 values");
}

TEST(ShapeKernels, Range) {
  EXPECT_TENSOR_NEAR(
      run_op1({"Range",
               {tensor_of(DType::Float32, {}, {1}), tensor_of(DType::Float32, {}, {2.1}),
                tensor_of(DType::Float32, {}, {0.25})}}),
      tensor_of(DType::Float32, {5}, {1, 1.25, 1.5, 1.75, 2}), 1e-6, 0);
  EXPECT_TENSOR_NEAR(run_op1({"Range",
                              {tensor_of(DType::Int32, {}, {10}), tensor_of(DType::Int32, {}, {4}),
                               tensor_of(DType::Int32, {}, {-3})}}),
                     tensor_of(DType::Int32, {2}, {10, 7}), 0, 0);
  EXPECT_EQ(run_op1({"Range",
                     {tensor_of(DType::Int64, {}, {5}), tensor_of(DType::Int64, {}, {1}),
                      tensor_of(DType::Int64, {}, {2})}})
                .numel(),
            0);
  EXPECT_TENSOR_NEAR(run_op1({"Range",
                              {tensor_of(DType::Int16, {}, {-3}), tensor_of(DType::Int16, {}, {3}),
                               tensor_of(DType::Int16, {}, {2})}}),
                     tensor_of(DType::Int16, {3}, {-3, -1, 1}), 0, 0);
  expect_error_naming_node({"Range",
                            {tensor_of(DType::Float64, {}, {0}), tensor_of(DType::Float64, {}, {1}),
                             tensor_of(DType::Float64, {}, {0})}},
                           "delta");
}

TEST(ShapeKernels, EyeLikeAndTrilu) {
  Tensor x = random_tensor(DType::Int32, {3, 5}, 90);
  for (int64_t k : {-4, -1, 0, 2, 6}) {
    Tensor out = run_op1({"EyeLike",
                          {x},
                          {Attribute::make_int("k", k),
                           Attribute::make_int("dtype", static_cast<int64_t>(DType::Float16))}});
    std::vector<double> expected(15, 0);
    for (int64_t r = 0; r < 3; ++r)
      if (r + k >= 0 && r + k < 5) expected[static_cast<size_t>(r * 5 + r + k)] = 1;
    EXPECT_TENSOR_NEAR(out, tensor_of(DType::Float16, {3, 5}, expected), 0, 0);
  }
  EXPECT_EQ(run_op1({"EyeLike", {x}}).dtype(), DType::Int32);

  uint64_t seed = 91;
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Int64, DType::Bool, DType::String}) {
    for (int64_t upper : {0, 1}) {
      for (int64_t k : {-7, -1, 0, 2, 9}) {
        Tensor t = random_any(dt, {2, 4, 6}, seed++);
        Tensor out = run_op1(
            {"Trilu", {t, int64_tensor({k}).reshaped({})}, {Attribute::make_int("upper", upper)}});
        Tensor ref = reference(t, t.shape(), [&](const Index& o) {
          bool keep = upper ? o[2] - o[1] >= k : o[2] - o[1] <= k;
          return keep ? ravel(o, t.shape()) : int64_t{-1};
        });
        EXPECT_TENSOR_NEAR(out, ref, 0, 0) << "upper " << upper << " k " << k;
      }
    }
  }
  Tensor t = random_tensor(DType::Float32, {3, 3}, 99);
  Tensor lower = run_op1({"Trilu", {t}, {Attribute::make_int("upper", 0)}});
  EXPECT_EQ(lower.data<float>()[1], 0.0f);
  EXPECT_EQ(lower.data<float>()[3], t.data<float>()[3]);
}

TEST(ShapeKernels, DepthToSpaceAndBack) {
  uint64_t seed = 110;
  for (DType dt : {DType::Float32, DType::Float16, DType::UInt8, DType::String}) {
    int64_t b = 2;
    Tensor x = random_any(dt, {2, 8, 3, 2}, seed++);
    for (std::string mode : {"DCR", "CRD"}) {
      Tensor out =
          run_op1({"DepthToSpace",
                   {x},
                   {Attribute::make_int("blocksize", b), Attribute::make_string("mode", mode)}});
      Tensor ref = reference(x, {2, 2, 6, 4}, [&](const Index& o) {
        int64_t c = o[1], i = o[2] % b, j = o[3] % b, h = o[2] / b, w = o[3] / b;
        int64_t ic = mode == "DCR" ? (i * b + j) * 2 + c : c * b * b + i * b + j;
        return ravel({o[0], ic, h, w}, x.shape());
      });
      EXPECT_TENSOR_NEAR(out, ref, 0, 0) << mode;
    }
    Tensor y = random_any(dt, {1, 3, 4, 6}, seed++);
    Tensor out = run_op1({"SpaceToDepth", {y}, {Attribute::make_int("blocksize", b)}});
    Tensor ref = reference(y, {1, 12, 2, 3}, [&](const Index& o) {
      int64_t c = o[1] % 3, blk = o[1] / 3, i = blk / b, j = blk % b;
      return ravel({o[0], c, o[2] * b + i, o[3] * b + j}, y.shape());
    });
    EXPECT_TENSOR_NEAR(out, ref, 0, 0);
    Tensor back = run_op1({"DepthToSpace", {out}, {Attribute::make_int("blocksize", b)}});
    EXPECT_TENSOR_NEAR(back, y, 0, 0);
  }
  Tensor x = random_tensor(DType::Float32, {1, 3, 2, 2}, 120);
  expect_error_naming_node({"DepthToSpace", {x}, {Attribute::make_int("blocksize", 2)}},
                           "divisible");
}

TEST(ShapeKernels, ReverseSequenceAndCenterCropPad) {
  uint64_t seed = 130;
  for (DType dt : {DType::Float32, DType::Int8, DType::String}) {
    for (int64_t time_axis : {0, 1}) {
      Index shape = time_axis == 0 ? Index{5, 3, 2} : Index{3, 5, 2};
      Tensor x = random_any(dt, shape, seed++);
      std::vector<int64_t> lens = {5, 0, 3};
      Tensor out = run_op1({"ReverseSequence",
                            {x, int64_tensor(lens)},
                            {Attribute::make_int("time_axis", time_axis),
                             Attribute::make_int("batch_axis", 1 - time_axis)}});
      Tensor ref = reference(x, shape, [&](const Index& o) {
        Index i = o;
        int64_t b = o[static_cast<size_t>(1 - time_axis)];
        int64_t& t = i[static_cast<size_t>(time_axis)];
        int64_t len = lens[static_cast<size_t>(b)];
        if (t < len) t = len - 1 - t;
        return ravel(i, shape);
      });
      EXPECT_TENSOR_NEAR(out, ref, 0, 0);
    }
    Tensor y = random_any(dt, {5, 4, 3}, seed++);
    Tensor out = run_op1(
        {"CenterCropPad", {y, int64_tensor({2, 7})}, {Attribute::make_ints("axes", {0, -2})}});
    Tensor ref = reference(y, {2, 7, 3}, [&](const Index& o) {
      int64_t r = o[0] + 1, c = o[1] - 1;
      return c >= 0 && c < 4 ? ravel({r, c, o[2]}, y.shape()) : int64_t{-1};
    });
    EXPECT_TENSOR_NEAR(out, ref, 0, 0);
  }
  Tensor x = random_tensor(DType::Float32, {4, 2}, 140);
  expect_error_naming_node({"ReverseSequence", {x, int64_tensor({5, 1})}}, "sequence_lens[0]");
}

}  // namespace
}  // namespace switchyard::testing
