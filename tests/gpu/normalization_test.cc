// CUDA normalization kernels against the CPU backend on seeded random data: LayerNormalization
// (BERT rows of 768, odd sizes, broadcast Scale/B, Mean/InvStdDev, stash_type double),
// inference BatchNormalization (resnet50/mobilenet_v2 shapes, mixed parameter dtypes; training
// mode refused), Instance/GroupNormalization, LpNormalization and MeanVarianceNormalization, for
// every float dtype and at --precision fp16/bf16.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/gpu_test_util.h"

namespace switchyard::testing {
namespace {

const std::vector<DType> kFloatTypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                        DType::Float64};
const std::vector<std::string> kLowPrecisions = {"fp16", "bf16"};

struct Tolerance {
  double rtol;
  double atol;
};

// The GPU reduces in another order than the CPU, and half results may round one ulp apart.
Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {4e-3, 4e-3};
    case DType::BFloat16:
      return {2e-2, 2e-2};
    case DType::Float64:
      return {1e-10, 1e-12};
    default:
      return {1e-4, 2e-5};
  }
}

// Tolerance of --precision fp16/bf16 runs (float32 data computed in 16-bit storage).
constexpr Tolerance kLowPrecision = {2e-2, 2e-2};

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }
Attribute float_attr(const char* name, float v) { return Attribute::make_float(name, v); }

OpCase layer_norm_case(DType dtype, std::vector<int64_t> x_shape, std::vector<int64_t> scale_shape,
                       std::vector<int64_t> bias_shape, std::vector<Attribute> attrs,
                       int num_outputs, uint64_t seed) {
  std::vector<std::optional<Tensor>> inputs = {
      random_tensor(dtype, x_shape, seed, -2.0, 3.0),
      random_tensor(dtype, scale_shape, seed + 1, 0.5, 1.5)};
  if (!bias_shape.empty()) inputs.push_back(random_tensor(dtype, bias_shape, seed + 2));
  return make_case("LayerNormalization", inputs, attrs, num_outputs);
}

TEST(CudaNormalization, LayerNormBertRows) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (int64_t rows : {1, 7, 128, 512}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " rows " + std::to_string(rows));
      expect_gpu_matches_cpu(layer_norm_case(dtype, {1, rows, 768}, {768}, {768},
                                             {float_attr("epsilon", 1e-12f)}, 1, seed += 3),
                             tol.rtol, tol.atol);
    }
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " with Mean and InvStdDev");
    expect_gpu_matches_cpu(layer_norm_case(dtype, {2, 64, 768}, {768}, {768}, {}, 3, seed += 3),
                           tol.rtol, tol.atol);
  }
}

TEST(CudaNormalization, LayerNormAxesAndOddSizes) {
  SY_SKIP_WITHOUT_GPU();
  struct Shape {
    std::vector<int64_t> x, scale, bias;
    int64_t axis;
  };
  const std::vector<Shape> shapes = {
      {{3, 5, 33}, {33}, {33}, -1},       // the last dim
      {{3, 5, 33}, {5, 33}, {5, 33}, 1},  // two normalized dims
      {{3, 5, 33}, {3, 5, 33}, {}, 0},    // one row, no bias
      {{4, 1500}, {1500}, {1500}, 1},     // rows longer than one warp handles
      {{2, 3, 2049}, {2049}, {}, 2},      // odd long rows
      {{6, 1}, {1}, {1}, -1},             // a single column: y = B
      {{2, 3, 4, 5}, {4, 5}, {5}, 2},     // B of fewer dims than Scale
  };
  uint64_t seed = 200;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + shape_to_string(s.x) + " axis " +
                   std::to_string(s.axis));
      expect_gpu_matches_cpu(
          layer_norm_case(dtype, s.x, s.scale, s.bias, {int_attr("axis", s.axis)}, 3, seed += 3),
          tol.rtol, tol.atol);
    }
  }
}

TEST(CudaNormalization, LayerNormBroadcastScaleAndBias) {
  SY_SKIP_WITHOUT_GPU();
  struct Shape {
    std::vector<int64_t> x, scale, bias;
    int64_t axis;
  };
  const std::vector<Shape> shapes = {
      {{4, 9, 16}, {1}, {16}, -1},              // scalar-like Scale
      {{4, 9, 16}, {16}, {1, 1}, -1},           // B broadcast over everything
      {{4, 9, 16}, {9, 1}, {9, 16}, -1},        // Scale and B vary per row (before the axis)
      {{4, 9, 16}, {4, 1, 16}, {1, 9, 1}, 2},   // both vary before the axis
      {{2, 3, 5, 7}, {3, 1, 7}, {1, 5, 1}, 2},  // two normalized dims
  };
  uint64_t seed = 300;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " scale " + shape_to_string(s.scale) +
                   " bias " + shape_to_string(s.bias));
      expect_gpu_matches_cpu(
          layer_norm_case(dtype, s.x, s.scale, s.bias, {int_attr("axis", s.axis)}, 3, seed += 3),
          tol.rtol, tol.atol);
    }
  }
}

TEST(CudaNormalization, LayerNormStashDoubleAndEmpty) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 400;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    SCOPED_TRACE(dtype_name(dtype));
    expect_gpu_matches_cpu(
        layer_norm_case(dtype, {5, 96}, {96}, {96},
                        {int_attr("stash_type", 11), float_attr("epsilon", 1e-3f)}, 3, seed += 3),
        tol.rtol, tol.atol);
    expect_gpu_matches_cpu(layer_norm_case(dtype, {0, 768}, {768}, {768}, {}, 3, seed += 3),
                           tol.rtol, tol.atol);
  }
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

