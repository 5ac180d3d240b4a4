// Launch-level tests of the matmul family's own device code (src/backends/cuda/kernels/
// matmul.cu): launch_bias_activation, the bias and activation after a cuBLASLt product, in its
// 16-byte form (rows of a multiple of 16 bytes, aligned operands, a scalar tail without a bias)
// and its elementwise form, against a reference in double and against each other bit for bit;
// launch_broadcast_matrix, Gemm's C copied into Y, also widening a 16-bit C or bias into the
// float32 Y of a product that writes float32 (precision.h: WideProduct), and the epilogue of such
// a product over its widened bias. Through graphs the epilogue and the float32 results of 16-bit
// products (cuBLASLt writing a float32 D) are checked in the op harness
// (tests/harness/cases/matmul.cc) and gpu/matmul_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "backends/cuda/kernel_test_util.h"
#include "backends/cuda/kernels/matmul_impl.h"

namespace switchyard::testing {
namespace {

using cuda::MatMulActivation;

const std::vector<DType> kDtypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                    DType::Float64};
const std::vector<MatMulActivation> kActivations = {MatMulActivation::None, MatMulActivation::Relu,
                                                    MatMulActivation::Gelu,
                                                    MatMulActivation::GeluTanh};

const char* name_of(MatMulActivation act) {
  switch (act) {
    case MatMulActivation::Relu:
      return "Relu";
    case MatMulActivation::Gelu:
      return "Gelu";
    case MatMulActivation::GeluTanh:
      return "GeluTanh";
    default:
      return "None";
  }
}

double activate(MatMulActivation act, double x) {
  switch (act) {
    case MatMulActivation::Relu:
      return x > 0 ? x : 0;
    case MatMulActivation::Gelu:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case MatMulActivation::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    default:
      return x;
  }
}

// launch_bias_activation in place on a copy of y ([rows, n]) placed `y_offset` elements past a
// 16-byte boundary; returns the result.
Tensor run_bias_activation(const Tensor& y, const Tensor* bias, MatMulActivation act,
                           size_t y_offset = 0) {
  const int64_t rows = y.shape()[0], n = y.shape()[1];
  DeviceBuffer dy(y, y_offset * dtype_size(y.dtype()));
  std::unique_ptr<DeviceBuffer> db;
  if (bias) db = std::make_unique<DeviceBuffer>(*bias);
  check_cuda(cuda::launch_bias_activation(y.dtype(), dy.get(), db ? db->get() : nullptr, rows, n,
                                          act, nullptr),
             "launch_bias_activation");
  sync_device();
  EXPECT_TRUE(dy.guards_intact()) << "a write outside Y";
  return dy.download(y.dtype(), {rows, n});
}

TEST(CudaBiasActivationKernel, MatchesReference) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // n = 8, 768, 3072: 16-byte rows in every dtype (float64: two a vector); 1001 and 1: the
  // elementwise form with a bias, the 16-byte form with a scalar tail without one.
  uint64_t seed = 100;
  auto check = [&](DType d, int64_t rows, int64_t n, bool with_bias, MatMulActivation act) {
    SCOPED_TRACE(
        fmt::format("{} [{}, {}] bias {} {}", dtype_name(d), rows, n, with_bias, name_of(act)));
    const Tensor y = random_tensor(d, {rows, n}, seed += 2, -3.0, 3.0);
    const Tensor bias = random_tensor(d, {n}, seed + 1, -1.0, 1.0);
    const Tensor out = run_bias_activation(y, with_bias ? &bias : nullptr, act);
    const std::vector<double> yv = to_doubles(y), bv = to_doubles(bias);
    std::vector<double> expected(yv.size());
    for (size_t i = 0; i < yv.size(); ++i)
      expected[i] = activate(act, yv[i] + (with_bias ? bv[i % static_cast<size_t>(n)] : 0.0));
    const Tolerance t = elementwise_tolerance(d);
    EXPECT_TENSOR_NEAR(out, tensor_of(d, {rows, n}, expected), t.rtol, t.atol);
  };
  for (DType d : kDtypes)
    for (int64_t n : {8, 768, 3072, 1001, 1})
      for (int64_t rows : {1, 3, 128})
        for (bool with_bias : {false, true})
          for (MatMulActivation act : kActivations) check(d, rows, n, with_bias, act);
  // BERT-base's intermediate layer at batch 64 (the erf GELU after the first FFN product).
  check(DType::Float16, 8192, 3072, true, MatMulActivation::Gelu);
  check(DType::Float32, 8192, 3072, true, MatMulActivation::Gelu);
}

