// CUDA reduction kernels against the CPU backend on seeded random data: every Reduce* op on
// every registered dtype over rows of 1, 7, 1000 and 65537 elements, axes variants (absent,
// empty, single, negative, several, all; keepdims 0/1; noop_with_empty_axes), column and
// strided layouts, chunked long reductions, empty reductions (identity values), NaN/inf,
// bit-for-bit determinism; ArgMax/ArgMin with ties and select_last_index; Softmax/LogSoftmax
// along first, middle and last axes with rows up to 30522; TopK on both paths (one thread per
// slice, radix sort) with ties, NaN and signed zeros; CumSum exclusive/reverse. Float ops also
// run at --precision fp16/bf16. Integer results and indices must match exactly; data for
// index-valued ops is integer-valued, so 16-bit storage cannot create or break a tie.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace switchyard::testing {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};
const std::vector<DType> kNumberTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                         DType::Float64, DType::Int32,   DType::Int64};
const std::vector<std::string> kLowPrecisions = {"fp16", "bf16"};
const std::vector<std::string> kReduceOps = {
    "ReduceSum", "ReduceMean", "ReduceMax",    "ReduceMin",       "ReduceProd",
    "ReduceL1",  "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};

struct Tolerance {
  double rtol;
  double atol;
};

// The GPU folds in another order than the CPU; a 16-bit result may round one ulp apart.
// Integers: exact.
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {4e-3, 1e-5};
    case DType::BFloat16:
      return {2e-2, 1e-5};
    case DType::Float64:
      return {1e-10, 1e-12};
    case DType::Float32:
      return {1e-4, 1e-6};
    default:
      return {0, 0};
  }
}

// --precision fp16/bf16 runs: float32 data computed in 16-bit storage.
constexpr Tolerance kLowPrecision = {2e-2, 2e-2};

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }

std::string trace(const std::string& op, DType dtype, const Shape& shape) {
  return op + " " + std::string(dtype_name(dtype)) + " " + shape_to_string(shape);
}

bool is_float(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16 ||
         dtype == DType::Float64;
}

// Dtypes the CUDA kernel of `op` is registered for.
std::vector<DType> dtypes_of(const std::string& op) {
  return op == "ReduceLogSumExp" ? kFloatTypes : kNumberTypes;
}

// Data ranges that keep each op's result well conditioned: sums without cancellation (so a
// relative tolerance suits them), products near 1, positive sums under a logarithm.
std::pair<double, double> data_range(const std::string& op, DType dtype) {
  bool f = is_float(dtype);
  if (op == "ReduceProd") return f ? std::pair{0.995, 1.005} : std::pair{1.0, 3.0};
  if (op == "ReduceLogSum") return f ? std::pair{0.1, 1.1} : std::pair{1.0, 20.0};
  if (op == "ReduceLogSumExp") return {-3.0, 3.0};
  if (op == "ReduceL2" && !f) return {-20.0, 20.0};
  return f ? std::pair{-0.5, 1.5} : std::pair{-50.0, 50.0};
}

// Integer values in [lo, hi] stored as `dtype`: exact in every float dtype, with many ties.
Tensor integer_valued(DType dtype, const Shape& shape, uint64_t seed, double lo, double hi) {
  return tensor_of(dtype, shape, to_doubles(random_tensor(DType::Int64, shape, seed, lo, hi)));
}

OpCase reduce_case(const std::string& op, DType dtype, const Shape& shape,
                   const std::optional<Shape>& axes, int64_t keepdims, uint64_t seed,
                   int64_t noop = 0) {
  auto [lo, hi] = data_range(op, dtype);
  std::vector<std::optional<Tensor>> inputs = {random_tensor(dtype, shape, seed, lo, hi)};
  if (axes) inputs.push_back(int64_tensor(*axes));
  std::vector<Attribute> attrs = {int_attr("keepdims", keepdims)};
  if (noop) attrs.push_back(int_attr("noop_with_empty_axes", noop));
  return make_case(op, inputs, attrs);
}

