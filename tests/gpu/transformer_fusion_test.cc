// GPU-only tests of the transformer fusions in CUDA partitions (src/backends/cuda/fusion.cc):
// residual Add -> LayerNormalization, mask Add -> Softmax, Transposes folded into MatMul
// operands, MatMul + bias + GELU (exported erf and tanh chains) in the product's epilogue, and
// fused attention (fp16 and bf16). Each graph runs on cuda:0 with fusion and without (--no-fusion)
// at fp32, fp16 and bf16, and on the cpu; the fused run must match both, and the placement report
// must name the groups that ran as one kernel (or none, where the pattern must not fire). Every op,
// shape and dtype of the fused kernels against a plain reference runs in the op harness
// (tests/harness/cases/normalization.cc, matmul.cc), on cpu, sim:0 and cuda:0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "ir/graph.h"
#include "runtime/profiler.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

using Shape = std::vector<int64_t>;
using GraphFactory = std::function<std::unique_ptr<ir::Graph>()>;
using Feeds = std::map<std::string, Tensor>;

ir::Type f32(const Shape& shape) { return ir::Type::tensor(DType::Float32, ir::make_shape(shape)); }

ir::Value* scalar(ir::Graph& g, const std::string& name, float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return g.add_constant(name, t);
}

ir::Value* transpose(ir::Graph& g, ir::Value* x, Shape perm, const std::string& name) {
  ir::Node* t = g.add_node("Transpose", name, {x}, {name + "_y"});
  t->set_attribute(Attribute::make_ints("perm", std::move(perm)));
  return t->output(0);
}

struct Compiled {
  Executable exe;
  std::vector<std::vector<std::string>> groups;  // the report's fusions on cuda:0
};

Compiled compile_on(const GraphFactory& make, const std::string& device,
                    const std::string& precision, bool fusion) {
  Options o;
  o.num_threads = 2;
  o.fusion = fusion;
  if (device == "cpu") {
    o.compute_units = "cpu_only";
  } else {
    o.device = device;
    o.fallback = "strict";
    o.precision = precision;
  }
  Compiled c{Model::from_graph(make()).compile(o), {}};
  for (const placement::FusionInfo& f : c.exe.internal().placement_report().fusions)
    if (f.device == "cuda:0") c.groups.push_back(f.nodes);
  return c;
}

bool has_group(const Compiled& c, const std::vector<std::string>& members) {
  for (const auto& g : c.groups)
    if (g == members) return true;
  return false;
}

std::string groups_text(const Compiled& c) {
  std::string s;
  for (const auto& g : c.groups) s += "[" + fmt::format("{}", fmt::join(g, ",")) + "] ";
  return s;
}

// |a - b| <= atol + rtol * |b| for every output of two runs.
void expect_same(const Feeds& got, const Feeds& want, double rtol, double atol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, w] : want) {
    ASSERT_TRUE(got.count(name)) << what << ": " << name;
    EXPECT_EQ(compare_tensors(got.at(name), w, rtol, atol), "") << what << ": " << name;
  }
}

struct Tol {
  double rtol, atol;
};
Tol tolerance(const std::string& precision) {
  if (precision == "fp32") return {1e-4, 1e-4};
  return {3e-2, 3e-2};  // 16-bit storage of every intermediate
}

// Runs `make` on the cpu and on cuda:0 fused and unfused at fp32, fp16 and bf16; checks the
// results agree and that each fused compile reported `groups` (each exactly; at fp16 and bf16
// `groups16` when given) and no group containing one of the names in `none`.
void check_fusion(const GraphFactory& make, const Feeds& feeds,
                  const std::vector<std::vector<std::string>>& groups,
                  const std::set<std::string>& none = {},
                  const std::vector<std::vector<std::string>>& groups16 = {}) {
  Feeds cpu = compile_on(make, "cpu", "fp32", true).exe.run(feeds);
  for (const std::string precision : {"fp32", "fp16", "bf16"}) {
    SCOPED_TRACE(precision);
    Compiled fused = compile_on(make, "cuda:0", precision, true);
    Compiled plain = compile_on(make, "cuda:0", precision, false);
    EXPECT_TRUE(plain.groups.empty()) << groups_text(plain);
    Feeds got = fused.exe.run(feeds);
    Feeds base = plain.exe.run(feeds);
    const Tol t = tolerance(precision);
    expect_same(got, cpu, t.rtol, t.atol, "fused cuda vs cpu");
    expect_same(got, base, t.rtol, t.atol, "fused vs unfused cuda");
    // The second run is captured into a CUDA graph and the third replays it (buffers, and so
    // cuBLASLt's alignment-keyed algorithms, may differ from the eager run's).
    fused.exe.run(feeds);
    expect_same(fused.exe.run(feeds), cpu, t.rtol, t.atol, "replayed cuda vs cpu");
    for (const auto& g : precision == "fp32" || groups16.empty() ? groups : groups16)
      EXPECT_TRUE(has_group(fused, g))
          << "want [" << fmt::format("{}", fmt::join(g, ",")) << "], got " << groups_text(fused);
    for (const auto& g : fused.groups)
      for (const std::string& n : g)
        EXPECT_FALSE(none.count(n)) << n << " was fused: " << groups_text(fused);
  }
}

