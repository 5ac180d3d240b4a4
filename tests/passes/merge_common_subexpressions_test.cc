// merge_common_subexpressions: equal constants and repeated computations become one; the merged
// executable gives the same bits as the unmerged one; what must stay apart stays apart (random
// ops, different attributes or inputs, graph outputs, bodies).
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "compiler/compiler.h"
#include "ops/shape_inference.h"
#include "passes/passes.h"
#include "support/op_test_util.h"

namespace switchyard::passes {
namespace {

using testing::int64_tensor;
using testing::random_tensor;
using testing::tensor_of;

constexpr ir::DType kF32 = ir::DType::Float32;

size_t count_op(const ir::Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type() == op;
  return n;
}

// Two "layers" that each measure the input, slice the same mask out of their own copy of one
// constant, negate it and select with it, as exported transformers do per layer.
std::unique_ptr<ir::Graph> layered(bool distinct_masks) {
  auto g = std::make_unique<ir::Graph>("layers");
  ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("n"), 8}));
  ir::Value* h = x;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "l" + std::to_string(layer) + "_";
    ir::Tensor mask_data = random_tensor(ir::DType::Bool, {16, 8}, distinct_masks ? 7 + layer : 7);
    ir::Value* mask = g->add_constant(p + "mask", mask_data);
    ir::Value* shape = g->add_node("Shape", p + "shape", {x}, {p + "s"})->output(0);
    ir::Value* zero = g->add_constant(p + "zero", int64_tensor({0}));
    ir::Value* one = g->add_constant(p + "one", int64_tensor({1}));
    ir::Value* rows =
        g->add_node("Slice", p + "rows", {shape, zero, one}, {p + "rows_out"})->output(0);
    ir::Value* sliced =
        g->add_node("Slice", p + "slice", {mask, zero, rows, zero}, {p + "m"})->output(0);
    ir::Value* keep = g->add_node("Not", p + "not", {sliced}, {p + "keep"})->output(0);
    ir::Value* fill = g->add_constant(p + "fill", tensor_of(kF32, {}, {-1.5}));
    h = g->add_node("Where", p + "where", {keep, h, fill}, {p + "h"})->output(0);
    h = g->add_node("Relu", p + "relu", {h}, {p + "y"})->output(0);
  }
  g->add_output(h);
  return g;
}

std::vector<ir::Datum> run(std::unique_ptr<ir::Graph> g, bool optimize, const ir::Tensor& x) {
  compiler::CompileOptions options;
  options.optimize = optimize;
  auto exe = compiler::compile(std::move(g), {std::make_shared<cpu::CpuBackend>()}, options);
  return exe->run(std::vector<ir::Datum>{ir::Datum(x)});
}

void expect_same_results(const std::function<std::unique_ptr<ir::Graph>()>& make) {
  for (int64_t n : {1, 5, 16}) {
    ir::Tensor x = random_tensor(kF32, {n, 8}, 30 + static_cast<uint64_t>(n), -2, 2);
    std::vector<ir::Datum> merged = run(make(), true, x), plain = run(make(), false, x);
    ASSERT_EQ(merged.size(), plain.size());
    for (size_t i = 0; i < merged.size(); ++i)
      testing::expect_same(merged[i].tensor, plain[i].tensor);
  }
}

TEST(MergeCommonSubexpressions, RepeatedMaskComputationsBecomeOne) {
  auto g = layered(false);
  ops::infer_types(*g);
  const size_t merged = merge_common_subexpressions(*g);
  PassContext ctx;
  remove_dead_nodes(*g, ctx);
  // Layer 1's mask, zero, one and fill are layer 0's; so are its Shape, both Slices and Not.
  EXPECT_EQ(merged, 4u + 4u);
  EXPECT_EQ(count_op(*g, "Shape"), 1u);
  EXPECT_EQ(count_op(*g, "Slice"), 2u);
  EXPECT_EQ(count_op(*g, "Not"), 1u);
  EXPECT_EQ(count_op(*g, "Where"), 2u);
  EXPECT_EQ(count_op(*g, "Relu"), 2u);
  expect_same_results([] { return layered(false); });
}

TEST(MergeCommonSubexpressions, DifferentConstantsStayApart) {
  auto g = layered(true);
  ops::infer_types(*g);
  merge_common_subexpressions(*g);
  PassContext ctx;
  remove_dead_nodes(*g, ctx);
  EXPECT_EQ(count_op(*g, "Not"), 2u) << "masks of different contents were merged";
  expect_same_results([] { return layered(true); });
}

