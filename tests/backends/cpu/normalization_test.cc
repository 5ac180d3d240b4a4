// CPU kernels of the normalization family against plain references on seeded random data.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backends/cpu/cpu_kernels.h"
#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

double tol_of(DType dt) {
  return dt == DType::Float64    ? 1e-10
         : dt == DType::Float16  ? 4e-3
         : dt == DType::BFloat16 ? 3e-2
                                 : 1e-5;
}

int64_t prod(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// y = (x - mean) / sqrt(var + eps) * scale[c] + bias[c] over (N, C, spatial).
std::vector<double> ref_affine(const std::vector<double>& x, const std::vector<int64_t>& shape,
                               const std::vector<double>& mean, const std::vector<double>& var,
                               const std::vector<double>& scale, const std::vector<double>& bias,
                               double eps) {
  int64_t c = shape[1];
  int64_t spatial = prod(shape, 2, shape.size());
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    size_t ch = static_cast<size_t>((static_cast<int64_t>(i) / spatial) % c);
    y[i] = (x[i] - mean[ch]) / std::sqrt(var[ch] + eps) * scale[ch] + bias[ch];
  }
  return y;
}

TEST(BatchNormKernel, InferenceMatchesReference) {
  for (DType dt : {DType::Float32, DType::Float16, DType::Float64}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3, 4, 5}, {4, 3}, {1, 3, 7}}) {
      Tensor x = random_tensor(dt, shape, 1);
      Tensor s = random_tensor(dt, {3}, 2);
      Tensor b = random_tensor(dt, {3}, 3);
      Tensor m = random_tensor(DType::Float32, {3}, 4);
      Tensor v = random_tensor(DType::Float32, {3}, 5, 0.5, 2.0);
      Tensor y = run_op1(make_case("BatchNormalization", {x, s, b, m, v},
                                   {Attribute::make_float("epsilon", 1e-3f)}));
      auto ref = ref_affine(to_doubles(x), shape, to_doubles(m), to_doubles(v), to_doubles(s),
                            to_doubles(b), static_cast<double>(1e-3f));
      EXPECT_TENSOR_NEAR(y, tensor_of(dt, shape, ref), tol_of(dt), tol_of(dt));
    }
  }
}

TEST(BatchNormKernel, TrainingModeUsesBatchStatistics) {
  std::vector<int64_t> shape = {3, 2, 5};
  Tensor x = random_tensor(DType::Float32, shape, 11, -2, 3);
  Tensor s = random_tensor(DType::Float32, {2}, 12);
  Tensor b = random_tensor(DType::Float32, {2}, 13);
  Tensor m = random_tensor(DType::Float32, {2}, 14);
  Tensor v = random_tensor(DType::Float32, {2}, 15, 0.5, 1.5);
  OpCase c = make_case(
      "BatchNormalization", {x, s, b, m, v},
      {Attribute::make_int("training_mode", 1), Attribute::make_float("momentum", 0.8f)}, 3);
  auto out = run_op(c);
  auto xd = to_doubles(x);
  std::vector<double> mean(2, 0), var(2, 0);
  for (size_t i = 0; i < xd.size(); ++i) mean[(i / 5) % 2] += xd[i] / 15;
  for (size_t i = 0; i < xd.size(); ++i) {
    double d = xd[i] - mean[(i / 5) % 2];
    var[(i / 5) % 2] += d * d / 15;
  }
  auto y = ref_affine(xd, shape, mean, var, to_doubles(s), to_doubles(b), 1e-5);
  EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(DType::Float32, shape, y), 1e-5, 1e-5);
  std::vector<double> rm, rv;
  for (size_t ch = 0; ch < 2; ++ch) {
    rm.push_back(to_doubles(m)[ch] * 0.8 + mean[ch] * 0.2);
    rv.push_back(to_doubles(v)[ch] * 0.8 + var[ch] * 0.2);
  }
  EXPECT_TENSOR_NEAR(out[1].tensor, tensor_of(DType::Float32, {2}, rm), 1e-5, 1e-6);
  EXPECT_TENSOR_NEAR(out[2].tensor, tensor_of(DType::Float32, {2}, rv), 1e-5, 1e-6);
}