// ---- residual Add -> LayerNormalization ------------------------------------------------------

struct LnSpec {
  Shape a, b;
  bool expose_sum = false;  // the sum is a graph output too: no fusion
};

GraphFactory ln_graph(const LnSpec& s, uint64_t seed) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("residual_ln");
    ir::Value* a = g->add_input("a", f32(s.a));
    ir::Value* b = g->add_input("b", f32(s.b));
    ir::Value* sum = g->add_node("Add", "add", {a, b}, {"sum"})->output(0);
    const int64_t cols = std::max(s.a.back(), s.b.back());
    ir::Value* scale =
        g->add_constant("scale", random_tensor(DType::Float32, {cols}, seed, 0.5, 1.5));
    ir::Value* bias = g->add_constant("bias", random_tensor(DType::Float32, {cols}, seed + 1));
    ir::Node* ln = g->add_node("LayerNormalization", "ln", {sum, scale, bias}, {"y"});
    ln->set_attribute(Attribute::make_float("epsilon", 1e-12f));
    g->add_output(ln->output(0));
    if (s.expose_sum) g->add_output(sum);
    return g;
  };
}

TEST(CudaTransformerFusion, ResidualAddLayerNorm) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  // BERT's rows (in the kernel), long rows and broadcast sums (summed first).
  for (const LnSpec& s : {LnSpec{{2, 128, 768}, {2, 128, 768}}, LnSpec{{3, 7, 1500}, {3, 7, 1500}},
                          LnSpec{{1, 5, 64}, {3, 5, 64}}, LnSpec{{3, 5, 64}, {64}}}) {
    SCOPED_TRACE(ir::shape_to_string(s.a) + " + " + ir::shape_to_string(s.b));
    check_fusion(ln_graph(s, seed),
                 {{"a", random_tensor(DType::Float32, s.a, seed + 2, -2.0, 2.0)},
                  {"b", random_tensor(DType::Float32, s.b, seed + 3, -2.0, 2.0)}},
                 {{"ln", "add"}});
    seed += 4;
  }
  LnSpec shared{{2, 16, 64}, {2, 16, 64}, true};
  check_fusion(ln_graph(shared, seed),
               {{"a", random_tensor(DType::Float32, shared.a, seed + 2)},
                {"b", random_tensor(DType::Float32, shared.b, seed + 3)}},
               {}, {"add"});
}

// ---- mask Add -> Softmax ---------------------------------------------------------------------

GraphFactory softmax_graph(const Shape& x, const Shape& m, int64_t axis) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("masked_softmax");
    ir::Value* xv = g->add_input("x", f32(x));
    ir::Value* mv = g->add_input("m", f32(m));
    ir::Value* sum = g->add_node("Add", "add", {xv, mv}, {"sum"})->output(0);
    ir::Node* sm = g->add_node("Softmax", "softmax", {sum}, {"y"});
    sm->set_attribute(Attribute::make_int("axis", axis));
    g->add_output(sm->output(0));
    return g;
  };
}

// An exported additive mask: 0 where attended, float32's lowest where padded (the last quarter).
Tensor padding_mask(const Shape& shape, uint64_t seed) {
  Tensor m = random_tensor(DType::Float32, shape, seed, -1.0, 0.0);
  const int64_t len = shape.back();
  for (int64_t i = 0; i < m.numel(); ++i)
    if (i % len >= len - len / 4) m.data<float>()[i] = std::numeric_limits<float>::lowest();
  return m;
}

