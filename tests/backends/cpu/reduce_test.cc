// CPU kernels of the reduce family against plain references on seeded random data.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

struct RefOp {
  double init;
  std::function<double(double, double)> step;
  std::function<double(double, int64_t)> finish;
};

RefOp ref_op(const std::string& op) {
  double inf = std::numeric_limits<double>::infinity();
  auto id = [](double a, int64_t) { return a; };
  if (op == "ReduceSum") return {0, [](double a, double x) { return a + x; }, id};
  if (op == "ReduceMean")
    return {0, [](double a, double x) { return a + x; },
            [](double a, int64_t n) { return a / static_cast<double>(n); }};
  if (op == "ReduceProd") return {1, [](double a, double x) { return a * x; }, id};
  if (op == "ReduceMax") return {-inf, [](double a, double x) { return std::max(a, x); }, id};
  if (op == "ReduceMin") return {inf, [](double a, double x) { return std::min(a, x); }, id};
  if (op == "ReduceL1") return {0, [](double a, double x) { return a + std::fabs(x); }, id};
  if (op == "ReduceL2")
    return {0, [](double a, double x) { return a + x * x; },
            [](double a, int64_t) { return std::sqrt(a); }};
  if (op == "ReduceSumSquare") return {0, [](double a, double x) { return a + x * x; }, id};
  if (op == "ReduceLogSum")
    return {0, [](double a, double x) { return a + x; },
            [](double a, int64_t) { return std::log(a); }};
  return {0, [](double a, double x) { return a + std::exp(x); },
          [](double a, int64_t) { return std::log(a); }};
}

// Plain reference: walks every input element and accumulates into its output slot, in double.
Tensor ref_reduce(const std::string& op, const Tensor& x, std::vector<int64_t> axes, bool keepdims,
                  DType out_dtype) {
  int64_t rank = x.rank();
  std::vector<bool> red(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  std::vector<int64_t> out_shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!red[static_cast<size_t>(i)])
      out_shape.push_back(x.dim(i));
    else if (keepdims)
      out_shape.push_back(1);
  }
  int64_t out_n = 1;
  int64_t count = 1;
  for (int64_t i = 0; i < rank; ++i) (red[static_cast<size_t>(i)] ? count : out_n) *= x.dim(i);
  RefOp r = ref_op(op);
  std::vector<double> acc(static_cast<size_t>(out_n), r.init);
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t e = 0; e < x.numel(); ++e) {
    int64_t o = 0;
    for (int64_t i = 0; i < rank; ++i)
      if (!red[static_cast<size_t>(i)]) o = o * x.dim(i) + idx[static_cast<size_t>(i)];
    acc[static_cast<size_t>(o)] = r.step(acc[static_cast<size_t>(o)], x.scalar_as_double(e));
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[static_cast<size_t>(i)] < x.dim(i)) break;
      idx[static_cast<size_t>(i)] = 0;
    }
  }
  std::vector<double> vals;
  for (double a : acc) vals.push_back(r.finish(a, count));
  return tensor_of(out_dtype, out_shape, vals);
}

Tensor run_reduce(const std::string& op, const Tensor& x, const std::vector<int64_t>* axes,
                  int64_t keepdims, bool constant_axes = false, int64_t noop = 0) {
  OpCase c = make_case(op, {x}, {Attribute::make_int("keepdims", keepdims)});
  if (noop) c.attributes.push_back(Attribute::make_int("noop_with_empty_axes", noop));
  if (axes) {
    c.inputs.push_back(testing::int64_tensor(*axes));
    c.constant_inputs = {false, constant_axes};
  }
  return run_op1(c);
}

const char* kAllReduceOps[] = {"ReduceSum",    "ReduceMean",     "ReduceProd", "ReduceMax",
                               "ReduceMin",    "ReduceL1",       "ReduceL2",   "ReduceSumSquare",
                               "ReduceLogSum", "ReduceLogSumExp"};

