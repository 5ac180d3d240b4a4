// GPU-only tests of the pool family (src/backends/cuda/kernels/pool.cc): the --precision
// fp16/bf16 runs of MaxPool, AveragePool and the global pools against the cpu, and the
// channels-last pools (a pool after a 16-bit convolution reads and writes NHWC:
// backends/cuda/layout.h), checked by value and by the trace. Every pool, window attribute and
// dtype at fp32 against a plain reference runs in the op harness (tests/harness/cases/pool.cc),
// on cpu, sim:0 and cuda:0.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "runtime/profiler.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

const std::vector<std::string> kLowPrecisions = {"fp16", "bf16"};

struct Tolerance {
  double rtol;
  double atol;
};

constexpr Tolerance kLowPrecision = {2e-2, 2e-2};

// Window attributes of one case; empty lists are left out (the op's defaults).
struct Window {
  std::vector<int64_t> x;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
  std::string auto_pad = {};
  int64_t ceil_mode = 0;
};

std::vector<Attribute> window_attrs(const Window& w) {
  std::vector<Attribute> a = {Attribute::make_ints("kernel_shape", w.kernel)};
  if (!w.strides.empty()) a.push_back(Attribute::make_ints("strides", w.strides));
  if (!w.dilations.empty()) a.push_back(Attribute::make_ints("dilations", w.dilations));
  if (!w.pads.empty()) a.push_back(Attribute::make_ints("pads", w.pads));
  if (!w.auto_pad.empty()) a.push_back(Attribute::make_string("auto_pad", w.auto_pad));
  if (w.ceil_mode) a.push_back(Attribute::make_int("ceil_mode", w.ceil_mode));
  return a;
}

std::string describe(const Window& w) {
  return "x " + shape_to_string(w.x) + " kernel " + shape_to_string(w.kernel) + " strides " +
         shape_to_string(w.strides) + " dilations " + shape_to_string(w.dilations) + " pads " +
         shape_to_string(w.pads) + " auto_pad '" + w.auto_pad + "' ceil " +
         std::to_string(w.ceil_mode);
}

// Random data; 8-bit integers over their range (many ties, which the first tap must win).
Tensor pool_input(DType dtype, const std::vector<int64_t>& shape, uint64_t seed) {
  if (dtype == DType::Int8) return random_tensor(dtype, shape, seed, -128.0, 127.0);
  if (dtype == DType::UInt8) return random_tensor(dtype, shape, seed, 0.0, 255.0);
  return random_tensor(dtype, shape, seed, -2.0, 2.0);
}

// Windows covering the attribute variants; each is run by every windowed pool.
const std::vector<Window>& windows() {
  static const std::vector<Window> w = {
      {{1, 64, 112, 112}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},            // resnet50 stem
      {{1, 96, 111, 111}, {3, 3}, {2, 2}, {}, {}, {}, 1},               // squeezenet, ceil_mode
      {{2, 5, 17}, {3}, {2}},                                           // 1-D
      {{2, 3, 7, 8, 9}, {2, 3, 2}, {2, 1, 2}, {}, {1, 0, 1, 0, 1, 1}},  // 3-D, uneven pads
      {{2, 3, 13, 11}, {3, 3}, {1, 2}, {2, 2}, {2, 1, 2, 1}},           // dilations
      {{2, 3, 9, 10}, {3, 2}, {2, 3}, {}, {}, "SAME_UPPER"},
      {{2, 3, 9, 10}, {3, 2}, {2, 3}, {}, {}, "SAME_LOWER"},
      {{2, 3, 9, 10}, {4, 3}, {2, 2}, {}, {}, "VALID"},
      // ceil_mode: the last window starts in the end padding and reaches past it.
      {{2, 3, 6, 6}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}, {}, 1},
      {{1, 2, 7, 5}, {2, 3}, {3, 2}, {2, 1}, {0, 1, 2, 0}, {}, 1},
      {{3, 4, 1, 1}, {1, 1}},  // 1x1 planes
      {{0, 3, 8, 8}, {2, 2}},  // empty batch
  };
  return w;
}

