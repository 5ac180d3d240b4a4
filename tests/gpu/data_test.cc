// GPU-only tests of the shape and data-movement kernels (src/backends/cuda/kernels/data.cc,
// gather_scatter.cc, resize.cc): every float32 case of the views, Transpose, Concat, Split,
// Slice, Pad, Tile, ConstantOfShape, Range, Trilu, EyeLike, DepthToSpace/SpaceToDepth, the
// gathers, OneHot and Resize run with 16-bit storage (--precision fp16/bf16) against the cpu;
// the refusals (rank above 8, training-mode Dropout, bad reshapes) and out-of-range indices
// failing the run naming the node. The fp32 cases of every dtype, against the cpu or a plain
// reference, run in the op harness (tests/harness/cases/shape.cc, gather_scatter.cc,
// image.cc) on cpu, sim:0 and cuda:0; the few direct fp32 comparisons left here are the
// cases whose precision run needs their fp32 twin beside it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "harness/cases/resize_cases.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

using Shape = std::vector<int64_t>;

const std::vector<DType> kDtypes = {DType::Float32, DType::Float16, DType::Int64, DType::Bool,
                                    DType::UInt8};
const std::vector<std::string> kLowPrecisions = {"fp16", "bf16"};

Attribute int_attr(const char* name, int64_t v) { return Attribute::make_int(name, v); }
Attribute ints_attr(const char* name, std::vector<int64_t> v) {
  return Attribute::make_ints(name, std::move(v));
}
Attribute string_attr(const char* name, const char* v) { return Attribute::make_string(name, v); }

// Random data of any plain dtype (numbers in [-50, 50), bools at random).
Tensor data_of(DType dtype, const Shape& shape, uint64_t seed) {
  return random_any(dtype, shape, seed);
}

// Random indices in [-dim, dim) (negative ones count from the end).
Tensor indices_of(DType dtype, const Shape& shape, int64_t dim, uint64_t seed) {
  return random_tensor(dtype, shape, seed, static_cast<double>(-dim), static_cast<double>(dim));
}

// A float32 case of data movement, run with 16-bit storage (--precision fp16/bf16); the
// movement itself, of every dtype at fp32, is checked by the op harness.
void expect_moved(const OpCase& c) {
  bool has_f32 = false;
  for (const auto& in : c.inputs) has_f32 = has_f32 || (in && in->dtype() == DType::Float32);
  if (!has_f32) return;
  for (const std::string& p : kLowPrecisions) expect_gpu_matches_cpu(c, 2e-2, 1e-2, p);
}

std::string trace(DType dtype, const Shape& shape) {
  return std::string(dtype_name(dtype)) + " " + shape_to_string(shape);
}

TEST(CudaData, ReshapeFlattenSqueezeUnsqueezeIdentity) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = data_of(dt, {2, 3, 4}, ++seed);
    expect_moved(make_case("Reshape", {x, int64_tensor({0, -1})}));
    expect_moved(make_case("Reshape", {x, int64_tensor({4, -1, 2})}));
    expect_moved(make_case("Reshape", {x, int64_tensor({1, 2, 1, 3, 2, 2})}));
    Tensor empty = data_of(dt, {0, 3}, ++seed);
    expect_moved(make_case("Reshape", {empty, int64_tensor({3, 0})}, {int_attr("allowzero", 1)}));
    expect_moved(make_case("Reshape", {empty, int64_tensor({0, 3})}));
    Tensor y = data_of(dt, {2, 1, 3, 1}, ++seed);
    for (int64_t axis : {0, 1, -1, 4})
      expect_moved(make_case("Flatten", {y}, {int_attr("axis", axis)}));
    expect_moved(make_case("Squeeze", {y}));
    expect_moved(make_case("Squeeze", {y, int64_tensor({-1, 1})}));
    expect_moved(make_case("Unsqueeze", {y, int64_tensor({0, -1})}));
    expect_moved(make_case("Unsqueeze", {data_of(dt, {}, ++seed), int64_tensor({0})}));
    expect_moved(make_case("Identity", {y}));
    expect_moved(make_case("Identity", {data_of(dt, {7}, ++seed)}));
  }
  Tensor x = random_tensor(DType::Float32, {2, 3, 4}, 1);
  expect_error(
      [&] {
        run_op_gpu(make_case("Reshape", {x, int64_tensor({5, -1})}));
      },
      ErrorCode::InvalidArgument, "cannot reshape");
  expect_error(
      [&] {
        run_op_gpu(make_case("Squeeze", {x, int64_tensor({0})}));
      },
      ErrorCode::InvalidArgument, "cannot squeeze");
}

