// The matmul family (cpu matmul.cc, cuda matmul.cc): MatMul over numpy shapes (vectors,
// batches broadcast on either side or both, odd and larger sizes, empty and K = 0) with
// constant and fed B, and Gemm with every transpose, every C broadcast and alpha/beta that take
// each path (bias epilogue, copied C, ignored C), on every float dtype.
#include <cmath>
#include <limits>

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

// x read through `perm` (Transpose's semantics), exactly.
Tensor permuted(const Tensor& x, const Shape& perm) {
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape()[static_cast<size_t>(p)]);
  return move_elements(x, out, [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> source(index.size());
    for (size_t i = 0; i < perm.size(); ++i) source[static_cast<size_t>(perm[i])] = index[i];
    return ravel(source, x.shape());
  });
}

// Transpose(input k, perms[k]) in front of the node for each operand k with a permutation: the
// pattern the backends fold into the MatMul (backends/fusion/matmul_layout.cc).
Prelude transposes_in_front(std::vector<Shape> perms) {
  return [=](ir::Graph& g, const std::vector<ir::Value*>& in) {
    std::vector<ir::Value*> reads = in;
    for (size_t k = 0; k < perms.size(); ++k) {
      if (perms[k].empty()) continue;
      ir::Node* t =
          g.add_node("Transpose", fmt::format("transpose{}", k), {in[k]}, {fmt::format("t{}", k)});
      t->set_attribute(Attribute::make_ints("perm", perms[k]));
      reads[k] = t->output(0);
    }
    return reads;
  };
}

Reference transposed_then(std::vector<Shape> perms, Reference ref) {
  return [=](const Inputs& in) {
    Inputs reads = in;
    for (size_t k = 0; k < perms.size(); ++k)
      if (!perms[k].empty()) reads[k] = permuted(*in[k], perms[k]);
    return ref(reads);
  };
}

// MatMul of transposed operands: attention's head split (Q and V: perm 0,2,1,3) and K's
// (0,2,3,1) at batch 1 (cuda reads them in place) and 2 (cuda copies them first), the context
// product with one plain operand, rank-3 transposes of either operand (cuBLASLt's transA /
// transB), a broadcast plain operand, and a permutation that moves the innermost axis into the
// batch dims (not folded).
void add_transposed_matmul(std::vector<Case>& cases) {
  struct Spec {
    Shape a, b;
    Shape perm_a, perm_b;
  };
  const std::vector<Spec> specs = {
      {{1, 5, 3, 8}, {1, 7, 3, 8}, {0, 2, 1, 3}, {0, 2, 3, 1}},
      {{2, 5, 3, 8}, {2, 7, 3, 8}, {0, 2, 1, 3}, {0, 2, 3, 1}},
      {{1, 3, 5, 7}, {1, 7, 3, 4}, {}, {0, 2, 1, 3}},
      {{2, 3, 5, 7}, {2, 7, 3, 4}, {}, {0, 2, 1, 3}},
      {{4, 6, 5}, {4, 6, 3}, {0, 2, 1}, {}},
      {{4, 5, 6}, {4, 3, 6}, {}, {0, 2, 1}},
      {{1, 5, 3, 8}, {1, 1, 8, 4}, {0, 2, 1, 3}, {}},
      {{2, 5, 3, 8}, {1, 1, 8, 4}, {0, 2, 1, 3}, {}},
      {{2, 5, 3, 6}, {2, 6, 5, 4}, {0, 3, 2, 1}, {}},
  };
  uint64_t seed = 900;
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64})
    for (const Spec& sp : specs) {
      cases.push_back(
          {.name = fmt::format("MatMul+transpose/{}/{}{}@{}{}", dtype_tag(dtype), shape_tag(sp.a),
                               sp.perm_a.empty() ? "" : "^" + shape_tag(sp.perm_a), shape_tag(sp.b),
                               sp.perm_b.empty() ? "" : "^" + shape_tag(sp.perm_b)),
           .op = "MatMul",
           .inputs = {random_tensor(dtype, sp.a, seed), random_tensor(dtype, sp.b, seed + 1)},
           .reference = transposed_then({sp.perm_a, sp.perm_b}, matmul_ref()),
           .tolerance = tolerance_for(dtype),
           .prelude = transposes_in_front({sp.perm_a, sp.perm_b})});
      seed += 2;
    }
}

