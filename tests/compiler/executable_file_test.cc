// Saved executables (.syx) on small graphs: what a file keeps (bits, report, a Loop body,
// sequences), loading on other devices (DeviceMismatch, --relower), options given at load, and
// every kind of bad file — empty, random, truncated, corrupted, another format version, a valid
// checksum over a broken placement — each an Error naming the file, never a crash.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "compiler/dense_model.h"
#include "ir/graph.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

namespace fs = std::filesystem;
using ir::DType;

fs::path temp_file(const std::string& name) { return fs::path(::testing::TempDir()) / name; }

// Recomputes the header's checksum after an edit, so the edit reaches the reader's later checks.
void fix_checksum(std::string& bytes) {
  uint64_t sum = XXH3_64bits(bytes.data() + 32, bytes.size() - 32);
  std::memcpy(bytes.data() + 24, &sum, sizeof(sum));
}

fs::path saved_dense(const std::string& name, const Options& options) {
  Executable exe = Model::from_graph(dense_graph()).compile(options);
  fs::path file = temp_file(name);
  exe.save(file.string());
  return file;
}

TEST(SavedExecutable, RunsBitIdenticallyAtEveryShapeWithTheSameReport) {
  Options options;
  options.num_threads = 1;
  Executable exe = Model::from_graph(dense_graph()).compile(options);
  fs::path file = temp_file("dense.syx");
  exe.save(file.string());
  EXPECT_TRUE(is_executable_file(file.string()));
  Executable loaded = Executable::load(file.string(), options);
  EXPECT_EQ(loaded.explain("json"), exe.explain("json"));
  EXPECT_EQ(loaded.placement_summary(), exe.placement_summary());
  for (int64_t n : {1, 3, 7}) {
    auto want = exe.run(dense_inputs(n));
    auto got = loaded.run(dense_inputs(n));
    EXPECT_TRUE(same_bits(got.at("y"), want.at("y"))) << "batch " << n;
  }
  // Saving what was loaded gives a file that loads to the same executable again.
  fs::path again = temp_file("dense_again.syx");
  loaded.save(again.string());
  EXPECT_TRUE(same_bits(Executable::load(again.string(), options).run(dense_inputs()).at("y"),
                        exe.run(dense_inputs()).at("y")));
}

TEST(SavedExecutable, KeepsControlFlowBodiesAndSequences) {
  // y = Loop(3 times: acc = acc * 2 + x) over a body reading x from the outer graph; and a
  // sequence built from the inputs whose length is an output.
  auto g = std::make_unique<ir::Graph>("loop");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim(4)}));
  ir::Tensor three(DType::Int64, {});
  three.data<int64_t>()[0] = 3;
  ir::Value* trip = g->add_constant("trip", three);
  ir::Tensor yes(DType::Bool, {});
  yes.data<bool>()[0] = true;
  ir::Value* cond = g->add_constant("cond", yes);
  ir::Value* init = g->add_constant("init", ir::Tensor(DType::Float32, {4}));
  auto body = std::make_shared<ir::Graph>("body", g.get());
  body->add_input("i", ir::Type::tensor(DType::Int64, ir::Shape{}));
  ir::Value* c_in = body->add_input("c_in", ir::Type::tensor(DType::Bool, ir::Shape{}));
  ir::Value* acc = body->add_input("acc", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim(4)}));
  ir::Value* two = body->add_constant("two", random_tensor(DType::Float32, {1}, 5));
  ir::Value* twice = body->add_node("Mul", "twice", {acc, two}, {"twice"})->output(0);
  ir::Value* next = body->add_node("Add", "plus_x", {twice, x}, {"next"})->output(0);
  ir::Value* c_out = body->add_node("Identity", "keep", {c_in}, {"c_out"})->output(0);
  body->add_output(c_out);
  body->add_output(next);
  ir::Node* loop = g->add_node("Loop", "loop", {trip, cond, init}, {"y"});
  loop->set_attribute(ir::Attribute::make_graph("body", body));
  g->add_output(loop->output(0));
  ir::Value* seq = g->add_node("SequenceConstruct", "seq", {x, x}, {"s"})->output(0);
  g->add_output(g->add_node("SequenceLength", "len", {seq}, {"n"})->output(0));

  Options options;
  options.num_threads = 1;
  Executable exe = Model::from_graph(std::move(g)).compile(options);
  fs::path file = temp_file("loop.syx");
  exe.save(file.string());
  Executable loaded = Executable::load(file.string(), options);
  std::map<std::string, Tensor> in = {{"x", random_tensor(DType::Float32, {4}, 6)}};
  auto want = exe.run(in);
  auto got = loaded.run(in);
  EXPECT_TRUE(same_bits(got.at("y"), want.at("y")));
  EXPECT_EQ(got.at("n").scalar_as_int(), 2);
  EXPECT_EQ(loaded.explain("json"), exe.explain("json"));
}

