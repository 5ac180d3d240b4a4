// CPU kernels of the signal family: DFT (radix-2 FFT for power-of-two lengths, a direct sum with
// exact twiddle indexing otherwise), STFT, Hann/Hamming/Blackman windows and MelWeightMatrix.
// Everything computes in double and converts on output.
#include <complex>
#include <limits>
#include <numbers>

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

namespace {

using Complex = std::complex<double>;

// In-place transform of `data` (length L). Forward uses e^{-2πi jk/L}; inverse e^{+...} scaled
// by 1/L.
class Transform {
 public:
  Transform(int64_t length, bool inverse) : length_(length), inverse_(inverse) {
    const double sign = inverse ? 1.0 : -1.0;
    twiddle_.resize(static_cast<size_t>(length));
    for (int64_t m = 0; m < length; ++m) {
      double angle = sign * 2.0 * std::numbers::pi * static_cast<double>(m) / length;
      twiddle_[static_cast<size_t>(m)] = Complex(std::cos(angle), std::sin(angle));
    }
    power_of_two_ = length > 0 && (length & (length - 1)) == 0;
  }

  int64_t length() const { return length_; }

  // `data` holds L values; `scratch` is L values of working space.
  void apply(std::vector<Complex>& data, std::vector<Complex>& scratch) const {
    if (length_ <= 1) return;
    if (power_of_two_) {
      fft(data);
    } else {
      for (int64_t k = 0; k < length_; ++k) {
        Complex acc = 0;
        int64_t m = 0;
        for (int64_t j = 0; j < length_; ++j) {
          acc += data[static_cast<size_t>(j)] * twiddle_[static_cast<size_t>(m)];
          m += k;
          if (m >= length_) m -= length_;
        }
        scratch[static_cast<size_t>(k)] = acc;
      }
      data.swap(scratch);
    }
    if (inverse_)
      for (auto& v : data) v /= static_cast<double>(length_);
  }

 private:
  void fft(std::vector<Complex>& a) const {
    const int64_t n = length_;
    for (int64_t i = 1, j = 0; i < n; ++i) {
      int64_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[static_cast<size_t>(i)], a[static_cast<size_t>(j)]);
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
      const int64_t step = n / len;
      for (int64_t i = 0; i < n; i += len) {
        for (int64_t k = 0; k < len / 2; ++k) {
          Complex w = twiddle_[static_cast<size_t>(k * step)];
          Complex u = a[static_cast<size_t>(i + k)];
          Complex v = a[static_cast<size_t>(i + k + len / 2)] * w;
          a[static_cast<size_t>(i + k)] = u + v;
          a[static_cast<size_t>(i + k + len / 2)] = u - v;
        }
      }
    }
  }

  int64_t length_;
  bool inverse_;
  bool power_of_two_ = false;
  std::vector<Complex> twiddle_;
};

int64_t read_scalar_int(const runtime::KernelContext& ctx, size_t i, const char* what) {
  const ir::Tensor& t = ctx.input(i);
  if (!ir::dtype_is_integer(t.dtype())) ctx.fail("{} must be an integer tensor", what);
  if (t.numel() != 1)
    ctx.fail("{} must hold one value, got shape {}", what, ir::shape_to_string(t.shape()));
  return t.scalar_as_int(0);
}

double read_scalar_float(const runtime::KernelContext& ctx, size_t i, const char* what) {
  const ir::Tensor& t = ctx.input(i);
  if (t.numel() != 1)
    ctx.fail("{} must hold one value, got shape {}", what, ir::shape_to_string(t.shape()));
  return t.scalar_as_double(0);
}

