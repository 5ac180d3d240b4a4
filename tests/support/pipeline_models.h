// Small models for runs that overlap on several devices (tests/runtime/async_run_test.cc,
// overlap_test.cc, bench/overlap_bench.cc): a chain of dense layers that a pipeline split cuts in
// two stages, and two independent branches joined at the end; plus --sim-config files with
// simulated timing.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "ir/graph.h"
#include "support/op_test_util.h"

namespace switchyard::testing {

/// A --sim-config (or any) file with `text`, removed when it goes out of scope.
class ScratchFile {
 public:
  explicit ScratchFile(const std::string& text) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sy_overlap_XXXXXX.json").string();
    int fd = ::mkstemps(pattern.data(), 5);
    if (fd < 0) throw std::runtime_error("mkstemps failed");
    ::close(fd);
    path_ = pattern;
    std::ofstream(path_) << text;
  }
  ~ScratchFile() { std::filesystem::remove(path_); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// `count` simulated devices that run every op; with `modelled_timing` each takes the time its
/// cost model gives (`"timing": "model"`) at `gflops`.
inline std::string sim_devices_json(int count, bool modelled_timing, double gflops = 1000) {
  std::string one = "{\"gflops\": " + std::to_string(gflops) +
                    (modelled_timing ? ", \"timing\": \"model\"}" : "}");
  std::string out = "[";
  for (int i = 0; i < count; ++i) out += (i ? ", " : "") + one;
  return out + "]";
}

/// Weights scaled so that activations stay near 1 through many layers.
inline ir::Tensor layer_weights(int64_t width, uint64_t seed) {
  double bound = std::sqrt(3.0 / static_cast<double>(width));
  return random_tensor(ir::DType::Float32, {width, width}, seed, -bound, bound);
}

inline ir::Value* add_node(ir::Graph& g, const std::string& op, const std::string& name,
                           std::vector<ir::Value*> inputs, std::string output = "") {
  if (output.empty()) output = name + "_out";
  return g.add_node(op, name, std::move(inputs), {output})->output(0);
}

/// x [N, width] → `layers` × (MatMul, Add bias, Relu), nodes named "layer<i>/matmul" etc.;
/// output "y".
inline std::unique_ptr<ir::Graph> dense_layers(int layers, int64_t width, uint64_t seed = 1) {
  auto g = std::make_unique<ir::Graph>("dense_layers");
  ir::Value* h = g->add_input(
      "x", ir::Type::tensor(ir::DType::Float32, ir::Shape{ir::Dim("N"), ir::Dim(width)}));
  for (int i = 0; i < layers; ++i) {
    std::string layer = "layer" + std::to_string(i);
    ir::Value* w = g->add_constant(layer + "_w", layer_weights(width, seed + 2 * i));
    ir::Value* b = g->add_constant(
        layer + "_b", random_tensor(ir::DType::Float32, {width}, seed + 2 * i + 1, -0.1, 0.1));
    h = add_node(*g, "MatMul", layer + "/matmul", {h, w});
    h = add_node(*g, "Add", layer + "/bias", {h, b});
    h = add_node(*g, "Relu", layer + "/relu", {h}, i + 1 == layers ? "y" : "");
  }
  g->add_output(h);
  return g;
}

/// x [N, width] → branch "a/..." and branch "b/..." (each `layers` × (MatMul, Tanh)), joined by
/// an Add "join"; outputs "ya", "yb" and "z" (= ya + yb). Pin "a/*" and "b/*" to two devices
/// and "join" to the cpu, and the branches are independent partitions.
inline std::unique_ptr<ir::Graph> two_branches(int layers, int64_t width, uint64_t seed = 7) {
  auto g = std::make_unique<ir::Graph>("two_branches");
  ir::Value* x = g->add_input(
      "x", ir::Type::tensor(ir::DType::Float32, ir::Shape{ir::Dim("N"), ir::Dim(width)}));
  ir::Value* ends[2] = {};
  for (int branch = 0; branch < 2; ++branch) {
    std::string prefix = branch == 0 ? "a/" : "b/";
    ir::Value* h = x;
    for (int i = 0; i < layers; ++i) {
      std::string layer = prefix + "layer" + std::to_string(i);
      ir::Value* w = g->add_constant(layer + "_w", layer_weights(width, seed + 10 * branch + i));
      h = add_node(*g, "MatMul", layer + "/matmul", {h, w});
      h = add_node(*g, "Tanh", layer + "/tanh", {h},
                   i + 1 == layers ? (branch == 0 ? "ya" : "yb") : "");
    }
    ends[branch] = h;
  }
  ir::Value* z = add_node(*g, "Add", "join", {ends[0], ends[1]}, "z");
  g->add_output(ends[0]);
  g->add_output(ends[1]);
  g->add_output(z);
  return g;
}

}  // namespace switchyard::testing