double gelu(double x, bool tanh_form) {
  if (tanh_form) return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}

// MatMul -> Add(bias) -> Gelu, both forms: the bias and the activation become the product's
// epilogue (cuda: cuBLASLt's GELU_BIAS for the tanh form, our kernel for the erf form).
void add_matmul_gelu(std::vector<Case>& cases) {
  uint64_t seed = 950;
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64})
    for (bool tanh_form : {false, true})
      for (const auto& [x, n] :
           std::vector<std::pair<Shape, int64_t>>{{{6, 13}, 9}, {{2, 16, 64}, 256}}) {
        const int64_t k = x.back();
        cases.push_back(
            {.name = fmt::format("MatMul+bias+Gelu/{}/{}@[{},{}]/approximate={}", dtype_tag(dtype),
                                 shape_tag(x), k, n, tanh_form ? "tanh" : "none"),
             .op = "Gelu",
             .inputs = {random_tensor(dtype, x, seed, -1.0, 1.0),
                        random_tensor(dtype, {k, n}, seed + 1, -1.0, 1.0),
                        random_tensor(dtype, {n}, seed + 2, -1.0, 1.0)},
             .attributes = {Attribute::make_string("approximate", tanh_form ? "tanh" : "none")},
             .constant_inputs = {false, true, true},
             .reference =
                 [tanh_form](const Inputs& in) {
                   // In double: the epilogue reads the unrounded product.
                   auto wide = [](const Tensor& t) {
                     return tensor_of(DType::Float64, t.shape(), to_doubles(t));
                   };
                   Tensor y = matmul_ref()({wide(*in[0]), wide(*in[1])})[0];
                   std::vector<double> yv = to_doubles(y), bias = to_doubles(*in[2]);
                   for (size_t i = 0; i < yv.size(); ++i)
                     yv[i] = gelu(yv[i] + bias[i % bias.size()], tanh_form);
                   return std::vector<Tensor>{tensor_of(in[0]->dtype(), y.shape(), yv)};
                 },
             .tolerance = tolerance_for(dtype),
             .prelude =
                 [](ir::Graph& g, const std::vector<ir::Value*>& in) {
                   ir::Value* y = g.add_node("MatMul", "matmul", {in[0], in[1]}, {"y"})->output(0);
                   return std::vector<ir::Value*>{
                       g.add_node("Add", "bias", {y, in[2]}, {"y_bias"})->output(0)};
                 }});
        seed += 3;
      }
}

// Attention as the reference models export it, which the cuda partition runs as one fused
// kernel where its values are 16-bit (backends/fusion/attention.cc): BERT's (q, k, v [B, S, H,
// D] split into heads by Transposes, scores / sqrt(D), an additive padding mask [B, 1, 1, S],
// softmax, context, the head merge back to [B, S, H, D]) and GPT's (scores * 1/sqrt(D), a
// causal Where(cond, -inf, .), no merge: [B, H, S, D]); query and key tiles cut short (S = 1, 17,
// 70, 129, 300), head dims the kernel pads (16, 40, 80), not a multiple of 8 (36), above the
// tensor-core kernel's (160), value dims unlike the head dim, 12 heads, batch 3, no mask.
struct AttentionSpec {
  int64_t batch, seq, heads, dim;
  std::string mask;   // "add" (BERT), "where" (GPT, causal), "none"
  int64_t v_dim = 0;  // V's head dim; 0: dim
};

