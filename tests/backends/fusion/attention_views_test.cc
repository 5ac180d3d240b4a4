// Attention operands read as views of one packed product (backends/fusion/attention_views.cc),
// and BERT's sibling query, key and value products packed so that they become one
// (matmul_pack.cc), checked on the graph the CUDA partition's order of passes produces
// (backends/cuda/fusion.cc): GPT's fused QKV product split on its last axis and BERT's three
// products lose their Split and Reshapes, the attention taking the product with a View per
// operand; shapes and readers where that would change the graph leave it alone. Needs no GPU
// (tests/gpu/transformer_fusion_test.cc runs both against the unfused graphs on cuda:0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "backends/fusion/fusion.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "support/op_test_util.h"

namespace switchyard::backends {
namespace {

using ir::DType;
using testing::random_tensor;
using View = fusion::Attention::View;

ir::Type tensor(DType dtype, const std::vector<ir::Dim>& dims) {
  return ir::Type::tensor(dtype, ir::Shape(dims.begin(), dims.end()));
}

ir::Value* ints(ir::Graph& g, const std::string& name, std::vector<int64_t> values) {
  return g.add_constant(name, testing::int64_tensor(values));
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

ir::Value* op(ir::Graph& g, const char* type, const std::string& name,
              std::vector<ir::Value*> inputs) {
  return g.add_node(type, name, std::move(inputs), {name + "_y"})->output(0);
}

ir::Value* transpose(ir::Graph& g, ir::Value* x, std::vector<int64_t> perm,
                     const std::string& name) {
  ir::Node* t = g.add_node("Transpose", name, {x}, {name + "_y"});
  t->set_attribute(ir::Attribute::make_ints("perm", std::move(perm)));
  return t->output(0);
}

// The exported head-split target [dim 0, dim 1, heads, head dim] of `measured`, computed at run
// time (Shape -> Gather -> Unsqueeze -> Concat), one Concat per operand `tag`.
ir::Value* runtime_target(ir::Graph& g, ir::Value* measured, const std::string& prefix,
                          int64_t heads, int64_t dim) {
  ir::Value* shape = op(g, "Shape", prefix + "shape", {measured});
  std::vector<ir::Value*> pieces;
  for (int64_t i = 0; i < 2; ++i) {
    const std::string tag = prefix + std::to_string(i);
    ir::Node* gather = g.add_node("Gather", "gather" + tag,
                                  {shape, g.add_constant("i" + tag, testing::int64_scalar(i))},
                                  {"gather" + tag + "_y"});
    gather->set_attribute(ir::Attribute::make_int("axis", 0));
    pieces.push_back(
        op(g, "Unsqueeze", "unsqueeze" + tag, {gather->output(0), ints(g, "axes" + tag, {0})}));
  }
  pieces.push_back(ints(g, prefix + "heads", {heads}));
  pieces.push_back(ints(g, prefix + "dim", {dim}));
  ir::Node* concat = g.add_node("Concat", prefix + "cat", pieces, {prefix + "cat_y"});
  concat->set_attribute(ir::Attribute::make_int("axis", 0));
  return concat->output(0);
}

// The attention over the head splits rq, rk, rv [B, S, H, D]: GPT's (scale, causal Where) or
// BERT's (Div by sqrt D, additive mask), then the head merge.
void attend(ir::Graph& g, ir::Value* rq, ir::Value* rk, ir::Value* rv, DType dtype, bool bert,
            int64_t batch, int64_t seq, int64_t dim) {
  ir::Value* s =
      g.add_node("MatMul", "scores",
                 {transpose(g, rq, {0, 2, 1, 3}, "tq"), transpose(g, rk, {0, 2, 3, 1}, "tk")},
                 {"s"})
          ->output(0);
  ir::Value* x = nullptr;
  if (bert) {
    x = op(g, "Div", "scale", {s, scalar(g, "sqrt_d", std::sqrt(static_cast<float>(dim)), dtype)});
    x = op(g, "Add", "add_mask",
           {x, g.add_input("mask", tensor(dtype, {ir::Dim(batch), 1, 1, ir::Dim(seq)}))});
  } else {
    x = op(g, "Mul", "scale", {s, scalar(g, "alpha", 0.25f, dtype)});
    ir::Value* cond = g.add_input("cond", tensor(DType::Bool, {1, 1, ir::Dim(seq), ir::Dim(seq)}));
    x = op(g, "Where", "where",
           {cond, scalar(g, "fill", -std::numeric_limits<float>::infinity(), dtype), x});
  }
  ir::Node* sm = g.add_node("Softmax", "softmax", {x}, {"p"});
  sm->set_attribute(ir::Attribute::make_int("axis", -1));
  ir::Value* ctx =
      g.add_node("MatMul", "context", {sm->output(0), transpose(g, rv, {0, 2, 1, 3}, "tv")}, {"c"})
          ->output(0);
  g.add_output(transpose(g, ctx, {0, 2, 1, 3}, "merge"));
}

// What may differ from GPT's attention over its fused QKV product.
struct Gpt {
  DType dtype = DType::Float16;
  int64_t batch = 2, seq = 5, heads = 4, dim = 16, v_dim = 16, embed = 32;
  // "runtime": Concat of Shape(x)'s dims; "constant": [B, S, H, D]; "copy": [0, 0, H, D];
  // "infer": [B, -1, H, D]; "no_head_split": [B, 2S, H, D / 2]; "wrong_width": runtime with
  // K's head dim D / 2 (the Reshape itself fails).
  std::string target = "runtime";
  bool slices = false;          // three Slices of the product instead of one Split
  bool split_sequence = false;  // Split the sequence axis of [B, 3S, C] instead
  bool read_elsewhere = false;  // a Neg reads the Split's K part too
  bool symbolic = false;        // x is [batch, seq, E]
};

// x [B, S, E] -> MatMul + bias [E, 2C + H*v_dim] -> Split (last axis) -> Reshape each to
// [B, S, H, D] -> GPT's attention.
void build(ir::Graph& g, const Gpt& s) {
  const int64_t c = s.heads * s.dim, cv = s.heads * s.v_dim;
  const int64_t rows = s.split_sequence ? 3 * s.seq : s.seq;
  const int64_t width = s.split_sequence ? c : 2 * c + cv;
  ir::Value* x = g.add_input(
      "x", s.symbolic ? tensor(s.dtype, {ir::Dim("batch"), ir::Dim("seq"), ir::Dim(s.embed)})
                      : tensor(s.dtype, {ir::Dim(s.batch), ir::Dim(rows), ir::Dim(s.embed)}));
  ir::Value* h = op(g, "MatMul", "qkv",
                    {x, g.add_constant("w_qkv", random_tensor(s.dtype, {s.embed, width}, 1))});
  h = op(g, "Add", "qkv_bias", {h, g.add_constant("b_qkv", random_tensor(s.dtype, {width}, 2))});
  std::vector<ir::Value*> parts;
  if (s.slices) {
    const int64_t bounds[] = {0, c, 2 * c, 2 * c + cv};
    const char* names[] = {"slice_q", "slice_k", "slice_v"};
    for (int i = 0; i < 3; ++i)
      parts.push_back(op(g, "Slice", names[i],
                         {h, ints(g, std::string(names[i]) + "_starts", {bounds[i]}),
                          ints(g, std::string(names[i]) + "_ends", {bounds[i + 1]}),
                          ints(g, std::string(names[i]) + "_axes", {-1})}));
  } else {
    const std::vector<int64_t> sizes = s.split_sequence ? std::vector<int64_t>{s.seq, s.seq, s.seq}
                                                        : std::vector<int64_t>{c, c, cv};
    ir::Node* split = g.add_node("Split", "split", {h, ints(g, "split_sizes", sizes)},
                                 {"part_q", "part_k", "part_v"});
    split->set_attribute(ir::Attribute::make_int("axis", s.split_sequence ? 1 : 2));
    parts = split->outputs();
  }
  const char* names[] = {"rq", "rk", "rv"};
  std::vector<ir::Value*> heads;
  for (int i = 0; i < 3; ++i) {
    const int64_t d = i == 2 ? s.v_dim : s.dim;
    ir::Value* target = nullptr;
    if (s.target == "runtime" || s.target == "wrong_width")
      target = runtime_target(g, x, std::string(names[i]) + "_", s.heads,
                              s.target == "wrong_width" && i == 1 ? d / 2 : d);
    else if (s.target == "constant")
      target = ints(g, std::string(names[i]) + "_t", {s.batch, s.seq, s.heads, d});
    else if (s.target == "copy")
      target = ints(g, std::string(names[i]) + "_t", {0, 0, s.heads, d});
    else if (s.target == "infer")
      target = ints(g, std::string(names[i]) + "_t", {s.batch, -1, s.heads, d});
    else
      target = ints(g, std::string(names[i]) + "_t", {s.batch, 2 * s.seq, s.heads, d / 2});
    heads.push_back(op(g, "Reshape", names[i], {parts[static_cast<size_t>(i)], target}));
  }
  const bool no_split = s.target == "no_head_split";
  attend(g, heads[0], heads[1], heads[2], s.dtype, false, s.batch, no_split ? 2 * s.seq : s.seq,
         no_split ? s.dim / 2 : s.dim);
  if (s.read_elsewhere) g.add_output(op(g, "Neg", "neg", {parts[1]}));
  ops::infer_types(g);
}

// The CUDA partition's order (backends/cuda/fusion.cc) for 16-bit attention (and float32 here,
// standing for a graph --precision narrows), with its report's filter.
std::vector<runtime::FusionGroup> cuda_order(ir::Graph& g) {
  const std::vector<DType> dtypes = {DType::Float32, DType::Float16};
  std::vector<std::string> user_nodes;
  for (const auto& n : g.nodes()) user_nodes.push_back(n->name());
  std::vector<runtime::FusionGroup> groups = fuse_matmul_epilogues(g, true);
  auto append = [&](std::vector<runtime::FusionGroup> more) {
    for (auto& x : more) groups.push_back(std::move(x));
  };
  append(fold_transposes_into_matmul(g, dtypes));
  append(fuse_softmax_mask(g));
  append(fuse_attention(g, AttentionRules{dtypes}));
  PackRules pack{dtypes};
  pack.attention_operands_only = true;
  append(pack_sibling_matmuls(g, pack));
  append(fold_packed_attention_operands(g));
  ir::verify(g);
  return keep_named_members(merge_fusion_groups(std::move(groups)), user_nodes);
}

const fusion::Attention* attention_at(const ir::Graph& g, const char* name = "context") {
  const ir::Node* n = g.find_node(name);
  return n ? n->annotation<fusion::Attention>() : nullptr;
}

const std::vector<std::string>* group_of(const std::vector<runtime::FusionGroup>& groups,
                                         const std::string& head) {
  for (const auto& g : groups)
    if (!g.members.empty() && g.members.front() == head) return &g.members;
  return nullptr;
}

bool has_member(const std::vector<std::string>* members, const std::string& name) {
  return members && std::find(members->begin(), members->end(), name) != members->end();
}

void expect_view(const View& v, int64_t offset, int64_t width, const std::string& reshape) {
  EXPECT_EQ(v.offset, offset);
  EXPECT_EQ(v.width, width);
  EXPECT_FALSE(v.allowzero);
  EXPECT_EQ(v.reshape, reshape);
}

TEST(AttentionViews, GptSplitOfTheQkvProductIsReadInPlace) {
  for (DType dtype : {DType::Float16, DType::Float32}) {
    SCOPED_TRACE(ir::dtype_name(dtype));
    Gpt s;
    s.dtype = dtype;
    ir::Graph g("gpt");
    build(g, s);
    std::vector<runtime::FusionGroup> groups = cuda_order(g);
    const ir::Node* n = g.find_node("context");
    ASSERT_NE(n, nullptr);
    const fusion::Attention* a = n->annotation<fusion::Attention>();
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->views.size(), 3u);
    expect_view(a->views[0], 0, 64, "rq");
    expect_view(a->views[1], 64, 64, "rk");
    expect_view(a->views[2], 128, 64, "rv");
    EXPECT_EQ(a->perm_q, (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_EQ(a->perm_k, (std::vector<int64_t>{0, 2, 1, 3}));
    EXPECT_EQ(a->mask, fusion::Attention::Mask::WhereTrue);
    // Q, K and V are the product itself; the Reshapes' targets inputs 4-6, read on the host.
    ASSERT_EQ(n->num_inputs(), 7u);
    const ir::Node* qkv = g.find_node("qkv");
    ASSERT_NE(qkv, nullptr);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(n->input(i), qkv->output(0)) << i;
    EXPECT_EQ(n->input(3)->name(), "cond");
    EXPECT_EQ(n->input(4)->name(), "rq_cat_y");
    EXPECT_EQ(n->input(5)->name(), "rk_cat_y");
    EXPECT_EQ(n->input(6)->name(), "rv_cat_y");
    for (const char* gone : {"split", "rq", "rk", "rv", "tq", "tk", "tv", "scores", "softmax"})
      EXPECT_EQ(g.find_node(gone), nullptr) << gone;
    EXPECT_EQ(qkv->num_inputs(), 3u);  // the bias, in the product's epilogue
    EXPECT_EQ(a->describe(),
              "attention perm_q=[0, 2, 1, 3] perm_k=[0, 2, 1, 3] perm_v=[0, 2, 1, 3] "
              "perm_out=[0, 2, 1, 3] alpha=0.25 mask=where_true fill=-inf "
              "views q=[0, 64) k=[64, 128) v=[128, 192)");
    // The report: the Split and the Reshapes ran inside the attention.
    const std::vector<std::string>* members = group_of(groups, "context");
    for (const char* name : {"scores", "softmax", "where", "merge", "rq", "rk", "rv", "split"})
      EXPECT_TRUE(has_member(members, name)) << name;
    EXPECT_EQ(group_of(groups, "qkv") ? *group_of(groups, "qkv") : std::vector<std::string>{},
              (std::vector<std::string>{"qkv", "qkv_bias"}));
    // Once read in place, another fold finds nothing more to do.
    const std::string described = a->describe();
    EXPECT_TRUE(fold_packed_attention_operands(g).empty());
    EXPECT_EQ(attention_at(g)->describe(), described);
    EXPECT_EQ(g.find_node("context")->num_inputs(), 7u);
  }
}

TEST(AttentionViews, HeadSplitTargetsKnownAtCompileTimeAndSlices) {
  struct Case {
    std::string what;
    Gpt spec;
  };
  std::vector<Case> cases;
  Gpt s;
  s.target = "constant";
  cases.push_back({"constant [B, S, H, D]", s});
  s.target = "copy";
  cases.push_back({"[0, 0, H, D]", s});
  s.target = "infer";
  cases.push_back({"[B, -1, H, D]", s});
  s = Gpt{};
  s.slices = true;
  cases.push_back({"three Slices of the last axis", s});
  s = Gpt{};
  s.symbolic = true;
  cases.push_back({"symbolic batch and sequence", s});
  s = Gpt{};
  s.v_dim = 32;  // Split [64, 64, 128]: unequal parts that match the heads
  cases.push_back({"V's head dim 32", s});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ir::Graph g("gpt");
    build(g, c.spec);
    std::vector<runtime::FusionGroup> groups = cuda_order(g);
    const fusion::Attention* a = attention_at(g);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->views.size(), 3u);
    const int64_t cv = c.spec.heads * c.spec.v_dim;
    expect_view(a->views[0], 0, 64, "rq");
    expect_view(a->views[1], 64, 64, "rk");
    expect_view(a->views[2], 128, cv, "rv");
    for (const char* gone : {"split", "slice_q", "slice_k", "slice_v", "rq", "rk", "rv"})
      EXPECT_EQ(g.find_node(gone), nullptr) << gone;
    const std::vector<std::string>* members = group_of(groups, "context");
    EXPECT_TRUE(has_member(members, c.spec.slices ? "slice_k" : "split"));
  }
}

TEST(AttentionViews, OperandsThatAreNoViewOfTheProductAreLeftAlone) {
  struct Case {
    std::string what;
    Gpt spec;
    bool attention = true;  // the attention itself still fuses
  };
  std::vector<Case> cases;
  Gpt s;
  s.target = "no_head_split";  // [B, 2S, H, D / 2]: rows of the product cut in half
  cases.push_back({"a constant target that is no head split", s});
  s = Gpt{};
  s.read_elsewhere = true;
  cases.push_back({"a Split output read outside the attention", s});
  s = Gpt{};
  s.split_sequence = true;
  s.target = "constant";
  cases.push_back({"a Split of the sequence axis", s});
  s = Gpt{};
  s.target = "wrong_width";
  cases.push_back({"K's target contradicts its width (the Reshape fails)", s});
  s = Gpt{};
  s.dtype = DType::BFloat16;  // not in the rules' dtypes
  cases.push_back({"a dtype the attention does not take", s, false});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ir::Graph g("gpt");
    build(g, c.spec);
    cuda_order(g);
    const fusion::Attention* a = attention_at(g);
    EXPECT_EQ(a != nullptr, c.attention);
    if (a) {
      EXPECT_TRUE(a->views.empty()) << a->describe();
    }
    EXPECT_NE(g.find_node("split"), nullptr);
    EXPECT_NE(g.find_node("rq"), nullptr);
    EXPECT_NE(g.find_node("rk"), nullptr);
    if (a) {
      const ir::Node* n = g.find_node("context");
      EXPECT_EQ(n->input(0)->name(), "rq_y");
      EXPECT_LE(n->num_inputs(), 4u);
    }
  }
}

// What may differ from BERT's attention over three products of one input.
struct Bert {
  DType dtype = DType::Float16;
  int64_t batch = 2, seq = 5, heads = 4, dim = 16, embed = 64;
  bool key_weight_input = false;  // K's weight is a graph input, not a constant
  bool width_measured = false;    // a Shape of Q's product is a graph output (it gives C)
  bool key_relu = false;          // K's product has a Relu epilogue
};

// x -> {q, k, v}_mm (+ bias) -> Shape dims + heads -> Reshape -> BERT's attention.
void build(ir::Graph& g, const Bert& s) {
  const int64_t c = s.heads * s.dim;
  ir::Value* x =
      g.add_input("x", tensor(s.dtype, {ir::Dim(s.batch), ir::Dim(s.seq), ir::Dim(s.embed)}));
  std::vector<ir::Value*> heads;
  uint64_t seed = 10;
  for (const char* p : {"q", "k", "v"}) {
    const std::string name = p;
    ir::Value* w = name == "k" && s.key_weight_input
                       ? g.add_input("w_k", tensor(s.dtype, {ir::Dim(s.embed), ir::Dim(c)}))
                       : g.add_constant("w_" + name, random_tensor(s.dtype, {s.embed, c}, seed));
    ir::Value* y = op(g, "MatMul", name + "_mm", {x, w});
    y = op(g, "Add", name + "_bias",
           {g.add_constant("b_" + name, random_tensor(s.dtype, {c}, seed + 1)), y});
    if (name == "k" && s.key_relu) y = op(g, "Relu", "k_relu", {y});
    if (name == "q" && s.width_measured) g.add_output(op(g, "Shape", "q_dims", {y}));
    heads.push_back(
        op(g, "Reshape", "r" + name, {y, runtime_target(g, y, name + "_", s.heads, s.dim)}));
    seed += 2;
  }
  attend(g, heads[0], heads[1], heads[2], s.dtype, true, s.batch, s.seq, s.dim);
  ops::infer_types(g);
}

TEST(AttentionViews, BertQueryKeyValueProductsBecomeOneReadInPlace) {
  Bert s;
  ir::Graph g("bert");
  build(g, s);
  std::vector<ir::Tensor> weights, biases;
  for (const char* p : {"q", "k", "v"}) {
    weights.push_back(g.find_value(std::string("w_") + p)->constant());
    biases.push_back(g.find_value(std::string("b_") + p)->constant());
  }
  std::vector<runtime::FusionGroup> groups = cuda_order(g);
  const ir::Node* packed = g.find_node("q_mm");
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(g.find_node("k_mm"), nullptr);
  EXPECT_EQ(g.find_node("v_mm"), nullptr);
  EXPECT_EQ(g.find_node("q_mm/split"), nullptr);
  for (const char* gone : {"rq", "rk", "rv"}) EXPECT_EQ(g.find_node(gone), nullptr) << gone;
  // [E, 3C] and [3C]: each row the three products' rows side by side.
  ASSERT_EQ(packed->num_inputs(), 3u);
  const ir::Tensor& w = packed->input(1)->constant();
  const ir::Tensor& b = packed->input(2)->constant();
  ASSERT_EQ(w.shape(), (std::vector<int64_t>{64, 192}));
  ASSERT_EQ(b.shape(), (std::vector<int64_t>{192}));
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t part = 0; part < 3; ++part)
      EXPECT_EQ(std::memcmp(w.data<Float16>() + r * 192 + part * 64,
                            weights[static_cast<size_t>(part)].data<Float16>() + r * 64,
                            64 * sizeof(Float16)),
                0)
          << "row " << r << " part " << part;
  for (int64_t part = 0; part < 3; ++part)
    EXPECT_EQ(std::memcmp(b.data<Float16>() + part * 64,
                          biases[static_cast<size_t>(part)].data<Float16>(), 64 * sizeof(Float16)),
              0);
  EXPECT_EQ(packed->output(0)->type().to_string(), "float16[2,5,192]");