TEST(CudaBiasActivationKernel, SixteenByteFormMatchesElementwiseForm) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // The same data through both forms (y one element off a 16-byte boundary takes the
  // elementwise one), NaN, infinities and signed zeros among it.
  const double kInf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {
      std::numeric_limits<double>::quiet_NaN(), kInf, -kInf, 0.0, -0.0, 7.5, -7.5};
  uint64_t seed = 500;
  for (DType d : kDtypes)
    for (int64_t n : {8, 768, 1001, 3072})
      for (int64_t rows : {3, 130})
        for (bool with_bias : {false, true})
          for (MatMulActivation act : kActivations) {
            SCOPED_TRACE(fmt::format("{} [{}, {}] bias {} {}", dtype_name(d), rows, n, with_bias,
                                     name_of(act)));
            std::vector<double> yv = to_doubles(random_tensor(d, {rows, n}, seed += 2, -3, 3));
            for (size_t k = 0; k < specials.size(); ++k) yv[(k * 977) % yv.size()] = specials[k];
            const Tensor y = tensor_of(d, {rows, n}, yv);
            const Tensor bias = random_tensor(d, {n}, seed + 1, -1.0, 1.0);
            const Tensor* b = with_bias ? &bias : nullptr;
            const Tensor vectorized = run_bias_activation(y, b, act);
            const Tensor elementwise = run_bias_activation(y, b, act, /*y_offset=*/1);
            EXPECT_TRUE(same_bits(vectorized, elementwise));
          }
}

// launch_broadcast_matrix from a c of `c_dtype` laid out as `layout` ("full" [m, n], "row" [n],
// "column" [m, 1], "scalar") into a poisoned y [m, n] of `y_dtype`; returns y.
Tensor run_broadcast_matrix(const Tensor& c, const std::string& layout, DType y_dtype, int64_t m,
                            int64_t n, double scale) {
  const int64_t row_stride = layout == "full" ? n : layout == "column" ? 1 : 0;
  const int64_t col_stride = layout == "full" || layout == "row" ? 1 : 0;
  DeviceBuffer dc(c);
  DeviceBuffer dy(static_cast<size_t>(m * n) * dtype_size(y_dtype));
  check_cuda(cuda::launch_broadcast_matrix(c.dtype(), dc.get(), row_stride, col_stride, y_dtype,
                                           dy.get(), m, n, scale, nullptr),
             "launch_broadcast_matrix");
  sync_device();
  EXPECT_TRUE(dy.guards_intact()) << "a write outside Y";
  return dy.download(y_dtype, {m, n});
}

TEST(CudaBroadcastMatrixKernel, MatchesReference) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // Every dtype into itself, and float16/bfloat16 into float32 (a WideProduct's C); the C
  // broadcasts Gemm takes; scales of Y = beta * C (and 1: a bias widened as a [1, n] matrix).
  const std::vector<std::pair<DType, DType>> pairs = {
      {DType::Float32, DType::Float32},   {DType::Float16, DType::Float16},
      {DType::BFloat16, DType::BFloat16}, {DType::Float64, DType::Float64},
      {DType::Float16, DType::Float32},   {DType::BFloat16, DType::Float32}};
  uint64_t seed = 700;
  for (auto [c_dtype, y_dtype] : pairs)
    for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1001}, {7, 13}, {128, 768}})
      for (const std::string layout : {"full", "row", "column", "scalar"})
        for (double scale : {1.0, 0.5, -3.0}) {
          SCOPED_TRACE(fmt::format("{} -> {} [{}, {}] {} scale {}", dtype_name(c_dtype),
                                   dtype_name(y_dtype), m, n, layout, scale));
          const std::vector<int64_t> c_shape = layout == "full"     ? std::vector<int64_t>{m, n}
                                               : layout == "row"    ? std::vector<int64_t>{n}
                                               : layout == "column" ? std::vector<int64_t>{m, 1}
                                                                    : std::vector<int64_t>{1};
          const Tensor c = random_tensor(c_dtype, c_shape, seed += 2, -3.0, 3.0);
          const std::vector<double> cv = to_doubles(c);
          std::vector<double> expected(static_cast<size_t>(m * n));
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              const int64_t at = layout == "full"     ? i * n + j
                                 : layout == "row"    ? j
                                 : layout == "column" ? i
                                                      : 0;
              expected[static_cast<size_t>(i * n + j)] = scale * cv[static_cast<size_t>(at)];
            }
          const Tolerance t = elementwise_tolerance(y_dtype);
          EXPECT_TENSOR_NEAR(run_broadcast_matrix(c, layout, y_dtype, m, n, scale),
                             tensor_of(y_dtype, {m, n}, expected), t.rtol, t.atol);
        }
}

