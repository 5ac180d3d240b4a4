// Test helpers: build a one-node graph, run it on the CPU backend through the real pipeline
// (type inference, verifier, GraphProgram, a poisoned pool), seeded random tensors, comparison.
#pragma once

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace switchyard::testing {

struct OpCase {
  std::string op;
  /// nullopt = omitted optional input.
  std::vector<std::optional<ir::Tensor>> inputs;
  std::vector<ir::Attribute> attributes;
  int num_outputs = 1;
  /// Inputs given as initializers (constants) instead of graph inputs; empty = none.
  std::vector<bool> constant_inputs;
};

/// Runs the op on the CPU backend; returns its outputs.
std::vector<ir::Datum> run_op(const OpCase& c);
/// Same, first output as a tensor.
ir::Tensor run_op1(const OpCase& c);
/// Builds the graph of an OpCase (types inferred, verified).
std::unique_ptr<ir::Graph> build_op_graph(const OpCase& c);

/// Seeded uniform values in [lo, hi) (integers: rounded; bool: random).
ir::Tensor random_tensor(ir::DType dtype, std::vector<int64_t> shape, uint64_t seed,
                         double lo = -1.0, double hi = 1.0);
/// A tensor of the given values (converted to dtype).
ir::Tensor tensor_of(ir::DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
/// An int64 1-D tensor.
ir::Tensor int64_tensor(const std::vector<int64_t>& values);
/// Values as doubles (any numeric dtype).
std::vector<double> to_doubles(const ir::Tensor& t);

/// Checks dtype, shape and |a-e| <= atol + rtol*|e| per element (NaN matches NaN). Returns an
/// empty string when equal, else a description of the first mismatches.
std::string compare_tensors(const ir::Tensor& actual, const ir::Tensor& expected, double rtol,
                            double atol);

}  // namespace switchyard::testing

#define EXPECT_TENSOR_NEAR(actual, expected, rtol, atol) \
  EXPECT_EQ(::switchyard::testing::compare_tensors((actual), (expected), (rtol), (atol)), "")
