// No option is silently ignored: an option no partition honours is a warning in the report
// (Executable::warnings; the CLI prints it), or an error under --fallback strict.
#include <gtest/gtest.h>

#include "compiler/dense_model.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

// On the cpu alone, so a machine with a GPU gives the same warnings.
Executable compile_dense(Options o) {
  o.num_threads = 1;
  if (o.device.empty()) o.compute_units = "cpu_only";
  return Model::from_graph(dense_graph()).compile(o);
}

TEST(UnhonouredOptions, PrecisionAndGraphsWithoutAGpuAreWarnings) {
  EXPECT_TRUE(compile_dense({}).warnings().empty());
  Options fp16;
  fp16.precision = "fp16";
  std::vector<std::string> w = compile_dense(fp16).warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0],
            "--precision fp16 has no effect: no partition runs on a GPU (the nodes run on cpu, in "
            "fp32)");
  // Nor does a simulated device.
  Options sim = fp16;
  sim.sim_devices = 1;
  sim.device = "sim:0";
  sim.pins = {"*=sim:0"};
  sim.precision = "bf16";
  sim.cuda_graphs = false;
  Executable on_sim = compile_dense(sim);
  w = on_sim.warnings();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("--precision bf16 has no effect"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("(the nodes run on sim:0, in fp32)"), std::string::npos) << w[0];
  EXPECT_EQ(w[1],
            "--no-cuda-graphs has no effect: no partition runs on a GPU (the nodes run on "
            "sim:0)");
  EXPECT_NE(on_sim.explain().find("warning: --no-cuda-graphs has no effect"), std::string::npos);
  // Saved and loaded, the warnings are the same (not repeated).
  std::string path = ::testing::TempDir() + "/unhonoured.syx";
  on_sim.save(path);
  Options load;
  load.sim_devices = 1;
  EXPECT_EQ(Executable::load(path, load).warnings(), w);
}

TEST(UnhonouredOptions, AreErrorsUnderStrictFallback) {
  Options o;
  o.precision = "tf32";
  o.fallback = "strict";
  expect_error([&] { compile_dense(o); }, ErrorCode::InvalidArgument,
               "--precision tf32 has no effect: no partition runs on a GPU (the nodes run on cpu, "
               "in fp32) — an error under --fallback strict");
  o.precision = "fp32";
  o.cuda_graphs = false;
  expect_error([&] { compile_dense(o); }, ErrorCode::InvalidArgument, "--no-cuda-graphs");
}

}  // namespace
}  // namespace switchyard::testing
