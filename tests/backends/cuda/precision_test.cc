// The CUDA backend's --precision fp16/bf16 rewrite (backends/cuda/precision.cc), checked on the
// graph it produces: which nodes run narrow, which stay float32 (the residual stream, nodes
// without a narrow kernel), and where the casts go. Needs no GPU: it runs against a registry
// that states which dtypes each op takes, as the CUDA registry does.
#include <gtest/gtest.h>

#include <memory>
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
  for (ops::OpKind op : {ops::OpKind::MatMul, ops::OpKind::Gemm, ops::OpKind::Add,
                         ops::OpKind::LayerNormalization, ops::OpKind::Relu, ops::OpKind::Cast})
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

// A pre-norm stack as a CUDA partition compiles it under fp16/bf16: h0 = X + P; per layer
// h = h + LN(h) @ W; out = LN(h). The residual fusion leaves no Add (each norm writes the running
// sum its Add made, fusion::ResidualSum), the rewrite keeps every norm — and so every sum —
// float32, and absorb_layer_norm_casts takes each product's widening Cast (the residual, input 3)
// and the narrowing Cast of Y (the copy the next product reads) while the sum output stays.
TEST(CudaPrecision, PreNormResidualSumsStayFloat32ThroughTheCastAbsorption) {
  for (ir::DType target : {ir::DType::Float16, ir::DType::BFloat16}) {
    SCOPED_TRACE(ir::dtype_name(target));
    ir::Graph g("prenorm");
    ir::Value* x = g.add_input("X", f32({2, 4, 8}));
    ir::Value* p = g.add_input("P", f32({2, 4, 8}));
    ir::Value* w = g.add_constant("W", random_tensor(ir::DType::Float32, {8, 8}, 1));
    ir::Value* gamma = g.add_constant("gamma", random_tensor(ir::DType::Float32, {8}, 3));
    ir::Value* h = g.add_node("Add", "embed", {x, p}, {"h0"})->output(0);
    for (int i = 1; i <= 2; ++i) {
      const std::string k = std::to_string(i);
      ir::Value* n = g.add_node("LayerNormalization", "ln" + k, {h, gamma}, {"n" + k})->output(0);
      ir::Value* f = g.add_node("MatMul", "mm" + k, {n, w}, {"f" + k})->output(0);
      h = g.add_node("Add", "sum" + k, {h, f}, {"h" + k})->output(0);
    }
    g.add_output(g.add_node("LayerNormalization", "ln3", {h, gamma}, {"out"})->output(0));
    g.add_output(h);  // the last sum leaves the partition too
    ops::infer_types(g);
    backends::fuse_residual_layernorm(g);
    auto got = apply_precision(g, target, registry());
    std::map<std::string, std::string> by_name;
    for (const auto& [n, prec] : got) by_name[n->name()] = prec;
    for (const char* wide : {"ln1", "ln2", "ln3"}) EXPECT_EQ(by_name[wide], "fp32") << wide;
    for (const char* narrow : {"mm1", "mm2"}) EXPECT_NE(by_name[narrow], "fp32") << narrow;
    const size_t absorbed = absorb_layer_norm_casts(g);
    ir::verify(g);
    // ln1: the copy of Y the product reads (its X and residual are the float32 inputs); ln2: the
    // product's widening Cast and the copy; ln3 (Y read by no product): the widening Cast.
    EXPECT_EQ(absorbed, 1u + 2u + 1u);
    for (const auto& n : g.nodes()) EXPECT_NE(n->op_type(), "Add") << n->name();
    const ir::Node* ln[4] = {nullptr, node(g, "ln1"), node(g, "ln2"), node(g, "ln3")};
    for (int i = 1; i <= 3; ++i) {
      SCOPED_TRACE(i);
      ASSERT_NE(ln[i], nullptr);
      const auto* sum = ln[i]->annotation<backends::fusion::ResidualSum>();
      ASSERT_NE(sum, nullptr);
      ASSERT_EQ(ln[i]->num_outputs(), 4u);
      EXPECT_EQ(ln[i]->output(0)->type().dtype, ir::DType::Float32);
      EXPECT_EQ(ln[i]->output(3)->type().dtype, ir::DType::Float32);  // the Add's, kept wide
      EXPECT_EQ(ln[i]->output(3)->name(), "h" + std::to_string(i - 1));
      EXPECT_TRUE(ln[i]->output(2)->uses().empty());
      EXPECT_EQ(ln[i]->input(1), gamma);
      if (i == 3) {
        EXPECT_EQ(ln[i]->annotation<NarrowCopy>(), nullptr);
        EXPECT_TRUE(ln[i]->output(1)->uses().empty());
      } else {  // Y's 16-bit copy, output 1, is what the next product reads
        EXPECT_NE(ln[i]->annotation<NarrowCopy>(), nullptr);
        EXPECT_EQ(ln[i]->output(1)->type().dtype, target);
        EXPECT_EQ(node(g, "mm" + std::to_string(i))->input(0), ln[i]->output(1));
      }
    }
    // The stream: X and P read as the graph's float32 inputs, each sum by the next norm as X,
    // each product's 16-bit result as the next norm's residual.
    EXPECT_EQ(ln[1]->input(0), x);
    EXPECT_EQ(ln[1]->input(3), p);
    for (int i = 2; i <= 3; ++i) {
      EXPECT_EQ(ln[i]->input(0), ln[i - 1]->output(3)) << i;
      EXPECT_EQ(ln[i]->input(3), node(g, "mm" + std::to_string(i - 1))->output(0)) << i;
      EXPECT_EQ(ln[i]->input(3)->type().dtype, target) << i;
    }
    // The last sum leaves as float32 from ln3 itself, no Cast between.
    EXPECT_EQ(g.outputs()[1], ln[3]->output(3));
    expect_no_dead_casts(g);
  }
}

