// Model::save_onnx: a built graph (MatMul, If, Loop) written as ONNX, loaded again and run bit
// for bit like the original; the file is a valid ModelProto; unwritable paths and nodes of
// other domains are reported.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/graph.h"
#include "support/op_test_util.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

namespace fs = std::filesystem;
using Feeds = std::map<std::string, Tensor>;

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("sy_save_onnx_{}", ::getpid());
  fs::create_directories(dir);
  return dir / name;
}

// y = matmul(x, w); z = relu(y) if sum(y) > 0 else -y; then n times z = z * 0.5 + b.
Model build_model(const Tensor& w, const Tensor& bias) {
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {"batch", 3});
  Value n = b.placeholder("n", DType::Int64, {});
  Value y = b.matmul(x, b.constant(w, "w"));
  Value positive = b.greater(b.reduce_sum(y), b.scalar(DType::Float32, 0));
  std::vector<Value> z = b.if_else(
      positive, [&](GraphBuilder& t) { return std::vector<Value>{t.relu(y)}; },
      [&](GraphBuilder& e) { return std::vector<Value>{e.op("Neg", {y})[0]}; });
  Value c = b.constant(bias, "bias");
  std::vector<Value> out =
      b.for_loop(n, {z[0]}, [&](GraphBuilder& body, Value, std::vector<Value> carried) {
        return std::vector<Value>{
            body.add(body.mul(carried[0], body.scalar(DType::Float32, 0.5)), c)};
      });
  b.outputs({{"out", out[0]}, {"y", y}});
  return std::move(b).build();
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SaveOnnx, BuiltGraphRoundTripsBitForBit) {
  Tensor w = random_tensor(DType::Float32, {3, 4}, 11);
  Tensor bias = random_tensor(DType::Float32, {4}, 12);
  fs::path path = scratch("built.onnx");
  Model built = build_model(w, bias);
  built.save_onnx(path.string());
  Model loaded = Model::load(path.string());
  EXPECT_EQ(loaded.inputs().size(), 2u);
  ASSERT_EQ(loaded.outputs().size(), 2u);
  EXPECT_EQ(loaded.outputs()[0].name, "out");

  Options options;
  options.device = "cpu";
  Executable a = std::move(built).compile(options);
  Executable b = std::move(loaded).compile(options);
  for (uint64_t seed : {1, 2, 3}) {
    Tensor n(DType::Int64, {});
    n.data<int64_t>()[0] = static_cast<int64_t>(seed + 1);
    Feeds feeds{{"x", random_tensor(DType::Float32, {static_cast<int64_t>(seed) + 1, 3}, seed)},
                {"n", n}};
    Feeds ra = a.run(feeds), rb = b.run(feeds);
    for (const char* name : {"out", "y"}) {
      const Tensor& ta = ra.at(name);
      const Tensor& tb = rb.at(name);
      ASSERT_EQ(ta.shape(), tb.shape()) << name;
      ASSERT_EQ(ta.nbytes(), tb.nbytes()) << name;
      EXPECT_EQ(std::memcmp(ta.raw(), tb.raw(), ta.nbytes()), 0) << name << " seed " << seed;
    }
  }
  fs::remove_all(path.parent_path());
}

TEST(SaveOnnx, FileParsesAsModelProto) {
  fs::path path = scratch("parsed.onnx");
  build_model(random_tensor(DType::Float32, {3, 4}, 5), random_tensor(DType::Float32, {4}, 6))
      .save_onnx(path.string());
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_bytes(path)));
  ASSERT_EQ(proto.opset_import_size(), 1);
  EXPECT_EQ(proto.opset_import(0).domain(), "");
  std::vector<std::string> types;
  for (const auto& node : proto.graph().node()) types.push_back(node.op_type());
  for (const char* type : {"MatMul", "If", "Loop"})
    EXPECT_NE(std::find(types.begin(), types.end(), type), types.end()) << type;
  EXPECT_EQ(proto.graph().input_size(), 2);
  // No temporary file is left beside it.
  EXPECT_EQ(std::distance(fs::directory_iterator(path.parent_path()), fs::directory_iterator()), 1);
  fs::remove_all(path.parent_path());
}

TEST(SaveOnnx, SwitchyardDomainGetsItsOpsetImport) {
  auto graph = std::make_unique<ir::Graph>("main");
  ir::Value* x = graph->add_input("x", ir::Type::tensor(DType::Float32, ir::Shape{4}));
  ir::Node* node = graph->add_node("FusedThing", "fused0", {x}, {"y"}, "ai.switchyard");
  graph->add_output(node->output(0));
  fs::path path = scratch("domain.onnx");
  Model::from_graph(std::move(graph)).save_onnx(path.string());
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(read_bytes(path)));
  std::map<std::string, int64_t> opsets;
  for (const auto& o : proto.opset_import()) opsets[o.domain()] = o.version();
  EXPECT_EQ(opsets.count(""), 1u);
  EXPECT_EQ(opsets.count("ai.switchyard"), 1u);
  EXPECT_EQ(proto.graph().node(0).domain(), "ai.switchyard");
  fs::remove_all(path.parent_path());
}

TEST(SaveOnnx, UnknownDomainNamesTheNode) {
  auto graph = std::make_unique<ir::Graph>("main");
  ir::Value* x = graph->add_input("x", ir::Type::tensor(DType::Float32, ir::Shape{4}));
  ir::Node* node = graph->add_node("Thing", "custom0", {x}, {"y"}, "com.example");
  graph->add_output(node->output(0));
  try {
    Model::from_graph(std::move(graph)).save_onnx(scratch("custom.onnx").string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(e.message().find("custom0"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("com.example"), std::string::npos) << e.message();
  }
  fs::remove_all(scratch("").parent_path());
}

TEST(SaveOnnx, UnwritablePathIsInvalidArgumentNamingIt) {
  std::string path = "/nonexistent-folder-of-switchyard/model.onnx";
  Model m =
      build_model(random_tensor(DType::Float32, {3, 4}, 7), random_tensor(DType::Float32, {4}, 8));
  try {
    m.save_onnx(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace switchyard::testing
