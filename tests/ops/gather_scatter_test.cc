// Symbolic shape inference of the gather_scatter family.
#include <gtest/gtest.h>

#include <limits>

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

Dim sym(const char* s) { return Dim(std::string(s)); }

ir::Tensor ints(const std::vector<int64_t>& v) {
  ir::Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

// One node over graph inputs (Type) or constants (Tensor); returns the inferred output types.
struct Arg {
  std::optional<Type> type;
  std::optional<ir::Tensor> constant;
  Arg(Type t) : type(std::move(t)) {}            // NOLINT
  Arg(ir::Tensor t) : constant(std::move(t)) {}  // NOLINT
  Arg(std::nullptr_t) {}                         // NOLINT: omitted input
};

std::vector<Type> infer(const std::string& op, const std::vector<Arg>& args,
                        const std::vector<Attribute>& attrs = {}, int outputs = 1) {
  ir::Graph g("test");
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (args[i].type)
      ins.push_back(g.add_input(name, *args[i].type));
    else if (args[i].constant)
      ins.push_back(g.add_constant(name, *args[i].constant));
    else
      ins.push_back(nullptr);
  }
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = g.add_node(op, "node", ins, outs);
  for (const auto& a : attrs) n->set_attribute(a);
  ops::infer_types(g);
  std::vector<Type> types;
  for (ir::Value* v : n->outputs()) types.push_back(v->type());
  return types;
}

std::string infer1(const std::string& op, const std::vector<Arg>& args,
                   const std::vector<Attribute>& attrs = {}) {
  return infer(op, args, attrs)[0].to_string();
}

void expect_invalid(const std::string& op, const std::vector<Arg>& args,
                    const std::vector<Attribute>& attrs, const std::string& fragment,
                    int outputs = 1) {
  try {
    infer(op, args, attrs, outputs);
    ADD_FAILURE() << "expected InvalidModel containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidModel) << e.what();
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'node'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

TEST(GatherScatterInference, GatherFamily) {
  Type table = Type::tensor(DType::Float16, Shape{sym("V"), 64});
  Type ids = Type::tensor(DType::Int64, Shape{sym("N"), sym("S")});
  EXPECT_EQ(infer1("Gather", {table, ids}), "float16[N,S,64]");
  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 3, 4});
  EXPECT_EQ(
      infer1("Gather", {x, Type::tensor(DType::Int32, Shape{})}, {Attribute::make_int("axis", 1)}),
      "float[N,4]");
  EXPECT_EQ(infer1("Gather", {x, Type::tensor(DType::Int64, Shape{2, 5})},
                   {Attribute::make_int("axis", -1)}),
            "float[N,3,2,5]");
  expect_invalid("Gather", {x, Type::tensor(DType::Float32, Shape{2})}, {}, "dtype");
  expect_invalid("Gather", {x, ids}, {Attribute::make_int("axis", 3)}, "out of range");

  EXPECT_EQ(infer1("GatherElements", {x, Type::tensor(DType::Int64, Shape{sym("N"), 7, 4})},
                   {Attribute::make_int("axis", 1)}),
            "float[N,7,4]");
  expect_invalid("GatherElements", {x, Type::tensor(DType::Int64, Shape{2})}, {}, "rank");

  Type data = Type::tensor(DType::Int32, Shape{sym("N"), 4, 5});
  EXPECT_EQ(infer1("GatherND", {data, Type::tensor(DType::Int64, Shape{sym("N"), 2, 1})},
                   {Attribute::make_int("batch_dims", 1)}),
            "int32[N,2,5]");
  EXPECT_EQ(infer1("GatherND", {data, Type::tensor(DType::Int64, Shape{6, 3})}), "int32[6]");
  EXPECT_EQ(infer1("GatherND", {data, Type::tensor(DType::Int64, Shape{6, Dim()})}), "int32[...]");
  expect_invalid("GatherND", {data, Type::tensor(DType::Int64, Shape{6, 4})}, {}, "last dim");
}

