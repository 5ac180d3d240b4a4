// GPU-only tests of the transformer fusions in CUDA partitions (src/backends/cuda/fusion.cc):
// residual Add -> LayerNormalization (also a pre-norm stack's running sum, which the norm then
// writes), mask Add -> Softmax, Transposes folded into MatMul
// operands, MatMul + bias + GELU (exported erf and tanh chains) in the product's epilogue, and
// fused attention (fp16 and bf16), reading GPT's split QKV product and BERT's packed query, key
// and value products in place. Each graph runs on cuda:0 with fusion and without (--no-fusion)
// at fp32, fp16 and bf16, and on the cpu; the fused run must match both, and the placement report
// must name the groups that ran as one kernel (or none, where the pattern must not fire). Every op,
// shape and dtype of the fused kernels against a plain reference runs in the op harness
// (tests/harness/cases/normalization.cc, matmul.cc), on cpu, sim:0 and cuda:0.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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
  bool expose_sum = false;  // the sum is a graph output too: the norm writes it (ResidualSum)
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
  // The sum a graph output too: the pre-norm form, the norm writing the sum (compared as an
  // output); also of a residual that broadcasts (GPT's token + position embeddings [B, S, C] +
  // [1, S, C] at B > 1), which the kernel sums whole first — under fp16/bf16 in the float32 of
  // the residual stream, each operand widened as the absorbed Casts did.
  for (const LnSpec& shared :
       {LnSpec{{2, 16, 64}, {2, 16, 64}, true}, LnSpec{{2, 16, 64}, {1, 16, 64}, true},
        LnSpec{{2, 16, 64}, {64}, true}}) {
    SCOPED_TRACE("read twice: " + ir::shape_to_string(shared.a) + " + " +
                 ir::shape_to_string(shared.b));
    check_fusion(ln_graph(shared, seed),
                 {{"a", random_tensor(DType::Float32, shared.a, seed + 2)},
                  {"b", random_tensor(DType::Float32, shared.b, seed + 3)}},
                 {{"ln", "add"}});
    seed += 4;
  }
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

// GPT's causal mask as its exporters write it: each layer slices its own copy of a constant
// tril [1, 1, max, max] to the sequence on axes 2 and 3, negates it and selects -inf where the
// negation holds (Where(Not(mask), -inf, scores)). The attention reads the constant through the
// Slices, in place, and the Not flips the mask's kind. Also a slice that starts past 0 without a
// Not (the kept side selects the scores), over a symbolic sequence.
GraphFactory gpt_sliced_mask_graph(int64_t heads, int64_t dim, int64_t max_len, int64_t start,
                                   bool negate) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("gpt_sliced_mask");
    const ir::Type qkv = ir::Type::tensor(DType::Float32, ir::Shape{2, ir::Dim("seq"), heads, dim});
    ir::Value* q = g->add_input("q", qkv);
    ir::Value* qt = transpose(*g, q, {0, 2, 1, 3}, "tq");
    ir::Value* kt = transpose(*g, g->add_input("k", qkv), {0, 2, 3, 1}, "tk");
    ir::Value* vt = transpose(*g, g->add_input("v", qkv), {0, 2, 1, 3}, "tv");
    ir::Value* x = g->add_node("MatMul", "scores", {qt, kt}, {"s"})->output(0);
    x = g->add_node("Mul", "scale",
                    {x, scalar(*g, "inv_sqrt_d", 1.0f / std::sqrt(static_cast<float>(dim)))},
                    {"ss"})
            ->output(0);
    Tensor tril(DType::Bool, {1, 1, max_len, max_len});
    for (int64_t i = 0; i < max_len; ++i)
      for (int64_t j = 0; j < max_len; ++j) tril.data<bool>()[i * max_len + j] = j <= i;
    ir::Value* bias = g->add_constant("bias", tril);
    // ends = seq + start, from q's shape (run on the host).
    ir::Value* shape = g->add_node("Shape", "shape", {q}, {"q_shape"})->output(0);
    Tensor one(DType::Int64, {});
    one.data<int64_t>()[0] = 1;
    ir::Value* seq =
        g->add_node("Gather", "seq", {shape, g->add_constant("one", one)}, {"seq_len"})->output(0);
    ir::Value* seq1 = g->add_node("Unsqueeze", "seq1",
                                  {seq, g->add_constant("axis0", int64_tensor({0}))}, {"seq_1"})
                          ->output(0);
    ir::Value* starts = g->add_constant("starts", int64_tensor({start}));
    ir::Value* ends = g->add_node("Add", "ends", {seq1, starts}, {"ends_v"})->output(0);
    ir::Value* rows = g->add_node("Slice", "slice_rows",
                                  {bias, starts, ends, g->add_constant("axis2", int64_tensor({2}))},
                                  {"mask_rows"})
                          ->output(0);
    ir::Value* cond = g->add_node("Slice", "slice_cols",
                                  {rows, starts, ends, g->add_constant("axis3", int64_tensor({3})),
                                   g->add_constant("step1", int64_tensor({1}))},
                                  {"mask"})
                          ->output(0);
    ir::Value* fill = scalar(*g, "fill", -std::numeric_limits<float>::infinity());
    if (negate) {
      cond = g->add_node("Not", "not", {cond}, {"masked"})->output(0);
      ir::Node* cast = g->add_node("Cast", "cast", {cond}, {"masked_b"});
      cast->set_attribute(Attribute::make_int("to", static_cast<int64_t>(DType::Bool)));
      x = g->add_node("Where", "where", {cast->output(0), fill, x}, {"sw"})->output(0);
    } else {
      x = g->add_node("Where", "where", {cond, x, fill}, {"sw"})->output(0);
    }
    ir::Node* sm = g->add_node("Softmax", "softmax", {x}, {"p"});
    sm->set_attribute(Attribute::make_int("axis", -1));
    g->add_output(g->add_node("MatMul", "context", {sm->output(0), vt}, {"c"})->output(0));
    return g;
  };
}