TEST(CudaData, DropoutInference) {
  SY_SKIP_WITHOUT_GPU();
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_tensor(dt, {3, 5, 7}, 200);
    Tensor ratio = tensor_of(DType::Float32, {}, {0.3});
    expect_moved(make_case("Dropout", {x}));
    expect_moved(make_case("Dropout", {x, ratio, bool_scalar(false)}, {}, 2));
    expect_moved(
        make_case("Dropout", {x, tensor_of(DType::Float32, {}, {0.0}), bool_scalar(true)}, {}, 2));
    expect_moved(make_case("Dropout", {random_tensor(dt, {0, 4}, 201)}, {}, 2));
  }
  Tensor x = random_tensor(DType::Float32, {4, 4}, 202);
  Tensor half = tensor_of(DType::Float32, {}, {0.5});
  // Training mode fed at run time: refused when the kernel runs.
  expect_error(
      [&] {
        run_op_gpu(make_case("Dropout", {x, half, bool_scalar(true)}));
      },
      ErrorCode::InvalidArgument, "random numbers");
  // Training mode as a constant: refused at placement.
  expect_error(
      [&] {
        run_op_gpu(make_case("Dropout", {x, half, bool_scalar(true)}, {}, 1, {false, true, true}));
      },
      ErrorCode::PlacementFailed, "random numbers");
}

TEST(CudaData, Transpose) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;  // empty: the default (reversed dims)
  };
  const std::vector<Case> cases = {
      {{67, 45}, {}},                                        // 2-D, tiled
      {{3, 40, 33}, {0, 2, 1}},                              // batched last-two-dims, tiled
      {{2, 3, 17, 19}, {0, 2, 3, 1}},                        // NCHW -> NHWC
      {{2, 17, 19, 3}, {0, 3, 1, 2}},                        // NHWC -> NCHW
      {{2, 64, 65}, {2, 1, 0}},                              // strided batch
      {{2, 3, 4, 5, 6, 7}, {5, 0, 3, 1, 4, 2}},              // rank 6, generic
      {{2, 3, 2, 3, 2, 3, 2, 2}, {7, 6, 5, 4, 3, 2, 1, 0}},  // rank 8
      {{7}, {0}},
      {{1, 1, 5}, {2, 0, 1}},
      {{0, 3}, {1, 0}},
      {{5, 0, 4}, {2, 0, 1}},
      // A contiguous innermost dim moves in chunks of up to 16 bytes (BERT's head split and
      // merge): 16 bytes for most dtypes here, narrower where the length does not divide.
      {{2, 5, 3, 16}, {0, 2, 1, 3}},
      {{2, 3, 5, 16}, {0, 2, 1, 3}},
      {{3, 4, 2, 6}, {1, 0, 2, 3}},
      {{2, 3, 4, 2}, {2, 0, 1, 3}},
  };
  uint64_t seed = 400;
  for (DType dt : kDtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(trace(dt, c.shape));
      std::vector<Attribute> attrs;
      if (!c.perm.empty()) attrs.push_back(ints_attr("perm", c.perm));
      expect_moved(make_case("Transpose", {data_of(dt, c.shape, ++seed)}, attrs));
    }
  // Ranks above the parameter structs' are refused at placement, not at run time.
  expect_error(
      [&] { run_op_gpu(make_case("Transpose", {data_of(DType::Float32, Shape(9, 2), ++seed)})); },
      ErrorCode::PlacementFailed, "rank up to 8");
}

TEST(CudaData, Concat) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 500;
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      size_t a = static_cast<size_t>(axis < 0 ? axis + 3 : axis);
      std::vector<std::optional<Tensor>> ins;
      for (int64_t len : {2, 0, 3, 1}) {
        Shape s = {2, 3, 4};
        s[a] = len;
        ins.push_back(data_of(dt, s, ++seed));
      }
      expect_moved(make_case("Concat", ins, {int_attr("axis", axis)}));
    }
    // More inputs than one launch takes (32), some empty.
    std::vector<std::optional<Tensor>> many;
    for (int64_t i = 0; i < 41; ++i) many.push_back(data_of(dt, {2, i % 3, 5}, ++seed));
    expect_moved(make_case("Concat", many, {int_attr("axis", 1)}));
    expect_moved(make_case("Concat", {data_of(dt, {6}, ++seed)}, {int_attr("axis", 0)}));
  }
}