TEST(ReduceKernels, FloatMatchesReferenceOverAxesAndShapes) {
  std::vector<std::vector<int64_t>> shapes = {{3, 4, 5}, {2, 3, 4, 6}, {7}, {1, 33, 1}};
  std::vector<std::vector<int64_t>> axis_sets = {{},     {0},     {-1},   {1},    {0, 2},
                                                 {1, 2}, {0, -1}, {0, 1}, {1, 3}, {0, 2, 3}};
  uint64_t seed = 1;
  for (const char* op : kAllReduceOps) {
    bool positive = std::string(op) == "ReduceLogSum" || std::string(op) == "ReduceProd";
    for (const auto& shape : shapes) {
      Tensor x = random_tensor(DType::Float32, shape, seed++, positive ? 0.5 : -2.0, 2.0);
      for (const auto& axes : axis_sets) {
        int64_t rank = static_cast<int64_t>(shape.size());
        bool fits = true;
        std::vector<bool> seen(shape.size(), false);
        for (int64_t a : axes) {
          fits = fits && a < rank && -a <= rank;
          if (!fits) break;
          size_t k = static_cast<size_t>(a < 0 ? a + rank : a);
          fits = !seen[k];
          seen[k] = true;
        }
        if (!fits) continue;
        for (int64_t keep : {0, 1}) {
          SCOPED_TRACE(fmt::format("{} shape {} axes {} keepdims {}", op,
                                   ir::shape_to_string(shape), fmt::join(axes, ","), keep));
          Tensor y = run_reduce(op, x, &axes, keep, keep == 1);
          EXPECT_TENSOR_NEAR(y, ref_reduce(op, x, axes, keep, DType::Float32), 1e-5, 1e-5);
        }
      }
    }
  }
}

TEST(ReduceKernels, HalfAndDoubleAccumulateWide) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float64}) {
    Tensor x = random_tensor(dt, {4, 3000}, 7, -1.0, 1.0);
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceLogSumExp", "ReduceL2", "ReduceMax"}) {
      std::vector<int64_t> axes = {-1};
      Tensor y = run_reduce(op, x, &axes, 0);
      double tol = dt == DType::Float64 ? 1e-12 : dt == DType::Float16 ? 2e-3 : 1e-2;
      EXPECT_TENSOR_NEAR(y, ref_reduce(op, x, axes, false, dt), tol, tol) << op;
    }
  }
}

TEST(ReduceKernels, IntegersReduceExactly) {
  Tensor x = random_tensor(DType::Int32, {3, 4, 5}, 11, -20, 20);
  Tensor small = random_tensor(DType::Int64, {3, 4, 5}, 12, -3, 4);
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceSumSquare"}) {
    for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, {0, 2}, {}}) {
      EXPECT_TENSOR_NEAR(run_reduce(op, x, &axes, 1), ref_reduce(op, x, axes, true, DType::Int32),
                         0, 0)
          << op;
    }
  }
  std::vector<int64_t> axes = {2};
  EXPECT_TENSOR_NEAR(run_reduce("ReduceProd", small, &axes, 0),
                     ref_reduce("ReduceProd", small, axes, false, DType::Int64), 0, 0);
  // Integer mean truncates toward zero.
  Tensor m = tensor_of(DType::Int32, {2, 3}, {1, 2, 2, -1, -2, -2});
  axes = {1};
  EXPECT_TENSOR_NEAR(run_reduce("ReduceMean", m, &axes, 0), tensor_of(DType::Int32, {2}, {1, -1}),
                     0, 0);
  Tensor u = tensor_of(DType::UInt8, {2, 2}, {200, 100, 3, 4});
  EXPECT_TENSOR_NEAR(run_reduce("ReduceMax", u, &axes, 0), tensor_of(DType::UInt8, {2}, {200, 4}),
                     0, 0);
  // Sums wrap around in the element type as ONNX Runtime's do.
  EXPECT_TENSOR_NEAR(run_reduce("ReduceSum", u, &axes, 0), tensor_of(DType::UInt8, {2}, {44, 7}), 0,
                     0);
  // L2 of integers: sqrt rounded toward zero.
  Tensor l2 = tensor_of(DType::Int32, {1, 2}, {3, 4});
  EXPECT_TENSOR_NEAR(run_reduce("ReduceL2", l2, &axes, 0), tensor_of(DType::Int32, {1}, {5}), 0, 0);
}

TEST(ReduceKernels, BoolMaxMinAreAnyAll) {
  Tensor b = tensor_of(DType::Bool, {2, 3}, {0, 1, 0, 1, 1, 1});
  std::vector<int64_t> axes = {1};
  EXPECT_TENSOR_NEAR(run_reduce("ReduceMax", b, &axes, 0), tensor_of(DType::Bool, {2}, {1, 1}), 0,
                     0);
  EXPECT_TENSOR_NEAR(run_reduce("ReduceMin", b, &axes, 0), tensor_of(DType::Bool, {2}, {0, 1}), 0,
                     0);
}

