// Launch-level tests of the conv family's own device code (src/backends/cuda/kernels/conv.cu):
// launch_conv_epilogue_in_place, the bias, residual and activation applied after a cuDNN
// convolution that took no fused epilogue (the depthwise ones), in its 16-byte form (NHWC with
// channels, or NCHW with a spatial size, a multiple of 16 bytes; aligned operands) and its
// elementwise form, against a reference in double and against each other bit for bit. Through
// graphs the epilogue is checked by the op harness (tests/harness/cases/conv.cc) and
// gpu/conv_test.cc.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "backends/cuda/kernel_test_util.h"
#include "backends/cuda/kernels/conv_impl.h"

namespace switchyard::testing {
namespace {

using cuda::ConvActivation;

const std::vector<DType> kDtypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                    DType::Float64};
const std::vector<ConvActivation> kActivations = {ConvActivation::None, ConvActivation::Relu,
                                                  ConvActivation::Sigmoid, ConvActivation::Tanh,
                                                  ConvActivation::Clip};

const char* name_of(ConvActivation a) {
  switch (a) {
    case ConvActivation::Relu:
      return "Relu";
    case ConvActivation::Sigmoid:
      return "Sigmoid";
    case ConvActivation::Tanh:
      return "Tanh";
    case ConvActivation::Clip:
      return "Clip";
    default:
      return "None";
  }
}

double activate(ConvActivation a, double v) {
  switch (a) {
    case ConvActivation::Relu:
      return v > 0 ? v : 0;
    case ConvActivation::Sigmoid:
      return 1 / (1 + std::exp(-v));
    case ConvActivation::Tanh:
      return std::tanh(v);
    case ConvActivation::Clip:
      return std::min(std::max(v, 0.0), 6.0);
    default:
      return v;
  }
}

struct Shape {
  int64_t batch, channels, spatial;
  bool nhwc;
};

// The epilogue in place on a copy of y placed `offset` elements past a 16-byte boundary.
Tensor run_epilogue(const Tensor& y, const Tensor* bias, const Tensor* residual, const Shape& s,
                    ConvActivation act, size_t offset = 0) {
  const size_t esize = dtype_size(y.dtype());
  DeviceBuffer dy(y, offset * esize);
  std::unique_ptr<DeviceBuffer> db, dr;
  if (bias) db = std::make_unique<DeviceBuffer>(*bias, offset * esize);
  if (residual) dr = std::make_unique<DeviceBuffer>(*residual, offset * esize);
  cuda::ConvEpilogue e;
  e.bias = db ? db->get() : nullptr;
  e.residual = dr ? dr->get() : nullptr;
  e.activation = act;
  e.clip_lo = 0;
  e.clip_hi = 6;
  check_cuda(cuda::launch_conv_epilogue_in_place(y.dtype(), dy.get(), s.batch, s.channels,
                                                 s.spatial, s.nhwc, e, nullptr),
             "launch_conv_epilogue_in_place");
  sync_device();
  EXPECT_TRUE(dy.guards_intact()) << "a write outside Y";
  return dy.download(y.dtype(), y.shape());
}

const std::vector<Shape> kShapes = {{1, 8, 16, true},   {2, 96, 49, true}, {1, 32, 7, true},
                                    {2, 13, 9, true},   {1, 3, 5, true},   {1, 8, 16, false},
                                    {2, 24, 64, false}, {1, 5, 49, false}, {3, 4, 8, false}};

TEST(CudaConvEpilogueKernel, MatchesReference) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  uint64_t seed = 700;
  for (DType d : kDtypes)
    for (const Shape& s : kShapes)
      for (int form = 0; form < 4; ++form)  // bias and residual: neither, bias, residual, both
        for (ConvActivation act : kActivations) {
          const bool with_bias = form & 1, with_residual = form & 2;
          SCOPED_TRACE(fmt::format("{} N{} C{} S{} {} bias {} residual {} {}", dtype_name(d),
                                   s.batch, s.channels, s.spatial, s.nhwc ? "NHWC" : "NCHW",
                                   with_bias, with_residual, name_of(act)));
          const std::vector<int64_t> dims = {s.batch * s.channels * s.spatial};
          const Tensor y = random_tensor(d, dims, seed += 3, -8.0, 8.0);
          const Tensor bias = random_tensor(d, {s.channels}, seed + 1, -2.0, 2.0);
          const Tensor residual = random_tensor(d, dims, seed + 2, -2.0, 2.0);
          const Tensor out = run_epilogue(y, with_bias ? &bias : nullptr,
                                          with_residual ? &residual : nullptr, s, act);
          const std::vector<double> yv = to_doubles(y), bv = to_doubles(bias),
                                    rv = to_doubles(residual);
          std::vector<double> expected(yv.size());
          for (size_t i = 0; i < yv.size(); ++i) {
            const int64_t k = static_cast<int64_t>(i);
            const int64_t c = s.nhwc ? k % s.channels : (k / s.spatial) % s.channels;
            double v = yv[i];
            if (with_bias) v += bv[static_cast<size_t>(c)];
            if (with_residual) v += rv[i];
            expected[i] = activate(act, v);
          }
          const Tolerance t = elementwise_tolerance(d);
          EXPECT_TENSOR_NEAR(out, tensor_of(d, dims, expected), t.rtol, t.atol);
        }
}

TEST(CudaConvEpilogueKernel, SixteenByteFormMatchesElementwiseForm) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // The same data through both forms (operands one element off a 16-byte boundary take the
  // elementwise one), NaN, infinities and signed zeros among it.
  const double kInf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = {
      std::numeric_limits<double>::quiet_NaN(), kInf, -kInf, 0.0, -0.0, 7.5, -7.5, 1e30};
  uint64_t seed = 900;
  for (DType d : kDtypes)
    for (const Shape& s : kShapes)
      for (int form = 0; form < 4; ++form)
        for (ConvActivation act : kActivations) {
          SCOPED_TRACE(fmt::format("{} N{} C{} S{} {} form {} {}", dtype_name(d), s.batch,
                                   s.channels, s.spatial, s.nhwc ? "NHWC" : "NCHW", form,
                                   name_of(act)));
          const std::vector<int64_t> dims = {s.batch * s.channels * s.spatial};
          std::vector<double> yv = to_doubles(random_tensor(d, dims, seed += 3, -8, 8));
          for (size_t k = 0; k < specials.size(); ++k) yv[(k * 37) % yv.size()] = specials[k];
          const Tensor y = tensor_of(d, dims, yv);
          const Tensor bias = random_tensor(d, {s.channels}, seed + 1, -2.0, 2.0);
          const Tensor residual = random_tensor(d, dims, seed + 2, -2.0, 2.0);
          const Tensor* b = form & 1 ? &bias : nullptr;
          const Tensor* r = form & 2 ? &residual : nullptr;
          EXPECT_TRUE(same_bits(run_epilogue(y, b, r, s, act), run_epilogue(y, b, r, s, act, 1)));
        }
}

}  // namespace
}  // namespace switchyard::testing
