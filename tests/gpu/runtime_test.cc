// The CUDA backend's runtime on cuda:0: discovery, copies, CUDA-graph capture and replay
// (results held across replays, new shapes, concurrent runs), --memory-limit and out-of-memory
// recovery, host inputs for shape values, --precision with a float32-min mask, the trace.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "runtime/profiler.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

constexpr ir::DType kF32 = ir::DType::Float32;

// X[N,64] → Add(X, X) → Mul(·, C) → Relu → Y.
std::unique_ptr<ir::Graph> chain_graph() {
  auto g = std::make_unique<ir::Graph>("chain");
  ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("N"), 64}));
  ir::Value* c = g->add_constant("C", random_tensor(kF32, {64}, 5));
  ir::Value* a = g->add_node("Add", "add", {x, x}, {"a"})->output(0);
  ir::Value* m = g->add_node("Mul", "mul", {a, c}, {"m"})->output(0);
  g->add_output(g->add_node("Relu", "relu", {m}, {"Y"})->output(0));
  return g;
}

Executable compile_on(std::unique_ptr<ir::Graph> g, Options o) {
  o.num_threads = 2;
  return Model::from_graph(std::move(g)).compile(o);
}

Options gpu_options() {
  Options o;
  o.device = "cuda:0";
  o.fallback = "strict";
  return o;
}

Options cpu_options() {
  Options o;
  o.compute_units = "cpu_only";
  return o;
}

ir::Tensor run1(const Executable& exe, const ir::Tensor& x) {
  return exe.internal().run({ir::Datum(x)})[0].tensor;
}

TEST(CudaRuntime, DiscoversTheDevice) {
  SY_SKIP_WITHOUT_GPU();
  bool found = false;
  for (const DeviceDescription& d : describe_devices()) {
    if (d.id != "cuda:0") continue;
    found = true;
    EXPECT_EQ(d.kind, "cuda");
    EXPECT_FALSE(d.name.empty());
    EXPECT_EQ(d.uuid.rfind("GPU-", 0), 0u) << d.uuid;
    EXPECT_GT(d.memory_bytes, uint64_t{1} << 30);
    EXPECT_GT(d.sm_count, 0);
    EXPECT_FALSE(d.compute_capability.empty());
  }
  EXPECT_TRUE(found);
}

TEST(CudaRuntime, GraphReplayKeepsEarlierResultsAndFollowsNewInputs) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_on(chain_graph(), gpu_options());
  Executable cpu = compile_on(chain_graph(), cpu_options());
  EXPECT_NE(gpu.placement_summary().find("cuda:0"), std::string::npos);
  // Runs 1 (eager), 2 (captured), 3.. (replayed) of one shape, then another shape; every
  // result is checked after all runs, so a replay overwriting an earlier result would show.
  std::vector<ir::Tensor> inputs, outputs;
  for (int k = 0; k < 6; ++k) {
    inputs.push_back(random_tensor(kF32, {k < 4 ? 8 : 3, 64}, 100 + k));
    outputs.push_back(run1(gpu, inputs.back()));
  }
  for (size_t k = 0; k < inputs.size(); ++k)
    EXPECT_TENSOR_NEAR(outputs[k], run1(cpu, inputs[k]), 1e-6, 1e-6) << "run " << k;
}

TEST(CudaRuntime, GraphsCanBeTurnedOff) {
  SY_SKIP_WITHOUT_GPU();
  Options o = gpu_options();
  o.cuda_graphs = false;
  Executable gpu = compile_on(chain_graph(), o);
  Executable cpu = compile_on(chain_graph(), cpu_options());
  for (int k = 0; k < 3; ++k) {
    ir::Tensor x = random_tensor(kF32, {5, 64}, 7 + k);
    EXPECT_TENSOR_NEAR(run1(gpu, x), run1(cpu, x), 1e-6, 1e-6);
  }
}

TEST(CudaRuntime, ConcurrentRunsAtSeveralShapes) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_on(chain_graph(), gpu_options());
  Executable cpu = compile_on(chain_graph(), cpu_options());
  auto mismatches = run_concurrently(4, 25, [&](int thread, int run) -> std::string {
    ir::Tensor x = random_tensor(kF32, {1 + (thread + run) % 3, 64},
                                 static_cast<uint64_t>(1000 * thread + run));
    return compare_tensors(run1(gpu, x), run1(cpu, x), 1e-6, 1e-6);
  });
  for (const std::string& m : mismatches) EXPECT_EQ(m, "");
}

