// Symbolic type inference of the sequence and optional ops, and the type algebra they share
// with control flow (unite_types, merge_declared_type).
#include <gtest/gtest.h>

#include "ir/check.h"
#include "ops/schema.h"
#include "ops/sequence_types.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

Type f32(Shape s) { return Type::tensor(DType::Float32, std::move(s)); }

class Builder {
 public:
  ir::Value* input(const std::string& name, Type t) { return g_.add_input(name, std::move(t)); }
  ir::Value* constant(const std::string& name, ir::Tensor t) {
    return g_.add_constant(name, std::move(t));
  }
  ir::Value* op(const std::string& op, std::vector<ir::Value*> inputs,
                std::vector<ir::Attribute> attrs = {}) {
    std::string name = op + std::to_string(g_.nodes().size());
    ir::Node* n = g_.add_node(op, name, inputs, {name + "_out"});
    for (auto& a : attrs) n->set_attribute(std::move(a));
    return n->output(0);
  }
  void infer() { ops::infer_types(g_); }

 private:
  ir::Graph g_{"test"};
};

TEST(SequenceTypes, UniteAndMerge) {
  auto u = ops::unite_types(f32({Dim("N"), 3}), f32({Dim("N"), 4}));
  ASSERT_TRUE(u);
  EXPECT_EQ(u->to_string(), "float[N,?]");
  EXPECT_EQ(ops::unite_types(f32({2}), f32({2, 2}))->to_string(), "float[...]");
  EXPECT_FALSE(ops::unite_types(f32({2}), Type::tensor(DType::Int32, Shape{2})));
  EXPECT_EQ(ops::unite_types(Type::optional(f32({2})), f32({3}))->to_string(),
            "optional(float[?])");
  EXPECT_FALSE(ops::unite_types(Type::sequence(f32({2})), f32({2})));
  EXPECT_TRUE(ops::unite_types(Type{}, f32({2}))->is_unknown());

  EXPECT_EQ(
      ops::merge_declared_type(f32({Dim(), Dim("B"), 3}), f32({5, Dim("N"), Dim()}))->to_string(),
      "float[5,B,3]");
  EXPECT_EQ(ops::merge_declared_type(f32({2}), f32({3}))->to_string(), "float[?]");
  EXPECT_EQ(ops::merge_declared_type(Type::sequence(f32({2})),
                                     Type::optional(Type::sequence(f32({Dim("N")}))))
                ->to_string(),
            "optional(seq(float[2]))");
  EXPECT_FALSE(ops::merge_declared_type(f32({2}), Type::sequence(f32({2}))));
}

TEST(SequenceInference, ConstructInsertAtErase) {
  Builder b;
  ir::Value* x = b.input("x", f32({Dim("B"), 3}));
  ir::Value* y = b.input("y", f32({Dim("B"), 4}));
  ir::Value* pos = b.input("pos", Type::tensor(DType::Int32, Shape{}));
  ir::Value* seq = b.op("SequenceConstruct", {x, x});
  ir::Value* wider = b.op("SequenceInsert", {seq, y, pos});
  ir::Value* at = b.op("SequenceAt", {wider, pos});
  ir::Value* erased = b.op("SequenceErase", {wider});
  ir::Value* len = b.op("SequenceLength", {erased});
  b.infer();
  EXPECT_EQ(seq->type().to_string(), "seq(float[B,3])");
  EXPECT_EQ(wider->type().to_string(), "seq(float[B,?])");
  EXPECT_EQ(at->type().to_string(), "float[B,?]");
  EXPECT_EQ(erased->type().to_string(), "seq(float[B,?])");
  EXPECT_EQ(len->type().to_string(), "int64[]");
}

TEST(SequenceInference, SplitToSequenceShapes) {
  Builder b;
  ir::Value* x = b.input("x", f32({Dim("B"), 6}));
  ir::Value* by2 = b.op("SplitToSequence", {x, b.constant("two", int64_scalar(2))},
                        {ir::Attribute::make_int("axis", -1)});
  ir::Value* by4 = b.op("SplitToSequence", {x, b.constant("four", int64_scalar(4))},
                        {ir::Attribute::make_int("axis", 1)});
  ir::Tensor sizes(DType::Int64, {2});
  sizes.data<int64_t>()[0] = 3;
  sizes.data<int64_t>()[1] = 3;
  ir::Value* halves = b.op("SplitToSequence", {x, b.constant("sizes", sizes)},
                           {ir::Attribute::make_int("axis", 1)});
  ir::Value* rows = b.op("SplitToSequence", {x}, {ir::Attribute::make_int("keepdims", 0)});
  ir::Value* kept = b.op("SplitToSequence", {x}, {ir::Attribute::make_int("axis", 1)});
  ir::Value* dynamic =
      b.op("SplitToSequence", {x, b.input("n", Type::tensor(DType::Int64, Shape{}))},
           {ir::Attribute::make_int("axis", 0)});
  b.infer();
  EXPECT_EQ(by2->type().to_string(), "seq(float[B,2])");
  EXPECT_EQ(by4->type().to_string(), "seq(float[B,?])");
  EXPECT_EQ(halves->type().to_string(), "seq(float[B,3])");
  EXPECT_EQ(rows->type().to_string(), "seq(float[6])");
  EXPECT_EQ(kept->type().to_string(), "seq(float[B,1])");
  EXPECT_EQ(dynamic->type().to_string(), "seq(float[?,6])");
}

