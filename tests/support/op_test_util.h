// Test helpers: build a one-node graph, or a small graph of any value kinds, run it on the CPU
// backend through the real pipeline (type inference, verifier, GraphProgram, a poisoned pool),
// seeded random tensors, index arithmetic for references, comparison.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ir/check.h"
#include "ir/graph.h"

namespace switchyard::runtime {
class GraphProgram;
}

namespace switchyard::testing {

// The IR names the op tests (which live in this namespace) use unqualified.
using ir::Attribute;
using ir::DType;
using ir::Tensor;

struct OpCase {
  std::string op;
  /// nullopt = omitted optional input.
  std::vector<std::optional<ir::Tensor>> inputs;
  std::vector<ir::Attribute> attributes;
  int num_outputs = 1;
  /// Inputs given as initializers (constants) instead of graph inputs; empty = none.
  std::vector<bool> constant_inputs;
};

/// An OpCase with every field set (aggregate initialisation would leave some to warnings).
OpCase make_case(std::string op, std::vector<std::optional<ir::Tensor>> inputs,
                 std::vector<ir::Attribute> attributes = {}, int num_outputs = 1,
                 std::vector<bool> constant_inputs = {});

/// Runs the op on the CPU backend; returns its outputs.
std::vector<ir::Datum> run_op(const OpCase& c);
/// Same, first output as a tensor.
ir::Tensor run_op1(const OpCase& c);
/// Builds the graph of an OpCase (types inferred, verified).
std::unique_ptr<ir::Graph> build_op_graph(const OpCase& c);
/// Runs a compiled program on `inputs` with a fresh poisoned pool and `num_threads` threads.
std::vector<ir::Datum> run_program(const runtime::GraphProgram& program,
                                   std::vector<ir::Datum> inputs, int num_threads = 2);
/// Calls check(thread, run) `runs` times on each of `num_threads` concurrent threads; check
/// returns "" on success, else a description of the mismatch. Returns each thread's last
/// mismatch ("" where there was none).
std::vector<std::string> run_concurrently(int num_threads, int runs,
                                          const std::function<std::string(int, int)>& check);
/// Expects run_op(c) to throw an Error naming node 'node' and containing `fragment`.
void expect_error_naming_node(const OpCase& c, const std::string& fragment);
/// Expects `f` to throw an Error of `code` containing `fragment`.
void expect_error(const std::function<void()>& f, ErrorCode code, const std::string& fragment);

/// A graph of a few nodes whose inputs may be tensors, sequences or optionals, fed with values
/// and run on the CPU backend with a poisoned pool.
class GraphCase {
 public:
  explicit GraphCase(const std::string& graph_name = "main");
  ~GraphCase();
  ir::Graph& graph() { return *graph_; }
  /// Adds a graph input of `type`, fed with `value`.
  ir::Value* input(const std::string& name, ir::Type type, ir::Datum value);
  /// Adds a tensor input typed by t's dtype and shape, fed with t.
  ir::Value* tensor(const std::string& name, const ir::Tensor& t);
  /// Marks `outputs` as graph outputs, infers types, verifies and compiles the graph; throws
  /// what those steps throw.
  void finish(std::vector<ir::Value*> outputs);
  /// Runs the compiled graph on the feeds (two threads); returns the outputs.
  std::vector<ir::Datum> run() const;
  /// finish(outputs), then run().
  std::vector<ir::Datum> run(std::vector<ir::Value*> outputs);
  /// The value of one output: run({output})[0].
  ir::Datum run1(ir::Value* output);
  /// Replaces the value fed to input i (inputs count in the order they were added).
  void set_feed(size_t i, ir::Datum d);

 private:
  std::unique_ptr<ir::Graph> graph_;
  std::vector<ir::Datum> feeds_;
  std::unique_ptr<runtime::GraphProgram> program_;
};

/// Same dtype, shape and bytes (bit for bit: NaN payloads and signed zeros count).
bool same_bits(const ir::Tensor& a, const ir::Tensor& b);

/// Seeded uniform values in [lo, hi) (integers: rounded; bool: random).
ir::Tensor random_tensor(ir::DType dtype, std::vector<int64_t> shape, uint64_t seed,
                         double lo = -1.0, double hi = 1.0);
/// Seeded values of any dtype: numbers as random_tensor in [-50, 50); strings "s<k>", k an
/// integer in [0, 50).
ir::Tensor random_any(ir::DType dtype, std::vector<int64_t> shape, uint64_t seed);
/// A tensor of the given values (converted to dtype).
ir::Tensor tensor_of(ir::DType dtype, std::vector<int64_t> shape,
                     const std::vector<double>& values);
/// An int64 1-D tensor.
ir::Tensor int64_tensor(const std::vector<int64_t>& values);
/// A string tensor of the given values (row-major).
ir::Tensor string_tensor(std::vector<int64_t> shape, const std::vector<std::string>& values);
/// The values of a string tensor.
std::vector<std::string> string_values(const ir::Tensor& t);
/// An int64 scalar (rank 0) tensor.
ir::Tensor int64_scalar(int64_t value);
/// A bool scalar (rank 0) tensor.
ir::Tensor bool_scalar(bool value);
/// A strings attribute.
ir::Attribute strings_attr(const std::string& name, std::vector<std::string> values);
/// Values as doubles (any numeric dtype).
std::vector<double> to_doubles(const ir::Tensor& t);
/// "node: attribute" for every attribute of a node of `g` whose name starts with "_sy": the
/// private attributes fused nodes once carried; passes now attach typed annotations instead.
std::vector<std::string> private_attributes(const ir::Graph& g);

/// The product of `dims` (1 for none).
int64_t product(const std::vector<int64_t>& dims);
/// Row-major strides of `shape`, in elements.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape);
/// The index of element `linear` of a row-major `shape`.
std::vector<int64_t> unravel(int64_t linear, const std::vector<int64_t>& shape);
/// The row-major offset of `index` in `shape`.
int64_t ravel(const std::vector<int64_t>& index, const std::vector<int64_t>& shape);

/// Checks dtype, shape and |a-e| <= atol + rtol*|e| per element (NaN matches NaN). Returns an
/// empty string when equal, else a description of the first mismatches.
std::string compare_tensors(const ir::Tensor& actual, const ir::Tensor& expected, double rtol,
                            double atol);
/// Expects a and e equal in dtype, shape and every element.
void expect_same(const ir::Tensor& a, const ir::Tensor& e);
/// Expects d to be a sequence of tensors equal to `expected`.
void expect_sequence(const ir::Datum& d, const std::vector<ir::Tensor>& expected);

}  // namespace switchyard::testing

#define EXPECT_TENSOR_NEAR(actual, expected, rtol, atol) \
  EXPECT_EQ(::switchyard::testing::compare_tensors((actual), (expected), (rtol), (atol)), "")