// X[1,64], S int64[2] → Expand(X, S) → ReduceSum(axis 0) → Y[1,64]: the intermediate is as
// large as S asks while the inputs and output stay small.
std::unique_ptr<ir::Graph> expand_graph() {
  auto g = std::make_unique<ir::Graph>("expand_sum");
  ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{1, 64}));
  ir::Value* s = g->add_input("S", ir::Type::tensor(ir::DType::Int64, ir::Shape{2}));
  ir::Value* e = g->add_node("Expand", "expand", {x, s}, {"e"})->output(0);
  ir::Node* r =
      g->add_node("ReduceSum", "sum", {e, g->add_constant("axes", int64_tensor({0}))}, {"Y"});
  g->add_output(r->output(0));
  return g;
}

std::vector<ir::Datum> expand_inputs(int64_t rows) {
  return {ir::Datum(random_tensor(kF32, {1, 64}, 1)), ir::Datum(int64_tensor({rows, 64}))};
}

TEST(CudaRuntime, MemoryLimitGivesOutOfMemoryAndASmallerRunSucceeds) {
  SY_SKIP_WITHOUT_GPU();
  Options o = gpu_options();
  o.memory_limits = {"cuda:0=16M"};
  Executable gpu = compile_on(expand_graph(), o);
  EXPECT_NE(gpu.placement_summary().find("cuda:0"), std::string::npos);
  // 65536 x 64 floats is all of the 16 MiB alone.
  expect_error([&] { gpu.internal().run(expand_inputs(65536)); }, ErrorCode::OutOfMemory, "cuda:0");
  Executable cpu = compile_on(expand_graph(), cpu_options());
  EXPECT_TENSOR_NEAR(gpu.internal().run(expand_inputs(100))[0].tensor,
                     cpu.internal().run(expand_inputs(100))[0].tensor, 1e-5, 1e-5);
}

TEST(CudaRuntime, MemoryLimitIsPerExecutable) {
  SY_SKIP_WITHOUT_GPU();
  // Two executables on one GPU, each under its own 16 MiB: each run of 40000 x 64 floats
  // (10 MiB of intermediates) fits its own budget, though both together would not fit one.
  Options o = gpu_options();
  o.memory_limits = {"cuda:0=16M"};
  Executable a = compile_on(expand_graph(), o);
  Executable b = compile_on(expand_graph(), o);
  // Small integers, so the sum of 40000 rows is exact in float32 in any order.
  ir::Tensor x(kF32, {1, 64});
  for (int64_t i = 0; i < 64; ++i) x.data<float>()[i] = static_cast<float>(i % 17 - 8);
  std::vector<ir::Datum> in = {ir::Datum(x), ir::Datum(int64_tensor({40000, 64}))};
  ir::Tensor from_a = a.internal().run(in)[0].tensor;
  ir::Tensor from_b = b.internal().run(in)[0].tensor;
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(from_a.data<float>()[i], 40000.0f * x.data<float>()[i]) << i;
    EXPECT_EQ(from_b.data<float>()[i], 40000.0f * x.data<float>()[i]) << i;
  }
}

