// Symbolic shape inference of the reduce family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "support/infer_test_util.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

// One node over graph inputs of the given types (Unknown = omitted), except `constants`
// (initializers, by input index).
InferredNode build(const std::string& op, const std::vector<Type>& inputs,
                   const std::vector<std::pair<size_t, ir::Tensor>>& constants,
                   const std::vector<Attribute>& attrs, int num_outputs = 1) {
  std::vector<InferArg> args(inputs.begin(), inputs.end());
  for (const auto& [i, t] : constants) {
    if (args.size() <= i) args.resize(i + 1, nullptr);
    args[i] = t;
  }
  return infer_node(op, args, attrs, num_outputs);
}

Type f32(ir::Shape s) { return Type::tensor(DType::Float32, std::move(s)); }
std::string out_type(const InferredNode& b, size_t i = 0) { return b.out(i); }

TEST(ReduceSchemas, ConstantAxesKeepSymbols) {
  Type x = f32({Dim("batch"), Dim("seq"), 768});
  EXPECT_EQ(out_type(build("ReduceMean", {x}, {{1, int64_tensor({-1})}}, {})),
            "float[batch,seq,1]");
  EXPECT_EQ(out_type(build("ReduceSum", {x}, {{1, int64_tensor({0, 2})}},
                           {Attribute::make_int("keepdims", 0)})),
            "float[seq]");
  EXPECT_EQ(out_type(build("ReduceMax", {x}, {}, {Attribute::make_int("keepdims", 0)})), "float[]");
  EXPECT_EQ(out_type(build("ReduceL2", {x}, {}, {})), "float[1,1,1]");
  EXPECT_EQ(out_type(build("ReduceProd", {x}, {{1, int64_tensor({})}},
                           {Attribute::make_int("noop_with_empty_axes", 1)})),
            "float[batch,seq,768]");
  EXPECT_EQ(out_type(build("ReduceMin", {Type::tensor(DType::Bool, ir::Shape{4, 2})},
                           {{1, int64_tensor({1})}}, {})),
            "bool[4,1]");
}

TEST(ReduceSchemas, RuntimeAxes) {
  Type x = f32({Dim("batch"), 1, 5});
  Type axes = Type::tensor(DType::Int64, ir::Shape{2});
  EXPECT_EQ(out_type(build("ReduceSum", {x, axes}, {}, {})), "float[?,1,?]");
  EXPECT_EQ(out_type(build("ReduceSum", {x, axes}, {}, {Attribute::make_int("keepdims", 0)})),
            "float[?]");
  Type any_axes = Type::tensor(DType::Int64, ir::Shape{Dim("k")});
  EXPECT_EQ(out_type(build("ReduceSum", {x, any_axes}, {}, {Attribute::make_int("keepdims", 0)})),
            "float[...]");
}

TEST(ReduceSchemas, Errors) {
  Type x = f32({2, 3});
  EXPECT_THROW(build("ReduceSum", {x}, {{1, int64_tensor({2})}}, {}), Error);
  EXPECT_THROW(build("ReduceSum", {x}, {{1, int64_tensor({0, -2})}}, {}), Error);
  EXPECT_THROW(build("ReduceSum", {x}, {}, {Attribute::make_int("keepdims", 3)}), Error);
  EXPECT_THROW(build("ReduceSum", {Type::tensor(DType::Bool, ir::Shape{2})}, {}, {}), Error);
  EXPECT_THROW(build("ReduceSum", {x, Type::tensor(DType::Int32, ir::Shape{1})}, {}, {}), Error);
  try {
    build("ReduceMean", {x}, {{1, int64_tensor({5})}}, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
}

TEST(ReduceSchemas, ArgMaxAndCumSum) {
  Type x = f32({Dim("n"), 7, 3});
  EXPECT_EQ(out_type(build("ArgMax", {x}, {}, {Attribute::make_int("axis", 1)})), "int64[n,1,3]");
  EXPECT_EQ(out_type(build("ArgMin", {x}, {},
                           {Attribute::make_int("axis", -1), Attribute::make_int("keepdims", 0)})),
            "int64[n,7]");
  EXPECT_THROW(build("ArgMax", {x}, {}, {Attribute::make_int("axis", 3)}), Error);
  EXPECT_THROW(build("ArgMax", {f32({})}, {}, {}), Error);
  ir::Tensor axis(DType::Int32, {});
  axis.data<int32_t>()[0] = 1;
  EXPECT_EQ(out_type(build("CumSum", {x}, {{1, axis}}, {})), "float[n,7,3]");
  axis.data<int32_t>()[0] = 3;
  EXPECT_THROW(build("CumSum", {x}, {{1, axis}}, {}), Error);
  EXPECT_THROW(build("CumSum", {x, Type::tensor(DType::Float32, ir::Shape{})}, {}, {}), Error);
}

}  // namespace
}  // namespace switchyard::testing
