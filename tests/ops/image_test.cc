// Symbolic shape inference of Resize, GridSample, NonMaxSuppression and Col2Im.
#include <gtest/gtest.h>

#include <functional>

#include "ir/check.h"
#include "ops/schema.h"

namespace switchyard {
namespace {

using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::Type;

struct Built {
  std::unique_ptr<ir::Graph> graph;
  ir::Node* node;
  std::string out(size_t i) const { return node->output(i)->type().to_string(); }
};

// One node whose inputs are graph inputs of the given types, or constants where `constants`
// holds a tensor; an Unknown type marks an omitted input.
Built build(const std::string& op, const std::vector<Type>& inputs, int num_outputs,
            const std::vector<Attribute>& attrs,
            const std::vector<std::optional<ir::Tensor>>& constants = {}) {
  Built b{std::make_unique<ir::Graph>("g"), nullptr};
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (i < constants.size() && constants[i]) {
      ins.push_back(b.graph->add_constant(name, *constants[i]));
    } else {
      ins.push_back(inputs[i].is_unknown() ? nullptr : b.graph->add_input(name, inputs[i]));
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  b.node = b.graph->add_node(op, "n", ins, outs);
  for (const auto& a : attrs) b.node->set_attribute(a);
  ops::infer_types(*b.graph);
  return b;
}

Type tensor(DType dt, ir::Shape s) { return Type::tensor(dt, std::move(s)); }

ir::Tensor i64s(std::vector<int64_t> v) {
  ir::Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return t;
}

ir::Tensor f32s(std::vector<float> v) {
  ir::Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

void expect_fails_naming_node(const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'n'"), std::string::npos) << e.what();
  }
}

const Type kUnknown{};

TEST(ImageSchemas, ResizeWithConstantScalesAndSizes) {
  Type x = tensor(DType::Float32, {Dim("n"), 3, 10, Dim("w")});
  auto s = build("Resize", {x, kUnknown, tensor(DType::Float32, {4})}, 1,
                 {Attribute::make_string("mode", "linear")},
                 {std::nullopt, std::nullopt, f32s({1, 1, 1.5f, 2})});
  EXPECT_EQ(s.out(0), "float[n,3,15,?]");
  auto z = build("Resize", {x, kUnknown, kUnknown, tensor(DType::Int64, {2})}, 1,
                 {Attribute::make_ints("axes", {-1, 2})},
                 {std::nullopt, std::nullopt, std::nullopt, i64s({7, 4})});
  EXPECT_EQ(z.out(0), "float[n,3,4,7]");
  auto keep =
      build("Resize",
            {tensor(DType::UInt8, {1, 3, 4, 8}), kUnknown, kUnknown, tensor(DType::Int64, {2})}, 1,
            {Attribute::make_ints("axes", {2, 3}),
             Attribute::make_string("keep_aspect_ratio_policy", "not_larger")},
            {std::nullopt, std::nullopt, std::nullopt, i64s({6, 6})});
  EXPECT_EQ(keep.out(0), "uint8[1,3,3,6]");
  auto dynamic = build("Resize", {x, kUnknown, tensor(DType::Float32, {4})}, 1, {});
  EXPECT_EQ(dynamic.out(0), "float[?,?,?,?]");
}

TEST(ImageSchemas, ResizeRejectsBadNodes) {
  Type x = tensor(DType::Float32, {1, 3, 4, 4});
  Type scales = tensor(DType::Float32, {4});
  expect_fails_naming_node([&] {
    build("Resize", {x, kUnknown, scales}, 1, {Attribute::make_string("mode", "area")});
  });
  expect_fails_naming_node([&] {
    build("Resize", {x, kUnknown, scales}, 1,
          {Attribute::make_string("coordinate_transformation_mode", "center")});
  });
  expect_fails_naming_node([&] { build("Resize", {x}, 1, {}); });
  expect_fails_naming_node([&] {
    build("Resize", {x, kUnknown, scales, tensor(DType::Int64, {4})}, 1, {},
          {std::nullopt, std::nullopt, f32s({1, 1, 2, 2}), i64s({1, 3, 8, 8})});
  });
  expect_fails_naming_node([&] {
    build("Resize", {tensor(DType::String, {2}), kUnknown, tensor(DType::Float32, {1})}, 1,
          {Attribute::make_string("mode", "linear")});
  });
  expect_fails_naming_node([&] {
    build("Resize", {x, kUnknown, scales}, 1, {}, {std::nullopt, std::nullopt, f32s({1, 2})});
  });
}

TEST(ImageSchemas, GridSampleShapes) {
  auto b = build("GridSample",
                 {tensor(DType::Float32, {Dim("n"), 3, 8, 8}),
                  tensor(DType::Float32, {Dim("n"), Dim("h"), 5, 2})},
                 1, {Attribute::make_string("mode", "cubic")});
  EXPECT_EQ(b.out(0), "float[n,3,h,5]");
  expect_fails_naming_node([&] {
    build("GridSample",
          {tensor(DType::Float32, {1, 3, 8, 8}), tensor(DType::Float32, {1, 4, 5, 3})}, 1, {});
  });
  expect_fails_naming_node([&] {
    build("GridSample",
          {tensor(DType::Float32, {1, 3, 8, 8}), tensor(DType::Float32, {1, 4, 5, 2})}, 1,
          {Attribute::make_string("padding_mode", "wrap")});
  });
}

TEST(ImageSchemas, NonMaxSuppressionAndCol2Im) {
  auto nms = build("NonMaxSuppression",
                   {tensor(DType::Float32, {Dim("b"), Dim("k"), 4}),
                    tensor(DType::Float32, {Dim("b"), 2, Dim("k")})},
                   1, {});
  EXPECT_EQ(nms.out(0), "int64[?,3]");
  expect_fails_naming_node([&] {
    build("NonMaxSuppression",
          {tensor(DType::Float32, {1, 5, 3}), tensor(DType::Float32, {1, 2, 5})}, 1, {});
  });
  auto col = build("Col2Im",
                   {tensor(DType::Float32, {Dim("n"), 12, Dim("l")}), tensor(DType::Int64, {2}),
                    tensor(DType::Int64, {2})},
                   1, {}, {std::nullopt, i64s({5, 6}), i64s({2, 3})});
  EXPECT_EQ(col.out(0), "float[n,2,5,6]");
  auto unknown = build(
      "Col2Im",
      {tensor(DType::Float32, {1, 12, 9}), tensor(DType::Int64, {3}), tensor(DType::Int64, {3})}, 1,
      {});
  EXPECT_EQ(unknown.out(0), "float[1,?,?,?,?]");
  expect_fails_naming_node([&] {
    build(
        "Col2Im",
        {tensor(DType::Float32, {1, 10, 9}), tensor(DType::Int64, {2}), tensor(DType::Int64, {2})},
        1, {}, {std::nullopt, i64s({5, 6}), i64s({2, 3})});
  });
}

}  // namespace
}  // namespace switchyard