TEST(CudaTransformerFusion, GptCausalMaskReadThroughItsSlices) {
  SY_SKIP_WITHOUT_GPU();
  struct Spec {
    int64_t seq, heads, dim, max_len, start;
    bool negate;
  };
  uint64_t seed = 380;
  for (const Spec& spec : {Spec{100, 4, 64, 160, 0, true}, Spec{37, 2, 64, 64, 5, false},
                           Spec{129, 2, 40, 129, 0, true}}) {
    SCOPED_TRACE(fmt::format("seq {} start {} negate {}", spec.seq, spec.start, spec.negate));
    const Shape qkv = {2, spec.seq, spec.heads, spec.dim};
    Feeds feeds = {{"q", random_tensor(DType::Float32, qkv, seed, -1.0, 1.0)},
                   {"k", random_tensor(DType::Float32, qkv, seed + 1, -1.0, 1.0)},
                   {"v", random_tensor(DType::Float32, qkv, seed + 2, -1.0, 1.0)}};
    std::vector<std::string> fused = {"context", "tv", "scores", "scale", "tq", "tk", "where"};
    if (spec.negate) fused.insert(fused.end(), {"cast", "not"});
    fused.insert(fused.end(), {"slice_cols", "slice_rows", "softmax"});
    check_fusion(gpt_sliced_mask_graph(spec.heads, spec.dim, spec.max_len, spec.start, spec.negate),
                 feeds, {{"scores", "scale", "tq", "tk"}, {"context", "tv"}}, {}, {fused});
    seed += 3;
  }
}

// ---- Q, K and V read out of one packed product --------------------------------------------------

struct PackedSpec {
  int64_t batch, seq, heads, dim;
};

// x [batch, seq, C] with symbolic batch and sequence dims, so that the head splits' targets are
// computed at run time from Shape, as the exporters write them.
ir::Type symbolic_f32(int64_t width) {
  return ir::Type::tensor(DType::Float32,
                          ir::Shape{ir::Dim("batch"), ir::Dim("seq"), ir::Dim(width)});
}

