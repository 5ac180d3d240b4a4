// GPU-only tests of the normalization family (src/backends/cuda/kernels/normalization.cc): the
// --precision fp16/bf16 runs of LayerNormalization, BatchNormalization, Instance/Group/Lp and
// MeanVarianceNormalization against the cpu, and the refusal of training-mode
// BatchNormalization. Every op, shape and dtype at fp32 against a plain reference runs in the op
// harness (tests/harness/cases/normalization.cc), on cpu, sim:0 and cuda:0.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace switchyard::testing {
namespace {

const std::vector<std::string> kLowPrecisions = {"fp16", "bf16"};

struct Tolerance {
  double rtol;
  double atol;
};

// Tolerance of --precision fp16/bf16 runs (float32 data computed in 16-bit storage).
constexpr Tolerance kLowPrecision = {2e-2, 2e-2};

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }

OpCase layer_norm_case(DType dtype, std::vector<int64_t> x_shape, std::vector<int64_t> scale_shape,
                       std::vector<int64_t> bias_shape, std::vector<Attribute> attrs,
                       int num_outputs, uint64_t seed) {
  std::vector<std::optional<Tensor>> inputs = {
      random_tensor(dtype, x_shape, seed, -2.0, 3.0),
      random_tensor(dtype, scale_shape, seed + 1, 0.5, 1.5)};
  if (!bias_shape.empty()) inputs.push_back(random_tensor(dtype, bias_shape, seed + 2));
  return make_case("LayerNormalization", inputs, attrs, num_outputs);
}

TEST(CudaNormalization, LayerNormLowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(
        layer_norm_case(DType::Float32, {1, 128, 768}, {768}, {768}, {}, 1, seed += 3),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
    expect_gpu_matches_cpu(layer_norm_case(DType::Float32, {3, 5, 33}, {5, 33}, {33},
                                           {int_attr("axis", 1)}, 3, seed += 3),
                           kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

OpCase batch_norm_case(DType dtype, DType param_dtype, std::vector<int64_t> x_shape,
                       std::vector<Attribute> attrs, uint64_t seed) {
  const int64_t c = x_shape[1];
  return make_case("BatchNormalization",
                   {random_tensor(dtype, x_shape, seed, -2.0, 2.0),
                    random_tensor(param_dtype, {c}, seed + 1, 0.5, 1.5),
                    random_tensor(param_dtype, {c}, seed + 2),
                    random_tensor(param_dtype, {c}, seed + 3, -0.5, 0.5),
                    random_tensor(param_dtype, {c}, seed + 4, 0.25, 2.0)},
                   std::move(attrs));
}

TEST(CudaNormalization, BatchNormLowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 600;
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(
        batch_norm_case(DType::Float32, DType::Float32, {1, 64, 56, 56}, {}, seed += 5),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

TEST(CudaNormalization, BatchNormTrainingModeIsNotClaimed) {
  SY_SKIP_WITHOUT_GPU();
  OpCase c = batch_norm_case(DType::Float32, DType::Float32, {2, 3, 4, 4},
                             {int_attr("training_mode", 1)}, 700);
  expect_error([&] { run_op_gpu(c); }, ErrorCode::PlacementFailed, "training_mode");
}

OpCase channel_norm_case(const char* op, DType dtype, std::vector<int64_t> x_shape,
                         std::vector<Attribute> attrs, uint64_t seed) {
  const int64_t c = x_shape[1];
  return make_case(
      op,
      {random_tensor(dtype, x_shape, seed, -1.0, 3.0),
       random_tensor(dtype, {c}, seed + 1, 0.5, 1.5), random_tensor(dtype, {c}, seed + 2)},
      std::move(attrs));
}

TEST(CudaNormalization, InstanceNormLowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 800;
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(
        channel_norm_case("InstanceNormalization", DType::Float32, {2, 32, 17, 19}, {}, seed += 3),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

TEST(CudaNormalization, GroupNormLowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(channel_norm_case("GroupNormalization", DType::Float32, {2, 32, 14, 14},
                                             {int_attr("num_groups", 8)}, seed += 3),
                           kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

TEST(CudaNormalization, LpNormLowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1000;
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(
        make_case("LpNormalization", {random_tensor(DType::Float32, {16, 768}, seed += 1)}, {}),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

TEST(CudaNormalization, MeanVarianceNormLowPrecision) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1100;
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(make_case("MeanVarianceNormalization",
                                     {random_tensor(DType::Float32, {2, 3, 5, 7}, seed += 1)}, {}),
                           kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

}  // namespace
}  // namespace switchyard::testing
