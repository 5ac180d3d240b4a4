// Sequence and optional kernels against plain references on seeded random tensors: graphs built
// by hand (inputs may be sequences or optionals), run through the real pipeline.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

// Sequence inputs are typed as sequences of tensors of unknown shape; nodes are named after
// their op.
class GraphCase : public testing::GraphCase {
 public:
  GraphCase() : testing::GraphCase("test") {}
  ir::Value* sequence(const std::string& name, DType dtype, std::vector<ir::Tensor> items) {
    return input(name, ir::Type::sequence(ir::Type::tensor(dtype)),
                 ir::Datum::make_sequence(dtype, std::move(items)));
  }
  ir::Node* node(const std::string& op, std::vector<ir::Value*> inputs,
                 std::vector<ir::Attribute> attrs = {}, int num_outputs = 1) {
    std::vector<std::string> outs;
    std::string name = op + "_" + std::to_string(graph().nodes().size());
    for (int i = 0; i < num_outputs; ++i) outs.push_back(name + "_out" + std::to_string(i));
    ir::Node* n = graph().add_node(op, name, inputs, outs);
    for (auto& a : attrs) n->set_attribute(std::move(a));
    return n;
  }
  ir::Value* op(const std::string& op, std::vector<ir::Value*> inputs,
                std::vector<ir::Attribute> attrs = {}) {
    return node(op, std::move(inputs), std::move(attrs))->output(0);
  }
};

ir::Tensor seeded_strings(std::vector<int64_t> shape, uint64_t seed) {
  ir::Tensor t(DType::String, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<std::string>()[i] = "s" + std::to_string(seed * 1000 + static_cast<uint64_t>(i));
  return t;
}

ir::Tensor make_random(DType dtype, std::vector<int64_t> shape, uint64_t seed) {
  if (dtype == DType::String) return seeded_strings(std::move(shape), seed);
  return random_tensor(dtype, std::move(shape), seed, -5, 5);
}

// Reference: elements [start, start+len) of `axis`, as a fresh tensor.
ir::Tensor ref_slice(const ir::Tensor& x, size_t axis, int64_t start, int64_t len, bool keep) {
  std::vector<int64_t> shape = x.shape();
  shape[axis] = len;
  ir::Tensor out(x.dtype(), shape);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < axis; ++i) outer *= x.dim(static_cast<int64_t>(i));
  for (size_t i = axis + 1; i < x.shape().size(); ++i) inner *= x.dim(static_cast<int64_t>(i));
  int64_t dim = x.dim(static_cast<int64_t>(axis));
  size_t es = ir::dtype_size(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < len; ++k)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t src = (o * dim + start + k) * inner + i;
        int64_t dst = (o * len + k) * inner + i;
        if (x.dtype() == DType::String)
          out.data<std::string>()[dst] = x.data<std::string>()[src];
        else
          std::memcpy(static_cast<char*>(out.raw()) + dst * es,
                      static_cast<const char*>(x.raw()) + src * es, es);
      }
  if (!keep) {
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
    return out.reshaped(shape);
  }
  return out;
}

class SequenceDtypes : public ::testing::TestWithParam<DType> {};

TEST_P(SequenceDtypes, ConstructAtInsertEraseLength) {
  DType dt = GetParam();
  std::vector<ir::Tensor> items = {make_random(dt, {2, 3}, 1), make_random(dt, {4}, 2),
                                   make_random(dt, {}, 3)};
  ir::Tensor extra = make_random(dt, {1, 5}, 4);
  GraphCase c;
  ir::Value* a = c.tensor("a", items[0]);
  ir::Value* b = c.tensor("b", items[1]);
  ir::Value* s = c.tensor("s", items[2]);
  ir::Value* x = c.tensor("x", extra);
  ir::Value* seq = c.op("SequenceConstruct", {a, b, s});
  ir::Value* at_neg = c.op("SequenceAt", {seq, c.tensor("p_neg", int64_scalar(-2))});
  ir::Tensor p1(DType::Int32, {1});
  p1.data<int32_t>()[0] = 1;
  ir::Value* inserted = c.op("SequenceInsert", {seq, x, c.tensor("p1", p1)});
  ir::Value* appended = c.op("SequenceInsert", {seq, x});
  ir::Value* erased_last = c.op("SequenceErase", {seq});
  ir::Value* erased_first = c.op("SequenceErase", {seq, c.tensor("p_first", int64_scalar(-3))});
  ir::Value* length = c.op("SequenceLength", {inserted});
  auto out = c.run({seq, at_neg, inserted, appended, erased_last, erased_first, length});
  expect_sequence(out[0], items);
  EXPECT_EQ(out[0].sequence_dtype, dt);
  ASSERT_TRUE(out[1].is_tensor());
  expect_same(out[1].tensor, items[1]);
  expect_sequence(out[2], {items[0], extra, items[1], items[2]});
  expect_sequence(out[3], {items[0], items[1], items[2], extra});
  expect_sequence(out[4], {items[0], items[1]});
  expect_sequence(out[5], {items[1], items[2]});
  ASSERT_TRUE(out[6].is_tensor());
  EXPECT_EQ(out[6].tensor.shape(), std::vector<int64_t>{});
  EXPECT_EQ(out[6].tensor.data<int64_t>()[0], 4);
}

