// The CUDA backend's --precision fp16/bf16 rewrite (backends/cuda/precision.cc), checked on the
// graph it produces: which nodes run narrow, which stay float32 (the residual stream, nodes
// without a narrow kernel), and where the casts go. Needs no GPU: it runs against a registry
// that states which dtypes each op takes, as the CUDA registry does.
#include <gtest/gtest.h>

#include <stdexcept>

#include "backends/cuda/precision.h"
#include "backends/fusion/fusion.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "support/op_test_util.h"

namespace switchyard::cuda {
namespace {

using testing::random_tensor;

// Ops and dtypes as a device registry would state them; the kernels are never created.
runtime::KernelRegistry registry() {
  runtime::KernelRegistry r("test");
  const std::vector<ir::DType> all = {ir::DType::Float32, ir::DType::Float16, ir::DType::BFloat16};
  auto add = [&](ops::OpKind op, std::vector<ir::DType> dtypes) {
    r.add(runtime::KernelDef{op,
                             std::move(dtypes),
                             0,
                             {},
                             [](const runtime::KernelInit&) -> std::unique_ptr<runtime::Kernel> {
                               throw std::logic_error("the precision test runs no kernel");
                             }});
  };
  for (ops::OpKind op : {ops::OpKind::MatMul, ops::OpKind::Add, ops::OpKind::LayerNormalization,
                         ops::OpKind::Relu, ops::OpKind::Cast})
    add(op, all);
  add(ops::OpKind::Erf, {ir::DType::Float32});  // no narrow kernel
  return r;
}

ir::Type f32(std::vector<int64_t> dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::Dim(d));
  return ir::Type::tensor(ir::DType::Float32, s);
}

const ir::Node* node(const ir::Graph& g, const std::string& name) {
  const ir::Node* n = g.find_node(name);
  EXPECT_NE(n, nullptr) << name;
  return n;
}

// The Cast producing `v` (to `to`), or nullptr.
const ir::Node* cast_of(const ir::Value* v, ir::DType to) {
  const ir::Node* p = v->producer();
  if (!p || p->op_type() != "Cast" || p->attr_int("to") != static_cast<int64_t>(to)) return nullptr;
  return p;
}

void expect_no_dead_casts(const ir::Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n->op_type() != "Cast") continue;
    const ir::Value* out = n->output(0);
    bool is_output = std::find(g.outputs().begin(), g.outputs().end(), out) != g.outputs().end();
    EXPECT_TRUE(!out->uses().empty() || is_output) << n->name() << " is read by nothing";
  }
}

