// Sibling products of one input packed into one (backends/fusion/matmul_pack.cc): the packed
// graph, run with the cpu kernels, gives the unfused graph's values under the same names, and
// siblings that differ (a non-constant weight, another epilogue, a missing bias) or would pass
// the weight bound stay apart. The attention-only rule (the CUDA partition's) packs nothing that
// no fused attention reads (tests/backends/fusion/attention_views_test.cc has those).
#include <gtest/gtest.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/fusion/fusion.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "runtime/graph_program.h"
#include "support/op_test_util.h"

namespace switchyard::backends {
namespace {

using ir::DType;
using testing::random_tensor;

ir::Type f32(std::vector<int64_t> dims) {
  return ir::Type::tensor(DType::Float32, ir::make_shape(dims));
}

// What each sibling y_i = act(x @ w_i + b_i) of x [2, 7, 16] is like.
struct Product {
  int64_t n = 8;
  bool bias = true;
  bool relu = false;
  bool weight_input = false;  // w_i is a graph input
};

// The siblings, every result a graph output; `extra` also reads the second one.
void build(ir::Graph& g, const std::vector<Product>& products, bool extra = false) {
  ir::Value* x = g.add_input("x", f32({2, 7, 16}));
  uint64_t seed = 1;
  for (size_t i = 0; i < products.size(); ++i) {
    const Product& p = products[i];
    const std::string tag = std::to_string(i);
    ir::Value* w = p.weight_input
                       ? g.add_input("w" + tag, f32({16, p.n}))
                       : g.add_constant("w" + tag, random_tensor(DType::Float32, {16, p.n}, seed));
    ir::Value* y = g.add_node("MatMul", "mm" + tag, {x, w}, {"p" + tag})->output(0);
    if (p.bias)
      y = g.add_node("Add", "bias" + tag,
                     {y, g.add_constant("b" + tag, random_tensor(DType::Float32, {p.n}, seed + 1))},
                     {"a" + tag})
              ->output(0);
    if (p.relu) y = g.add_node("Relu", "relu" + tag, {y}, {"r" + tag})->output(0);
    g.add_output(y);
    if (extra && i == 1) g.add_output(g.add_node("Neg", "neg", {y}, {"neg_y"})->output(0));
    seed += 2;
  }
  ops::infer_types(g);
}

std::vector<ir::Datum> feeds_of(const ir::Graph& g) {
  std::vector<ir::Datum> feeds;
  uint64_t seed = 100;
  for (const ir::Value* in : g.inputs()) {
    std::vector<int64_t> dims;
    for (const ir::Dim& d : *in->type().shape) dims.push_back(d.value);
    feeds.emplace_back(random_tensor(DType::Float32, dims, seed++));
  }
  return feeds;
}

std::vector<ir::Datum> run(const ir::Graph& g, const std::vector<ir::Datum>& feeds) {
  runtime::GraphProgram program(g, cpu::cpu_kernels());
  return testing::run_program(program, feeds);
}

size_t count_op(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type() == op;
  return n;
}

// Builds `products`, fuses the epilogues and packs under `rules`; expects the packed graph to
// give the unfused values; returns the groups.
std::vector<runtime::FusionGroup> pack_and_compare(ir::Graph& g,
                                                   const std::vector<Product>& products,
                                                   const PackRules& rules, bool extra = false) {
  build(g, products, extra);
  const std::vector<ir::Datum> feeds = feeds_of(g);
  const std::vector<ir::Datum> want = run(g, feeds);
  fuse_matmul_epilogues(g);
  std::vector<std::string> names;  // the results' names, which the Split's outputs keep
  for (const ir::Value* v : g.outputs()) names.push_back(v->name());
  std::vector<runtime::FusionGroup> groups = pack_sibling_matmuls(g, rules);
  ir::verify(g);
  const std::vector<ir::Datum> got = run(g, feeds);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(g.outputs()[i]->name(), names[i]);
    EXPECT_EQ(testing::compare_tensors(got[i].tensor, want[i].tensor, 1e-5, 1e-5), "") << i;
  }
  return groups;
}

const PackRules kFloat32{{DType::Float32}};

TEST(MatMulPack, SiblingsOfOneInputBecomeOneProductAndASplit) {
  ir::Graph g("siblings");
  std::vector<runtime::FusionGroup> groups =
      pack_and_compare(g, {{8, true, true}, {16, true, true}, {24, true, true}}, kFloat32);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].members, (std::vector<std::string>{"mm0", "mm1", "mm2"}));
  EXPECT_EQ(count_op(g, "MatMul"), 1u);
  const ir::Node* packed = g.find_node("mm0");
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed->input(1)->constant().shape(), (std::vector<int64_t>{16, 48}));
  EXPECT_EQ(packed->input(2)->constant().shape(), (std::vector<int64_t>{48}));
  const fusion::Epilogue* e = packed->annotation<fusion::Epilogue>();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->activation, fusion::Activation::Relu);
  const ir::Node* split = g.find_node("mm0/split");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->input(0), packed->output(0));
  EXPECT_EQ(split->input(1)->constant().to_int_vector(), (std::vector<int64_t>{8, 16, 24}));
  EXPECT_EQ(split->output(1)->name(), "p1");
}

