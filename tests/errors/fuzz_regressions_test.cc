// Crashes the fuzz targets found (tests/fuzz), each rebuilt as a small model by hand: every one
// must now give a clean switchyard::Error with a fitting code or, where the model was valid, the
// right result. The fuzz inputs themselves are kept in tests/fuzz/regressions/, which
// `make fuzz` replays under the sanitizers; tests/fuzz/RESULTS.md lists each bug and its fix.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "ir/graph.h"
#include "onnx/import.h"
#include "ops/schema.h"
#include "switchyard/switchyard.hpp"
#include "tooling/inputs.h"

namespace switchyard {
namespace {

// A model with the given default-domain opset and tensor inputs/outputs ("name", elem type,
// dims; a dim < 0 is the symbol "N"; an output without dims has an unknown shape).
struct ValueDecl {
  std::string name;
  int elem_type = onnx::TensorProto::FLOAT;
  std::vector<int64_t> dims;
};

onnx::ModelProto make_model(int64_t opset, const std::vector<ValueDecl>& inputs,
                            const std::vector<ValueDecl>& outputs) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("regression");
  auto declare = [](onnx::ValueInfoProto* v, const ValueDecl& d) {
    v->set_name(d.name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(d.elem_type);
    auto* shape = tt->mutable_shape();
    for (int64_t dim : d.dims) {
      if (dim < 0) {
        shape->add_dim()->set_dim_param("N");
      } else {
        shape->add_dim()->set_dim_value(dim);
      }
    }
  };
  for (const ValueDecl& d : inputs) declare(g->add_input(), d);
  for (const ValueDecl& d : outputs) {
    declare(g->add_output(), d);
    if (d.dims.empty())
      g->mutable_output(g->output_size() - 1)->mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return m;
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op_type,
                          const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op_type);
  n->set_name(op_type + "_" + std::to_string(g->node_size()));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

onnx::AttributeProto* add_ints(onnx::NodeProto* n, const std::string& name,
                               const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
  return a;
}

onnx::AttributeProto* add_int(onnx::NodeProto* n, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
  return a;
}

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// What fuzz_import does with a model: import, then type and shape inference.
void import_and_infer(const onnx::ModelProto& model) {
  std::string bytes = model.SerializeAsString();
  std::unique_ptr<ir::Graph> graph =
      onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "regression");
  ops::infer_types(*graph);
}

// What fuzz_compile_run does with a model: import, compile on one thread under a 64 MiB cpu
// cap, run once on seeded inputs (symbolic dims = 2) with a deadline; returns the outputs.
std::map<std::string, Tensor> import_compile_run(const onnx::ModelProto& model) {
  std::string bytes = model.SerializeAsString();
  std::unique_ptr<ir::Graph> graph =
      onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "regression");
  tooling::InputSpec spec;
  spec.seed = 7;
  for (const ir::Value* v : graph->inputs())
    if (v->type().shape)
      for (const ir::Dim& d : *v->type().shape)
        if (d.is_symbolic()) spec.dims[d.symbol] = 2;
  std::map<std::string, Tensor> inputs;
  std::vector<tooling::Declared> declared = tooling::declared_of(graph->inputs());
  for (size_t i = 0; i < declared.size(); ++i)
    inputs[declared[i].name] = tooling::make_seeded_input(declared[i], i, spec);
  Options options;
  options.num_threads = 1;
  options.memory_limits = {"cpu=64M"};
  Executable exe = Model::from_graph(std::move(graph)).compile(options);
  RunOptions run_options;
  run_options.deadline_ms = 2000;
  return exe.run(inputs, run_options);
}

// Expects `f` to throw an Error with `code` whose message contains `words`.
void expect_error(const std::function<void()>& f, ErrorCode code, const std::string& words) {
  try {
    f();
    ADD_FAILURE() << "no error thrown (expected " << error_code_name(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

// fuzz_import, heap-use-after-free in GraphEditor::detach: a legacy Scatter (opset 9) reading its
// own output was detached for the ScatterElements rewrite, erasing the output value its copied
// input list still named.
TEST(FuzzRegressions, LegacyScatterReadingItsOwnOutput) {
  onnx::ModelProto m = make_model(
      9,
      {{"data", onnx::TensorProto::FLOAT, {3, 3}}, {"updates", onnx::TensorProto::FLOAT, {2, 3}}},
      {{"y", onnx::TensorProto::FLOAT, {3, 3}}});
  add_node(m.mutable_graph(), "Scatter", {"data", "y", "updates"}, {"y"});
  expect_error([&] { import_compile_run(m); }, ErrorCode::InvalidModel, "reads its own output 'y'");
}

// fuzz_compile_run, signed overflow in GRU/LSTM/RNN shape inference: gates x hidden_size with
// hidden_size = INT64_MAX.
TEST(FuzzRegressions, RecurrentHiddenSizeOverflow) {
  onnx::ModelProto m = make_model(14,
                                  {{"X", onnx::TensorProto::FLOAT, {2, 3, 3}},
                                   {"W", onnx::TensorProto::FLOAT, {1, 15, 3}},
                                   {"R", onnx::TensorProto::FLOAT, {1, 15, 5}}},
                                  {{"Y_h", onnx::TensorProto::FLOAT, {}}});
  onnx::NodeProto* gru = add_node(m.mutable_graph(), "GRU", {"X", "W", "R"}, {"", "Y_h"});
  add_int(gru, "hidden_size", kInt64Max);
  expect_error([&] { import_compile_run(m); }, ErrorCode::InvalidModel, "overflows int64");
}

// fuzz_compile_run, signed overflow in MaxUnpool's output size, (in - 1) * stride + kernel - pads,
// with kernel_shape INT64_MAX: at import (static X) ...
TEST(FuzzRegressions, MaxUnpoolOutputSizeOverflowAtImport) {
  onnx::ModelProto m = make_model(11,
                                  {{"X", onnx::TensorProto::FLOAT, {1, 1, 2, 2}},
                                   {"I", onnx::TensorProto::INT64, {1, 1, 2, 2}}},
                                  {{"Y", onnx::TensorProto::FLOAT, {}}});
  onnx::NodeProto* unpool = add_node(m.mutable_graph(), "MaxUnpool", {"X", "I"}, {"Y"});
  add_ints(unpool, "kernel_shape", {kInt64Max, 2});
  add_ints(unpool, "strides", {2, 2});
  expect_error([&] { import_compile_run(m); }, ErrorCode::InvalidModel, "MaxUnpool output size");
}

// ... and in the kernel, when X's dims are known only at run time.
TEST(FuzzRegressions, MaxUnpoolOutputSizeOverflowAtRun) {
  onnx::ModelProto m = make_model(11,
                                  {{"X", onnx::TensorProto::FLOAT, {1, 1, -1, 2}},
                                   {"I", onnx::TensorProto::INT64, {1, 1, -1, 2}}},
                                  {{"Y", onnx::TensorProto::FLOAT, {}}});
  onnx::NodeProto* unpool = add_node(m.mutable_graph(), "MaxUnpool", {"X", "I"}, {"Y"});
  add_ints(unpool, "kernel_shape", {kInt64Max, 2});
  add_ints(unpool, "strides", {2, 2});
  expect_error([&] { import_compile_run(m); }, ErrorCode::InvalidModel, "MaxUnpool output size");
}

// Found reading MaxUnpool's inference for the above: an output_shape input declared with 2^40
// elements sized the output's rank by it (the shape-input blow-up of Reshape and Expand).
TEST(FuzzRegressions, MaxUnpoolOutputShapeDeclaredHuge) {
  onnx::ModelProto m = make_model(11,
                                  {{"X", onnx::TensorProto::FLOAT, {1, 1, 2, 2}},
                                   {"I", onnx::TensorProto::INT64, {1, 1, 2, 2}},
                                   {"S", onnx::TensorProto::INT64, {int64_t{1} << 40}}},
                                  {{"Y", onnx::TensorProto::FLOAT, {}}});
  onnx::NodeProto* unpool = add_node(m.mutable_graph(), "MaxUnpool", {"X", "I", "S"}, {"Y"});
  add_ints(unpool, "kernel_shape", {2, 2});
  add_ints(unpool, "strides", {2, 2});
  expect_error([&] { import_and_infer(m); }, ErrorCode::InvalidModel, "declares 1099511627776");
}

// fuzz_import, signed overflow in the opset < 7 broadcast rewrite: axis + rank(B) with a
// legacy `axis` attribute of INT64_MAX (A of unknown rank, so the rewrite builds the reshape).
TEST(FuzzRegressions, LegacyBroadcastAxisOverflow) {
  onnx::ModelProto m =
      make_model(6, {{"A", onnx::TensorProto::FLOAT, {}}, {"B", onnx::TensorProto::FLOAT, {3}}},
                 {{"C", onnx::TensorProto::FLOAT, {}}});
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  onnx::NodeProto* add = add_node(m.mutable_graph(), "Add", {"A", "B"}, {"C"});
  add_int(add, "broadcast", 1);
  add_int(add, "axis", kInt64Max);
  expect_error([&] { import_and_infer(m); }, ErrorCode::InvalidModel, "past the largest rank");
}

// fuzz_compile_run, null reference in Slice's inference: a rank-0 input sliced on axis 0
// (normalize_axis accepts axis 0 for rank 0, and the output shape has no dim 0). Pad and
// CenterCropPad share the axes helper and the fix.
TEST(FuzzRegressions, SliceOfScalar) {
  onnx::ModelProto m =
      make_model(13, {{"X", onnx::TensorProto::FLOAT, {}}}, {{"Y", onnx::TensorProto::FLOAT, {}}});
  onnx::GraphProto* g = m.mutable_graph();
  for (const char* name : {"starts", "ends"}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(1);
    t->add_int64_data(std::string(name) == "starts" ? 0 : 3);
  }
  add_node(g, "Slice", {"X", "starts", "ends"}, {"Y"});
  expect_error([&] { import_and_infer(m); }, ErrorCode::InvalidModel,
               "axis 0 is out of range for a rank-0 input");
}

// fuzz_compile_run, allocation of 2^53 bytes in the cpu MaxPool kernel: pads of 2^40 made the
// window table (output x window input offsets, cached with the plan, outside the run's memory
// limit) that large. It is bounded now.
TEST(FuzzRegressions, PoolWindowTableHuge) {
  onnx::ModelProto m = make_model(12, {{"X", onnx::TensorProto::FLOAT, {1, 1, 5, 5}}},
                                  {{"Y", onnx::TensorProto::FLOAT, {}}});
  onnx::NodeProto* pool = add_node(m.mutable_graph(), "MaxPool", {"X"}, {"Y"});
  add_ints(pool, "kernel_shape", {5, 5});
  add_ints(pool, "pads", {2, 2, 2, int64_t{1} << 40});
  expect_error([&] { import_compile_run(m); }, ErrorCode::OutOfMemory, "window table");
}

// fuzz_import and fuzz_compile_run, the same null reference in Split's inference.
TEST(FuzzRegressions, SplitOfScalar) {
  onnx::ModelProto m =
      make_model(18, {{"X", onnx::TensorProto::FLOAT, {}}},
                 {{"A", onnx::TensorProto::FLOAT, {}}, {"B", onnx::TensorProto::FLOAT, {}}});
  add_node(m.mutable_graph(), "Split", {"X"}, {"A", "B"});
  expect_error([&] { import_and_infer(m); }, ErrorCode::InvalidModel, "cannot split a scalar");
}

// fuzz_compile_run, a timeout (over 10 s) in the cpu TfIdfVectorizer kernel: max_skip_count = 2^40
// was walked skip by skip although no gram fits the row past a stride of (row_len - 1) /
// (len - 1). The run now takes no longer than with the largest useful skip, and counts the same.
TEST(FuzzRegressions, TfIdfHugeSkipCount) {
  auto model = [](int64_t max_skip) {
    onnx::ModelProto m = make_model(9, {{"X", onnx::TensorProto::INT32, {7}}},
                                    {{"Y", onnx::TensorProto::FLOAT, {}}});
    onnx::NodeProto* n = add_node(m.mutable_graph(), "TfIdfVectorizer", {"X"}, {"Y"});
    add_int(n, "min_gram_length", 2);
    add_int(n, "max_gram_length", 2);
    add_int(n, "max_skip_count", max_skip);
    add_ints(n, "ngram_counts", {0, 0});
    add_ints(n, "ngram_indexes", {0, 1, 2});
    add_ints(n, "pool_int64s", {1, 2, 3, 3, 0, 5});
    onnx::AttributeProto* mode = n->add_attribute();
    mode->set_name("mode");
    mode->set_type(onnx::AttributeProto::STRING);
    mode->set_s("TF");
    return m;
  };
  std::map<std::string, Tensor> useful = import_compile_run(model(6));
  std::map<std::string, Tensor> huge = import_compile_run(model(int64_t{1} << 40));
  const Tensor& a = useful.at("Y");
  const Tensor& b = huge.at("Y");
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
}

// fuzz_compile_run, heap-use-after-free in placement: dead-node removal erased a Loop whose body
// read an outer value, and the value kept the body node among its uses after the body was freed.
TEST(FuzzRegressions, ErasedLoopBodyLeavesNoUses) {
  onnx::ModelProto m = make_model(13,
                                  {{"X", onnx::TensorProto::FLOAT, {2}},
                                   {"N", onnx::TensorProto::INT64, {}},
                                   {"C", onnx::TensorProto::BOOL, {}}},
                                  {{"Y", onnx::TensorProto::FLOAT, {}}});
  onnx::GraphProto* g = m.mutable_graph();
  onnx::NodeProto* loop = add_node(g, "Loop", {"N", "C", "X"}, {"unused"});
  onnx::AttributeProto* body_attr = loop->add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::ModelProto body = make_model(
      13,
      {{"i", onnx::TensorProto::INT64, {}},
       {"cond", onnx::TensorProto::BOOL, {}},
       {"prev", onnx::TensorProto::FLOAT, {2}}},
      {{"cond_out", onnx::TensorProto::BOOL, {}}, {"cur", onnx::TensorProto::FLOAT, {}}});
  add_node(body.mutable_graph(), "Identity", {"cond"}, {"cond_out"});
  add_node(body.mutable_graph(), "Add", {"prev", "X"}, {"cur"});  // X of the main graph
  *body_attr->mutable_g() = body.graph();
  add_node(g, "Identity", {"X"}, {"Y"});

  std::string bytes = m.SerializeAsString();
  Options options;
  options.num_threads = 1;
  Executable exe =
      Model::from_graph(onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "r"))
          .compile(options);
  const ir::Graph& graph = exe.internal().graph();
  ASSERT_EQ(graph.nodes().size(), 1u) << "the Loop is dead and removed";
  const ir::Value* x = graph.inputs()[0];
  ASSERT_EQ(x->name(), "X");
  EXPECT_EQ(x->uses().size(), 1u) << "only the Identity reads X now";
}

// fuzz_compile_run, signed overflow in reduce_tensor (and CumSum's split_at): an empty input
// [2^62, 0, 3, N] has numel 0, so it passes every size check, but the products of its other
// dims overflow. Empty inputs now return before any product is taken.
TEST(FuzzRegressions, ReduceOfAnEmptyTensorWithHugeDims) {
  const int64_t huge = int64_t{1} << 62;
  {
    onnx::ModelProto m = make_model(13, {{"x", onnx::TensorProto::FLOAT, {huge, 0, 3, -1}}},
                                    {{"y", onnx::TensorProto::FLOAT, {}}});
    add_ints(add_node(m.mutable_graph(), "ReduceMean", {"x"}, {"y"}), "axes", {0, 2, 3});
    std::map<std::string, Tensor> out = import_compile_run(m);
    EXPECT_EQ(out.at("y").shape(), (std::vector<int64_t>{1, 0, 1, 1}));
  }
  {
    // A reduction over an empty axis gives the identity over the kept dims.
    // (opset 13 ReduceSum takes its axes as an input)
    onnx::ModelProto m = make_model(13, {{"x", onnx::TensorProto::FLOAT, {2, 0, 3}}},
                                    {{"y", onnx::TensorProto::FLOAT, {}}});
    onnx::TensorProto* axes = m.mutable_graph()->add_initializer();
    axes->set_name("axes");
    axes->set_data_type(onnx::TensorProto::INT64);
    axes->add_dims(1);
    axes->add_int64_data(1);
    add_node(m.mutable_graph(), "ReduceSum", {"x", "axes"}, {"y"});
    std::map<std::string, Tensor> out = import_compile_run(m);
    const Tensor& y = out.at("y");
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 1, 3}));
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data<float>()[i], 0.0f);
  }
  {
    onnx::ModelProto m = make_model(14, {{"x", onnx::TensorProto::FLOAT, {0, huge, 3}}},
                                    {{"y", onnx::TensorProto::FLOAT, {}}});
    onnx::TensorProto* axis = m.mutable_graph()->add_initializer();
    axis->set_name("axis");
    axis->set_data_type(onnx::TensorProto::INT64);
    axis->add_int64_data(0);
    add_node(m.mutable_graph(), "CumSum", {"x", "axis"}, {"y"});
    std::map<std::string, Tensor> out = import_compile_run(m);
    EXPECT_EQ(out.at("y").numel(), 0);
  }
}

