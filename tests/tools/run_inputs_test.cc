// `switchyard run --inputs`: the command refuses an inputs file it cannot honour (exit 1, the
// message on stderr) and says which inputs it seeded. Runs the built binary
// (build/tools/switchyard); skips with a line saying so where it has not been built.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support/op_test_util.h"
#include "tooling/npz.h"

namespace switchyard::testing {
namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

class RunInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ =
        fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "tools" / "switchyard";
    if (!fs::exists(binary_))
      GTEST_SKIP() << binary_ << " is not built (target switchyard): the CLI test is skipped";
    dir_ = fs::temp_directory_path() / ("switchyard_run_inputs_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    model_ = (dir_ / "model.onnx").string();
    std::ofstream out(model_, std::ios::binary);
    ASSERT_TRUE(model().SerializeToOstream(&out));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // X float[N,4] -> Relu -> Y; L int64[N] -> Neg -> K.
  static onnx::ModelProto model() {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("two_inputs");
    auto add_value = [](onnx::ValueInfoProto* v, const char* name, int elem, bool matrix) {
      v->set_name(name);
      auto* tt = v->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(elem);
      tt->mutable_shape()->add_dim()->set_dim_param("N");
      if (matrix) tt->mutable_shape()->add_dim()->set_dim_value(4);
    };
    add_value(g->add_input(), "X", onnx::TensorProto::FLOAT, true);
    add_value(g->add_input(), "L", onnx::TensorProto::INT64, false);
    add_value(g->add_output(), "Y", onnx::TensorProto::FLOAT, true);
    add_value(g->add_output(), "K", onnx::TensorProto::INT64, false);
    auto add_node = [g](const char* op, const char* in, const char* out) {
      auto* n = g->add_node();
      n->set_op_type(op);
      n->set_name(op);
      n->add_input(in);
      n->add_output(out);
    };
    add_node("Relu", "X", "Y");
    add_node("Neg", "L", "K");
    return m;
  }

  std::string write_inputs(const std::vector<std::pair<std::string, Tensor>>& arrays) {
    std::string path = (dir_ / "in.npz").string();
    tooling::write_npz(path, arrays);
    return path;
  }

  Result run(const std::string& args) {
    std::string cmd = binary_.string() + " run " + model_ + " " + args + " 2>&1";
    Result r;
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
    int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }

  fs::path binary_, dir_;
  std::string model_;
};

TEST_F(RunInputs, RunsAFileThatGivesEveryInput) {
  std::string in = write_inputs({{"X", random_tensor(DType::Float32, {3, 4}, 1)},
                                 {"in.L", random_tensor(DType::Int64, {3}, 2, -9, 9)}});
  Result r = run("--inputs " + in);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("input  L: int64 3 (from " + in + ")"), std::string::npos) << r.output;
}

TEST_F(RunInputs, RefusesAKeyThatNamesNoInput) {
  std::string in = write_inputs({{"X", random_tensor(DType::Float32, {3, 4}, 1)},
                                 {"L", random_tensor(DType::Int64, {3}, 2, -9, 9)},
                                 {"lables", random_tensor(DType::Int64, {3}, 3, -9, 9)}});
  Result r = run("--inputs " + in);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("switchyard: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'lables' names no input of the model; its inputs: X, L"),
            std::string::npos)
      << r.output;
}

TEST_F(RunInputs, SeedsAMissingInputOnlyWithAnExplicitSeed) {
  std::string in = write_inputs({{"X", random_tensor(DType::Float32, {3, 4}, 1)}});
  Result refused = run("--inputs " + in);
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("input 'L' is not in " + in), std::string::npos) << refused.output;
  // --seed 0 is the default value, but given explicitly it still counts.
  Result seeded = run("--inputs " + in + " --seed 0");
  EXPECT_EQ(seeded.exit_code, 0) << seeded.output;
  EXPECT_NE(seeded.output.find("input  L: int64 3 (seed 0, not in " + in + ")"), std::string::npos)
      << seeded.output;
}

TEST_F(RunInputs, RefusesShapeAndDtypeContradictions) {
  std::string in = write_inputs({{"X", random_tensor(DType::Float32, {3, 4}, 1)},
                                 {"L", random_tensor(DType::Int64, {3}, 2, -9, 9)}});
  Result dim = run("--inputs " + in + " --dim N=2");
  EXPECT_EQ(dim.exit_code, 1) << dim.output;
  EXPECT_NE(dim.output.find("('N') is 3, which contradicts --dim N=2"), std::string::npos)
      << dim.output;
  Result shape = run("--inputs " + in + " --shape X=3x5");
  EXPECT_EQ(shape.exit_code, 1) << shape.output;
  EXPECT_NE(shape.output.find("'X' has shape 3x4, which contradicts --shape X=3x5"),
            std::string::npos)
      << shape.output;
  std::string wrong = write_inputs({{"X", random_tensor(DType::Float64, {3, 4}, 1)},
                                    {"L", random_tensor(DType::Int64, {3}, 2, -9, 9)}});
  Result dtype = run("--inputs " + wrong);
  EXPECT_EQ(dtype.exit_code, 1) << dtype.output;
  EXPECT_NE(dtype.output.find("has dtype double, but the model declares input 'X' as float"),
            std::string::npos)
      << dtype.output;
}

}  // namespace
// No option is silently ignored: a repeated --dim or --shape, or an unparsable one, is a usage
// error (exit 2, naming it); a name the model lacks is an error of the run (exit 1); an option
// no partition honours is a warning on stderr (an error under --fallback strict).
TEST_F(RunInputs, UsageErrorsExit2AndUnhonouredOptionsAreSaid) {
  const std::pair<const char*, const char*> usage[] = {
      {"--dim N=2 --dim N=3", "--dim N is given twice (2 and 3)"},
      {"--shape X=2x4 --shape X=3x4 --dim N=2", "--shape X is given twice"},
      {"--dim N", "--dim 'N': expected NAME=VALUE"},
      {"--dim N=two", "--dim N: 'two' is not a non-negative integer"},
      {"--iterations 0 --dim N=2", "--iterations must be at least 1, got 0"},
      {"--no-such-flag", "--no-such-flag"},
  };
  for (const auto& [args, message] : usage) {
    Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << ": " << r.output;
  }
  Result unknown = run("--dim M=2 --dim N=2");
  EXPECT_EQ(unknown.exit_code, 1) << unknown.output;
  EXPECT_NE(unknown.output.find("--dim M=2: no input of the model has a dim named 'M'"),
            std::string::npos)
      << unknown.output;
  Result fp16 = run("--dim N=2 --precision fp16 --compute-units cpu_only");
  EXPECT_EQ(fp16.exit_code, 0) << fp16.output;
  EXPECT_NE(fp16.output.find("switchyard: warning: --precision fp16 has no effect: no partition "
                             "runs on a GPU (the nodes run on cpu, in fp32)"),
            std::string::npos)
      << fp16.output;
  Result strict = run("--dim N=2 --precision fp16 --compute-units cpu_only --fallback strict");
  EXPECT_EQ(strict.exit_code, 1) << strict.output;
  EXPECT_NE(strict.output.find("an error under --fallback strict"), std::string::npos)
      << strict.output;
  Result plain = run("--dim N=2");
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("warning"), std::string::npos) << plain.output;
}

}  // namespace switchyard::testing