TEST(ReduceKernels, AxesAbsentEmptyAndNoop) {
  Tensor x = random_tensor(DType::Float32, {2, 3}, 3);
  Tensor all = run_reduce("ReduceSum", x, nullptr, 0);
  EXPECT_TENSOR_NEAR(all, ref_reduce("ReduceSum", x, {}, false, DType::Float32), 1e-6, 1e-6);
  std::vector<int64_t> none;
  EXPECT_TENSOR_NEAR(run_reduce("ReduceSum", x, &none, 1),
                     ref_reduce("ReduceSum", x, {}, true, DType::Float32), 1e-6, 1e-6);
  // noop_with_empty_axes: empty axes leave the input unchanged (per-element op still applies).
  EXPECT_TENSOR_NEAR(run_reduce("ReduceSum", x, &none, 1, false, 1), x, 0, 0);
  std::vector<double> squares;
  for (double v : testing::to_doubles(x)) squares.push_back(v * v);
  EXPECT_TENSOR_NEAR(run_reduce("ReduceSumSquare", x, nullptr, 0, false, 1),
                     tensor_of(DType::Float32, {2, 3}, squares), 1e-6, 1e-6);
  // Rank-0 input reduces to itself.
  Tensor s = tensor_of(DType::Float32, {}, {2.5});
  EXPECT_TENSOR_NEAR(run_reduce("ReduceMean", s, nullptr, 1), s, 0, 0);
}

TEST(ReduceKernels, EmptySetGivesIdentity) {
  double inf = std::numeric_limits<double>::infinity();
  Tensor x(DType::Float32, {2, 0, 4});
  std::vector<int64_t> axes = {1};
  auto expect_fill = [&](const char* op, double v) {
    Tensor y = run_reduce(op, x, &axes, 1);
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 1, 4})) << op;
    EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, {2, 1, 4}, std::vector<double>(8, v)), 0, 0)
        << op;
  };
  expect_fill("ReduceSum", 0);
  expect_fill("ReduceProd", 1);
  expect_fill("ReduceMax", -inf);
  expect_fill("ReduceMin", inf);
  expect_fill("ReduceL1", 0);
  expect_fill("ReduceL2", 0);
  expect_fill("ReduceSumSquare", 0);
  expect_fill("ReduceLogSum", -inf);
  expect_fill("ReduceLogSumExp", -inf);
  Tensor xi(DType::Int32, {0, 3});
  axes = {0};
  EXPECT_TENSOR_NEAR(run_reduce("ReduceMax", xi, &axes, 0),
                     tensor_of(DType::Int32, {3}, std::vector<double>(3, -2147483648.0)), 0, 0);
  // Reducing a non-empty axis of an empty tensor gives an empty result.
  axes = {1};
  EXPECT_EQ(run_reduce("ReduceSum", xi, &axes, 0).shape(), (std::vector<int64_t>{0}));
}

TEST(ReduceKernels, LogSumExpIsStableAndHandlesInfinities) {
  double inf = std::numeric_limits<double>::infinity();
  Tensor x = tensor_of(DType::Float32, {3, 3}, {1000, 1000, 999, -inf, -inf, -inf, -inf, 0, 1});
  std::vector<int64_t> axes = {1};
  Tensor y = run_reduce("ReduceLogSumExp", x, &axes, 0);
  double row0 = 1000 + std::log(2 + std::exp(-1.0));
  double row2 = std::log(1 + std::exp(1.0));
  EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, {3}, {row0, -inf, row2}), 1e-6, 1e-6);
}

TEST(ReduceKernels, MaxPropagatesNaN) {
  Tensor x = tensor_of(DType::Float32, {2, 3}, {1, NAN, 3, 4, 5, 6});
  std::vector<int64_t> axes = {1};
  Tensor y = run_reduce("ReduceMax", x, &axes, 0);
  EXPECT_TRUE(std::isnan(y.data<float>()[0]));
  EXPECT_EQ(y.data<float>()[1], 6.0f);
}

TEST(ReduceKernels, BadAxesNameTheNode) {
  Tensor x = random_tensor(DType::Float32, {2, 3}, 5);
  for (std::vector<int64_t> axes : {std::vector<int64_t>{2}, {-3}, {1, -1}}) {
    for (bool constant : {false, true}) {
      try {
        run_reduce("ReduceSum", x, &axes, 1, constant);
        ADD_FAILURE() << "no error for axes " << fmt::format("{}", fmt::join(axes, ","));
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_THROW(run_op1(make_case("ReduceSum", {x}, {Attribute::make_int("keepdims", 2)})), Error);
}

// ArgMax / ArgMin reference: first (or last) index of the extreme value along one axis.
Tensor ref_arg(const Tensor& x, int64_t axis, bool keepdims, bool last, bool is_max) {
  int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  int64_t outer = 1, len = x.dim(axis), inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dim(i);
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis)
      shape.push_back(x.dim(i));
    else if (keepdims)
      shape.push_back(1);
  }
  std::vector<double> vals;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      int64_t best = 0;
      for (int64_t j = 1; j < len; ++j) {
        double v = x.scalar_as_double((o * len + j) * inner + k);
        double b = x.scalar_as_double((o * len + best) * inner + k);
        bool take = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
        if (take) best = j;
      }
      vals.push_back(static_cast<double>(best));
    }
  return tensor_of(DType::Int64, shape, vals);
}

