// GPU-only tests of the reduce family (src/backends/cuda/kernels/reduce.cc, softmax.cu,
// topk_cumsum.cu): bit-for-bit determinism of the chunked reductions, the --precision fp16/bf16
// runs of Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax, TopK and CumSum against the cpu, and the
// refusal of integer ReduceLogSumExp. Every op, dtype, axis variant, NaN/inf and tie case at
// fp32 against a plain reference runs in the op harness (tests/harness/cases/reduce.cc and
// normalization.cc), on cpu, sim:0 and cuda:0.
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

const std::vector<std::string> kLowPrecisions = {"fp16", "bf16"};

struct Tolerance {
  double rtol;
  double atol;
};

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

// ---- Reduce* -------------------------------------------------------------------------------

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
