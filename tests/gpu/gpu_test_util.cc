#include "gpu/gpu_test_util.h"

#include "compiler/compiler.h"
#include "ir/graph.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {

std::string gpu_unavailable_reason() {
  static const std::string reason = [] {
    for (const BackendStatus& b : backend_status()) {
      if (b.name != "cuda") continue;
      if (!b.loaded) return "the CUDA backend did not load: " + b.detail;
      for (const std::string& d : available_devices())
        if (d == "cuda:0") return std::string();
      return "the CUDA backend loaded but found no device: " + b.detail;
    }
    return std::string("this build has no CUDA backend");
  }();
  return reason;
}

namespace {

// The OpCase's graph inputs (constants excluded) in order, as values to feed.
std::vector<ir::Datum> feeds_of(const OpCase& c) {
  std::vector<ir::Datum> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i]) continue;
    if (i < c.constant_inputs.size() && c.constant_inputs[i]) continue;
    feeds.emplace_back(*c.inputs[i]);
  }
  return feeds;
}

std::vector<ir::Datum> run_case(const OpCase& c, Options options) {
  options.num_threads = 2;
  Executable exe = Model::from_graph(build_op_graph(c)).compile(options);
  return exe.internal().run(feeds_of(c));
}

}  // namespace

std::vector<ir::Datum> run_op_gpu(const OpCase& c, const std::string& precision) {
  Options o;
  o.device = "cuda:0";
  o.fallback = "strict";
  o.precision = precision;
  return run_case(c, o);
}

void expect_gpu_matches_cpu(const OpCase& c, double rtol, double atol,
                            const std::string& precision) {
  Options cpu;
  cpu.compute_units = "cpu_only";
  std::vector<ir::Datum> want = run_case(c, cpu);
  std::vector<ir::Datum> got = run_op_gpu(c, precision);
  ASSERT_EQ(got.size(), want.size()) << c.op;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(got[i].is_tensor() && want[i].is_tensor()) << c.op << " output " << i;
    const ir::Tensor& g = got[i].tensor;
    const ir::Tensor& w = want[i].tensor;
    bool exact = !ir::dtype_is_float(w.dtype());
    EXPECT_EQ(compare_tensors(g, w, exact ? 0 : rtol, exact ? 0 : atol), "")
        << c.op << " output " << i << " at precision " << precision;
  }
}

}  // namespace switchyard::testing
