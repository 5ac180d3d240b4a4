// The attention fusion (backends/fusion/attention.cc), checked on the graph it produces after
// the passes that run before it in a CUDA partition (matmul epilogues, Transpose folding, the
// mask fusion): BERT's attention (head split, scale, additive mask, head merge) and GPT's
// (Where with -inf) become one MatMul with a fusion::Attention; patterns that differ are left
// alone. Needs no GPU (the harness and tests/gpu/transformer_fusion_test.cc check the kernel).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backends/fusion/fusion.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "support/op_test_util.h"

namespace switchyard::backends {
namespace {

using ir::DType;
using Mask = fusion::Attention::Mask;

ir::Type tensor(DType dtype, std::vector<int64_t> dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::Dim(d));
  return ir::Type::tensor(dtype, s);
}

ir::Value* scalar(ir::Graph& g, const std::string& name, float v, DType dtype) {
  ir::Tensor t(dtype, {});
  if (dtype == DType::Float16) {
    t.data<Float16>()[0] = Float16(v);
  } else if (dtype == DType::BFloat16) {
    t.data<BFloat16>()[0] = BFloat16(v);
  } else {
    t.data<float>()[0] = v;
  }
  return g.add_constant(name, t);
}

ir::Value* transpose(ir::Graph& g, ir::Value* x, std::vector<int64_t> perm,
                     const std::string& name) {
  ir::Node* t = g.add_node("Transpose", name, {x}, {name + "_y"});
  t->set_attribute(ir::Attribute::make_ints("perm", std::move(perm)));
  return t->output(0);
}

// What may differ from BERT's attention.
struct Variant {
  std::string mask = "add";  // "add", "where", "none"
  DType dtype = DType::Float32;
  int64_t softmax_axis = -1;
  bool k_transposed_in_graph = true;  // false: K is fed as [B, H, D, S] (head dim not innermost)
  bool scores_read_twice = false;
  bool merge = true;
};

// q, k, v [2, 5, 3, 8] -> BERT's (or GPT's) attention -> [2, 5, 3, 8].
void build(ir::Graph& g, const Variant& v) {
  ir::Value* q = g.add_input("q", tensor(v.dtype, {2, 5, 3, 8}));
  ir::Value* k = v.k_transposed_in_graph ? g.add_input("k", tensor(v.dtype, {2, 5, 3, 8}))
                                         : g.add_input("k", tensor(v.dtype, {2, 3, 8, 5}));
  ir::Value* vv = g.add_input("v", tensor(v.dtype, {2, 5, 3, 8}));
  ir::Value* qt = transpose(g, q, {0, 2, 1, 3}, "tq");
  ir::Value* kt = v.k_transposed_in_graph ? transpose(g, k, {0, 2, 3, 1}, "tk") : k;
  ir::Value* vt = transpose(g, vv, {0, 2, 1, 3}, "tv");
  ir::Value* s = g.add_node("MatMul", "scores", {qt, kt}, {"s"})->output(0);
  ir::Value* scaled =
      g.add_node("Mul", "scale", {s, scalar(g, "alpha", 0.375f, v.dtype)}, {"ss"})->output(0);
  if (v.mask == "add") {
    ir::Value* m = g.add_input("mask", tensor(v.dtype, {2, 1, 1, 5}));
    scaled = g.add_node("Add", "add_mask", {scaled, m}, {"sm"})->output(0);
  } else if (v.mask == "where") {
    ir::Value* c = g.add_input("cond", tensor(DType::Bool, {1, 1, 5, 5}));
    ir::Value* fill = scalar(g, "fill", -std::numeric_limits<float>::infinity(), v.dtype);
    scaled = g.add_node("Where", "where", {c, fill, scaled}, {"sw"})->output(0);
  }
  ir::Node* sm = g.add_node("Softmax", "softmax", {scaled}, {"p"});
  sm->set_attribute(ir::Attribute::make_int("axis", v.softmax_axis));
  ir::Value* ctx = g.add_node("MatMul", "context", {sm->output(0), vt}, {"c"})->output(0);
  g.add_output(v.merge ? transpose(g, ctx, {0, 2, 1, 3}, "merge") : ctx);
  if (v.scores_read_twice) g.add_output(g.add_node("Neg", "neg", {s}, {"z"})->output(0));
}

// The CUDA partition's order (backends/cuda/fusion.cc), for the rules' dtypes.
std::vector<runtime::FusionGroup> fuse(ir::Graph& g) {
  std::vector<runtime::FusionGroup> groups = fuse_matmul_epilogues(g, true);
  for (auto& x : fold_transposes_into_matmul(g, {DType::Float32, DType::Float16}))
    groups.push_back(std::move(x));
  for (auto& x : fuse_softmax_mask(g)) groups.push_back(std::move(x));
  for (auto& x : fuse_attention(g, AttentionRules{{DType::Float32, DType::Float16}}))
    groups.push_back(std::move(x));
  return merge_fusion_groups(std::move(groups));
}

const ir::Node* only_node(const ir::Graph& g) {
  EXPECT_EQ(g.nodes().size(), 1u);
  return g.nodes().empty() ? nullptr : g.nodes().front().get();
}

TEST(AttentionFusion, BertAttentionBecomesOneNode) {
  ir::Graph g("bert");
  build(g, Variant{});
  ops::infer_types(g);
  std::vector<runtime::FusionGroup> groups = fuse(g);
  ir::verify(g);
  const ir::Node* n = only_node(g);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->name(), "context");
  EXPECT_EQ(n->op_type(), "MatMul");
  const fusion::Attention* a = n->annotation<fusion::Attention>();
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(n->num_inputs(), 4u);
  EXPECT_EQ(n->input(0)->name(), "q");
  EXPECT_EQ(n->input(1)->name(), "k");
  EXPECT_EQ(n->input(2)->name(), "v");
  EXPECT_EQ(n->input(3)->name(), "mask");
  EXPECT_EQ(a->perm_q, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(a->perm_k, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(a->perm_v, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(a->perm_out, (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_FLOAT_EQ(a->alpha, 0.375f);
  EXPECT_EQ(a->mask, Mask::Add);
  EXPECT_EQ(a->describe(),
            "attention perm_q=[0, 2, 1, 3] perm_k=[0, 2, 1, 3] perm_v=[0, 2, 1, 3] "
            "perm_out=[0, 2, 1, 3] alpha=0.375 mask=add");
  // The scores' epilogue and the operands' permutations are the attention's now.
  EXPECT_EQ(n->annotations().size(), 1u);
  EXPECT_EQ(testing::private_attributes(g), std::vector<std::string>{});
  EXPECT_EQ(n->output(0)->name(), "merge_y");
  EXPECT_TRUE(g.is_output(n->output(0)));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].members, (std::vector<std::string>{"context", "tv", "scores", "scale", "tq",
                                                         "tk", "softmax", "add_mask", "merge"}));
}

TEST(AttentionFusion, GptCausalWhereAndFloat16) {
  Variant v;
  v.mask = "where";
  v.dtype = DType::Float16;
  v.merge = false;
  ir::Graph g("gpt");
  build(g, v);
  ops::infer_types(g);
  fuse(g);
  ir::verify(g);
  const ir::Node* n = g.find_node("context");
  ASSERT_NE(n, nullptr);
  const fusion::Attention* a = n->annotation<fusion::Attention>();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->mask, Mask::WhereTrue);
  EXPECT_TRUE(std::isinf(a->mask_fill) && a->mask_fill < 0);
  EXPECT_EQ(n->input(3)->name(), "cond");
  EXPECT_TRUE(a->perm_out.empty());
  EXPECT_EQ(testing::private_attributes(g), std::vector<std::string>{});
  EXPECT_EQ(n->output(0)->name(), "c");
  EXPECT_EQ(g.find_node("softmax"), nullptr);
  EXPECT_EQ(g.find_node("where"), nullptr);
}

TEST(AttentionFusion, PatternsThatDifferAreLeftAlone) {
  std::vector<std::pair<std::string, Variant>> variants;
  Variant v;
  v.softmax_axis = 2;
  variants.emplace_back("softmax over the query axis", v);
  v = Variant{};
  v.k_transposed_in_graph = false;
  variants.emplace_back("K fed transposed (head dim not innermost)", v);
  v = Variant{};
  v.scores_read_twice = true;
  variants.emplace_back("scores read elsewhere", v);
  v = Variant{};
  v.dtype = DType::BFloat16;  // not in the rules' dtypes
  variants.emplace_back("a dtype the kernel does not take", v);
  for (const auto& [what, variant] : variants) {
    ir::Graph g("no");
    build(g, variant);
    ops::infer_types(g);
    fuse(g);
    ir::verify(g);
    for (const auto& n : g.nodes())
      EXPECT_EQ(n->annotation<fusion::Attention>(), nullptr) << what << ": " << n->name();
    EXPECT_NE(g.find_node("softmax"), nullptr) << what;
  }
}

}  // namespace
}  // namespace switchyard::backends
