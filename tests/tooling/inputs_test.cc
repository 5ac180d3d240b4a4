// Inputs for a run (`switchyard run --inputs/--seed/--dim/--shape`): what an inputs file may
// hold, when a missing input is seeded, and the errors that name the key, input or option.
#include "tooling/inputs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "backends/cpu/cpu_backend.h"
#include "compiler/compiler.h"
#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::tooling {
namespace {

using ir::DType;
using testing::random_tensor;

// X float[N,4], L int64[N] -> Y = Relu(X), K = Neg(L).
std::unique_ptr<ir::Graph> two_input_graph() {
  auto g = std::make_unique<ir::Graph>("two_inputs");
  ir::Value* x =
      g->add_input("X", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim("N"), ir::Dim(4)}));
  ir::Value* l = g->add_input("L", ir::Type::tensor(DType::Int64, ir::Shape{ir::Dim("N")}));
  g->add_output(g->add_node("Relu", "relu", {x}, {"Y"})->output(0));
  g->add_output(g->add_node("Neg", "neg", {l}, {"K"})->output(0));
  return g;
}

const std::string kFile = "in.npz";

ResolvedInputs resolve(const ir::Graph& g, const std::map<std::string, ir::Tensor>& given,
                       const InputSpec& spec = {}, bool seed_given = false,
                       const std::string& source = kFile) {
  return resolve_inputs(declared_of(g.inputs()), declared_of(g.outputs()), given, source, spec,
                        seed_given);
}

// Expects resolve() to throw InvalidArgument whose message holds every fragment.
void expect_refused(const std::function<void()>& f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
    for (const auto& s : fragments)
      EXPECT_NE(std::string(e.what()).find(s), std::string::npos)
          << "message does not name '" << s << "': " << e.what();
  }
}

TEST(ResolveInputs, TakesInputsByNameAndByInDotName) {
  auto g = two_input_graph();
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  ir::Tensor l = random_tensor(DType::Int64, {3}, 2, -9, 9);
  ResolvedInputs r = resolve(*g, {{"X", x}, {"in.L", l}});
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_TRUE(testing::same_bits(r.values[0].tensor, x));
  EXPECT_TRUE(testing::same_bits(r.values[1].tensor, l));
  EXPECT_EQ(r.origins, (std::vector<std::string>{"from in.npz", "from in.npz"}));
  EXPECT_TRUE(r.ignored_keys.empty());
}

TEST(ResolveInputs, RefusesAKeyThatNamesNoInput) {
  auto g = two_input_graph();
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  ir::Tensor l = random_tensor(DType::Int64, {3}, 2, -9, 9);
  // A typo, a wrong prefix, and an out.<name> that names no output.
  for (const std::string key : {"x", "input.X", "in.Q", "out.X"}) {
    SCOPED_TRACE(key);
    expect_refused(
        [&] {
          resolve(*g, {{"X", x}, {"L", l}, {key, x}});
        },
        {"in.npz", "'" + key + "'", "names no input", "X, L"});
  }
}

TEST(ResolveInputs, RefusesTwoKeysForOneInput) {
  auto g = two_input_graph();
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  ir::Tensor l = random_tensor(DType::Int64, {3}, 2, -9, 9);
  expect_refused(
      [&] {
        resolve(*g, {{"X", x}, {"in.X", x}, {"L", l}});
      },
      {"'X'", "'in.X'", "input 'X'"});
}

TEST(ResolveInputs, IgnoresReferenceOutputsOfAReferenceFile) {
  auto g = two_input_graph();
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  ir::Tensor l = random_tensor(DType::Int64, {3}, 2, -9, 9);
  ResolvedInputs r = resolve(*g, {{"in.X", x}, {"in.L", l}, {"out.Y", x}, {"out.K", l}});
  EXPECT_EQ(r.ignored_keys, (std::vector<std::string>{"out.K", "out.Y"}));
  EXPECT_EQ(r.values.size(), 2u);
}

