// The cross-backend op harness: one list of cases per op family (tests/harness/cases/), each
// run on every backend this build and machine have — cpu, sim:0 and cuda:0 — through the real
// compile path with the node pinned to that device under --fallback strict and poisoned
// buffers, and compared with a plain reference written in the test (or, for a case without
// one, with the cpu's result). Each backend has one skip list (skip_lists.cc), a reason per
// entry; an entry that names no case is an error. tests/README.md says how to add a case.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/op_test_util.h"

namespace switchyard::testing::harness {

/// |actual - expected| <= atol + rtol * |expected| per element (NaN matches NaN).
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

/// A case's inputs in input order; nullopt = an omitted optional input.
using Inputs = std::vector<std::optional<ir::Tensor>>;
/// The expected outputs of a case from its inputs, computed by the test itself (in double, or
/// exactly), never by a backend: one tensor per output, of the output's dtype and shape.
using Reference = std::function<std::vector<ir::Tensor>(const Inputs&)>;

/// Nodes in front of a case's node, for patterns the backends fuse (Add -> LayerNormalization,
/// Transpose -> MatMul): adds them to the graph, reading the graph's values of the case's inputs
/// (`inputs`, nullptr where omitted), and returns the values the case's node reads. They are
/// not pinned; the device under test is the only one, so they run there (or the compile fails).
using Prelude =
    std::function<std::vector<ir::Value*>(ir::Graph&, const std::vector<ir::Value*>& inputs)>;

/// One node run on seeded data.
struct Case {
  /// Unique within the family; the skip lists name it as "<family>/<name>".
  std::string name;
  std::string op;
  Inputs inputs;
  std::vector<ir::Attribute> attributes = {};
  int num_outputs = 1;
  /// Inputs given as initializers instead of graph inputs (index i; missing = false).
  std::vector<bool> constant_inputs = {};
  /// The op's domain: "" (ONNX) or "ai.switchyard".
  std::string domain = {};
  /// Empty: every backend but the cpu is compared with the cpu's result.
  Reference reference = {};
  /// For float outputs; integer and bool outputs must match exactly.
  Tolerance tolerance = {};
  /// Empty: the node reads the case's inputs directly.
  Prelude prelude = {};
};

/// A skip-list entry: the case it names ("<family>/<case name>"; a trailing '*' matches any
/// rest) is not run on the backend, for `reason`.
struct SkipEntry {
  std::string pattern;
  std::string reason;
};

/// The backends' skip lists (skip_lists.cc): "cpu", "sim" or "cuda".
const std::vector<SkipEntry>& skip_list(const std::string& backend);
/// The families that have a case list (the first part of every skip entry).
const std::vector<std::string>& known_families();

/// "" when cuda:0 can run cases here, else why not (no CUDA backend in this build, the plugin
/// did not load, no device).
std::string cuda_unavailable_reason();

/// Runs every case of `family` on `device` ("cpu", "sim:0", "cuda:0") and adds a test failure
/// naming the case for each mismatch, error or fallback; cases the backend's skip list names
/// are not run. `cases` is called once per process.
void run_family(const std::string& family, const std::function<std::vector<Case>()>& cases,
                const std::string& device);
/// Fails for every entry of a skip list that starts with "<family>/" and matches no case, for
/// a repeated case name, and for any entry whose family is not known.
void check_skip_lists(const std::string& family, const std::function<std::vector<Case>()>& cases);

// ---- helpers for references ---------------------------------------------------------------

/// Numpy broadcast of shapes.
std::vector<int64_t> broadcast_shapes(const std::vector<std::vector<int64_t>>& shapes);
/// out[i] = f(values of every input at i's broadcast position), as a tensor of `dtype`.
ir::Tensor map_broadcast(const std::vector<const ir::Tensor*>& inputs, ir::DType dtype,
                         const std::function<double(const std::vector<double>&)>& f);
/// As map_broadcast, exactly, for integer and bool tensors: f sees int64 values (uint64 as its
/// bit pattern) and returns the result's bits, which are truncated to `dtype`.
ir::Tensor map_broadcast_int(const std::vector<const ir::Tensor*>& inputs, ir::DType dtype,
                             const std::function<int64_t(const std::vector<int64_t>&)>& f);
/// Element i of an integer or bool tensor, exactly (uint64 as its bit pattern).
int64_t int_at(const ir::Tensor& t, int64_t i);
/// Stores the low bits of `bits` as element i of an integer or bool tensor.
void set_int(ir::Tensor& t, int64_t i, int64_t bits);
/// Bit-exact data movement for any fixed-size dtype: a tensor of `out_shape` whose element at
/// each index is x's element at flat index source(index), or, where that is -1, `fill`'s first
/// element (zero bytes when fill is null).
ir::Tensor move_elements(const ir::Tensor& x, const std::vector<int64_t>& out_shape,
                         const std::function<int64_t(const std::vector<int64_t>&)>& source,
                         const ir::Tensor* fill = nullptr);
/// Wraps an exact integer value into dtype's range, as integer arithmetic in dtype does.
double wrap_to(ir::DType dtype, double value);
/// The shape and name fragments cases are named with: "f32", "[2,3]".
std::string dtype_tag(ir::DType dtype);
std::string shape_tag(const std::vector<int64_t>& shape);
/// Values of a tensor as double (any numeric dtype).
inline std::vector<double> values_of(const ir::Tensor& t) { return to_doubles(t); }
/// The axis in [0, rank) of a possibly negative `axis`.
int64_t normalize_axis(int64_t axis, size_t rank);

}  // namespace switchyard::testing::harness

/// Defines the GoogleTest tests of one family's case list (a function returning
/// std::vector<Case>): one test per backend (cuda skips with one line where no GPU is
/// usable) and one that checks the skip lists against the cases.
#define SY_HARNESS_FAMILY(family, make_cases)                                         \
  TEST(Harness_##family, cpu) {                                                       \
    ::switchyard::testing::harness::run_family(#family, make_cases, "cpu");           \
  }                                                                                   \
  TEST(Harness_##family, sim) {                                                       \
    ::switchyard::testing::harness::run_family(#family, make_cases, "sim:0");         \
  }                                                                                   \
  TEST(Harness_##family, cuda) {                                                      \
    std::string sy_why_ = ::switchyard::testing::harness::cuda_unavailable_reason();  \
    if (!sy_why_.empty())                                                             \
      GTEST_SKIP() << "no GPU, cuda arm of harness_" #family " skipped: " << sy_why_; \
    ::switchyard::testing::harness::run_family(#family, make_cases, "cuda:0");        \
  }                                                                                   \
  TEST(Harness_##family, SkipListsNameCases) {                                        \
    ::switchyard::testing::harness::check_skip_lists(#family, make_cases);            \
  }