void expect_reduce(const std::string& op, DType dtype, const Shape& shape,
                   const std::optional<Shape>& axes, int64_t keepdims, uint64_t seed,
                   int64_t noop = 0) {
  SCOPED_TRACE(trace(op, dtype, shape) + " axes " + (axes ? shape_to_string(*axes) : "absent") +
               " keepdims " + std::to_string(keepdims) + " noop " + std::to_string(noop));
  Tolerance tol = tolerance_for(dtype);
  expect_gpu_matches_cpu(reduce_case(op, dtype, shape, axes, keepdims, seed, noop), tol.rtol,
                         tol.atol);
}

// ---- Reduce* -------------------------------------------------------------------------------

TEST(CudaReduce, EveryOpAndDtypeOverRowLengths) {
  SY_SKIP_WITHOUT_GPU();
  // Rows of 1 and 7 (a thread per row), 1000 (a warp), 65537 (a block, split in chunks).
  const std::vector<Shape> shapes = {{4, 1}, {4, 7}, {3, 1000}, {2, 65537}};
  uint64_t seed = 100;
  for (const std::string& op : kReduceOps)
    for (DType dtype : dtypes_of(op))
      for (const Shape& shape : shapes)
        for (int64_t keepdims : {0, 1})
          expect_reduce(op, dtype, shape, Shape{-1}, keepdims, ++seed);
}

TEST(CudaReduce, AxesVariants) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<std::optional<Shape>> axes_list = {
      std::nullopt, Shape{},     Shape{1},    Shape{-1},        Shape{0, 2},
      Shape{0, 1},  Shape{1, 2}, Shape{2, 0}, Shape{-3, -2, -1}};
  uint64_t seed = 1000;
  for (const std::string& op : kReduceOps)
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int32}) {
      if (op == "ReduceLogSumExp" && !is_float(dtype)) continue;
      for (const auto& axes : axes_list)
        for (int64_t keepdims : {0, 1}) expect_reduce(op, dtype, {3, 5, 7}, axes, keepdims, ++seed);
      // Four dims: alternating reduced and kept groups take the strided path.
      expect_reduce(op, dtype, {2, 3, 4, 5}, Shape{1, 3}, 1, ++seed);
      expect_reduce(op, dtype, {2, 3, 4, 5}, Shape{0, 2}, 0, ++seed);
      expect_reduce(op, dtype, {2, 1, 4, 5}, Shape{0, 1, 3}, 0, ++seed);  // a size-1 dim merges
    }
}

TEST(CudaReduce, NoopWithEmptyAxes) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 2000;
  for (const std::string& op : kReduceOps)
    for (DType dtype : dtypes_of(op))
      for (int64_t noop : {0, 1}) {
        expect_reduce(op, dtype, {3, 5, 7}, Shape{}, 1, ++seed, noop);
        expect_reduce(op, dtype, {3, 5, 7}, std::nullopt, 0, ++seed, noop);
      }
}

TEST(CudaReduce, ColumnsStridedAndLongReductions) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    Shape shape;
    Shape axes;
  };
  const std::vector<Case> cases = {
      {{65537, 3}, {0}},           // few columns, long: chunks of rows
      {{1000, 40}, {0}},           // a full tile of 32 columns and a partial one
      {{7, 1000, 33}, {1}},        // outer x len x inner
      {{1 << 20}, {0}},            // everything into one value
      {{64, 16384}, {1}},          // long rows, fewer than the GPU's blocks: chunks
      {{3, 70000, 2}, {1}},        // chunked columns with an outer dim
      {{16, 300, 16, 5}, {1, 3}},  // strided path
      {{5, 1, 3}, {1}},            // reducing a size-1 dim
  };
  uint64_t seed = 3000;
  for (std::string op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2",
                         "ReduceLogSumExp", "ReduceSumSquare"})
    for (DType dtype : {DType::Float32, DType::Float16, DType::Float64, DType::Int64}) {
      if (op == "ReduceLogSumExp" && !is_float(dtype)) continue;
      for (const Case& c : cases) {
        // Half sums of a million elements overflow on both sides; nothing to compare.
        if (dtype == DType::Float16 && c.shape.size() == 1) continue;
        expect_reduce(op, dtype, c.shape, c.axes, 0, ++seed);
      }
    }
}

