// A graph output's declared dtype is a promise: a model whose nodes produce another dtype for it
// is refused (InvalidModel naming the output and both dtypes) before anything runs, and the
// outputs a run returns carry the declared dtypes.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "switchyard/switchyard.hpp"

namespace switchyard {
namespace {

namespace fs = std::filesystem;

void set_tensor_type(onnx::ValueInfoProto* v, const std::string& name, int elem, int64_t dim) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  tt->mutable_shape()->add_dim()->set_dim_value(dim);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          std::vector<std::string> inputs, std::vector<std::string> outputs) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

void add_int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

class OutputDtype : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("switchyard_output_dtype_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // X float[4] -> Cast(to=int64) -> C -> Neg -> Y, with Y declared as `y_elem` (0: no dtype).
  static onnx::ModelProto cast_model(int y_elem) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    g->set_name("cast");
    set_tensor_type(g->add_input(), "X", onnx::TensorProto::FLOAT, 4);
    auto* y = g->add_output();
    y->set_name("Y");
    if (y_elem) y->mutable_type()->mutable_tensor_type()->set_elem_type(y_elem);
    add_int_attr(add_node(g, "Cast", "cast", {"X"}, {"C"}), "to", onnx::TensorProto::INT64);
    add_node(g, "Neg", "neg", {"C"}, {"Y"});
    return m;
  }

  std::string save(const onnx::ModelProto& m) {
    fs::path p = dir_ / "model.onnx";
    std::ofstream out(p, std::ios::binary);
    m.SerializeToOstream(&out);
    return p.string();
  }

  // Expects loading and compiling `m` to throw InvalidModel naming every fragment.
  void expect_refused(const onnx::ModelProto& m, const std::vector<std::string>& fragments) {
    std::string path = save(m);
    try {
      Model::load(path).compile({.num_threads = 1});
      ADD_FAILURE() << "the model was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
      for (const auto& f : fragments)
        EXPECT_NE(std::string(e.what()).find(f), std::string::npos)
            << "message does not name '" << f << "': " << e.what();
    }
  }

  fs::path dir_;
};

Tensor four_floats() {
  Tensor x(DType::Float32, {4});
  const float v[4] = {-2.5f, 0.75f, 3.25f, -0.5f};
  for (int i = 0; i < 4; ++i) x.data<float>()[i] = v[i];
  return x;
}

TEST_F(OutputDtype, DeclaredDtypeThatTheNodeDoesNotProduceIsRefused) {
  expect_refused(cast_model(onnx::TensorProto::FLOAT),
                 {"output 'Y'", "declared float", "node 'neg'", "produces int64"});
  expect_refused(cast_model(onnx::TensorProto::INT32), {"output 'Y'", "int32", "int64"});
}

TEST_F(OutputDtype, MatchingOrAbsentDeclarationRunsWithTheDeclaredDtype) {
  for (int elem : {static_cast<int>(onnx::TensorProto::INT64), 0}) {
    SCOPED_TRACE(elem);
    Executable exe = Model::load(save(cast_model(elem))).compile({.num_threads = 1});
    auto out = exe.run({{"X", four_floats()}});
    const Tensor& y = out.at("Y");
    ASSERT_EQ(y.dtype(), DType::Int64);
    const int64_t want[4] = {2, 0, -3, 0};  // Cast truncates toward zero, then Neg
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<int64_t>()[i], want[i]) << i;
  }
}

TEST_F(OutputDtype, InputOrInitializerOutputWithAnotherDeclaredDtypeIsRefused) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("passthrough");
  set_tensor_type(g->add_input(), "X", onnx::TensorProto::FLOAT, 4);
  set_tensor_type(g->add_output(), "X", onnx::TensorProto::DOUBLE, 4);
  expect_refused(m, {"output 'X'", "declared double", "input 'X'", "float"});

  onnx::ModelProto c;
  c.set_ir_version(8);
  c.add_opset_import()->set_version(17);
  auto* cg = c.mutable_graph();
  cg->set_name("constant");
  auto* w = cg->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::INT64);
  w->add_dims(2);
  w->add_int64_data(3);
  w->add_int64_data(-4);
  set_tensor_type(cg->add_output(), "W", onnx::TensorProto::FLOAT, 2);
  expect_refused(c, {"output 'W'", "declared float", "initializer 'W'", "int64"});
}

TEST_F(OutputDtype, BranchOutputWithAnotherDeclaredDtypeIsRefused) {
  // If(cond) { Cast(X, to=int64) declared float } else { Identity(X) declared float }.
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("branches");
  set_tensor_type(g->add_input(), "X", onnx::TensorProto::FLOAT, 4);
  auto* cond = g->add_input();
  cond->set_name("cond");
  cond->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  cond->mutable_type()->mutable_tensor_type()->mutable_shape();
  set_tensor_type(g->add_output(), "Y", onnx::TensorProto::FLOAT, 4);
  auto* node = add_node(g, "If", "if", {"cond"}, {"Y"});
  auto* then_attr = node->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* then_g = then_attr->mutable_g();
  then_g->set_name("then");
  add_int_attr(add_node(then_g, "Cast", "cast", {"X"}, {"T"}), "to", onnx::TensorProto::INT64);
  set_tensor_type(then_g->add_output(), "T", onnx::TensorProto::FLOAT, 4);
  auto* else_attr = node->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* else_g = else_attr->mutable_g();
  else_g->set_name("else");
  add_node(else_g, "Identity", "id", {"X"}, {"E"});
  set_tensor_type(else_g->add_output(), "E", onnx::TensorProto::FLOAT, 4);
  expect_refused(m, {"output 'T' of graph 'if/then_branch'", "declared float", "produces int64"});
}

}  // namespace
}  // namespace switchyard