// The float32 Casts of products that run narrow, as after apply_precision (one per product).
size_t count_widening_casts(const ir::Graph& g) {
  size_t count = 0;
  for (const auto& n : g.nodes())
    if (n->op_type() == "Cast" && n->attr_int("to") == static_cast<int64_t>(ir::DType::Float32))
      ++count;
  return count;
}

// absorb_product_casts after fusion and the narrow rewrite, as a CUDA partition runs them: the
// products whose 16-bit results leave as float32 write float32 themselves, their Casts gone; a
// constant bias or C is widened exactly; a product with a second reader keeps its Cast.
TEST(CudaPrecision, ProductsWriteTheirFloat32ResultsThemselves) {
  for (ir::DType target : {ir::DType::Float16, ir::DType::BFloat16}) {
    SCOPED_TRACE(ir::dtype_name(target));
    ir::Graph g("heads");
    ir::Value* x = g.add_input("X", f32({2, 4, 8}));
    ir::Value* x2 = g.add_input("X2", f32({4, 8}));
    auto constant = [&](const std::string& name, std::vector<int64_t> shape, uint64_t seed) {
      return g.add_constant(name, random_tensor(ir::DType::Float32, shape, seed));
    };
    // y1 = X @ W1 (GPT's logits); y2 = Relu(X @ W2 + b) (fused epilogue); y3 = X @ W3 is also
    // read by a Relu (r3); y4 = Gemm(X2, W4, C) with a full [4, 8] C.
    ir::Value* y1 = g.add_node("MatMul", "mm1", {x, constant("W1", {8, 5}, 1)}, {"y1"})->output(0);
    ir::Value* p2 = g.add_node("MatMul", "mm2", {x, constant("W2", {8, 6}, 2)}, {"p2"})->output(0);
    ir::Value* b2 = constant("b2", {6}, 3);
    ir::Value* s2 = g.add_node("Add", "bias2", {p2, b2}, {"s2"})->output(0);
    ir::Value* y2 = g.add_node("Relu", "relu2", {s2}, {"y2"})->output(0);
    ir::Value* y3 = g.add_node("MatMul", "mm3", {x, constant("W3", {8, 7}, 4)}, {"y3"})->output(0);
    ir::Value* r3 = g.add_node("Relu", "relu3", {y3}, {"r3"})->output(0);
    ir::Value* c4 = constant("C4", {4, 8}, 6);
    ir::Node* gemm = g.add_node("Gemm", "gemm4", {x2, constant("W4", {8, 8}, 5), c4}, {"y4"});
    gemm->set_attribute(ir::Attribute::make_float("beta", 0.5f));
    for (ir::Value* out : {y1, y2, y3, r3, gemm->output(0)}) g.add_output(out);
    ops::infer_types(g);

    backends::fuse_matmul_epilogues(g, /*tanh_gelu=*/true);
    apply_precision(g, target, registry());
    absorb_layer_norm_casts(g);
    EXPECT_EQ(count_widening_casts(g), 5u);
    EXPECT_EQ(absorb_product_casts(g), 3u);
    ir::verify(g);
    expect_no_dead_casts(g);
    // Left: y3's Cast (y3 is also read by relu3) and r3's (Relu is no product).
    EXPECT_EQ(count_widening_casts(g), 2u);

    const std::vector<std::string> names = {"mm1", "mm2", "mm3", "gemm4"};
    const std::vector<bool> wide = {true, true, false, true};
    for (size_t i = 0; i < names.size(); ++i) {
      SCOPED_TRACE(names[i]);
      const ir::Node* n = node(g, names[i]);
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(n->input(0)->type().dtype, target);
      EXPECT_EQ(n->input(1)->type().dtype, target);
      EXPECT_EQ(n->annotation<WideProduct>() != nullptr, wide[i]);
      EXPECT_EQ(n->output(0)->type().dtype, wide[i] ? ir::DType::Float32 : target);
    }
    // The products are the graph outputs now, under the names the Casts gave them.
    EXPECT_EQ(g.outputs()[0]->producer(), node(g, "mm1"));
    EXPECT_EQ(g.outputs()[1]->producer(), node(g, "mm2"));
    EXPECT_EQ(g.outputs()[4]->producer(), node(g, "gemm4"));
    EXPECT_NE(cast_of(g.outputs()[2], ir::DType::Float32), nullptr);
    EXPECT_EQ(cast_of(g.outputs()[2], ir::DType::Float32)->input(0), node(g, "mm3")->output(0));
    for (size_t i : {0, 1, 4}) EXPECT_EQ(g.outputs()[i]->type().dtype, ir::DType::Float32);
    // The epilogue stays; the bias and C are float32 constants holding the 16-bit values exactly.
    EXPECT_NE(node(g, "mm2")->annotation<backends::fusion::Epilogue>(), nullptr);
    for (auto [name, original] : {std::pair{"mm2", b2}, std::pair{"gemm4", c4}}) {
      const ir::Value* widened = node(g, name)->input(2);
      ASSERT_TRUE(widened->is_constant()) << name;
      ASSERT_EQ(widened->constant().dtype(), ir::DType::Float32) << name;
      const ir::Tensor narrow = convert_float_tensor(original->constant(), target);
      ASSERT_EQ(widened->constant().numel(), narrow.numel());
      for (int64_t i = 0; i < narrow.numel(); ++i) {
        const float want = target == ir::DType::Float16
                               ? static_cast<float>(narrow.data<Float16>()[i])
                               : static_cast<float>(narrow.data<BFloat16>()[i]);
        EXPECT_EQ(widened->constant().data<float>()[i], want) << name << " " << i;
      }
    }
    EXPECT_EQ(absorb_product_casts(g), 0u);  // nothing left to take
  }
}

