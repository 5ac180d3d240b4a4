// GPU-only tests of the matmul family (src/backends/cuda/kernels/matmul.cc): MatMul and Gemm at
// the tf32/fp16/bf16 precisions against the cpu, TF32 used only when asked, and the fused
// epilogues (MatMul+Add+Relu/Gelu, scale folding, Gemm+Relu) through whole small graphs, and
// products that write their float32 result themselves under fp16/bf16 (no Cast after them:
// precision.h, absorb_product_casts). Every shape, transpose, C broadcast and dtype at fp32
// against a plain reference runs in the op harness (tests/harness/cases/matmul.cc), on cpu,
// sim:0 and cuda:0.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "gpu/gpu_test_util.h"
#include "ir/graph.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

using Shape = std::vector<int64_t>;

struct Shapes {
  std::vector<int64_t> a, b;
};

// numpy shapes: matrices, vectors, batches (broadcast or not), odd and larger sizes.
const std::vector<Shapes>& matmul_shapes() {
  static const std::vector<Shapes> v = {
      {{4, 5}, {5, 3}},
      {{5}, {5, 3}},
      {{4, 5}, {5}},
      {{6}, {6}},
      {{2, 4, 5}, {2, 5, 3}},
      {{2, 3, 4, 5}, {2, 3, 5, 6}},
      {{2, 4, 5}, {5, 3}},           // B broadcast: batches fold into M
      {{4, 5}, {3, 5, 2}},           // A broadcast: stride 0
      {{2, 1, 4, 5}, {3, 5, 6}},     // both broadcast: several launches
      {{3, 1, 4, 5}, {1, 2, 5, 6}},  // outer and inner broadcast
      {{2, 3, 4, 5}, {3, 5, 6}},     // B broadcast over the outer dim only
      {{7}, {2, 7, 3}},
      {{2, 3, 7}, {7}},
      {{1, 7, 13}, {13, 5}},
      {{33, 65}, {65, 17}},
  };
  return v;
}

OpCase matmul_case(const Shapes& s, DType dtype, uint64_t seed, bool constant_b = false,
                   double range = 1.0) {
  return make_case("MatMul",
                   {random_tensor(dtype, s.a, seed, -range, range),
                    random_tensor(dtype, s.b, seed + 1, -range, range)},
                   {}, 1, {false, constant_b});
}

TEST(CudaMatMul, Precisions) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 300;
  for (const Shapes& s : matmul_shapes()) {
    SCOPED_TRACE(shape_to_string(s.a) + " @ " + shape_to_string(s.b));
    expect_gpu_matches_cpu(matmul_case(s, DType::Float32, seed), 5e-3, 5e-3, "tf32");
    expect_gpu_matches_cpu(matmul_case(s, DType::Float32, seed, true), 2e-2, 2e-2, "fp16");
    expect_gpu_matches_cpu(matmul_case(s, DType::Float32, seed), 2e-2, 2e-2, "bf16");
    seed += 2;
  }
  // K = 768: values in [-0.25, 0.25] keep the rounding error of the sums well inside atol.
  OpCase big = matmul_case({{512, 768}, {768, 3072}}, DType::Float32, 9, true, 0.25);
  expect_gpu_matches_cpu(big, 5e-3, 2e-3, "tf32");
  expect_gpu_matches_cpu(big, 2e-2, 2e-2, "fp16");
  expect_gpu_matches_cpu(big, 2e-2, 2e-2, "bf16");
}

TEST(CudaMatMul, TF32IsUsedOnlyWhenAsked) {
  SY_SKIP_WITHOUT_GPU();
  // Operands with low bits that tf32 drops: fp32 must keep them (the test fails if the fp32
  // path used tf32), tf32 must stay within its own tolerance.
  Tensor a = tensor_of(DType::Float32, {1, 2}, {1.0 + std::ldexp(1.0, -20), 1.0});
  Tensor b = tensor_of(DType::Float32, {2, 1}, {1.0, -1.0});
  OpCase c = make_case("MatMul", {a, b});
  std::vector<ir::Datum> got = run_op_gpu(c, "fp32");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].tensor.data<float>()[0], static_cast<float>(std::ldexp(1.0, -20)));
  expect_gpu_matches_cpu(c, 5e-3, 5e-3, "tf32");
}