TEST(BatchNormKernel, BadShapesNameTheNode) {
  Tensor x = random_tensor(DType::Float32, {2, 3, 4}, 1);
  Tensor c3 = random_tensor(DType::Float32, {3}, 2);
  Tensor c4 = random_tensor(DType::Float32, {4}, 2);
  try {
    run_op1(make_case("BatchNormalization", {x, c4, c3, c3, c3}, {}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
  // Extra outputs without training mode.
  EXPECT_THROW(run_op(make_case("BatchNormalization", {x, c3, c3, c3, c3}, {}, 3)), Error);
}

TEST(InstanceNormKernel, MatchesReference) {
  for (DType dt : {DType::Float32, DType::Float16}) {
    std::vector<int64_t> shape = {2, 3, 5, 4};
    Tensor x = random_tensor(dt, shape, 21, -1, 3);
    Tensor s = random_tensor(dt, {3}, 22);
    Tensor b = random_tensor(dt, {3}, 23);
    Tensor y = run_op1(make_case("InstanceNormalization", {x, s, b}, {}));
    auto xd = to_doubles(x);
    std::vector<double> ref(xd.size());
    for (size_t plane = 0; plane < 6; ++plane) {
      double mean = 0, var = 0;
      for (size_t k = 0; k < 20; ++k) mean += xd[plane * 20 + k] / 20;
      for (size_t k = 0; k < 20; ++k) var += std::pow(xd[plane * 20 + k] - mean, 2) / 20;
      for (size_t k = 0; k < 20; ++k)
        ref[plane * 20 + k] =
            (xd[plane * 20 + k] - mean) / std::sqrt(var + 1e-5) * to_doubles(s)[plane % 3] +
            to_doubles(b)[plane % 3];
    }
    EXPECT_TENSOR_NEAR(y, tensor_of(dt, shape, ref), tol_of(dt) * 2, tol_of(dt) * 2);
  }
}

// Layer norm reference over the dims from `axis` on; scale/bias of the normalized shape.
std::vector<double> ref_layer_norm(const std::vector<double>& x, int64_t rows, int64_t cols,
                                   const std::vector<double>& scale,
                                   const std::vector<double>& bias, double eps,
                                   std::vector<double>* means, std::vector<double>* invs) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += x[static_cast<size_t>(r * cols + j)] / cols;
    for (int64_t j = 0; j < cols; ++j)
      var += std::pow(x[static_cast<size_t>(r * cols + j)] - mean, 2) / cols;
    double inv = 1 / std::sqrt(var + eps);
    for (int64_t j = 0; j < cols; ++j) {
      size_t i = static_cast<size_t>(r * cols + j);
      y[i] = (x[i] - mean) * inv * scale[static_cast<size_t>(j)] +
             (bias.empty() ? 0 : bias[static_cast<size_t>(j)]);
    }
    if (means) means->push_back(mean);
    if (invs) invs->push_back(inv);
  }
  return y;
}

TEST(LayerNormKernel, MatchesReferenceForAxesAndDtypes) {
  std::vector<int64_t> shape = {2, 3, 40};
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    for (int64_t axis : {-1, 1, 0, 2, -2}) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      std::vector<int64_t> norm_shape(shape.begin() + a, shape.end());
      int64_t rows = prod(shape, 0, static_cast<size_t>(a));
      int64_t cols = prod(shape, static_cast<size_t>(a), 3);
      Tensor x = random_tensor(dt, shape, 31, -2, 2);
      Tensor s = random_tensor(dt, norm_shape, 32);
      Tensor b = random_tensor(dt, norm_shape, 33);
      for (bool with_bias : {true, false}) {
        OpCase c = make_case("LayerNormalization", {x, s}, {Attribute::make_int("axis", axis)}, 3);
        if (with_bias) c.inputs.push_back(b);
        auto out = run_op(c);
        std::vector<double> means, invs;
        auto y =
            ref_layer_norm(to_doubles(x), rows, cols, to_doubles(s),
                           with_bias ? to_doubles(b) : std::vector<double>{}, 1e-5, &means, &invs);
        SCOPED_TRACE(fmt::format("{} axis {}", ir::dtype_name(dt), axis));
        EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(dt, shape, y), tol_of(dt) * 4, tol_of(dt) * 4);
        std::vector<int64_t> stats_shape = shape;
        for (size_t i = static_cast<size_t>(a); i < 3; ++i) stats_shape[i] = 1;
        EXPECT_TENSOR_NEAR(out[1].tensor, tensor_of(DType::Float32, stats_shape, means), 1e-5,
                           1e-5);
        EXPECT_TENSOR_NEAR(out[2].tensor, tensor_of(DType::Float32, stats_shape, invs), 1e-4, 1e-5);
      }
    }
  }
}

