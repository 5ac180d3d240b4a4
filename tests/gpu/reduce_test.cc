// The reduction family on cuda:0 against the cpu on seeded random data: Reduce* over axis sets
// (none, one, several, negative, all; keepdims; noop_with_empty_axes; empty reductions),
// ArgMax/ArgMin (ties, select_last_index), Softmax/LogSoftmax along every axis, and fp16/bf16
// runs that accumulate in float32.
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"

namespace switchyard::testing {
namespace {

const char* const kReduceOps[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                                  "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                  "ReduceLogSumExp", "ReduceSumSquare"};

bool integer_ok(const std::string& op) {
  return op != "ReduceL2" && op != "ReduceLogSum" && op != "ReduceLogSumExp";
}

OpCase reduce_case(const std::string& op, const Tensor& x, std::optional<std::vector<int64_t>> axes,
                   int64_t keepdims, int64_t noop = 0) {
  std::vector<std::optional<Tensor>> inputs = {x};
  if (axes) inputs.push_back(int64_tensor(*axes));
  return make_case(op, inputs,
                   {Attribute::make_int("keepdims", keepdims),
                    Attribute::make_int("noop_with_empty_axes", noop)});
}

TEST(CudaReduce, EveryOpOverAxisSets) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<std::optional<std::vector<int64_t>>> axis_sets = {std::nullopt,
                                                                      std::vector<int64_t>{1},
                                                                      std::vector<int64_t>{-1},
                                                                      std::vector<int64_t>{0, 2},
                                                                      std::vector<int64_t>{0, 1, 2},
                                                                      std::vector<int64_t>{}};
  uint64_t seed = 1;
  for (const char* op : kReduceOps) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::Int64}) {
      if (!ir::dtype_is_float(dt) && !integer_ok(op)) continue;
      // Positive inputs keep LogSum defined; small integers keep Prod in range.
      bool positive = std::string(op) == "ReduceLogSum" || std::string(op) == "ReduceL2";
      Tensor x = ir::dtype_is_float(dt)
                     ? random_tensor(dt, {3, 5, 7}, ++seed, positive ? 0.1 : -1.0, 1.0)
                     : random_tensor(dt, {3, 5, 7}, ++seed, -2, 3);
      if (std::string(op) == "ReduceProd" && !ir::dtype_is_float(dt))
        x = random_tensor(dt, {3, 5, 7}, ++seed, 1, 2);
      for (const auto& axes : axis_sets)
        for (int64_t keep : {0, 1}) {
          SCOPED_TRACE(std::string(op) + " " + std::string(ir::dtype_name(dt)));
          expect_gpu_matches_cpu(reduce_case(op, x, axes, keep), 1e-5, 1e-5);
        }
      expect_gpu_matches_cpu(reduce_case(op, x, std::vector<int64_t>{}, 1, 1), 1e-6, 1e-6);
    }
  }
}

TEST(CudaReduce, LongRowsEmptyReductionsAndLowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    // Rows of 1, 7, 1000 and 65537: warps, partial warps, many strides per thread.
    for (int64_t n : {1, 7, 1000, 65537}) {
      Tensor x = random_tensor(DType::Float32, {4, n}, ++seed);
      // The cpu sums a row in order, the GPU as a tree: float32 rounding of a sum of n values
      // of mean magnitude 0.5 differs by up to ~n * 2^-24 * 0.5 between the two orders.
      double atol = std::max(1e-5, 1e-7 * static_cast<double>(n));
      expect_gpu_matches_cpu(reduce_case(op, x, std::vector<int64_t>{1}, 0), 1e-5, atol);
      for (const char* p : {"fp16", "bf16"})
        expect_gpu_matches_cpu(reduce_case(op, x, std::vector<int64_t>{1}, 0), 2e-2, 2e-2, p);
    }
    // A reduced axis of size 0: the op's identity.
    Tensor empty(DType::Float32, {3, 0, 2});
    expect_gpu_matches_cpu(reduce_case(op, empty, std::vector<int64_t>{1}, 1), 0, 0);
  }
}

TEST(CudaReduce, ArgMaxArgMin) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 200;
  for (const char* op : {"ArgMax", "ArgMin"})
    for (DType dt : {DType::Float32, DType::Float16, DType::Int64, DType::Int32})
      for (int64_t axis : {0, 1, -1})
        for (int64_t last : {0, 1})
          for (int64_t keep : {0, 1}) {
            SCOPED_TRACE(std::string(op) + " " + std::string(ir::dtype_name(dt)));
            // Integers in a small range: many ties, where select_last_index matters.
            Tensor x = ir::dtype_is_float(dt) ? random_tensor(dt, {4, 6, 5}, ++seed)
                                              : random_tensor(dt, {4, 6, 5}, ++seed, 0, 3);
            expect_gpu_matches_cpu(
                make_case(op, {x},
                          {Attribute::make_int("axis", axis), Attribute::make_int("keepdims", keep),
                           Attribute::make_int("select_last_index", last)}),
                0, 0);
          }
}

TEST(CudaReduce, SoftmaxAndLogSoftmax) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 300;
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (int64_t axis : {0, 1, -1}) {
      SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis));
      Tensor x = random_tensor(DType::Float32, {3, 17, 9}, ++seed, -5, 5);
      OpCase c = make_case(op, {x}, {Attribute::make_int("axis", axis)});
      expect_gpu_matches_cpu(c, 1e-5, 1e-6);
      for (const char* p : {"fp16", "bf16"}) expect_gpu_matches_cpu(c, 2e-2, 1e-2, p);
    }
    // A vocabulary-sized row and float64.
    expect_gpu_matches_cpu(
        make_case(op, {random_tensor(DType::Float32, {2, 30522}, ++seed, -8, 8)}), 1e-5, 1e-7);
    expect_gpu_matches_cpu(make_case(op, {random_tensor(DType::Float64, {5, 33}, ++seed)}), 1e-12,
                           1e-14);
  }
}

}  // namespace
}  // namespace switchyard::testing