OpCase gemm_case(std::vector<int64_t> a, std::vector<int64_t> b,
                 std::optional<std::vector<int64_t>> c, bool trans_a, bool trans_b, float alpha,
                 float beta, DType dtype, uint64_t seed) {
  std::vector<std::optional<Tensor>> inputs = {random_tensor(dtype, a, seed),
                                               random_tensor(dtype, b, seed + 1)};
  if (c) inputs.emplace_back(random_tensor(dtype, *c, seed + 2));
  return make_case("Gemm", std::move(inputs),
                   {Attribute::make_int("transA", trans_a), Attribute::make_int("transB", trans_b),
                    Attribute::make_float("alpha", alpha), Attribute::make_float("beta", beta)});
}

// Every transpose with every C broadcast (none, scalar, [N], [1,N], [M,1], [M,N], [1,1]) and
// alpha/beta that take each path: bias epilogue (beta 1, row C), copied C (beta != 1), ignored C.
void check_gemm_variants(DType dtype, double rtol, double atol, const std::string& precision) {
  const int64_t m = 7, k = 13, n = 5;
  const std::vector<std::optional<std::vector<int64_t>>> cs = {std::nullopt,
                                                               std::vector<int64_t>{},
                                                               std::vector<int64_t>{n},
                                                               std::vector<int64_t>{1, n},
                                                               std::vector<int64_t>{m, 1},
                                                               std::vector<int64_t>{m, n},
                                                               std::vector<int64_t>{1, 1}};
  const std::pair<float, float> scales[] = {{1.0f, 1.0f}, {0.5f, 2.0f}, {2.0f, 1.0f}, {1.0f, 0.0f}};
  uint64_t seed = 400;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      std::vector<int64_t> a = ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k};
      std::vector<int64_t> b = tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
      for (const auto& c : cs) {
        for (auto [alpha, beta] : scales) {
          SCOPED_TRACE(fmt::format("transA {} transB {} C {} alpha {} beta {}", ta, tb,
                                   c ? shape_to_string(*c) : "none", alpha, beta));
          expect_gpu_matches_cpu(gemm_case(a, b, c, ta, tb, alpha, beta, dtype, seed), rtol, atol,
                                 precision);
          seed += 3;
        }
      }
    }
  }
}

TEST(CudaGemm, Precisions) {
  SY_SKIP_WITHOUT_GPU();
  check_gemm_variants(DType::Float32, 5e-3, 5e-3, "tf32");
  check_gemm_variants(DType::Float32, 2e-2, 2e-2, "fp16");
  check_gemm_variants(DType::Float32, 2e-2, 2e-2, "bf16");
}

// ---- Fused epilogues, through whole graphs (the CUDA partition fuses them) -------------------

// x [rows, k] @ w [k, n] (+ bias [n]) → activation; `bias_first` writes Add(bias, y).
struct ChainSpec {
  int64_t rows = 6, k = 13, n = 9;
  bool bias = true;
  bool bias_first = false;
  std::string activation;       // "", "Relu", "Gelu", "GeluTanh" (Gelu, approximate="tanh")
  bool bias_input = false;      // the bias is graph input "b", not a constant
  double x_range = 2.0;         // x in [-x_range, x_range]
  bool expose_product = false;  // the MatMul output is a graph output too (no fusion then)
  bool gemm = false;            // Gemm(x, w, bias) → activation instead of MatMul
  std::string scale;            // "", "Div" (by 8) or "Mul" (by 0.125) right after the MatMul
};