TEST(CudaBroadcastMatrixKernel, WideningIsExact) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // A 16-bit bias widened into float32 holds its values exactly, infinities, signed zeros, the
  // largest and the subnormal float16 included (and NaN stays NaN): the product then adds what
  // the 16-bit bias held.
  const double kInf = std::numeric_limits<double>::infinity();
  for (DType d : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    std::vector<double> v = to_doubles(random_tensor(d, {1001}, 760, -60000.0, 60000.0));
    const std::vector<double> specials = {kInf, -kInf, 0.0, -0.0, 65504.0, std::ldexp(1.0, -24)};
    for (size_t k = 0; k < specials.size(); ++k) v[k * 131] = specials[k];
    v[1000] = std::numeric_limits<double>::quiet_NaN();
    const Tensor bias = tensor_of(d, {1001}, v);
    const Tensor wide = run_broadcast_matrix(bias, "row", DType::Float32, 1, 1001, 1.0);
    std::vector<double> want = to_doubles(bias);
    EXPECT_TRUE(std::isnan(wide.data<float>()[1000]));
    want[1000] = 0.0;  // NaN payloads aside, the rest bit for bit
    Tensor got = wide.clone();
    got.data<float>()[1000] = 0.0f;
    EXPECT_TRUE(same_bits(got, tensor_of(DType::Float32, {1, 1001}, want)));
  }
}

TEST(CudaBroadcastMatrixKernel, RefusesOtherDtypePairs) {
  // Returned before any launch (no device needed): narrowing, between 16-bit types, float64.
  const std::vector<std::pair<DType, DType>> pairs = {{DType::Float32, DType::Float16},
                                                      {DType::Float16, DType::BFloat16},
                                                      {DType::Float64, DType::Float32},
                                                      {DType::Float16, DType::Float64},
                                                      {DType::Int32, DType::Float32}};
  for (auto [c_dtype, y_dtype] : pairs)
    EXPECT_EQ(
        cuda::launch_broadcast_matrix(c_dtype, nullptr, 0, 1, y_dtype, nullptr, 3, 5, 1.0, nullptr),
        cudaErrorInvalidValue)
        << dtype_name(c_dtype) << " -> " << dtype_name(y_dtype);
}

TEST(CudaBiasActivationKernel, Float32ResultOverAWidened16BitBias) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // What a WideProduct's own epilogue runs: its 16-bit bias widened ([1, n], scale 1), then bias
  // and activation over the float32 product, against act(y + bias) in double.
  uint64_t seed = 800;
  for (DType d : {DType::Float16, DType::BFloat16})
    for (int64_t n : {8, 768, 1001})
      for (MatMulActivation act : kActivations) {
        SCOPED_TRACE(fmt::format("{} bias, n {} {}", dtype_name(d), n, name_of(act)));
        const int64_t rows = 37;
        const Tensor bias = random_tensor(d, {n}, seed += 2, -1.0, 1.0);
        const Tensor y = random_tensor(DType::Float32, {rows, n}, seed + 1, -3.0, 3.0);
        DeviceBuffer db(bias);
        DeviceBuffer wide(static_cast<size_t>(n) * sizeof(float));
        DeviceBuffer dy(y);
        check_cuda(cuda::launch_broadcast_matrix(d, db.get(), 0, 1, DType::Float32, wide.get(), 1,
                                                 n, 1.0, nullptr),
                   "launch_broadcast_matrix");
        check_cuda(cuda::launch_bias_activation(DType::Float32, dy.get(), wide.get(), rows, n, act,
                                                nullptr),
                   "launch_bias_activation");
        sync_device();
        EXPECT_TRUE(dy.guards_intact() && wide.guards_intact()) << "a write outside its buffer";
        const std::vector<double> yv = to_doubles(y), bv = to_doubles(bias);
        std::vector<double> expected(yv.size());
        for (size_t i = 0; i < yv.size(); ++i)
          expected[i] = activate(act, yv[i] + bv[i % static_cast<size_t>(n)]);
        const Tolerance t = elementwise_tolerance(DType::Float32);
        EXPECT_TENSOR_NEAR(dy.download(DType::Float32, {rows, n}),
                           tensor_of(DType::Float32, {rows, n}, expected), t.rtol, t.atol);
      }
}

}  // namespace
}  // namespace switchyard::testing
