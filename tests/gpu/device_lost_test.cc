// A sticky device fault (a kernel writing through a bad pointer, from the plugin's test hook):
// the error is DeviceLost, GPU executables then fail fast with DeviceLost, and CPU executables
// keep working. Its own executable, since the fault ends CUDA for the whole process.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

std::unique_ptr<ir::Graph> relu_graph() {
  auto g = std::make_unique<ir::Graph>("relu");
  ir::Value* x = g->add_input("X", ir::Type::tensor(ir::DType::Float32, ir::Shape{4, 4}));
  g->add_output(g->add_node("Relu", "relu", {x}, {"Y"})->output(0));
  return g;
}

TEST(CudaDeviceLost, StickyFaultIsDeviceLostAndTheCpuKeepsWorking) {
  SY_SKIP_WITHOUT_GPU();
  Options gpu_o;
  gpu_o.device = "cuda:0";
  gpu_o.fallback = "strict";
  Executable gpu = Model::from_graph(relu_graph()).compile(gpu_o);
  Options cpu_o;
  cpu_o.compute_units = "cpu_only";
  Executable cpu = Model::from_graph(relu_graph()).compile(cpu_o);
  ir::Tensor x = random_tensor(ir::DType::Float32, {4, 4}, 1);
  gpu.internal().run({ir::Datum(x)});

  std::string library;
  for (const BackendStatus& b : backend_status())
    if (b.name == "cuda") library = b.library;
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << library;
  auto fault = reinterpret_cast<void (*)(int)>(dlsym(handle, "switchyard_cuda_test_fault"));
  ASSERT_NE(fault, nullptr);
  expect_error([&] { fault(0); }, ErrorCode::DeviceLost, "cuda:0");

  expect_error([&] { gpu.internal().run({ir::Datum(x)}); }, ErrorCode::DeviceLost, "cuda:0");
  expect_error([&] { Model::from_graph(relu_graph()).compile(gpu_o); }, ErrorCode::DeviceLost,
               "cuda:0");
  auto out = cpu.internal().run({ir::Datum(x)});
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ(out[0].tensor.data<float>()[i], std::max(0.0f, x.data<float>()[i]));
}

}  // namespace
}  // namespace switchyard::testing
