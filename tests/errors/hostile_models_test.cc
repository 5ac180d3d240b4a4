// Hostile model files found by the reliability campaign (issue 10): absurd integer attributes
// and declared shapes. Each gives a clean switchyard::Error with a fitting code through the
// public API — never a crash, never gigabytes allocated — and runs that would never end can
// be stopped by a deadline, a cancellation token or a memory limit.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "ir/check.h"
#include "onnx/onnx_test_util.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t k2To40 = int64_t{1} << 40;
constexpr int64_t k2To62 = int64_t{1} << 62;

using onnx_test::add_float_initializer;
using onnx_test::add_int64_initializer;
using onnx_test::add_node;
using onnx_test::set_int;
using onnx_test::set_ints;

// A graph input, output or body value of tensor type; dims are numbers or symbols.
void declare(onnx::ValueInfoProto* v, const std::string& name, int elem_type,
             const std::vector<std::string>& dims) {
  v->set_name(name);
  onnx_test::set_tensor_type(v->mutable_type(), elem_type, dims);
}

void declare_unshaped(onnx::ValueInfoProto* v, const std::string& name, int elem_type) {
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

void float_initializer(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims,
                       float value) {
  add_float_initializer(g, name, dims,
                        std::vector<float>(static_cast<size_t>(checked_numel(dims)), value));
}

class HostileModel : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = onnx_test::make_model(17);
    graph()->set_name("hostile");
  }

  onnx::GraphProto* graph() { return model_.mutable_graph(); }

  // Writes the model and loads it; the file stays small (a few hundred bytes).
  Model load() {
    std::string path = dir_.file("model.onnx");
    EXPECT_LT(model_.SerializeAsString().size(), 1000u);
    onnx_test::write_model(path, model_);
    return Model::load(path);
  }

  Executable compile(Options options = {}) {
    options.num_threads = 1;
    return load().compile(options);
  }

  onnx_test::TempDir dir_;
  onnx::ModelProto model_;
};

// Runs `f` and returns the Error it throws (fails the test when it throws nothing).
template <typename F>
Error error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error was thrown";
  return Error(ErrorCode::Internal, "none");
}