TEST(LayerNormKernel, BroadcastScaleAndDoubleStash) {
  std::vector<int64_t> shape = {4, 6};
  Tensor x = random_tensor(DType::Float32, shape, 41);
  // Scale [1, 6] broadcasts over rows; bias [6].
  Tensor s = random_tensor(DType::Float32, {1, 6}, 42);
  Tensor b = random_tensor(DType::Float32, {6}, 43);
  auto out = run_op(make_case(
      "LayerNormalization", {x, s, b},
      {Attribute::make_int("stash_type", 11), Attribute::make_float("epsilon", 1e-2f)}, 2));
  std::vector<double> means;
  auto y = ref_layer_norm(to_doubles(x), 4, 6, to_doubles(s), to_doubles(b),
                          static_cast<double>(1e-2f), &means, nullptr);
  EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(DType::Float32, shape, y), 1e-5, 1e-5);
  EXPECT_TENSOR_NEAR(out[1].tensor, tensor_of(DType::Float64, {4, 1}, means), 1e-6, 1e-6);
  // A scale that varies per row ([4, 1] against axis -1) is applied per row.
  Tensor per_row = random_tensor(DType::Float32, {4, 1}, 44);
  Tensor y2 = run_op1(make_case("LayerNormalization", {x, per_row}, {}));
  auto base =
      ref_layer_norm(to_doubles(x), 4, 6, std::vector<double>(6, 1.0), {}, 1e-5, nullptr, nullptr);
  for (size_t i = 0; i < base.size(); ++i) base[i] *= to_doubles(per_row)[i / 6];
  EXPECT_TENSOR_NEAR(y2, tensor_of(DType::Float32, shape, base), 1e-5, 1e-5);
  // Scale that does not broadcast.
  EXPECT_THROW(
      run_op1(make_case("LayerNormalization", {x, random_tensor(DType::Float32, {5}, 1)}, {})),
      Error);
}

TEST(GroupNormKernel, MatchesReference) {
  std::vector<int64_t> shape = {2, 6, 3, 4};
  for (DType dt : {DType::Float32, DType::Float16}) {
    Tensor x = random_tensor(dt, shape, 51, -1, 2);
    Tensor s = random_tensor(dt, {6}, 52);
    Tensor b = random_tensor(dt, {6}, 53);
    Tensor y = run_op1(
        make_case("GroupNormalization", {x, s, b},
                  {Attribute::make_int("num_groups", 3), Attribute::make_float("epsilon", 1e-3f)}));
    auto xd = to_doubles(x);
    std::vector<double> ref(xd.size());
    size_t block = 2 * 12;
    for (size_t g = 0; g < 6; ++g) {
      double mean = 0, var = 0;
      for (size_t k = 0; k < block; ++k) mean += xd[g * block + k] / block;
      for (size_t k = 0; k < block; ++k) var += std::pow(xd[g * block + k] - mean, 2) / block;
      for (size_t k = 0; k < block; ++k) {
        size_t ch = (g % 3) * 2 + k / 12;
        ref[g * block + k] =
            (xd[g * block + k] - mean) / std::sqrt(var + 1e-3) * to_doubles(s)[ch] +
            to_doubles(b)[ch];
      }
    }
    EXPECT_TENSOR_NEAR(y, tensor_of(dt, shape, ref), tol_of(dt) * 2, tol_of(dt) * 2);
  }
  Tensor x = random_tensor(DType::Float32, shape, 1);
  Tensor s6 = random_tensor(DType::Float32, {6}, 1);
  EXPECT_THROW(
      run_op1(make_case("GroupNormalization", {x, s6, s6}, {Attribute::make_int("num_groups", 4)})),
      Error);
}

TEST(LpNormKernel, MatchesReference) {
  std::vector<int64_t> shape = {3, 4, 5};
  Tensor x = random_tensor(DType::Float32, shape, 61);
  for (int64_t p : {1, 2})
    for (int64_t axis : {-1, 0, 1}) {
      Tensor y =
          run_op1(make_case("LpNormalization", {x},
                            {Attribute::make_int("p", p), Attribute::make_int("axis", axis)}));
      int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t outer = prod(shape, 0, static_cast<size_t>(a));
      int64_t len = shape[static_cast<size_t>(a)];
      int64_t inner = prod(shape, static_cast<size_t>(a) + 1, 3);
      auto xd = to_doubles(x);
      std::vector<double> ref(xd.size());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < inner; ++k) {
          double n = 0;
          for (int64_t j = 0; j < len; ++j) {
            double v = xd[static_cast<size_t>((o * len + j) * inner + k)];
            n += p == 1 ? std::fabs(v) : v * v;
          }
          if (p == 2) n = std::sqrt(n);
          for (int64_t j = 0; j < len; ++j) {
            size_t i = static_cast<size_t>((o * len + j) * inner + k);
            ref[i] = xd[i] / n;
          }
        }
      EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, shape, ref), 1e-5, 1e-6);
    }
  // A zero slice stays zero.
  Tensor z = tensor_of(DType::Float32, {2, 2}, {0, 0, 3, 4});
  EXPECT_TENSOR_NEAR(run_op1(make_case("LpNormalization", {z}, {})),
                     tensor_of(DType::Float32, {2, 2}, {0, 0, 0.6, 0.8}), 1e-6, 1e-7);
  EXPECT_THROW(run_op1(make_case("LpNormalization", {z}, {Attribute::make_int("p", 3)})), Error);
}