TEST(CudaNormalization, BatchNormInference) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 64, 56, 56},   // resnet50 stem
      {2, 256, 14, 14},  // resnet50 stage 3
      {1, 2048, 7, 7},   // resnet50 last stage
      {1, 96, 28, 28},   // mobilenet_v2 expansion
      {3, 5, 7},         // odd sizes, one spatial dim
      {4, 10},           // no spatial dims
      {2, 3, 4, 5, 6},   // three spatial dims
      {0, 16, 8, 8},     // empty batch
  };
  uint64_t seed = 600;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + shape_to_string(shape));
      expect_gpu_matches_cpu(batch_norm_case(dtype, dtype, shape, {}, seed += 5), tol.rtol,
                             tol.atol);
    }
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " with float32 parameters, epsilon 1e-3");
    expect_gpu_matches_cpu(batch_norm_case(dtype, DType::Float32, {2, 32, 9, 11},
                                           {float_attr("epsilon", 1e-3f)}, seed += 5),
                           tol.rtol, tol.atol);
  }
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

TEST(CudaNormalization, InstanceNorm) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<std::vector<int64_t>> shapes = {
      {2, 32, 17, 19},  // odd spatial sizes
      {1, 4, 40, 40},   // planes longer than one warp handles
      {2, 3, 5},        // one spatial dim
      {1, 2, 3, 4, 5},  // three spatial dims
      {3, 7, 1, 1},     // single-element planes: y = B
      {0, 3, 4, 4},     // empty batch
  };
  uint64_t seed = 800;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (const auto& shape : shapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + shape_to_string(shape));
      expect_gpu_matches_cpu(channel_norm_case("InstanceNormalization", dtype, shape,
                                               {float_attr("epsilon", 1e-4f)}, seed += 3),
                             tol.rtol, tol.atol);
    }
  }
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(
        channel_norm_case("InstanceNormalization", DType::Float32, {2, 32, 17, 19}, {}, seed += 3),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

TEST(CudaNormalization, GroupNorm) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<int64_t> x;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {{2, 32, 14, 14}, 8},  // 4 channels per group, blocks of 784
      {{1, 6, 7}, 3},        // odd sizes
      {{2, 64, 32, 32}, 1},  // one group: long blocks
      {{2, 12, 5, 5}, 12},   // one channel per group, like InstanceNormalization
      {{3, 10}, 5},          // no spatial dims
      {{0, 8, 4, 4}, 2},     // empty batch
  };
  uint64_t seed = 900;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + shape_to_string(c.x) + " groups " +
                   std::to_string(c.groups));
      expect_gpu_matches_cpu(channel_norm_case("GroupNormalization", dtype, c.x,
                                               {int_attr("num_groups", c.groups)}, seed += 3),
                             tol.rtol, tol.atol);
    }
  }
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(channel_norm_case("GroupNormalization", DType::Float32, {2, 32, 14, 14},
                                             {int_attr("num_groups", 8)}, seed += 3),
                           kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

TEST(CudaNormalization, LpNorm) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<int64_t> x;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{3, 5, 7}, -1}, {{3, 5, 7}, 1}, {{3, 5, 7}, 0},
                                   {{16, 768}, -1}, {{9}, 0},       {{0, 4}, 1}};
  uint64_t seed = 1000;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (int64_t p : {1, 2})
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + shape_to_string(c.x) + " axis " +
                     std::to_string(c.axis) + " p " + std::to_string(p));
        expect_gpu_matches_cpu(make_case("LpNormalization", {random_tensor(dtype, c.x, seed += 1)},
                                         {int_attr("axis", c.axis), int_attr("p", p)}),
                               tol.rtol, tol.atol);
      }
    // An all-zero row stays zero.
    SCOPED_TRACE(std::string(dtype_name(dtype)) + " zero row");
    expect_gpu_matches_cpu(
        make_case("LpNormalization", {tensor_of(dtype, {2, 3}, {0, 0, 0, 0.5, -1.5, 2})}, {}),
        tol.rtol, tol.atol);
  }
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(
        make_case("LpNormalization", {random_tensor(DType::Float32, {16, 768}, seed += 1)}, {}),
        kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

TEST(CudaNormalization, MeanVarianceNorm) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    std::vector<int64_t> x;
    std::vector<int64_t> axes;  // empty = the default {0, 2, 3}
  };
  const std::vector<Case> cases = {
      {{2, 3, 5, 7}, {}},   {{2, 3, 5, 7}, {2, 3}}, {{2, 3, 5, 7}, {1}}, {{4, 33}, {-1}},
      {{2, 3, 40, 40}, {}}, {{3, 4, 5}, {0, 2}},    {{0, 3, 4, 4}, {}},
  };
  uint64_t seed = 1100;
  for (DType dtype : kFloatTypes) {
    Tolerance tol = tolerance_for(dtype);
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + shape_to_string(c.x) + " axes " +
                   shape_to_string(c.axes));
      std::vector<Attribute> attrs;
      if (!c.axes.empty()) attrs.push_back(Attribute::make_ints("axes", c.axes));
      expect_gpu_matches_cpu(make_case("MeanVarianceNormalization",
                                       {random_tensor(dtype, c.x, seed += 1, -1.0, 4.0)}, attrs),
                             tol.rtol, tol.atol);
    }
  }
  for (const std::string& precision : kLowPrecisions) {
    SCOPED_TRACE(precision);
    expect_gpu_matches_cpu(make_case("MeanVarianceNormalization",
                                     {random_tensor(DType::Float32, {2, 3, 5, 7}, seed += 1)}, {}),
                           kLowPrecision.rtol, kLowPrecision.atol, precision);
  }
}

}  // namespace
}  // namespace switchyard::testing