TEST(ArgReduceKernels, MatchReferenceWithTiesAndAttributes) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Int32, DType::UInt8}) {
    // Few distinct values, so ties are frequent and select_last_index matters.
    Tensor x = random_tensor(dt, {3, 4, 5}, 21, 0, 4);
    for (int64_t axis : {0, 1, 2, -1, -3})
      for (int64_t keep : {0, 1})
        for (int64_t last : {0, 1})
          for (bool is_max : {true, false}) {
            OpCase c =
                make_case(is_max ? "ArgMax" : "ArgMin", {x},
                          {Attribute::make_int("axis", axis), Attribute::make_int("keepdims", keep),
                           Attribute::make_int("select_last_index", last)});
            EXPECT_TENSOR_NEAR(run_op1(c), ref_arg(x, axis, keep, last, is_max), 0, 0)
                << c.op << " axis " << axis << " keep " << keep << " last " << last;
          }
  }
}

TEST(ArgReduceKernels, DefaultsEmptyAndErrors) {
  Tensor x = random_tensor(DType::Float32, {4, 3}, 4);
  Tensor y = run_op1(make_case("ArgMax", {x}, {}));
  EXPECT_TENSOR_NEAR(y, ref_arg(x, 0, true, false, true), 0, 0);
  Tensor empty(DType::Float32, {0, 3});
  EXPECT_EQ(run_op1(make_case("ArgMin", {empty}, {Attribute::make_int("axis", 1)})).shape(),
            (std::vector<int64_t>{0, 1}));
  EXPECT_THROW(run_op1(make_case("ArgMax", {empty}, {})), Error);
  EXPECT_THROW(run_op1(make_case("ArgMax", {x}, {Attribute::make_int("axis", 2)})), Error);
}

Tensor ref_cumsum(const Tensor& x, int64_t axis, bool exclusive, bool reverse) {
  int64_t rank = x.rank();
  if (axis < 0) axis += rank;
  int64_t outer = 1, len = x.dim(axis), inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
  for (int64_t i = axis + 1; i < rank; ++i) inner *= x.dim(i);
  std::vector<double> out(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      double acc = 0;
      for (int64_t s = 0; s < len; ++s) {
        int64_t j = reverse ? len - 1 - s : s;
        int64_t at = (o * len + j) * inner + k;
        double v = x.scalar_as_double(at);
        if (exclusive) {
          out[static_cast<size_t>(at)] = acc;
          acc += v;
        } else {
          acc += v;
          out[static_cast<size_t>(at)] = acc;
        }
      }
    }
  return tensor_of(x.dtype(), x.shape(), out);
}

TEST(CumSumKernel, MatchesReference) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Int64, DType::Int32}) {
    Tensor x = random_tensor(dt, {3, 5, 300}, 31, -5, 5);
    for (int64_t axis : {0, 1, 2, -1})
      for (int64_t excl : {0, 1})
        for (int64_t rev : {0, 1}) {
          Tensor a = dt == DType::Int32 ? tensor_of(DType::Int32, {}, {static_cast<double>(axis)})
                                        : testing::int64_tensor({axis});
          OpCase c = make_case(
              "CumSum", {x, a},
              {Attribute::make_int("exclusive", excl), Attribute::make_int("reverse", rev)});
          double tol = dt == DType::Float16 ? 2e-2 : 1e-4;
          EXPECT_TENSOR_NEAR(run_op1(c), ref_cumsum(x, axis, excl, rev), tol, tol)
              << "axis " << axis << " exclusive " << excl << " reverse " << rev;
        }
  }
}

TEST(CumSumKernel, BadAxis) {
  Tensor x = random_tensor(DType::Float32, {3}, 1);
  EXPECT_THROW(run_op1(make_case("CumSum", {x, testing::int64_tensor({1})}, {})), Error);
  EXPECT_THROW(run_op1(make_case("CumSum", {x, testing::int64_tensor({0, 0})}, {})), Error);
  Tensor empty(DType::Float32, {0, 2});
  EXPECT_EQ(run_op1(make_case("CumSum", {empty, testing::int64_tensor({0})}, {})).shape(),
            (std::vector<int64_t>{0, 2}));
}

}  // namespace
}  // namespace switchyard::testing