TEST(CudaData, Split) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 600;
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = data_of(dt, {6, 7, 4}, ++seed);
    expect_moved(make_case("Split", {x, int64_tensor({2, 0, 5})}, {int_attr("axis", 1)}, 3));
    expect_moved(make_case("Split", {x}, {}, 3));
    expect_moved(make_case("Split", {x}, {int_attr("axis", -2), int_attr("num_outputs", 3)}, 3));
    expect_moved(make_case("Split", {x, int64_tensor({1, 3})}, {int_attr("axis", -1)}, 2));
    expect_moved(make_case("Split", {data_of(dt, {0, 4}, ++seed)}, {int_attr("axis", 1)}, 2));
  }
}

TEST(CudaData, Slice) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> starts, ends, axes, steps;  // empty axes/steps: omitted
  };
  const std::vector<Case> cases = {
      {{5, 6, 7}, {1, -1}, {4, 100}, {}, {}},
      {{5, 6, 7}, {-1}, {-100}, {1}, {-2}},     // negative step to the front
      {{5, 6, 7}, {10}, {-10}, {-1}, {-1}},     // clamped reversed axis
      {{5, 6, 7}, {2, 0}, {2, 5}, {0, 2}, {}},  // empty result
      {{5, 6, 7}, {0, 1, 6}, {5, 6, 0}, {0, 1, 2}, {2, 3, -3}},
      {{20}, {3}, {17}, {}, {4}},
      {{2, 3, 2, 3, 2, 3}, {0, 1, -1}, {2, 3, -3}, {0, -1, 2}, {1, 1, -1}},
      {{4, 0, 3}, {0}, {2}, {0}, {}},
      {{5, 6, 7}, {4}, {-100}, {0}, {std::numeric_limits<int64_t>::min()}},  // one element
      // Inner rows copied in chunks when the start keeps them aligned, element by element
      // when it does not.
      {{6, 4, 32}, {1, 0, 8}, {5, 3, 24}, {0, 1, 2}, {}},
      {{6, 4, 32}, {1, 0, 1}, {5, 3, 17}, {0, 1, 2}, {}},
      {{6, 4, 32}, {0, 0}, {6, 4}, {0, 1}, {2, 3}},
  };
  uint64_t seed = 700;
  for (DType dt : kDtypes)
    for (const Case& c : cases) {
      SCOPED_TRACE(trace(dt, c.shape));
      std::vector<std::optional<Tensor>> ins = {data_of(dt, c.shape, ++seed),
                                                int64_tensor(c.starts), int64_tensor(c.ends)};
      ins.push_back(c.axes.empty() ? std::nullopt : std::optional<Tensor>(int64_tensor(c.axes)));
      if (!c.steps.empty()) ins.push_back(int64_tensor(c.steps));
      if (c.axes.empty() && c.steps.empty()) ins.pop_back();
      expect_moved(make_case("Slice", ins));
    }
  // int32 starts/ends.
  Tensor x = data_of(DType::Float32, {5, 6}, ++seed);
  expect_moved(make_case(
      "Slice", {x, tensor_of(DType::Int32, {2}, {1, -2}), tensor_of(DType::Int32, {2}, {-1, 0}),
                std::nullopt, tensor_of(DType::Int32, {2}, {1, -1})}));
}