class DftKernel final : public runtime::Kernel {
 public:
  explicit DftKernel(const runtime::KernelInit& init) {
    const ir::Node& n = init.node;
    inverse_ = n.attr_int("inverse", 0) != 0;
    onesided_ = n.attr_int("onesided", 0) != 0;
    if (n.has_attribute("axis")) axis_attr_ = n.attr_int("axis");
  }

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    if (rank < 2) ctx.fail("input has rank {}, expected at least 2", rank);
    const int64_t parts = x.dim(rank - 1);
    if (parts != 1 && parts != 2)
      ctx.fail("input's last dim is {}, expected 1 (real) or 2 (complex)", parts);
    if (onesided_ && parts == 2) ctx.fail("onesided output needs a real input (last dim 1)");
    int64_t axis = axis_attr_;
    if (ctx.has_input(2)) axis = read_scalar_int(ctx, 2, "axis");
    if (axis < -rank || axis > rank - 2 || axis == -1)
      ctx.fail("axis {} is out of range for rank {} (the last dim holds real/imag)", axis, rank);
    if (axis < 0) axis += rank;
    const int64_t n_in = x.dim(axis);
    int64_t length = n_in;
    if (ctx.has_input(1)) {
      length = read_scalar_int(ctx, 1, "dft_length");
      if (length <= 0) ctx.fail("dft_length {} must be positive", length);
    }
    const int64_t n_out = onesided_ ? length / 2 + 1 : length;
    std::vector<int64_t> out_shape = x.shape();
    out_shape[static_cast<size_t>(axis)] = n_out;
    out_shape.back() = 2;
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.dim(i);
    for (int64_t i = axis + 1; i < rank - 1; ++i) inner *= x.dim(i);
    if (outer * inner == 0 || n_out == 0) return;
    Transform transform(length, inverse_);
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* xp = x.data<T>();
      T* yp = y.data<T>();
      const int64_t copy = std::min(n_in, length);
      parallel_for(outer * inner, std::max<int64_t>(1, 4096 / length), ctx.num_threads(),
                   [&](int64_t begin, int64_t end) {
                     std::vector<Complex> line(static_cast<size_t>(length)), scratch(line.size());
                     for (int64_t li = begin; li < end; ++li) {
                       const int64_t o = li / inner, i = li % inner;
                       std::fill(line.begin(), line.end(), Complex(0));
                       for (int64_t j = 0; j < copy; ++j) {
                         const T* src = xp + ((o * n_in + j) * inner + i) * parts;
                         line[static_cast<size_t>(j)] = Complex(
                             convert<double>(src[0]), parts == 2 ? convert<double>(src[1]) : 0.0);
                       }
                       transform.apply(line, scratch);
                       for (int64_t k = 0; k < n_out; ++k) {
                         T* dst = yp + ((o * n_out + k) * inner + i) * 2;
                         dst[0] = convert<T>(line[static_cast<size_t>(k)].real());
                         dst[1] = convert<T>(line[static_cast<size_t>(k)].imag());
                       }
                     }
                   });
    });
  }

 private:
  bool inverse_ = false;
  bool onesided_ = false;
  int64_t axis_attr_ = -2;
};

class StftKernel final : public runtime::Kernel {
 public:
  explicit StftKernel(const runtime::KernelInit& init)
      : onesided_(init.node.attr_int("onesided", 1) != 0) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
      ctx.fail("signal has shape {}, expected [batch, length, 1 or 2]",
               ir::shape_to_string(x.shape()));
    const int64_t parts = x.dim(2);
    if (onesided_ && parts == 2) ctx.fail("onesided output needs a real signal (last dim 1)");
    const int64_t step = read_scalar_int(ctx, 1, "frame_step");
    if (step <= 0) ctx.fail("frame_step {} must be positive", step);
    const ir::Tensor* window = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (window && (window->rank() != 1 || window->dtype() != x.dtype()))
      ctx.fail("window must be 1-D with the signal's dtype, got {} {}",
               ir::dtype_name(window->dtype()), ir::shape_to_string(window->shape()));
    int64_t frame_length = window ? window->dim(0) : -1;
    if (ctx.has_input(3)) {
      int64_t given = read_scalar_int(ctx, 3, "frame_length");
      if (window && given != frame_length)
        ctx.fail("frame_length {} differs from the window length {}", given, frame_length);
      frame_length = given;
    }
    if (frame_length < 0) ctx.fail("one of window and frame_length is required");
    if (frame_length == 0) ctx.fail("frame_length must be positive");
    const int64_t batch = x.dim(0), length = x.dim(1);
    if (length < frame_length)
      ctx.fail("signal length {} is shorter than frame_length {}", length, frame_length);
    const int64_t frames = (length - frame_length) / step + 1;
    const int64_t bins = onesided_ ? frame_length / 2 + 1 : frame_length;
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), {batch, frames, bins, 2});
    Transform transform(frame_length, false);
    dispatch(FloatTypes{}, x.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* xp = x.data<T>();
      const T* wp = window ? window->data<T>() : nullptr;
      T* yp = y.data<T>();
      parallel_for(
          batch * frames, std::max<int64_t>(1, 4096 / frame_length), ctx.num_threads(),
          [&](int64_t begin, int64_t end) {
            std::vector<Complex> line(static_cast<size_t>(frame_length)), scratch(line.size());
            for (int64_t bf = begin; bf < end; ++bf) {
              const int64_t b = bf / frames, f = bf % frames;
              for (int64_t j = 0; j < frame_length; ++j) {
                const T* src = xp + (b * length + f * step + j) * parts;
                double w = wp ? convert<double>(wp[j]) : 1.0;
                line[static_cast<size_t>(j)] = Complex(
                    convert<double>(src[0]) * w, parts == 2 ? convert<double>(src[1]) * w : 0.0);
              }
              transform.apply(line, scratch);
              T* dst = yp + bf * bins * 2;
              for (int64_t k = 0; k < bins; ++k) {
                dst[2 * k] = convert<T>(line[static_cast<size_t>(k)].real());
                dst[2 * k + 1] = convert<T>(line[static_cast<size_t>(k)].imag());
              }
            }
          });
    });
  }

 private:
  bool onesided_;
};

