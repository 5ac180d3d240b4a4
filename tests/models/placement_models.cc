// The five reference architectures placed on simulated accelerators give outputs bit-identical
// to a CPU-only run wherever placement keeps the cpu's fusion groups whole (else equal to the
// fp32 bound, 1e-4 x max |ref|: a split group runs as separate kernels) — with sim:0 running every
// op, only Conv/MatMul/Gemm, a seeded random half of the model's op types, and a two-device
// pipeline split — and every run makes exactly the copies its placement report lists. Models come
// from SWITCHYARD_REFERENCE_MODELS (run through ctest, which calls run_models.sh).
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>
#include <cmath>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "compiler/compiler.h"
#include "placement/report.h"
#include "switchyard/switchyard.hpp"
#include "tooling/npz.h"

namespace switchyard {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() {
  const char* dir = std::getenv("SWITCHYARD_REFERENCE_MODELS");
  return dir ? fs::path(dir) : fs::path();
}

// A --sim-config file that is removed when the test ends.
class SimConfigFile {
 public:
  explicit SimConfigFile(const std::string& json) {
    std::string pattern = (fs::temp_directory_path() / "sy_sim_config_XXXXXX.json").string();
    int fd = ::mkstemps(pattern.data(), 5);
    if (fd < 0) throw std::runtime_error("mkstemps failed");
    ::close(fd);
    path_ = pattern;
    std::ofstream(path_) << json;
  }
  ~SimConfigFile() { fs::remove(path_); }
  SimConfigFile(const SimConfigFile&) = delete;
  SimConfigFile& operator=(const SimConfigFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A one-device config running exactly `ops`, with the default costs or, when `cheap_copies`,
// fast arithmetic and free copies, so that every node it supports stays there.
std::string config_running(const std::vector<std::string>& ops, bool cheap_copies = false) {
  std::string list;
  for (const std::string& op : ops) list += (list.empty() ? "\"" : ", \"") + op + "\"";
  std::string costs = cheap_copies ? ", \"gflops\": 100000, \"gbytes_per_s\": 100000, "
                                     "\"copy_latency_us\": 0, \"copy_gbytes_per_s\": 100000"
                                   : "";
  return "[{\"name\": \"subset\", \"ops\": [" + list + "]" + costs + "}]";
}

// Half of `ops` (sorted), chosen by a seeded Fisher–Yates shuffle that is the same everywhere.
std::vector<std::string> seeded_half(std::vector<std::string> ops, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = ops.size(); i > 1; --i) std::swap(ops[i - 1], ops[rng() % i]);
  ops.resize(ops.size() / 2);
  std::sort(ops.begin(), ops.end());
  return ops;
}

struct Result {
  std::map<std::string, Tensor> outputs;
  runtime::RunStats stats;
};

Result run(const Executable& exe, const std::map<std::string, Tensor>& inputs) {
  std::map<std::string, ir::Datum> named(inputs.begin(), inputs.end());
  Result r;
  std::vector<ir::Datum> outs = exe.internal().run(named, &r.stats);
  const auto& declared = exe.internal().graph().outputs();
  for (size_t i = 0; i < declared.size(); ++i)
    r.outputs.emplace(declared[i]->name(), outs[i].tensor);
  return r;
}

class PlacedReferenceModel : public ::testing::TestWithParam<const char*> {};

TEST_P(PlacedReferenceModel, MatchesTheCpuBitForBitOnSimulatedDevices) {
  const std::string name = GetParam();
  fs::path dir = models_dir();
  ASSERT_FALSE(dir.empty()) << "SWITCHYARD_REFERENCE_MODELS is not set (run through ctest)";
  fs::path model = dir / (name + ".onnx");
  fs::path ref = dir / (name + ".ref.npz");
  ASSERT_TRUE(fs::exists(model)) << model;
  ASSERT_TRUE(fs::exists(ref)) << ref;

  std::map<std::string, Tensor> inputs;
  for (auto& [key, t] : tooling::read_npz(ref.string()))
    if (key.rfind("in.", 0) == 0) inputs.emplace(key.substr(3), t);
  ASSERT_FALSE(inputs.empty()) << ref << " holds no in.* arrays";

  Options cpu_options;
  cpu_options.num_threads = 2;
  Executable cpu_exe = Model::load(model.string()).compile(cpu_options);
  Result want = run(cpu_exe, inputs);
  EXPECT_EQ(want.stats.copies, 0);
  auto fusion_groups = [](const Executable& exe) {
    std::set<std::vector<std::string>> groups;
    for (const placement::FusionInfo& f : exe.internal().placement_report().fusions)
      groups.insert(f.nodes);
    return groups;
  };
  const std::set<std::vector<std::string>> cpu_groups = fusion_groups(cpu_exe);
  std::set<std::string> op_set;
  for (const placement::NodeDecision& d : cpu_exe.internal().placement_report().nodes)
    op_set.insert(d.op);
  std::vector<std::string> model_ops(op_set.begin(), op_set.end());

  struct Mode {
    std::string label;
    Options options;
    std::set<std::string> sim_ops;  ///< the op types a simulated device may run; empty: all
    int devices_used = 1;           ///< simulated devices that must run something
  };
  SimConfigFile big_ops(config_running({"Conv", "MatMul", "Gemm"}));
  std::vector<std::string> half = seeded_half(model_ops, 20240611);
  // Cheap copies keep every supported node on sim:0: the model falls into many partitions.
  SimConfigFile half_ops(config_running(half, true));
  std::vector<Mode> modes(4);
  modes[0].label = "--sim 1 --device sim:0";
  modes[0].options.sim_devices = 1;
  modes[0].options.device = "sim:0";
  modes[1].label = "sim:0 runs Conv, MatMul, Gemm";
  modes[1].options.sim_config = big_ops.path();
  modes[1].options.device = "sim:0";
  modes[1].sim_ops = {"Conv", "MatMul", "Gemm"};
  modes[2].label = "sim:0 runs a seeded half of the model's ops";
  modes[2].options.sim_config = half_ops.path();
  modes[2].options.device = "sim:0";
  modes[2].sim_ops = std::set<std::string>(half.begin(), half.end());
  modes[3].label = "--sim 2 --device sim:0,sim:1 --split pipeline";
  modes[3].options.sim_devices = 2;
  modes[3].options.device = "sim:0,sim:1";
  modes[3].options.split = "pipeline";
  modes[3].devices_used = 2;

  for (Mode& mode : modes) {
    SCOPED_TRACE(name + ": " + mode.label);
    mode.options.num_threads = 2;
    Executable exe = Model::load(model.string()).compile(mode.options);
    const placement::PlacementReport& report = exe.internal().placement_report();
    std::set<std::string> sims_used;
    for (const placement::NodeDecision& d : report.nodes) {
      if (d.device == "cpu") continue;
      sims_used.insert(d.device);
      if (!mode.sim_ops.empty()) {
        EXPECT_TRUE(mode.sim_ops.count(d.op)) << d.node << " (" << d.op << ") ran on " << d.device;
      }
    }
    EXPECT_GE(static_cast<int>(sims_used.size()), mode.devices_used) << exe.placement_summary();
    std::printf("%s [%s]: %s\n", name.c_str(), mode.label.c_str(), exe.placement_summary().c_str());

    Result got = run(exe, inputs);
    EXPECT_EQ(static_cast<size_t>(got.stats.copies), report.copies.size())
        << exe.placement_summary();
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    // Where placement keeps every fusion group of the CPU-only run whole, the kernels are the
    // same and so are the bits. Where it splits one (a Conv here, its Add there), the split
    // group's nodes run as separate kernels, which round differently: then the outputs must
    // match to the fp32 bound, 1e-4 x max |ref|.
    const bool same_kernels = fusion_groups(exe) == cpu_groups;
    for (const auto& [output, expected] : want.outputs) {
      ASSERT_TRUE(got.outputs.count(output)) << "missing output " << output;
      const Tensor& actual = got.outputs.at(output);
      ASSERT_EQ(actual.dtype(), expected.dtype()) << output;
      ASSERT_EQ(actual.shape(), expected.shape()) << output;
      if (same_kernels) {
        EXPECT_EQ(std::memcmp(actual.raw(), expected.raw(), expected.nbytes()), 0)
            << output << " differs from the CPU-only run; placement: " << exe.placement_summary();
      } else {
        ASSERT_EQ(actual.dtype(), DType::Float32) << output;
        const float* a = static_cast<const float*>(actual.raw());
        const float* e = static_cast<const float*>(expected.raw());
        const size_t n = expected.nbytes() / sizeof(float);
        double max_ref = 0, max_err = 0;
        for (size_t i = 0; i < n; ++i) {
          max_ref = std::max(max_ref, std::fabs(static_cast<double>(e[i])));
          max_err = std::max(max_err, std::fabs(static_cast<double>(a[i]) - e[i]));
        }
        EXPECT_LE(max_err, 1e-4 * max_ref)
            << output << " differs from the CPU-only run (a fusion group split by placement); "
            << "placement: " << exe.placement_summary();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PlacedReferenceModel,
                         ::testing::Values("resnet50", "mobilenet_v2", "squeezenet1_1", "bert_base",
                                           "gpt_decoder"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace switchyard
