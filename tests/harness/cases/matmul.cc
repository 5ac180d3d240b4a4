// The matmul family (cpu matmul.cc, cuda matmul.cc): MatMul over numpy shapes (vectors,
// batches broadcast on either side or both, odd and larger sizes, empty and K = 0) with
// constant and fed B, and Gemm with every transpose, every C broadcast and alpha/beta that take
// each path (bias epilogue, copied C, ignored C), on every float dtype.
#include <cmath>

#include "harness/op_harness.h"

namespace switchyard::testing::harness {
namespace {

using Shape = std::vector<int64_t>;

// Sums of K products accumulated in float32 (the 16-bit types too), one rounding of 16-bit
// results; values in [-1, 1] keep the sums' magnitudes near sqrt(K).
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {1e-2, 1e-2};
    case DType::BFloat16:
      return {2e-2, 2e-2};
    case DType::Float64:
      return {1e-10, 1e-10};
    default:
      return {1e-4, 1e-4};
  }
}

// numpy matmul in double: 1-D operands promoted and the added dim dropped, batches broadcast.
Reference matmul_ref() {
  return [](const Inputs& in) {
    const Tensor &at = *in[0], &bt = *in[1];
    Shape a = at.shape(), b = bt.shape();
    const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
    if (a_vec) a.insert(a.begin(), 1);
    if (b_vec) b.push_back(1);
    const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
    Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
    Shape batch = broadcast_shapes({a_batch, b_batch});
    std::vector<double> av = to_doubles(at), bv = to_doubles(bt);
    const int64_t batches = product(batch);
    std::vector<double> out(static_cast<size_t>(batches * m * n), 0);
    auto offset = [&](const Shape& s, const std::vector<int64_t>& idx) {
      int64_t off = 0;
      for (size_t i = 0; i < s.size(); ++i)
        off = off * s[i] + (s[i] == 1 ? 0 : idx[batch.size() - s.size() + i]);
      return off;
    };
    for (int64_t bi = 0; bi < batches; ++bi) {
      std::vector<int64_t> idx = unravel(bi, batch);
      const int64_t ao = offset(a_batch, idx) * m * k, bo = offset(b_batch, idx) * k * n;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum +=
                av[static_cast<size_t>(ao + i * k + p)] * bv[static_cast<size_t>(bo + p * n + j)];
          out[static_cast<size_t>((bi * m + i) * n + j)] = sum;
        }
    }
    Shape shape = batch;
    if (!a_vec) shape.push_back(m);
    if (!b_vec) shape.push_back(n);
    return std::vector<Tensor>{tensor_of(at.dtype(), shape, out)};
  };
}

Reference gemm_ref(bool trans_a, bool trans_b, double alpha, double beta) {
  return [=](const Inputs& in) {
    const Tensor &at = *in[0], &bt = *in[1];
    const int64_t m = trans_a ? at.shape()[1] : at.shape()[0];
    const int64_t k = trans_a ? at.shape()[0] : at.shape()[1];
    const int64_t n = trans_b ? bt.shape()[0] : bt.shape()[1];
    std::vector<double> av = to_doubles(at), bv = to_doubles(bt), out(static_cast<size_t>(m * n));
    std::vector<double> c = in.size() > 2 && in[2] ? to_doubles(*in[2]) : std::vector<double>{};
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += av[static_cast<size_t>(trans_a ? p * m + i : i * k + p)] *
                 bv[static_cast<size_t>(trans_b ? j * k + p : p * n + j)];
        double y = alpha * sum;
        if (!c.empty()) {
          const Shape& cs = in[2]->shape();
          int64_t ci = cs.size() == 2 ? (cs[0] == 1 ? 0 : i) : 0;
          int64_t cj = cs.empty() ? 0 : (cs.back() == 1 ? 0 : j);
          y += beta * c[static_cast<size_t>(ci * (cs.empty() ? 1 : cs.back()) + cj)];
        }
        out[static_cast<size_t>(i * n + j)] = y;
      }
    return std::vector<Tensor>{tensor_of(at.dtype(), {m, n}, out)};
  };
}