// What absorb_product_casts leaves alone: a Cast that narrows or carries a payload, a product of
// float32 operands, a fused attention, a Cast nobody reads, a product with a second reader.
TEST(CudaPrecision, ProductCastsThatMustStay) {
  auto f16 = [](std::vector<int64_t> dims) {
    ir::Type t = f32(std::move(dims));
    t.dtype = ir::DType::Float16;
    return t;
  };
  auto cast_to = [](ir::Graph& g, ir::Value* v, ir::DType to, const std::string& name) {
    ir::Node* c = g.add_node("Cast", name, {v}, {name + "_y"});
    c->set_attribute(ir::Attribute::make_int("to", static_cast<int64_t>(to)));
    ir::Type t = v->type();
    t.dtype = to;
    c->output(0)->set_type(t);
    return c;
  };
  auto product = [&](ir::Graph& g, ir::Value* a, ir::Value* b, const std::string& name,
                     ir::DType out) {
    ir::Node* m = g.add_node("MatMul", name, {a, b}, {name + "_y"});
    ir::Type t = f32({4, 4});
    t.dtype = out;
    m->output(0)->set_type(t);
    return m;
  };
  ir::Graph g("keep");
  ir::Value* a16 = g.add_input("A16", f16({4, 4}));
  ir::Value* a32 = g.add_input("A32", f32({4, 4}));
  // A Cast to float16 of a float32 product (the opposite direction).
  g.add_output(cast_to(g, product(g, a32, a32, "narrowing", ir::DType::Float32)->output(0),
                       ir::DType::Float16, "to16")
                   ->output(0));
  // float32 operands under a 16-bit product value (no WideProduct can read them).
  g.add_output(cast_to(g, product(g, a32, a32, "wide_operands", ir::DType::Float16)->output(0),
                       ir::DType::Float32, "wide_cast")
                   ->output(0));
  // A Cast with a payload: it computes something else.
  ir::Node* marked = cast_to(g, product(g, a16, a16, "marked", ir::DType::Float16)->output(0),
                             ir::DType::Float32, "marked_cast");
  marked->annotate(std::make_shared<SaturatingCast>());
  g.add_output(marked->output(0));
  // A fused attention is another kernel.
  ir::Node* attention = product(g, a16, a16, "attention", ir::DType::Float16);
  attention->annotate(std::make_shared<backends::fusion::Attention>());
  g.add_output(cast_to(g, attention->output(0), ir::DType::Float32, "attention_cast")->output(0));
  // A Cast nobody reads.
  cast_to(g, product(g, a16, a16, "dead", ir::DType::Float16)->output(0), ir::DType::Float32,
          "dead_cast");
  // The product is a graph output itself, and its Cast another.
  ir::Value* shared = product(g, a16, a16, "shared", ir::DType::Float16)->output(0);
  g.add_output(shared);
  g.add_output(cast_to(g, shared, ir::DType::Float32, "shared_cast")->output(0));

  EXPECT_EQ(absorb_product_casts(g), 0u);
  for (const auto& n : g.nodes()) EXPECT_EQ(n->annotation<WideProduct>(), nullptr) << n->name();
  for (const char* cast :
       {"to16", "wide_cast", "marked_cast", "attention_cast", "dead_cast", "shared_cast"})
    EXPECT_NE(g.find_node(cast), nullptr) << cast;
}

}  // namespace
}  // namespace switchyard::cuda
