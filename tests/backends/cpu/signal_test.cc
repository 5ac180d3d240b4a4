// DFT, STFT, the window functions and MelWeightMatrix against direct formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>

#include "ir/check.h"
#include "support/op_test_util.h"

namespace switchyard::testing {
namespace {

using Complex = std::complex<double>;

// Direct DFT of one line, zero-padded or truncated to `length`.
std::vector<Complex> dft(const std::vector<Complex>& x, int64_t length, bool inverse) {
  std::vector<Complex> out(length);
  for (int64_t k = 0; k < length; ++k) {
    Complex acc = 0;
    for (int64_t j = 0; j < std::min<int64_t>(length, x.size()); ++j) {
      double ang = (inverse ? 2 : -2) * std::numbers::pi * static_cast<double>(j * k) / length;
      acc += x[j] * Complex(std::cos(ang), std::sin(ang));
    }
    out[k] = inverse ? acc / static_cast<double>(length) : acc;
  }
  return out;
}

struct DftCase {
  std::vector<int64_t> shape;  // including the trailing 1 or 2
  int64_t axis;                // as given (may be negative)
  int64_t length = -1;         // dft_length, -1 = omitted
  bool inverse = false, onesided = false, axis_as_attribute = false;
};

void check_dft(const DftCase& c, DType dt, double tol) {
  SCOPED_TRACE(ir::shape_to_string(c.shape) + " axis " + std::to_string(c.axis) + " length " +
               std::to_string(c.length));
  ir::Tensor x = random_tensor(dt, c.shape, 17);
  OpCase oc = make_case("DFT", {x});
  oc.inputs.push_back(c.length > 0 ? std::optional(int64_scalar(c.length)) : std::nullopt);
  if (c.axis_as_attribute) {
    oc.attributes.push_back(Attribute::make_int("axis", c.axis));
  } else {
    oc.inputs.push_back(int64_scalar(c.axis));
  }
  oc.attributes.push_back(Attribute::make_int("inverse", c.inverse));
  oc.attributes.push_back(Attribute::make_int("onesided", c.onesided));
  oc.constant_inputs = {false, true, true};
  ir::Tensor y = run_op1(oc);
  const int64_t rank = static_cast<int64_t>(c.shape.size());
  const int64_t axis = c.axis < 0 ? c.axis + rank : c.axis;
  const int64_t n = c.shape[axis];
  const int64_t length = c.length > 0 ? c.length : n;
  const int64_t n_out = c.onesided ? length / 2 + 1 : length;
  std::vector<int64_t> out_shape = c.shape;
  out_shape[axis] = n_out;
  out_shape.back() = 2;
  ASSERT_EQ(y.shape(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= c.shape[i];
  for (int64_t i = axis + 1; i < rank - 1; ++i) inner *= c.shape[i];
  const int64_t parts = c.shape.back();
  auto xs = to_doubles(x), ys = to_doubles(y);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<Complex> line(n);
      for (int64_t j = 0; j < n; ++j) {
        const double* p = &xs[((o * n + j) * inner + i) * parts];
        line[j] = Complex(p[0], parts == 2 ? p[1] : 0);
      }
      auto e = dft(line, length, c.inverse);
      for (int64_t k = 0; k < n_out; ++k) {
        const double* p = &ys[((o * n_out + k) * inner + i) * 2];
        ASSERT_NEAR(p[0], e[k].real(), tol * (1 + std::abs(e[k])));
        ASSERT_NEAR(p[1], e[k].imag(), tol * (1 + std::abs(e[k])));
      }
    }
}

TEST(DftKernel, LengthsAxesAndDirections) {
  for (int64_t n : {1, 6, 7, 8, 16})
    for (bool inverse : {false, true}) {
      check_dft({{2, n, 3, 2}, 1, -1, inverse}, DType::Float32, 1e-5);
      check_dft({{3, n, 1}, -2, -1, inverse}, DType::Float32, 1e-5);
    }
  check_dft({{2, 5, 3, 1}, 2, -1}, DType::Float64, 1e-12);            // middle axis
  check_dft({{4, 3, 2}, 0, -1}, DType::Float64, 1e-12);               // first axis
  check_dft({{2, 6, 1}, 1, 9}, DType::Float32, 1e-5);                 // zero padding
  check_dft({{2, 6, 2}, 1, 4, true}, DType::Float32, 1e-5);           // truncation, inverse
  check_dft({{2, 12, 1}, 1, 10, false, true}, DType::Float32, 1e-5);  // onesided
  check_dft({{2, 9, 1}, -2, -1, false, true}, DType::Float32, 1e-5);
  check_dft({{1, 10, 10, 1}, 1, -1, false, false, true}, DType::Float32, 1e-5);  // opset 17 form
  check_dft({{2, 8, 2}, 1, -1}, DType::Float16, 2e-2);
  check_dft({{2, 1024, 1}, 1, -1}, DType::Float64, 1e-9);       // the radix-2 path at size
  check_dft({{1, 300, 2}, 1, -1, true}, DType::Float64, 1e-9);  // the direct path at size
}

TEST(DftKernel, Errors) {
  ir::Tensor x = random_tensor(DType::Float32, {2, 4, 2}, 1);

  expect_error_naming_node(make_case("DFT", {x, std::nullopt, int64_scalar(-1)}), "axis");
  expect_error_naming_node(make_case("DFT", {x, std::nullopt, int64_scalar(2)}), "axis");
  expect_error_naming_node(make_case("DFT", {x}, {Attribute::make_int("onesided", 1)}), "onesided");
  expect_error_naming_node(make_case("DFT", {x, int64_scalar(0)}), "dft_length");
  expect_error_naming_node(make_case("DFT", {random_tensor(DType::Float32, {2, 4, 3}, 1)}),
                           "last dim");
}

TEST(StftKernel, FramesWindowsAndOnesided) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (bool onesided : {true, false})
      for (bool use_window : {true, false})
        for (int64_t parts : {1, 2}) {
          if (onesided && parts == 2) continue;
          const int64_t batch = 2, len = 37, step = 5, frame = 8;
          ir::Tensor x = random_tensor(dt, {batch, len, parts}, 5);
          ir::Tensor w = random_tensor(dt, {frame}, 6, 0, 1);
          OpCase oc = make_case("STFT", {x, int64_scalar(step)},
                                {Attribute::make_int("onesided", onesided)});
          oc.inputs.push_back(use_window ? std::optional(w) : std::nullopt);
          oc.inputs.push_back(use_window ? std::nullopt : std::optional(int64_scalar(frame)));
          ir::Tensor y = run_op1(oc);
          const int64_t frames = (len - frame) / step + 1;
          const int64_t bins = onesided ? frame / 2 + 1 : frame;
          ASSERT_EQ(y.shape(), (std::vector<int64_t>{batch, frames, bins, 2}));
          auto xs = to_doubles(x), ws = to_doubles(w), ys = to_doubles(y);
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t f = 0; f < frames; ++f) {
              std::vector<Complex> line(frame);
              for (int64_t j = 0; j < frame; ++j) {
                const double* p = &xs[(b * len + f * step + j) * parts];
                double wj = use_window ? ws[j] : 1.0;
                line[j] = Complex(p[0], parts == 2 ? p[1] : 0) * wj;
              }
              auto e = dft(line, frame, false);
              for (int64_t k = 0; k < bins; ++k) {
                ASSERT_NEAR(ys[((b * frames + f) * bins + k) * 2], e[k].real(), 1e-5);
                ASSERT_NEAR(ys[((b * frames + f) * bins + k) * 2 + 1], e[k].imag(), 1e-5);
              }
            }
        }
  }
  ir::Tensor x = random_tensor(DType::Float32, {1, 10, 1}, 1);
  EXPECT_THROW(run_op(make_case("STFT", {x, int64_scalar(2), std::nullopt, int64_scalar(11)})),
               Error);
  EXPECT_THROW(run_op(make_case("STFT", {x, int64_scalar(0), std::nullopt, int64_scalar(4)})),
               Error);
  EXPECT_THROW(run_op(make_case("STFT", {x, int64_scalar(2), random_tensor(DType::Float32, {4}, 1),
                                         int64_scalar(5)})),
               Error);
}