// Converts a double to any numeric output type; integers truncate (ONNX casts), saturating.
template <typename T>
T cast_value(double v) {
  if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  } else {
    return convert<T>(v);
  }
}

enum class WindowKind { Hann, Hamming, Blackman };

class WindowKernel final : public runtime::Kernel {
 public:
  WindowKernel(const runtime::KernelInit& init, WindowKind kind)
      : kind_(kind),
        periodic_(init.node.attr_int("periodic", 1) != 0),
        dtype_(static_cast<DType>(init.node.attr_int("output_datatype", 1))) {}

  void run(runtime::KernelContext& ctx) const override {
    const int64_t size = read_scalar_int(ctx, 0, "size");
    if (size < 0) ctx.fail("size {} must not be negative", size);
    ir::Tensor& y = ctx.allocate_output(0, dtype_, {size});
    // A symmetric window of one sample is 1, as numpy defines it.
    const double denom = periodic_ ? static_cast<double>(size) : static_cast<double>(size - 1);
    dispatch(NumericTypes{}, dtype_, ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      T* yp = y.data<T>();
      for (int64_t i = 0; i < size; ++i) {
        double v = 1.0;
        if (denom > 0) {
          double phase = 2.0 * std::numbers::pi * static_cast<double>(i) / denom;
          switch (kind_) {
            case WindowKind::Hann:
              v = 0.5 - 0.5 * std::cos(phase);
              break;
            case WindowKind::Hamming: {
              constexpr double a0 = 25.0 / 46.0;
              v = a0 - (1.0 - a0) * std::cos(phase);
              break;
            }
            case WindowKind::Blackman:
              v = 0.42 - 0.5 * std::cos(phase) + 0.08 * std::cos(2.0 * phase);
              break;
          }
        }
        yp[i] = cast_value<T>(v);
      }
    });
  }

 private:
  WindowKind kind_;
  bool periodic_;
  DType dtype_;
};

class HannWindowKernel final : public runtime::Kernel {
 public:
  explicit HannWindowKernel(const runtime::KernelInit& init) : impl_(init, WindowKind::Hann) {}
  void run(runtime::KernelContext& ctx) const override { impl_.run(ctx); }

 private:
  WindowKernel impl_;
};
class HammingWindowKernel final : public runtime::Kernel {
 public:
  explicit HammingWindowKernel(const runtime::KernelInit& init)
      : impl_(init, WindowKind::Hamming) {}
  void run(runtime::KernelContext& ctx) const override { impl_.run(ctx); }