// Concat(Shape(measured)[0], Shape(measured)[1], heads, dim): the head split's target. With
// `regroup`, [2 * batch, seq / 2, heads, dim]: each sequence cut in two halves, a target only the
// run time shows is no head split (the kernel reads a dense copy then).
ir::Value* head_split_target(ir::Graph& g, ir::Value* measured, const std::string& p, int64_t heads,
                             int64_t dim, bool regroup = false) {
  ir::Value* shape = g.add_node("Shape", p + "shape", {measured}, {p + "shape_y"})->output(0);
  std::vector<ir::Value*> pieces;
  for (int64_t i = 0; i < 2; ++i) {
    const std::string tag = p + std::to_string(i);
    Tensor index(DType::Int64, {});
    index.data<int64_t>()[0] = i;
    ir::Node* gather =
        g.add_node("Gather", "gather" + tag, {shape, g.add_constant("i" + tag, index)},
                   {"gather" + tag + "_y"});
    gather->set_attribute(Attribute::make_int("axis", 0));
    ir::Value* d = gather->output(0);
    if (regroup) {
      Tensor two(DType::Int64, {});
      two.data<int64_t>()[0] = 2;
      d = g.add_node(i == 0 ? "Mul" : "Div", "regroup" + tag, {d, g.add_constant("two" + tag, two)},
                     {"regroup" + tag + "_y"})
              ->output(0);
    }
    pieces.push_back(g.add_node("Unsqueeze", "unsqueeze" + tag,
                                {d, g.add_constant("axes" + tag, int64_tensor({0}))},
                                {"unsqueeze" + tag + "_y"})
                         ->output(0));
  }
  pieces.push_back(g.add_constant(p + "heads", int64_tensor({heads})));
  pieces.push_back(g.add_constant(p + "dim", int64_tensor({dim})));
  ir::Node* concat = g.add_node("Concat", p + "cat", pieces, {p + "cat_y"});
  concat->set_attribute(Attribute::make_int("axis", 0));
  return concat->output(0);
}

// Weights of unit-variance products of x in [-1, 1]: uniform in +-sqrt(3 / rows).
Tensor weight(const Shape& shape, uint64_t seed) {
  const double a = std::sqrt(3.0 / static_cast<double>(shape.front()));
  return random_tensor(DType::Float32, shape, seed, -a, a);
}

// The attention over head splits [B, S, H, D]: GPT's (scale by 1/sqrt D, causal Where with
// cond [1, 1, S, S]) or BERT's (Div by sqrt D, additive mask [batch, 1, 1, seq]), then the head
// merge, the graph's output.
void packed_attention(ir::Graph& g, ir::Value* rq, ir::Value* rk, ir::Value* rv,
                      const PackedSpec& s, bool bert) {
  ir::Value* scores =
      g.add_node("MatMul", "scores",
                 {transpose(g, rq, {0, 2, 1, 3}, "tq"), transpose(g, rk, {0, 2, 3, 1}, "tk")},
                 {"s"})
          ->output(0);
  const float root = std::sqrt(static_cast<float>(s.dim));
  ir::Value* x = nullptr;
  if (bert) {
    x = g.add_node("Div", "scale", {scores, scalar(g, "sqrt_d", root)}, {"ss"})->output(0);
    ir::Value* m = g.add_input(
        "mask",
        ir::Type::tensor(DType::Float32, ir::Shape{ir::Dim("batch"), 1, 1, ir::Dim("seq")}));
    x = g.add_node("Add", "add_mask", {x, m}, {"sm"})->output(0);
  } else {
    x = g.add_node("Mul", "scale", {scores, scalar(g, "inv_sqrt_d", 1.0f / root)}, {"ss"})
            ->output(0);
    ir::Value* cond =
        g.add_input("cond", ir::Type::tensor(DType::Bool, ir::make_shape({1, 1, s.seq, s.seq})));
    x = g.add_node("Where", "where",
                   {cond, scalar(g, "fill", -std::numeric_limits<float>::infinity()), x}, {"sw"})
            ->output(0);
  }
  ir::Node* sm = g.add_node("Softmax", "softmax", {x}, {"p"});
  sm->set_attribute(Attribute::make_int("axis", -1));
  ir::Value* ctx =
      g.add_node("MatMul", "context", {sm->output(0), transpose(g, rv, {0, 2, 1, 3}, "tv")}, {"c"})
          ->output(0);
  g.add_output(transpose(g, ctx, {0, 2, 1, 3}, "merge"));
}

// GPT's attention as its reference model writes it: q, k, v = qkv(x).split(C, dim=2), each
// viewed as [B, S, H, D] (with `regroup` [2B, S / 2, H, D]) and transposed per head.
GraphFactory gpt_packed_graph(const PackedSpec& s, uint64_t seed, bool regroup = false) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("gpt_qkv");
    const int64_t c = s.heads * s.dim;
    ir::Value* x = g->add_input("x", symbolic_f32(c));
    ir::Value* h =
        g->add_node("MatMul", "qkv", {x, g->add_constant("w_qkv", weight({c, 3 * c}, seed))}, {"h"})
            ->output(0);
    h = g->add_node("Add", "qkv_bias",
                    {h, g->add_constant(
                            "b_qkv", random_tensor(DType::Float32, {3 * c}, seed + 1, -0.2, 0.2))},
                    {"hb"})
            ->output(0);
    ir::Node* split =
        g->add_node("Split", "split", {h, g->add_constant("sizes", int64_tensor({c, c, c}))},
                    {"part_q", "part_k", "part_v"});
    split->set_attribute(Attribute::make_int("axis", 2));
    std::vector<ir::Value*> heads;
    const char* names[] = {"rq", "rk", "rv"};
    for (size_t i = 0; i < 3; ++i)
      heads.push_back(
          g->add_node("Reshape", names[i],
                      {split->output(i), head_split_target(*g, x, std::string(names[i]) + "_",
                                                           s.heads, s.dim, regroup)},
                      {std::string(names[i]) + "_y"})
              ->output(0));
    PackedSpec attended = s;
    if (regroup) attended.seq /= 2;
    packed_attention(*g, heads[0], heads[1], heads[2], attended, false);
    return g;
  };
}