Tensor filled(std::vector<int64_t> shape, float v) {
  Tensor t(DType::Float32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v;
  return t;
}

TEST_F(HostileModel, DepthToSpaceBlocksizeTwoToTheFortyIsRefused) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"1", "16", "2", "2"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  set_int(add_node(graph(), "DepthToSpace", {"X"}, {"Y"}), "blocksize", k2To40);
  Error e = error_of([&] { compile(); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
  EXPECT_NE(e.message().find("DepthToSpace"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("blocksize"), std::string::npos) << e.what();
}

TEST_F(HostileModel, LrnSizeTwoToTheSixtyTwoRunsAsAWindowOverEveryChannel) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"1", "3", "4", "4"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  set_int(add_node(graph(), "LRN", {"X"}, {"Y"}), "size", k2To62);
  Executable exe = compile();
  Tensor x = testing::random_tensor(DType::Float32, {1, 3, 4, 4}, 3);
  Tensor y = exe.run({{"X", x}}).at("Y");
  // The window covers all channels; alpha / size is ~0, so Y = X / bias^beta = X.
  for (int64_t i = 0; i < y.numel(); ++i)
    EXPECT_NEAR(y.data<float>()[i], x.data<float>()[i], 1e-5f * std::fabs(x.data<float>()[i]));
}

TEST_F(HostileModel, ConvPadsOfABillionAreRefusedAtCompileWhenStatic) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"1", "1", "4", "4"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  float_initializer(graph(), "W", {1, 1, 3, 3}, 0.5f);
  set_ints(add_node(graph(), "Conv", {"X", "W"}, {"Y"}), "pads", std::vector<int64_t>(4, 1e9));
  Error e = error_of([&] { compile(); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
  EXPECT_NE(e.message().find("Conv"), std::string::npos) << e.what();
}

TEST_F(HostileModel, ConvPadsOfABillionAreRefusedAtRunBeforeAnyPlanWhenSymbolic) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"N", "1", "H", "W"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  float_initializer(graph(), "W", {1, 1, 3, 3}, 0.5f);
  set_ints(add_node(graph(), "Conv", {"X", "W"}, {"Y"}), "pads", std::vector<int64_t>(4, 1e9));
  Executable exe = compile();
  Error e = error_of([&] { exe.run({{"X", filled({1, 1, 4, 4}, 1)}}); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
  EXPECT_NE(e.message().find("Conv_0"), std::string::npos) << e.what();
}

TEST_F(HostileModel, ConvWithStridesAndDilationsNearInt64MaxIsRefused) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"N", "1", "8", "8"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  float_initializer(graph(), "W", {1, 1, 3, 3}, 0.5f);
  set_ints(add_node(graph(), "Conv", {"X", "W"}, {"Y"}), "dilations", {k2To62, k2To62});
  Error e = error_of([&] { compile(); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
}

// A 1-D int64 shape input declared with four billion elements: type inference must not size a
// vector by it (a 170-byte file once took 4 GB in `explain`).
class DeclaredShapeLength : public HostileModel,
                            public ::testing::WithParamInterface<std::string> {};

TEST_P(DeclaredShapeLength, FourBillionIsRefusedWithoutAllocating) {
  const std::string op = GetParam();
  if (op != "ConstantOfShape")
    declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"2", "2"});
  declare(graph()->add_input(), "S", onnx::TensorProto::INT64, {"4000000000"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  if (op == "ConstantOfShape")
    add_node(graph(), op, {"S"}, {"Y"});
  else
    add_node(graph(), op, {"X", "S"}, {"Y"});
  auto start = Clock::now();
  Error e = error_of([&] { compile(); });
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
  EXPECT_NE(e.message().find("4000000000"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("'S'"), std::string::npos) << e.what();
}

INSTANTIATE_TEST_SUITE_P(ShapeInputs, DeclaredShapeLength,
                         ::testing::Values("Reshape", "Expand", "ConstantOfShape", "Unsqueeze"));

TEST_F(HostileModel, RoiAlignSamplingRatioTwoToTheFortyIsRefused) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"1", "1", "4", "4"});
  declare(graph()->add_input(), "R", onnx::TensorProto::FLOAT, {"1", "4"});
  declare(graph()->add_input(), "I", onnx::TensorProto::INT64, {"1"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  set_int(add_node(graph(), "RoiAlign", {"X", "R", "I"}, {"Y"}), "sampling_ratio", k2To40);
  Error e = error_of([&] { compile(); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
  EXPECT_NE(e.message().find("sampling_ratio"), std::string::npos) << e.what();
}

TEST_F(HostileModel, RoiAlignAdaptiveGridOfAHugeOrNanRoiIsRefusedAtRun) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"1", "1", "4", "4"});
  declare(graph()->add_input(), "R", onnx::TensorProto::FLOAT, {"1", "4"});
  declare(graph()->add_input(), "I", onnx::TensorProto::INT64, {"1"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  add_node(graph(), "RoiAlign", {"X", "R", "I"}, {"Y"});
  Executable exe = compile();
  Tensor index(DType::Int64, {1});
  index.data<int64_t>()[0] = 0;
  for (float far : {1e30f, std::nanf("")}) {
    Tensor rois = filled({1, 4}, 0);
    rois.data<float>()[2] = far;
    rois.data<float>()[3] = far;
    Error e = error_of([&] {
      exe.run({{"X", filled({1, 1, 4, 4}, 1)}, {"R", rois}, {"I", index}});
    });
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    EXPECT_NE(e.message().find("ROI 0"), std::string::npos) << e.what();
  }
  // An ordinary ROI still runs.
  Tensor rois = filled({1, 4}, 0);
  rois.data<float>()[2] = 3;
  rois.data<float>()[3] = 3;
  EXPECT_NO_THROW(exe.run({{"X", filled({1, 1, 4, 4}, 1)}, {"R", rois}, {"I", index}}));
}

// Loop(M = 2^62, cond = true) over an identity body: a run that would take centuries.
void add_endless_loop(onnx::GraphProto* g, bool with_scan_output) {
  add_int64_initializer(g, "M", {}, {k2To62});
  auto* c = g->add_initializer();
  c->set_name("C");
  c->set_data_type(onnx::TensorProto::BOOL);
  c->add_int32_data(1);
  declare(g->add_input(), "V", onnx::TensorProto::FLOAT, {"N"});
  declare(g->add_output(), "VO", onnx::TensorProto::FLOAT, {"N"});
  std::vector<std::string> outs = {"VO"};
  if (with_scan_output) {
    declare_unshaped(g->add_output(), "SO", onnx::TensorProto::FLOAT);
    outs.push_back("SO");
  }
  auto* loop = add_node(g, "Loop", {"M", "C", "V"}, outs);
  onnx::GraphProto body_graph;
  onnx::GraphProto* body = &body_graph;
  body->set_name("body");
  declare(body->add_input(), "i", onnx::TensorProto::INT64, {});
  declare(body->add_input(), "c", onnx::TensorProto::BOOL, {});
  declare(body->add_input(), "v", onnx::TensorProto::FLOAT, {"N"});
  declare(body->add_output(), "co", onnx::TensorProto::BOOL, {});
  declare(body->add_output(), "vo", onnx::TensorProto::FLOAT, {"N"});
  add_node(body, "Identity", {"c"}, {"co"});
  add_node(body, "Identity", {"v"}, {"vo"});
  if (with_scan_output) {
    // A fresh tensor each iteration (Identity would alias v and hold nothing new).
    declare_unshaped(body->add_output(), "so", onnx::TensorProto::FLOAT);
    add_node(body, "Neg", {"v"}, {"so"});
  }
  onnx_test::set_graph(loop, "body", std::move(body_graph));
}

TEST_F(HostileModel, EndlessLoopStopsAtItsDeadline) {
  add_endless_loop(graph(), false);
  Executable exe = compile();
  RunOptions options;
  options.deadline_ms = 200;
  auto start = Clock::now();
  Error e = error_of([&] { exe.run({{"V", filled({4}, 1)}}, options); });
  auto took = Clock::now() - start;
  EXPECT_EQ(e.code(), ErrorCode::Cancelled) << e.what();
  EXPECT_NE(e.message().find("200 ms"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("Loop"), std::string::npos) << e.what();
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST_F(HostileModel, EndlessLoopStopsWhenCancelledFromAnotherThread) {
  add_endless_loop(graph(), false);
  Executable exe = compile();
  RunOptions options;
  std::thread canceller([token = options.cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    token.cancel();
  });
  auto start = Clock::now();
  Error e = error_of([&] { exe.run({{"V", filled({4}, 1)}}, options); });
  canceller.join();
  EXPECT_EQ(e.code(), ErrorCode::Cancelled) << e.what();
  EXPECT_NE(e.message().find("cancelled"), std::string::npos) << e.what();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  // The token serves the next run once reset; a cancelled token stops a run at its start.
  EXPECT_TRUE(options.cancel.cancelled());
  EXPECT_EQ(error_of([&] {
              exe.run({{"V", filled({4}, 1)}}, options);
            }).code(),
            ErrorCode::Cancelled);
}

TEST_F(HostileModel, GrowingScanOutputStopsAtTheMemoryLimitAndTheNextRunSucceeds) {
  add_endless_loop(graph(), true);
  Options options;
  options.memory_limits = {"cpu=64M"};
  Executable exe = compile(options);
  // Each iteration keeps a 64 KB slice: the limit is reached after ~1000 iterations.
  Error e = error_of([&] { exe.run({{"V", filled({16384}, 1)}}); });
  EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
  EXPECT_NE(e.message().find("cpu=67108864"), std::string::npos) << e.what();
  EXPECT_EQ(error_of([&] { exe.run({{"V", filled({16384}, 1)}}); }).code(), ErrorCode::OutOfMemory);
}

TEST_F(HostileModel, MemoryLimitRefusesALargeRunAndTheNextSmallRunSucceeds) {
  // Y = Tile(X, [R, 1]) with X float [1, N] and the repeat count taken from input R.
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"1", "N"});
  declare(graph()->add_input(), "R", onnx::TensorProto::INT64, {"2"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  add_node(graph(), "Tile", {"X", "R"}, {"Y"});
  Options options;
  options.memory_limits = {"cpu=1M"};
  Executable exe = compile(options);
  Tensor repeats(DType::Int64, {2});
  repeats.data<int64_t>()[0] = 100000;  // 100000 x 1024 floats = 400 MB
  repeats.data<int64_t>()[1] = 1;
  Error e = error_of([&] { exe.run({{"X", filled({1, 1024}, 2)}, {"R", repeats}}); });
  EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
  EXPECT_NE(e.message().find("Tile"), std::string::npos) << e.what();
  repeats.data<int64_t>()[0] = 10;
  Tensor y = exe.run({{"X", filled({1, 1024}, 2)}, {"R", repeats}}).at("Y");
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{10, 1024}));
  EXPECT_EQ(y.data<float>()[10 * 1024 - 1], 2.0f);
}

// A device's --memory-limit is the executable's budget there, given to its partitions through
// compile and shared by its runs: on a simulated device (as on a GPU) a run that would pass it
// stops with OutOfMemory naming the device, and the next, smaller run succeeds.
TEST_F(HostileModel, DeviceMemoryLimitRefusesALargeRunAndTheNextSmallRunSucceeds) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"1", "N"});
  declare(graph()->add_input(), "R", onnx::TensorProto::INT64, {"2"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  add_node(graph(), "Tile", {"X", "R"}, {"Y"});
  Options options;
  options.sim_devices = 1;
  options.device = "sim:0";
  options.pins = {"*=sim:0"};
  options.memory_limits = {"sim:0=1M"};
  Executable exe = compile(options);
  ASSERT_NE(exe.placement_summary().find("sim:0"), std::string::npos) << exe.placement_summary();
  Tensor repeats(DType::Int64, {2});
  repeats.data<int64_t>()[0] = 1000;  // 1000 x 1024 floats = 4 MB
  repeats.data<int64_t>()[1] = 1;
  Error e = error_of([&] { exe.run({{"X", filled({1, 1024}, 2)}, {"R", repeats}}); });
  EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
  EXPECT_NE(e.message().find("--memory-limit sim:0=1048576"), std::string::npos) << e.what();
  repeats.data<int64_t>()[0] = 10;
  for (int i = 0; i < 3; ++i) {
    Tensor y = exe.run({{"X", filled({1, 1024}, 2)}, {"R", repeats}}).at("Y");
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{10, 1024}));
    EXPECT_EQ(y.data<float>()[10 * 1024 - 1], 2.0f);
  }
  // Without the limit the large run fits.
  options.memory_limits.clear();
  repeats.data<int64_t>()[0] = 1000;
  EXPECT_EQ(compile(options).run({{"X", filled({1, 1024}, 2)}, {"R", repeats}}).at("Y").shape(),
            (std::vector<int64_t>{1000, 1024}));
}

TEST_F(HostileModel, FlattenOfAnEmptyTensorWithHugeDimsIsRefusedNotWrapped) {
  // Found by fuzz_compile_run (campaign 2 on the GPU machine's cores): [0, 2^63-1, 7] holds no
  // element, but its inner size 2^63-1 x 7 does not fit int64.
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"A", "B", "C"});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  add_node(graph(), "Flatten", {"X"}, {"Y"});
  Executable exe = compile();
  Tensor x(DType::Float32, {0, std::numeric_limits<int64_t>::max(), 7});
  Error e = error_of([&] { exe.run({{"X", x}}); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
  EXPECT_NE(e.message().find("Flatten"), std::string::npos) << e.what();
  EXPECT_EQ(exe.run({{"X", Tensor(DType::Float32, {0, 5, 7})}}).at("Y").shape(),
            (std::vector<int64_t>{0, 35}));
}

// Found by the final local campaign: Unique's flattened size of a declared [15, 2^62] input
// overflowed in inference.
TEST_F(HostileModel, UniqueOfAnInputDeclaredTooLargeIsRefused) {
  declare(graph()->add_input(), "X", onnx::TensorProto::FLOAT, {"15", std::to_string(k2To62)});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  add_node(graph(), "Unique", {"X"}, {"Y"});
  Error e = error_of([&] { compile(); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
  EXPECT_NE(e.message().find("Unique"), std::string::npos) << e.what();
}

// Found by the same campaign: a float Range whose count is -6.8e38 was cast to int64
// (undefined); it is empty, as numpy.arange gives.
TEST_F(HostileModel, FloatRangeWithAHugeNegativeCountIsEmpty) {
  for (const char* name : {"S", "L", "D"})
    declare(graph()->add_input(), name, onnx::TensorProto::FLOAT, {});
  declare_unshaped(graph()->add_output(), "Y", onnx::TensorProto::FLOAT);
  add_node(graph(), "Range", {"S", "L", "D"}, {"Y"});
  Executable exe = compile();
  auto scalar = [](float v) {
    Tensor t(DType::Float32, {});
    t.data<float>()[0] = v;
    return t;
  };
  float big = std::numeric_limits<float>::max();
  Tensor y = exe.run({{"S", scalar(big)}, {"L", scalar(-big)}, {"D", scalar(1)}}).at("Y");
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(error_of([&] {
              exe.run({{"S", scalar(0)}, {"L", scalar(std::nanf(""))}, {"D", scalar(1)}});
            }).code(),
            ErrorCode::InvalidArgument);
}

TEST(StandardExceptions, NeverLeaveThePublicApiAsAnythingButError) {
  auto code_of = [](auto f) {
    try {
      translate_std_exceptions("testing", f);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::Internal;
  };
  EXPECT_EQ(code_of([] { throw std::bad_alloc(); }), ErrorCode::OutOfMemory);
  EXPECT_EQ(code_of([] { throw std::length_error("vector"); }), ErrorCode::InvalidModel);
  EXPECT_EQ(code_of([] { throw std::runtime_error("x"); }), ErrorCode::Internal);
  EXPECT_EQ(code_of([] { SY_THROW(Cancelled, "kept"); }), ErrorCode::Cancelled);
}

}  // namespace
}  // namespace switchyard