TEST(LrnKernel, MatchesReferenceForOddAndEvenSizes) {
  std::vector<int64_t> shape = {2, 7, 3, 2};
  Tensor x = random_tensor(DType::Float32, shape, 71);
  for (int64_t size : {3, 4, 1}) {
    Tensor y = run_op1(
        make_case("LRN", {x},
                  {Attribute::make_int("size", size), Attribute::make_float("alpha", 0.01f),
                   Attribute::make_float("beta", 0.6f), Attribute::make_float("bias", 2.0f)}));
    auto xd = to_doubles(x);
    std::vector<double> ref(xd.size());
    int64_t c = 7, spatial = 6;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t s = 0; s < spatial; ++s) {
          double sum = 0;
          int64_t lo = std::max<int64_t>(0, ch - (size - 1) / 2);
          int64_t hi = std::min<int64_t>(c - 1, ch + (size - 1) - (size - 1) / 2);
          for (int64_t k = lo; k <= hi; ++k)
            sum += std::pow(xd[static_cast<size_t>((n * c + k) * spatial + s)], 2);
          size_t i = static_cast<size_t>((n * c + ch) * spatial + s);
          ref[i] = xd[i] / std::pow(2.0 + static_cast<double>(0.01f) / size * sum,
                                    static_cast<double>(0.6f));
        }
    EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, shape, ref), 1e-5, 1e-6) << size;
  }
}

TEST(MeanVarianceNormKernel, DefaultAndCustomAxes) {
  std::vector<int64_t> shape = {2, 3, 4, 2};
  Tensor x = random_tensor(DType::Float32, shape, 81, -1, 3);
  auto check = [&](std::vector<int64_t> axes, bool set) {
    OpCase c = make_case("MeanVarianceNormalization", {x}, {});
    if (set) c.attributes.push_back(Attribute::make_ints("axes", axes));
    Tensor y = run_op1(c);
    std::vector<bool> red(4, false);
    for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + 4 : a)] = true;
    auto xd = to_doubles(x);
    // Group elements by their kept coordinates.
    std::map<std::vector<int64_t>, std::vector<size_t>> groups;
    for (size_t i = 0; i < xd.size(); ++i) {
      std::vector<int64_t> key;
      int64_t rest = static_cast<int64_t>(i);
      for (int64_t d = 3; d >= 0; --d) {
        int64_t coord = rest % shape[static_cast<size_t>(d)];
        rest /= shape[static_cast<size_t>(d)];
        key.push_back(red[static_cast<size_t>(d)] ? -1 : coord);
      }
      groups[key].push_back(i);
    }
    std::vector<double> ref(xd.size());
    for (const auto& [key, idx] : groups) {
      double mean = 0, var = 0;
      for (size_t i : idx) mean += xd[i] / static_cast<double>(idx.size());
      for (size_t i : idx) var += std::pow(xd[i] - mean, 2) / static_cast<double>(idx.size());
      for (size_t i : idx) ref[i] = (xd[i] - mean) / (std::sqrt(var) + 1e-9);
    }
    EXPECT_TENSOR_NEAR(y, tensor_of(DType::Float32, shape, ref), 1e-4, 1e-5);
  };
  check({0, 2, 3}, false);
  check({1}, true);
  check({-1, 0}, true);
}

// Softmax family reference along one axis.
std::vector<double> ref_softmax(const std::string& op, const std::vector<double>& x,
                                const std::vector<int64_t>& shape, int64_t axis) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  int64_t outer = prod(shape, 0, static_cast<size_t>(axis));
  int64_t len = shape[static_cast<size_t>(axis)];
  int64_t inner = prod(shape, static_cast<size_t>(axis) + 1, shape.size());
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * len + j) * inner + k); };
      double m = -INFINITY;
      int64_t best = 0;
      for (int64_t j = 0; j < len; ++j)
        if (x[at(j)] > m) {
          m = x[at(j)];
          best = j;
        }
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(x[at(j)] - m);
      for (int64_t j = 0; j < len; ++j) {
        if (op == "Softmax") y[at(j)] = std::exp(x[at(j)] - m) / sum;
        if (op == "LogSoftmax") y[at(j)] = x[at(j)] - m - std::log(sum);
        if (op == "Hardmax") y[at(j)] = j == best ? 1 : 0;
      }
    }
  return y;
}

