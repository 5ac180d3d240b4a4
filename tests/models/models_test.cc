// The five reference architectures (../shared/reference, generated into the build tree by
// run_models.sh) against torch: max abs error <= 1e-4 x max|ref| at the reference shape; then at
// a second shape (batch 2; sequence 64 for the transformers), each batch row against a batch-1
// run of that row (max abs error <= 1e-5 x max|ref|).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "compiler/compiler.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"
#include "tooling/npz.h"

namespace switchyard {
namespace {

namespace fs = std::filesystem;

struct ModelCase {
  const char* name;
  bool transformer;
};

fs::path models_dir() {
  const char* dir = std::getenv("SWITCHYARD_REFERENCE_MODELS");
  return dir ? fs::path(dir) : fs::path();
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.scalar_as_double(i)));
  return m;
}

double max_abs_diff(const Tensor& a, const Tensor& b, int64_t offset_b = 0) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    m = std::max(m, std::fabs(a.scalar_as_double(i) - b.scalar_as_double(offset_b + i)));
  return m;
}

// Row `row` of a batch-major tensor, as its own batch-1 tensor.
Tensor take_row(const Tensor& t, int64_t row) {
  std::vector<int64_t> shape = t.shape();
  int64_t per_row = t.numel() / shape[0];
  shape[0] = 1;
  Tensor out(t.dtype(), shape);
  size_t bytes = static_cast<size_t>(per_row) * dtype_size(t.dtype());
  std::memcpy(out.raw(), static_cast<const char*>(t.raw()) + static_cast<size_t>(row) * bytes,
              bytes);
  return out;
}

// Inputs at the second shape: images N(0,1); token ids in [0, 1000); masks with a padded tail.
std::map<std::string, Tensor> second_shape_inputs(const Executable& exe, bool transformer) {
  std::mt19937_64 rng(99);
  std::map<std::string, Tensor> inputs;
  for (const ValueInfo& in : exe.inputs()) {
    std::vector<int64_t> shape;
    if (transformer) {
      shape = {2, 64};
    } else {
      shape = {2, 3, 224, 224};
    }
    Tensor t(in.dtype, shape);
    if (in.dtype == DType::Float32) {
      std::normal_distribution<float> normal;
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    } else if (in.name.find("mask") != std::string::npos) {
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t s = 0; s < 64; ++s) t.data<int64_t>()[b * 64 + s] = s < 64 - 10 * b ? 1 : 0;
    } else {
      std::uniform_int_distribution<int64_t> ids(0, 999);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = ids(rng);
    }
    inputs.emplace(in.name, std::move(t));
  }
  return inputs;
}

class ReferenceModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(ReferenceModel, MatchesTorchAndIsBatchConsistent) {
  const ModelCase& c = GetParam();
  fs::path dir = models_dir();
  ASSERT_FALSE(dir.empty()) << "SWITCHYARD_REFERENCE_MODELS is not set (run through ctest)";
  fs::path model = dir / (std::string(c.name) + ".onnx");
  fs::path ref = dir / (std::string(c.name) + ".ref.npz");
  ASSERT_TRUE(fs::exists(model)) << model;
  ASSERT_TRUE(fs::exists(ref)) << ref;

  Options options;
  options.num_threads = 2;
  Executable exe = Model::load(model.string()).compile(options);
  auto arrays = tooling::read_npz(ref.string());
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> expected;
  for (auto& [key, t] : arrays) {
    if (key.rfind("in.", 0) == 0) inputs.emplace(key.substr(3), t);
    if (key.rfind("out.", 0) == 0) expected.emplace(key.substr(4), t);
  }
  auto outputs = exe.run(inputs);
  for (const auto& [name, want] : expected) {
    ASSERT_TRUE(outputs.count(name)) << "missing output " << name;
    const Tensor& got = outputs.at(name);
    ASSERT_EQ(got.shape(), want.shape()) << name;
    double scale = max_abs(want);
    double err = max_abs_diff(got, want);
    EXPECT_LE(err, 1e-4 * scale) << c.name << " output " << name << ": max abs error " << err
                                 << ", max |ref| " << scale;
  }

  // Second shape: every row of a batch-2 run equals a batch-1 run of that row.
  auto batch_inputs = second_shape_inputs(exe, c.transformer);
  auto batch_outputs = exe.run(batch_inputs);
  for (int64_t row = 0; row < 2; ++row) {
    std::map<std::string, Tensor> row_inputs;
    for (const auto& [name, t] : batch_inputs) row_inputs.emplace(name, take_row(t, row));
    auto row_outputs = exe.run(row_inputs);
    for (const auto& [name, got_row] : row_outputs) {
      const Tensor& batched = batch_outputs.at(name);
      ASSERT_EQ(batched.shape()[0], 2);
      int64_t per_row = batched.numel() / 2;
      ASSERT_EQ(got_row.numel(), per_row);
      double scale = max_abs(got_row);
      double err = max_abs_diff(got_row, batched, row * per_row);
      EXPECT_LE(err, 1e-5 * scale) << c.name << " output " << name << " row " << row
                                   << ": max abs error " << err << ", max |ref| " << scale;
    }
  }
}

// Save -> load -> run gives the same bits and the same placement report as the executable that
// was saved, on the cpu, on a simulated device, and split over two.
TEST_P(ReferenceModel, SavedExecutablesRunBitIdentically) {
  const ModelCase& c = GetParam();
  fs::path dir = models_dir();
  ASSERT_FALSE(dir.empty()) << "SWITCHYARD_REFERENCE_MODELS is not set (run through ctest)";
  fs::path model = dir / (std::string(c.name) + ".onnx");
  fs::path ref = dir / (std::string(c.name) + ".ref.npz");
  std::map<std::string, Tensor> inputs;
  for (auto& [key, t] : tooling::read_npz(ref.string()))
    if (key.rfind("in.", 0) == 0) inputs.emplace(key.substr(3), t);
  struct Mode {
    const char* tag;
    int sims;
    const char* device;
  };
  for (const Mode& mode :
       {Mode{"cpu", 0, "cpu"}, Mode{"sim", 1, "sim:0"}, Mode{"split", 2, "sim:0,sim:1"}}) {
    SCOPED_TRACE(mode.tag);
    Options options;
    options.num_threads = 2;
    options.sim_devices = mode.sims;
    options.device = mode.device;
    if (mode.sims == 2) options.split = "pipeline";
    Executable exe = Model::load(model.string()).compile(options);
    fs::path file =
        fs::path(::testing::TempDir()) / (std::string(c.name) + "_" + mode.tag + ".syx");
    exe.save(file.string());
    Options load_options;
    load_options.num_threads = 2;
    Executable loaded = Executable::load(file.string(), load_options);
    EXPECT_EQ(loaded.explain("json"), exe.explain("json"));
    auto want = exe.run(inputs);
    auto got = loaded.run(inputs);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, t] : want) EXPECT_TRUE(testing::same_bits(got.at(name), t)) << name;
    fs::remove(file);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceModel,
                         ::testing::Values(ModelCase{"resnet50", false},
                                           ModelCase{"mobilenet_v2", false},
                                           ModelCase{"squeezenet1_1", false},
                                           ModelCase{"bert_base", true},
                                           ModelCase{"gpt_decoder", true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace switchyard