std::unique_ptr<ir::Graph> chain_graph(const ChainSpec& s, uint64_t seed) {
  auto g = std::make_unique<ir::Graph>("main");
  ir::Value* x = g->add_input("x", ir::Type::tensor(DType::Float32, ir::make_shape({s.rows, s.k})));
  ir::Value* w = g->add_constant("w", random_tensor(DType::Float32, {s.k, s.n}, seed + 1));
  ir::Value* b = s.bias_input
                     ? g->add_input("b", ir::Type::tensor(DType::Float32, ir::make_shape({s.n})))
                     : g->add_constant("b", random_tensor(DType::Float32, {s.n}, seed + 2));
  ir::Value* y = nullptr;
  std::vector<ir::Value*> outputs;
  if (s.gemm) {
    y = g->add_node("Gemm", "gemm", {x, w, s.bias ? b : nullptr}, {"y"})->output(0);
  } else {
    y = g->add_node("MatMul", "matmul", {x, w}, {"y"})->output(0);
    if (s.expose_product) outputs.push_back(y);
    if (!s.scale.empty()) {
      Tensor c(DType::Float32, {});
      c.data<float>()[0] = s.scale == "Div" ? 8.0f : 0.125f;
      y = g->add_node(s.scale, "scale", {y, g->add_constant("c", c)}, {"y_scaled"})->output(0);
    }
    if (s.bias) {
      std::vector<ir::Value*> in =
          s.bias_first ? std::vector<ir::Value*>{b, y} : std::vector<ir::Value*>{y, b};
      y = g->add_node("Add", "add", in, {"y_bias"})->output(0);
    }
  }
  if (s.activation == "GeluTanh") {
    ir::Node* act = g->add_node("Gelu", "act", {y}, {"y_act"});
    act->set_attribute(Attribute::make_string("approximate", "tanh"));
    y = act->output(0);
  } else if (!s.activation.empty()) {
    y = g->add_node(s.activation, "act", {y}, {"y_act"})->output(0);
  }
  outputs.push_back(y);
  for (ir::Value* v : outputs) g->add_output(v);
  return g;
}

using Feeds = std::map<std::string, Tensor>;
using GraphFactory = std::function<std::unique_ptr<ir::Graph>()>;

// The Cast nodes that ran on cuda:0 in one profiled run of `exe`.
int casts_on_gpu(const Executable& exe, const Feeds& feeds) {
  std::vector<Datum> inputs;
  for (const ValueInfo& in : exe.inputs()) inputs.emplace_back(feeds.at(in.name));
  RunOptions options;
  options.profile = true;
  int casts = 0;
  for (const ProfileEvent& e : exe.run_values(std::move(inputs), options).profile)
    if (e.category == "Node" && e.device == "cuda:0" && e.op == "Cast") ++casts;
  return casts;
}

// Runs `make` on the cpu and on cuda:0 at `precision` (eagerly, then captured and replayed) and
// expects every output to agree within |gpu - cpu| <= atol + rtol * |cpu|; with `casts` >= 0,
// that many Cast nodes ran on cuda:0.
void expect_graph_matches_cpu(const GraphFactory& make, const Feeds& feeds, double rtol,
                              double atol, const std::string& precision, int casts = -1) {
  Options cpu;
  cpu.compute_units = "cpu_only";
  cpu.num_threads = 2;
  Options gpu;
  gpu.device = "cuda:0";
  gpu.fallback = "strict";
  gpu.precision = precision;
  gpu.num_threads = 2;
  Feeds want = Model::from_graph(make()).compile(cpu).run(feeds);
  Executable exe = Model::from_graph(make()).compile(gpu);
  for (int run = 0; run < 3; ++run) {
    Feeds got = exe.run(feeds);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_EQ(compare_tensors(got.at(name), w, rtol, atol), "")
          << name << " at " << precision << ", run " << run;
    }
  }
  if (casts >= 0) {
    EXPECT_EQ(casts_on_gpu(exe, feeds), casts) << "at " << precision;
  }
}