TEST(CudaTransformerFusion, MaskAddSoftmax) {
  SY_SKIP_WITHOUT_GPU();
  struct Spec {
    Shape x, m;
    int64_t axis;
    bool fuses;  // fuse_softmax_mask fires (the kernel may still sum first)
  };
  uint64_t seed = 200;
  for (const Spec& s :
       {Spec{{2, 12, 128, 128}, {2, 1, 1, 128}, -1, true},
        Spec{{2, 4, 33, 33}, {1, 1, 33, 33}, -1, true}, Spec{{2, 3, 2000}, {2, 1, 2000}, -1, true},
        Spec{{1, 3, 8, 8}, {2, 1, 8, 8}, -1, true}, Spec{{2, 3, 8}, {2, 1, 8}, 1, false}}) {
    SCOPED_TRACE(ir::shape_to_string(s.x) + " + " + ir::shape_to_string(s.m));
    Feeds feeds = {{"x", random_tensor(DType::Float32, s.x, seed, -4.0, 4.0)},
                   {"m", padding_mask(s.m, seed + 1)}};
    if (s.fuses)
      check_fusion(softmax_graph(s.x, s.m, s.axis), feeds, {{"softmax", "add"}});
    else
      check_fusion(softmax_graph(s.x, s.m, s.axis), feeds, {}, {"add", "softmax"});
    seed += 2;
  }
}

// ---- BERT's attention: head split, scaled scores, mask, softmax, context, head merge --------

struct AttentionSpec {
  int64_t batch = 1, seq = 128, heads = 12, head_dim = 64;
  bool mask = true;
};

// q, k, v [B, S, H, D] -> Transposes -> MatMul -> Div(sqrt D) -> Add(mask [B,1,1,S]) ->
// Softmax -> MatMul(v) -> Transpose back to [B, S, H, D], as the reference BERT exports it.
GraphFactory attention_graph(const AttentionSpec& s) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("attention");
    const Shape qkv = {s.batch, s.seq, s.heads, s.head_dim};
    ir::Value* q = g->add_input("q", f32(qkv));
    ir::Value* k = g->add_input("k", f32(qkv));
    ir::Value* v = g->add_input("v", f32(qkv));
    ir::Value* qt = transpose(*g, q, {0, 2, 1, 3}, "tq");
    ir::Value* kt = transpose(*g, k, {0, 2, 3, 1}, "tk");
    ir::Value* vt = transpose(*g, v, {0, 2, 1, 3}, "tv");
    ir::Value* scores = g->add_node("MatMul", "scores", {qt, kt}, {"s"})->output(0);
    ir::Value* scaled =
        g->add_node("Div", "scale",
                    {scores, scalar(*g, "sqrt_d", std::sqrt(static_cast<float>(s.head_dim)))},
                    {"ss"})
            ->output(0);
    if (s.mask) {
      ir::Value* m = g->add_input("mask", f32({s.batch, 1, 1, s.seq}));
      scaled = g->add_node("Add", "add_mask", {scaled, m}, {"sm"})->output(0);
    }
    ir::Node* sm = g->add_node("Softmax", "softmax", {scaled}, {"p"});
    sm->set_attribute(Attribute::make_int("axis", -1));
    ir::Value* ctx = g->add_node("MatMul", "context", {sm->output(0), vt}, {"c"})->output(0);
    g->add_output(transpose(*g, ctx, {0, 2, 1, 3}, "merge"));
    return g;
  };
}

Feeds attention_feeds(const AttentionSpec& s, uint64_t seed) {
  const Shape qkv = {s.batch, s.seq, s.heads, s.head_dim};
  Feeds f = {{"q", random_tensor(DType::Float32, qkv, seed, -1.0, 1.0)},
             {"k", random_tensor(DType::Float32, qkv, seed + 1, -1.0, 1.0)},
             {"v", random_tensor(DType::Float32, qkv, seed + 2, -1.0, 1.0)}};
  if (s.mask) f["mask"] = padding_mask({s.batch, 1, 1, s.seq}, seed + 3);
  return f;
}

// At fp32 the step-1 fusions (cuBLASLt reads the head split in place at batch 1; matmul.cc
// copies it first at batch 4); at fp16 and bf16 the whole attention is one kernel.
TEST(CudaTransformerFusion, AttentionTransposesScaleAndMask) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 300;
  for (int64_t batch : {1, 4}) {
    for (bool mask : {true, false}) {
      AttentionSpec s;
      s.batch = batch;
      s.mask = mask;
      SCOPED_TRACE(fmt::format("batch {} mask {}", batch, mask));
      std::vector<std::vector<std::string>> fp32 = {
          {"scores", "scale", "tq", "tk"}, {"context", "tv"}, {"softmax", "add_mask"}};
      std::vector<std::string> fused = {"context", "tv",      "scores",   "scale", "tq",
                                        "tk",      "softmax", "add_mask", "merge"};
      if (!mask) {
        fp32.pop_back();
        fused.erase(std::find(fused.begin(), fused.end(), "add_mask"));
      }
      check_fusion(attention_graph(s), attention_feeds(s, seed), fp32, {}, {fused});
      seed += 4;
    }
  }
}

