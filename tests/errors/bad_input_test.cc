// Bad input of every kind gives a switchyard::Error with a code and a message naming the thing
// at fault, through the public API — never a crash.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "switchyard/switchyard.hpp"

namespace switchyard {
namespace {

namespace fs = std::filesystem;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("switchyard_bad_input_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A model computing Y = Relu(X + W) with X float[N,4] and W an initializer.
  onnx::ModelProto small_model() {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("small");
    auto* x = g->add_input();
    x->set_name("X");
    auto* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    tt->mutable_shape()->add_dim()->set_dim_value(4);
    auto* y = g->add_output();
    y->set_name("Y");
    y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* w = g->add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(4);
    for (float v : {0.5f, -1.0f, 2.0f, -0.25f}) w->add_float_data(v);
    auto* add = g->add_node();
    add->set_op_type("Add");
    add->set_name("add");
    add->add_input("X");
    add->add_input("W");
    add->add_output("S");
    auto* relu = g->add_node();
    relu->set_op_type("Relu");
    relu->set_name("relu");
    relu->add_input("S");
    relu->add_output("Y");
    return m;
  }

  std::string save(const onnx::ModelProto& m, const std::string& name = "model.onnx") {
    fs::path p = dir_ / name;
    std::ofstream out(p, std::ios::binary);
    m.SerializeToOstream(&out);
    return p.string();
  }

  // Expects `f` to throw an Error with `code` whose message contains every word of `names`.
  template <typename F>
  void expect_error(F&& f, ErrorCode code, const std::vector<std::string>& names) {
    try {
      f();
      ADD_FAILURE() << "no error thrown";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      for (const auto& n : names)
        EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
            << "message does not name '" << n << "': " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "non-Error exception: " << e.what();
    }
  }

  fs::path dir_;
};

TEST_F(BadInput, GoodModelRuns) {
  Executable exe = Model::load(save(small_model())).compile({.num_threads = 1});
  Tensor x(DType::Float32, {2, 4});
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = static_cast<float>(i) - 3.5f;
  auto out = exe.run({{"X", x}});
  const float w[4] = {0.5f, -1.0f, 2.0f, -0.25f};
  for (int i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(out.at("Y").data<float>()[i], std::max(0.0f, x.data<float>()[i] + w[i % 4]));
}

TEST_F(BadInput, TruncatedFile) {
  std::string bytes = small_model().SerializeAsString();
  fs::path p = dir_ / "truncated.onnx";
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  expect_error([&] { Model::load(p.string()); }, ErrorCode::InvalidModel, {"truncated.onnx"});
}

TEST_F(BadInput, RandomBytes) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    std::string bytes(1000 + trial * 37, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    fs::path p = dir_ / "random.onnx";
    std::ofstream(p, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    try {
      Model::load(p.string()).compile();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("random.onnx"), std::string::npos) << e.what();
      continue;
    }
    ADD_FAILURE() << "random bytes loaded as a model";
  }
}

TEST_F(BadInput, MissingFile) {
  expect_error([&] { Model::load((dir_ / "nope.onnx").string()); }, ErrorCode::InvalidArgument,
               {"nope.onnx"});
}

TEST_F(BadInput, UnknownOp) {
  auto m = small_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("FrobnicateRelu");
  expect_error([&] { Model::load(save(m)).compile(); }, ErrorCode::Unsupported,
               {"FrobnicateRelu", "relu"});
}

TEST_F(BadInput, BadAttribute) {
  auto m = small_model();
  auto* concat = m.mutable_graph()->add_node();
  concat->set_op_type("Concat");
  concat->set_name("cat");
  concat->add_input("Y");
  concat->add_input("Y");
  concat->add_output("Z");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::STRING);
  axis->set_s("one");
  m.mutable_graph()->mutable_output(0)->set_name("Z");
  expect_error([&] { Model::load(save(m)).compile(); }, ErrorCode::InvalidModel, {"cat", "axis"});
}

TEST_F(BadInput, WrongInputDtypeRankShapeAndMissing) {
  Executable exe = Model::load(save(small_model())).compile({.num_threads = 1});
  expect_error(
      [&] {
        exe.run({{"X", Tensor(DType::Int32, {2, 4})}});
      },
      ErrorCode::InvalidArgument, {"X", "int32"});
  expect_error(
      [&] {
        exe.run({{"X", Tensor(DType::Float32, {8})}});
      },
      ErrorCode::InvalidArgument, {"X", "rank"});
  expect_error(
      [&] {
        exe.run({{"X", Tensor(DType::Float32, {2, 5})}});
      },
      ErrorCode::InvalidArgument, {"X", "dim 1"});
  expect_error([&] { exe.run({}); }, ErrorCode::InvalidArgument, {"X", "missing"});
  expect_error(
      [&] {
        exe.run({{"X", Tensor(DType::Float32, {2, 4})}, {"Q", Tensor()}});
      },
      ErrorCode::InvalidArgument, {"Q"});
}

// Moves W's data to an external file and points `location` at `path`.
onnx::ModelProto with_external_weight(onnx::ModelProto m, const std::string& location) {
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = w->add_external_data();
  loc->set_key("location");
  loc->set_value(location);
  return m;
}

TEST_F(BadInput, ExternalDataEscapes) {
  float data[4] = {1, 2, 3, 4};
  fs::create_directories(dir_ / "model");
  fs::path outside = dir_ / "weights.bin";
  std::ofstream(outside, std::ios::binary).write(reinterpret_cast<char*>(data), sizeof data);
  std::ofstream(dir_ / "model" / "weights.bin", std::ios::binary)
      .write(reinterpret_cast<char*>(data), sizeof data);
  fs::create_symlink(outside, dir_ / "model" / "link.bin");

  auto good = with_external_weight(small_model(), "weights.bin");
  EXPECT_NO_THROW(Model::load(save(good, "model/good.onnx")).compile());

  auto absolute = with_external_weight(small_model(), outside.string());
  expect_error([&] { Model::load(save(absolute, "model/abs.onnx")); }, ErrorCode::InvalidModel,
               {"W", "weights.bin"});
  auto dotdot = with_external_weight(small_model(), "../weights.bin");
  expect_error([&] { Model::load(save(dotdot, "model/up.onnx")); }, ErrorCode::InvalidModel,
               {"W", "../weights.bin"});
  auto link = with_external_weight(small_model(), "link.bin");
  expect_error([&] { Model::load(save(link, "model/link.onnx")); }, ErrorCode::InvalidModel,
               {"W", "link.bin"});
  auto past_end = with_external_weight(small_model(), "weights.bin");
  auto* kv = past_end.mutable_graph()->mutable_initializer(0)->add_external_data();
  kv->set_key("offset");
  kv->set_value("8");
  expect_error([&] { Model::load(save(past_end, "model/past.onnx")); }, ErrorCode::InvalidModel,
               {"W"});
}

TEST_F(BadInput, DimsOverflowInt64) {
  auto m = small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 32);
  w->add_dims(int64_t{1} << 32);
  expect_error([&] { Model::load(save(m)); }, ErrorCode::InvalidModel, {"W"});
}