TEST(CudaReduce, EmptyReductionsGiveIdentities) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 4000;
  for (const std::string& op : kReduceOps)
    for (DType dtype : dtypes_of(op)) {
      expect_reduce(op, dtype, {3, 0, 4}, Shape{1}, 1, ++seed);  // identity per output
      expect_reduce(op, dtype, {3, 0, 4}, Shape{1}, 0, ++seed);
      expect_reduce(op, dtype, {3, 0}, std::nullopt, 0, ++seed);    // one scalar identity
      expect_reduce(op, dtype, {0, 5}, Shape{1}, 1, ++seed);        // empty output
      expect_reduce(op, dtype, {2, 0, 3}, Shape{0, 2}, 0, ++seed);  // empty output, strided
    }
}

TEST(CudaReduce, NaNAndInfinities) {
  SY_SKIP_WITHOUT_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Rows: a NaN among numbers, +inf, -inf, only -inf, mixed infinities.
  const std::vector<double> values = {1,  nan, -2,   3,    1,    inf,  -2,   3,   1,   -inf,
                                      -2, 3,   -inf, -inf, -inf, -inf, -inf, inf, 0.5, -0.5};
  for (DType dtype : kFloatTypes)
    for (const std::string& op : kReduceOps) {
      SCOPED_TRACE(trace(op, dtype, {5, 4}));
      Tolerance tol = tolerance_for(dtype);
      expect_gpu_matches_cpu(
          make_case(op, {tensor_of(dtype, {5, 4}, values), int64_tensor({1})}, {}), tol.rtol,
          tol.atol);
    }
}

TEST(CudaReduce, ConstantAxes) {
  SY_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::Float32, DType::Int64}) {
    SCOPED_TRACE(dtype_name(dtype));
    OpCase c = make_case("ReduceSum", {random_tensor(dtype, {4, 6, 8}, 5000), int64_tensor({0, 2})},
                         {int_attr("keepdims", 0)}, 1, {false, true});
    Tolerance tol = tolerance_for(dtype);
    expect_gpu_matches_cpu(c, tol.rtol, tol.atol);
  }
}

TEST(CudaReduce, SameInputSameBits) {
  SY_SKIP_WITHOUT_GPU();
  for (const auto& [shape, axes] : std::vector<std::pair<Shape, Shape>>{
           {{1 << 20}, {0}}, {{65537, 3}, {0}}, {{16, 300, 16, 5}, {1, 3}}}) {
    SCOPED_TRACE(shape_to_string(shape));
    OpCase c = reduce_case("ReduceSum", DType::Float32, shape, axes, 0, 5100);
    Tensor first = run_op_gpu(c)[0].tensor;
    for (int run = 0; run < 3; ++run) EXPECT_TENSOR_NEAR(run_op_gpu(c)[0].tensor, first, 0, 0);
  }
}