TEST(CudaPrecision, PostNormResidualStreamStaysFloat32) {
  // h = X @ W1; s = X + h; y = LayerNorm(s); z = y @ W2; e = Erf(z); o = Relu(e); a = o + C
  ir::Graph g("block");
  ir::Value* x = g.add_input("X", f32({2, 4, 8}));
  ir::Value* w1 = g.add_constant("W1", random_tensor(ir::DType::Float32, {8, 8}, 1));
  ir::Value* w2 = g.add_constant("W2", random_tensor(ir::DType::Float32, {8, 8}, 2));
  ir::Value* gamma = g.add_constant("gamma", random_tensor(ir::DType::Float32, {8}, 3));
  ir::Value* beta = g.add_constant("beta", random_tensor(ir::DType::Float32, {8}, 4));
  ir::Value* c = g.add_constant("C", random_tensor(ir::DType::Float32, {8}, 5));
  ir::Value* h = g.add_node("MatMul", "mm1", {x, w1}, {"h"})->output(0);
  ir::Value* s = g.add_node("Add", "residual", {x, h}, {"s"})->output(0);
  ir::Value* y = g.add_node("LayerNormalization", "ln", {s, gamma, beta}, {"y"})->output(0);
  ir::Value* z = g.add_node("MatMul", "mm2", {y, w2}, {"z"})->output(0);
  ir::Value* e = g.add_node("Erf", "erf", {z}, {"e"})->output(0);
  ir::Value* o = g.add_node("Relu", "relu", {e}, {"o"})->output(0);
  ir::Value* a = g.add_node("Add", "bias", {o, c}, {"a"})->output(0);
  g.add_output(a);
  g.add_output(y);
  ops::infer_types(g);

  auto got = apply_precision(g, ir::DType::BFloat16, registry());
  ir::verify(g);
  std::map<std::string, std::string> by_name;
  for (const auto& [n, p] : got) by_name[n->name()] = p;
  EXPECT_EQ(by_name, (std::map<std::string, std::string>{{"mm1", "bf16"},
                                                         {"residual", "fp32"},
                                                         {"ln", "fp32"},
                                                         {"mm2", "bf16"},
                                                         {"erf", "fp32"},
                                                         {"relu", "bf16"},
                                                         {"bias", "bf16"}}));

  // The residual add reads X itself (not a bf16 copy) and h widened.
  const ir::Node* residual = node(g, "residual");
  EXPECT_EQ(residual->input(0), x);
  ASSERT_NE(cast_of(residual->input(1), ir::DType::Float32), nullptr);
  EXPECT_EQ(cast_of(residual->input(1), ir::DType::Float32)->input(0), h);
  EXPECT_EQ(h->type().dtype, ir::DType::BFloat16);
  EXPECT_EQ(s->type().dtype, ir::DType::Float32);
  // The norm reads its float32 parameters and writes float32, which is also a graph output.
  const ir::Node* ln = node(g, "ln");
  EXPECT_EQ(ln->input(1), gamma);
  EXPECT_EQ(ln->input(2), beta);
  EXPECT_EQ(y->type().dtype, ir::DType::Float32);
  EXPECT_EQ(g.outputs()[1], y);
  // MatMuls read bf16: the input through one cast, weights converted once.
  EXPECT_EQ(node(g, "mm1")->input(0)->type().dtype, ir::DType::BFloat16);
  EXPECT_TRUE(node(g, "mm1")->input(1)->is_constant());
  EXPECT_EQ(node(g, "mm1")->input(1)->type().dtype, ir::DType::BFloat16);
  ASSERT_NE(cast_of(node(g, "mm2")->input(0), ir::DType::BFloat16), nullptr);
  EXPECT_EQ(cast_of(node(g, "mm2")->input(0), ir::DType::BFloat16)->input(0), y);
  // Casts into bf16 saturate (finite values beyond its range stay finite); widening ones need not.
  EXPECT_NE(cast_of(node(g, "mm2")->input(0), ir::DType::BFloat16)->annotation<SaturatingCast>(),
            nullptr);
  EXPECT_EQ(cast_of(residual->input(1), ir::DType::Float32)->annotation<SaturatingCast>(), nullptr);
  EXPECT_EQ(testing::private_attributes(g), std::vector<std::string>{});
  // Erf (no bf16 kernel) between casts.
  EXPECT_NE(cast_of(node(g, "erf")->input(0), ir::DType::Float32), nullptr);
  EXPECT_NE(cast_of(node(g, "relu")->input(0), ir::DType::BFloat16), nullptr);
  // The narrow result leaves as float32.
  ASSERT_NE(cast_of(g.outputs()[0], ir::DType::Float32), nullptr);
  EXPECT_EQ(cast_of(g.outputs()[0], ir::DType::Float32)->input(0), a);
  expect_no_dead_casts(g);
}

TEST(CudaPrecision, PreNormRunningSumStaysFloat32) {
  // x1 = x0 + LN1(x0) @ W; x2 = x1 + LN2(x1) @ W; out = LN3(x2): every running sum is float32,
  // the attention-mask style add (z + C, read by a MatMul) is not part of it.
  ir::Graph g("prenorm");
  ir::Value* x0 = g.add_input("X", f32({4, 8}));
  ir::Value* w = g.add_constant("W", random_tensor(ir::DType::Float32, {8, 8}, 1));
  ir::Value* gamma = g.add_constant("gamma", random_tensor(ir::DType::Float32, {8}, 3));
  ir::Value* c = g.add_constant("C", random_tensor(ir::DType::Float32, {8}, 5));
  ir::Value* x = x0;
  for (int i = 1; i <= 2; ++i) {
    std::string k = std::to_string(i);
    ir::Value* n = g.add_node("LayerNormalization", "ln" + k, {x, gamma}, {"n" + k})->output(0);
    ir::Value* m = g.add_node("Add", "mask" + k, {n, c}, {"m" + k})->output(0);
    ir::Value* f = g.add_node("MatMul", "mm" + k, {m, w}, {"f" + k})->output(0);
    x = g.add_node("Add", "sum" + k, {x, f}, {"x" + k})->output(0);
  }
  g.add_output(g.add_node("LayerNormalization", "ln3", {x, gamma}, {"out"})->output(0));
  ops::infer_types(g);

  auto got = apply_precision(g, ir::DType::Float16, registry());
  ir::verify(g);
  std::map<std::string, std::string> by_name;
  for (const auto& [n, p] : got) by_name[n->name()] = p;
  for (const char* wide : {"ln1", "ln2", "ln3", "sum1", "sum2"})
    EXPECT_EQ(by_name[wide], "fp32") << wide;
  for (const char* narrow : {"mask1", "mask2", "mm1", "mm2"})
    EXPECT_EQ(by_name[narrow], "fp16") << narrow;
  EXPECT_EQ(node(g, "sum1")->input(0), x0);
  EXPECT_EQ(node(g, "sum2")->input(0), node(g, "sum1")->output(0));
  EXPECT_EQ(g.outputs()[0]->type().dtype, ir::DType::Float32);
  EXPECT_EQ(g.outputs()[0]->producer()->name(), "ln3");  // no cast back: it is float32
  expect_no_dead_casts(g);
}