TEST_P(SequenceDtypes, SplitThenConcatRoundTrips) {
  DType dt = GetParam();
  ir::Tensor x = make_random(dt, {3, 5, 2}, 11);
  for (int64_t axis : {0, 1, -1}) {
    SCOPED_TRACE(axis);
    size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
    GraphCase c;
    ir::Value* in = c.tensor("x", x);
    ir::Value* seq = c.op("SplitToSequence", {in}, {ir::Attribute::make_int("axis", axis)});
    ir::Value* back = c.op("ConcatFromSequence", {seq}, {ir::Attribute::make_int("axis", axis)});
    ir::Value* squeezed =
        c.op("SplitToSequence", {in},
             {ir::Attribute::make_int("axis", axis), ir::Attribute::make_int("keepdims", 0)});
    ir::Value* stacked =
        c.op("ConcatFromSequence", {squeezed},
             {ir::Attribute::make_int("axis", axis), ir::Attribute::make_int("new_axis", 1)});
    auto out = c.run({seq, back, squeezed, stacked});
    std::vector<ir::Tensor> rows, flat;
    for (int64_t k = 0; k < x.dim(static_cast<int64_t>(a)); ++k) {
      rows.push_back(ref_slice(x, a, k, 1, true));
      flat.push_back(ref_slice(x, a, k, 1, false));
    }
    expect_sequence(out[0], rows);
    expect_same(out[1].tensor, x);
    expect_sequence(out[2], flat);
    expect_same(out[3].tensor, x);
  }
}

TEST_P(SequenceDtypes, SplitSizes) {
  DType dt = GetParam();
  ir::Tensor x = make_random(dt, {4, 7}, 21);
  GraphCase c;
  ir::Value* in = c.tensor("x", x);
  ir::Tensor chunk(DType::Int32, {});
  chunk.data<int32_t>()[0] = 3;
  ir::Value* by_chunk =
      c.op("SplitToSequence", {in, c.tensor("chunk", chunk)}, {ir::Attribute::make_int("axis", 1)});
  ir::Value* by_sizes = c.op("SplitToSequence", {in, c.tensor("sizes", int64_tensor({1, 0, 3}))},
                             {ir::Attribute::make_int("axis", -2)});
  ir::Value* concat = c.op("ConcatFromSequence", {by_chunk}, {ir::Attribute::make_int("axis", 1)});
  auto out = c.run({by_chunk, by_sizes, concat});
  expect_sequence(out[0], {ref_slice(x, 1, 0, 3, true), ref_slice(x, 1, 3, 3, true),
                           ref_slice(x, 1, 6, 1, true)});
  expect_sequence(out[1], {ref_slice(x, 0, 0, 1, true), ref_slice(x, 0, 1, 0, true),
                           ref_slice(x, 0, 1, 3, true)});
  expect_same(out[2].tensor, x);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SequenceDtypes,
                         ::testing::Values(DType::Float32, DType::Float16, DType::Int32,
                                           DType::Int64, DType::Bool, DType::String),
                         [](const auto& info) { return std::string(ir::dtype_name(info.param)); });