TEST(CudaData, PadEveryMode) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    Shape shape;
    std::vector<int64_t> pads, axes;  // empty axes: omitted
  };
  const std::vector<Case> cases = {
      {{3, 4, 5}, {1, 0, 2, 2, 1, 0}, {}},
      {{3, 4, 5}, {0, 3, 5, 1, 4, 6}, {}},    // pads longer than the axis (reflect folds back)
      {{3, 4, 5}, {2, 1, 1, 0}, {-1, 0}},     // axes input
      {{3, 4, 5}, {-1, 0, 1, 0, -1, 2}, {}},  // negative pads crop
      {{6}, {2, 3}, {}},
      {{2, 1, 3, 2, 1, 2}, {1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0}, {}},
      {{1, 3, 4}, {0, 0, 0, 0, 0, 0}, {}},
  };
  uint64_t seed = 800;
  for (const char* mode : {"constant", "reflect", "edge", "wrap"})
    for (DType dt : kDtypes)
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(mode) + " " + trace(dt, c.shape));
        std::vector<std::optional<Tensor>> ins = {data_of(dt, c.shape, ++seed),
                                                  int64_tensor(c.pads)};
        bool constant = std::string(mode) == "constant";
        ins.push_back(constant ? std::optional<Tensor>(data_of(dt, {}, ++seed)) : std::nullopt);
        if (!c.axes.empty()) ins.push_back(int64_tensor(c.axes));
        expect_moved(make_case("Pad", ins, {string_attr("mode", mode)}));
      }
  // Constant padding of an empty axis; the default pad value (zero).
  for (DType dt : kDtypes) {
    expect_moved(make_case("Pad", {data_of(dt, {0, 3}, ++seed), int64_tensor({1, 0, 2, 1})}));
    expect_moved(make_case("Pad", {data_of(dt, {2, 3}, ++seed), int64_tensor({1, 1, 0, 2})}));
  }
  // Under --precision the float32 constant_value meets 16-bit data.
  OpCase c = make_case("Pad", {random_tensor(DType::Float32, {2, 3}, ++seed),
                               int64_tensor({1, 2, 0, 1}), tensor_of(DType::Float32, {}, {0.37})});
  for (const std::string& p : kLowPrecisions) expect_gpu_matches_cpu(c, 2e-2, 1e-2, p);
}

TEST(CudaData, Tile) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 900;
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    expect_moved(make_case("Tile", {data_of(dt, {2, 3, 4}, ++seed), int64_tensor({2, 1, 3})}));
    expect_moved(make_case("Tile", {data_of(dt, {2, 3, 4}, ++seed), int64_tensor({1, 0, 2})}));
    expect_moved(make_case("Tile", {data_of(dt, {5}, ++seed), int64_tensor({3})}));
    expect_moved(
        make_case("Tile", {data_of(dt, {1, 2, 1, 3, 2}, ++seed), int64_tensor({2, 2, 3, 1, 2})}));
  }
}

TEST(CudaData, ConstantOfShape) {
  SY_SKIP_WITHOUT_GPU();
  const std::vector<Tensor> values = {
      tensor_of(DType::Int32, {1}, {7}),       tensor_of(DType::Float16, {1}, {1.5}),
      tensor_of(DType::Float32, {1}, {-2.25}), tensor_of(DType::Bool, {1}, {1}),
      tensor_of(DType::UInt8, {1}, {200}),     tensor_of(DType::Int64, {1}, {-123456789012}),
      tensor_of(DType::Float64, {1}, {0.1}),
  };
  for (const Shape& shape : {Shape{2, 3}, Shape{0}, Shape{4, 1, 2, 1, 3}, Shape{}}) {
    SCOPED_TRACE(shape_to_string(shape));
    // No value: float32 zeros (16-bit ones under --precision).
    OpCase zeros = make_case("ConstantOfShape", {int64_tensor(shape)});
    expect_gpu_matches_cpu(zeros, 0.0, 0.0);
    for (const std::string& p : kLowPrecisions) expect_gpu_matches_cpu(zeros, 0.0, 0.0, p);
    for (const Tensor& v : values) {
      SCOPED_TRACE(dtype_name(v.dtype()));
      OpCase c =
          make_case("ConstantOfShape", {int64_tensor(shape)}, {Attribute::make_tensor("value", v)});
      expect_gpu_matches_cpu(c, 0.0, 0.0);
      if (v.dtype() == DType::Float32)
        for (const std::string& p : kLowPrecisions) expect_gpu_matches_cpu(c, 2e-2, 1e-2, p);
    }
  }
}