Feeds chain_feeds(const ChainSpec& s, uint64_t seed) {
  Feeds feeds = {{"x", random_tensor(DType::Float32, {s.rows, s.k}, seed, -s.x_range, s.x_range)}};
  if (s.bias_input) feeds["b"] = random_tensor(DType::Float32, {s.n}, seed + 2);
  return feeds;
}

void expect_chain_matches_cpu(const ChainSpec& s, uint64_t seed, double rtol, double atol,
                              const std::string& precision = "fp32", int casts = -1) {
  expect_graph_matches_cpu([&] { return chain_graph(s, seed); }, chain_feeds(s, seed), rtol, atol,
                           precision, casts);
}

TEST(CudaMatMulFusion, BiasAndActivations) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 600;
  for (const char* act : {"", "Relu", "Gelu"}) {
    for (bool bias : {false, true}) {
      for (bool bias_first : {false, true}) {
        if (!bias && bias_first) continue;
        ChainSpec s;
        s.bias = bias;
        s.bias_first = bias_first;
        s.activation = act;
        SCOPED_TRACE(fmt::format("bias {} (first {}) activation '{}'", bias, bias_first, act));
        expect_chain_matches_cpu(s, seed, 1e-4, 1e-4);
        expect_chain_matches_cpu(s, seed, 2e-2, 2e-2, "fp16");
        expect_chain_matches_cpu(s, seed, 2e-2, 2e-2, "bf16");
        seed += 3;
      }
    }
  }
}

TEST(CudaMatMulFusion, ScaleFoldsIntoTheProduct) {
  // Attention's scores / sqrt(d): cuBLASLt's alpha, before the bias and the activation.
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 650;
  for (const char* scale : {"Div", "Mul"})
    for (bool bias : {false, true})
      for (const char* act : {"", "Relu"}) {
        ChainSpec s;
        s.scale = scale;
        s.bias = bias;
        s.activation = act;
        s.rows = 37;
        s.n = 24;
        SCOPED_TRACE(fmt::format("{} bias {} activation '{}'", scale, bias, act));
        expect_chain_matches_cpu(s, seed, 1e-4, 1e-4);
        expect_chain_matches_cpu(s, seed, 2e-2, 2e-2, "fp16");
        expect_chain_matches_cpu(s, seed, 2e-2, 2e-2, "bf16");
        seed += 3;
      }
}

TEST(CudaMatMulFusion, SharedProductIsNotAbsorbed) {
  SY_SKIP_WITHOUT_GPU();
  ChainSpec s;
  s.activation = "Relu";
  s.expose_product = true;
  expect_chain_matches_cpu(s, 700, 1e-4, 1e-4);
}

TEST(CudaMatMulFusion, LargerOddShapes) {
  SY_SKIP_WITHOUT_GPU();
  ChainSpec s;
  s.rows = 130;
  s.k = 77;
  s.n = 301;
  s.activation = "Gelu";
  expect_chain_matches_cpu(s, 710, 1e-4, 1e-4);
  s.activation = "Relu";
  expect_chain_matches_cpu(s, 720, 5e-3, 2e-2, "tf32");
}

TEST(CudaGemmFusion, Activations) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (const char* act : {"Relu", "Gelu"}) {
    for (bool bias : {false, true}) {
      ChainSpec s;
      s.gemm = true;
      s.bias = bias;
      s.activation = act;
      SCOPED_TRACE(fmt::format("bias {} activation '{}'", bias, act));
      expect_chain_matches_cpu(s, seed, 1e-4, 1e-4);
      expect_chain_matches_cpu(s, seed, 2e-2, 2e-2, "bf16");
      seed += 3;
    }
  }
}