// BERT's attention as its reference model writes it: query, key and value are three products
// of x (each + bias), each viewed as [B, S, H, D] through its own Shape and transposed.
GraphFactory bert_siblings_graph(const PackedSpec& s, uint64_t seed) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("bert_qkv");
    const int64_t c = s.heads * s.dim;
    ir::Value* x = g->add_input("x", symbolic_f32(c));
    std::vector<ir::Value*> heads;
    uint64_t k = seed;
    for (const std::string p : {"q", "k", "v"}) {
      ir::Value* y = g->add_node("MatMul", p + "_mm",
                                 {x, g->add_constant("w_" + p, weight({c, c}, k))}, {p + "_mm_y"})
                         ->output(0);
      y = g->add_node(
               "Add", p + "_bias",
               {g->add_constant("b_" + p, random_tensor(DType::Float32, {c}, k + 1, -0.2, 0.2)), y},
               {p + "_bias_y"})
              ->output(0);
      heads.push_back(g->add_node("Reshape", "r" + p,
                                  {y, head_split_target(*g, y, p + "_", s.heads, s.dim)},
                                  {"r" + p + "_y"})
                          ->output(0));
      k += 2;
    }
    packed_attention(*g, heads[0], heads[1], heads[2], s, true);
    return g;
  };
}

// Like check_fusion, but at fp16 and bf16 (where the attention fuses) expects a group holding
// every name of `attention` (the attention with the Split and Reshapes it absorbed), the group
// `product` exactly when given, and, in an eager run's profile, "context" and none of `gone` on
// cuda:0 (their work done by the packed product and read in place).
void check_packed(const GraphFactory& make, const Feeds& feeds,
                  const std::vector<std::string>& attention,
                  const std::vector<std::string>& product, const std::set<std::string>& gone) {
  Feeds cpu = compile_on(make, "cpu", "fp32", true).exe.run(feeds);
  for (const std::string precision : {"fp32", "fp16", "bf16"}) {
    SCOPED_TRACE(precision);
    Compiled fused = compile_on(make, "cuda:0", precision, true);
    Compiled plain = compile_on(make, "cuda:0", precision, false);
    Feeds got = fused.exe.run(feeds);
    const Tol t = tolerance(precision);
    expect_same(got, cpu, t.rtol, t.atol, "fused cuda vs cpu");
    expect_same(got, plain.exe.run(feeds), t.rtol, t.atol, "fused vs unfused cuda");
    fused.exe.run(feeds);
    expect_same(fused.exe.run(feeds), cpu, t.rtol, t.atol, "replayed cuda vs cpu");
    if (precision == "fp32") continue;
    bool found = false;
    for (const auto& g : fused.groups)
      found = found || std::all_of(attention.begin(), attention.end(), [&](const std::string& n) {
                return std::find(g.begin(), g.end(), n) != g.end();
              });
    EXPECT_TRUE(found) << "want a group with [" << fmt::format("{}", fmt::join(attention, ","))
                       << "], got " << groups_text(fused);
    if (!product.empty()) {
      EXPECT_TRUE(has_group(fused, product))
          << "want [" << fmt::format("{}", fmt::join(product, ",")) << "], got "
          << groups_text(fused);
    }
    for (const auto& g : fused.groups)
      for (const std::string& n : g) EXPECT_EQ(n.find("/split"), std::string::npos) << n;
    Compiled eager = compile_on(make, "cuda:0", precision, true);
    std::map<std::string, ir::Datum> datum_feeds;
    for (const auto& [name, tensor] : feeds) datum_feeds[name] = ir::Datum(tensor);
    runtime::Profiler profiler;
    eager.exe.internal().run(datum_feeds, nullptr, &profiler);
    std::set<std::string> on_gpu;
    for (const runtime::ProfileEvent& e : profiler.events())
      if (e.category == "Node" && e.device == "cuda:0") on_gpu.insert(e.name);
    EXPECT_TRUE(on_gpu.count("context")) << fmt::format("{}", fmt::join(on_gpu, ","));
    for (const std::string& n : gone)
      EXPECT_FALSE(on_gpu.count(n))
          << n << " ran on cuda:0: " << fmt::format("{}", fmt::join(on_gpu, ","));
  }
}

