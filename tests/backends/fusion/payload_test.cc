// The fusions' payloads (backends/fusion/payload.h) on the graphs the shared passes produce: a
// resnet-like block through the cpu partition's passes (backends/cpu/cpu_backend.cc) and a
// bert-like layer through the CUDA partition's shared ones (backends/cuda/fusion.cc). Each fused
// node carries the typed payload its kernel reads, and no node carries a private "_sy" string
// attribute. Needs no GPU.
#include <gtest/gtest.h>

#include "backends/fusion/fusion.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "support/op_test_util.h"

namespace switchyard::backends {
namespace {

using fusion::Activation;
using ir::DType;
using testing::random_tensor;

ir::Type tensor(DType dtype, std::vector<int64_t> dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::Dim(d));
  return ir::Type::tensor(dtype, s);
}

ir::Value* scalar(ir::Graph& g, const std::string& name, float v) {
  ir::Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return g.add_constant(name, t);
}

ir::Value* conv(ir::Graph& g, const std::string& name, ir::Value* x, int64_t in, int64_t out,
                uint64_t seed) {
  ir::Value* w = g.add_constant(name + "_w", random_tensor(DType::Float32, {out, in, 3, 3}, seed));
  ir::Value* b = g.add_constant(name + "_b", random_tensor(DType::Float32, {out}, seed + 1));
  ir::Node* c = g.add_node("Conv", name, {x, w, b}, {name + "_y"});
  c->set_attribute(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
  return c->output(0);
}

const fusion::Epilogue* epilogue(const ir::Graph& g, const std::string& node) {
  const ir::Node* n = g.find_node(node);
  EXPECT_NE(n, nullptr) << node;
  return n ? n->annotation<fusion::Epilogue>() : nullptr;
}

bool channels_last(const ir::Graph& g, const std::string& node) {
  const ir::Node* n = g.find_node(node);
  EXPECT_NE(n, nullptr) << node;
  return n && n->annotation<fusion::ChannelsLast>() != nullptr;
}

// X -> stem conv -> Relu -> MaxPool -> conv -> BatchNormalization -> Relu -> conv ->
// Add(pooled) -> Relu -> conv -> Clip(0, 6) -> GlobalAveragePool.
void build_resnet_block(ir::Graph& g) {
  ir::Value* x = g.add_input("x", tensor(DType::Float32, {1, 4, 8, 8}));
  ir::Value* v = conv(g, "stem", x, 4, 8, 1);
  v = g.add_node("Relu", "stem_relu", {v}, {"stem_r"})->output(0);
  ir::Node* pool = g.add_node("MaxPool", "pool", {v}, {"p"});
  pool->set_attribute(ir::Attribute::make_ints("kernel_shape", {2, 2}));
  pool->set_attribute(ir::Attribute::make_ints("strides", {2, 2}));
  ir::Value* pooled = pool->output(0);
  v = conv(g, "c1", pooled, 8, 8, 3);
  std::vector<ir::Value*> bn_in = {v};
  for (const char* p : {"scale", "bias", "mean", "var"})
    bn_in.push_back(
        g.add_constant(std::string("bn_") + p, random_tensor(DType::Float32, {8}, 5, 0.5, 1.5)));
  v = g.add_node("BatchNormalization", "bn", bn_in, {"bn_y"})->output(0);
  v = g.add_node("Relu", "bn_relu", {v}, {"bn_r"})->output(0);
  v = conv(g, "c2", v, 8, 8, 7);
  v = g.add_node("Add", "residual", {v, pooled}, {"sum"})->output(0);
  v = g.add_node("Relu", "c2_relu", {v}, {"c2_r"})->output(0);
  v = conv(g, "c3", v, 8, 8, 9);
  v = g.add_node("Clip", "relu6", {v, scalar(g, "lo", 0.0f), scalar(g, "hi", 6.0f)}, {"c3_r"})
          ->output(0);
  g.add_output(g.add_node("GlobalAveragePool", "gap", {v}, {"gap_y"})->output(0));
  ops::infer_types(g);
}

TEST(FusionPayloads, ResnetBlockThroughTheCpuPasses) {
  ir::Graph g("resnet");
  build_resnet_block(g);
  // The cpu partition's order and rules (cpu_backend.cc).
  fuse_gelu(g);
  fuse_conv_epilogues(g, {Activation::Relu, Activation::Sigmoid, Activation::Tanh, Activation::Clip,
                          Activation::HardSwish, Activation::Swish});
  fuse_matmul_epilogues(g);
  fold_transposes_into_matmul(g);
  fuse_norm_activation(g);
  fuse_residual_layernorm(g);
  fuse_softmax_mask(g);
  apply_channels_last(g, ChannelsLastRules{{DType::Float32}, true, true, true, true});
  ir::verify(g);

  EXPECT_EQ(testing::private_attributes(g), std::vector<std::string>{});
  for (const char* name : {"stem", "c2"}) {
    ASSERT_NE(epilogue(g, name), nullptr) << name;
    EXPECT_EQ(epilogue(g, name)->activation, Activation::Relu) << name;
    EXPECT_EQ(epilogue(g, name)->describe(), "activation=Relu") << name;
  }
  EXPECT_EQ(g.find_node("c2")->num_inputs(), 4u);  // the residual Z
  EXPECT_EQ(epilogue(g, "c1"), nullptr);           // its BN stays a node of its own
  ASSERT_NE(epilogue(g, "c3"), nullptr);
  EXPECT_EQ(epilogue(g, "c3")->activation, Activation::Clip);
  EXPECT_FLOAT_EQ(epilogue(g, "c3")->clip_min, 0.0f);
  EXPECT_FLOAT_EQ(epilogue(g, "c3")->clip_max, 6.0f);
  EXPECT_EQ(epilogue(g, "c3")->describe(), "activation=Clip clip=[0, 6]");
  ASSERT_NE(epilogue(g, "bn"), nullptr);
  EXPECT_EQ(epilogue(g, "bn")->activation, Activation::Relu);
  for (const char* name : {"stem_relu", "bn_relu", "residual", "c2_relu", "relu6"})
    EXPECT_EQ(g.find_node(name), nullptr) << name;
  // The whole block is channels-last, and keeps its epilogues through that rewrite.
  for (const char* name : {"stem", "pool", "c1", "bn", "c2", "c3", "gap"})
    EXPECT_TRUE(channels_last(g, name)) << name;
  EXPECT_EQ(g.find_node("c2")->annotations().size(), 2u);
}

// A transformer layer: attention (BERT's: head split, scale, additive mask, head merge), the
// residual LayerNormalization, and the MLP's MatMul -> bias -> tanh GELU.
void build_bert_layer(ir::Graph& g, DType dtype) {
  ir::Value* q = g.add_input("q", tensor(dtype, {2, 5, 3, 8}));
  ir::Value* k = g.add_input("k", tensor(dtype, {2, 5, 3, 8}));
  ir::Value* vv = g.add_input("v", tensor(dtype, {2, 5, 3, 8}));
  ir::Value* m = g.add_input("mask", tensor(dtype, {2, 1, 1, 5}));
  ir::Value* resid = g.add_input("resid", tensor(dtype, {2, 5, 3, 8}));
  auto transpose = [&](ir::Value* x, std::vector<int64_t> perm, const std::string& name) {
    ir::Node* t = g.add_node("Transpose", name, {x}, {name + "_y"});
    t->set_attribute(ir::Attribute::make_ints("perm", std::move(perm)));
    return t->output(0);
  };
  ir::Tensor alpha(dtype, {});
  alpha.data<Float16>()[0] = Float16(0.25f);
  ir::Value* s =
      g.add_node("MatMul", "scores",
                 {transpose(q, {0, 2, 1, 3}, "tq"), transpose(k, {0, 2, 3, 1}, "tk")}, {"s"})
          ->output(0);
  s = g.add_node("Mul", "scale", {s, g.add_constant("alpha", alpha)}, {"ss"})->output(0);
  s = g.add_node("Add", "add_mask", {s, m}, {"sm"})->output(0);
  ir::Node* sm = g.add_node("Softmax", "softmax", {s}, {"probs"});
  sm->set_attribute(ir::Attribute::make_int("axis", -1));
  ir::Value* ctx =
      g.add_node("MatMul", "context", {sm->output(0), transpose(vv, {0, 2, 1, 3}, "tv")}, {"c"})
          ->output(0);
  ir::Value* merged = transpose(ctx, {0, 2, 1, 3}, "merge");
  ir::Value* sum = g.add_node("Add", "residual", {merged, resid}, {"sum"})->output(0);
  ir::Node* ln = g.add_node("LayerNormalization", "ln",
                            {sum, g.add_constant("gamma", random_tensor(dtype, {8}, 1)),
                             g.add_constant("beta", random_tensor(dtype, {8}, 2))},
                            {"ln_y"});
  ln->set_attribute(ir::Attribute::make_int("axis", -1));
  ir::Value* h =
      g.add_node("MatMul", "fc",
                 {ln->output(0), g.add_constant("fc_w", random_tensor(dtype, {8, 16}, 3))}, {"h"})
          ->output(0);
  h = g.add_node("Add", "fc_bias", {h, g.add_constant("fc_b", random_tensor(dtype, {16}, 4))},
                 {"hb"})
          ->output(0);
  ir::Node* gelu = g.add_node("Gelu", "gelu", {h}, {"y"});
  gelu->set_attribute(ir::Attribute::make_string("approximate", "tanh"));
  g.add_output(gelu->output(0));
  ops::infer_types(g);
}

TEST(FusionPayloads, BertLayerThroughTheCudaSharedPasses) {
  ir::Graph g("bert");
  build_bert_layer(g, DType::Float16);
  // The shared part of the CUDA partition's order and rules (cuda/fusion.cc).
  fuse_gelu(g);
  fuse_conv_epilogues(g);
  fuse_matmul_epilogues(g, /*tanh_gelu=*/true);
  fold_transposes_into_matmul(g, {DType::Float32, DType::Float16, DType::BFloat16});
  fuse_residual_layernorm(g);
  fuse_softmax_mask(g);
  fuse_attention(g, AttentionRules{{DType::Float16, DType::BFloat16}});
  ir::verify(g);

  EXPECT_EQ(testing::private_attributes(g), std::vector<std::string>{});
  ASSERT_EQ(g.nodes().size(), 3u);  // attention, LayerNormalization, the MLP's MatMul
  const ir::Node* attention = g.find_node("context");
  ASSERT_NE(attention, nullptr);
  const fusion::Attention* a = attention->annotation<fusion::Attention>();
  ASSERT_NE(a, nullptr);
  EXPECT_FLOAT_EQ(a->alpha, 0.25f);
  EXPECT_EQ(a->mask, fusion::Attention::Mask::Add);
  EXPECT_EQ(a->perm_out, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(attention->annotation<fusion::Epilogue>(), nullptr);
  EXPECT_EQ(attention->annotation<fusion::OperandPermutes>(), nullptr);
  EXPECT_EQ(g.find_node("ln")->num_inputs(), 4u);  // the residual
  EXPECT_TRUE(g.find_node("ln")->annotations().empty());
  const fusion::Epilogue* mlp = epilogue(g, "fc");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->activation, Activation::GeluTanh);
  EXPECT_FLOAT_EQ(mlp->alpha, 1.0f);
  EXPECT_EQ(mlp->describe(), "activation=GeluTanh");
  EXPECT_EQ(g.find_node("fc")->num_inputs(), 3u);  // the bias
}

// GPT-2's pre-norm stack: h = emb + pos; per layer h = h + MatMul(LN(h)) + bias; out = LN(h).
// Every running sum feeds its norm and the next residual Add (the last one the final norm alone).
void build_gpt_stack(ir::Graph& g, DType dtype, int layers) {
  ir::Value* emb = g.add_input("emb", tensor(dtype, {2, 5, 8}));
  ir::Value* pos = g.add_input("pos", tensor(dtype, {2, 5, 8}));
  ir::Value* h = g.add_node("Add", "embed", {emb, pos}, {"h0"})->output(0);
  ir::Value* gamma = g.add_constant("gamma", random_tensor(dtype, {8}, 1));
  ir::Value* beta = g.add_constant("beta", random_tensor(dtype, {8}, 2));
  for (int i = 1; i <= layers; ++i) {
    const std::string k = std::to_string(i);
    ir::Value* y =
        g.add_node("LayerNormalization", "ln" + k, {h, gamma, beta}, {"y" + k})->output(0);
    ir::Value* f =
        g.add_node("MatMul", "mm" + k,
                   {y, g.add_constant("w" + k, random_tensor(dtype, {8, 8}, 10 + i))}, {"f" + k})
            ->output(0);
    f = g.add_node("Add", "bias" + k,
                   {f, g.add_constant("b" + k, random_tensor(dtype, {8}, 20 + i))}, {"fb" + k})
            ->output(0);
    h = g.add_node("Add", "add" + k, {h, f}, {"h" + k})->output(0);
  }
  g.add_output(g.add_node("LayerNormalization", "ln_f", {h, gamma, beta}, {"out"})->output(0));
  ops::infer_types(g);
}

TEST(FusionPayloads, PreNormStackThroughTheCudaSharedPasses) {
  ir::Graph g("gpt");
  build_gpt_stack(g, DType::Float32, 2);
  fuse_gelu(g);
  fuse_conv_epilogues(g);
  fuse_matmul_epilogues(g, /*tanh_gelu=*/true);
  fold_transposes_into_matmul(g, {DType::Float32, DType::Float16, DType::BFloat16});
  const std::vector<runtime::FusionGroup> groups = fuse_residual_layernorm(g);
  ir::verify(g);

  std::vector<std::vector<std::string>> members;
  for (const auto& group : groups) members.push_back(group.members);
  EXPECT_EQ(members, (std::vector<std::vector<std::string>>{
                         {"ln1", "embed"}, {"ln2", "add1"}, {"ln_f", "add2"}}));
  // Nothing is left but the norms and the products: no Add.
  ASSERT_EQ(g.nodes().size(), 5u);
  for (const auto& n : g.nodes()) EXPECT_NE(n->op_type(), "Add") << n->name();
  for (const char* name : {"ln1", "ln2"}) {
    SCOPED_TRACE(name);
    const ir::Node* ln = g.find_node(name);
    ASSERT_NE(ln, nullptr);
    const fusion::ResidualSum* sum = ln->annotation<fusion::ResidualSum>();
    ASSERT_NE(sum, nullptr);
    EXPECT_EQ(sum->output, 3u);
    EXPECT_EQ(sum->describe(), "residual sum in output 3");
    ASSERT_EQ(ln->num_outputs(), 4u);
    ASSERT_EQ(ln->num_inputs(), 4u);
    // Y keeps its name and output index; Mean and InvStdDev are unread placeholders.
    EXPECT_EQ(ln->output(0)->name(), std::string("y") + (name[2]));
    EXPECT_TRUE(ln->output(1)->uses().empty());
    EXPECT_TRUE(ln->output(2)->uses().empty());
    EXPECT_EQ(ln->output(3)->type().dtype, DType::Float32);
    EXPECT_EQ(ir::shape_to_string(*ln->output(3)->type().shape), "[2,5,8]");
  }
  // ln1 reads the embeddings and writes h0, which ln2 reads as X; ln2 takes mm1's product as
  // its residual and writes h1 (under its name), which the final norm reads as X.
  const ir::Node* ln1 = g.find_node("ln1");
  const ir::Node* ln2 = g.find_node("ln2");
  const ir::Node* ln_f = g.find_node("ln_f");
  ASSERT_NE(ln_f, nullptr);
  EXPECT_EQ(ln1->input(0)->name(), "emb");
  EXPECT_EQ(ln1->input(3)->name(), "pos");
  EXPECT_EQ(ln1->output(3)->name(), "h0");
  EXPECT_EQ(ln2->input(0), ln1->output(3));
  EXPECT_EQ(ln2->input(3)->producer(), g.find_node("mm1"));
  EXPECT_EQ(ln2->output(3)->name(), "h1");
  EXPECT_EQ(ln_f->input(0), ln2->output(3));
  EXPECT_EQ(ln_f->input(3)->producer(), g.find_node("mm2"));
  // The last sum has the final norm as its one reader: the plain form, no sum written.
  EXPECT_EQ(ln_f->annotation<fusion::ResidualSum>(), nullptr);
  EXPECT_EQ(ln_f->num_outputs(), 1u);
}

TEST(FusionPayloads, NamesOfTheirChoices) {
  EXPECT_STREQ(fusion::activation_name(Activation::None), "None");
  EXPECT_STREQ(fusion::activation_name(Activation::GeluTanh), "GeluTanh");
  EXPECT_STREQ(fusion::activation_name(Activation::Swish), "Swish");
  EXPECT_STREQ(fusion::mask_name(fusion::Attention::Mask::WhereFalse), "where_false");
  fusion::OperandPermutes p;
  p.b = {0, 1, 3, 2};
  EXPECT_EQ(p.describe(), "perm_b=[0, 1, 3, 2]");
  fusion::Attention a;
  a.perm_q = a.perm_k = a.perm_v = {0, 1, 2, 3};
  a.mask = fusion::Attention::Mask::WhereTrue;
  a.mask_fill = -1e4f;
  EXPECT_EQ(a.describe(),
            "attention perm_q=[0, 1, 2, 3] perm_k=[0, 1, 2, 3] perm_v=[0, 1, 2, 3] alpha=1 "
            "mask=where_true fill=-10000");
}

}  // namespace
}  // namespace switchyard::backends