TEST(MergeCommonSubexpressions, AttributesInputsOutputsAndRandomOpsKeepNodesApart) {
  auto make = [] {
    auto g = std::make_unique<ir::Graph>("apart");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("n"), 8}));
    ir::Value* y = g->add_input("Y", ir::Type::tensor(kF32, ir::Shape{ir::Dim("n"), 8}));
    // Same op and inputs, different attribute: two nodes.
    ir::Node* s0 = g->add_node("Softmax", "soft0", {x}, {"s0"});
    s0->set_attribute(ir::Attribute::make_int("axis", 0));
    ir::Node* s1 = g->add_node("Softmax", "soft1", {x}, {"s1"});
    s1->set_attribute(ir::Attribute::make_int("axis", 1));
    // Same attribute, the same in another order of inputs: two Subs.
    ir::Value* d0 = g->add_node("Sub", "sub0", {x, y}, {"d0"})->output(0);
    ir::Value* d1 = g->add_node("Sub", "sub1", {y, x}, {"d1"})->output(0);
    // Equal computations that are both graph outputs keep their names.
    ir::Value* e0 = g->add_node("Exp", "exp0", {x}, {"e0"})->output(0);
    ir::Value* e1 = g->add_node("Exp", "exp1", {x}, {"e1"})->output(0);
    // Dropout (random in training mode) is never merged.
    ir::Value* r0 = g->add_node("Dropout", "drop0", {x}, {"r0"})->output(0);
    ir::Value* r1 = g->add_node("Dropout", "drop1", {x}, {"r1"})->output(0);
    ir::Value* rz = g->add_node("Sub", "rdiff", {r0, r1}, {"rz"})->output(0);
    ir::Value* sum = g->add_node("Add", "sum0", {s0->output(0), s1->output(0)}, {"sum"})->output(0);
    ir::Value* diff = g->add_node("Add", "sum1", {d0, d1}, {"diff"})->output(0);
    g->add_output(sum);
    g->add_output(diff);
    g->add_output(e0);
    g->add_output(e1);
    g->add_output(rz);
    return g;
  };
  auto g = make();
  ops::infer_types(*g);
  merge_common_subexpressions(*g);
  PassContext ctx;
  remove_dead_nodes(*g, ctx);
  EXPECT_EQ(count_op(*g, "Softmax"), 2u);
  EXPECT_EQ(count_op(*g, "Sub"), 3u);  // sub0, sub1 and rdiff
  EXPECT_EQ(count_op(*g, "Exp"), 2u);
  EXPECT_EQ(count_op(*g, "Dropout"), 2u);
  ASSERT_EQ(g->outputs().size(), 5u);
  EXPECT_EQ(g->outputs()[2]->name(), "e0");
  EXPECT_EQ(g->outputs()[3]->name(), "e1");
}

TEST(MergeCommonSubexpressions, AReadOfTheDuplicateBecomesAReadOfTheFirst) {
  // Exp(x) twice, each read by its own Mul: one Exp remains, both Muls read it, and the
  // outputs are those of the unmerged graph.
  auto make = [] {
    auto g = std::make_unique<ir::Graph>("reads");
    ir::Value* x = g->add_input("X", ir::Type::tensor(kF32, ir::Shape{ir::Dim("n"), 8}));
    ir::Value* e0 = g->add_node("Exp", "exp0", {x}, {"e0"})->output(0);
    ir::Value* e1 = g->add_node("Exp", "exp1", {x}, {"e1"})->output(0);
    ir::Value* two = g->add_constant("two", tensor_of(kF32, {}, {2}));
    ir::Value* two_again = g->add_constant("two_again", tensor_of(kF32, {}, {2}));
    ir::Value* a = g->add_node("Mul", "mul0", {e0, two}, {"a"})->output(0);
    ir::Value* b = g->add_node("Mul", "mul1", {e1, two_again}, {"b"})->output(0);
    g->add_output(g->add_node("Sub", "out", {a, b}, {"y"})->output(0));
    return g;
  };
  auto g = make();
  ops::infer_types(*g);
  EXPECT_EQ(merge_common_subexpressions(*g), 3u);  // the constant, the Exp, then the Mul
  PassContext ctx;
  remove_dead_nodes(*g, ctx);
  EXPECT_EQ(count_op(*g, "Exp"), 1u);
  EXPECT_EQ(count_op(*g, "Mul"), 1u);
  expect_same_results(make);
}

}  // namespace
}  // namespace switchyard::passes
