// The cpu backend's channels-last depthwise convolutions alone: MobileNetV2's 3x3 layers (with
// their ReLU6), EfficientNet-B0's 3x3 and 5x5 layers (with their SiLU) and a few small ones (for
// conv_depthwise.cc's one-thread rule), each between two 1x1 convolutions as in the models (so
// that its input comes from a convolution's output, in the caches as there). Prints the
// depthwise node's median time over profiled runs, at 1 and 2 threads. Run it against another
// build's library (LD_LIBRARY_PATH) for a before and after.
//
// usage: depthwise_conv_bench [RUNS] [LAYER]   (default 300 profiled runs per layer and thread
//        count; LAYER: only the layer of that index in the table)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace {

using namespace switchyard;

struct Layer {
  const char* model;
  int64_t channels, size, kernel, stride;
  bool swish;  // SiLU (EfficientNet), else ReLU6 (MobileNetV2)
};

const Layer kLayers[] = {
    {"mobilenet_v2", 32, 112, 3, 1, false},
    {"mobilenet_v2", 96, 112, 3, 2, false},
    {"mobilenet_v2", 144, 56, 3, 1, false},
    {"mobilenet_v2", 144, 56, 3, 2, false},
    {"mobilenet_v2", 192, 28, 3, 1, false},
    {"mobilenet_v2", 192, 28, 3, 2, false},
    {"mobilenet_v2", 384, 14, 3, 1, false},
    {"mobilenet_v2", 576, 14, 3, 1, false},
    {"mobilenet_v2", 576, 14, 3, 2, false},
    {"mobilenet_v2", 960, 7, 3, 1, false},
    {"efficientnet_b0", 144, 56, 5, 2, true},
    {"efficientnet_b0", 240, 28, 5, 1, true},
    {"efficientnet_b0", 240, 28, 3, 2, true},
    {"efficientnet_b0", 480, 14, 3, 1, true},
    {"efficientnet_b0", 672, 14, 5, 1, true},
    {"efficientnet_b0", 672, 14, 5, 2, true},
    {"efficientnet_b0", 1152, 7, 5, 1, true},
    {"efficientnet_b0", 1152, 7, 3, 1, true},
    {"small", 64, 7, 3, 1, false},
    {"small", 128, 4, 3, 1, false},
    {"small", 32, 14, 3, 1, false},
    {"small", 256, 7, 3, 1, false},
    {"small", 96, 14, 3, 2, false},
    {"small", 16, 28, 3, 1, false},
};

ir::Value* conv(ir::Graph& g, const std::string& name, ir::Value* x, int64_t channels,
                int64_t kernel, int64_t stride, int64_t group, uint64_t seed) {
  ir::Value* w = g.add_constant(
      name + "_w",
      testing::random_tensor(DType::Float32, {channels, channels / group, kernel, kernel}, seed));
  ir::Value* b =
      g.add_constant(name + "_b", testing::random_tensor(DType::Float32, {channels}, seed + 1));
  ir::Node* n = g.add_node("Conv", name, {x, w, b}, {name + "_out"});
  n->set_attribute(ir::Attribute::make_ints("pads", std::vector<int64_t>(4, kernel / 2)));
  n->set_attribute(ir::Attribute::make_ints("strides", {stride, stride}));
  n->set_attribute(ir::Attribute::make_int("group", group));
  return n->output(0);
}

Executable compile(const Layer& l, int threads) {
  auto g = std::make_unique<ir::Graph>("depthwise");
  ir::Value* x = g->add_input(
      "x", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim(1), ir::Dim(l.channels),
                                                      ir::Dim(l.size), ir::Dim(l.size)}));
  ir::Value* y = conv(*g, "expand", x, l.channels, 1, 1, 1, 1);
  y = conv(*g, "dw", y, l.channels, l.kernel, l.stride, l.channels, 3);
  if (l.swish) {
    ir::Value* s = g->add_node("Sigmoid", "sig", {y}, {"sig_out"})->output(0);
    y = g->add_node("Mul", "silu", {y, s}, {"silu_out"})->output(0);
  } else {
    ir::Tensor lo(DType::Float32, {}), hi(DType::Float32, {});
    lo.data<float>()[0] = 0;
    hi.data<float>()[0] = 6;
    y = g->add_node("Clip", "relu6", {y, g->add_constant("lo", lo), g->add_constant("hi", hi)},
                    {"relu6_out"})
            ->output(0);
  }
  y = conv(*g, "project", y, l.channels, 1, 1, 1, 5);
  g->add_output(y);
  Options options;
  options.num_threads = threads;
  return Model::from_graph(std::move(g)).compile(options);
}

// The depthwise node's median time in microseconds over `runs` profiled runs.
double median_us(const Executable& exe, const Tensor& x, int runs) {
  RunOptions profiled;
  profiled.profile = true;
  for (int i = 0; i < 20; ++i) exe.run_values({Datum(x)});
  std::vector<int64_t> us;
  for (int i = 0; i < runs; ++i)
    for (const ProfileEvent& e : exe.run_values({Datum(x)}, profiled).profile)
      if (e.name == "dw") us.push_back(e.duration_us);
  if (us.empty()) return -1;
  std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
  return static_cast<double>(us[us.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 300;
  std::printf("| model | C | in | kernel | stride | 1 thread us | 2 threads us |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  const int only = argc > 2 ? std::atoi(argv[2]) : -1;
  int index = 0;
  for (const Layer& l : kLayers) {
    if (only >= 0 && index++ != only) continue;
    const Tensor x = testing::random_tensor(DType::Float32, {1, l.channels, l.size, l.size}, 7);
    double t1 = median_us(compile(l, 1), x, runs);
    double t2 = median_us(compile(l, 2), x, runs);
    std::printf("| %s | %lld | %lldx%lld | %lldx%lld | %lld | %.0f | %.0f |\n", l.model,
                static_cast<long long>(l.channels), static_cast<long long>(l.size),
                static_cast<long long>(l.size), static_cast<long long>(l.kernel),
                static_cast<long long>(l.kernel), static_cast<long long>(l.stride), t1, t2);
    std::fflush(stdout);
  }
  return 0;
}