TEST(WindowKernels, FormulasPeriodicSymmetricAndTypes) {
  struct W {
    const char* op;
    std::function<double(double, double)> f;  // (n, N) -> value
  };
  const double pi = std::numbers::pi;
  std::vector<W> windows = {
      {"HannWindow", [&](double n, double N) { return 0.5 - 0.5 * std::cos(2 * pi * n / N); }},
      {"HammingWindow",
       [&](double n, double N) { return 25.0 / 46 - 21.0 / 46 * std::cos(2 * pi * n / N); }},
      {"BlackmanWindow", [&](double n, double N) {
         return 0.42 - 0.5 * std::cos(2 * pi * n / N) + 0.08 * std::cos(4 * pi * n / N);
       }}};
  for (const W& w : windows)
    for (int64_t periodic : {0, 1})
      for (int64_t size : {2, 7, 10}) {
        ir::Tensor s(DType::Int32, {});
        *s.data<int32_t>() = static_cast<int32_t>(size);
        for (DType out : {DType::Float32, DType::Float64, DType::Float16}) {
          ir::Tensor y = run_op1(
              make_case(w.op, {s},
                        {Attribute::make_int("periodic", periodic),
                         Attribute::make_int("output_datatype", static_cast<int64_t>(out))}));
          ASSERT_EQ(y.dtype(), out);
          ASSERT_EQ(y.shape(), (std::vector<int64_t>{size}));
          auto got = to_doubles(y);
          for (int64_t n = 0; n < size; ++n)
            ASSERT_NEAR(got[n], w.f(n, periodic ? size : size - 1),
                        out == DType::Float16 ? 1e-3 : 1e-6)
                << w.op << " n=" << n;
        }
      }
  // Integer outputs truncate like Cast; a one-sample symmetric window is 1 (numpy's rule).
  ir::Tensor y = run_op1(
      make_case("HannWindow", {int64_scalar(4)}, {Attribute::make_int("output_datatype", 7)}));
  EXPECT_EQ(to_doubles(y), (std::vector<double>{0, 0, 1, 0}));
  ir::Tensor one =
      run_op1(make_case("BlackmanWindow", {int64_scalar(1)}, {Attribute::make_int("periodic", 0)}));
  EXPECT_EQ(to_doubles(one), (std::vector<double>{1}));
  EXPECT_EQ(run_op1(make_case("HammingWindow", {int64_scalar(0)})).numel(), 0);
  EXPECT_THROW(run_op(make_case("HannWindow", {int64_scalar(-1)})), Error);
  EXPECT_THROW(run_op(make_case("HannWindow", {int64_scalar(3)},
                                {Attribute::make_int("output_datatype", 8)})),
               Error);
}