Reference attention_ref(const AttentionSpec& sp) {
  return [sp](const Inputs& in) {
    const int64_t B = sp.batch, S = sp.seq, H = sp.heads, D = sp.dim;
    const int64_t Dv = sp.v_dim ? sp.v_dim : D;
    std::vector<double> q = to_doubles(*in[0]), k = to_doubles(*in[1]), v = to_doubles(*in[2]);
    std::vector<double> m = sp.mask == "none" ? std::vector<double>{} : to_doubles(*in[3]);
    const double alpha = 1 / std::sqrt(static_cast<double>(D));
    const bool merge = sp.mask != "where";
    std::vector<double> out(static_cast<size_t>(B * S * H * Dv));
    auto at = [&](int64_t b, int64_t s, int64_t h, int64_t d) {
      return static_cast<size_t>(((b * S + s) * H + h) * D + d);
    };
    auto at_v = [&](int64_t b, int64_t s, int64_t h, int64_t d) {
      return static_cast<size_t>(((b * S + s) * H + h) * Dv + d);
    };
    std::vector<double> p(static_cast<size_t>(S));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < S; ++i) {
          double mx = -INFINITY;
          for (int64_t j = 0; j < S; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < D; ++d) dot += q[at(b, i, h, d)] * k[at(b, j, h, d)];
            double x = dot * alpha;
            if (sp.mask == "add") x += m[static_cast<size_t>(b * S + j)];
            if (sp.mask == "where" && m[static_cast<size_t>(i * S + j)] != 0) x = -INFINITY;
            p[static_cast<size_t>(j)] = x;
            mx = std::max(mx, x);
          }
          double sum = 0;
          for (double& x : p) sum += (x = std::exp(x - mx));
          for (int64_t d = 0; d < Dv; ++d) {
            double acc = 0;
            for (int64_t j = 0; j < S; ++j) acc += p[static_cast<size_t>(j)] * v[at_v(b, j, h, d)];
            const size_t o =
                merge ? at_v(b, i, h, d) : static_cast<size_t>(((b * H + h) * S + i) * Dv + d);
            out[o] = acc / sum;
          }
        }
    Shape shape = merge ? Shape{B, S, H, Dv} : Shape{B, H, S, Dv};
    return std::vector<Tensor>{tensor_of(in[0]->dtype(), shape, out)};
  };
}

// The graph in front of the case's node (the head merge Transpose; for GPT the context MatMul).
Prelude attention_prelude(const AttentionSpec& sp, DType dtype) {
  return [sp, dtype](ir::Graph& g, const std::vector<ir::Value*>& in) {
    auto transpose = [&](ir::Value* x, Shape perm, const std::string& name) {
      ir::Node* t = g.add_node("Transpose", name, {x}, {name + "_y"});
      t->set_attribute(Attribute::make_ints("perm", std::move(perm)));
      return t->output(0);
    };
    ir::Value* qt = transpose(in[0], {0, 2, 1, 3}, "tq");
    ir::Value* kt = transpose(in[1], {0, 2, 3, 1}, "tk");
    ir::Value* vt = transpose(in[2], {0, 2, 1, 3}, "tv");
    ir::Value* s = g.add_node("MatMul", "scores", {qt, kt}, {"s"})->output(0);
    const double root = std::sqrt(static_cast<double>(sp.dim));
    ir::Value* x = nullptr;
    if (sp.mask == "where") {
      ir::Value* c = g.add_constant("inv_sqrt_d", tensor_of(dtype, {}, {1 / root}));
      x = g.add_node("Mul", "scale", {s, c}, {"ss"})->output(0);
      ir::Value* fill = g.add_constant("fill", tensor_of(dtype, {}, {-INFINITY}));
      x = g.add_node("Where", "where", {in[3], fill, x}, {"sw"})->output(0);
    } else {
      ir::Value* c = g.add_constant("sqrt_d", tensor_of(dtype, {}, {root}));
      x = g.add_node("Div", "scale", {s, c}, {"ss"})->output(0);
      if (sp.mask == "add") x = g.add_node("Add", "add_mask", {x, in[3]}, {"sm"})->output(0);
    }
    ir::Node* sm = g.add_node("Softmax", "softmax", {x}, {"p"});
    sm->set_attribute(Attribute::make_int("axis", -1));
    if (sp.mask == "where") return std::vector<ir::Value*>{sm->output(0), vt};
    return std::vector<ir::Value*>{
        g.add_node("MatMul", "context", {sm->output(0), vt}, {"c"})->output(0)};
  };
}