// fuzz_compile_run (campaign C), signed overflow in the EyeLike kernel: r + k with k = INT64_MAX.
// Any k whose diagonal lies outside the matrix gives zeros.
TEST(FuzzRegressions, EyeLikeWithAnExtremeK) {
  for (int64_t k : {kInt64Max, std::numeric_limits<int64_t>::min(), int64_t{1}, int64_t{-2}}) {
    onnx::ModelProto m = make_model(9, {{"x", onnx::TensorProto::FLOAT, {3, 4}}},
                                    {{"y", onnx::TensorProto::FLOAT, {3, 4}}});
    add_int(add_node(m.mutable_graph(), "EyeLike", {"x"}, {"y"}), "k", k);
    std::map<std::string, Tensor> out = import_compile_run(m);
    const Tensor& y = out.at("y");
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 4; ++c)
        EXPECT_EQ(y.data<float>()[r * 4 + c], c - r == k ? 1.0f : 0.0f) << k << " " << r << c;
  }
}

// fuzz_import (campaign C), UB in GridSample inference: a scalar grid (rank 0) beside an X of
// unknown rank read grid.shape.back() of an empty shape.
TEST(FuzzRegressions, GridSampleWithAScalarGrid) {
  onnx::ModelProto m =
      make_model(16, {{"x", onnx::TensorProto::FLOAT, {}}, {"grid", onnx::TensorProto::FLOAT, {}}},
                 {{"y", onnx::TensorProto::FLOAT, {}}});
  // x: no shape at all (unknown rank); grid: a scalar (rank 0, an empty shape).
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  add_node(m.mutable_graph(), "GridSample", {"x", "grid"}, {"y"});
  expect_error([&] { import_and_infer(m); }, ErrorCode::InvalidModel, "grid has rank 0");
}

}  // namespace
}  // namespace switchyard