  const ir::Node* n = g.find_node("context");
  ASSERT_NE(n, nullptr);
  const fusion::Attention* a = n->annotation<fusion::Attention>();
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->views.size(), 3u);
  expect_view(a->views[0], 0, 64, "rq");
  expect_view(a->views[1], 64, 64, "rk");
  expect_view(a->views[2], 128, 64, "rv");
  EXPECT_EQ(a->mask, fusion::Attention::Mask::Add);
  ASSERT_EQ(n->num_inputs(), 7u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(n->input(i), packed->output(0)) << i;
  EXPECT_EQ(n->input(3)->name(), "mask");
  EXPECT_EQ(n->input(4)->name(), "q_cat_y");
  // The Shapes that measured each product's batch and sequence measure the packed one's.
  for (const char* shape : {"q_shape", "k_shape", "v_shape"})
    EXPECT_EQ(g.find_node(shape)->input(0), packed->output(0)) << shape;
  // The report names the user's nodes: the products with their biases as one kernel, the
  // Reshapes inside the attention, never the Split the packing made.
  EXPECT_EQ(*group_of(groups, "q_mm"),
            (std::vector<std::string>{"q_mm", "q_bias", "k_mm", "k_bias", "v_mm", "v_bias"}));
  const std::vector<std::string>* members = group_of(groups, "context");
  for (const char* name : {"rq", "rk", "rv", "add_mask", "scale"})
    EXPECT_TRUE(has_member(members, name)) << name;
  for (const auto& group : groups)
    for (const std::string& m : group.members) EXPECT_EQ(m.find("/split"), std::string::npos) << m;
}