TEST(SavedExecutable, AMissingDeviceIsDeviceMismatchUnlessRelowered) {
  Options two;
  two.num_threads = 1;
  two.sim_devices = 2;
  two.device = "sim:0";
  two.pins = {"softmax=sim:1"};
  fs::path file = saved_dense("two_sims.syx", two);
  Options one;
  one.num_threads = 1;
  one.sim_devices = 1;
  expect_error([&] { Executable::load(file.string(), one); }, ErrorCode::DeviceMismatch, "sim:1");
  try {
    Executable::load(file.string(), one);
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(file.string()), std::string::npos) << m;
    // The devices present are listed (a GPU machine lists its cuda devices too).
    size_t listed = m.find("(devices: cpu");
    ASSERT_NE(listed, std::string::npos) << m;
    EXPECT_NE(m.find("sim:0", listed), std::string::npos) << m;
    EXPECT_NE(m.find("--relower"), std::string::npos) << m;
  }
  one.allow_relower = true;
  Executable relowered = Executable::load(file.string(), one);
  EXPECT_NE(relowered.explain("text").find("note: relowered at load"), std::string::npos)
      << relowered.explain("text");
  EXPECT_NE(relowered.explain("text").find(
                "compiled for sim:1 (simulated accelerator 1), which is not present"),
            std::string::npos);
  EXPECT_EQ(relowered.placement_summary().find("sim:1"), std::string::npos)
      << relowered.placement_summary();
  Executable original = Model::from_graph(dense_graph()).compile(two);
  auto want = original.run(dense_inputs());
  auto got = relowered.run(dense_inputs());
  EXPECT_TRUE(same_bits(got.at("y"), want.at("y")));
}

TEST(SavedExecutable, PlacementAndPrecisionCannotChangeAtLoad) {
  Options options;
  options.num_threads = 1;
  fs::path file = saved_dense("fixed.syx", options);
  Options fp16 = options;
  fp16.precision = "fp16";
  expect_error([&] { Executable::load(file.string(), fp16); }, ErrorCode::InvalidArgument,
               "--precision was fixed when it was compiled");
  Options device = options;
  device.device = "sim:0";
  device.sim_devices = 1;
  expect_error([&] { Executable::load(file.string(), device); }, ErrorCode::InvalidArgument,
               "--device");
  Options nofusion = options;
  nofusion.fusion = false;
  expect_error([&] { Executable::load(file.string(), nofusion); }, ErrorCode::InvalidArgument,
               "--no-fusion");
  // The same values are fine; so are threads and the shape cache.
  Options same = options;
  same.num_threads = 2;
  same.shape_cache_capacity = 2;
  same.device = "";
  EXPECT_NO_THROW(Executable::load(file.string(), same));
}