void add_attention(std::vector<Case>& cases) {
  const std::vector<AttentionSpec> specs = {
      {2, 16, 2, 64, "add"},        {1, 70, 3, 64, "add"},     {2, 70, 2, 64, "where"},
      {2, 20, 2, 32, "none"},       {1, 24, 2, 40, "add"},     {1, 24, 2, 36, "add"},
      {1, 18, 2, 160, "add"},       {2, 130, 1, 128, "where"}, {1, 1, 2, 64, "add"},
      {3, 17, 2, 16, "where"},      {1, 129, 2, 80, "add"},    {3, 100, 2, 128, "none"},
      {1, 300, 1, 64, "where"},     {2, 15, 12, 32, "add"},    {2, 40, 2, 64, "add", 32},
      {1, 33, 2, 32, "where", 128},
  };
  uint64_t seed = 1200;
  for (DType dtype : {DType::Float16, DType::BFloat16, DType::Float32})
    for (const AttentionSpec& sp : specs) {
      const Shape qkv = {sp.batch, sp.seq, sp.heads, sp.dim};
      const Shape v_shape = {sp.batch, sp.seq, sp.heads, sp.v_dim ? sp.v_dim : sp.dim};
      Inputs inputs = {random_tensor(dtype, qkv, seed, -1.0, 1.0),
                       random_tensor(dtype, qkv, seed + 1, -1.0, 1.0),
                       random_tensor(dtype, v_shape, seed + 2, -1.0, 1.0)};
      if (sp.mask == "add") {
        // 0 where attended, float32's lowest over each row's padded tail (-inf in 16 bits).
        std::vector<double> m(static_cast<size_t>(sp.batch * sp.seq), 0.0);
        for (int64_t b = 0; b < sp.batch; ++b)
          for (int64_t j = sp.seq - 1 - b * 3; j < sp.seq; ++j)
            m[static_cast<size_t>(b * sp.seq + j)] = std::numeric_limits<float>::lowest();
        inputs.push_back(tensor_of(dtype, {sp.batch, 1, 1, sp.seq}, m));
      } else if (sp.mask == "where") {
        std::vector<double> c(static_cast<size_t>(sp.seq * sp.seq));
        for (int64_t i = 0; i < sp.seq; ++i)
          for (int64_t j = 0; j < sp.seq; ++j) c[static_cast<size_t>(i * sp.seq + j)] = j > i;
        inputs.push_back(tensor_of(DType::Bool, {1, 1, sp.seq, sp.seq}, c));
      }
      Tolerance tol = tolerance_for(dtype);
      if (dtype == DType::BFloat16) tol = {3e-2, 3e-2};  // the scores and probabilities rounded
      const bool gpt = sp.mask == "where";
      cases.push_back(
          {.name = fmt::format("attention/{}/b={}/s={}/h={}/d={}/mask={}{}", dtype_tag(dtype),
                               sp.batch, sp.seq, sp.heads, sp.dim, sp.mask,
                               sp.v_dim ? fmt::format("/dv={}", sp.v_dim) : ""),
           .op = gpt ? "MatMul" : "Transpose",
           .inputs = inputs,
           .attributes = gpt ? std::vector<Attribute>{}
                             : std::vector<Attribute>{Attribute::make_ints("perm", {0, 2, 1, 3})},
           .reference = attention_ref(sp),
           .tolerance = tol,
           .prelude = attention_prelude(sp, dtype)});
      seed += 3;
    }
}

std::vector<Case> matmul_cases() {
  std::vector<Case> cases;
  add_transposed_matmul(cases);
  add_matmul_gelu(cases);
  add_attention(cases);
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