// absorb_layer_norm_casts after the fp16 rewrite of a post-norm block: the norm reads the
// MatMul's float16 result and the float32 residual itself, and writes its float32 result (the
// next residual, a graph output) and the float16 copy the next MatMul reads; no Cast is left
// around it. A norm with its Mean output, or whose X Cast has a second reader, keeps its Casts.
TEST(CudaPrecision, LayerNormAbsorbsTheResidualStreamCasts) {
  for (int variant = 0; variant < 3; ++variant) {
    ir::Graph g("block");
    ir::Value* x = g.add_input("X", f32({2, 4, 8}));
    ir::Value* w1 = g.add_constant("W1", random_tensor(ir::DType::Float32, {8, 8}, 1));
    ir::Value* w2 = g.add_constant("W2", random_tensor(ir::DType::Float32, {8, 8}, 2));
    ir::Value* gamma = g.add_constant("gamma", random_tensor(ir::DType::Float32, {8}, 3));
    ir::Value* beta = g.add_constant("beta", random_tensor(ir::DType::Float32, {8}, 4));
    ir::Value* h = g.add_node("MatMul", "mm1", {x, w1}, {"h"})->output(0);
    ir::Value* s = g.add_node("Add", "residual", {h, x}, {"s"})->output(0);
    std::vector<std::string> outs = {"y"};
    if (variant == 1) outs.push_back("mean");
    ir::Node* ln = g.add_node("LayerNormalization", "ln", {s, gamma, beta}, outs);
    ir::Value* y = ln->output(0);
    ir::Value* z = g.add_node("MatMul", "mm2", {y, w2}, {"z"})->output(0);
    g.add_output(z);
    g.add_output(y);
    if (variant == 1) g.add_output(ln->output(1));
    // Erf has no float16 kernel: it reads h through the same float32 Cast as the norm.
    if (variant == 2) g.add_output(g.add_node("Erf", "erf", {h}, {"r"})->output(0));
    ops::infer_types(g);
    // As a CUDA partition compiles: fusion (the residual Add becomes input 3), the precision
    // rewrite, then the Casts absorbed.
    backends::fuse_residual_layernorm(g);
    apply_precision(g, ir::DType::Float16, registry());
    const size_t absorbed = absorb_layer_norm_casts(g);
    const ir::Node* norm = node(g, "ln");
    ASSERT_NE(norm, nullptr);
    if (variant == 1) {  // Mean wanted: no residual fusion, no absorption
      EXPECT_EQ(absorbed, 0u);
      EXPECT_EQ(norm->annotation<NarrowCopy>(), nullptr);
      EXPECT_EQ(norm->num_outputs(), 2u);
      continue;
    }
    ASSERT_EQ(norm->num_inputs(), 4u) << variant;
    // Y and its float16 copy.
    ASSERT_EQ(norm->num_outputs(), 2u) << variant;
    EXPECT_NE(norm->annotation<NarrowCopy>(), nullptr);
    EXPECT_EQ(norm->output(0)->name(), "y");
    EXPECT_EQ(norm->output(0)->type().dtype, ir::DType::Float32);
    EXPECT_EQ(norm->output(1)->type().dtype, ir::DType::Float16);
    EXPECT_EQ(g.outputs()[1], norm->output(0));
    EXPECT_EQ(node(g, "mm2")->input(0), norm->output(1));
    // The residual X is read as float32 (the graph input itself), gamma and beta float32.
    EXPECT_EQ(norm->input(3), x);
    EXPECT_EQ(norm->input(1), gamma);
    if (variant == 0) {  // X: the MatMul's float16 result, no Cast between
      EXPECT_EQ(absorbed, 2u);
      EXPECT_EQ(norm->input(0), node(g, "mm1")->output(0));
      EXPECT_EQ(norm->input(0)->type().dtype, ir::DType::Float16);
    } else {  // the float32 Cast of h has a second reader: it stays
      EXPECT_EQ(absorbed, 1u);
      EXPECT_NE(cast_of(norm->input(0), ir::DType::Float32), nullptr);
    }
    for (const auto& n : g.nodes()) {
      if (n->op_type() == "Cast") {
        EXPECT_NE(n->input(0), norm->output(0)) << n->name();
      }
    }
    expect_no_dead_casts(g);
  }
}

}  // namespace
}  // namespace switchyard::cuda