const PackedSpec kPackedSpecs[] = {
    {1, 128, 12, 64},  // BERT-base at batch 1
    {3, 17, 2, 64},    // partial tiles, few heads
    {3, 128, 2, 40},   // a padded head dim
    {1, 17, 12, 20},   // a head dim of no 16-byte rows: the kernel's element-wise loads
};

// The causal mask of `seq` positions: true above the diagonal (where the fill goes).
Tensor causal(int64_t seq) {
  Tensor cond(DType::Bool, {1, 1, seq, seq});
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t j = 0; j < seq; ++j) cond.data<bool>()[i * seq + j] = j > i;
  return cond;
}

TEST(CudaTransformerFusion, GptSplitQkvReadInPlaceByTheAttention) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (const PackedSpec& s : kPackedSpecs) {
    SCOPED_TRACE(
        fmt::format("batch {} seq {} heads {} head dim {}", s.batch, s.seq, s.heads, s.dim));
    Feeds feeds = {
        {"x", random_tensor(DType::Float32, {s.batch, s.seq, s.heads * s.dim}, seed + 2)},
        {"cond", causal(s.seq)}};
    check_packed(gpt_packed_graph(s, seed), feeds,
                 {"context", "scores", "scale", "where", "softmax", "merge", "tq", "tk", "tv", "rq",
                  "rk", "rv", "split"},
                 {"qkv", "qkv_bias"}, {"split", "rq", "rk", "rv", "scores", "softmax", "where"});
    seed += 3;
  }
}

// The same graph whose head splits, known only at run time, turn out to be no head split
// ([2B, S / 2, H, D]): the attention reads dense copies of its columns, as the Reshapes would
// have given them.
TEST(CudaTransformerFusion, GptSplitQkvWithATargetThatIsNoHeadSplit) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 550;
  for (const PackedSpec& s : {PackedSpec{1, 128, 12, 64}, PackedSpec{3, 34, 2, 40}}) {
    SCOPED_TRACE(
        fmt::format("batch {} seq {} heads {} head dim {}", s.batch, s.seq, s.heads, s.dim));
    Feeds feeds = {
        {"x", random_tensor(DType::Float32, {s.batch, s.seq, s.heads * s.dim}, seed + 2)},
        {"cond", causal(s.seq / 2)}};
    check_packed(gpt_packed_graph(s, seed, /*regroup=*/true), feeds,
                 {"context", "scores", "scale", "where", "softmax", "merge", "tq", "tk", "tv", "rq",
                  "rk", "rv", "split"},
                 {"qkv", "qkv_bias"}, {"split", "rq", "rk", "rv"});
    seed += 3;
  }
}