TEST(ConcatFromSequence, ConcatenatesDifferentLengths) {
  std::vector<ir::Tensor> items = {random_tensor(DType::Float32, {2, 1, 3}, 31),
                                   random_tensor(DType::Float32, {2, 4, 3}, 32),
                                   random_tensor(DType::Float32, {2, 0, 3}, 33)};
  GraphCase c;
  ir::Value* seq = c.sequence("seq", DType::Float32, items);
  ir::Value* out = c.op("ConcatFromSequence", {seq}, {ir::Attribute::make_int("axis", 1)});
  ir::Tensor got = c.run1(out).tensor;
  ASSERT_EQ(got.shape(), (std::vector<int64_t>{2, 5, 3}));
  // Reference: row j of the output along axis 1 comes from the element holding it.
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t i = 0; i < 3; ++i) {
        const ir::Tensor& src = j == 0 ? items[0] : items[1];
        int64_t row = j == 0 ? 0 : j - 1;
        int64_t len = src.dim(1);
        EXPECT_EQ(got.data<float>()[(o * 5 + j) * 3 + i],
                  src.data<float>()[(o * len + row) * 3 + i]);
      }
}

TEST(ConcatFromSequence, StacksAtLastAxis) {
  std::vector<ir::Tensor> items = {random_tensor(DType::BFloat16, {2, 3}, 41),
                                   random_tensor(DType::BFloat16, {2, 3}, 42)};
  GraphCase c;
  ir::Value* seq = c.sequence("seq", DType::BFloat16, items);
  ir::Value* out =
      c.op("ConcatFromSequence", {seq},
           {ir::Attribute::make_int("axis", -1), ir::Attribute::make_int("new_axis", 1)});
  ir::Tensor got = c.run1(out).tensor;
  ASSERT_EQ(got.shape(), (std::vector<int64_t>{2, 3, 2}));
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t k = 0; k < 2; ++k)
      EXPECT_EQ(got.data<ir::BFloat16>()[i * 2 + k].bits, items[k].data<ir::BFloat16>()[i].bits);
}

TEST(SequenceEmpty, HasDtypeAndTakesInserts) {
  GraphCase c;
  ir::Value* empty = c.op("SequenceEmpty", {}, {ir::Attribute::make_int("dtype", 7)});
  ir::Tensor x = random_tensor(DType::Int64, {3}, 51, -100, 100);
  ir::Value* one = c.op("SequenceInsert", {empty, c.tensor("x", x)});
  ir::Value* len0 = c.op("SequenceLength", {empty});
  auto out = c.run({empty, one, len0});
  ASSERT_TRUE(out[0].is_sequence());
  EXPECT_TRUE(out[0].sequence.empty());
  EXPECT_EQ(out[0].sequence_dtype, DType::Int64);
  expect_sequence(out[1], {x});
  EXPECT_EQ(out[2].tensor.data<int64_t>()[0], 0);
  EXPECT_EQ(c.graph().find_value(empty->name())->type().to_string(), "seq(int64[...])");
}

TEST(Optional, WrapsTestsAndUnwraps) {
  ir::Tensor x = random_tensor(DType::Float32, {2, 2}, 61);
  GraphCase c;
  ir::Value* in = c.tensor("x", x);
  ir::Value* some = c.op("Optional", {in});
  ir::Attribute type_attr;
  type_attr.name = "type";
  type_attr.kind = ir::Attribute::Kind::TypeProto;
  type_attr.tp = ir::Type::sequence(ir::Type::tensor(DType::Float32, ir::make_shape({5})));
  ir::Value* none = c.op("Optional", {}, {type_attr});
  ir::Value* has_some = c.op("OptionalHasElement", {some});
  ir::Value* has_none = c.op("OptionalHasElement", {none});
  ir::Value* has_plain = c.op("OptionalHasElement", {in});
  ir::Value* has_absent = c.op("OptionalHasElement", {});
  ir::Value* got = c.op("OptionalGetElement", {some});
  ir::Value* got_plain = c.op("OptionalGetElement", {c.op("SequenceConstruct", {in, in})});
  auto out = c.run({some, none, has_some, has_none, has_plain, has_absent, got, got_plain});
  ASSERT_TRUE(out[0].is_tensor());
  expect_same(out[0].tensor, x);
  EXPECT_TRUE(out[1].is_empty());
  EXPECT_TRUE(out[2].tensor.data<bool>()[0]);
  EXPECT_FALSE(out[3].tensor.data<bool>()[0]);
  EXPECT_TRUE(out[4].tensor.data<bool>()[0]);
  EXPECT_FALSE(out[5].tensor.data<bool>()[0]);
  expect_same(out[6].tensor, x);
  expect_sequence(out[7], {x, x});
  EXPECT_EQ(some->type().to_string(), "optional(float[2,2])");
  EXPECT_EQ(none->type().to_string(), "optional(seq(float[5]))");
  EXPECT_EQ(has_some->type().to_string(), "bool[]");
  EXPECT_EQ(got->type().to_string(), "float[2,2]");
}