std::vector<Case> matmul_cases() {
  std::vector<Case> cases;
  const std::vector<std::pair<Shape, Shape>> shapes = {
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
      {{0, 5}, {5, 3}},  // empty
      {{2, 0, 5}, {5, 3}},
      {{3, 0}, {0, 4}},  // K = 0: a product of nothing is zero
      {{2, 3, 0}, {2, 0, 4}},
  };
  uint64_t seed = 100;
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64})
    for (const auto& [a, b] : shapes)
      for (bool constant_b : {false, true}) {
        if (constant_b && dtype != DType::Float32) continue;
        cases.push_back(
            {.name = fmt::format("MatMul/{}/{}@{}{}", dtype_tag(dtype), shape_tag(a), shape_tag(b),
                                 constant_b ? "/constant B" : ""),
             .op = "MatMul",
             .inputs = {random_tensor(dtype, a, seed), random_tensor(dtype, b, seed + 1)},
             .constant_inputs = {false, constant_b},
             .reference = matmul_ref(),
             .tolerance = tolerance_for(dtype)});
        seed += 2;
      }
  cases.push_back({.name = "MatMul/float32/512x768@768x3072/constant B",
                   .op = "MatMul",
                   .inputs = {random_tensor(DType::Float32, {512, 768}, 7),
                              random_tensor(DType::Float32, {768, 3072}, 8)},
                   .constant_inputs = {false, true},
                   .tolerance = tolerance_for(DType::Float32)});
  cases.push_back({.name = "MatMul/float32/2x64x768@768x3072",
                   .op = "MatMul",
                   .inputs = {random_tensor(DType::Float32, {2, 64, 768}, 9),
                              random_tensor(DType::Float32, {768, 3072}, 10)},
                   .reference = matmul_ref(),
                   .tolerance = tolerance_for(DType::Float32)});

  // Every transpose with every C broadcast and alpha/beta that take each path.
  const int64_t m = 7, k = 13, n = 5;
  const std::vector<std::optional<Shape>> cs = {std::nullopt, Shape{},     Shape{n},   Shape{1, n},
                                                Shape{m, 1},  Shape{m, n}, Shape{1, 1}};
  const std::pair<float, float> scales[] = {{1.0f, 1.0f}, {0.5f, 2.0f}, {2.0f, 1.0f}, {1.0f, 0.0f}};
  seed = 400;
  auto gemm = [&](DType dtype, Shape a, Shape b, std::optional<Shape> c, bool ta, bool tb,
                  float alpha, float beta, bool reference) {
    Inputs inputs = {random_tensor(dtype, a, seed), random_tensor(dtype, b, seed + 1)};
    if (c) inputs.emplace_back(random_tensor(dtype, *c, seed + 2));
    seed += 3;
    cases.push_back(
        {.name = fmt::format("Gemm/{}/{}x{}/transA={}/transB={}/C={}/alpha={}/beta={}",
                             dtype_tag(dtype), shape_tag(a), shape_tag(b), ta, tb,
                             c ? shape_tag(*c) : "none", alpha, beta),
         .op = "Gemm",
         .inputs = inputs,
         .attributes = {Attribute::make_int("transA", ta), Attribute::make_int("transB", tb),
                        Attribute::make_float("alpha", alpha), Attribute::make_float("beta", beta)},
         .reference = reference ? gemm_ref(ta, tb, alpha, beta) : Reference{},
         .tolerance = tolerance_for(dtype)});
  };
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (const auto& c : cs)
          for (auto [alpha, beta] : scales)
            gemm(dtype, ta ? Shape{k, m} : Shape{m, k}, tb ? Shape{n, k} : Shape{k, n}, c, ta, tb,
                 alpha, beta, true);
  // A classifier head, an empty batch, K = 0 (Y = beta * C).
  gemm(DType::Float32, {64, 2048}, {1000, 2048}, Shape{1000}, false, true, 1, 1, false);
  gemm(DType::Float32, {0, 4}, {4, 3}, Shape{3}, false, false, 1, 1, true);
  gemm(DType::Float32, {3, 0}, {0, 4}, Shape{3, 1}, false, false, 1.5f, 0.5f, true);
  gemm(DType::Float32, {3, 0}, {0, 4}, Shape{4}, false, false, 1, 1, true);
  return cases;
}

}  // namespace

SY_HARNESS_FAMILY(matmul, matmul_cases)

}  // namespace switchyard::testing::harness