// Inputs already in cuda:0's memory are read there, outputs can stay there (RunOptions
// .outputs_on), and RunStats counts every copy; a caller's CUDA pointer wrapped with
// wrap_device_memory (as DLPack hands torch's) is read in place too. With graphs and without.
TEST(CudaRuntime, DeviceResidentInputsAndOutputsCopyNothing) {
  SY_SKIP_WITHOUT_GPU();
  for (bool graphs : {true, false}) {
    Options o = gpu_options();
    o.cuda_graphs = graphs;
    Executable gpu = compile_on(chain_graph(), o);
    Executable cpu = compile_on(chain_graph(), cpu_options());
    ir::Tensor x = random_tensor(kF32, {8, 64}, 31);
    ir::Tensor once = run1(cpu, x);
    ir::Tensor twice = run1(cpu, once);
    RunOptions stay;
    stay.outputs_on = "cuda:0";
    for (int k = 0; k < 3; ++k) {  // eager, captured, replayed
      RunResult in = gpu.run_values({Datum(x)}, stay);
      EXPECT_EQ(in.stats.copies, 1) << "graphs " << graphs << " run " << k;
      const Tensor& y = in.outputs[0].tensor;
      EXPECT_EQ(gpu.device_of(y), "cuda:0");
      RunResult again = gpu.run_values({in.outputs[0]}, stay);
      EXPECT_EQ(again.stats.copies, 0);
      EXPECT_EQ(again.stats.copied_bytes, 0u);
      Tensor wrapped = gpu.wrap_device_memory("cuda:0", y.dtype(), y.shape(), y.storage(),
                                              const_cast<void*>(y.raw()));
      EXPECT_EQ(gpu.device_of(wrapped), "cuda:0");
      RunResult out = gpu.run_values({Datum(wrapped)});
      EXPECT_EQ(out.stats.copies, 1);  // the result, to the host
      EXPECT_EQ(gpu.device_of(out.outputs[0].tensor), "cpu");
      EXPECT_TENSOR_NEAR(out.outputs[0].tensor, twice, 1e-6, 1e-6);
      // Written into a caller's device buffer (CudaBackend::copy_into), then read back by a run.
      RunOptions into = stay;
      Tensor buffer = gpu.run_values({Datum(x)}, stay).outputs[0].tensor;  // some cuda:0 memory
      into.output_buffers = {{"Y", buffer}};
      RunResult written = gpu.run_values({Datum(x)}, into);
      EXPECT_EQ(written.stats.copies, 2);  // x in, Y into the buffer
      EXPECT_EQ(written.outputs[0].tensor.raw(), buffer.raw());
      EXPECT_TENSOR_NEAR(gpu.run_values({Datum(buffer)}).outputs[0].tensor, twice, 1e-6, 1e-6);
      // `again`'s result, still on cuda:0, read by the cpu-only executable: copied to the host.
      RunResult on_cpu = cpu.run_values({again.outputs[0]});
      EXPECT_EQ(on_cpu.stats.copies, 1);
      EXPECT_TENSOR_NEAR(on_cpu.outputs[0].tensor, run1(cpu, twice), 1e-6, 1e-6);
    }
  }
}

// The CUDA runtime's entry points the caller-stream test uses, from the library the plugin
// loaded (the test itself links no CUDA).
struct Cudart {
  void* lib = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  template <typename F>
  F get(const char* name) const {
    return lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
  }
};

// RunOptions.cuda_stream: a caller's stream writes the input (after ~20 GB of memsets, so the
// write lands well after the run would start without ordering); the run waits for it.
TEST(CudaRuntime, RunsAfterTheCallersStream) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_on(chain_graph(), gpu_options());  // loads the plugin and cudart
  Executable cpu = compile_on(chain_graph(), cpu_options());
  Cudart rt;
  ASSERT_NE(rt.lib, nullptr) << "libcudart.so.13 is not loaded by the plugin";
  auto stream_create = rt.get<int (*)(void**)>("cudaStreamCreate");
  auto stream_sync = rt.get<int (*)(void*)>("cudaStreamSynchronize");
  auto stream_destroy = rt.get<int (*)(void*)>("cudaStreamDestroy");
  auto malloc_ = rt.get<int (*)(void**, size_t)>("cudaMalloc");
  auto free_ = rt.get<int (*)(void*)>("cudaFree");
  auto memset_async = rt.get<int (*)(void*, int, size_t, void*)>("cudaMemsetAsync");
  auto memcpy_async = rt.get<int (*)(void*, const void*, size_t, int, void*)>("cudaMemcpyAsync");
  auto host_alloc = rt.get<int (*)(void**, size_t)>("cudaMallocHost");
  auto host_free = rt.get<int (*)(void*)>("cudaFreeHost");
  ASSERT_TRUE(stream_create && stream_sync && stream_destroy && malloc_ && free_ && memset_async &&
              memcpy_async && host_alloc && host_free);
  ir::Tensor x = random_tensor(kF32, {8, 64}, 41);
  ir::Tensor want = run1(cpu, x);
  void* stream = nullptr;
  ASSERT_EQ(stream_create(&stream), 0);
  const size_t big = size_t{2} << 30;
  void *scratch = nullptr, *input = nullptr, *pinned = nullptr;
  ASSERT_EQ(malloc_(&scratch, big), 0);
  ASSERT_EQ(malloc_(&input, x.nbytes()), 0);
  ASSERT_EQ(host_alloc(&pinned, x.nbytes()), 0);
  std::memcpy(pinned, x.raw(), x.nbytes());
  for (int round = 0; round < 3; ++round) {
    ASSERT_EQ(memset_async(input, 0xFF, x.nbytes(), stream), 0);  // NaN until the write
    ASSERT_EQ(stream_sync(stream), 0);
    for (int k = 0; k < 10; ++k) ASSERT_EQ(memset_async(scratch, k, big, stream), 0);
    ASSERT_EQ(memcpy_async(input, pinned, x.nbytes(), /*cudaMemcpyHostToDevice*/ 1, stream), 0);
    RunOptions after;
    after.cuda_stream = stream;
    Tensor wrapped = gpu.wrap_device_memory("cuda:0", x.dtype(), x.shape(), nullptr, input);
    RunResult r = gpu.run_values({Datum(wrapped)}, after);
    EXPECT_TENSOR_NEAR(r.outputs[0].tensor, want, 1e-6, 1e-6) << "round " << round;
  }
  stream_sync(stream);
  host_free(pinned);
  free_(input);
  free_(scratch);
  stream_destroy(stream);
}