TEST(CudaReduce, LowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 5200;
  for (const std::string& precision : kLowPrecisions)
    for (std::string op :
         {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"})
      for (const auto& [shape, axes] : std::vector<std::pair<Shape, Shape>>{
               {{64, 1000}, {1}}, {{4, 7}, {-1}}, {{1000, 40}, {0}}, {{2, 3, 4, 5}, {1, 3}}}) {
        SCOPED_TRACE(precision + " " + trace(op, DType::Float32, shape));
        OpCase c = make_case(
            op, {random_tensor(DType::Float32, shape, ++seed, 0.0, 1.0), int64_tensor(axes)},
            {int_attr("keepdims", 0)});
        expect_gpu_matches_cpu(c, kLowPrecision.rtol, kLowPrecision.atol, precision);
      }
}

TEST(CudaReduce, IntegerLogSumExpIsNotClaimed) {
  SY_SKIP_WITHOUT_GPU();
  OpCase c = make_case("ReduceLogSumExp", {random_tensor(DType::Int32, {3, 4}, 5300, -5, 5)}, {});
  expect_error([&] { run_op_gpu(c); }, ErrorCode::PlacementFailed, "int32");
}

// ---- ArgMax / ArgMin -----------------------------------------------------------------------

struct AxisCase {
  Shape shape;
  int64_t axis;
};

TEST(CudaArgReduce, TiesAxesKeepdimsSelectLast) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<AxisCase> cases = {{{3, 1000}, -1}, {{65537}, 0},  {{65537, 3}, 0},
                                       {{4, 7, 5}, 1},  {{2, 1}, 1},   {{5, 40}, 0},
                                       {{2, 3000}, 1},  {{9, 17}, -2}, {{0, 4}, 1}};
  uint64_t seed = 6000;
  for (const char* op : {"ArgMax", "ArgMin"})
    for (DType dtype : kNumberTypes)
      for (const AxisCase& c : cases)
        for (int64_t keepdims : {0, 1})
          for (int64_t last : {0, 1}) {
            SCOPED_TRACE(trace(op, dtype, c.shape) + " axis " + std::to_string(c.axis) +
                         " keepdims " + std::to_string(keepdims) + " last " + std::to_string(last));
            // Values in [-20, 20]: many ties, so select_last_index matters.
            expect_gpu_matches_cpu(
                make_case(op, {integer_valued(dtype, c.shape, ++seed, -20, 20)},
                          {int_attr("axis", c.axis), int_attr("keepdims", keepdims),
                           int_attr("select_last_index", last)}),
                0, 0);
          }
  // Continuous values (no ties) in float32.
  for (const char* op : {"ArgMax", "ArgMin"})
    for (const AxisCase& c : cases) {
      SCOPED_TRACE(trace(op, DType::Float32, c.shape));
      expect_gpu_matches_cpu(make_case(op, {random_tensor(DType::Float32, c.shape, ++seed)},
                                       {int_attr("axis", c.axis)}),
                             0, 0);
    }
}

TEST(CudaArgReduce, NaNRanksAboveNumbers) {
  SY_SKIP_WITHOUT_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> values = {1, nan, 3, nan, -inf, 2, inf, 2, -0.0, 0.0, 0.0, -0.0};
  for (DType dtype : kFloatTypes)
    for (const char* op : {"ArgMax", "ArgMin"})
      for (int64_t last : {0, 1}) {
        SCOPED_TRACE(trace(op, dtype, {3, 4}) + " last " + std::to_string(last));
        expect_gpu_matches_cpu(
            make_case(op, {tensor_of(dtype, {3, 4}, values)},
                      {int_attr("axis", 1), int_attr("select_last_index", last)}),
            0, 0);
      }
}

TEST(CudaArgReduce, LowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 6500;
  for (const std::string& precision : kLowPrecisions)
    for (const char* op : {"ArgMax", "ArgMin"})
      for (const AxisCase& c : std::vector<AxisCase>{{{8, 1000}, 1}, {{300, 5}, 0}}) {
        SCOPED_TRACE(precision + " " + trace(op, DType::Float32, c.shape));
        expect_gpu_matches_cpu(
            make_case(op, {integer_valued(DType::Float32, c.shape, ++seed, -100, 100)},
                      {int_attr("axis", c.axis)}),
            0, 0, precision);
      }
}

// ---- Softmax / LogSoftmax ------------------------------------------------------------------

TEST(CudaSoftmax, AxesAndRowLengths) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<AxisCase> cases = {
      {{2, 3, 30522}, -1},  // BERT vocabulary rows: a block per row, read twice
      {{4, 3000}, -1},      // a block per row, the row cached in shared memory
      {{3, 1000}, 1},       // a warp per row, 32 values per lane
      {{5, 100}, -1},       // a warp per row, 4 values per lane
      {{8, 7}, -1},         // short rows
      {{6, 1}, -1},         // rows of one: 1 (LogSoftmax: 0)
      {{30522, 3}, 0},      // the first axis: column tiles
      {{2, 30522, 5}, 1},   // a middle axis
      {{7, 40}, 0},         // a full tile and a partial one
      {{3, 4, 5}, 1},       //
      {{0, 5}, 1},          // empty
  };
  uint64_t seed = 7000;
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (DType dtype : kFloatTypes)
      for (const AxisCase& c : cases) {
        SCOPED_TRACE(trace(op, dtype, c.shape) + " axis " + std::to_string(c.axis));
        Tolerance tol = tolerance_for(dtype);
        expect_gpu_matches_cpu(make_case(op, {random_tensor(dtype, c.shape, ++seed, -4.0, 4.0)},
                                         {int_attr("axis", c.axis)}),
                               tol.rtol, std::min(tol.atol, 1e-6));
      }
}

