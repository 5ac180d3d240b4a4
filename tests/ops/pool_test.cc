// Symbolic shape inference of the pool family.
#include <gtest/gtest.h>

#include "ir/check.h"
#include "ir/graph.h"
#include "ops/schema.h"

namespace switchyard {
namespace {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::Shape;
using ir::Type;

std::vector<Type> infer(const std::string& op, const std::vector<Type>& inputs,
                        const std::vector<Attribute>& attrs = {}, int outputs = 1) {
  ir::Graph g;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(g.add_input("in" + std::to_string(i), inputs[i]));
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = g.add_node(op, "node", ins, outs);
  for (const auto& a : attrs) n->set_attribute(a);
  ops::infer_types(g);
  std::vector<Type> types;
  for (ir::Value* v : n->outputs()) types.push_back(v->type());
  return types;
}

Type f32(Shape s) { return Type::tensor(DType::Float32, std::move(s)); }

TEST(PoolSchema, WindowPools) {
  auto k = [](std::vector<int64_t> v) {
    return Attribute::make_ints("kernel_shape", std::move(v));
  };
  auto t = infer("MaxPool", {f32({Dim("N"), 64, 112, 112})},
                 {k({3, 3}), Attribute::make_ints("strides", {2, 2}),
                  Attribute::make_ints("pads", {1, 1, 1, 1})},
                 2);
  EXPECT_EQ(t[0].to_string(), "float[N,64,56,56]");
  EXPECT_EQ(t[1].to_string(), "int64[N,64,56,56]");
  EXPECT_EQ(infer("AveragePool", {f32({1, 1, 4, 4})},
                  {k({3, 3}), Attribute::make_ints("strides", {2, 2}),
                   Attribute::make_int("ceil_mode", 1)})[0]
                .to_string(),
            "float[1,1,2,2]");
  EXPECT_EQ(infer("AveragePool", {f32({1, 1, Dim("H"), 5})},
                  {k({3, 3}), Attribute::make_string("auto_pad", "SAME_UPPER")})[0]
                .to_string(),
            "float[1,1,H,5]");
  EXPECT_EQ(infer("LpPool", {f32({1, 2, 9})}, {k({3}), Attribute::make_ints("dilations", {2})})[0]
                .to_string(),
            "float[1,2,5]");
  EXPECT_THROW(infer("MaxPool", {f32({1, 1, 4, 4})}, {k({3})}), Error);
  EXPECT_THROW(infer("MaxPool", {f32({1, 1, 4, 4})}), Error);
  EXPECT_THROW(infer("AveragePool", {Type::tensor(DType::Int8, Shape{1, 1, 4, 4})}, {k({2, 2})}),
               Error);
  EXPECT_THROW(infer("MaxPool", {f32({1, 1, 2, 2})}, {k({3, 3})}), Error);
}

TEST(PoolSchema, GlobalAndRoiPools) {
  EXPECT_EQ(infer("GlobalAveragePool", {f32({Dim("N"), 2048, 7, 7})})[0].to_string(),
            "float[N,2048,1,1]");
  EXPECT_EQ(infer("GlobalMaxPool", {f32({2, 3, 5})})[0].to_string(), "float[2,3,1]");
  EXPECT_EQ(infer("MaxUnpool", {f32({1, 2, 3, 3}), Type::tensor(DType::Int64, Shape{1, 2, 3, 3})},
                  {Attribute::make_ints("kernel_shape", {2, 2}),
                   Attribute::make_ints("strides", {2, 2})})[0]
                .to_string(),
            "float[1,2,6,6]");
  EXPECT_EQ(infer("MaxRoiPool", {f32({1, 8, 20, 20}), f32({Dim("R"), 5})},
                  {Attribute::make_ints("pooled_shape", {3, 4})})[0]
                .to_string(),
            "float[R,8,3,4]");
  EXPECT_EQ(
      infer("RoiAlign",
            {f32({1, 8, 20, 20}), f32({Dim("R"), 4}), Type::tensor(DType::Int64, Shape{Dim("R")})},
            {Attribute::make_int("output_height", 5), Attribute::make_int("output_width", 6)})[0]
          .to_string(),
      "float[R,8,5,6]");
  EXPECT_THROW(
      infer("RoiAlign", {f32({1, 8, 20, 20}), f32({2, 4}), Type::tensor(DType::Int64, Shape{2})},
            {Attribute::make_string("mode", "median")}),
      Error);
}

}  // namespace
}  // namespace switchyard