TEST(CudaRuntime, DeviceOutOfMemoryIsTypedAndRecoverable) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_on(expand_graph(), gpu_options());
  uint64_t memory = 0;
  for (const DeviceDescription& d : describe_devices())
    if (d.id == "cuda:0") memory = d.memory_bytes;
  // An intermediate larger than the whole device.
  int64_t rows = static_cast<int64_t>(memory / (64 * sizeof(float))) + 1024;
  expect_error([&] { gpu.internal().run(expand_inputs(rows)); }, ErrorCode::OutOfMemory, "cuda:0");
  Executable cpu = compile_on(expand_graph(), cpu_options());
  EXPECT_TENSOR_NEAR(gpu.internal().run(expand_inputs(1000))[0].tensor,
                     cpu.internal().run(expand_inputs(1000))[0].tensor, 1e-4, 1e-4);
}

// X[N,256] → Relu → Shape → Gather(0) → Concat(·, [16,16]) → Reshape(relu, ·) → Y[N,16,16]:
// the shape chain stays on the host and reaches Reshape as a host input (no copy to cuda:0).
TEST(CudaRuntime, ShapeValuesStayOnTheHost) {
  SY_SKIP_WITHOUT_GPU();
  auto make = [] {
    auto g = std::make_unique<ir::Graph>("shape_chain");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("N"), 256}));
    ir::Value* r = g->add_node("Relu", "relu", {x}, {"r"})->output(0);
    ir::Value* s = g->add_node("Shape", "shape", {r}, {"s"})->output(0);
    ir::Value* n =
        g->add_node("Gather", "take_n", {s, g->add_constant("zero", int64_tensor({0}))}, {"n"})
            ->output(0);
    ir::Node* cat =
        g->add_node("Concat", "dims", {n, g->add_constant("tail", int64_tensor({16, 16}))}, {"d"});
    cat->set_attribute(ir::Attribute::make_int("axis", 0));
    g->add_output(g->add_node("Reshape", "reshape", {r, cat->output(0)}, {"Y"})->output(0));
    return g;
  };
  Options o;
  o.device = "cuda:0";
  Executable gpu = compile_on(make(), o);
  Executable cpu = compile_on(make(), cpu_options());
  std::string report = gpu.explain("json");
  EXPECT_NE(report.find("\"reshape\""), std::string::npos);
  runtime::RunStats stats;
  ir::Tensor x = random_tensor(kF32, {3, 256}, 4);
  auto out = gpu.internal().run({ir::Datum(x)}, &stats);
  EXPECT_TENSOR_NEAR(out[0].tensor, run1(cpu, x), 0, 0);
  // X in, Y out, and the shape value to the host side of cuda:0's partition: nothing else.
  EXPECT_LE(stats.copies, 2) << gpu.explain("text");
}

// An additive attention mask of float32-min must survive fp16 (clamped, not -inf → NaN).
TEST(CudaRuntime, Fp16ClampsFloat32MinConstants) {
  SY_SKIP_WITHOUT_GPU();
  auto make = [] {
    auto g = std::make_unique<ir::Graph>("masked_softmax");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{2, 8}));
    ir::Tensor mask(kF32, {8});
    for (int i = 0; i < 8; ++i) mask.data<float>()[i] = i < 5 ? 0.0f : -3.4028234663852886e38f;
    ir::Value* m = g->add_constant("mask", mask);
    ir::Value* a = g->add_node("Add", "add_mask", {x, m}, {"a"})->output(0);
    ir::Node* sm = g->add_node("Softmax", "softmax", {a}, {"Y"});
    sm->set_attribute(ir::Attribute::make_int("axis", -1));
    g->add_output(sm->output(0));
    return g;
  };
  Options o = gpu_options();
  o.precision = "fp16";
  Executable gpu = compile_on(make(), o);
  Executable cpu = compile_on(make(), cpu_options());
  ir::Tensor x = random_tensor(kF32, {2, 8}, 9);
  ir::Tensor got = run1(gpu, x);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_FALSE(std::isnan(got.data<float>()[i])) << i;
  EXPECT_TENSOR_NEAR(got, run1(cpu, x), 2e-2, 2e-3);
  std::string report = gpu.explain("text");
  EXPECT_NE(report.find("fp16"), std::string::npos) << report;
}

