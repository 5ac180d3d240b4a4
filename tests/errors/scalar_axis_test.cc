// A rank-0 input meeting an op's axis: normalize_axis lets axis 0 (and -0) through for rank 0,
// which only some ops may use. Through the public API, every op whose axis indexes the input's
// dims must give a clean error naming the node — at compile time when the input is declared a
// scalar (float[]), and in the kernel when its rank is only known at run time — never read past
// the end of an empty shape. The ops where a scalar and axis 0 are valid ONNX give the right
// values.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/graph.h"
#include "support/op_test_util.h"
#include "switchyard/switchyard.hpp"

namespace switchyard {
namespace {

using ir::Attribute;
using ir::DType;
using testing::int64_scalar;
using testing::int64_tensor;
using testing::tensor_of;
using testing::to_doubles;

// Builds the node under test (named "op") on the graph input X and returns it.
using Build = std::function<ir::Node*(ir::Graph&, ir::Value*)>;

// A node `op_type` named `name`; its outputs become graph outputs.
ir::Node* add_op(ir::Graph& g, const std::string& op_type, const std::vector<ir::Value*>& inputs,
                 std::vector<Attribute> attrs = {}, int num_outputs = 1,
                 const std::string& name = "op") {
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(name + "_out" + std::to_string(i));
  ir::Node* n = g.add_node(op_type, name, inputs, outs);
  for (Attribute& a : attrs) n->set_attribute(std::move(a));
  return n;
}

ir::Value* constant(ir::Graph& g, const Tensor& t) {
  return g.add_constant("c" + std::to_string(g.values().size()), t);
}

Tensor float_scalar(double v) { return tensor_of(DType::Float32, {}, {v}); }

// A graph whose input X has `dtype` and is declared rank 0 (`rank_known`) or without a shape.
std::unique_ptr<ir::Graph> scalar_graph(const Build& build, DType dtype, bool rank_known) {
  auto g = std::make_unique<ir::Graph>("scalar_axis");
  ir::Value* x = g->add_input(
      "X", rank_known ? ir::Type::tensor(dtype, ir::Shape{}) : ir::Type::tensor(dtype));
  ir::Node* n = build(*g, x);
  for (size_t i = 0; i < n->num_outputs(); ++i) g->add_output(n->output(i));
  return g;
}

Executable compile(std::unique_ptr<ir::Graph> g) {
  Options options;
  options.num_threads = 1;
  return Model::from_graph(std::move(g)).compile(options);
}

struct ScalarCase {
  std::string label;         // the test's name
  std::string op;            // the node's op type, as its errors name it
  Build build;               // the node on X
  std::string static_words;  // shape inference's error for X declared float[]
  std::string run_words;     // the kernel's error for X of unknown rank fed a scalar
  Tensor x = float_scalar(2.5);
};

void PrintTo(const ScalarCase& c, std::ostream* os) { *os << c.label; }

// One op with one attribute and constant inputs after X.
Build one_op(const std::string& op_type, std::vector<Tensor> constants,
             std::vector<Attribute> attrs, int num_outputs = 1) {
  return [=](ir::Graph& g, ir::Value* x) {
    std::vector<ir::Value*> inputs = {x};
    for (const Tensor& t : constants) inputs.push_back(constant(g, t));
    return add_op(g, op_type, inputs, attrs, num_outputs);
  };
}

Attribute axis(int64_t a) { return Attribute::make_int("axis", a); }
Attribute axes(std::vector<int64_t> a) { return Attribute::make_ints("axes", std::move(a)); }

// Scan over X with a body that returns each slice.
ir::Node* scan_of(ir::Graph& g, ir::Value* x, std::vector<int64_t> in_axes,
                  std::vector<int64_t> out_axes) {
  auto body = std::make_shared<ir::Graph>("body", &g);
  body->add_output(body->add_input("xs", {}));
  return add_op(g, "Scan", {x},
                {Attribute::make_graph("body", body), Attribute::make_int("num_scan_inputs", 1),
                 Attribute::make_ints("scan_input_axes", std::move(in_axes)),
                 Attribute::make_ints("scan_output_axes", std::move(out_axes))});
}

std::vector<ScalarCase> error_cases() {
  const std::string rank_ge_1 = "input must have rank >= 1";
  const std::string data_ge_1 = "data must have rank >= 1";
  const Tensor idx = int64_scalar(0);
  std::vector<ScalarCase> v;
  for (int64_t a : {0, -1}) {
    const std::string s = a == 0 ? "0" : "Minus1";
    v.push_back(
        {"GatherAxis" + s, "Gather", one_op("Gather", {idx}, {axis(a)}), data_ge_1, data_ge_1});
    v.push_back({"GatherElementsAxis" + s, "GatherElements",
                 one_op("GatherElements", {idx}, {axis(a)}), data_ge_1, data_ge_1});
    v.push_back({"ScatterElementsAxis" + s, "ScatterElements",
                 one_op("ScatterElements", {idx, float_scalar(1.5)}, {axis(a)}), data_ge_1,
                 data_ge_1});
    v.push_back({"TopKAxis" + s, "TopK", one_op("TopK", {int64_tensor({1})}, {axis(a)}, 2),
                 rank_ge_1, rank_ge_1});
    v.push_back({"SplitAxis" + s, "Split", one_op("Split", {}, {axis(a)}), "cannot split a scalar",
                 "cannot split a scalar"});
    for (const char* op :
         {"ArgMax", "ArgMin", "Softmax", "LogSoftmax", "Hardmax", "LpNormalization"})
      v.push_back(
          {op + std::string("Axis") + s, op, one_op(op, {}, {axis(a)}), rank_ge_1, rank_ge_1});
    v.push_back({"CumSumAxis" + s, "CumSum", one_op("CumSum", {int64_scalar(a)}, {}), rank_ge_1,
                 rank_ge_1});
    v.push_back({"LayerNormalizationAxis" + s, "LayerNormalization",
                 one_op("LayerNormalization", {float_scalar(1.5)}, {axis(a)}),
                 "X must have rank >= 1", "X must have rank >= 1"});
    const std::string out_of_range =
        "axis " + std::to_string(a) + " is out of range for a rank-0 input";
    v.push_back({"SqueezeAxes" + s, "Squeeze", one_op("Squeeze", {int64_tensor({a})}, {}),
                 out_of_range, out_of_range});
    v.push_back({"ReduceSumAxes" + s, "ReduceSum", one_op("ReduceSum", {int64_tensor({a})}, {}),
                 out_of_range,
                 "axis " + std::to_string(a) + " is out of range for an input of rank 0"});
    v.push_back({"MeanVarianceNormalizationAxes" + s, "MeanVarianceNormalization",
                 one_op("MeanVarianceNormalization", {}, {axes({a})}), out_of_range,
                 "axis " + std::to_string(a) + " is out of range for an input of rank 0"});
    v.push_back({"PadAxes" + s, "Pad",
                 [a](ir::Graph& g, ir::Value* x) {
                   return add_op(g, "Pad",
                                 {x, constant(g, int64_tensor({1, 1})), nullptr,
                                  constant(g, int64_tensor({a}))});
                 },
                 out_of_range, out_of_range});
    v.push_back({"SliceAxes" + s, "Slice",
                 one_op("Slice", {int64_tensor({0}), int64_tensor({1}), int64_tensor({a})}, {}),
                 out_of_range, "a rank-0 input cannot be sliced"});
    v.push_back({"CenterCropPadAxes" + s, "CenterCropPad",
                 one_op("CenterCropPad", {int64_tensor({1})}, {axes({a})}), out_of_range,
                 out_of_range});
    v.push_back({"ResizeAxes" + s, "Resize",
                 [a](ir::Graph& g, ir::Value* x) {
                   return add_op(g, "Resize",
                                 {x, nullptr, constant(g, tensor_of(DType::Float32, {1}, {2.0}))},
                                 {axes({a})});
                 },
                 "X must have rank >= 1", "X must have rank >= 1"});
    v.push_back({"SplitToSequenceAxis" + s, "SplitToSequence",
                 one_op("SplitToSequence", {}, {axis(a)}), "input must have rank >= 1 to be split",
                 "input must have rank >= 1 to be split"});
    v.push_back({"ScanInputAxis" + s, "Scan",
                 [a](ir::Graph& g, ir::Value* x) { return scan_of(g, x, {a}, {0}); },
                 "scan input 0 'X' is a scalar", "scan input 0 is a scalar"});
  }
  // Concat checks the axis before the rank at compile time, so -1 fails as out of range there.
  v.push_back({"ConcatAxis0", "Concat",
               [](ir::Graph& g, ir::Value* x) {
                 return add_op(g, "Concat", {x, x}, {axis(0)});
               },
               "cannot concatenate scalars", "cannot concatenate scalars"});
  v.push_back({"ConcatAxisMinus1", "Concat",
               [](ir::Graph& g, ir::Value* x) {
                 return add_op(g, "Concat", {x, x}, {axis(-1)});
               },
               "axis -1 is out of range for rank 0", "cannot concatenate scalars"});
  v.push_back({"CompressAxis0", "Compress",
               one_op("Compress", {tensor_of(DType::Bool, {1}, {1})}, {axis(0)}),
               "input must have rank >= 1 when axis is given",
               "input must have rank >= 1 when axis is given"});
  v.push_back({"UniqueAxis0", "Unique", one_op("Unique", {}, {axis(0)}),
               "input must have rank >= 1 when axis is given",
               "input must have rank >= 1 when axis is given"});
  v.push_back({"ConcatFromSequenceWithoutNewAxis", "ConcatFromSequence",
               [](ir::Graph& g, ir::Value* x) {
                 ir::Value* seq = add_op(g, "SequenceConstruct", {x}, {}, 1, "seq")->output(0);
                 return add_op(g, "ConcatFromSequence", {seq}, {axis(0)});
               },
               "cannot concatenate scalars without 'new_axis'",
               "cannot concatenate scalars without 'new_axis'"});
  // Per-axis scales need a dim to match: a scalar input takes only per-tensor ones.
  v.push_back(
      {"DequantizeLinearPerAxisScale", "DequantizeLinear",
       one_op("DequantizeLinear",
              {tensor_of(DType::Float32, {2}, {0.5, 0.25}), tensor_of(DType::Int8, {2}, {1, 2})},
              {axis(0)}),
       "scale has 2 elements for a rank-0 input", "scale has 2 elements for a rank-0 input",
       tensor_of(DType::Int8, {}, {7})});
  return v;
}

class ScalarAxis : public ::testing::TestWithParam<ScalarCase> {};

TEST_P(ScalarAxis, DeclaredScalarFailsAtCompileNamingTheNode) {
  const ScalarCase& c = GetParam();
  auto g = scalar_graph(c.build, c.x.dtype(), /*rank_known=*/true);
  testing::expect_error([&] { compile(std::move(g)); }, ErrorCode::InvalidModel,
                        "[" + c.op + "] node 'op': " + c.static_words);
}

TEST_P(ScalarAxis, RuntimeScalarFailsInTheKernelNamingTheNode) {
  const ScalarCase& c = GetParam();
  Executable exe = compile(scalar_graph(c.build, c.x.dtype(), /*rank_known=*/false));
  testing::expect_error(
      [&] {
        exe.run({{"X", c.x}});
      },
      ErrorCode::InvalidArgument, "[" + c.op + "] node 'op': " + c.run_words);
}

INSTANTIATE_TEST_SUITE_P(EveryAxisOp, ScalarAxis, ::testing::ValuesIn(error_cases()),
                         [](const ::testing::TestParamInfo<ScalarCase>& info) {
                           return info.param.label;
                         });

// ---- ops where a scalar and axis 0 are valid ------------------------------------------------

// Runs `build` on X = x, declared rank 0 or without a shape; returns the outputs by name.
std::map<std::string, Tensor> run_scalar(const Build& build, const Tensor& x, bool rank_known) {
  return compile(scalar_graph(build, x.dtype(), rank_known)).run({{"X", x}});
}

// Unsqueeze's axes count in the output's rank (1 here): 0 and -1 both give [x].
TEST(ScalarAxisValid, UnsqueezeOfAScalarGivesOneElement) {
  for (bool rank_known : {true, false})
    for (int64_t a : {0, -1}) {
      SCOPED_TRACE("axis " + std::to_string(a) + (rank_known ? ", float[]" : ", float"));
      Tensor y =
          run_scalar(one_op("Unsqueeze", {int64_tensor({a})}, {}), float_scalar(-3.25), rank_known)
              .at("op_out0");
      EXPECT_EQ(y.shape(), (std::vector<int64_t>{1}));
      EXPECT_EQ(to_doubles(y), (std::vector<double>{-3.25}));
    }
}

// With new_axis, the axis counts in rank + 1: scalars stack into a 1-D tensor.
TEST(ScalarAxisValid, ConcatFromSequenceStacksScalarsWithNewAxis) {
  for (bool rank_known : {true, false})
    for (int64_t a : {0, -1}) {
      SCOPED_TRACE("axis " + std::to_string(a) + (rank_known ? ", float[]" : ", float"));
      Build build = [a](ir::Graph& g, ir::Value* x) {
        ir::Value* seq =
            add_op(g, "SequenceConstruct", {x, constant(g, float_scalar(4.75)), x}, {}, 1, "seq")
                ->output(0);
        return add_op(g, "ConcatFromSequence", {seq},
                      {axis(a), Attribute::make_int("new_axis", 1)});
      };
      Tensor y = run_scalar(build, float_scalar(-1.5), rank_known).at("op_out0");
      EXPECT_EQ(y.shape(), (std::vector<int64_t>{3}));
      EXPECT_EQ(to_doubles(y), (std::vector<double>{-1.5, 4.75, -1.5}));
    }
}

// Per-tensor scale and zero point: the axis attribute (0, or the default 1) is not used.
TEST(ScalarAxisValid, QuantizeAndDequantizeOfAScalar) {
  for (bool rank_known : {true, false})
    for (std::vector<Attribute> attrs : {std::vector<Attribute>{axis(0)}, {}}) {
      SCOPED_TRACE(std::string(rank_known ? "float[]" : "float") +
                   (attrs.empty() ? ", default axis" : ", axis 0"));
      Build dequantize =
          one_op("DequantizeLinear", {float_scalar(0.5), tensor_of(DType::Int8, {}, {3})}, attrs);
      Tensor d = run_scalar(dequantize, tensor_of(DType::Int8, {}, {7}), rank_known).at("op_out0");
      EXPECT_EQ(d.shape(), (std::vector<int64_t>{}));
      EXPECT_EQ(to_doubles(d), (std::vector<double>{2.0}));  // (7 - 3) * 0.5
      Build quantize =
          one_op("QuantizeLinear", {float_scalar(0.5), tensor_of(DType::Int8, {}, {-2})}, attrs);
      Tensor q = run_scalar(quantize, float_scalar(2.6), rank_known).at("op_out0");
      EXPECT_EQ(q.dtype(), DType::Int8);
      EXPECT_EQ(q.shape(), (std::vector<int64_t>{}));
      EXPECT_EQ(to_doubles(q), (std::vector<double>{3.0}));  // round(2.6 / 0.5) - 2
    }
}

// Scan's output axes count in the slice's rank + 1: scalar slices of a 1-D input stack back.
TEST(ScalarAxisValid, ScanStacksScalarSlicesOnOutputAxis0OrMinus1) {
  Tensor x = tensor_of(DType::Float32, {3}, {0.5, -2.0, 7.25});
  for (int64_t a : {0, -1}) {
    SCOPED_TRACE("scan_output_axes " + std::to_string(a));
    auto g = std::make_unique<ir::Graph>("scalar_axis");
    ir::Value* xv = g->add_input("X", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim("T")}));
    g->add_output(scan_of(*g, xv, {0}, {a})->output(0));
    Tensor y = compile(std::move(g)).run({{"X", x}}).at("op_out0");
    EXPECT_EQ(y.shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(to_doubles(y), to_doubles(x));
  }
}

}  // namespace
}  // namespace switchyard