TEST(OptionalGetElement, EmptyOptionalFailsNamingNode) {
  GraphCase c;
  ir::Attribute type_attr;
  type_attr.name = "type";
  type_attr.kind = ir::Attribute::Kind::TypeProto;
  type_attr.tp = ir::Type::tensor(DType::Float32);
  ir::Value* none = c.op("Optional", {}, {type_attr});
  ir::Value* got = c.op("OptionalGetElement", {none});
  expect_error([&] { c.run1(got); }, ErrorCode::InvalidArgument,
               "[OptionalGetElement] node 'OptionalGetElement_1'");
}

TEST(SequenceErrors, PositionsOutOfRange) {
  ir::Tensor x = random_tensor(DType::Float32, {2}, 71);
  for (int64_t pos : {3, -4}) {
    GraphCase c;
    ir::Value* seq = c.sequence("seq", DType::Float32, {x, x, x});
    ir::Value* at = c.op("SequenceAt", {seq, c.tensor("p", int64_scalar(pos))});
    expect_error([&] { c.run1(at); }, ErrorCode::InvalidArgument,
                 "[SequenceAt] node 'SequenceAt_0': position " + std::to_string(pos));
  }
  {
    GraphCase c;
    ir::Value* seq = c.sequence("seq", DType::Float32, {x});
    ir::Value* ins =
        c.op("SequenceInsert", {seq, c.tensor("x", x), c.tensor("p", int64_scalar(2))});
    expect_error([&] { c.run1(ins); }, ErrorCode::InvalidArgument, "position 2 is out of range");
  }
  {
    GraphCase c;
    ir::Value* seq = c.sequence("seq", DType::Float32, {});
    ir::Value* erased = c.op("SequenceErase", {seq});
    expect_error([&] { c.run1(erased); }, ErrorCode::InvalidArgument, "empty sequence");
  }
}

TEST(SequenceErrors, DtypeAndShapeMismatches) {
  {
    GraphCase c;
    ir::Value* seq = c.sequence("seq", DType::Float32, {random_tensor(DType::Float32, {2}, 1)});
    ir::Value* ins =
        c.op("SequenceInsert", {seq, c.tensor("x", random_tensor(DType::Int32, {2}, 2))});
    expect_error([&] { c.run1(ins); }, ErrorCode::InvalidModel, "[SequenceInsert] node");
  }
  {
    GraphCase c;
    ir::Value* seq = c.sequence(
        "seq", DType::Float32,
        {random_tensor(DType::Float32, {2, 3}, 1), random_tensor(DType::Float32, {3, 3}, 2)});
    ir::Value* cat = c.op("ConcatFromSequence", {seq}, {ir::Attribute::make_int("axis", 1)});
    expect_error([&] { c.run1(cat); }, ErrorCode::InvalidArgument,
                 "[ConcatFromSequence] node 'ConcatFromSequence_0': element 1 has shape 3x3");
  }
  {
    GraphCase c;
    ir::Value* seq = c.sequence("seq", DType::Float32, {});
    ir::Value* cat = c.op("ConcatFromSequence", {seq}, {ir::Attribute::make_int("axis", 0)});
    expect_error([&] { c.run1(cat); }, ErrorCode::InvalidArgument, "empty sequence");
  }
  {
    GraphCase c;
    ir::Value* in = c.tensor("x", random_tensor(DType::Float32, {5}, 3));
    ir::Value* split = c.op("SplitToSequence", {in, c.tensor("s", int64_tensor({2, 2}))});
    expect_error([&] { c.run1(split); }, ErrorCode::InvalidArgument, "sum to 4");
  }
  {
    GraphCase c;
    ir::Value* a = c.tensor("a", random_tensor(DType::Float32, {2}, 4));
    ir::Value* b = c.tensor("b", random_tensor(DType::Int64, {2}, 5));
    ir::Value* seq = c.op("SequenceConstruct", {a, b});
    expect_error([&] { c.run1(seq); }, ErrorCode::InvalidModel,
                 "[SequenceConstruct] node 'SequenceConstruct_0'");
  }
  {
    GraphCase c;
    ir::Value* in = c.tensor("x", random_tensor(DType::Float32, {5}, 3));
    ir::Value* split = c.op("SplitToSequence", {in}, {ir::Attribute::make_int("axis", 1)});
    expect_error([&] { c.run1(split); }, ErrorCode::InvalidModel, "axis 1 is out of range");
  }
}

}  // namespace
}  // namespace switchyard::testing
