// The executable: thread-safe runs at different shapes, liveness-based buffer reuse with peak
// bytes reported, a bounded shape-signature cache, input checks.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "compiler/compiler.h"
#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::runtime {
namespace {

using testing::random_tensor;

std::vector<std::shared_ptr<const backends::Backend>> cpu_only() {
  return {std::make_shared<cpu::CpuBackend>()};
}

// Y = Relu(X @ W + B), X float[N,K], W [K,M], B [M].
std::unique_ptr<ir::Graph> dense_graph(const ir::Tensor& w, const ir::Tensor& b) {
  auto g = std::make_unique<ir::Graph>("dense");
  ir::Value* x = g->add_input(
      "X", ir::Type::tensor(ir::DType::Float32, ir::Shape{ir::Dim("N"), ir::Dim(w.dim(0))}));
  ir::Value* wv = g->add_constant("W", w);
  ir::Value* bv = g->add_constant("B", b);
  ir::Node* mm = g->add_node("MatMul", "mm", {x, wv}, {"xw"});
  ir::Node* add = g->add_node("Add", "add", {mm->output(0), bv}, {"xwb"});
  ir::Node* relu = g->add_node("Relu", "relu", {add->output(0)}, {"Y"});
  g->add_output(relu->output(0));
  return g;
}

std::vector<float> dense_reference(const ir::Tensor& x, const ir::Tensor& w, const ir::Tensor& b) {
  int64_t n = x.dim(0), k = w.dim(0), m = w.dim(1);
  std::vector<float> y(static_cast<size_t>(n * m));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double acc = b.data<float>()[j];
      for (int64_t p = 0; p < k; ++p)
        acc += static_cast<double>(x.data<float>()[i * k + p]) * w.data<float>()[p * m + j];
      y[static_cast<size_t>(i * m + j)] = static_cast<float>(std::max(acc, 0.0));
    }
  return y;
}

TEST(Executable, RunsConcurrentlyFromFourThreadsAtDifferentShapes) {
  ir::Tensor w = random_tensor(ir::DType::Float32, {64, 48}, 1);
  ir::Tensor b = random_tensor(ir::DType::Float32, {48}, 2);
  compiler::CompileOptions options;
  options.num_threads = 1;
  options.poison_buffers = true;
  auto exe = compiler::compile(dense_graph(w, b), cpu_only(), options);
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int iter = 0; iter < 25; ++iter) {
          int64_t n = 1 + (t * 7 + iter) % 9;
          ir::Tensor x =
              random_tensor(ir::DType::Float32, {n, 64}, static_cast<uint64_t>(100 * t + iter));
          auto out = exe->run(std::vector<ir::Datum>{ir::Datum(x)});
          std::vector<float> want = dense_reference(x, w, b);
          const ir::Tensor& y = out[0].tensor;
          if (y.shape() != std::vector<int64_t>{n, 48}) {
            failures[static_cast<size_t>(t)] = "wrong shape " + ir::shape_to_string(y.shape());
            return;
          }
          for (int64_t i = 0; i < y.numel(); ++i) {
            float got = y.data<float>()[i];
            float exp = want[static_cast<size_t>(i)];
            if (std::fabs(got - exp) > 1e-4f * (1 + std::fabs(exp))) {
              failures[static_cast<size_t>(t)] =
                  fmt::format("thread {} iter {} [{}]: {} != {}", t, iter, i, got, exp);
              return;
            }
          }
        }
      } catch (const std::exception& e) {
        failures[static_cast<size_t>(t)] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

TEST(Executable, ReusesBuffersByLivenessAndReportsPeak) {
  // A chain of 12 elementwise ops on a 1 MB tensor: with liveness-based reuse the peak holds a
  // few buffers, not twelve.
  auto g = std::make_unique<ir::Graph>("chain");
  ir::Value* v =
      g->add_input("X", ir::Type::tensor(ir::DType::Float32, ir::make_shape({256, 1024})));
  const char* chain[] = {"Neg", "Sigmoid", "Neg", "Abs",  "Sqrt", "Neg",
                         "Exp", "Neg",     "Abs", "Relu", "Neg",  "Abs"};
  for (int i = 0; i < 12; ++i)
    v = g->add_node(chain[i], "", {v}, {"v" + std::to_string(i)})->output(0);
  g->add_output(v);
  auto exe = compiler::compile(std::move(g), cpu_only(), {});
  ir::Tensor x = random_tensor(ir::DType::Float32, {256, 1024}, 3);
  RunStats stats;
  auto out = exe->run(std::vector<ir::Datum>{ir::Datum(x)}, &stats);
  const size_t one = 256 * 1024 * sizeof(float);
  EXPECT_GE(stats.peak_bytes, one);
  EXPECT_LE(stats.peak_bytes, 3 * one) << "peak " << stats.peak_bytes;
  for (int64_t i = 0; i < x.numel(); i += 997) {
    // Neg, Sigmoid, Neg, Abs, Sqrt, Neg, Exp, then Neg/Abs/Relu/Neg/Abs leave it unchanged.
    double r =
        std::exp(-std::sqrt(1.0 / (1.0 + std::exp(static_cast<double>(x.data<float>()[i])))));
    EXPECT_NEAR(out[0].tensor.data<float>()[i], r, 1e-6);
  }
}

TEST(Executable, ShapeCacheIsBoundedAndHits) {
  ir::Tensor w = random_tensor(ir::DType::Float32, {8, 4}, 1);
  ir::Tensor b = random_tensor(ir::DType::Float32, {4}, 2);
  compiler::CompileOptions options;
  options.shape_cache_capacity = 3;
  auto exe = compiler::compile(dense_graph(w, b), cpu_only(), options);
  RunStats stats;
  for (int64_t n = 1; n <= 6; ++n)
    exe->run(std::vector<ir::Datum>{ir::Datum(random_tensor(ir::DType::Float32, {n, 8}, 5))},
             &stats);
  EXPECT_FALSE(stats.shape_cache_hit);
  EXPECT_EQ(exe->cached_shape_signatures(), 3u);
  exe->run(std::vector<ir::Datum>{ir::Datum(random_tensor(ir::DType::Float32, {6, 8}, 6))}, &stats);
  EXPECT_TRUE(stats.shape_cache_hit);
}

TEST(Executable, SymbolicDimsMustAgreeAcrossInputs) {
  auto g = std::make_unique<ir::Graph>("two");
  ir::Value* a = g->add_input("A", ir::Type::tensor(ir::DType::Float32, ir::Shape{ir::Dim("N")}));
  ir::Value* b = g->add_input("B", ir::Type::tensor(ir::DType::Float32, ir::Shape{ir::Dim("N")}));
  g->add_output(g->add_node("Add", "add", {a, b}, {"C"})->output(0));
  auto exe = compiler::compile(std::move(g), cpu_only(), {});
  try {
    exe->run(std::vector<ir::Datum>{ir::Datum(ir::Tensor(ir::DType::Float32, {3})),
                                    ir::Datum(ir::Tensor(ir::DType::Float32, {4}))});
    FAIL() << "mismatched symbolic dims accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(e.message().find("'N'"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace switchyard::runtime