TEST(MelWeightMatrixKernel, MatchesOnnxReferenceConstruction) {
  for (auto [bins, dft_length, rate, lo, hi] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, double, double>>{
           {8, 16, 8192, 0, 4096}, {5, 64, 16000, 100, 6000}, {12, 257, 22050, 20, 11025}}) {
    OpCase oc =
        make_case("MelWeightMatrix",
                  {int64_scalar(bins), int64_scalar(dft_length), int64_scalar(rate),
                   tensor_of(DType::Float32, {}, {lo}), tensor_of(DType::Float32, {}, {hi})});
    ir::Tensor y = run_op1(oc);
    const int64_t spec = dft_length / 2 + 1;
    ASSERT_EQ(y.shape(), (std::vector<int64_t>{spec, bins}));
    // The reference of the ONNX backend test, step by step.
    auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
    double step = (mel(hi) - mel(lo)) / (bins + 2);
    std::vector<int64_t> f(bins + 2);
    for (int64_t i = 0; i < bins + 2; ++i)
      f[i] = static_cast<int64_t>(std::floor(
          (dft_length + 1) * (700 * (std::pow(10, (i * step + mel(lo)) / 2595) - 1)) / rate));
    std::vector<double> ref(spec * bins, 0.0);
    for (int64_t i = 0; i < bins; ++i) {
      if (f[i + 1] == f[i]) {
        ref[f[i + 1] * bins + i] = 1;
      } else {
        for (int64_t j = f[i]; j <= f[i + 1]; ++j)
          ref[j * bins + i] = double(j - f[i]) / double(f[i + 1] - f[i]);
      }
      for (int64_t j = f[i + 1]; j < f[i + 2]; ++j)
        ref[j * bins + i] = double(f[i + 2] - j) / double(f[i + 2] - f[i + 1]);
    }
    auto got = to_doubles(y);
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-6) << i;
  }
  EXPECT_THROW(
      run_op(make_case("MelWeightMatrix", {int64_scalar(8), int64_scalar(16), int64_scalar(8192),
                                           tensor_of(DType::Float32, {}, {5000}),
                                           tensor_of(DType::Float32, {}, {100})})),
      Error);
}

}  // namespace
}  // namespace switchyard::testing