// The same graph where the fused kernel's tiles are cut short (sequences of 1, 17, 129 and 300
// against its 16 query rows per warp and 64 keys per tile), its head dims padded (32, 80: 96)
// and the widest (128), at batch 1 and 3 and 1, 2 and 12 heads.
TEST(CudaTransformerFusion, AttentionPartialTilesAndPaddedHeadDims) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 320;
  for (const AttentionSpec& s :
       {AttentionSpec{3, 129, 2, 80, true}, AttentionSpec{1, 17, 12, 32, true},
        AttentionSpec{2, 300, 1, 128, false}, AttentionSpec{1, 1, 12, 64, true}}) {
    SCOPED_TRACE(fmt::format("batch {} seq {} heads {} head dim {} mask {}", s.batch, s.seq,
                             s.heads, s.head_dim, s.mask));
    std::vector<std::vector<std::string>> fp32 = {
        {"scores", "scale", "tq", "tk"}, {"context", "tv"}, {"softmax", "add_mask"}};
    std::vector<std::string> fused = {"context", "tv",      "scores",   "scale", "tq",
                                      "tk",      "softmax", "add_mask", "merge"};
    if (!s.mask) {
      fp32.pop_back();
      fused.erase(std::find(fused.begin(), fused.end(), "add_mask"));
    }
    check_fusion(attention_graph(s), attention_feeds(s, seed), fp32, {}, {fused});
    seed += 4;
  }
}

// GPT's attention: q, k, v [B, S, H, D] split into heads, scores * 1/sqrt(D), the causal mask as
// Where(cond, -inf, .) with cond [1, 1, S, S], softmax, context [B, H, S, D] (no merge). Also at
// a head dim the tensor-core kernel does not take (160: the per-row kernel), one it pads (40),
// sequences past two key tiles (129) and within one query tile (16), 12 heads.
GraphFactory gpt_attention_graph(int64_t batch, int64_t seq, int64_t heads, int64_t dim) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("gpt_attention");
    const Shape qkv = {batch, seq, heads, dim};
    ir::Value* qt = transpose(*g, g->add_input("q", f32(qkv)), {0, 2, 1, 3}, "tq");
    ir::Value* kt = transpose(*g, g->add_input("k", f32(qkv)), {0, 2, 3, 1}, "tk");
    ir::Value* vt = transpose(*g, g->add_input("v", f32(qkv)), {0, 2, 1, 3}, "tv");
    ir::Value* s = g->add_node("MatMul", "scores", {qt, kt}, {"s"})->output(0);
    ir::Value* x =
        g->add_node("Mul", "scale",
                    {s, scalar(*g, "inv_sqrt_d", 1.0f / std::sqrt(static_cast<float>(dim)))},
                    {"ss"})
            ->output(0);
    ir::Value* cond =
        g->add_input("cond", ir::Type::tensor(DType::Bool, ir::make_shape({1, 1, seq, seq})));
    ir::Value* fill = scalar(*g, "fill", -std::numeric_limits<float>::infinity());
    x = g->add_node("Where", "where", {cond, fill, x}, {"sw"})->output(0);
    ir::Node* sm = g->add_node("Softmax", "softmax", {x}, {"p"});
    sm->set_attribute(Attribute::make_int("axis", -1));
    g->add_output(g->add_node("MatMul", "context", {sm->output(0), vt}, {"c"})->output(0));
    return g;
  };
}

TEST(CudaTransformerFusion, GptCausalAttention) {
  SY_SKIP_WITHOUT_GPU();
  struct Spec {
    int64_t batch, seq, heads, dim;
  };
  uint64_t seed = 350;
  for (const Spec& spec :
       {Spec{2, 100, 4, 64}, Spec{2, 100, 4, 160}, Spec{3, 129, 2, 40}, Spec{1, 16, 12, 96}}) {
    const int64_t batch = spec.batch, seq = spec.seq, heads = spec.heads, dim = spec.dim;
    SCOPED_TRACE(fmt::format("batch {} seq {} heads {} head dim {}", batch, seq, heads, dim));
    const Shape qkv = {batch, seq, heads, dim};
    Tensor cond(DType::Bool, {1, 1, seq, seq});
    for (int64_t i = 0; i < seq; ++i)
      for (int64_t j = 0; j < seq; ++j) cond.data<bool>()[i * seq + j] = j > i;
    Feeds feeds = {{"q", random_tensor(DType::Float32, qkv, seed, -1.0, 1.0)},
                   {"k", random_tensor(DType::Float32, qkv, seed + 1, -1.0, 1.0)},
                   {"v", random_tensor(DType::Float32, qkv, seed + 2, -1.0, 1.0)},
                   {"cond", cond}};
    check_fusion(gpt_attention_graph(batch, seq, heads, dim), feeds,
                 {{"scores", "scale", "tq", "tk"}, {"context", "tv"}}, {},
                 {{"context", "tv", "scores", "scale", "tq", "tk", "where", "softmax"}});
    seed += 3;
  }
}