TEST(CudaSoftmax, NaNAndInfinities) {
  SY_SKIP_WITHOUT_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Rows: plain, with a NaN, with +inf, all -inf.
  const std::vector<double> values = {1, 2,   3, 4, 1,    nan,  3,    4,
                                      1, inf, 3, 4, -inf, -inf, -inf, -inf};
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (DType dtype : kFloatTypes)
      for (int64_t axis : {0, 1}) {
        SCOPED_TRACE(trace(op, dtype, {4, 4}) + " axis " + std::to_string(axis));
        Tolerance tol = tolerance_for(dtype);
        expect_gpu_matches_cpu(
            make_case(op, {tensor_of(dtype, {4, 4}, values)}, {int_attr("axis", axis)}), tol.rtol,
            tol.atol);
      }
}

TEST(CudaSoftmax, LowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 7500;
  for (const std::string& precision : kLowPrecisions)
    for (const char* op : {"Softmax", "LogSoftmax"})
      for (const AxisCase& c :
           std::vector<AxisCase>{{{8, 128}, -1}, {{4, 3000}, -1}, {{2, 64, 16}, 1}}) {
        SCOPED_TRACE(precision + " " + trace(op, DType::Float32, c.shape));
        // Outputs are near 1 / len: an absolute tolerance would hide every error.
        expect_gpu_matches_cpu(
            make_case(op, {random_tensor(DType::Float32, c.shape, ++seed, -2.0, 2.0)},
                      {int_attr("axis", c.axis)}),
            kLowPrecision.rtol, 1e-5, precision);
      }
}

// ---- TopK ----------------------------------------------------------------------------------

struct TopKCase {
  Shape shape;
  int64_t axis;
  int64_t k;
};

OpCase topk_case(const Tensor& x, const TopKCase& c, int64_t largest) {
  return make_case("TopK", {x, int64_tensor({c.k})},
                   {int_attr("axis", c.axis), int_attr("largest", largest)}, 2);
}

const std::vector<TopKCase> kTopKCases = {
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

TEST(CudaTopK, TiesAndBothPaths) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 8000;
  for (DType dtype : kNumberTypes)
    for (const TopKCase& c : kTopKCases)
      for (int64_t largest : {0, 1}) {
        SCOPED_TRACE(trace("TopK", dtype, c.shape) + " axis " + std::to_string(c.axis) + " k " +
                     std::to_string(c.k) + " largest " + std::to_string(largest));
        // Values in [-30, 30]: ties everywhere, so the order among equals is checked.
        expect_gpu_matches_cpu(
            topk_case(integer_valued(dtype, c.shape, ++seed, -30, 30), c, largest), 0, 0);
      }
  // Continuous float32 values.
  for (const TopKCase& c : kTopKCases)
    for (int64_t largest : {0, 1}) {
      SCOPED_TRACE(trace("TopK", DType::Float32, c.shape) + " k " + std::to_string(c.k));
      expect_gpu_matches_cpu(topk_case(random_tensor(DType::Float32, c.shape, ++seed), c, largest),
                             0, 0);
    }
}