TEST(CudaPool, LowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 700;
  const Window resnet_stem = windows()[0];
  const Window squeezenet = windows()[1];
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(make_case("MaxPool", {pool_input(DType::Float32, resnet_stem.x, ++seed)},
                                     window_attrs(resnet_stem)),
                           kLowPrecision.rtol, kLowPrecision.atol, precision);
    expect_gpu_matches_cpu(make_case("MaxPool", {pool_input(DType::Float32, squeezenet.x, ++seed)},
                                     window_attrs(squeezenet)),
                           kLowPrecision.rtol, kLowPrecision.atol, precision);
    std::vector<Attribute> avg = window_attrs(windows()[8]);
    avg.push_back(Attribute::make_int("count_include_pad", 1));
    expect_gpu_matches_cpu(
        make_case("AveragePool", {pool_input(DType::Float32, {2, 32, 28, 28}, ++seed)}, avg),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
    expect_gpu_matches_cpu(
        make_case("GlobalAveragePool", {pool_input(DType::Float32, {2, 2048, 7, 7}, ++seed)}),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
    expect_gpu_matches_cpu(
        make_case("GlobalMaxPool", {pool_input(DType::Float32, {1, 1280, 7, 7}, ++seed)}),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

// x -> 1x1 Conv -> `op` (window attributes `attrs`): under --precision fp16/bf16 the pool joins
// the convolution's channels-last region. Compared with the cpu, and the trace must show the
// pool's result transposed back (its own Transpose) while the Conv's is not.
void expect_channels_last_pool_matches_cpu(const std::string& op, const std::vector<int64_t>& x,
                                           const std::vector<Attribute>& attrs, uint64_t seed,
                                           const std::string& precision) {
  auto graph = [&] {
    auto g = std::make_unique<ir::Graph>("main");
    ir::Value* in = g->add_input("x", ir::Type::tensor(DType::Float32, ir::make_shape(x)));
    // Weights of scale 1/sqrt(C): the conv's result stays O(1), so its own 16-bit rounding
    // stays well inside the tolerance and a misplaced channel or position does not.
    const double bound = 1.0 / std::sqrt(static_cast<double>(x[1]));
    ir::Value* w = g->add_constant(
        "w", random_tensor(DType::Float32, {x[1], x[1], 1, 1}, seed, -bound, bound));
    ir::Value* y = g->add_node("Conv", "conv", {in, w}, {"y"})->output(0);
    ir::Node* pool = g->add_node(op, "pool", {y}, {"p"});
    for (const Attribute& a : attrs) pool->set_attribute(a);
    g->add_output(pool->output(0));
    return g;
  };
  std::map<std::string, Tensor> feeds = {
      {"x", random_tensor(DType::Float32, x, seed + 1, -2.0, 2.0)}};
  Options cpu;
  cpu.compute_units = "cpu_only";
  cpu.num_threads = 2;
  Options gpu;
  gpu.device = "cuda:0";
  gpu.fallback = "strict";
  gpu.precision = precision;
  std::map<std::string, Tensor> want = Model::from_graph(graph()).compile(cpu).run(feeds);
  Executable exe = Model::from_graph(graph()).compile(gpu);
  std::map<std::string, Tensor> got = exe.run(feeds);
  EXPECT_EQ(compare_tensors(got.at("p"), want.at("p"), kLowPrecision.rtol, kLowPrecision.atol), "");
  std::map<std::string, ir::Datum> datum_feeds = {{"x", ir::Datum(feeds.at("x"))}};
  runtime::Profiler profiler;
  exe.internal().run(datum_feeds, nullptr, &profiler);
  std::set<std::string> on_gpu;
  for (const runtime::ProfileEvent& e : profiler.events())
    if (e.category == "Node" && e.device == "cuda:0") on_gpu.insert(e.name);
  EXPECT_TRUE(on_gpu.count("pool/to_nchw")) << "the pool did not run channels-last";
  EXPECT_FALSE(on_gpu.count("conv/to_nchw")) << "the conv's result left the region";
}

TEST(CudaPool, ChannelsLastAfterConvolution) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (const std::string& precision : kLowPrecisions)
    for (const Window& w : windows()) {
      if (w.x.size() != 4 || w.x[0] == 0) continue;
      SCOPED_TRACE(precision + " " + describe(w));
      expect_channels_last_pool_matches_cpu("MaxPool", w.x, window_attrs(w), seed += 3, precision);
      for (int64_t include_pad : {0, 1}) {
        std::vector<Attribute> avg = window_attrs(w);
        avg.push_back(Attribute::make_int("count_include_pad", include_pad));
        expect_channels_last_pool_matches_cpu("AveragePool", w.x, avg, seed += 3, precision);
      }
      std::vector<Attribute> lp = window_attrs(w);
      lp.push_back(Attribute::make_int("p", 2));
      expect_channels_last_pool_matches_cpu("LpPool", w.x, lp, seed += 3, precision);
    }
  for (const std::string& precision : kLowPrecisions)
    for (const std::vector<int64_t>& x :
         {std::vector<int64_t>{2, 2048, 7, 7}, {1, 1280, 7, 7}, {3, 5, 1, 1}, {2, 3, 33, 35}})
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
        SCOPED_TRACE(precision + " " + op + " x " + shape_to_string(x));
        expect_channels_last_pool_matches_cpu(op, x, {}, seed += 3, precision);
      }
}

}  // namespace
}  // namespace switchyard::testing