TEST(SequenceInference, SplitToSequenceBadSplitNamesNode) {
  Builder b;
  ir::Value* x = b.input("x", f32({4, 6}));
  ir::Tensor sizes(DType::Int64, {2});
  sizes.data<int64_t>()[0] = 3;
  sizes.data<int64_t>()[1] = 2;
  b.op("SplitToSequence", {x, b.constant("sizes", sizes)}, {ir::Attribute::make_int("axis", 1)});
  try {
    b.infer();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidModel);
    EXPECT_NE(std::string(e.what()).find("[SplitToSequence] node 'SplitToSequence0'"),
              std::string::npos)
        << e.what();
  }
}

TEST(SequenceInference, ConcatFromSequence) {
  Builder b;
  ir::Value* s = b.input("s", Type::sequence(f32({Dim("B"), 3})));
  ir::Value* cat = b.op("ConcatFromSequence", {s}, {ir::Attribute::make_int("axis", 1)});
  ir::Value* stacked =
      b.op("ConcatFromSequence", {s},
           {ir::Attribute::make_int("axis", -1), ir::Attribute::make_int("new_axis", 1)});
  ir::Value* front =
      b.op("ConcatFromSequence", {s},
           {ir::Attribute::make_int("axis", 0), ir::Attribute::make_int("new_axis", 1)});
  b.infer();
  EXPECT_EQ(cat->type().to_string(), "float[B,?]");
  EXPECT_EQ(stacked->type().to_string(), "float[B,3,?]");
  EXPECT_EQ(front->type().to_string(), "float[?,B,3]");

  Builder bad;
  ir::Value* s2 = bad.input("s", Type::sequence(f32({Dim("B"), 3})));
  bad.op("ConcatFromSequence", {s2}, {ir::Attribute::make_int("axis", 2)});
  EXPECT_THROW(bad.infer(), Error);
}

TEST(SequenceInference, OptionalsAndEmpty) {
  Builder b;
  ir::Value* s = b.input("s", Type::sequence(f32({2})));
  ir::Value* opt = b.op("Optional", {s});
  ir::Value* has = b.op("OptionalHasElement", {opt});
  ir::Value* get = b.op("OptionalGetElement", {opt});
  ir::Value* get_plain = b.op("OptionalGetElement", {s});
  ir::Value* empty = b.op("SequenceEmpty", {}, {ir::Attribute::make_int("dtype", 10)});
  b.infer();
  EXPECT_EQ(opt->type().to_string(), "optional(seq(float[2]))");
  EXPECT_EQ(has->type().to_string(), "bool[]");
  EXPECT_EQ(get->type().to_string(), "seq(float[2])");
  EXPECT_EQ(get_plain->type().to_string(), "seq(float[2])");
  EXPECT_EQ(empty->type().to_string(), "seq(float16[...])");

  Builder no_type;
  no_type.op("Optional", {});
  EXPECT_THROW(no_type.infer(), Error);
  Builder bad_dtype;
  bad_dtype.op("SequenceEmpty", {}, {ir::Attribute::make_int("dtype", 14)});
  EXPECT_THROW(bad_dtype.infer(), Error);
}

TEST(SequenceInference, SequenceInputsMustBeSequences) {
  Builder b;
  ir::Value* x = b.input("x", f32({2}));
  b.op("SequenceAt", {x, b.input("p", Type::tensor(DType::Int64, Shape{}))});
  try {
    b.infer();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[SequenceAt] node 'SequenceAt0': input 0 'x' must be a "
                                         "sequence"),
              std::string::npos)
        << e.what();
  }
  Builder bad_pos;
  ir::Value* s = bad_pos.input("s", Type::sequence(f32({2})));
  bad_pos.op("SequenceAt", {s, bad_pos.input("p", Type::tensor(DType::Int64, Shape{2}))});
  EXPECT_THROW(bad_pos.infer(), Error);
}

}  // namespace
}  // namespace switchyard::testing
