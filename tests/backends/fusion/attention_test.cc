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

// GPT's exported mask: Slice(Slice(tril constant, axis 2), axis 3) -> Not -> Cast(bool) ->
// Where(., -inf, scores). Under mask_views the chain joins the attention: input 3 is the
// constant, the Slices' parameters inputs 7-14, the kind flipped by the Not; without it, the
// Where's condition stays the Cast's value.
TEST(AttentionFusion, AMaskReadThroughSlicesAndANotJoinsTheAttention) {
  auto build_sliced = [](ir::Graph& g) {
    Variant v;
    v.mask = "none";
    v.dtype = DType::Float16;
    v.merge = false;
    build(g, v);
    // Rewire: the softmax reads Where(mask, -inf, scaled) instead of `scaled`.
    ir::Node* sm = g.find_node("softmax");
    ir::Value* scaled = sm->input(0);
    ir::Tensor tril(DType::Bool, {1, 1, 16, 16});
    for (int64_t i = 0; i < 16; ++i)
      for (int64_t j = 0; j < 16; ++j) tril.data<bool>()[i * 16 + j] = j <= i;
    ir::Value* bias = g.add_constant("bias", tril);
    ir::Value* seq = g.add_input("ends", tensor(DType::Int64, {1}));
    ir::Value* zero = g.add_constant("zero", testing::int64_tensor({0}));
    ir::Value* rows =
        g.add_node("Slice", "slice_rows",
                   {bias, zero, seq, g.add_constant("axis2", testing::int64_tensor({2}))}, {"r"})
            ->output(0);
    ir::Value* cols =
        g.add_node("Slice", "slice_cols",
                   {rows, zero, seq, g.add_constant("axis3", testing::int64_tensor({3}))}, {"m"})
            ->output(0);
    ir::Value* masked = g.add_node("Not", "not", {cols}, {"nm"})->output(0);
    ir::Node* cast = g.add_node("Cast", "cast", {masked}, {"nmb"});
    cast->set_attribute(ir::Attribute::make_int("to", static_cast<int64_t>(DType::Bool)));
    ir::Value* fill = scalar(g, "fill", -std::numeric_limits<float>::infinity(), DType::Float16);
    ir::Value* w = g.add_node("Where", "where", {cast->output(0), fill, scaled}, {"sw"})->output(0);
    sm->set_input(0, w);
    g.sort_topologically();
  };
  for (bool views : {true, false}) {
    SCOPED_TRACE(views ? "mask_views" : "no mask_views");
    ir::Graph g("gpt_sliced");
    build_sliced(g);
    ops::infer_types(g);
    std::vector<runtime::FusionGroup> groups = fuse_matmul_epilogues(g, true);
    for (auto& x : fold_transposes_into_matmul(g, {DType::Float16})) groups.push_back(std::move(x));
    for (auto& x : fuse_softmax_mask(g)) groups.push_back(std::move(x));
    AttentionRules rules{{DType::Float16}};
    rules.mask_views = views;
    for (auto& x : fuse_attention(g, rules)) groups.push_back(std::move(x));
    groups = merge_fusion_groups(std::move(groups));
    ir::verify(g);
    const ir::Node* n = g.find_node("context");
    ASSERT_NE(n, nullptr);
    const fusion::Attention* a = n->annotation<fusion::Attention>();
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(groups.size(), 1u);
    if (!views) {
      EXPECT_EQ(a->mask, Mask::WhereTrue);
      EXPECT_EQ(n->input(3)->name(), "nmb");
      EXPECT_TRUE(a->mask_slices.empty());
      EXPECT_NE(g.find_node("not"), nullptr);
      continue;
    }
    EXPECT_EQ(a->mask, Mask::WhereFalse) << "the Not flips the kind";
    EXPECT_EQ(n->input(3)->name(), "bias");
    ASSERT_EQ(n->num_inputs(), 15u);
    for (size_t i = 4; i < 7; ++i) EXPECT_EQ(n->input(i), nullptr) << i;
    EXPECT_EQ(n->input(7)->name(), "zero");   // slice_rows' starts
    EXPECT_EQ(n->input(8)->name(), "ends");   // its ends
    EXPECT_EQ(n->input(9)->name(), "axis2");  // its axes
    EXPECT_EQ(n->input(10), nullptr);         // no steps
    EXPECT_EQ(n->input(13)->name(), "axis3");
    ASSERT_EQ(a->mask_slices.size(), 2u);
    EXPECT_EQ(a->mask_slices[0].slice, "slice_rows");
    EXPECT_EQ(a->mask_slices[1].slice, "slice_cols");
    EXPECT_NE(a->describe().find(" mask=where_false fill=-inf mask_slices=2"), std::string::npos)
        << a->describe();
    for (const char* gone : {"not", "cast", "slice_rows", "slice_cols", "where", "softmax"})
      EXPECT_EQ(g.find_node(gone), nullptr) << gone;
    EXPECT_EQ(groups[0].members,
              (std::vector<std::string>{"context", "tv", "scores", "scale", "tq", "tk", "where",
                                        "cast", "not", "slice_cols", "slice_rows", "softmax"}));
  }
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
