// Matmul family kernels against plain reference loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backends/cpu/cpu_kernels.h"
#include "ir/check.h"
#include "runtime/graph_program.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

// numpy.matmul in double.
std::pair<std::vector<int64_t>, std::vector<double>> reference_matmul(
    std::vector<int64_t> as, const std::vector<double>& a, std::vector<int64_t> bs,
    const std::vector<double>& b) {
  bool av = as.size() == 1, bv = bs.size() == 1;
  if (av) as.insert(as.begin(), 1);
  if (bv) bs.push_back(1);
  size_t rank = std::max(as.size(), bs.size());
  while (as.size() < rank) as.insert(as.begin(), 1);
  while (bs.size() < rank) bs.insert(bs.begin(), 1);
  int64_t m = as[rank - 2], k = as[rank - 1], n = bs[rank - 1];
  std::vector<int64_t> batch(rank - 2);
  for (size_t i = 0; i + 2 < rank; ++i) batch[i] = std::max(as[i], bs[i]);
  std::vector<int64_t> shape = batch;
  if (!av) shape.push_back(m);
  if (!bv) shape.push_back(n);
  std::vector<double> y(static_cast<size_t>(product(batch) * m * n));
  for (int64_t bi = 0; bi < product(batch); ++bi) {
    int64_t ai = 0, bj = 0, rem = bi;
    std::vector<int64_t> c(batch.size());
    for (size_t i = batch.size(); i-- > 0;) {
      c[i] = rem % batch[i];
      rem /= batch[i];
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      ai = ai * as[i] + (as[i] == 1 ? 0 : c[i]);
      bj = bj * bs[i] + (bs[i] == 1 ? 0 : c[i]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          acc += a[static_cast<size_t>((ai * m + i) * k + kk)] *
                 b[static_cast<size_t>((bj * k + kk) * n + j)];
        y[static_cast<size_t>((bi * m + i) * n + j)] = acc;
      }
  }
  return {shape, y};
}

struct Shapes {
  std::vector<int64_t> a = {}, b = {};
};

const std::vector<Shapes> kMatMulShapes = {
    {{3, 4}, {4, 5}}, {{2, 3, 4}, {4, 5}}, {{2, 1, 3, 4}, {3, 4, 2}},    {{4}, {4, 3}},
    {{2, 3, 4}, {4}}, {{4}, {4}},          {{5, 1, 2, 3}, {1, 4, 3, 2}}, {{1, 7, 64}, {64, 33}},
    {{0, 3}, {3, 4}}, {{2, 3, 0}, {0, 4}}, {{3, 2, 4}, {3, 4, 6}},
};

void check_matmul(const Shapes& s, DType dt, double rtol, double atol, bool constant_b,
                  uint64_t seed) {
  double lo = -1, hi = 1;
  if (dt == DType::UInt32 || dt == DType::UInt64) lo = 0, hi = 10;
  if (dt == DType::Int32 || dt == DType::Int64) lo = -10, hi = 10;
  ir::Tensor a = random_tensor(dt, s.a, seed, lo, hi);
  ir::Tensor b = random_tensor(dt, s.b, seed + 1, lo, hi);
  auto [shape, expected] = reference_matmul(s.a, to_doubles(a), s.b, to_doubles(b));
  ir::Tensor y = run_op1(make_case("MatMul", {a, b}, {}, 1, {false, constant_b}));
  EXPECT_TENSOR_NEAR(y, tensor_of(dt, shape, expected), rtol, atol);
}

TEST(MatMulKernel, MatchesReferenceForEveryDtype) {
  uint64_t seed = 1;
  for (const Shapes& s : kMatMulShapes) {
    SCOPED_TRACE(ir::shape_to_string(s.a) + " x " + ir::shape_to_string(s.b));
    check_matmul(s, DType::Float32, 1e-4, 1e-5, false, seed);
    check_matmul(s, DType::Float32, 1e-4, 1e-5, true, seed);
    check_matmul(s, DType::Float64, 1e-12, 1e-12, false, seed);
    check_matmul(s, DType::Float16, 1e-2, 2e-2, true, seed);
    check_matmul(s, DType::BFloat16, 3e-2, 8e-2, false, seed);
    check_matmul(s, DType::Int32, 0, 0, false, seed);
    check_matmul(s, DType::Int64, 0, 0, true, seed);
    check_matmul(s, DType::UInt32, 0, 0, false, seed);
    seed += 2;
  }
}

TEST(MatMulKernel, ConcurrentRunsWithPackedWeights) {
  ir::Tensor b = random_tensor(DType::Float32, {16, 24}, 1);
  auto graph = testing::build_op_graph(
      make_case("MatMul", {random_tensor(DType::Float32, {2, 5, 16}, 2), b}, {}, 1, {false, true}));
  runtime::GraphProgram program(*graph, cpu::cpu_kernels());
  std::vector<std::string> failures = run_concurrently(4, 12, [&](int t, int i) {
    std::vector<int64_t> as = {1 + t, 1 + (i * 7 + t) % 11, 16};
    ir::Tensor a = random_tensor(DType::Float32, as, static_cast<uint64_t>(t * 50 + i));
    auto [shape, expected] = reference_matmul(as, to_doubles(a), {16, 24}, to_doubles(b));
    auto out = run_program(program, {a}, /*num_threads=*/1);
    return testing::compare_tensors(out[0].tensor, tensor_of(DType::Float32, shape, expected), 1e-4,
                                    1e-5);
  });
  for (const auto& f : failures) EXPECT_EQ(f, "");
}

TEST(MatMulKernel, BadShapesNameTheNode) {
  try {
    run_op1(make_case("MatMul", {random_tensor(DType::Float32, {2, 3}, 1),
                                 random_tensor(DType::Float32, {4, 2}, 2)}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
}

struct GemmCase {
  int64_t m, k, n;
  bool ta, tb;
  float alpha, beta;
  std::vector<int64_t> c = {};  // empty: no C
};

void check_gemm(const GemmCase& g, DType dt, double rtol, double atol, bool constant_b,
                uint64_t seed) {
  double lo = dt == DType::Int32 || dt == DType::Int64 ? -10 : -1;
  double hi = -lo;
  std::vector<int64_t> as = g.ta ? std::vector<int64_t>{g.k, g.m} : std::vector<int64_t>{g.m, g.k};
  std::vector<int64_t> bs = g.tb ? std::vector<int64_t>{g.n, g.k} : std::vector<int64_t>{g.k, g.n};
  ir::Tensor a = random_tensor(dt, as, seed, lo, hi);
  ir::Tensor b = random_tensor(dt, bs, seed + 1, lo, hi);
  std::vector<double> ad = to_doubles(a), bd = to_doubles(b);
  std::vector<double> y(static_cast<size_t>(g.m * g.n));
  testing::OpCase oc =
      make_case("Gemm", {a, b},
                {Attribute::make_int("transA", g.ta), Attribute::make_int("transB", g.tb),
                 Attribute::make_float("alpha", g.alpha), Attribute::make_float("beta", g.beta)},
                1, {false, constant_b, constant_b});
  std::vector<double> cd;
  std::vector<int64_t> cs = g.c;
  if (!g.c.empty()) {
    ir::Tensor c = random_tensor(dt, g.c, seed + 2, lo, hi);
    cd = to_doubles(c);
    oc.inputs.push_back(c);
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
  }
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0;
      for (int64_t kk = 0; kk < g.k; ++kk)
        acc += ad[static_cast<size_t>(g.ta ? kk * g.m + i : i * g.k + kk)] *
               bd[static_cast<size_t>(g.tb ? j * g.k + kk : kk * g.n + j)];
      double cv = 0;
      if (!cd.empty())
        cv = cd[static_cast<size_t>((cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j))];
      double v = static_cast<double>(g.alpha) * acc + static_cast<double>(g.beta) * cv;
      if (dt == DType::Int32 || dt == DType::Int64) v = std::trunc(v);
      y[static_cast<size_t>(i * g.n + j)] = v;
    }
  EXPECT_TENSOR_NEAR(run_op1(oc), tensor_of(dt, {g.m, g.n}, y), rtol, atol);
}

TEST(GemmKernel, MatchesReference) {
  const std::vector<GemmCase> cases = {
      {3, 4, 5, false, false, 1.0f, 1.0f, {}},       {3, 4, 5, true, false, 0.5f, 1.0f, {5}},
      {3, 4, 5, false, true, 1.0f, 1.0f, {5}},       {3, 4, 5, true, true, 2.0f, 0.25f, {3, 5}},
      {3, 4, 5, false, true, 1.0f, 2.0f, {1, 5}},    {3, 4, 5, false, false, 1.0f, 1.0f, {3, 1}},
      {3, 4, 5, false, false, 1.0f, 3.0f, {}},       {6, 7, 1, true, true, 1.5f, 1.0f, {1}},
      {2, 64, 10, false, true, 1.0f, 0.0f, {2, 10}}, {0, 4, 5, false, false, 1.0f, 1.0f, {5}},
  };
  uint64_t seed = 5;
  for (const GemmCase& g : cases) {
    SCOPED_TRACE(::testing::Message() << g.m << "x" << g.k << "x" << g.n << " tA " << g.ta << " tB "
                                      << g.tb << " C " << ir::shape_to_string(g.c));
    check_gemm(g, DType::Float32, 1e-4, 1e-5, false, seed);
    check_gemm(g, DType::Float32, 1e-4, 1e-5, true, seed);
    check_gemm(g, DType::Float64, 1e-12, 1e-12, false, seed);
    check_gemm(g, DType::Float16, 1e-2, 3e-2, false, seed);
    if (g.alpha == 1.0f && g.beta == 1.0f) check_gemm(g, DType::Int32, 0, 0, false, seed);
    seed += 3;
  }
}

TEST(MatMulIntegerKernel, MatchesReference) {
  for (DType adt : {DType::UInt8, DType::Int8}) {
    double lo = adt == DType::UInt8 ? 0 : -128, hi = adt == DType::UInt8 ? 256 : 128;
    for (const Shapes& s :
         {Shapes{{4, 6}, {6, 3}}, Shapes{{2, 4, 6}, {6, 3}}, Shapes{{6}, {2, 6, 3}}}) {
      ir::Tensor a = random_tensor(adt, s.a, 1, lo, hi);
      ir::Tensor b = random_tensor(DType::Int8, s.b, 2, -128, 128);
      ir::Tensor azp = tensor_of(adt, {}, {adt == DType::UInt8 ? 128.0 : 3.0});
      ir::Tensor bzp = tensor_of(DType::Int8, {3}, {1, -2, 5});
      std::vector<double> ad = to_doubles(a), bd = to_doubles(b);
      for (double& v : ad) v -= to_doubles(azp)[0];
      for (size_t i = 0; i < bd.size(); ++i) bd[i] -= to_doubles(bzp)[i % 3];
      auto [shape, expected] = reference_matmul(s.a, ad, s.b, bd);
      ir::Tensor y = run_op1(make_case("MatMulInteger", {a, b, azp, bzp}));
      EXPECT_TENSOR_NEAR(y, tensor_of(DType::Int32, shape, expected), 0, 0);
    }
  }
}

TEST(QLinearMatMulKernel, MatchesReference) {
  ir::Tensor a = random_tensor(DType::UInt8, {2, 3, 5}, 1, 0, 256);
  ir::Tensor b = random_tensor(DType::UInt8, {5, 4}, 2, 0, 256);
  std::vector<double> ad = to_doubles(a), bd = to_doubles(b);
  for (double& v : ad) v -= 113;
  for (double& v : bd) v -= 114;
  auto [shape, acc] = reference_matmul({2, 3, 5}, ad, {5, 4}, bd);
  std::vector<double> expected;
  for (double v : acc)
    expected.push_back(std::clamp(
        std::nearbyint(static_cast<float>(v) * (0.0066f * 0.0039f / 0.0157f)) + 118.0, 0.0, 255.0));
  ir::Tensor y = run_op1(
      make_case("QLinearMatMul",
                {a, tensor_of(DType::Float32, {}, {0.0066}), tensor_of(DType::UInt8, {}, {113}), b,
                 tensor_of(DType::Float32, {}, {0.0039}), tensor_of(DType::UInt8, {}, {114}),
                 tensor_of(DType::Float32, {}, {0.0157}), tensor_of(DType::UInt8, {}, {118})}));
  EXPECT_TENSOR_NEAR(y, tensor_of(DType::UInt8, shape, expected), 0, 1);
}

// Brute-force einsum: every assignment of every letter, accumulated in double. Equations here
// name their output explicitly and use '...' only as written in `expanded` letters.
std::vector<double> reference_einsum(const std::vector<std::string>& terms, const std::string& out,
                                     const std::vector<ir::Tensor>& inputs,
                                     std::vector<int64_t>& shape) {
  std::map<char, int64_t> size;
  for (size_t t = 0; t < terms.size(); ++t)
    for (size_t i = 0; i < terms[t].size(); ++i)
      size[terms[t][i]] = std::max(size[terms[t][i]], inputs[t].dim(static_cast<int64_t>(i)));
  std::vector<char> letters;
  for (auto& [c, s] : size) letters.push_back(c);
  shape.clear();
  for (char c : out) shape.push_back(size[c]);
  std::vector<double> y(static_cast<size_t>(product(shape)), 0.0);
  std::vector<std::vector<double>> data;
  for (const auto& t : inputs) data.push_back(to_doubles(t));
  std::vector<int64_t> idx(letters.size(), 0);
  std::map<char, int64_t> at;
  int64_t total = 1;
  for (char c : letters) total *= size[c];
  for (int64_t it = 0; it < total; ++it) {
    int64_t rem = it;
    for (size_t l = letters.size(); l-- > 0;) {
      at[letters[l]] = rem % size[letters[l]];
      rem /= size[letters[l]];
    }
    double v = 1;
    for (size_t t = 0; t < terms.size(); ++t) {
      int64_t off = 0;
      for (size_t i = 0; i < terms[t].size(); ++i) {
        int64_t d = inputs[t].dim(static_cast<int64_t>(i));
        off = off * d + (d == 1 ? 0 : at[terms[t][i]]);
      }
      v *= data[t][static_cast<size_t>(off)];
    }
    int64_t o = 0;
    for (size_t i = 0; i < out.size(); ++i) o = o * shape[i] + at[out[i]];
    y[static_cast<size_t>(o)] += v;
  }
  return y;
}

struct EinsumCase {
  std::string equation = "";            // as given to the op
  std::vector<std::string> terms = {};  // the same with '...' spelled as letters
  std::string out = "";
  std::vector<std::vector<int64_t>> shapes = {};
};

TEST(EinsumKernel, MatchesBruteForce) {
  const std::vector<EinsumCase> cases = {
      {"ij,jk->ik", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},
      {"ij,jk", {"ij", "jk"}, "ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", {"bij", "bjk"}, "bik", {{2, 3, 4}, {2, 4, 5}}},
      {"ii->i", {"ii"}, "i", {{4, 4}}},
      {"ii", {"ii"}, "", {{4, 4}}},
      {"bii->bi", {"bii"}, "bi", {{3, 4, 4}}},
      {"ij->ji", {"ij"}, "ji", {{3, 5}}},
      {"ij->", {"ij"}, "", {{3, 5}}},
      {"i,i", {"i", "i"}, "", {{6}, {6}}},
      {"i,j->ij", {"i", "j"}, "ij", {{3}, {4}}},
      {"...ij,...jk->...ik", {"xij", "xjk"}, "xik", {{2, 3, 4}, {1, 4, 2}}},
      {"b...d,bd->b...", {"bxyd", "bd"}, "bxy", {{2, 3, 4, 5}, {2, 5}}},
      {"ijk,jl,lk->ik", {"ijk", "jl", "lk"}, "ik", {{2, 3, 4}, {3, 5}, {5, 4}}},
      {"iij,jk->ik", {"iij", "jk"}, "ik", {{3, 3, 2}, {2, 4}}},
      {"bhqd,bhkd->bhqk", {"bhqd", "bhkd"}, "bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}},
      {"Ba,aB->B", {"Ba", "aB"}, "B", {{3, 2}, {2, 3}}},
  };
  uint64_t seed = 1;
  for (const EinsumCase& c : cases) {
    SCOPED_TRACE(c.equation);
    for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Float16}) {
      std::vector<ir::Tensor> inputs;
      testing::OpCase oc =
          make_case("Einsum", {}, {Attribute::make_string("equation", c.equation)});
      for (const auto& s : c.shapes) {
        inputs.push_back(random_tensor(dt, s, seed++, -3, 3));
        oc.inputs.push_back(inputs.back());
      }
      std::vector<int64_t> shape;
      std::vector<double> expected = reference_einsum(c.terms, c.out, inputs, shape);
      double tol = dt == DType::Float16 ? 2e-2 : dt == DType::Float32 ? 1e-5 : 1e-12;
      EXPECT_TENSOR_NEAR(run_op1(oc), tensor_of(dt, shape, expected), tol, tol * 10);
    }
  }
}

TEST(EinsumKernel, BadEquationsNameTheNode) {
  ir::Tensor a = random_tensor(DType::Float32, {3, 4}, 1);
  for (const char* eq : {"ij,jk->ik", "ijk->i", "i1->i", "ij->iz"}) {
    try {
      run_op1(make_case("Einsum", {a}, {Attribute::make_string("equation", eq)}));
      ADD_FAILURE() << "expected an error for " << eq;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
    }
  }
}

double reference_det(std::vector<double> m, int64_t n) {
  if (n == 0) return 1;
  if (n == 1) return m[0];
  double det = 0;
  for (int64_t c = 0; c < n; ++c) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t k = 0; k < n; ++k)
        if (k != c) minor.push_back(m[static_cast<size_t>(r * n + k)]);
    det += (c % 2 ? -1 : 1) * m[static_cast<size_t>(c)] * reference_det(minor, n - 1);
  }
  return det;
}