TEST_F(BadInput, RawDataSizeMismatch) {
  auto m = small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_raw_data(std::string(12, '\0'));
  expect_error([&] { Model::load(save(m)); }, ErrorCode::InvalidModel, {"W", "12"});
}

// If inside If inside If ... `levels` deep.
onnx::ModelProto nested_if_model(int levels) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("nested");
  auto* c = g->add_input();
  c->set_name("C");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  c->mutable_type()->mutable_tensor_type()->mutable_shape();
  g->add_output()->set_name("Y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::BOOL);
  onnx::GraphProto* current = g;
  for (int depth = 0; depth < levels; ++depth) {
    auto* node = current->add_node();
    node->set_op_type("If");
    node->set_name("if" + std::to_string(depth));
    node->add_input("C");
    node->add_output("Y");
    auto* then_attr = node->add_attribute();
    then_attr->set_name("then_branch");
    then_attr->set_type(onnx::AttributeProto::GRAPH);
    auto* else_attr = node->add_attribute();
    else_attr->set_name("else_branch");
    else_attr->set_type(onnx::AttributeProto::GRAPH);
    auto* else_g = else_attr->mutable_g();
    else_g->set_name("else");
    auto* id = else_g->add_node();
    id->set_op_type("Identity");
    id->add_input("C");
    id->add_output("E");
    else_g->add_output()->set_name("E");
    current = then_attr->mutable_g();
    current->set_name("then");
    current->add_output()->set_name("Y");
  }
  return m;
}

TEST_F(BadInput, DeeplyNestedIf) {
  // Past the importer's depth limit: the message names the node where it stopped.
  expect_error([&] { Model::load(save(nested_if_model(100), "deep.onnx")); },
               ErrorCode::InvalidModel, {"deep.onnx", "if"});
  // Far past it: refused cleanly (no stack overflow), naming the file.
  expect_error([&] { Model::load(save(nested_if_model(5000), "deeper.onnx")); },
               ErrorCode::InvalidModel, {"deeper.onnx"});
}

}  // namespace
}  // namespace switchyard
