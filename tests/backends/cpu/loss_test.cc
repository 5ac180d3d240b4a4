// CPU kernels of the loss family against a plain reference (the ONNX spec's numpy one, in
// double) on seeded random data.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

struct LossRef {
  std::vector<double> loss;  // per element (reduction none) or one value
  std::vector<double> log_prob;
};

LossRef ref_loss(bool softmax, const Tensor& x, const Tensor& target,
                 const std::optional<Tensor>& weight, const std::string& reduction,
                 std::optional<int64_t> ignore) {
  int64_t n = x.dim(0), c = x.dim(1);
  int64_t d = x.numel() / std::max<int64_t>(n * c, 1);
  std::vector<double> lp = to_doubles(x);
  if (softmax) {
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < d; ++j) {
        double m = -INFINITY, s = 0;
        for (int64_t k = 0; k < c; ++k)
          m = std::max(m, lp[static_cast<size_t>((i * c + k) * d + j)]);
        for (int64_t k = 0; k < c; ++k)
          s += std::exp(lp[static_cast<size_t>((i * c + k) * d + j)] - m);
        for (int64_t k = 0; k < c; ++k)
          lp[static_cast<size_t>((i * c + k) * d + j)] -= m + std::log(s);
      }
  }
  std::vector<int64_t> t = target.to_int_vector();
  std::vector<double> w = weight ? to_doubles(*weight) : std::vector<double>{};
  LossRef r;
  r.log_prob = lp;
  double sum = 0, wsum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      int64_t label = t[static_cast<size_t>(i * d + j)];
      double l = 0, wt = 0;
      if (!ignore || label != *ignore) {
        wt = weight ? w[static_cast<size_t>(label)] : 1.0;
        l = -lp[static_cast<size_t>((i * c + label) * d + j)] * wt;
      }
      r.loss.push_back(l);
      sum += l;
      wsum += wt;
    }
  if (reduction == "sum") r.loss = {sum};
  if (reduction == "mean") r.loss = {sum / wsum};
  return r;
}

// Targets in [0, c), with about a quarter set to `ignore` when given.
Tensor make_target(DType dt, std::vector<int64_t> shape, int64_t c, uint64_t seed,
                   std::optional<int64_t> ignore) {
  Tensor t = random_tensor(DType::Float64, shape, seed, 0, static_cast<double>(c));
  std::vector<double> v = to_doubles(t);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = std::floor(v[i]);
    if (ignore && i % 4 == 1) v[i] = static_cast<double>(*ignore);
  }
  return tensor_of(dt, shape, v);
}

void check_loss(bool softmax, DType dt, std::vector<int64_t> shape, bool with_weight,
                const std::string& reduction, std::optional<int64_t> ignore, DType target_dt,
                uint64_t seed) {
  SCOPED_TRACE(fmt::format("{} {} {} weight={} reduction={} ignore={}", softmax ? "SCE" : "NLL",
                           ir::dtype_name(dt), ir::shape_to_string(shape), with_weight, reduction,
                           ignore ? std::to_string(*ignore) : "none"));
  int64_t c = shape[1];
  Tensor x = random_tensor(dt, shape, seed, -3, 3);
  std::vector<int64_t> tshape = shape;
  tshape.erase(tshape.begin() + 1);
  Tensor target = make_target(target_dt, tshape, c, seed + 1, ignore);
  std::optional<Tensor> weight;
  if (with_weight) weight = random_tensor(dt, {c}, seed + 2, 0.2, 1.5);
  std::vector<Attribute> attrs = {Attribute::make_string("reduction", reduction)};
  if (ignore) attrs.push_back(Attribute::make_int("ignore_index", *ignore));
  OpCase oc = make_case(softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss",
                        {x, target}, attrs, softmax ? 2 : 1);
  if (weight) oc.inputs.push_back(*weight);
  auto out = run_op(oc);
  LossRef ref = ref_loss(softmax, x, target, weight, reduction, ignore);
  double tol = dt == DType::Float16 ? 5e-3 : dt == DType::Float64 ? 1e-12 : 1e-5;
  std::vector<int64_t> loss_shape = reduction == "none" ? tshape : std::vector<int64_t>{};
  EXPECT_TENSOR_NEAR(out[0].tensor, tensor_of(dt, loss_shape, ref.loss), tol, tol);
  if (softmax) {
    EXPECT_TENSOR_NEAR(out[1].tensor, tensor_of(dt, shape, ref.log_prob), tol, tol);
  }
}