TEST(CudaTransformerFusion, BertQueryKeyValueProductsPackedAndReadInPlace) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 600;
  for (const PackedSpec& s : kPackedSpecs) {
    SCOPED_TRACE(
        fmt::format("batch {} seq {} heads {} head dim {}", s.batch, s.seq, s.heads, s.dim));
    Feeds feeds = {
        {"x", random_tensor(DType::Float32, {s.batch, s.seq, s.heads * s.dim}, seed + 7)},
        {"mask", padding_mask({s.batch, 1, 1, s.seq}, seed + 8)}};
    check_packed(bert_siblings_graph(s, seed), feeds,
                 {"context", "scores", "scale", "add_mask", "softmax", "merge", "tq", "tk", "tv",
                  "rq", "rk", "rv"},
                 {"q_mm", "q_bias", "k_mm", "k_bias", "v_mm", "v_bias"},
                 {"k_mm", "v_mm", "q_mm/split", "rq", "rk", "rv", "scores", "softmax"});
    seed += 9;
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

// ---- a pre-norm (GPT-like) stack: the running sum written by the norms ----------------------

// h0 = tok + pos; per layer h = h + MatMul(Relu(MatMul(LN(h)) + b1)) + b2; out = LN(h), the
// last sum a graph output too when `expose_last`. Dims [batch, seq, width] symbolic, as GPT-2
// exports them; each running sum is read by its norm and the next residual Add.
GraphFactory pre_norm_graph(int64_t width, int layers, bool expose_last, uint64_t seed) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("pre_norm");
    ir::Value* h = g->add_node("Add", "embed",
                               {g->add_input("tok", symbolic_f32(width)),
                                g->add_input("pos", symbolic_f32(width))},
                               {"h0"})
                       ->output(0);
    ir::Value* gamma =
        g->add_constant("gamma", random_tensor(DType::Float32, {width}, seed, 0.5, 1.5));
    ir::Value* beta = g->add_constant("beta", random_tensor(DType::Float32, {width}, seed + 1));
    for (int i = 1; i <= layers; ++i) {
      const std::string k = std::to_string(i);
      const uint64_t ks = seed + 10 * static_cast<uint64_t>(i);
      ir::Value* y =
          g->add_node("LayerNormalization", "ln" + k, {h, gamma, beta}, {"y" + k})->output(0);
      auto dense = [&](ir::Value* x, const std::string& name, int64_t in, int64_t out, uint64_t s) {
        ir::Value* p =
            g->add_node("MatMul", name, {x, g->add_constant(name + "_w", weight({in, out}, s))},
                        {name + "_y"})
                ->output(0);
        ir::Value* b =
            g->add_constant(name + "_b", random_tensor(DType::Float32, {out}, s + 1, -0.2, 0.2));
        return g->add_node("Add", name + "_bias", {p, b}, {name + "_by"})->output(0);
      };
      ir::Value* u = dense(y, "fc" + k, width, 2 * width, ks);
      u = g->add_node("Relu", "relu" + k, {u}, {"relu" + k + "_y"})->output(0);
      ir::Value* f = dense(u, "proj" + k, 2 * width, width, ks + 2);
      h = g->add_node("Add", "add" + k, {h, f}, {"h" + k})->output(0);
    }
    ir::Node* ln = g->add_node("LayerNormalization", "ln_f", {h, gamma, beta}, {"out"});
    ln->set_attribute(Attribute::make_float("epsilon", 1e-5f));
    g->add_output(ln->output(0));
    if (expose_last) g->add_output(h);
    return g;
  };
}

TEST(CudaTransformerFusion, PreNormRunningSumWrittenByTheNorms) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 700;
  // GPT-2's width (the row kernel's 16-byte form) and an odd one (its scalar form).
  for (const auto& [width, batch, seq] :
       std::vector<std::array<int64_t, 3>>{{768, 2, 16}, {100, 3, 7}}) {
    for (bool expose_last : {false, true}) {
      SCOPED_TRACE(fmt::format("width {}{}", width, expose_last ? ", last sum exposed" : ""));
      GraphFactory make = pre_norm_graph(width, 2, expose_last, seed);
      Feeds feeds = {
          {"tok", random_tensor(DType::Float32, {batch, seq, width}, seed + 2, -2.0, 2.0)},
          {"pos", random_tensor(DType::Float32, {batch, seq, width}, seed + 3, -1.0, 1.0)}};
      check_fusion(make, feeds, {{"ln1", "embed"}, {"ln2", "add1"}, {"ln_f", "add2"}});
      // No residual Add runs: the norms write the sums (an eager run's profile, every precision).
      for (const std::string precision : {"fp32", "fp16", "bf16"}) {
        Compiled fused = compile_on(make, "cuda:0", precision, true);
        std::map<std::string, ir::Datum> datum_feeds;
        for (const auto& [name, t] : feeds) datum_feeds[name] = ir::Datum(t);
        runtime::Profiler profiler;
        fused.exe.internal().run(datum_feeds, nullptr, &profiler);
        std::set<std::string> on_gpu;
        for (const runtime::ProfileEvent& e : profiler.events())
          if (e.category == "Node" && e.device == "cuda:0") on_gpu.insert(e.name);
        for (const char* gone : {"embed", "add1", "add2"})
          EXPECT_FALSE(on_gpu.count(gone))
              << precision << ": " << gone << " ran: " << fmt::format("{}", fmt::join(on_gpu, ","));
        for (const char* norm : {"ln1", "ln2", "ln_f"})
          EXPECT_TRUE(on_gpu.count(norm)) << precision << ": " << norm;
      }
      seed += 50;
    }
  }
}

}  // namespace
}  // namespace switchyard::testing
