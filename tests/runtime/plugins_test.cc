// Backend plugins as every machine sees them (CI has no GPU): the CUDA backend's state is
// reported with a reason, the cpu is always the first device, and GPU options are validated
// whether or not a GPU exists.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

TEST(Plugins, TheCudaBackendReportsItsState) {
  std::vector<BackendStatus> all = backend_status();
  ASSERT_EQ(all.size(), 3u);
  // The built-in backends first: always there, no library.
  EXPECT_EQ(all[0].name, "cpu");
  EXPECT_EQ(all[1].name, "sim");
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(all[i].loaded);
    EXPECT_TRUE(all[i].library.empty());
    EXPECT_FALSE(all[i].detail.empty());
  }
  EXPECT_NE(all[0].detail.find("op types"), std::string::npos) << all[0].detail;
  const BackendStatus& cuda = all[2];
  EXPECT_EQ(cuda.name, "cuda");
  EXPECT_FALSE(cuda.library.empty());
  // Loaded or not, it says what happened: "1 device: …", "no CUDA device: …", "… not found".
  EXPECT_FALSE(cuda.detail.empty());
  std::vector<DeviceDescription> devices = describe_devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0].id, "cpu");
  for (const DeviceDescription& d : devices)
    if (d.kind == "cuda") {
      EXPECT_TRUE(cuda.loaded);
      EXPECT_FALSE(d.uuid.empty());
    }
}

std::unique_ptr<ir::Graph> relu_graph() {
  auto g = std::make_unique<ir::Graph>("relu");
  ir::Value* x = g->add_input("X", ir::Type::tensor(ir::DType::Float32, ir::Shape{2}));
  g->add_output(g->add_node("Relu", "relu", {x}, {"Y"})->output(0));
  return g;
}

TEST(Plugins, PrecisionIsValidatedWithOrWithoutAGpu) {
  Options o;
  o.precision = "fp8";
  expect_error([&] { Model::from_graph(relu_graph()).compile(o); }, ErrorCode::InvalidArgument,
               "--precision 'fp8'");
  for (const char* p : {"fp32", "tf32", "fp16", "bf16"}) {
    Options ok;
    ok.precision = p;
    ok.compute_units = "cpu_only";
    Executable exe = Model::from_graph(relu_graph()).compile(ok);
    EXPECT_EQ(exe.placement_summary().rfind("cpu:", 0), 0u) << exe.placement_summary();
  }
}

}  // namespace
}  // namespace switchyard::testing