TEST(LossKernels, MatchReferenceAcrossRanksReductionsWeightsAndIgnore) {
  uint64_t seed = 1;
  for (bool softmax : {false, true})
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{5, 4}, {3, 5, 2}, {2, 3, 4, 5}, {2, 3, 1, 2, 2, 3}})
      for (const char* reduction : {"none", "sum", "mean"})
        for (bool weight : {false, true})
          for (std::optional<int64_t> ignore : {std::optional<int64_t>{}, {1}, {-5}, {100}}) {
            DType target_dtype = seed % 2 ? DType::Int64 : DType::Int32;
            check_loss(softmax, DType::Float32, shape, weight, reduction, ignore, target_dtype,
                       seed++);
          }
}

TEST(LossKernels, HalfAndDouble) {
  for (DType dt : {DType::Float16, DType::Float64, DType::BFloat16})
    for (bool softmax : {false, true}) {
      if (dt == DType::BFloat16) continue;
      check_loss(softmax, dt, {4, 3, 2}, true, "mean", 2, DType::Int64, 7);
      check_loss(softmax, dt, {4, 3}, false, "none", std::nullopt, DType::Int64, 8);
    }
}

TEST(LossKernels, AllIgnoredMeanIsNaNAsInTheSpec) {
  Tensor x = random_tensor(DType::Float32, {2, 3}, 1);
  Tensor t = tensor_of(DType::Int64, {2}, {-1, -1});
  auto out = run_op(
      make_case("NegativeLogLikelihoodLoss", {x, t}, {Attribute::make_int("ignore_index", -1)}));
  EXPECT_TRUE(std::isnan(out[0].tensor.data<float>()[0]));
  auto sum = run_op(make_case(
      "NegativeLogLikelihoodLoss", {x, t},
      {Attribute::make_int("ignore_index", -1), Attribute::make_string("reduction", "sum")}));
  EXPECT_EQ(sum[0].tensor.data<float>()[0], 0.0f);
}

TEST(LossKernels, ErrorsNameTheNode) {
  Tensor x = random_tensor(DType::Float32, {2, 3, 4}, 1);
  auto expect_error = [](const OpCase& c, const std::string& what) {
    try {
      run_op(c);
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("node 'node'"), std::string::npos) << e.what();
    }
  };
  Tensor bad_label = tensor_of(DType::Int64, {2, 4}, {0, 1, 2, 3, 0, 0, 0, 0});
  expect_error(make_case("NegativeLogLikelihoodLoss", {x, bad_label}, {}), "label out of range");
  expect_error(make_case("SoftmaxCrossEntropyLoss", {x, bad_label}, {}), "label out of range");
  Tensor neg = tensor_of(DType::Int32, {2, 4}, {0, -1, 2, 1, 0, 0, 0, 0});
  expect_error(make_case("NegativeLogLikelihoodLoss", {x, neg}, {}), "negative label");
  Tensor wrong_shape = tensor_of(DType::Int64, {2, 3}, {0, 0, 0, 0, 0, 0});
  expect_error(make_case("NegativeLogLikelihoodLoss", {x, wrong_shape}, {}), "target shape");
  Tensor ok = tensor_of(DType::Int64, {2, 4}, {0, 1, 2, 1, 0, 0, 0, 0});
  expect_error(
      make_case("NegativeLogLikelihoodLoss", {x, ok}, {Attribute::make_string("reduction", "max")}),
      "reduction");
  expect_error(
      make_case("NegativeLogLikelihoodLoss", {x, ok, random_tensor(DType::Float32, {4}, 1)}, {}),
      "weight size");
  expect_error(
      make_case("NegativeLogLikelihoodLoss",
                {random_tensor(DType::Float32, {3}, 1), tensor_of(DType::Int64, {}, {0})}, {}),
      "rank 1 input");
}

}  // namespace
}  // namespace switchyard::testing
