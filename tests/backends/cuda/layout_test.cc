// The CUDA backend's channels-last rewrite (backends/cuda/layout.cc over the shared
// backends/fusion/channels_last.cc), checked on the graph it
// produces: which nodes store their activations NHWC, where the Transposes go, and that every
// original value keeps its name, type and readers. Needs no GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/cuda/layout.h"
#include "backends/fusion/payload.h"
#include "ir/check.h"
#include "ops/shape_inference.h"
#include "support/op_test_util.h"

namespace switchyard::cuda {
namespace {

using testing::random_tensor;

ir::Type tensor(ir::DType dtype, std::vector<int64_t> dims) {
  ir::Shape s;
  for (int64_t d : dims) s.push_back(ir::Dim(d));
  return ir::Type::tensor(dtype, s);
}

std::vector<int64_t> dims_of(const ir::Value* v) {
  std::vector<int64_t> d;
  for (const ir::Dim& x : *v->type().shape) d.push_back(x.value);
  return d;
}

bool channels_last(const ir::Graph& g, const std::string& name) {
  const ir::Node* n = g.find_node(name);
  EXPECT_NE(n, nullptr) << name;
  return n && n->annotation<backends::fusion::ChannelsLast>() != nullptr;
}

size_t count_op(const ir::Graph& g, const std::string& op) {
  return static_cast<size_t>(std::count_if(g.nodes().begin(), g.nodes().end(),
                                           [&](const auto& n) { return n->op_type() == op; }));
}

// A 2x2 MaxPool named "pool" reading `x`, with `outputs` (Indices second when given).
ir::Node* max_pool_2x2(ir::Graph& g, ir::Value* x, std::vector<std::string> outputs) {
  ir::Node* pool = g.add_node("MaxPool", "pool", {x}, std::move(outputs));
  pool->set_attribute(ir::Attribute::make_ints("kernel_shape", {2, 2}));
  return pool;
}

// X -> Conv(stem, Relu) -> MaxPool -> Conv(c1, residual = pool output) -> GlobalAveragePool ->
// Flatten; c1's output is also a graph output.
struct SmallCnn {
  ir::Graph g{"cnn"};
  ir::Value* x;
  ir::Value* y2;
  ir::Value* gap;