TEST(CudaData, Range) {
  SY_SKIP_WITHOUT_GPU();
  struct Case {
    DType dtype;
    double start, limit, delta;
  };
  const std::vector<Case> cases = {
      {DType::Int64, 0, 10, 3},         {DType::Int64, 10, -5, -2},
      {DType::Int64, 5, 5, 1},          {DType::Int32, -7, 20, 4},
      {DType::Int16, 3, -30, -7},       {DType::Float32, 0.5, 3.7, 0.3},
      {DType::Float32, 1, -2, -0.1},    {DType::Float64, -1, 1, 0.01},
      {DType::Float32, 0, 100000, 1.5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " " + std::to_string(c.start) + " " +
                 std::to_string(c.limit) + " " + std::to_string(c.delta));
    OpCase oc =
        make_case("Range", {tensor_of(c.dtype, {}, {c.start}), tensor_of(c.dtype, {}, {c.limit}),
                            tensor_of(c.dtype, {}, {c.delta})});
    // Floats: one rounding per element, as the CPU's contracted start + i * delta has.
    expect_gpu_matches_cpu(oc, 1e-6, 1e-6);
    // fp16 cannot hold values past 65504 (the 0..100000 case): float32 only there.
    if (c.dtype == DType::Float32 && std::abs(c.limit) < 65504)
      for (const std::string& p : kLowPrecisions) expect_gpu_matches_cpu(oc, 2e-2, 1e-2, p);
  }
}

TEST(CudaData, TriluAndEyeLike) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1000;
  for (DType dt : kDtypes)
    for (const Shape& shape : {Shape{2, 3, 5, 4}, Shape{6, 6}, Shape{0, 3, 3}, Shape{3, 1, 7}}) {
      SCOPED_TRACE(trace(dt, shape));
      Tensor x = data_of(dt, shape, ++seed);
      for (int64_t upper : {0, 1}) {
        expect_moved(make_case("Trilu", {x}, {int_attr("upper", upper)}));
        for (int64_t k : {0, 2, -3, 100, -100})
          expect_moved(make_case("Trilu", {x, int64_scalar(k)}, {int_attr("upper", upper)}));
      }
    }
  for (DType dt : kDtypes)
    for (int64_t k : {0, 2, -1, 10, -10}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " k " + std::to_string(k));
      expect_moved(make_case("EyeLike", {data_of(dt, {4, 6}, ++seed)}, {int_attr("k", k)}));
      expect_moved(make_case("EyeLike", {data_of(dt, {5, 3}, ++seed)}, {int_attr("k", k)}));
      for (DType to : {DType::Int32, DType::Float16, DType::Bool, DType::Float32})
        expect_moved(make_case("EyeLike", {data_of(dt, {4, 6}, ++seed)},
                               {int_attr("k", k), int_attr("dtype", static_cast<int64_t>(to))}));
    }
}

TEST(CudaData, DepthToSpaceAndSpaceToDepth) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1100;
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (const char* mode : {"DCR", "CRD"})
      expect_moved(make_case("DepthToSpace", {data_of(dt, {2, 8, 3, 5}, ++seed)},
                             {int_attr("blocksize", 2), string_attr("mode", mode)}));
    expect_moved(make_case("DepthToSpace", {data_of(dt, {1, 27, 2, 2}, ++seed)},
                           {int_attr("blocksize", 3)}));
    expect_moved(
        make_case("SpaceToDepth", {data_of(dt, {2, 3, 6, 4}, ++seed)}, {int_attr("blocksize", 2)}));
    expect_moved(
        make_case("SpaceToDepth", {data_of(dt, {0, 3, 6, 4}, ++seed)}, {int_attr("blocksize", 2)}));
  }
}

TEST(CudaData, Gather) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1200;
  const Shape shape = {5, 6, 7};
  for (DType dt : kDtypes)
    for (DType it : {DType::Int64, DType::Int32})
      for (int64_t axis : {0, 1, 2, -1}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::string(dtype_name(it)) + " axis " +
                     std::to_string(axis));
        int64_t dim = shape[static_cast<size_t>(axis < 0 ? axis + 3 : axis)];
        Tensor x = data_of(dt, shape, ++seed);
        std::vector<Attribute> attrs = {int_attr("axis", axis)};
        expect_moved(make_case("Gather", {x, indices_of(it, {2, 3}, dim, ++seed)}, attrs));
        expect_moved(make_case("Gather", {x, indices_of(it, {}, dim, ++seed)}, attrs));
        expect_moved(make_case("Gather", {x, indices_of(it, {0}, dim, ++seed)}, attrs));
      }
  // An embedding lookup.
  expect_moved(make_case("Gather", {random_tensor(DType::Float32, {1000, 64}, ++seed),
                                    indices_of(DType::Int64, {4, 17}, 1000, ++seed)}));
}