TEST(CudaTopK, NaNAndSignedZeros) {
  SY_SKIP_WITHOUT_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> row = {nan, 1, -0.0, 0.0, nan, -inf, inf, 1, 0.0, -0.0};
  uint64_t seed = 8500;
  for (DType dtype : kFloatTypes)
    for (int64_t largest : {0, 1}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " largest " + std::to_string(largest));
      // Small slices.
      expect_gpu_matches_cpu(topk_case(tensor_of(dtype, {1, 10}, row), {{1, 10}, 1, 10}, largest),
                             0, 0);
      // Sorted slices: the same specials spread over long rows.
      std::vector<double> values = to_doubles(integer_valued(dtype, {3, 2000}, ++seed, -5, 5));
      for (size_t i = 0; i < values.size(); i += 7) values[i] = row[(i / 7) % row.size()];
      expect_gpu_matches_cpu(
          topk_case(tensor_of(dtype, {3, 2000}, values), {{3, 2000}, 1, 100}, largest), 0, 0);
    }
}

TEST(CudaTopK, LowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 8800;
  for (const std::string& precision : kLowPrecisions)
    for (const TopKCase& c : {TopKCase{{5, 10}, -1, 3}, TopKCase{{3, 1000}, 1, 10}}) {
      SCOPED_TRACE(precision + " " + shape_to_string(c.shape));
      expect_gpu_matches_cpu(
          topk_case(integer_valued(DType::Float32, c.shape, ++seed, -100, 100), c, 1), 0, 0,
          precision);
    }
}

// ---- CumSum --------------------------------------------------------------------------------

TEST(CudaCumSum, ExclusiveReverseAxes) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<AxisCase> cases = {
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
    for (const AxisCase& c : cases)
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          SCOPED_TRACE(trace("CumSum", dtype, c.shape) + " axis " + std::to_string(c.axis) +
                       " exclusive " + std::to_string(exclusive) + " reverse " +
                       std::to_string(reverse));
          // Mostly positive floats: running sums grow instead of cancelling.
          auto [lo, hi] = is_float(dtype) ? std::pair{-0.5, 1.5} : std::pair{-50.0, 50.0};
          Tolerance tol = tolerance_for(dtype);
          expect_gpu_matches_cpu(
              make_case("CumSum",
                        {random_tensor(dtype, c.shape, ++seed, lo, hi), int64_tensor({c.axis})},
                        {int_attr("exclusive", exclusive), int_attr("reverse", reverse)}),
              tol.rtol, tol.atol);
        }
}

TEST(CudaCumSum, Int32ScalarAxis) {
  SY_SKIP_WITHOUT_GPU();
  expect_gpu_matches_cpu(make_case("CumSum", {random_tensor(DType::Int64, {3, 200}, 9500, -50, 50),
                                              tensor_of(DType::Int32, {}, {1})}),
                         0, 0);
}

TEST(CudaCumSum, LowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 9600;
  for (const std::string& precision : kLowPrecisions)
    for (const AxisCase& c : std::vector<AxisCase>{{{3, 1000}, 1}, {{100, 6}, 0}})
      for (int64_t reverse : {0, 1}) {
        SCOPED_TRACE(precision + " " + shape_to_string(c.shape));
        expect_gpu_matches_cpu(make_case("CumSum",
                                         {random_tensor(DType::Float32, c.shape, ++seed, -0.5, 1.5),
                                          int64_tensor({c.axis})},
                                         {int_attr("reverse", reverse)}),
                               kLowPrecision.rtol, kLowPrecision.atol, precision);
      }
}

}  // namespace
}  // namespace switchyard::testing