TEST(SavedExecutable, BadFilesAreErrorsNamingTheFile) {
  Options options;
  options.num_threads = 1;
  fs::path good = saved_dense("good.syx", options);
  const std::string bytes = read_file(good);
  ASSERT_GT(bytes.size(), 16384u);
  fs::path bad = temp_file("bad.syx");
  auto expect_refused = [&](const std::string& content, ErrorCode code, const std::string& what) {
    write_file(bad, content);
    SCOPED_TRACE(what);
    expect_error([&] { Executable::load(bad.string(), options); }, code, bad.string());
    expect_error([&] { Executable::load(bad.string(), options); }, code, what);
  };
  expect_refused("", ErrorCode::InvalidModel, "empty");
  std::mt19937 rng(7);
  std::string random(4096, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  expect_refused(random, ErrorCode::InvalidModel, "not a saved Switchyard executable");
  for (size_t cut : {size_t{8}, size_t{31}, size_t{100}, bytes.size() / 2, bytes.size() - 1})
    expect_refused(bytes.substr(0, cut), ErrorCode::InvalidModel,
                   cut < 32 ? "not a saved Switchyard executable" : "truncated");
  expect_refused(bytes + "tail", ErrorCode::InvalidModel, "appended");
  // One flipped byte anywhere after the header: the checksum.
  for (size_t at : {size_t{40}, size_t{300}, bytes.size() / 2, bytes.size() - 10}) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
    expect_refused(flipped, ErrorCode::InvalidModel, "checksum");
  }
  // Another format version is refused by name.
  std::string v2 = bytes;
  uint32_t version = 2;
  std::memcpy(v2.data() + 8, &version, sizeof(version));
  expect_refused(v2, ErrorCode::Unsupported, "format version 2");
  // A section pointing outside the file, with a valid checksum.
  std::string outside = bytes;
  uint64_t huge = uint64_t{1} << 62;
  std::memcpy(outside.data() + 32 + 8, &huge, sizeof(huge));
  fix_checksum(outside);
  expect_refused(outside, ErrorCode::InvalidModel, "outside the file");
  // Metadata that is not JSON, and a placement naming a node twice, both with valid checksums.
  uint64_t meta = 0;  // the first section's offset: META
  std::memcpy(&meta, bytes.data() + 32 + 8, sizeof(meta));
  ASSERT_LT(meta, bytes.size());
  ASSERT_EQ(bytes[meta], '{');
  std::string not_json = bytes;
  not_json[meta] = '#';
  fix_checksum(not_json);
  expect_refused(not_json, ErrorCode::InvalidModel, "not valid JSON");
  size_t nodes = bytes.find("\"nodes\":[0,1,2,3]");
  ASSERT_NE(nodes, std::string::npos) << "the placement record's first partition";
  std::string twice = bytes;
  twice.replace(nodes, std::strlen("\"nodes\":[0,1,2,3]"), "\"nodes\":[0,1,1,3]");
  fix_checksum(twice);
  expect_refused(twice, ErrorCode::InvalidModel, "twice");
  // A partition input flagged as read from host memory on a device that takes none there.
  Options sim = options;
  sim.sim_devices = 1;
  sim.device = "sim:0";
  sim.pins = {"*=sim:0"};  // all on sim:0, however small (else copies would cost more)
  fs::path on_sim = saved_dense("on_sim.syx", sim);
  std::string sim_bytes = read_file(on_sim);
  size_t flag = sim_bytes.find("\"input_on_host\":[0]");
  ASSERT_NE(flag, std::string::npos);
  sim_bytes.replace(flag, std::strlen("\"input_on_host\":[0]"), "\"input_on_host\":[1]");
  fix_checksum(sim_bytes);
  expect_refused(sim_bytes, ErrorCode::InvalidModel, "in host memory, which sim:0 does not take");
  // A constant named as a partition input (constants never cross partitions).
  size_t input = bytes.find("\"inputs\":[\"x\"]");
  ASSERT_NE(input, std::string::npos);
  std::string constant = bytes;
  constant.replace(input, std::strlen("\"inputs\":[\"x\"]"), "\"inputs\":[\"b\"]");
  fix_checksum(constant);
  expect_refused(constant, ErrorCode::InvalidModel, "takes the constant 'b' as an input");
  // A final copy of a value no partition reads afterwards (found by fuzz_executable: the run
  // dropped the value after its last read and the copy found nothing): it runs as the unforged
  // file does. The copy's bytes come out of the report's policy text, so the sections keep
  // their offsets.
  std::string late = read_file(on_sim);
  // sim:0's device index in the record (after cuda:N on a machine with GPUs): the final copy's.
  const std::string final_copy = R"({"before":-1,"from":)";
  size_t index_at = late.find(final_copy);
  ASSERT_NE(index_at, std::string::npos);
  index_at += final_copy.size();
  const std::string sim_index = late.substr(index_at, late.find(',', index_at) - index_at);
  const std::string extra = R"({"before":-1,"from":)" + sim_index + R"(,"to":0,"value":"x"},)";
  size_t copies = late.find("\"copies\":[{\"before\"");
  size_t policy = late.find("\"policy\":\"");
  ASSERT_NE(copies, std::string::npos);
  ASSERT_NE(policy, std::string::npos);
  ASSERT_LT(copies, policy);
  late.erase(policy + std::strlen("\"policy\":\""), extra.size());
  late.insert(copies + std::strlen("\"copies\":["), extra);
  fix_checksum(late);
  fs::path late_file = temp_file("late_copy.syx");
  write_file(late_file, late);
  Executable unforged = Executable::load(on_sim.string(), sim);
  Executable forged = Executable::load(late_file.string(), sim);
  auto expected = unforged.run(dense_inputs());
  auto got = forged.run(dense_inputs());
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_TRUE(same_bits(got.at("y"), expected.at("y")));
  EXPECT_NO_THROW(Executable::load(good.string(), options));
  expect_error([&] { Executable::load(temp_file("absent.syx").string(), options); },
               ErrorCode::InvalidArgument, "cannot open");
}

TEST(SavedExecutable, NamesMustBeTextAndNoConfigPathIsReadFromAFile) {
  // A name that is not UTF-8 would break the JSON of reports and saved files: refused at
  // compile, naming it escaped.
  auto bad = std::make_unique<ir::Graph>("t\xefst");
  ir::Value* x = bad->add_input("x", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim(2)}));
  bad->add_output(bad->add_node("Relu", "relu", {x}, {"y"})->output(0));
  expect_error([&] { Model::from_graph(std::move(bad)).compile({}); }, ErrorCode::InvalidModel,
               "the graph name 't\\xefst' is not valid UTF-8");
  // A --sim-config path saved in a file is never read at load: the caller must give it.
  fs::path config = temp_file("sims.json");
  {
    std::ofstream out(config);
    out << R"([{"name": "npu"}])";
  }
  Options o;
  o.num_threads = 1;
  o.sim_config = config.string();
  o.device = "sim:0";
  fs::path file = saved_dense("sim_config.syx", o);
  expect_error([&] { Executable::load(file.string(), {}); }, ErrorCode::InvalidArgument,
               "give --sim-config");
  Options with_config;
  with_config.sim_config = config.string();
  EXPECT_NO_THROW(Executable::load(file.string(), with_config));
}

}  // namespace
}  // namespace switchyard::testing