// Index tuples of shape idx_shape (last dim = dims.size()), column j in [-dims[j], dims[j]).
Tensor tuples_of(const Shape& idx_shape, const Shape& dims, uint64_t seed) {
  Tensor t(DType::Int64, idx_shape);
  Tensor r = random_tensor(DType::Float64, idx_shape, seed, 0.0, 1.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t d = dims[static_cast<size_t>(i) % dims.size()];
    t.data<int64_t>()[i] =
        static_cast<int64_t>(std::floor(r.data<double>()[i] * static_cast<double>(2 * d))) - d;
  }
  return t;
}

TEST(CudaData, GatherElementsAndGatherND) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1300;
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = data_of(dt, {4, 5, 6}, ++seed);
    expect_moved(make_case("GatherElements", {x, indices_of(DType::Int64, {3, 5, 6}, 4, ++seed)}));
    expect_moved(make_case("GatherElements", {x, indices_of(DType::Int32, {4, 8, 2}, 5, ++seed)},
                           {int_attr("axis", 1)}));
    expect_moved(make_case("GatherElements", {x, indices_of(DType::Int64, {2, 5, 9}, 6, ++seed)},
                           {int_attr("axis", -1)}));
    expect_moved(make_case("GatherElements", {x, indices_of(DType::Int64, {0, 5, 6}, 4, ++seed)}));
    // GatherND: tuples of 1, 2 and 3 indices, then batch_dims 1 and 2.
    expect_moved(make_case("GatherND", {x, tuples_of({3, 1}, {4}, ++seed)}));
    expect_moved(make_case("GatherND", {x, tuples_of({2, 2, 2}, {4, 5}, ++seed)}));
    expect_moved(make_case("GatherND", {x, tuples_of({7, 3}, {4, 5, 6}, ++seed)}));
    expect_moved(
        make_case("GatherND", {x, tuples_of({4, 3, 1}, {5}, ++seed)}, {int_attr("batch_dims", 1)}));
    expect_moved(
        make_case("GatherND", {x, tuples_of({4, 5, 1}, {6}, ++seed)}, {int_attr("batch_dims", 2)}));
    expect_moved(make_case("GatherND", {x, tuples_of({0, 2}, {4, 5}, ++seed)}));
  }
}

TEST(CudaData, OneHot) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1600;
  for (DType dt : kDtypes)
    for (int64_t axis : {-1, 0, 1}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " axis " + std::to_string(axis));
      Tensor values = data_of(dt, {2}, ++seed);
      std::vector<Attribute> attrs = {int_attr("axis", axis)};
      // Indices in [-6, 6) against depth 5: some lie outside and give all-off rows.
      expect_moved(make_case(
          "OneHot", {indices_of(DType::Int64, {3, 4}, 6, ++seed), int64_scalar(5), values}, attrs));
      // Float indices (truncated) and a fractional depth; not under --precision, where the
      // indices themselves would be rounded to 16 bits.
      expect_gpu_matches_cpu(make_case("OneHot",
                                       {random_tensor(DType::Float32, {2, 3}, ++seed, -4.5, 4.5),
                                        tensor_of(DType::Float32, {}, {4.5}), values},
                                       attrs),
                             0.0, 0.0);
      expect_moved(make_case(
          "OneHot", {indices_of(DType::Int32, {0, 3}, 3, ++seed), int64_scalar(3), values}, attrs));
    }
}

// Resize ---------------------------------------------------------------------------------

// The configurations, shared with the op harness (harness/cases/resize_cases.h).
using resize::resize_cases;
using resize::resize_op;
using resize::ResizeCase;

