// `switchyard bench`: the nearest-rank statistics on known values, and the command's JSON and
// text reports, --concurrency, --in-flight, --duration and the refusals of bad option values. The
// command tests run the built binary (build/tools/switchyard) and skip with a line saying so where
// it has not been built.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "../../tools/switchyard/bench_stats.h"
#include "support/op_test_util.h"
#include "tooling/npz.h"

namespace switchyard::testing {
namespace {

namespace fs = std::filesystem;
using tools::summarize_latencies;

TEST(SummarizeLatencies, NearestRankOnOneToHundred) {
  std::vector<double> times(100);
  std::iota(times.begin(), times.end(), 1.0);
  std::shuffle(times.begin(), times.end(), std::mt19937(7));
  tools::LatencyStats s = summarize_latencies(times);
  EXPECT_EQ(s.count, 100u);
  EXPECT_EQ(s.p50_ms, 50);
  EXPECT_EQ(s.p90_ms, 90);
  EXPECT_EQ(s.p99_ms, 99);
  EXPECT_EQ(s.min_ms, 1);
  EXPECT_EQ(s.max_ms, 100);
  EXPECT_DOUBLE_EQ(s.mean_ms, 50.5);
}

TEST(SummarizeLatencies, NearestRankRoundsTheRankUp) {
  // n = 3: p50 is rank ceil(1.5) = 2, p90 rank ceil(2.7) = 3.
  tools::LatencyStats s = summarize_latencies({5.5, 1.25, 3.0});
  EXPECT_EQ(s.p50_ms, 3.0);
  EXPECT_EQ(s.p90_ms, 5.5);
  EXPECT_EQ(s.p99_ms, 5.5);
  EXPECT_EQ(s.min_ms, 1.25);
  EXPECT_DOUBLE_EQ(s.mean_ms, 9.75 / 3);
  // n = 1000: p99 is the 990th value, not the largest.
  std::vector<double> many(1000);
  std::iota(many.begin(), many.end(), 0.5);
  EXPECT_EQ(summarize_latencies(many).p99_ms, 989.5);
  EXPECT_EQ(summarize_latencies({2.0}).p99_ms, 2.0);
}

TEST(SummarizeLatencies, RefusesNoTimes) { EXPECT_THROW(summarize_latencies({}), Error); }

struct Result {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class Bench : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ =
        fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "tools" / "switchyard";
    if (!fs::exists(binary_))
      GTEST_SKIP() << binary_ << " is not built (target switchyard): the CLI test is skipped";
    dir_ = fs::temp_directory_path() / ("switchyard_bench_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    model_ = (dir_ / "model.onnx").string();
    std::ofstream out(model_, std::ios::binary);
    ASSERT_TRUE(model().SerializeToOstream(&out));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // X float[N,4] -> Relu -> Y.
  static onnx::ModelProto model() {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("relu");
    for (auto* v : {g->add_input(), g->add_output()}) {
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(onnx::TensorProto::FLOAT);
      tt->mutable_shape()->add_dim()->set_dim_param("N");
      tt->mutable_shape()->add_dim()->set_dim_value(4);
    }
    g->mutable_input(0)->set_name("X");
    g->mutable_output(0)->set_name("Y");
    auto* n = g->add_node();
    n->set_op_type("Relu");
    n->set_name("relu");
    n->add_input("X");
    n->add_output("Y");
    return m;
  }

  Result bench(const std::string& args) {
    fs::path err_path = dir_ / "stderr.txt";
    std::string cmd =
        binary_.string() + " bench " + model_ + " " + args + " 2>" + err_path.string();
    Result r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
    int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    r.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
    return r;
  }

  // The JSON object of a successful `bench ... --json`; fails the test otherwise.
  nlohmann::json bench_json(const std::string& args) {
    Result r = bench(args + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << "not one JSON object: " << r.out;
    return j;
  }

  fs::path binary_, dir_;
  std::string model_;
};

TEST_F(Bench, JsonHasEveryKeyWithSaneValues) {
  nlohmann::json j = bench_json("--dim N=3 --iterations 7 --warmup 2");
  ASSERT_TRUE(j.is_object());
  for (const char* key : {"model", "placement", "threads", "concurrency", "warmup", "iterations",
                          "duration_s", "peak_bytes", "p50_ms", "p90_ms", "p99_ms", "mean_ms",
                          "min_ms", "throughput_per_s", "load_ms", "compile_ms", "first_run_ms"})
    EXPECT_TRUE(j.contains(key)) << key << " missing: " << j.dump();
  EXPECT_EQ(j.value("model", ""), model_);
  EXPECT_EQ(j.value("iterations", -1), 7);
  EXPECT_EQ(j.value("warmup", -1), 2);
  EXPECT_EQ(j.value("concurrency", -1), 1);
  double p50 = j.value("p50_ms", -1.0), p90 = j.value("p90_ms", -1.0);
  double p99 = j.value("p99_ms", -1.0), min = j.value("min_ms", -1.0);
  double mean = j.value("mean_ms", -1.0);
  EXPECT_GT(min, 0);
  EXPECT_LE(min, p50);
  EXPECT_LE(p50, p90);
  EXPECT_LE(p90, p99);
  EXPECT_GE(mean, min);
  EXPECT_LE(mean, p99);  // with 7 runs p99 is the largest
  EXPECT_GT(j.value("throughput_per_s", -1.0), 0);
  EXPECT_GT(j.value("duration_s", -1.0), 0);
  EXPECT_GE(j.value("load_ms", -1.0), 0);
  EXPECT_GE(j.value("compile_ms", -1.0), 0);
  EXPECT_GT(j.value("first_run_ms", -1.0), 0);
}

TEST_F(Bench, ConcurrencySplitsTheIterations) {
  nlohmann::json j = bench_json("--dim N=3 --concurrency 2 --iterations 6");
  EXPECT_EQ(j.value("iterations", -1), 6) << j.dump();
  EXPECT_EQ(j.value("concurrency", -1), 2) << j.dump();
  // More threads than runs: the spare threads run nothing, the total still holds.
  j = bench_json("--dim N=3 --concurrency 4 --iterations 3");
  EXPECT_EQ(j.value("iterations", -1), 3) << j.dump();
}

TEST_F(Bench, InFlightKeepsRunsStartedThroughRunAsync) {
  nlohmann::json j = bench_json("--dim N=3 --in-flight 3 --iterations 7");
  EXPECT_EQ(j.value("iterations", -1), 7) << j.dump();
  EXPECT_EQ(j.value("in_flight", -1), 3) << j.dump();
  j = bench_json("--dim N=3 --in-flight 2 --concurrency 2 --iterations 8");
  EXPECT_EQ(j.value("iterations", -1), 8) << j.dump();
  EXPECT_EQ(j.value("in_flight", -1), 2) << j.dump();
  j = bench_json("--dim N=3 --iterations 2");
  EXPECT_EQ(j.value("in_flight", -1), 1) << j.dump();
}

TEST_F(Bench, DurationRunsForAtLeastThatLong) {
  nlohmann::json j = bench_json("--dim N=3 --duration 0.3");
  EXPECT_GE(j.value("iterations", -1), 1) << j.dump();
  EXPECT_GE(j.value("duration_s", -1.0), 0.3) << j.dump();
  j = bench_json("--dim N=3 --duration 0.3 --concurrency 3");
  EXPECT_GE(j.value("iterations", -1), 3) << j.dump();  // every thread runs at least once
  EXPECT_GE(j.value("duration_s", -1.0), 0.3) << j.dump();
}

TEST_F(Bench, PrintsTheTextReport) {
  std::string in = (dir_ / "in.npz").string();
  tooling::write_npz(in, {{"X", random_tensor(DType::Float32, {3, 4}, 1)},
                          {"out.Y", random_tensor(DType::Float32, {3, 4}, 2)}});
  Result r = bench("--inputs " + in + " --iterations 5 --warmup 1");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const std::string& line :
       {"model: " + model_ + "\n", std::string("placement: "), std::string("load "),
        std::string(", first run "), std::string("timed: 5 runs (1 warmup), "),
        std::string("x concurrency 1, "), std::string("latency ms: p50 "),
        std::string("throughput: "), std::string("peak intermediate memory ")})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " missing:\n" << r.out;
  EXPECT_NE(r.err.find("ignoring out.Y (reference outputs, not inputs)"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("bench: "), std::string::npos) << "progress line off a terminal: " << r.err;
}

TEST_F(Bench, RefusesBadValuesNamingTheOption) {
  const std::pair<const char*, const char*> cases[] = {
      {"--concurrency 0", "--concurrency must be at least 1, got 0"},
      {"--duration 0", "--duration must be > 0"},
      {"--duration -2", "--duration must be > 0"},
      {"--iterations 0", "--iterations must be at least 1, got 0"},
      {"--warmup -1", "--warmup must be >= 0, got -1"},
      {"--threads -1", "--threads must be >= 0, got -1"},
      {"--deadline-ms -5", "--deadline-ms must be >= 0, got -5"},
      {"--in-flight 0", "--in-flight must be 1 to 1024, got 0"},
      {"--in-flight 600 --concurrency 2", "--in-flight 600 x --concurrency 2 is over 1024"},
      {"--dim N", "--dim 'N': expected NAME=VALUE"},
  };
  for (const auto& [args, message] : cases) {
    Result r = bench(std::string("--dim N=3 ") + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out << r.err;  // a usage error
    EXPECT_NE(r.err.find("switchyard: error: "), std::string::npos) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

TEST_F(Bench, RefusesIterationsWithDuration) {
  Result r = bench("--dim N=3 --iterations 5 --duration 1");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("excludes"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("latency"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace switchyard::testing