 private:
  WindowKernel impl_;
};
class BlackmanWindowKernel final : public runtime::Kernel {
 public:
  explicit BlackmanWindowKernel(const runtime::KernelInit& init)
      : impl_(init, WindowKind::Blackman) {}
  void run(runtime::KernelContext& ctx) const override { impl_.run(ctx); }

 private:
  WindowKernel impl_;
};

// Triangular mel filters over integer DFT bins, as the ONNX reference builds them.
class MelWeightMatrixKernel final : public runtime::Kernel {
 public:
  explicit MelWeightMatrixKernel(const runtime::KernelInit& init)
      : dtype_(static_cast<DType>(init.node.attr_int("output_datatype", 1))) {}

  void run(runtime::KernelContext& ctx) const override {
    const int64_t num_mel_bins = read_scalar_int(ctx, 0, "num_mel_bins");
    const int64_t dft_length = read_scalar_int(ctx, 1, "dft_length");
    const int64_t sample_rate = read_scalar_int(ctx, 2, "sample_rate");
    const double lower = read_scalar_float(ctx, 3, "lower_edge_hertz");
    const double upper = read_scalar_float(ctx, 4, "upper_edge_hertz");
    if (num_mel_bins <= 0) ctx.fail("num_mel_bins {} must be positive", num_mel_bins);
    if (dft_length <= 0) ctx.fail("dft_length {} must be positive", dft_length);
    if (sample_rate <= 0) ctx.fail("sample_rate {} must be positive", sample_rate);
    if (!(lower >= 0) || !(upper >= lower) || !(upper <= static_cast<double>(sample_rate)))
      ctx.fail("edges [{}, {}] must satisfy 0 <= lower <= upper <= sample_rate", lower, upper);
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double low_mel = to_mel(lower);
    const double mel_step = (to_mel(upper) - low_mel) / static_cast<double>(num_mel_bins + 2);
    std::vector<int64_t> points(static_cast<size_t>(num_mel_bins + 2));
    for (int64_t i = 0; i < num_mel_bins + 2; ++i) {
      double mel = static_cast<double>(i) * mel_step + low_mel;
      double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
      double bin =
          std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
      if (!(bin >= 0) || bin > static_cast<double>(spectrogram_bins - 1))
        ctx.fail("mel edge {} Hz falls outside the {} spectrogram bins", hz, spectrogram_bins);
      points[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
    }
    std::vector<double> w(static_cast<size_t>(spectrogram_bins * num_mel_bins), 0.0);
    auto at = [&](int64_t row, int64_t col) -> double& {
      return w[static_cast<size_t>(row * num_mel_bins + col)];
    };
    for (int64_t i = 0; i < num_mel_bins; ++i) {
      const int64_t left = points[static_cast<size_t>(i)];
      const int64_t center = points[static_cast<size_t>(i + 1)];
      const int64_t right = points[static_cast<size_t>(i + 2)];
      if (center == left) {
        at(center, i) = 1;
      } else {
        for (int64_t j = left; j <= center; ++j)
          at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
      }
      for (int64_t j = center; j < right; ++j)
        at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
    ir::Tensor& y = ctx.allocate_output(0, dtype_, {spectrogram_bins, num_mel_bins});
    dispatch(NumericTypes{}, dtype_, ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      T* yp = y.data<T>();
      for (size_t i = 0; i < w.size(); ++i) yp[i] = cast_value<T>(w[i]);
    });
  }

 private:
  DType dtype_;
};

}  // namespace

void register_signal_kernels(runtime::KernelRegistry& r) {
  r.add<DftKernel>(ops::OpKind::DFT, dtypes_of(FloatTypes{}));
  r.add<StftKernel>(ops::OpKind::STFT, dtypes_of(FloatTypes{}));
  r.add<HannWindowKernel>(ops::OpKind::HannWindow, dtypes_of(NumericTypes{}), -1);
  r.add<HammingWindowKernel>(ops::OpKind::HammingWindow, dtypes_of(NumericTypes{}), -1);
  r.add<BlackmanWindowKernel>(ops::OpKind::BlackmanWindow, dtypes_of(NumericTypes{}), -1);
  r.add<MelWeightMatrixKernel>(ops::OpKind::MelWeightMatrix, dtypes_of(NumericTypes{}), -1);
}

}  // namespace switchyard::cpu