TEST(CudaData, Resize) {
  SY_SKIP_WITHOUT_GPU();
  uint64_t seed = 1700;
  for (const ResizeCase& r : resize_cases()) {
    SCOPED_TRACE(r.name);
    OpCase c = resize_op(random_tensor(DType::Float32, {2, 3, 7, 9}, ++seed, -2.0, 2.0), r);
    expect_gpu_matches_cpu(c, 1e-4, 1e-5);
    for (const std::string& p : kLowPrecisions) expect_gpu_matches_cpu(c, 2e-2, 2e-2, p);
    // Other dtypes: half storage, integers rounded and saturated, bool (nearest only).
    expect_gpu_matches_cpu(resize_op(random_tensor(DType::Float16, {1, 3, 7, 9}, ++seed), r), 2e-3,
                           2e-3);
    expect_gpu_matches_cpu(resize_op(random_tensor(DType::BFloat16, {1, 3, 7, 9}, ++seed), r), 2e-2,
                           2e-2);
    expect_gpu_matches_cpu(resize_op(random_tensor(DType::Float64, {1, 3, 7, 9}, ++seed), r), 1e-4,
                           1e-5);
    expect_gpu_matches_cpu(
        resize_op(random_tensor(DType::UInt8, {1, 3, 7, 9}, ++seed, 0.0, 256.0), r), 0, 0);
    expect_gpu_matches_cpu(resize_op(data_of(DType::Int64, {1, 3, 7, 9}, ++seed), r), 0, 0);
    bool nearest = true;
    for (const Attribute& a : r.attrs)
      if (a.name == "mode" && a.s != "nearest") nearest = false;
    if (nearest)
      expect_gpu_matches_cpu(resize_op(data_of(DType::Bool, {1, 3, 7, 9}, ++seed), r), 0, 0);
  }
  // Rank 1, rank 5 (N-linear) and an empty batch.
  ResizeCase linear{"", {string_attr("mode", "linear")}, {1, 1, 2, 0.5f, 1.5f}};
  expect_gpu_matches_cpu(resize_op(random_tensor(DType::Float32, {1, 2, 3, 4, 5}, ++seed), linear),
                         1e-4, 1e-5);
  ResizeCase one{"", {string_attr("mode", "cubic")}, {2.5f}};
  expect_gpu_matches_cpu(resize_op(random_tensor(DType::Float32, {6}, ++seed), one), 1e-4, 1e-5);
  ResizeCase empty{"", {}, {1, 1, 2, 2}};
  expect_gpu_matches_cpu(resize_op(random_tensor(DType::Float32, {0, 3, 4, 4}, ++seed), empty),
                         1e-4, 1e-5);
}

// Index values out of range cannot be checked on the host without a sync: the GPU never follows
// them (gathers give zero bytes there, scatters skip them) where the CPU fails.
// An out-of-range index is never followed on the device (no read or write out of bounds) and
// the run fails naming the node, as on the cpu — through the partition's error word, with no
// sync per kernel; with CUDA graphs too (the third run replays a captured graph).
TEST(CudaData, IndicesOutOfRangeFailTheRunNamingTheNode) {
  SY_SKIP_WITHOUT_GPU();
  Tensor x = tensor_of(DType::Float32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor updates = tensor_of(DType::Float32, {2, 2}, {-1, -2, -3, -4});
  const std::vector<OpCase> bad = {
      make_case("Gather", {x, int64_tensor({0, 9, -1, -5})}),
      make_case("GatherElements", {x, tensor_of(DType::Int64, {1, 2}, {0, 7})}),
      make_case("GatherND", {x, tensor_of(DType::Int64, {2, 1}, {1, -9})}),
      make_case("ScatterND", {x, tensor_of(DType::Int64, {2, 1}, {4, 1}), updates}),
      make_case("ScatterElements", {x, tensor_of(DType::Int64, {1, 2}, {0, 4}),
                                    tensor_of(DType::Float32, {1, 2}, {-1, -2})}),
  };
  for (const OpCase& c : bad) {
    SCOPED_TRACE(c.op);
    expect_error([&] { run_op(c); }, ErrorCode::InvalidArgument, "");
    expect_error([&] { run_op_gpu(c); }, ErrorCode::InvalidArgument, "out of range");
  }
  // The same executable keeps working on good indices, and keeps failing on bad ones, across
  // eager, captured and replayed runs.
  auto graph = build_op_graph(make_case("Gather", {x, int64_tensor({0, 1})}));
  Options o;
  o.device = "cuda:0";
  o.fallback = "strict";
  Executable exe = Model::from_graph(std::move(graph)).compile(o);
  for (int run = 0; run < 4; ++run) {
    std::vector<ir::Datum> good =
        exe.internal().run(std::vector<ir::Datum>{ir::Datum(x), ir::Datum(int64_tensor({3, 0}))});
    EXPECT_TENSOR_NEAR(good[0].tensor, tensor_of(DType::Float32, {2, 2}, {7, 8, 1, 2}), 0, 0);
    expect_error(
        [&] {
          exe.internal().run(std::vector<ir::Datum>{ir::Datum(x), ir::Datum(int64_tensor({3, 4}))});
        },
        ErrorCode::InvalidArgument, "[Gather]");
  }
}

}  // namespace
}  // namespace switchyard::testing