// ---- Products writing float32 from 16-bit operands (precision.h: absorb_product_casts) ---------
// Under fp16/bf16 a product whose result leaves the partition as float32 writes it itself: the
// only Cast left on the device is the input's into 16 bits. Compared with the cpu at fp32 within
// the tolerance of CudaMatMul.Precisions.

TEST(CudaMatMulWideResult, EpiloguesWriteFloat32) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (const std::string precision : {"fp16", "bf16"}) {
    for (const char* act : {"", "Relu", "Gelu", "GeluTanh"}) {
      for (bool bias : {false, true}) {
        for (bool bias_input : {false, true}) {
          if (!bias && bias_input) continue;
          ChainSpec s;
          s.rows = 37;  // odd sizes: our epilogue's element-wise form (its 16-byte one at 64)
          s.k = 77;
          s.n = 301;
          s.x_range = 0.5;  // bf16's rounding of 77 products well inside atol
          s.bias = bias;
          s.bias_input = bias_input;  // widened on the device before the product, not folded
          s.activation = act;
          SCOPED_TRACE(fmt::format("{} bias {} (input {}) activation '{}'", precision, bias,
                                   bias_input, act));
          // The input Casts of x (and of b when it is an input); none after the product.
          expect_chain_matches_cpu(s, seed, 2e-2, 2e-2, precision, bias_input ? 2 : 1);
          s.n = 64;  // rows of a multiple of 16 bytes
          expect_chain_matches_cpu(s, seed + 1, 2e-2, 2e-2, precision, bias_input ? 2 : 1);
          seed += 3;
        }
      }
    }
    SCOPED_TRACE(precision);
    ChainSpec scaled;  // alpha folded in, then the bias
    scaled.scale = "Div";
    scaled.activation = "Relu";
    expect_chain_matches_cpu(scaled, seed += 3, 2e-2, 2e-2, precision, 1);
    for (bool bias : {false, true}) {
      ChainSpec gemm;
      gemm.gemm = true;
      gemm.bias = bias;
      gemm.activation = "Gelu";
      expect_chain_matches_cpu(gemm, seed += 3, 2e-2, 2e-2, precision, 1);
    }
  }
}

TEST(CudaMatMulWideResult, ProductWithASecondReaderKeepsItsCast) {
  SY_SKIP_WITHOUT_GPU();
  // The product is an output and read by the bias Add: it stays 16-bit, cast once for the
  // output (as is the activation's result), beside x's input Cast.
  ChainSpec s;
  s.activation = "Relu";
  s.expose_product = true;
  for (const std::string precision : {"fp16", "bf16"})
    expect_chain_matches_cpu(s, 950, 2e-2, 2e-2, precision, 3);
}

// y = op(A) @ B of two graph inputs (or B a constant), every output float32.
struct WideCase {
  Shape a, b;
  bool constant_b = false;
  std::vector<int64_t> perm_a;  // a Transpose of A folded into the product (OperandPermutes)
};

// Input A's shape: the operand's, permuted back (the Transpose by perm_a gives the operand).
Shape input_shape(const WideCase& c) {
  Shape in = c.a;
  for (size_t i = 0; i < c.perm_a.size(); ++i) in[static_cast<size_t>(c.perm_a[i])] = c.a[i];
  return in;
}

GraphFactory wide_matmul_graph(const WideCase& c, uint64_t seed) {
  return [=] {
    auto g = std::make_unique<ir::Graph>("main");
    ir::Value* a =
        g->add_input("a", ir::Type::tensor(DType::Float32, ir::make_shape(input_shape(c))));
    ir::Value* b = c.constant_b
                       ? g->add_constant("b", random_tensor(DType::Float32, c.b, seed + 1))
                       : g->add_input("b", ir::Type::tensor(DType::Float32, ir::make_shape(c.b)));
    if (!c.perm_a.empty()) {
      ir::Node* t = g->add_node("Transpose", "t", {a}, {"a_t"});
      t->set_attribute(Attribute::make_ints("perm", c.perm_a));
      a = t->output(0);
    }
    g->add_output(g->add_node("MatMul", "matmul", {a, b}, {"y"})->output(0));
    return g;
  };
}