TEST(DetKernel, MatchesCofactorExpansion) {
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{3, 3}, {2, 4, 4}, {2, 1, 5, 5}, {1, 1}, {3, 2, 2}}) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16}) {
      ir::Tensor x = random_tensor(dt, shape, 3);
      int64_t n = shape.back();
      std::vector<double> xd = to_doubles(x), expected;
      for (size_t b = 0; b < xd.size() / static_cast<size_t>(n * n); ++b)
        expected.push_back(reference_det(
            std::vector<double>(xd.begin() + static_cast<std::ptrdiff_t>(b * n * n),
                                xd.begin() + static_cast<std::ptrdiff_t>((b + 1) * n * n)),
            n));
      std::vector<int64_t> out(shape.begin(), shape.end() - 2);
      double tol = dt == DType::Float16 ? 1e-2 : dt == DType::Float32 ? 1e-5 : 1e-12;
      EXPECT_TENSOR_NEAR(run_op1(make_case("Det", {x})), tensor_of(dt, out, expected), tol, tol);
    }
  }
  // A singular matrix has determinant 0.
  ir::Tensor s = tensor_of(DType::Float32, {2, 2}, {1, 2, 2, 4});
  EXPECT_TENSOR_NEAR(run_op1(make_case("Det", {s})), tensor_of(DType::Float32, {}, {0}), 0, 1e-6);
}

}  // namespace
}  // namespace switchyard::testing