TEST(SoftmaxKernels, MatchReferenceOnAllAxes) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    for (DType dt : {DType::Float32, DType::Float16, DType::Float64})
      for (std::vector<int64_t> shape :
           {std::vector<int64_t>{3, 4, 5}, {2, 1000}, {5, 300, 3}, {7}}) {
        Tensor x = random_tensor(dt, shape, 91, -10, 10);
        for (int64_t axis : {-1, 0, 1}) {
          if (axis >= static_cast<int64_t>(shape.size())) continue;
          Tensor y = run_op1(make_case(op, {x}, {Attribute::make_int("axis", axis)}));
          double tol = dt == DType::Float16 ? 4e-3 : dt == DType::Float64 ? 1e-12 : 2e-6;
          EXPECT_TENSOR_NEAR(y, tensor_of(dt, shape, ref_softmax(op, to_doubles(x), shape, axis)),
                             tol, tol)
              << op << " " << ir::dtype_name(dt) << " " << ir::shape_to_string(shape) << " axis "
              << axis;
        }
      }
}

TEST(SoftmaxKernels, LargeAndInfiniteInputs) {
  Tensor x = tensor_of(DType::Float32, {3, 4},
                       {1000, 1001, 1002, 1003, -INFINITY, 0, -INFINITY, 1, -90, -200, 0, 3});
  Tensor y = run_op1(make_case("Softmax", {x}, {}));
  EXPECT_TENSOR_NEAR(
      y, tensor_of(DType::Float32, {3, 4}, ref_softmax("Softmax", to_doubles(x), {3, 4}, -1)), 1e-6,
      1e-7);
  Tensor l = run_op1(make_case("LogSoftmax", {x}, {}));
  auto ref = ref_softmax("LogSoftmax", to_doubles(x), {3, 4}, -1);
  EXPECT_TENSOR_NEAR(l, tensor_of(DType::Float32, {3, 4}, ref), 1e-6, 1e-6);
  // Default axis is -1; axis out of range fails at inference naming the node.
  try {
    run_op1(make_case("Softmax", {x}, {Attribute::make_int("axis", 2)}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
}

TEST(DropoutKernel, InferenceIsIdentityWithTrueMask) {
  Tensor x = random_tensor(DType::Float32, {3, 4}, 101);
  auto out = run_op(make_case("Dropout", {x, tensor_of(DType::Float32, {}, {0.3})}, {}, 2));
  EXPECT_TENSOR_NEAR(out[0].tensor, x, 0, 0);
  EXPECT_TENSOR_NEAR(out[1].tensor, tensor_of(DType::Bool, {3, 4}, std::vector<double>(12, 1)), 0,
                     0);
  Tensor h = random_tensor(DType::Float16, {5}, 102);
  EXPECT_TENSOR_NEAR(run_op1(make_case("Dropout", {h}, {})), h, 0, 0);
  // Training mode with ratio 0 is an identity too.
  Tensor on = tensor_of(DType::Bool, {}, {1});
  auto t = run_op(make_case("Dropout", {x, tensor_of(DType::Float32, {}, {0.0}), on}, {}, 2));
  EXPECT_TENSOR_NEAR(t[0].tensor, x, 0, 0);
}

TEST(DropoutKernel, TrainingWithRatioIsRefused) {
  Tensor x = random_tensor(DType::Float32, {3, 4}, 101);
  Tensor on = tensor_of(DType::Bool, {}, {1});
  Tensor ratio = tensor_of(DType::Float32, {}, {0.5});
  // Known at compile time: no kernel accepts the node.
  auto g =
      testing::build_op_graph(make_case("Dropout", {x, ratio, on}, {}, 1, {false, true, true}));
  auto support = cpu::cpu_kernels().supports(*g->nodes()[0]);
  EXPECT_FALSE(support.ok);
  EXPECT_NE(support.reason.find("random"), std::string::npos) << support.reason;
  // Known only at run time: the run fails naming the node.
  try {
    run_op(make_case("Dropout", {x, ratio, on}, {}, 1));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
  }
  // Training mode off (given as input) is fine.
  Tensor off = tensor_of(DType::Bool, {}, {0});
  EXPECT_TENSOR_NEAR(run_op1(make_case("Dropout", {x, ratio, off}, {})), x, 0, 0);
}

}  // namespace
}  // namespace switchyard::testing