TEST(CudaRuntime, TraceHasEveryNodeOnTheGpuTrack) {
  SY_SKIP_WITHOUT_GPU();
  Executable gpu = compile_on(chain_graph(), gpu_options());
  runtime::Profiler profiler;
  gpu.internal().run({ir::Datum(random_tensor(kF32, {4, 64}, 1))}, nullptr, &profiler);
  std::set<std::string> on_gpu;
  for (const runtime::ProfileEvent& e : profiler.events())
    if (e.category == "Node" && e.device == "cuda:0") on_gpu.insert(e.name);
  // Fusion may fold mul/relu into add's kernel; at least one node event and no cpu nodes.
  EXPECT_FALSE(on_gpu.empty());
  for (const runtime::ProfileEvent& e : profiler.events())
    if (e.category == "Node") EXPECT_EQ(e.device, "cuda:0") << e.name;
}

}  // namespace
}  // namespace switchyard::testing

namespace switchyard::testing {
namespace {

// A pipeline split across a GPU and another device: stages on cuda:0 and sim:0 with the values
// between them copied out of device memory and back in.
TEST(CudaRuntime, PipelineSplitAcrossTheGpuAndAnotherDevice) {
  SY_SKIP_WITHOUT_GPU();
  auto make = [] {
    auto g = std::make_unique<ir::Graph>("mlp");
    ir::Value* v = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("N"), 64}));
    for (int k = 0; k < 6; ++k) {
      ir::Value* w =
          g->add_constant("W" + std::to_string(k), random_tensor(kF32, {64, 64}, 50 + k));
      v = g->add_node("MatMul", "mm" + std::to_string(k), {v, w}, {"mm" + std::to_string(k)})
              ->output(0);
      v = g->add_node("Relu", "relu" + std::to_string(k), {v}, {"r" + std::to_string(k)})
              ->output(0);
    }
    g->add_output(v);
    return g;
  };
  Options o;
  o.device = "cuda:0,sim:0";
  o.split = "pipeline";
  o.sim_devices = 1;
  Executable split = compile_on(make(), o);
  std::string summary = split.placement_summary();
  EXPECT_NE(summary.find("cuda:0"), std::string::npos) << summary;
  EXPECT_NE(summary.find("sim:0"), std::string::npos) << summary;
  Executable cpu = compile_on(make(), cpu_options());
  for (int64_t n : {1, 7}) {
    ir::Tensor x = random_tensor(kF32, {n, 64}, static_cast<uint64_t>(n));
    EXPECT_TENSOR_NEAR(run1(split, x), run1(cpu, x), 1e-4, 1e-4) << summary;
  }
}

}  // namespace
}  // namespace switchyard::testing

namespace switchyard::testing {
namespace {

// Every way of naming the GPU places the graph on cuda:0; so do the defaults.
TEST(CudaRuntime, DeviceFormsAndComputeUnitsReachTheGpu) {
  SY_SKIP_WITHOUT_GPU();
  std::string uuid, name;
  for (const DeviceDescription& d : describe_devices())
    if (d.id == "cuda:0") {
      uuid = d.uuid;
      name = d.name;
    }
  ASSERT_FALSE(uuid.empty());
  std::vector<Options> forms(6);
  forms[0].device = "cuda:0";
  forms[1].device = "cuda:most-memory";
  forms[2].device = "cuda:uuid=" + uuid.substr(0, 12);
  forms[3].device = "cuda:name=" + name.substr(name.size() > 4 ? name.size() - 4 : 0);
  forms[4].compute_units = "cpu_and_gpu";  // no --device: the first GPU by memory
  // forms[5]: every default
  Executable cpu = compile_on(chain_graph(), cpu_options());
  ir::Tensor x = random_tensor(kF32, {2, 64}, 77);
  for (const Options& o : forms) {
    Executable exe = compile_on(chain_graph(), o);
    std::string summary = exe.placement_summary();
    EXPECT_EQ(summary.rfind("cuda:0:", 0), 0u)
        << o.device << " " << o.compute_units << ": " << summary;
    EXPECT_TENSOR_NEAR(run1(exe, x), run1(cpu, x), 1e-6, 1e-6);
  }
  Options cpu_only;
  cpu_only.compute_units = "cpu_only";
  EXPECT_EQ(compile_on(chain_graph(), cpu_only).placement_summary().find("cuda"),
            std::string::npos);
}

}  // namespace
}  // namespace switchyard::testing
