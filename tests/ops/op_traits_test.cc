// The op traits table (ops/op_traits.h) against the op list and the schemas: a wrong entry fails.
#include "ops/op_traits.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "ops/schema.h"
#include "support/infer_test_util.h"

namespace switchyard::testing {
namespace {

using ops::OpKind;

// Input dtypes to try, in order, until the op's inference accepts one.
const std::vector<DType> kDTypes = {DType::Float32, DType::Int32, DType::UInt8, DType::Bool};

std::string op_of(OpKind k) { return std::string(ops::op_name(k)); }

// A random shape of `rank` dims: a symbol first (when rank > 0), then static dims 1..6.
Shape random_shape(std::mt19937& rng, size_t rank) {
  std::uniform_int_distribution<int64_t> dim(1, 6);
  Shape s;
  for (size_t i = 0; i < rank; ++i) s.push_back(i == 0 ? sym("N") : Dim(dim(rng)));
  return s;
}

// `s` with each dim replaced by 1 at random, and (when `drop` is set) some leading dims dropped.
Shape broadcastable(std::mt19937& rng, const Shape& s, bool drop) {
  std::bernoulli_distribution coin(0.5);
  size_t first = 0;
  if (drop && !s.empty()) first = std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
  Shape out;
  for (size_t i = first; i < s.size(); ++i) out.push_back(coin(rng) ? Dim(1) : s[i]);
  return out;
}

// The output of `op` over inputs of `shapes`, the first dtype of kDTypes inference accepts for
// the data inputs (Where's condition is bool); nullopt when it accepts none.
std::optional<Type> infer_any_dtype(const std::string& op, const std::vector<Shape>& shapes,
                                    const std::vector<Attribute>& attrs = {}) {
  for (DType d : kDTypes) {
    std::vector<InferArg> args;
    for (size_t i = 0; i < shapes.size(); ++i)
      args.emplace_back(Type::tensor(op == "Where" && i == 0 ? DType::Bool : d, shapes[i]));
    try {
      return infer_type(op, args, attrs);
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

std::string with_shape(const Type& t, const Shape& s) {
  return Type::tensor(t.dtype, s).to_string();
}

TEST(OpTraits, EveryEntryIsAnOpWithASchema) {
  std::set<OpKind> seen;
  for (OpKind k : ops::kinds_with_traits()) {
    EXPECT_TRUE(seen.insert(k).second) << op_of(k) << " has two rows";
    EXPECT_TRUE(ops::traits(k).any()) << op_of(k) << " has a row without a trait";
    EXPECT_NE(ops::schemas().find(k), nullptr) << op_of(k) << " has traits but no schema";
    EXPECT_EQ(ops::find_op_kind(op_of(k), ops::op_domain(k)), k);
  }
  // Ops without a row have no trait.
  for (int i = 0; i < ops::kNumOpKinds; ++i)
    if (!seen.count(OpKind(i))) {
      EXPECT_FALSE(ops::traits(OpKind(i)).any()) << op_of(OpKind(i));
    }
}

TEST(OpTraits, LookupIsDomainAware) {
  EXPECT_TRUE(ops::traits("Mish").unary_elementwise);
  EXPECT_TRUE(ops::traits("HardSigmoid", "ai.onnx").unary_elementwise);
  EXPECT_TRUE(ops::traits("Add", "").broadcast_elementwise);
  EXPECT_TRUE(ops::traits("Shape").reads_only_shape);
  EXPECT_TRUE(ops::traits("MaxPool").spatial_pool);
  EXPECT_FALSE(ops::traits("Relu", "com.example").any());
  EXPECT_FALSE(ops::traits("NoSuchOp").any());
  EXPECT_FALSE(ops::traits("Conv").any());
  EXPECT_EQ(ops::traits("Depend", "ai.switchyard").first_ordering_input, 1);
  EXPECT_FALSE(ops::traits("Depend").any());  // not an op of the default domain
  ir::Graph g;
  ir::Node* custom = g.add_node("Relu", "custom", {}, {"y"}, "com.example");
  EXPECT_FALSE(ops::traits(*custom).any());
  ir::Node* onnx = g.add_node("Relu", "onnx", {}, {"z"});
  EXPECT_TRUE(ops::traits(*onnx).layout_free());
}

TEST(OpTraits, ElementwiseOpsAreOfTheElementwiseFamily) {
  for (OpKind k : ops::kinds_with_traits()) {
    const ops::OpTraits& t = ops::traits(k);
    EXPECT_FALSE(t.unary_elementwise && t.broadcast_elementwise) << op_of(k);
    // Identity is the one layout-free op outside the family: y = x.
    if (t.layout_free() && k != OpKind::Identity) {
      EXPECT_EQ(ops::op_family(k), "elementwise") << op_of(k);
    }
    if (t.spatial_pool) {
      EXPECT_EQ(ops::op_family(k), "pool") << op_of(k);
    }
    if (t.unary_elementwise && k != OpKind::Clip) {  // Clip's min and max are scalar parameters
      EXPECT_EQ(ops::schemas().find(k)->max_inputs, 1) << op_of(k);
    }
    if (t.broadcast_elementwise) {
      EXPECT_NE(ops::schemas().find(k)->max_inputs, 1) << op_of(k);
    }
  }
}

TEST(OpTraits, UnaryElementwiseKeepsShape) {
  std::mt19937 rng(14);
  for (OpKind k : ops::kinds_with_traits()) {
    if (!ops::traits(k).unary_elementwise) continue;
    for (size_t rank = 0; rank <= 5; ++rank) {
      Shape s = random_shape(rng, rank);
      auto y = infer_any_dtype(op_of(k), {s});
      ASSERT_TRUE(y.has_value()) << op_of(k) << " accepts none of the test dtypes";
      EXPECT_EQ(y->to_string(), with_shape(*y, s)) << op_of(k);
    }
  }
}

TEST(OpTraits, BroadcastElementwiseBroadcasts) {
  std::mt19937 rng(14);
  for (OpKind k : ops::kinds_with_traits()) {
    if (!ops::traits(k).broadcast_elementwise) continue;
    const ops::OpSchema* schema = ops::schemas().find(k);
    std::vector<Attribute> attrs;
    if (k == OpKind::BitShift) attrs.push_back(Attribute::make_string("direction", "LEFT"));
    const int arity =
        schema->max_inputs < 0 ? std::max(schema->min_inputs, 3) : std::max(schema->min_inputs, 2);
    for (size_t rank = 1; rank <= 4; ++rank) {
      const Shape s = random_shape(rng, rank);
      // Input 0 has the full shape; the others broadcast to it.
      std::vector<Shape> shapes = {s};
      for (int i = 1; i < arity; ++i) shapes.push_back(broadcastable(rng, s, true));
      auto y = infer_any_dtype(op_of(k), shapes, attrs);
      ASSERT_TRUE(y.has_value()) << op_of(k) << " accepts none of the test dtypes";
      EXPECT_EQ(y->to_string(), with_shape(*y, s)) << op_of(k);
      // Both ways (PRelu's slope broadcasts to X only): the last input has the full shape.
      if (k == OpKind::PRelu) continue;
      shapes.assign(static_cast<size_t>(arity), Shape{});
      for (int i = 0; i + 1 < arity; ++i)
        shapes[static_cast<size_t>(i)] = broadcastable(rng, s, false);
      shapes.back() = s;
      y = infer_any_dtype(op_of(k), shapes, attrs);
      ASSERT_TRUE(y.has_value()) << op_of(k);
      EXPECT_EQ(y->to_string(), with_shape(*y, s)) << op_of(k);
    }
  }
}

TEST(OpTraits, ReadsOnlyShapeGivesAStaticShapeValue) {
  std::mt19937 rng(14);
  for (OpKind k : ops::kinds_with_traits()) {
    if (!ops::traits(k).reads_only_shape) continue;
    // No data: static dims only, and the result is known from the type.
    Shape s;
    for (Dim d : random_shape(rng, 3)) s.push_back(d.is_static() ? d : Dim(5));
    Type y = infer_type(op_of(k), {Type::tensor(DType::Float32, s)});
    EXPECT_TRUE(ir::is_shape_like(y)) << op_of(k) << ": " << y.to_string();
    EXPECT_EQ(y.dtype, DType::Int64) << op_of(k);
  }
}

// An op with ordering inputs passes input 0 through: its output is typed as input 0 whatever the
// ordering inputs are, and the op reads no more than input 0 (its kernel aliases it).
TEST(OpTraits, OrderingInputsDoNotChangeTheResult) {
  for (OpKind k : ops::kinds_with_traits()) {
    const ops::OpTraits& t = ops::traits(k);
    if (t.first_ordering_input < 0) continue;
    EXPECT_EQ(t.first_ordering_input, 1) << op_of(k);
    EXPECT_FALSE(t.is_ordering_input(0)) << op_of(k);
    EXPECT_TRUE(t.is_ordering_input(1)) << op_of(k);
    ir::Graph g;
    ir::Value* x = g.add_input("x", Type::tensor(DType::Float32, Shape{sym("N"), 3}));
    ir::Value* a = g.add_input("a", Type::tensor(DType::Int64, Shape{7}));
    ir::Value* b = g.add_input("b", Type::tensor(DType::Bool, Shape{}));
    ir::Node* n = g.add_node(op_of(k), "n", {x, a, b}, {"y"}, std::string(ops::op_domain(k)));
    ops::infer_node(*n);
    EXPECT_EQ(n->output(0)->type().to_string(), "float[N,3]") << op_of(k);
  }
}

TEST(OpTraits, SpatialPoolsKeepBatchAndChannels) {
  for (OpKind k : ops::kinds_with_traits()) {
    if (!ops::traits(k).spatial_pool) continue;
    const std::string op = op_of(k);
    std::vector<Attribute> attrs;
    if (op.rfind("Global", 0) != 0) attrs.push_back(Attribute::make_ints("kernel_shape", {2, 2}));
    Type y = infer_type(op, {Type::tensor(DType::Float32, Shape{2, 3, 8, 8})}, attrs);
    EXPECT_EQ(y.to_string().substr(0, 10), "float[2,3,") << op;
    EXPECT_EQ(y.rank(), 4) << op;
  }
}

}  // namespace
}  // namespace switchyard::testing