TEST(ResolveInputs, MissingInputIsAnErrorUnlessSeedIsGiven) {
  auto g = two_input_graph();
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  expect_refused([&] { resolve(*g, {{"X", x}}); }, {"input 'L'", "in.npz", "--seed"});

  InputSpec spec;
  spec.seed = 7;
  ResolvedInputs r = resolve(*g, {{"X", x}}, spec, /*seed_given=*/true);
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.origins[0], "from in.npz");
  EXPECT_EQ(r.origins[1], "seed 7, not in in.npz");
  // The seeded input takes N from the file's X, and is the seeded stream for its position.
  const ir::Tensor& seeded = r.values[1].tensor;
  EXPECT_EQ(seeded.shape(), (std::vector<int64_t>{3}));
  InputSpec bound = spec;
  bound.dims["N"] = 3;
  EXPECT_TRUE(testing::same_bits(seeded, make_seeded_input(declared_of(g->inputs())[1], 1, bound)));
}

TEST(ResolveInputs, WithoutAFileEveryInputIsSeeded) {
  auto g = two_input_graph();
  InputSpec spec;
  spec.seed = 3;
  spec.dims["N"] = 5;
  ResolvedInputs r = resolve(*g, {}, spec, false, "");
  EXPECT_EQ(r.origins, (std::vector<std::string>{"seed 3", "seed 3"}));
  EXPECT_EQ(r.values[0].tensor.shape(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(r.values[1].tensor.shape(), (std::vector<int64_t>{5}));
  // Seeded values are not all zeros or ones, and differ between seeds.
  spec.seed = 4;
  ResolvedInputs other = resolve(*g, {}, spec, false, "");
  EXPECT_FALSE(testing::same_bits(r.values[0].tensor, other.values[0].tensor));
}

TEST(ResolveInputs, RefusesAShapeThatContradictsDimOrShape) {
  auto g = two_input_graph();
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  ir::Tensor l = random_tensor(DType::Int64, {3}, 2, -9, 9);
  InputSpec dim;
  dim.dims["N"] = 2;
  expect_refused(
      [&] {
        resolve(*g, {{"X", x}, {"L", l}}, dim);
      },
      {"in.npz", "has shape", "('N') is 3", "contradicts --dim N=2"});
  InputSpec shape;
  shape.shapes["X"] = {5, 4};
  expect_refused(
      [&] {
        resolve(*g, {{"X", x}, {"L", l}}, shape);
      },
      {"in.npz", "'X' has shape 3x4", "contradicts --shape X=5x4"});
  // Agreeing options are fine.
  InputSpec agree;
  agree.dims["N"] = 3;
  agree.shapes["X"] = {3, 4};
  EXPECT_EQ(resolve(*g, {{"X", x}, {"L", l}}, agree).values.size(), 2u);
}

TEST(ResolveInputs, RefusesADtypeThatDiffersFromTheDeclaredOne) {
  auto g = two_input_graph();
  ir::Tensor x64 = random_tensor(DType::Float64, {3, 4}, 1);
  ir::Tensor l = random_tensor(DType::Int64, {3}, 2, -9, 9);
  expect_refused(
      [&] {
        resolve(*g, {{"X", x64}, {"L", l}});
      },
      {"in.npz", "'X' has dtype double", "input 'X' as float"});
  ir::Tensor l32 = random_tensor(DType::Int32, {3}, 2, -9, 9);
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  expect_refused(
      [&] {
        resolve(*g, {{"X", x}, {"in.L", l32}});
      },
      {"'in.L' has dtype int32", "input 'L' as int64"});
}

TEST(ResolveInputs, RefusesShapeAndDimThatNameNothing) {
  auto g = two_input_graph();
  InputSpec shape;
  shape.seed = 1;
  shape.shapes["Q"] = {2, 4};
  expect_refused([&] { resolve(*g, {}, shape, true, ""); }, {"--shape Q", "X, L"});
  InputSpec dim;
  dim.dims["batch"] = 2;
  expect_refused([&] { resolve(*g, {}, dim, true, ""); }, {"--dim batch=2", "N"});
}

TEST(ResolveInputs, ResolvedInputsRunTheModel) {
  auto g = two_input_graph();
  ir::Tensor x = random_tensor(DType::Float32, {3, 4}, 1);
  InputSpec spec;
  spec.seed = 9;
  ResolvedInputs r = resolve(*g, {{"in.X", x}}, spec, true);
  auto exe = compiler::compile(two_input_graph(), {std::make_shared<cpu::CpuBackend>()});
  std::vector<ir::Datum> out = exe->run(r.values);
  ASSERT_EQ(out.size(), 2u);
  for (int64_t i = 0; i < x.numel(); ++i)
    EXPECT_EQ(out[0].tensor.data<float>()[i], std::max(0.0f, x.data<float>()[i]));
  const ir::Tensor& l = r.values[1].tensor;
  for (int64_t i = 0; i < l.numel(); ++i)
    EXPECT_EQ(out[1].tensor.data<int64_t>()[i], -l.data<int64_t>()[i]);
}

// The CLI sees a model through the public API only: the types it declares there (ValueInfo)
// must resolve like the graph's own, including symbolic, static and unknown dims, shapeless
// inputs and sequences; and the public run_values runs what they resolve to, with statistics
// and a profile when asked.
TEST(ResolveInputs, PublicValueInfoDeclaresWhatTheGraphDeclares) {
  auto g = std::make_unique<ir::Graph>("kinds");
  ir::Value* x = g->add_input(
      "X", ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim("N"), ir::Dim(), ir::Dim(3)}));
  ir::Value* s = g->add_input("S", ir::Type::tensor(DType::Int64));  // no declared shape
  ir::Value* z = g->add_input("Z", ir::Type::tensor(DType::Float32, ir::Shape{}));  // rank 0
  ir::Value* q = g->add_input(
      "Q", ir::Type::sequence(ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim(2)})));
  g->add_output(g->add_node("Relu", "relu", {x}, {"Y"})->output(0));
  g->add_output(g->add_node("Neg", "neg", {s}, {"T"})->output(0));
  g->add_output(g->add_node("Neg", "negz", {z}, {"W"})->output(0));
  g->add_output(g->add_node("SequenceLength", "len", {q}, {"L"})->output(0));
  std::vector<Declared> from_graph = declared_of(g->inputs());
  Executable exe = Model::from_graph(std::move(g)).compile({.num_threads = 1});
  std::vector<Declared> from_api = declared_of(exe.inputs());
  ASSERT_EQ(from_api.size(), from_graph.size());
  for (size_t i = 0; i < from_api.size(); ++i) {
    EXPECT_EQ(from_api[i].name, from_graph[i].name);
    EXPECT_EQ(from_api[i].type.to_string(), from_graph[i].type.to_string()) << from_api[i].name;
  }
  InputSpec spec;
  spec.dims["N"] = 2;
  spec.shapes["X"] = {2, 5, 3};
  expect_refused([&] { resolve_input_shape(from_api[1], spec); }, {"'S'", "--shape S="});
  EXPECT_EQ(resolve_input_shape(from_api[2], spec), std::vector<int64_t>{});
  expect_refused([&] { resolve_input_shape(from_api[3], spec); }, {"'Q'", "inputs file"});

  spec.shapes["S"] = {4};
  std::vector<Datum> inputs;
  for (size_t i = 0; i < 3; ++i) inputs.push_back(make_seeded_input(from_api[i], i, spec));
  inputs.push_back(Datum::make_sequence(DType::Float32, {random_tensor(DType::Float32, {2}, 3)}));
  RunOptions options;
  options.profile = true;
  RunResult result = exe.run_values(inputs, options);
  ASSERT_EQ(result.outputs.size(), 4u);
  EXPECT_EQ(result.outputs[0].tensor.shape(), (std::vector<int64_t>{2, 5, 3}));
  EXPECT_EQ(result.outputs[3].tensor.scalar_as_int(), 1);
  EXPECT_FALSE(result.stats.shape_cache_hit);
  EXPECT_FALSE(result.stats.shape_signature.empty());
  bool whole_run = false;
  for (const ProfileEvent& e : result.profile) whole_run = whole_run || e.category == "Session";
  EXPECT_TRUE(whole_run);
  options.profile = false;
  RunResult again = exe.run_values(inputs, options);
  EXPECT_TRUE(again.stats.shape_cache_hit);
  EXPECT_TRUE(again.profile.empty());
  EXPECT_EQ(exe.num_threads(), 1);
}

}  // namespace
}  // namespace switchyard::tooling