  explicit SmallCnn(ir::DType dtype) {
    x = g.add_input("X", tensor(dtype, {2, 3, 16, 16}));
    ir::Value* w0 = g.add_constant("W0", random_tensor(dtype, {8, 3, 3, 3}, 1));
    ir::Value* w1 = g.add_constant("W1", random_tensor(dtype, {8, 8, 1, 1}, 2));
    ir::Node* stem = g.add_node("Conv", "stem", {x, w0}, {"y1"});
    stem->set_attribute(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
    auto relu = std::make_shared<backends::fusion::Epilogue>();
    relu->activation = backends::fusion::Activation::Relu;
    stem->annotate(relu);
    ir::Node* pool = max_pool_2x2(g, stem->output(0), {"p"});
    pool->set_attribute(ir::Attribute::make_ints("strides", {2, 2}));
    ir::Value* p = pool->output(0);
    ir::Node* c1 = g.add_node("Conv", "c1", {p, w1}, {"y2"});
    y2 = c1->output(0);
    gap = g.add_node("GlobalAveragePool", "gap", {y2}, {"g"})->output(0);
    ir::Value* f = g.add_node("Flatten", "flat", {gap}, {"f"})->output(0);
    g.add_output(f);
    g.add_output(y2);
    ops::infer_types(g);
    // The residual input conv fusion (fusion.h) gives a Conv: no bias, Z = the pool's output.
    c1->add_input(nullptr);
    c1->add_input(p);
  }
};

TEST(CudaChannelsLast, ConvPoolRegionHasOneTransposeInAndOnePerExit) {
  SmallCnn m(ir::DType::Float16);
  EXPECT_EQ(apply_channels_last(m.g), 4u);
  ir::verify(m.g);
  EXPECT_TRUE(channels_last(m.g, "stem"));
  EXPECT_TRUE(channels_last(m.g, "pool"));
  EXPECT_TRUE(channels_last(m.g, "c1"));
  EXPECT_TRUE(channels_last(m.g, "gap"));
  EXPECT_FALSE(channels_last(m.g, "flat"));
  // X in; c1's output (a graph output) and the pooled features (read by Flatten) out.
  EXPECT_EQ(count_op(m.g, "Transpose"), 3u);

  const ir::Node* stem = m.g.find_node("stem");
  ASSERT_EQ(stem->input(0)->producer()->op_type(), "Transpose");
  EXPECT_EQ(stem->input(0)->producer()->input(0), m.x);
  EXPECT_EQ(stem->input(0)->producer()->attr_ints("perm"), (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(dims_of(stem->input(0)), (std::vector<int64_t>{2, 16, 16, 3}));
  EXPECT_EQ(dims_of(stem->output(0)), (std::vector<int64_t>{2, 16, 16, 8}));
  // Attributes and annotations carried over.
  EXPECT_EQ(stem->attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  ASSERT_NE(stem->annotation<backends::fusion::Epilogue>(), nullptr);
  EXPECT_EQ(stem->annotation<backends::fusion::Epilogue>()->activation,
            backends::fusion::Activation::Relu);
  EXPECT_EQ(stem->annotation<backends::fusion::ChannelsLast>()->describe(), "layout=NHWC");
  EXPECT_EQ(testing::private_attributes(m.g), std::vector<std::string>{});

  // c1 reads the pool's channels-last output as X and as the residual Z.
  const ir::Node* c1 = m.g.find_node("c1");
  const ir::Node* pool = m.g.find_node("pool");
  EXPECT_EQ(c1->input(0), pool->output(0));
  EXPECT_EQ(c1->input(3), pool->output(0));
  EXPECT_EQ(dims_of(pool->output(0)), (std::vector<int64_t>{2, 8, 8, 8}));

  // The original values keep their names, NCHW types and readers, produced by Transposes back.
  EXPECT_EQ(m.g.outputs()[1], m.y2);
  EXPECT_EQ(m.y2->name(), "y2");
  ASSERT_EQ(m.y2->producer()->op_type(), "Transpose");
  EXPECT_EQ(m.y2->producer()->attr_ints("perm"), (std::vector<int64_t>{0, 3, 1, 2}));
  EXPECT_EQ(dims_of(m.y2), (std::vector<int64_t>{2, 8, 8, 8}));
  EXPECT_EQ(m.g.find_node("flat")->input(0), m.gap);
  EXPECT_EQ(m.gap->producer()->op_type(), "Transpose");
  EXPECT_EQ(dims_of(m.gap), (std::vector<int64_t>{2, 8, 1, 1}));
  EXPECT_EQ(m.g.find_value("y1"), nullptr);  // read only inside the region: gone
  // Trace names: what entered the region, and which node's result left it.
  EXPECT_EQ(stem->input(0)->producer()->name(), "X/to_nhwc");
  EXPECT_EQ(m.y2->producer()->name(), "c1/to_nchw");
  EXPECT_EQ(m.gap->producer()->name(), "gap/to_nchw");
}

TEST(CudaChannelsLast, Float32GraphsAreLeftAlone) {
  SmallCnn m(ir::DType::Float32);
  const size_t nodes = m.g.nodes().size();
  EXPECT_EQ(apply_channels_last(m.g), 0u);
  EXPECT_EQ(m.g.nodes().size(), nodes);
  EXPECT_EQ(count_op(m.g, "Transpose"), 0u);
}

TEST(CudaChannelsLast, OnlyLayoutFreeElementwiseNodesJoin) {
  // a = conv(X); b = conv(X); s = a + b (joins); t = s * scalar (joins);
  // u = t * per-channel [8,1,1] (stays NCHW: its broadcast depends on the layout);
  // v = MaxPool(X) (stays NCHW: its input is not channels-last).
  ir::Graph g("elementwise");
  const ir::DType h = ir::DType::BFloat16;
  ir::Value* x = g.add_input("X", tensor(h, {1, 4, 6, 6}));
  ir::Value* w = g.add_constant("W", random_tensor(h, {8, 4, 1, 1}, 3));
  ir::Value* scalar = g.add_constant("k", random_tensor(h, {}, 4));
  ir::Value* per_channel = g.add_constant("pc", random_tensor(h, {8, 1, 1}, 5));
  ir::Value* a = g.add_node("Conv", "ca", {x, w}, {"a"})->output(0);
  ir::Value* b = g.add_node("Conv", "cb", {x, w}, {"b"})->output(0);
  ir::Value* s = g.add_node("Add", "sum", {a, b}, {"s"})->output(0);
  ir::Value* t = g.add_node("Mul", "scale", {s, scalar}, {"t"})->output(0);
  ir::Value* u = g.add_node("Mul", "channel_scale", {t, per_channel}, {"u"})->output(0);
  ir::Node* pool = max_pool_2x2(g, x, {"v"});
  g.add_output(u);
  g.add_output(pool->output(0));
  ops::infer_types(g);

  EXPECT_EQ(apply_channels_last(g), 4u);
  ir::verify(g);
  EXPECT_TRUE(channels_last(g, "ca"));
  EXPECT_TRUE(channels_last(g, "cb"));
  EXPECT_TRUE(channels_last(g, "sum"));
  EXPECT_TRUE(channels_last(g, "scale"));
  EXPECT_FALSE(channels_last(g, "channel_scale"));
  EXPECT_FALSE(channels_last(g, "pool"));
  // Both convs share one transposed X; t goes back once for the per-channel Mul.
  EXPECT_EQ(g.find_node("ca")->input(0), g.find_node("cb")->input(0));
  EXPECT_EQ(count_op(g, "Transpose"), 2u);
  EXPECT_EQ(g.find_node("channel_scale")->input(0), t);
  EXPECT_EQ(t->producer()->op_type(), "Transpose");
}

TEST(CudaChannelsLast, EveryUnaryElementwiseOpJoins) {
  // conv -> Mish -> HardSigmoid -> Gelu -> Softsign: all layout-free (ops/op_traits.h), so the
  // region runs through them with no transpose between; PRelu with a per-channel slope [8,1,1]
  // broadcasts by layout and stays NCHW.
  ir::Graph g("activations");
  const ir::DType h = ir::DType::Float16;
  ir::Value* x = g.add_input("X", tensor(h, {1, 4, 6, 6}));
  ir::Value* w = g.add_constant("W", random_tensor(h, {8, 4, 1, 1}, 3));
  ir::Value* slope = g.add_constant("slope", random_tensor(h, {8, 1, 1}, 4));
  ir::Value* v = g.add_node("Conv", "conv", {x, w}, {"c"})->output(0);
  for (const char* op : {"Mish", "HardSigmoid", "Gelu", "Softsign"})
    v = g.add_node(op, op, {v}, {std::string(op) + "_out"})->output(0);
  g.add_output(g.add_node("PRelu", "prelu", {v, slope}, {"y"})->output(0));
  ops::infer_types(g);

  EXPECT_EQ(apply_channels_last(g), 5u);
  ir::verify(g);
  for (const char* name : {"conv", "Mish", "HardSigmoid", "Gelu", "Softsign"})
    EXPECT_TRUE(channels_last(g, name)) << name;
  EXPECT_FALSE(channels_last(g, "prelu"));
  EXPECT_EQ(count_op(g, "Transpose"), 2u);  // X in, Softsign's result out
  EXPECT_EQ(g.find_node("prelu")->input(0)->producer()->op_type(), "Transpose");
}

TEST(CudaChannelsLast, FireModuleConcatJoinsWithItsAxisRemapped) {
  // squeezenet: s = conv(X); e1 = conv1x1(s); e3 = conv3x3(s); c = Concat(e1, e3, axis 1);
  // o = conv(c). One Transpose in, one out, none around the Concat.
  ir::Graph g("fire");
  const ir::DType h = ir::DType::Float16;
  ir::Value* x = g.add_input("X", tensor(h, {1, 8, 5, 5}));
  ir::Value* ws = g.add_constant("Ws", random_tensor(h, {4, 8, 1, 1}, 8));
  ir::Value* w1 = g.add_constant("W1", random_tensor(h, {6, 4, 1, 1}, 9));
  ir::Value* w3 = g.add_constant("W3", random_tensor(h, {6, 4, 3, 3}, 10));
  ir::Value* wo = g.add_constant("Wo", random_tensor(h, {2, 12, 1, 1}, 11));
  ir::Value* sq = g.add_node("Conv", "squeeze", {x, ws}, {"s"})->output(0);
  ir::Value* e1 = g.add_node("Conv", "expand1", {sq, w1}, {"e1"})->output(0);
  ir::Node* expand3 = g.add_node("Conv", "expand3", {sq, w3}, {"e3"});
  expand3->set_attribute(ir::Attribute::make_ints("pads", {1, 1, 1, 1}));
  ir::Node* cat = g.add_node("Concat", "cat", {e1, expand3->output(0)}, {"c"});
  cat->set_attribute(ir::Attribute::make_int("axis", -3));
  ir::Value* o = g.add_node("Conv", "out", {cat->output(0), wo}, {"o"})->output(0);
  g.add_output(o);
  ops::infer_types(g);

  EXPECT_EQ(apply_channels_last(g), 5u);
  ir::verify(g);
  EXPECT_TRUE(channels_last(g, "cat"));
  EXPECT_EQ(g.find_node("cat")->attr_int("axis"), 3);
  EXPECT_EQ(dims_of(g.find_node("cat")->output(0)), (std::vector<int64_t>{1, 5, 5, 12}));
  EXPECT_EQ(count_op(g, "Transpose"), 2u);
}

TEST(CudaChannelsLast, OneDimensionalConvAndUsedIndicesStayNchw) {
  ir::Graph g("other");
  const ir::DType h = ir::DType::Float16;
  ir::Value* x = g.add_input("X", tensor(h, {1, 4, 9}));
  ir::Value* w = g.add_constant("W", random_tensor(h, {4, 4, 3}, 6));
  ir::Value* y = g.add_node("Conv", "conv1d", {x, w}, {"y"})->output(0);
  ir::Value* x2 = g.add_input("X2", tensor(h, {1, 4, 6, 6}));
  ir::Value* w2 = g.add_constant("W2", random_tensor(h, {4, 4, 1, 1}, 7));
  ir::Value* c = g.add_node("Conv", "conv2d", {x2, w2}, {"c"})->output(0);
  ir::Node* pool = max_pool_2x2(g, c, {"p", "idx"});
  g.add_output(y);
  g.add_output(pool->output(0));
  g.add_output(pool->output(1));
  ops::infer_types(g);

  EXPECT_EQ(apply_channels_last(g), 1u);
  ir::verify(g);
  EXPECT_FALSE(channels_last(g, "conv1d"));
  EXPECT_TRUE(channels_last(g, "conv2d"));
  EXPECT_FALSE(channels_last(g, "pool"));  // its Indices are read: NCHW positions
  EXPECT_EQ(g.find_node("pool")->input(0), c);
}

}  // namespace
}  // namespace switchyard::cuda
