// Launch-level tests of the matmul family's own device code (src/backends/cuda/kernels/
// matmul.cu): launch_bias_activation, the bias and activation after a cuBLASLt product, in its
// 16-byte form (rows of a multiple of 16 bytes, aligned operands, a scalar tail without a bias)
// and its elementwise form, against a reference in double and against each other bit for bit.
// Through graphs the epilogue is checked in the op harness (tests/harness/cases/matmul.cc) and
// gpu/matmul_test.cc.
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

}  // namespace
}  // namespace switchyard::testing