// ---- MatMul + bias + GELU, the exported chains -------------------------------------------------

// x [2, 16, 64] @ w [64, 256] + b, then the exported GELU chain: erf (BERT: Div(sqrt 2) -> Erf
// -> Add 1 -> Mul x -> Mul 0.5) or tanh (GPT-2: x*x*x, 0.044715, sqrt(2/pi), Tanh, 1, x, 0.5).
GraphFactory gelu_mlp_graph(bool tanh_form, uint64_t seed) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("mlp");
    ir::Value* x = g->add_input("x", f32({2, 16, 64}));
    ir::Value* w = g->add_constant("w", random_tensor(DType::Float32, {64, 256}, seed, -0.3, 0.3));
    ir::Value* b = g->add_constant("b", random_tensor(DType::Float32, {256}, seed + 1));
    ir::Value* y = g->add_node("MatMul", "matmul", {x, w}, {"y"})->output(0);
    ir::Value* h = g->add_node("Add", "bias", {b, y}, {"h"})->output(0);
    auto op = [&](const char* type, const std::string& name, std::vector<ir::Value*> in) {
      return g->add_node(type, name, std::move(in), {name + "_y"})->output(0);
    };
    ir::Value* u = nullptr;
    if (tanh_form) {
      ir::Value* sq = op("Mul", "sq", {h, h});
      ir::Value* cube = op("Mul", "cube", {h, sq});
      ir::Value* c = op("Mul", "c", {scalar(*g, "k1", 0.044715f), cube});
      ir::Value* inner = op("Add", "inner", {h, c});
      ir::Value* s = op("Mul", "s", {scalar(*g, "k0", 0.7978845608f), inner});
      ir::Value* t = op("Tanh", "tanh", {s});
      u = op("Add", "one", {scalar(*g, "k2", 1.0f), t});
    } else {
      ir::Value* d = op("Div", "div", {h, scalar(*g, "sqrt2", 1.4142135f)});
      ir::Value* e = op("Erf", "erf", {d});
      u = op("Add", "one", {e, scalar(*g, "k2", 1.0f)});
    }
    ir::Value* xu = op("Mul", "xu", {h, u});
    g->add_output(op("Mul", "half", {xu, scalar(*g, "k3", 0.5f)}));
    return g;
  };
}

TEST(CudaTransformerFusion, MatMulBiasGeluChainsBecomeTheEpilogue) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 400;
  for (bool tanh_form : {false, true}) {
    SCOPED_TRACE(tanh_form ? "tanh GELU" : "erf GELU");
    std::vector<std::string> group = {"matmul", "bias"};
    const std::vector<std::string> chain =
        tanh_form
            ? std::vector<std::string>{"sq", "cube", "c", "inner", "s", "tanh", "one", "xu", "half"}
            : std::vector<std::string>{"div", "erf", "one", "xu", "half"};
    group.insert(group.end(), chain.begin(), chain.end());
    GraphFactory make = gelu_mlp_graph(tanh_form, seed);
    Feeds feeds = {{"x", random_tensor(DType::Float32, {2, 16, 64}, seed + 2, -1.0, 1.0)}};
    check_fusion(make, feeds, {group});
    // One kernel on the device: the product with its epilogue (cuBLASLt's GELU_BIAS for the
    // tanh form; for the erf form our activation kernel after it, in the same node).
    Compiled fused = compile_on(make, "cuda:0", "fp32", true);
    std::map<std::string, ir::Datum> datum_feeds;
    for (const auto& [name, t] : feeds) datum_feeds[name] = ir::Datum(t);
    runtime::Profiler profiler;
    fused.exe.internal().run(datum_feeds, nullptr, &profiler);
    std::set<std::string> on_gpu;
    for (const runtime::ProfileEvent& e : profiler.events())
      if (e.category == "Node" && e.device == "cuda:0") on_gpu.insert(e.name);
    EXPECT_EQ(on_gpu, std::set<std::string>{"matmul"});
    seed += 3;
  }
}

}  // namespace
}  // namespace switchyard::testing