TEST(MatMulPack, AtMostFourPerPackAndWithinTheWeightBound) {
  {
    ir::Graph g("five");
    std::vector<runtime::FusionGroup> groups =
        pack_and_compare(g, std::vector<Product>(5, Product{}), kFloat32);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].members, (std::vector<std::string>{"mm0", "mm1", "mm2", "mm3"}));
    EXPECT_EQ(count_op(g, "MatMul"), 2u);
    EXPECT_EQ(g.find_node("mm4")->input(1)->name(), "w4");
  }
  {
    // Each weight is 16 x 8 floats (512 bytes): two fit under 1100 bytes, three do not.
    PackRules rules = kFloat32;
    rules.max_packed_bytes = 1100;
    ir::Graph g("bounded");
    std::vector<runtime::FusionGroup> groups =
        pack_and_compare(g, std::vector<Product>(4, Product{}), rules);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].members, (std::vector<std::string>{"mm0", "mm1"}));
    EXPECT_EQ(groups[1].members, (std::vector<std::string>{"mm2", "mm3"}));
  }
}

TEST(MatMulPack, SiblingsThatDifferStayApart) {
  struct Case {
    std::string what;
    std::vector<Product> products;
    std::vector<std::string> packed;  // the one pack expected, or none
  };
  Product plain, input, relu, no_bias;
  input.weight_input = true;
  relu.relu = true;
  no_bias.bias = false;
  for (const Case& c : std::vector<Case>{
           {"a weight that is no constant", {plain, input, plain}, {"mm0", "mm2"}},
           {"another epilogue", {relu, plain}, {}},
           {"one without the bias", {plain, no_bias}, {}},
           {"two of three with the same epilogue", {relu, plain, relu}, {"mm0", "mm2"}}}) {
    SCOPED_TRACE(c.what);
    ir::Graph g("apart");
    std::vector<runtime::FusionGroup> groups = pack_and_compare(g, c.products, kFloat32);
    if (c.packed.empty()) {
      EXPECT_TRUE(groups.empty());
      EXPECT_EQ(count_op(g, "Split"), 0u);
    } else {
      ASSERT_EQ(groups.size(), 1u);
      EXPECT_EQ(groups[0].members, c.packed);
    }
  }
  {
    SCOPED_TRACE("a dtype outside the rules");
    ir::Graph g("f32");
    std::vector<runtime::FusionGroup> groups =
        pack_and_compare(g, {plain, plain}, PackRules{{DType::Float16}});
    EXPECT_TRUE(groups.empty());
  }
}

TEST(MatMulPack, ResultsWithOtherReadersKeepThem) {
  ir::Graph g("shared");
  std::vector<runtime::FusionGroup> groups =
      pack_and_compare(g, {Product{}, Product{}}, kFloat32, /*extra=*/true);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(g.find_node("neg")->input(0), g.find_node("mm0/split")->output(1));
}

TEST(MatMulPack, AttentionOnlyPacksNothingElse) {
  PackRules rules = kFloat32;
  rules.attention_operands_only = true;
  ir::Graph g("mlp");
  std::vector<runtime::FusionGroup> groups =
      pack_and_compare(g, {Product{}, Product{}, Product{}}, rules);
  EXPECT_TRUE(groups.empty());
  EXPECT_EQ(count_op(g, "MatMul"), 3u);
}

}  // namespace
}  // namespace switchyard::backends