TEST(AttentionViews, BertSiblingsThatCannotPackStaySeparate) {
  {
    SCOPED_TRACE("K's weight is a graph input: Q and V pack, K stays");
    Bert s;
    s.key_weight_input = true;
    ir::Graph g("bert");
    build(g, s);
    std::vector<runtime::FusionGroup> groups = cuda_order(g);
    ASSERT_NE(g.find_node("k_mm"), nullptr);
    EXPECT_EQ(g.find_node("k_mm")->input(1)->name(), "w_k");
    EXPECT_EQ(g.find_node("v_mm"), nullptr);
    const ir::Node* packed = g.find_node("q_mm");
    ASSERT_NE(packed, nullptr);
    EXPECT_EQ(packed->input(1)->constant().shape(), (std::vector<int64_t>{64, 128}));
    const ir::Node* n = g.find_node("context");
    const fusion::Attention* a = attention_at(g);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->views.size(), 3u);
    expect_view(a->views[0], 0, 64, "rq");
    EXPECT_EQ(a->views[1].width, 0);
    expect_view(a->views[2], 64, 64, "rv");
    EXPECT_EQ(n->input(1)->name(), "rk_y");
    EXPECT_EQ(n->input(5), nullptr);
    EXPECT_EQ(*group_of(groups, "q_mm"),
              (std::vector<std::string>{"q_mm", "q_bias", "v_mm", "v_bias"}));
  }
  {
    SCOPED_TRACE("Q's product is measured whole (its width): K and V pack");
    Bert s;
    s.width_measured = true;
    ir::Graph g("bert");
    build(g, s);
    cuda_order(g);
    ASSERT_NE(g.find_node("q_mm"), nullptr);
    EXPECT_EQ(g.find_node("q_mm")->input(1)->name(), "w_q");
    EXPECT_EQ(g.find_node("v_mm"), nullptr);
    ASSERT_NE(g.find_node("k_mm"), nullptr);
    EXPECT_EQ(g.find_node("k_mm")->input(1)->constant().shape(), (std::vector<int64_t>{64, 128}));
    const fusion::Attention* a = attention_at(g);
    ASSERT_NE(a, nullptr);
    ASSERT_EQ(a->views.size(), 3u);
    EXPECT_EQ(a->views[0].width, 0);
    expect_view(a->views[1], 0, 64, "rk");
    expect_view(a->views[2], 64, 64, "rv");
  }
  {
    SCOPED_TRACE("K's product has its own activation: Q and V pack");
    Bert s;
    s.key_relu = true;
    ir::Graph g("bert");
    build(g, s);
    cuda_order(g);
    ASSERT_NE(g.find_node("k_mm"), nullptr);
    EXPECT_EQ(g.find_node("v_mm"), nullptr);
    ASSERT_NE(g.find_node("q_mm"), nullptr);
    EXPECT_EQ(g.find_node("q_mm")->input(1)->constant().shape(), (std::vector<int64_t>{64, 128}));
  }
}

}  // namespace
}  // namespace switchyard::backends