TEST(GatherScatterInference, ScatterOneHotTopK) {
  Type data = Type::tensor(DType::Float32, Shape{sym("N"), 5});
  Type idx = Type::tensor(DType::Int64, Shape{sym("N"), 2});
  EXPECT_EQ(infer1("ScatterElements", {data, idx, Type::tensor(DType::Float32, Shape{sym("N"), 2})},
                   {Attribute::make_string("reduction", "max")}),
            "float[N,5]");
  expect_invalid("ScatterElements", {data, idx, Type::tensor(DType::Float32, Shape{sym("N"), 2})},
                 {Attribute::make_string("reduction", "avg")}, "reduction 'avg'");
  expect_invalid("ScatterElements", {data, idx, Type::tensor(DType::Int32, Shape{sym("N"), 2})}, {},
                 "dtype");
  EXPECT_EQ(infer1("ScatterND", {data, Type::tensor(DType::Int64, Shape{3, 1}),
                                 Type::tensor(DType::Float32, Shape{3, 5})}),
            "float[N,5]");
  expect_invalid(
      "ScatterND",
      {data, Type::tensor(DType::Int64, Shape{3, 1}), Type::tensor(DType::Float32, Shape{3})}, {},
      "updates have rank");

  ir::Tensor depth(DType::Int64, {});
  *depth.data<int64_t>() = 10;
  Type values = Type::tensor(DType::Int32, Shape{2});
  Type labels = Type::tensor(DType::Int64, Shape{sym("N")});
  EXPECT_EQ(infer1("OneHot", {labels, depth, values}), "int32[N,10]");
  EXPECT_EQ(infer1("OneHot", {labels, depth, values}, {Attribute::make_int("axis", 0)}),
            "int32[10,N]");
  EXPECT_EQ(infer1("OneHot", {labels, Type::tensor(DType::Int64, Shape{}), values}), "int32[N,?]");

  Type scores = Type::tensor(DType::Float16, Shape{sym("N"), 10});
  auto topk = infer("TopK", {scores, ints({3})}, {}, 2);
  EXPECT_EQ(topk[0].to_string(), "float16[N,3]");
  EXPECT_EQ(topk[1].to_string(), "int64[N,3]");
  topk = infer("TopK", {scores, Type::tensor(DType::Int64, Shape{1})},
               {Attribute::make_int("axis", 0)}, 2);
  EXPECT_EQ(topk[0].to_string(), "float16[?,10]");
  expect_invalid("TopK", {scores, ints({11})}, {}, "exceeds", 2);
}

TEST(GatherScatterInference, DataDependentShapes) {
  Type x = Type::tensor(DType::Float32, Shape{sym("N"), 3});
  EXPECT_EQ(infer1("NonZero", {x}), "int64[2,?]");
  Type cond = Type::tensor(DType::Bool, Shape{sym("K")});
  EXPECT_EQ(infer1("Compress", {x, cond}), "float[?]");
  EXPECT_EQ(infer1("Compress", {x, cond}, {Attribute::make_int("axis", 1)}), "float[N,?]");
  expect_invalid("Compress", {x, Type::tensor(DType::Int32, Shape{3})}, {}, "dtype");

  auto u = infer("Unique", {x}, {}, 4);
  EXPECT_EQ(u[0].to_string(), "float[?]");
  EXPECT_EQ(u[1].to_string(), "int64[?]");
  EXPECT_EQ(u[2].to_string(), "int64[?]");
  EXPECT_EQ(u[3].to_string(), "int64[?]");
  u = infer("Unique", {Type::tensor(DType::String, Shape{4, 3})}, {Attribute::make_int("axis", 0)},
            3);
  EXPECT_EQ(u[0].to_string(), "string[?,3]");
  EXPECT_EQ(u[2].to_string(), "int64[4]");
}

}  // namespace
}  // namespace switchyard
