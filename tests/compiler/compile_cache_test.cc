// The compile cache: a second compile of the same model under the same options is a hit with
// the same bits and report; one changed option, weight byte or external-data file is a miss;
// two processes filling one folder at once leave whole entries; a corrupt entry is removed with
// one line on stderr and rebuilt; the folder stays within its bound.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/dense_model.h"
#include "ir/graph.h"
#include "onnx/export.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

namespace fs = std::filesystem;
using ir::DType;

// A fresh folder for one test: the model files and the cache beside them.
struct Folder {
  fs::path root;
  explicit Folder(const std::string& name) : root(fs::path(::testing::TempDir()) / name) {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~Folder() { fs::remove_all(root); }
  fs::path cache() const { return root / "cache"; }
  size_t entries() const {
    size_t n = 0;
    if (fs::exists(cache()))
      for (const auto& e : fs::directory_iterator(cache())) n += e.path().extension() == ".syx";
    return n;
  }
};

// Writes the graph as an ONNX file; with `external`, W's bytes go to `external` beside it.
fs::path write_model(const fs::path& dir, const ir::Graph& g, const std::string& external = "") {
  onnx_import::ExportOptions eo;
  std::string weights;
  if (!external.empty()) {
    eo.external = [&](const ir::Tensor& t) {
      uint64_t at = weights.size();
      weights.append(static_cast<const char*>(t.raw()), t.nbytes());
      return std::make_pair(external, at);
    };
  }
  fs::path model = dir / "model.onnx";
  write_file(model, onnx_import::export_model(g, eo));
  if (!external.empty()) write_file(dir / external, weights);
  return model;
}

Options cached(const Folder& f) {
  Options o;
  o.num_threads = 1;
  o.cache_dir = f.cache().string();
  return o;
}

TEST(CompileCache, ASecondCompileIsAHitWithTheSameBitsAndReport) {
  Folder f("cache_hit");
  fs::path model = write_model(f.root, *dense_graph());
  Executable first = compile_file(model.string(), cached(f));
  EXPECT_EQ(first.compile_stats().cache, "miss");
  EXPECT_EQ(f.entries(), 1u);
  Executable second = compile_file(model.string(), cached(f));
  EXPECT_EQ(second.compile_stats().cache, "hit");
  EXPECT_EQ(second.compile_stats().compile_ms, 0);
  EXPECT_EQ(second.explain("json"), first.explain("json"));
  EXPECT_TRUE(same_bits(second.run(dense_inputs()).at("y"), first.run(dense_inputs()).at("y")));
  // Model::load + compile shares the entries (the same identity).
  EXPECT_EQ(Model::load(model.string()).compile(cached(f)).compile_stats().cache, "hit");
  // Threads and the shape cache are not part of the identity.
  Options more = cached(f);
  more.num_threads = 2;
  more.shape_cache_capacity = 3;
  EXPECT_EQ(compile_file(model.string(), more).compile_stats().cache, "hit");
  // A graph built in code is identified by its content.
  EXPECT_EQ(Model::from_graph(dense_graph()).compile(cached(f)).compile_stats().cache, "miss");
  EXPECT_EQ(Model::from_graph(dense_graph()).compile(cached(f)).compile_stats().cache, "hit");
  EXPECT_EQ(Model::from_graph(dense_graph(5)).compile(cached(f)).compile_stats().cache, "miss");
  // Without a cache: off.
  EXPECT_EQ(compile_file(model.string(), {}).compile_stats().cache, "off");
  Options off = cached(f);
  off.cache_dir = "off";
  EXPECT_EQ(compile_file(model.string(), off).compile_stats().cache, "off");
}

TEST(CompileCache, OneChangedOptionWeightByteOrExternalFileIsAMiss) {
  Folder f("cache_identity");
  fs::path model = write_model(f.root, *dense_graph());
  EXPECT_EQ(compile_file(model.string(), cached(f)).compile_stats().cache, "miss");
  Options nofusion = cached(f);
  nofusion.fusion = false;
  EXPECT_EQ(compile_file(model.string(), nofusion).compile_stats().cache, "miss");
  EXPECT_EQ(compile_file(model.string(), nofusion).compile_stats().cache, "hit");
  Options sim = cached(f);
  sim.sim_devices = 1;
  EXPECT_EQ(compile_file(model.string(), sim).compile_stats().cache, "miss");

  // One byte of a weight inside the model file.
  std::string bytes = read_file(model);
  Tensor w = random_tensor(DType::Float32, {64, 64}, 1);
  size_t at = bytes.find(std::string(static_cast<const char*>(w.raw()), 64));
  ASSERT_NE(at, std::string::npos);
  bytes[at + 3] = static_cast<char>(bytes[at + 3] ^ 1);
  write_file(model, bytes);
  Executable changed = compile_file(model.string(), cached(f));
  EXPECT_EQ(changed.compile_stats().cache, "miss");

  // One byte of an external data file: the model file is the same, the entry is not used.
  Folder g("cache_external");
  fs::path ext_model = write_model(g.root, *dense_graph(), "weights.bin");
  Executable before = compile_file(ext_model.string(), cached(g));
  EXPECT_EQ(before.compile_stats().cache, "miss");
  EXPECT_EQ(compile_file(ext_model.string(), cached(g)).compile_stats().cache, "hit");
  std::string weights = read_file(g.root / "weights.bin");
  weights[10] = static_cast<char>(weights[10] ^ 0x40);
  write_file(g.root / "weights.bin", weights);
  Executable after = compile_file(ext_model.string(), cached(g));
  EXPECT_EQ(after.compile_stats().cache, "miss");
  EXPECT_FALSE(same_bits(after.run(dense_inputs()).at("y"), before.run(dense_inputs()).at("y")))
      << "the changed weights must be the ones that run";
  EXPECT_EQ(compile_file(ext_model.string(), cached(g)).compile_stats().cache, "hit");
}

TEST(CompileCache, TwoProcessesFillingOneFolderLeaveWholeEntries) {
  Folder f("cache_two_processes");
  fs::path model = write_model(f.root, *dense_graph());
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int round = 0; round < 5; ++round) {
          Options o = cached(f);
          o.fusion = round % 2 == 0;  // two entries, each written by both processes
          Executable exe = compile_file(model.string(), o);
          (void)exe.run(dense_inputs());
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child: %s\n", e.what());
        status = 1;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(f.entries(), 2u);
  for (const auto& e : fs::directory_iterator(f.cache()))
    EXPECT_EQ(e.path().extension(), ".syx") << "a temporary file was left: " << e.path();
  for (bool fusion : {true, false}) {
    Options o = cached(f);
    o.fusion = fusion;
    EXPECT_EQ(compile_file(model.string(), o).compile_stats().cache, "hit");
  }
}

TEST(CompileCache, ACorruptEntryIsRemovedWithOneLineAndRebuilt) {
  Folder f("cache_corrupt");
  fs::path model = write_model(f.root, *dense_graph());
  Executable first = compile_file(model.string(), cached(f));
  ASSERT_EQ(f.entries(), 1u);
  fs::path entry = fs::directory_iterator(f.cache())->path();
  std::string bytes = read_file(entry);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x11);
  write_file(entry, bytes);
  ::testing::internal::CaptureStderr();
  Executable rebuilt = compile_file(model.string(), cached(f));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rebuilt.compile_stats().cache, "miss");
  EXPECT_NE(err.find("removed the corrupt entry"), std::string::npos) << err;
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(same_bits(rebuilt.run(dense_inputs()).at("y"), first.run(dense_inputs()).at("y")));
  EXPECT_EQ(compile_file(model.string(), cached(f)).compile_stats().cache, "hit");
}

TEST(CompileCache, TheFolderStaysWithinItsBound) {
  Folder f("cache_bound");
  fs::path model = write_model(f.root, *dense_graph());
  Options o = cached(f);
  compile_file(model.string(), o);
  uint64_t one = fs::file_size(fs::directory_iterator(f.cache())->path());
  o.cache_max_bytes = one + one / 2;  // room for one entry
  o.fusion = false;
  compile_file(model.string(), o);
  EXPECT_EQ(f.entries(), 1u) << "the least recently used entry goes";
  EXPECT_EQ(compile_file(model.string(), o).compile_stats().cache, "hit");
  o.fusion = true;
  EXPECT_EQ(compile_file(model.string(), o).compile_stats().cache, "miss");
}

TEST(CompileCache, AFolderThatCannotBeMadeIsAnErrorNamingIt) {
  Folder f("cache_not_a_folder");
  write_file(f.root / "file", "x");
  Options o;
  o.cache_dir = (f.root / "file").string();
  fs::path model = write_model(f.root, *dense_graph());
  expect_error([&] { compile_file(model.string(), o); }, ErrorCode::InvalidArgument,
               "--cache-dir " + o.cache_dir);
}

}  // namespace
}  // namespace switchyard::testing
