// The five reference architectures split over two simulated devices (--sim 2 --device
// sim:0,sim:1 --split pipeline) and run with 1, 2 and 8 runs in flight through run_async: every
// run gives the bits of the same executable's run() one at a time, for its own input (the runs
// get different inputs, so one that read another's values would show), with the copies its
// placement report lists. Models come from SWITCHYARD_REFERENCE_MODELS (run through ctest,
// which calls run_models.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>

#include "compiler/compiler.h"
#include "switchyard/switchyard.hpp"
#include "tooling/npz.h"

namespace switchyard {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() {
  const char* dir = std::getenv("SWITCHYARD_REFERENCE_MODELS");
  return dir ? fs::path(dir) : fs::path();
}

// Input `variant` of the reference inputs: float tensors scaled by 1 + variant / 16, integer
// ones (token ids, masks) with their elements rotated by `variant`, so every value stays valid.
std::map<std::string, Tensor> variant_of(const std::map<std::string, Tensor>& inputs, int variant) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : inputs) {
    Tensor v = t.clone();
    if (v.dtype() == DType::Float32) {
      float* data = v.data<float>();
      for (int64_t i = 0; i < v.numel(); ++i) data[i] *= 1.0f + static_cast<float>(variant) / 16;
    } else if (v.numel() > 0 && v.nbytes() % static_cast<size_t>(v.numel()) == 0) {
      const size_t item = v.nbytes() / static_cast<size_t>(v.numel());
      const size_t shift = (static_cast<size_t>(variant) % static_cast<size_t>(v.numel())) * item;
      const auto* src = static_cast<const unsigned char*>(t.raw());
      auto* dst = static_cast<unsigned char*>(v.raw());
      std::memcpy(dst, src + shift, v.nbytes() - shift);
      std::memcpy(dst + v.nbytes() - shift, src, shift);
    }
    out.emplace(name, std::move(v));
  }
  return out;
}

class ReferenceModelInFlight : public ::testing::TestWithParam<const char*> {};

TEST_P(ReferenceModelInFlight, RunsInFlightGiveTheBitsOfOneRunAtATime) {
  const std::string name = GetParam();
  fs::path dir = models_dir();
  ASSERT_FALSE(dir.empty()) << "SWITCHYARD_REFERENCE_MODELS is not set (run through ctest)";
  fs::path model = dir / (name + ".onnx");
  fs::path ref = dir / (name + ".ref.npz");
  ASSERT_TRUE(fs::exists(model)) << model;
  std::map<std::string, Tensor> reference_inputs;
  for (auto& [key, t] : tooling::read_npz(ref.string()))
    if (key.rfind("in.", 0) == 0) reference_inputs.emplace(key.substr(3), t);
  ASSERT_FALSE(reference_inputs.empty()) << ref << " holds no in.* arrays";

  Options options;
  options.sim_devices = 2;
  options.device = "sim:0,sim:1";
  options.split = "pipeline";
  options.num_threads = 2;
  options.max_in_flight = 8;
  Executable exe = Model::load(model.string()).compile(options);
  std::printf("%s: %s\n", name.c_str(), exe.placement_summary().c_str());
  ASSERT_NE(exe.placement_summary().find("sim:1"), std::string::npos) << exe.placement_summary();
  const int copies = static_cast<int>(exe.internal().placement_report().copies.size());

  constexpr int kVariants = 4;
  std::vector<std::map<std::string, Tensor>> inputs;
  std::vector<std::map<std::string, Tensor>> want;
  for (int v = 0; v < kVariants; ++v) {
    inputs.push_back(variant_of(reference_inputs, v));
    want.push_back(exe.run(inputs.back()));
  }
  for (int in_flight : {1, 2, 8}) {
    SCOPED_TRACE(name + ", " + std::to_string(in_flight) + " in flight");
    const int runs = std::max(kVariants, in_flight);
    std::deque<std::pair<int, std::future<RunResult>>> pending;
    auto check_oldest = [&] {
      auto [variant, future] = std::move(pending.front());
      pending.pop_front();
      RunResult got = future.get();
      EXPECT_EQ(got.stats.copies, copies);
      const auto outputs = exe.outputs();
      ASSERT_EQ(got.outputs.size(), outputs.size());
      for (size_t o = 0; o < outputs.size(); ++o) {
        const Tensor& expected = want[static_cast<size_t>(variant)].at(outputs[o].name);
        const Tensor& actual = got.outputs[o].tensor;
        ASSERT_EQ(actual.shape(), expected.shape()) << outputs[o].name;
        EXPECT_EQ(std::memcmp(actual.raw(), expected.raw(), expected.nbytes()), 0)
            << outputs[o].name << " of input variant " << variant << " differs";
      }
    };
    for (int r = 0; r < runs; ++r) {
      if (static_cast<int>(pending.size()) >= in_flight) check_oldest();
      std::vector<Datum> ordered;
      for (const ValueInfo& in : exe.inputs())
        ordered.emplace_back(inputs[static_cast<size_t>(r % kVariants)].at(in.name));
      pending.emplace_back(r % kVariants, exe.run_values_async(std::move(ordered)));
    }
    while (!pending.empty()) check_oldest();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceModelInFlight,
                         ::testing::Values("resnet50", "mobilenet_v2", "squeezenet1_1", "bert_base",
                                           "gpt_decoder"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace switchyard
