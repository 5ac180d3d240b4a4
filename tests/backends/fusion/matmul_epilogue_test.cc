// The MatMul epilogue fusion (backends/fusion/matmul_epilogue.cc), checked on
// the graph it produces: a scale by a one-element constant (attention's scores / sqrt(d)), a
// bias Add and an activation fold into the MatMul; anything else is left alone. Needs no GPU
// (the GPU tests check the fused kernels' numbers).
#include <gtest/gtest.h>

#include "backends/fusion/fusion.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "support/op_test_util.h"

namespace switchyard::backends {
namespace {

using fusion::Activation;
using testing::random_tensor;

ir::Type f32(std::vector<int64_t> dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::Dim(d));
  return ir::Type::tensor(ir::DType::Float32, s);
}

ir::Value* scalar(ir::Graph& g, const std::string& name, float v, std::vector<int64_t> shape = {}) {
  ir::Tensor t(ir::DType::Float32, shape);
  t.data<float>()[0] = v;
  return g.add_constant(name, t);
}

size_t count_nodes(const ir::Graph& g) { return g.nodes().size(); }

const fusion::Epilogue* epilogue_of(const ir::Graph& g, const std::string& node) {
  const ir::Node* n = g.find_node(node);
  return n ? n->annotation<fusion::Epilogue>() : nullptr;
}

TEST(CudaMatMulFusion, ScaleBiasAndActivationFoldIntoTheMatMul) {
  // y = Relu(Div(x @ w, 8) + b)
  ir::Graph g("scaled");
  ir::Value* x = g.add_input("x", f32({2, 5, 4}));
  ir::Value* w = g.add_constant("w", random_tensor(ir::DType::Float32, {4, 6}, 1));
  ir::Value* b = g.add_constant("b", random_tensor(ir::DType::Float32, {6}, 2));
  ir::Value* p = g.add_node("MatMul", "mm", {x, w}, {"p"})->output(0);
  ir::Value* s = g.add_node("Div", "scale", {p, scalar(g, "eight", 8.0f)}, {"s"})->output(0);
  ir::Value* a = g.add_node("Add", "bias", {s, b}, {"a"})->output(0);
  ir::Value* y = g.add_node("Relu", "act", {a}, {"y"})->output(0);
  g.add_output(y);
  ops::infer_types(g);

  fuse_matmul_epilogues(g);
  ir::verify(g);
  ASSERT_EQ(count_nodes(g), 1u);
  const ir::Node* mm = g.find_node("mm");
  ASSERT_NE(mm, nullptr);
  const fusion::Epilogue* epilogue = mm->annotation<fusion::Epilogue>();
  ASSERT_NE(epilogue, nullptr);
  EXPECT_FLOAT_EQ(epilogue->alpha, 0.125f);
  EXPECT_EQ(epilogue->activation, Activation::Relu);
  EXPECT_EQ(epilogue->describe(), "activation=Relu alpha=0.125");
  EXPECT_EQ(mm->input(2), b);
  EXPECT_EQ(g.outputs()[0], mm->output(0));
  EXPECT_EQ(testing::private_attributes(g), std::vector<std::string>{});
}

TEST(CudaMatMulFusion, MulByAOneElementConstantInEitherOrder) {
  for (bool constant_first : {false, true}) {
    ir::Graph g("mul");
    ir::Value* x = g.add_input("x", f32({3, 4}));
    ir::Value* w = g.add_constant("w", random_tensor(ir::DType::Float32, {4, 2}, 3));
    ir::Value* p = g.add_node("MatMul", "mm", {x, w}, {"p"})->output(0);
    ir::Value* c = scalar(g, "c", 0.5f, {1, 1});
    std::vector<ir::Value*> in =
        constant_first ? std::vector<ir::Value*>{c, p} : std::vector<ir::Value*>{p, c};
    g.add_output(g.add_node("Mul", "scale", in, {"y"})->output(0));
    ops::infer_types(g);
    fuse_matmul_epilogues(g);
    ir::verify(g);
    ASSERT_EQ(count_nodes(g), 1u) << constant_first;
    ASSERT_NE(epilogue_of(g, "mm"), nullptr) << constant_first;
    EXPECT_FLOAT_EQ(epilogue_of(g, "mm")->alpha, 0.5f);
    EXPECT_EQ(epilogue_of(g, "mm")->activation, Activation::None);
    EXPECT_EQ(g.outputs()[0]->name(), "p");
  }
}

TEST(CudaMatMulFusion, ScalesThatAreNotAOneElementFactorStay) {
  struct Case {
    const char* what;
    std::function<ir::Value*(ir::Graph&, ir::Value*)> build;
  };
  const std::vector<Case> cases = {
      {"constant divided by the product",
       [](ir::Graph& g, ir::Value* p) {
         return g.add_node("Div", "scale", {scalar(g, "c", 8.0f), p}, {"y"})->output(0);
       }},
      {"division by zero",
       [](ir::Graph& g, ir::Value* p) {
         return g.add_node("Div", "scale", {p, scalar(g, "c", 0.0f)}, {"y"})->output(0);
       }},
      {"per-column factor",
       [](ir::Graph& g, ir::Value* p) {
         ir::Value* c = g.add_constant("c", random_tensor(ir::DType::Float32, {2}, 4));
         return g.add_node("Mul", "scale", {p, c}, {"y"})->output(0);
       }},
      {"one element that widens the result",
       [](ir::Graph& g, ir::Value* p) {
         return g.add_node("Mul", "scale", {p, scalar(g, "c", 2.0f, {1, 1, 1})}, {"y"})->output(0);
       }},
      {"a product read twice",
       [](ir::Graph& g, ir::Value* p) {
         ir::Value* s = g.add_node("Mul", "scale", {p, scalar(g, "c", 2.0f)}, {"s"})->output(0);
         return g.add_node("Add", "sum", {s, p}, {"y"})->output(0);
       }},
  };
  for (const Case& c : cases) {
    ir::Graph g("unscaled");
    ir::Value* x = g.add_input("x", f32({3, 4}));
    ir::Value* w = g.add_constant("w", random_tensor(ir::DType::Float32, {4, 2}, 5));
    ir::Value* p = g.add_node("MatMul", "mm", {x, w}, {"p"})->output(0);
    g.add_output(c.build(g, p));
    ops::infer_types(g);
    const size_t before = count_nodes(g);
    fuse_matmul_epilogues(g);
    ir::verify(g);
    EXPECT_EQ(count_nodes(g), before) << c.what;
    EXPECT_EQ(epilogue_of(g, "mm"), nullptr) << c.what;
  }
}

// The tanh GELU joins the epilogue only where the backend asks (the cuda kernel's cuBLASLt
// GELU_BIAS), as "GeluTanh"; by default (the cpu) it stays a node of its own.
TEST(CudaMatMulFusion, TanhGeluFusesOnlyWhenAsked) {
  for (bool tanh_gelu : {false, true}) {
    ir::Graph g("mlp");
    ir::Value* x = g.add_input("x", f32({2, 5, 4}));
    ir::Value* w = g.add_constant("w", random_tensor(ir::DType::Float32, {4, 6}, 7));
    ir::Value* b = g.add_constant("b", random_tensor(ir::DType::Float32, {6}, 8));
    ir::Value* p = g.add_node("MatMul", "mm", {x, w}, {"p"})->output(0);
    ir::Value* a = g.add_node("Add", "bias", {b, p}, {"a"})->output(0);
    ir::Node* gelu = g.add_node("Gelu", "gelu", {a}, {"y"});
    gelu->set_attribute(ir::Attribute::make_string("approximate", "tanh"));
    g.add_output(gelu->output(0));
    ops::infer_types(g);
    std::vector<runtime::FusionGroup> groups = fuse_matmul_epilogues(g, tanh_gelu);
    ir::verify(g);
    ASSERT_EQ(groups.size(), 1u);
    const ir::Node* mm = g.find_node("mm");
    ASSERT_NE(mm, nullptr);
    if (tanh_gelu) {
      EXPECT_EQ(groups[0].members, (std::vector<std::string>{"mm", "bias", "gelu"}));
      ASSERT_NE(mm->annotation<fusion::Epilogue>(), nullptr);
      EXPECT_EQ(mm->annotation<fusion::Epilogue>()->activation, Activation::GeluTanh);
      EXPECT_FLOAT_EQ(mm->annotation<fusion::Epilogue>()->alpha, 1.0f);
      EXPECT_EQ(count_nodes(g), 1u);
    } else {
      EXPECT_EQ(groups[0].members, (std::vector<std::string>{"mm", "bias"}));
      EXPECT_EQ(mm->annotation<fusion::Epilogue>(), nullptr);  // the bias is an input
      EXPECT_NE(g.find_node("gelu"), nullptr);
    }
  }
}

// Transposes fold into MatMul operands of the dtypes the backend names: float32 by default (the
// cpu), float16 where asked (the cuda kernel's list); never when the operands' dtypes differ.
TEST(CudaMatMulFusion, TransposesFoldForTheBackendsDtypes) {
  for (ir::DType dtype : {ir::DType::Float32, ir::DType::Float16}) {
    for (bool cuda_rules : {false, true}) {
      ir::Graph g("attn");
      ir::Shape qs = {ir::Dim(2), ir::Dim(5), ir::Dim(3), ir::Dim(8)};
      ir::Shape ks = {ir::Dim(2), ir::Dim(3), ir::Dim(8), ir::Dim(7)};
      ir::Value* q = g.add_input("q", ir::Type::tensor(dtype, qs));
      ir::Value* k = g.add_input("k", ir::Type::tensor(dtype, ks));
      ir::Node* t = g.add_node("Transpose", "tq", {q}, {"qt"});
      t->set_attribute(ir::Attribute::make_ints("perm", {0, 2, 1, 3}));
      g.add_output(g.add_node("MatMul", "scores", {t->output(0), k}, {"s"})->output(0));
      ops::infer_types(g);
      std::vector<runtime::FusionGroup> groups =
          cuda_rules ? fold_transposes_into_matmul(g, {ir::DType::Float32, ir::DType::Float16})
                     : fold_transposes_into_matmul(g);
      ir::verify(g);
      const bool folds = dtype == ir::DType::Float32 || cuda_rules;
      SCOPED_TRACE(std::string(ir::dtype_name(dtype)) + (cuda_rules ? " cuda rules" : ""));
      EXPECT_EQ(groups.size(), folds ? 1u : 0u);
      EXPECT_EQ(g.find_node("tq") == nullptr, folds);
      const auto* permutes = g.find_node("scores")->annotation<fusion::OperandPermutes>();
      EXPECT_EQ(permutes != nullptr, folds);
      if (permutes) {
        EXPECT_EQ(permutes->a, (std::vector<int64_t>{0, 2, 1, 3}));
        EXPECT_TRUE(permutes->b.empty());
        EXPECT_EQ(permutes->describe(), "perm_a=[0, 2, 1, 3]");
      }
      EXPECT_EQ(testing::private_attributes(g), std::vector<std::string>{});
    }
  }
}

}  // namespace
}  // namespace switchyard::backends