TEST(CudaMatMulWideResult, BatchesAndOddShapesWriteFloat32) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<WideCase> cases = {
      {{33, 65}, {65, 17}},
      {{1, 7, 13}, {13, 5}, true},
      {{2, 3, 7, 13}, {13, 9}, true},             // B broadcast: batches fold into M
      {{2, 7, 13}, {2, 13, 9}},                   // strided batch
      {{4, 5}, {3, 5, 2}},                        // A broadcast: stride 0
      {{2, 1, 4, 5}, {3, 5, 6}},                  // both broadcast: several launches
      {{2, 3, 7}, {7}},                           // a vector B
      {{2, 5, 9}, {2, 9, 11}, false, {0, 2, 1}},  // A read through its permuted strides
  };
  uint64_t seed = 970;
  for (const std::string precision : {"fp16", "bf16"}) {
    for (const WideCase& c : cases) {
      SCOPED_TRACE(
          fmt::format("{} {} @ {}", precision, shape_to_string(c.a), shape_to_string(c.b)));
      Feeds feeds = {{"a", random_tensor(DType::Float32, input_shape(c), seed, -1.0, 1.0)}};
      if (!c.constant_b) feeds["b"] = random_tensor(DType::Float32, c.b, seed + 1, -1.0, 1.0);
      // The Casts of the inputs into 16 bits only.
      expect_graph_matches_cpu(wide_matmul_graph(c, seed), feeds, 2e-2, 2e-2, precision,
                               c.constant_b ? 1 : 2);
      seed += 2;
    }
  }
}

TEST(CudaGemmWideResult, EveryCWritesFloat32) {
  SY_SKIP_WITHOUT_GPU();
  // Gemm's C as a constant (widened by the pass) and as a graph input (widened on the device),
  // as a bias row (beta 1) and copied into Y (beta 0.5, [M, N] and [M, 1]): float32 results.
  const int64_t m = 7, k = 13, n = 5;
  uint64_t seed = 990;
  for (const std::string precision : {"fp16", "bf16"})
    for (bool constant_c : {false, true})
      for (const Shape& c_shape : {Shape{n}, Shape{m, n}, Shape{m, 1}})
        for (float beta : {1.0f, 0.5f}) {
          SCOPED_TRACE(fmt::format("{} C {} {} beta {}", precision, shape_to_string(c_shape),
                                   constant_c ? "constant" : "input", beta));
          auto make = [=] {
            auto g = std::make_unique<ir::Graph>("main");
            ir::Value* a =
                g->add_input("a", ir::Type::tensor(DType::Float32, ir::make_shape({m, k})));
            ir::Value* b = g->add_constant("b", random_tensor(DType::Float32, {n, k}, seed + 1));
            ir::Value* c =
                constant_c
                    ? g->add_constant("c", random_tensor(DType::Float32, c_shape, seed + 2))
                    : g->add_input("c", ir::Type::tensor(DType::Float32, ir::make_shape(c_shape)));
            ir::Node* gemm = g->add_node("Gemm", "gemm", {a, b, c}, {"y"});
            gemm->set_attribute(Attribute::make_int("transB", 1));
            gemm->set_attribute(Attribute::make_float("beta", beta));
            g->add_output(gemm->output(0));
            return g;
          };
          Feeds feeds = {{"a", random_tensor(DType::Float32, {m, k}, seed)}};
          if (!constant_c) feeds["c"] = random_tensor(DType::Float32, c_shape, seed + 2);
          expect_graph_matches_cpu(make, feeds, 2e-2, 2e-2, precision, constant_c ? 1 : 2);
          seed += 3;
        }
}

}  // namespace
}  // namespace switchyard::testing
