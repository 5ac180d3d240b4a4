// Symbolic shape inference of DFT, STFT, the windows and MelWeightMatrix.
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

ir::Tensor scalar(int64_t v) {
  ir::Tensor t(DType::Int64, {});
  *t.data<int64_t>() = v;
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

TEST(SignalSchemas, DftShapes) {
  Type x = tensor(DType::Float32, {Dim("b"), Dim("n"), 1});
  EXPECT_EQ(build("DFT", {x}, 1, {}).out(0), "float[b,n,2]");
  EXPECT_EQ(build("DFT", {x, tensor(DType::Int64, {})}, 1, {Attribute::make_int("onesided", 1)},
                  {std::nullopt, scalar(10)})
                .out(0),
            "float[b,6,2]");
  Type x4 = tensor(DType::Float16, {2, 7, Dim("c"), 2});
  EXPECT_EQ(build("DFT", {x4, kUnknown, tensor(DType::Int64, {})}, 1, {},
                  {std::nullopt, std::nullopt, scalar(1)})
                .out(0),
            "float16[2,7,c,2]");
  EXPECT_EQ(build("DFT", {x4}, 1, {Attribute::make_int("axis", 0)}).out(0), "float16[2,7,c,2]");
  EXPECT_EQ(build("DFT", {x4, tensor(DType::Int64, {})}, 1, {}).out(0), "float16[2,7,?,2]");
  EXPECT_EQ(build("DFT", {x4, kUnknown, tensor(DType::Int64, {})}, 1, {}).out(0),
            "float16[?,?,?,2]");
  expect_fails_naming_node([&] { build("DFT", {x4}, 1, {Attribute::make_int("onesided", 1)}); });
  expect_fails_naming_node([&] { build("DFT", {x4}, 1, {Attribute::make_int("axis", 3)}); });
  expect_fails_naming_node([&] { build("DFT", {tensor(DType::Int32, {2, 4, 1})}, 1, {}); });
}

TEST(SignalSchemas, StftShapes) {
  Type sig = tensor(DType::Float32, {Dim("b"), 128, 1});
  auto b = build("STFT", {sig, tensor(DType::Int64, {}), tensor(DType::Float32, {16})}, 1, {},
                 {std::nullopt, scalar(8)});
  EXPECT_EQ(b.out(0), "float[b,15,9,2]");
  auto full = build("STFT", {sig, tensor(DType::Int64, {}), kUnknown, tensor(DType::Int64, {})}, 1,
                    {Attribute::make_int("onesided", 0)},
                    {std::nullopt, std::nullopt, std::nullopt, scalar(16)});
  EXPECT_EQ(full.out(0), "float[b,?,16,2]");
  expect_fails_naming_node([&] { build("STFT", {sig, tensor(DType::Int64, {})}, 1, {}); });
}

TEST(SignalSchemas, WindowsAndMel) {
  EXPECT_EQ(build("HannWindow", {tensor(DType::Int32, {})}, 1, {}).out(0), "float[?]");
  EXPECT_EQ(build("BlackmanWindow", {tensor(DType::Int64, {})}, 1,
                  {Attribute::make_int("output_datatype", 11)}, {scalar(12)})
                .out(0),
            "double[12]");
  expect_fails_naming_node([&] {
    build("HammingWindow", {tensor(DType::Int64, {})}, 1,
          {Attribute::make_int("output_datatype", 8)});
  });
  Type i = tensor(DType::Int64, {});
  Type f = tensor(DType::Float32, {});
  auto mel = build("MelWeightMatrix", {i, i, i, f, f}, 1, {},
                   {scalar(8), scalar(16), std::nullopt, std::nullopt, std::nullopt});
  EXPECT_EQ(mel.out(0), "float[9,8]");
}

}  // namespace
}  // namespace switchyard
