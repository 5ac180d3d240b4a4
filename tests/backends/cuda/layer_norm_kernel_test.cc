// Launch-level tests of LayerNormalization's CUDA kernels (src/backends/cuda/kernels/
// layer_norm.cu, through launch_layer_norm): the row kernel at the row lengths and counts it
// chooses its launch shape by, and the generic kernel past kLayerNormRowMaxCols; with and without
// a residual; 16-byte and unaligned operands; the mixed dtypes of LayerNormArgs (X, Z and Y of
// different types, the saturating second output, the residual sum written out) — against a
// reference in double, and the fused forms bit for bit against the unfused Cast -> Add ->
// LayerNormalization -> Cast they replace.
// Through graphs the same kernels run in the op harness (tests/harness/cases/normalization.cc).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

#include "backends/cuda/kernel_test_util.h"
#include "backends/cuda/kernels/normalization_impl.h"

namespace switchyard::testing {
namespace {

using Shape = std::vector<int64_t>;

constexpr DType kNone = DType::Undefined;
constexpr DType kF32 = DType::Float32;
constexpr DType kF16 = DType::Float16;
constexpr DType kBF16 = DType::BFloat16;
constexpr DType kF64 = DType::Float64;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

static_assert(cuda::kLayerNormRowMaxCols < 9000, "rows of 9000 must take the generic kernel");

// The op harness's (tests/harness/cases/normalization.cc): float32 statistics and one rounding
// of a 16-bit result.
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

// One LayerNormalization launch.
struct Spec {
  int64_t rows = 1;
  int64_t cols = 1;
  DType x = kF32;
  DType z = kNone;       // the residual's dtype; kNone: no residual
  DType y = kNone;       // kNone: X's
  DType param = kNone;   // Scale's and B's; kNone: Y's
  DType narrow = kNone;  // y_narrow's; kNone: no second output
  bool sum = false;      // write S (needs z), in Y's dtype
  bool write_y = true;
  bool bias = true;
  bool stats = false;          // Mean and InvStdDev (float32)
  bool scale_per_row = false;  // Scale of shape [rows, 1] through the view, else [cols]
  bool unaligned = false;      // every operand one element past a 16-byte boundary
  bool double_stats = false;
  float epsilon = 1e-5f;
  uint64_t seed = 1;

  DType y_type() const { return y == kNone ? x : y; }
  DType param_type() const { return param == kNone ? y_type() : param; }
};

std::string name_of(DType d) { return d == kNone ? "-" : std::string(dtype_name(d)); }

std::string describe(const Spec& s) {
  return fmt::format("rows {} cols {}: x {} z {} y {}{} param {} narrow {}{}{}{}{}{}", s.rows,
                     s.cols, name_of(s.x), name_of(s.z), name_of(s.y_type()),
                     s.write_y ? "" : " (unwritten)", name_of(s.param_type()), name_of(s.narrow),
                     s.sum ? ", sum written" : "", s.bias ? "" : ", no bias",
                     s.scale_per_row ? ", scale per row" : "", s.unaligned ? ", unaligned" : "",
                     s.double_stats ? ", double statistics" : "");
}

struct Inputs {
  Tensor x;
  std::optional<Tensor> z;
  Tensor scale;
  std::optional<Tensor> bias;
};

Inputs random_inputs(const Spec& s) {
  Inputs in{random_tensor(s.x, {s.rows, s.cols}, s.seed, -2.0, 3.0), std::nullopt,
            random_tensor(s.param_type(), s.scale_per_row ? Shape{s.rows, 1} : Shape{s.cols},
                          s.seed + 1, 0.5, 1.5),
            std::nullopt};
  if (s.z != kNone) in.z = random_tensor(s.z, {s.rows, s.cols}, s.seed + 2, -1.5, 1.5);
  if (s.bias) in.bias = random_tensor(s.param_type(), {s.cols}, s.seed + 3);
  return in;
}

struct Outputs {
  std::optional<Tensor> y, narrow, sum, mean, inv_std_dev;
};

// launch_layer_norm on `in` as `s` describes, its outputs poisoned first.
Outputs run_layer_norm(const Spec& s, const Inputs& in) {
  const size_t n = static_cast<size_t>(s.rows * s.cols);
  auto offset = [&](DType d) { return s.unaligned ? dtype_size(d) : 0; };
  // Poisoned (0xFF: NaN), so an element left unwritten fails the comparison.
  auto output = [&](DType d, size_t count) {
    return std::make_unique<DeviceBuffer>(count * dtype_size(d), offset(d));
  };
  DeviceBuffer x(in.x, offset(s.x));
  DeviceBuffer scale(in.scale, offset(s.param_type()));
  std::unique_ptr<DeviceBuffer> z, bias, narrow, sum, mean, inv;
  if (in.z) z = std::make_unique<DeviceBuffer>(*in.z, offset(s.z));
  if (in.bias) bias = std::make_unique<DeviceBuffer>(*in.bias, offset(s.param_type()));
  std::unique_ptr<DeviceBuffer> y = output(s.y_type(), n);
  if (s.narrow != kNone) narrow = output(s.narrow, n);
  if (s.sum) sum = output(s.y_type(), n);
  if (s.stats) {
    mean = output(kF32, static_cast<size_t>(s.rows));
    inv = output(kF32, static_cast<size_t>(s.rows));
  }

  cuda::LayerNormArgs a;
  a.dtype = s.param_type();
  // The single-dtype form leaves the per-operand dtypes Undefined, as plain LayerNormalization
  // does.
  if (s.x != a.dtype) a.x_dtype = s.x;
  if (s.y_type() != a.dtype) a.y_dtype = s.y_type();
  a.x = x.get();
  a.y = s.write_y ? y->get() : nullptr;
  a.scale = scale.get();
  if (s.scale_per_row) {
    a.scale_per_column = false;
    a.scale_view.rank = 2;
    a.scale_view.dims[0] = s.rows;
    a.scale_view.dims[1] = s.cols;
    a.scale_view.strides[0] = 1;
    a.scale_view.strides[1] = 0;
  }
  a.bias = bias ? bias->get() : nullptr;
  if (z) {
    a.residual = z->get();
    if (s.z != a.dtype) a.residual_dtype = s.z;
  }
  if (narrow) {
    a.y_narrow = narrow->get();
    a.y_narrow_dtype = s.narrow;
  }
  a.sum = sum ? sum->get() : nullptr;
  a.rows = s.rows;
  a.cols = s.cols;
  a.epsilon = s.epsilon;
  a.double_stats = s.double_stats;
  a.stats_dtype = kF32;
  a.mean = mean ? mean->get() : nullptr;
  a.inv_std_dev = inv ? inv->get() : nullptr;
  check_cuda(cuda::launch_layer_norm(a, nullptr), "launch_layer_norm");
  sync_device();
  for (const DeviceBuffer* b : {y.get(), narrow.get(), sum.get(), mean.get(), inv.get()}) {
    if (b) {
      EXPECT_TRUE(b->guards_intact()) << "a write outside an output";
    }
  }

  Outputs out;
  const Shape shape = {s.rows, s.cols};
  if (s.write_y) out.y = y->download(s.y_type(), shape);
  if (narrow) out.narrow = narrow->download(s.narrow, shape);
  if (sum) out.sum = sum->download(s.y_type(), shape);
  if (mean) out.mean = mean->download(kF32, {s.rows});
  if (inv) out.inv_std_dev = inv->download(kF32, {s.rows});
  return out;
}

// The value a float32/float16/bfloat16 tensor of dtype d holds once v is stored in it.
float stored(DType d, float v) {
  if (d == kF16) return half_to_float(float_to_half(v));
  if (d == kBF16) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}

// S: X, or X + Z as the unfused Casts and Add leave it (in float, rounded to Y's dtype; in
// double for a float64 Y).
std::vector<double> summed(const Spec& s, const Inputs& in) {
  std::vector<double> v = to_doubles(in.x);
  if (!in.z) return v;
  const std::vector<double> z = to_doubles(*in.z);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = s.y_type() == kF64
               ? v[i] + z[i]
               : stored(s.y_type(), static_cast<float>(v[i]) + static_cast<float>(z[i]));
  return v;
}

struct Expected {
  std::vector<double> y, mean, inv_std_dev;
};

Expected reference(const Spec& s, const Inputs& in) {
  const std::vector<double> v = summed(s, in);
  const std::vector<double> scale = to_doubles(in.scale);
  const std::vector<double> bias = in.bias ? to_doubles(*in.bias) : std::vector<double>{};
  Expected e;
  e.y.resize(v.size());
  const size_t cols = static_cast<size_t>(s.cols);
  for (size_t r = 0; r < static_cast<size_t>(s.rows); ++r) {
    const double* row = v.data() + r * cols;
    double sum = 0, sq = 0;
    for (size_t j = 0; j < cols; ++j) sum += row[j];
    const double mean = sum / static_cast<double>(cols);
    for (size_t j = 0; j < cols; ++j) sq += (row[j] - mean) * (row[j] - mean);
    const double inv = 1 / std::sqrt(sq / static_cast<double>(cols) + s.epsilon);
    e.mean.push_back(mean);
    e.inv_std_dev.push_back(inv);
    for (size_t j = 0; j < cols; ++j)
      e.y[r * cols + j] =
          (row[j] - mean) * inv * scale[s.scale_per_row ? r : j] + (bias.empty() ? 0.0 : bias[j]);
  }
  return e;
}

// The saturating cast of precision.h (launch_cast with saturate) of a float into float16 or
// bfloat16, as bits.
uint16_t saturated_bits(DType to, float v) {
  const float top = to == kF16 ? 65504.0f : 3.3895313892515355e38f;
  const float c = std::isinf(v) ? v : (v > top ? top : (v < -top ? -top : v));
  return to == kF16 ? float_to_half(c) : float_to_bfloat16(c);
}

// "" when `narrow` holds the saturating cast of every value of `y` bit for bit (a NaN: any
// NaN), else the first mismatches.
std::string saturating_cast_mismatches(const Tensor& narrow, const Tensor& y) {
  const uint16_t* bits = static_cast<const uint16_t*>(narrow.raw());
  std::string msg;
  int bad = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const float v = static_cast<float>(y.scalar_as_double(i));
    const bool ok = std::isnan(v) ? std::isnan(narrow.scalar_as_double(i))
                                  : bits[i] == saturated_bits(narrow.dtype(), v);
    if (!ok && bad++ < 5)
      msg += fmt::format("[{}] {} of Y {} ({:#06x}); ", i, narrow.scalar_as_double(i), v, bits[i]);
  }
  if (bad) msg = fmt::format("{} of {} elements differ: {}", bad, y.numel(), msg);
  return msg;
}

// "" when `got` holds `want` bit for bit (where `want` is NaN: any NaN), else the first
// mismatches.
std::string bit_mismatches(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) return "dtype or shape differ";
  const size_t size = dtype_size(want.dtype());
  const char* g = static_cast<const char*>(got.raw());
  const char* w = static_cast<const char*>(want.raw());
  std::string msg;
  int bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const size_t at = static_cast<size_t>(i) * size;
    const bool ok = std::isnan(want.scalar_as_double(i)) ? std::isnan(got.scalar_as_double(i))
                                                         : std::memcmp(g + at, w + at, size) == 0;
    if (!ok && bad++ < 5)
      msg += fmt::format("[{}] {} != {}; ", i, got.scalar_as_double(i), want.scalar_as_double(i));
  }
  if (bad) msg = fmt::format("{} of {} elements differ: {}", bad, want.numel(), msg);
  return msg;
}

void check(const Spec& s, const Inputs& in, const Outputs& out) {
  SCOPED_TRACE(describe(s));
  const Expected e = reference(s, in);
  const Shape shape = {s.rows, s.cols};
  // The sum as the unfused Casts and Add leave it, exactly.
  if (s.sum) {
    EXPECT_EQ(bit_mismatches(*out.sum, tensor_of(s.y_type(), shape, summed(s, in))), "");
  }
  if (s.write_y) {
    const Tolerance t = tolerance_for(s.y_type());
    EXPECT_TENSOR_NEAR(*out.y, tensor_of(s.y_type(), shape, e.y), t.rtol, t.atol);
  }
  if (s.narrow != kNone) {
    if (s.write_y) {
      EXPECT_EQ(saturating_cast_mismatches(*out.narrow, *out.y), "");
    } else {
      std::vector<double> narrowed(e.y.size());
      for (size_t i = 0; i < e.y.size(); ++i) {
        const uint16_t b = saturated_bits(s.narrow, stored(s.y_type(), static_cast<float>(e.y[i])));
        narrowed[i] = s.narrow == kF16 ? half_to_float(b) : bfloat16_to_float(b);
      }
      const Tolerance t = tolerance_for(s.narrow);
      EXPECT_TENSOR_NEAR(*out.narrow, tensor_of(s.narrow, shape, narrowed), t.rtol, t.atol);
    }
  }
  if (s.stats) {
    const Tolerance t = tolerance_for(kF32);
    EXPECT_TENSOR_NEAR(*out.mean, tensor_of(kF32, {s.rows}, e.mean), t.rtol, t.atol);
    EXPECT_TENSOR_NEAR(*out.inv_std_dev, tensor_of(kF32, {s.rows}, e.inv_std_dev), t.rtol, t.atol);
  }
}

void run_and_check(const Spec& s) {
  const Inputs in = random_inputs(s);
  check(s, in, run_layer_norm(s, in));
}

TEST(CudaLayerNormKernel, RowLengthsAndRowCounts) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // Scalar rows (1, 7, 33: a warp, two warps), 16-byte rows of one slot a thread (64 ... 4096:
  // 32 to 512 threads, BERT's 768 and 3072) and of two (5000), and the generic kernel (9000).
  // 1030 rows of the longest lengths in float16 only: the row count changes nothing there but
  // the time the reference takes.
  const std::vector<int64_t> lengths = {1, 7, 33, 64, 768, 1000, 1024, 3072, 4096, 5000, 9000};
  uint64_t seed = 100;
  for (DType d : {kF32, kF16, kBF16})
    for (int64_t rows : {1, 3, 128, 1030})
      for (int64_t cols : lengths)
        for (bool residual : {false, true}) {
          if (rows == 1030 && cols > 1024 && d != kF16) continue;
          Spec s;
          s.rows = rows;
          s.cols = cols;
          s.x = d;
          s.z = residual ? d : kNone;
          s.stats = rows == 3;
          s.seed = seed += 4;
          run_and_check(s);
        }
  // Many rows: several short rows a block (7, 33, 64), BERT's 8 x 1024 tokens (768, 1024).
  for (DType d : {kF32, kF16})
    for (int64_t cols : {7, 33, 64, 768, 1024}) {
      Spec s;
      s.rows = 8192;
      s.cols = cols;
      s.x = d;
      s.z = d;
      s.stats = cols == 64;
      s.seed = seed += 4;
      run_and_check(s);
    }
}

TEST(CudaLayerNormKernel, UnalignedOperandsAndOddLengths) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // Unaligned: the scalar form at every slot count (8192 is 8 slots of 1024 threads); aligned
  // 8192: two 16-byte slots of 512 threads; 3001: scalar though aligned.
  uint64_t seed = 2000;
  for (DType d : {kF32, kF16, kBF16})
    for (int64_t cols : {8, 768, 1024, 3001, 4096, 8192})
      for (bool unaligned : {true, false})
        for (int64_t rows : {3, 130}) {
          Spec s;
          s.rows = rows;
          s.cols = cols;
          s.x = d;
          s.z = d;
          s.y = kF32;
          s.narrow = kF16;
          s.unaligned = unaligned;
          s.stats = true;
          s.seed = seed += 4;
          run_and_check(s);
        }
}

TEST(CudaLayerNormKernel, MixedDtypes) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // X float16/bfloat16/float32; Z and Y float32 or X's; Scale and B of Y's dtype or X's; an
  // optional second output in either 16-bit type. 16-byte rows, scalar rows, rows of two slots
  // and the generic kernel.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {3, 768}, {130, 1000}, {5, 33}, {2, 5000}, {3, 9000}};
  std::vector<std::array<DType, 4>> combos;  // x, z, y, param
  for (DType x : {kF32, kF16, kBF16})
    for (DType z : {kNone, kF32, x})
      for (DType y : {kF32, x})
        for (DType param : {y, x}) {
          const std::array<DType, 4> c = {x, z, y, param};
          if (std::find(combos.begin(), combos.end(), c) == combos.end()) combos.push_back(c);
        }
  uint64_t seed = 3000;
  for (const std::array<DType, 4>& c : combos)
    for (DType narrow : {kNone, kF16, kBF16})
      for (size_t k = 0; k < shapes.size(); ++k) {
        Spec s;
        s.rows = shapes[k].first;
        s.cols = shapes[k].second;
        s.x = c[0];
        s.z = c[1];
        s.y = c[2];
        s.param = c[3];
        s.narrow = narrow;
        s.stats = k % 2 == 0;
        s.seed = seed += 4;
        run_and_check(s);
      }
}

TEST(CudaLayerNormKernel, SumOutputAtEveryRowLengthAndDtype) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // LayerNormArgs::sum (fusion::ResidualSum, the pre-norm running sum): S written in Y's dtype
  // as the norm reads X and Z, bit for bit the unfused Add's. Row lengths of the scalar form (1,
  // 7, 33, 771, 3001), the 16-byte form of one and two slots (768, 1024, 4096, 8192) and the
  // generic kernel (8200, 9000); one row, a few, more than a block's worth; the residual stream
  // under --precision fp16/bf16 (a float32 X and Y with a 16-bit Z, or a 16-bit X absorbed from
  // its Cast) and single-dtype norms; with the narrow copy beside it; unaligned operands;
  // double statistics (the generic kernel at any length).
  struct Types {
    DType x, z, y, narrow;
  };
  const std::vector<Types> types = {
      {kF32, kF32, kF32, kNone},   {kF16, kF16, kF16, kNone},  {kBF16, kBF16, kBF16, kNone},
      {kF32, kF16, kF32, kF16},    {kF32, kBF16, kF32, kBF16}, {kF16, kF32, kF32, kF16},
      {kBF16, kBF16, kF32, kNone}, {kF64, kF64, kF64, kNone},
  };
  const std::vector<int64_t> lengths = {1, 7, 33, 768, 771, 1024, 3001, 4096, 8192, 8200, 9000};
  uint64_t seed = 10000;
  for (const Types& t : types)
    for (int64_t cols : lengths)
      for (int64_t rows : {1, 3, 130}) {
        if (rows == 130 && cols > 1024 && t.x != kF32) continue;  // the reference's time only
        Spec s;
        s.rows = rows;
        s.cols = cols;
        s.x = t.x;
        s.z = t.z;
        s.y = t.y;
        s.narrow = t.narrow;
        s.sum = true;
        s.unaligned = rows == 3 && cols % 8 == 0;
        s.double_stats = rows == 1 && cols == 768;
        s.stats = rows == 3;
        s.seed = seed += 4;
        run_and_check(s);
      }
}

TEST(CudaLayerNormKernel, SumOutputKeepsNaNAndInfinities) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // X and Z holding NaN, ±inf (inf + -inf: NaN) and, for float16, sums past its range (70000:
  // infinity, as the unfused Add gives it); the rows with them normalize to NaN, the others stay
  // finite; the sum is the Add's everywhere.
  uint64_t seed = 11000;
  for (const auto& [x, z, y] : std::vector<std::array<DType, 3>>{
           {kF32, kF32, kF32}, {kF32, kF16, kF32}, {kF16, kF16, kF16}, {kBF16, kBF16, kBF16}})
    for (int64_t cols : {768, 771, 9000}) {
      Spec s;
      s.rows = 5;
      s.cols = cols;
      s.x = x;
      s.z = z;
      s.y = y;
      s.sum = true;
      s.seed = seed += 4;
      Inputs in = random_inputs(s);
      std::vector<double> xv = to_doubles(in.x), zv = to_doubles(*in.z);
      xv[static_cast<size_t>(cols + 3)] = kNaN;      // row 1
      xv[static_cast<size_t>(2 * cols + 4)] = kInf;  // row 2: inf + -inf
      zv[static_cast<size_t>(2 * cols + 4)] = -kInf;
      zv[static_cast<size_t>(3 * cols + 5)] = -kInf;  // row 3: -inf
      if (x == kF16) {                                // row 4: 40000 + 30000 overflows float16
        xv[static_cast<size_t>(4 * cols + 6)] = 40000;
        zv[static_cast<size_t>(4 * cols + 6)] = 30000;
      }
      in.x = tensor_of(x, {s.rows, cols}, xv);
      in.z = tensor_of(z, {s.rows, cols}, zv);
      const Outputs out = run_layer_norm(s, in);
      check(s, in, out);
      SCOPED_TRACE(describe(s));
      EXPECT_TRUE(std::isnan(out.sum->scalar_as_double(cols + 3)));
      EXPECT_TRUE(std::isnan(out.sum->scalar_as_double(2 * cols + 4)));
      EXPECT_EQ(out.sum->scalar_as_double(3 * cols + 5), -kInf);
      if (x == kF16) {
        EXPECT_EQ(out.sum->scalar_as_double(4 * cols + 6), kInf);
      }
      EXPECT_TRUE(std::isnan(out.y->scalar_as_double(cols)));
      EXPECT_TRUE(std::isfinite(out.y->scalar_as_double(0)));
    }
}

TEST(CudaLayerNormKernel, ResidualSumIsTheUnfusedCastAndAdd) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // LN(X + Z) with the casts absorbed computes bit for bit what the unfused graph does: the sum
  // in Y's dtype as the Add leaves it, normalized by the same kernel, then Cast (saturating).
  struct Types {
    DType x, z, y, narrow;
  };
  const std::vector<Types> types = {
      {kF16, kF32, kF32, kF16},     {kBF16, kF32, kF32, kBF16}, {kF16, kF16, kF16, kNone},
      {kBF16, kBF16, kBF16, kNone}, {kF32, kF32, kF32, kF16},   {kF16, kF16, kF32, kF16},
      {kF16, kF32, kF16, kBF16},
  };
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {128, 768}, {3, 33}, {130, 4096}, {2, 9000}};
  uint64_t seed = 4000;
  for (const Types& t : types)
    for (const auto& [rows, cols] : shapes) {
      Spec fused;
      fused.rows = rows;
      fused.cols = cols;
      fused.x = t.x;
      fused.z = t.z;
      fused.y = t.y;
      fused.narrow = t.narrow;
      fused.sum = true;
      fused.stats = true;
      fused.seed = seed += 4;
      SCOPED_TRACE(describe(fused));
      const Inputs in = random_inputs(fused);
      const Outputs a = run_layer_norm(fused, in);
      Spec unfused = fused;
      unfused.x = t.y;
      unfused.z = kNone;
      unfused.sum = false;
      Inputs summed_in = in;
      summed_in.x = tensor_of(t.y, {rows, cols}, summed(fused, in));
      summed_in.z.reset();
      const Outputs b = run_layer_norm(unfused, summed_in);
      EXPECT_TRUE(same_bits(*a.sum, summed_in.x));  // what the Add gave the unfused norm
      EXPECT_TRUE(same_bits(*a.y, *b.y));
      if (t.narrow != kNone) {
        EXPECT_TRUE(same_bits(*a.narrow, *b.narrow));
      }
      EXPECT_TRUE(same_bits(*a.mean, *b.mean));
      EXPECT_TRUE(same_bits(*a.inv_std_dev, *b.inv_std_dev));
      check(fused, in, a);
    }
}

TEST(CudaLayerNormKernel, NarrowOutputSaturates) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // Y (float32) beyond the narrow type's range: |Y| ~ 1e5 (Scale 1e5), 70000 (B), 3.4e38 (B:
  // finite in float32, beyond bfloat16), ±inf (B) and NaN (B; rows with a NaN or an infinity
  // in X); X holds 70000 in one row (infinity in float16).
  uint64_t seed = 5000;
  for (DType x : {kF32, kF16, kBF16})
    for (DType narrow : {kF16, kBF16})
      for (int64_t cols : {768, 771, 9000}) {
        Spec s;
        s.rows = 6;
        s.cols = cols;
        s.x = x;
        s.y = kF32;
        s.narrow = narrow;
        s.seed = seed += 4;
        Inputs in = random_inputs(s);
        std::vector<double> xv = to_doubles(in.x), sc = to_doubles(in.scale),
                            bs = to_doubles(*in.bias);
        xv[static_cast<size_t>(1 * cols + 5)] = kNaN;
        xv[static_cast<size_t>(2 * cols + 7)] = -kInf;
        xv[static_cast<size_t>(3 * cols)] = 70000;
        sc[1] = 1e5;
        sc[2] = -1e5;
        const std::vector<std::pair<size_t, double>> biases = {
            {3, 70000}, {4, -70000}, {5, kInf}, {6, -kInf}, {8, kNaN}, {9, 3.4e38}, {10, -3.4e38}};
        for (const auto& [j, b] : biases) bs[j] = b;
        in.x = tensor_of(x, {s.rows, cols}, xv);
        in.scale = tensor_of(kF32, {cols}, sc);
        in.bias = tensor_of(kF32, {cols}, bs);
        const Outputs out = run_layer_norm(s, in);
        check(s, in, out);
        // Row 0 is finite: the clamped columns hold the narrow type's largest value.
        const double top = narrow == kF16 ? 65504.0 : 3.3895313892515355e38;
        SCOPED_TRACE(describe(s));
        EXPECT_EQ(out.narrow->scalar_as_double(9), top);
        EXPECT_EQ(out.narrow->scalar_as_double(10), -top);
        EXPECT_EQ(out.narrow->scalar_as_double(5), kInf);
        EXPECT_EQ(out.narrow->scalar_as_double(6), -kInf);
        if (narrow == kF16) {
          EXPECT_EQ(out.narrow->scalar_as_double(3), top);
          EXPECT_EQ(out.narrow->scalar_as_double(4), -top);
        }
        EXPECT_TRUE(std::isnan(out.narrow->scalar_as_double(8)));
        EXPECT_TRUE(std::isnan(out.narrow->scalar_as_double(cols + 100)));  // the row with a NaN
      }
}

TEST(CudaLayerNormKernel, NarrowOutputAlone) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  uint64_t seed = 6000;
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{128, 768}, {3, 33}, {2, 9000}})
    for (DType narrow : {kF16, kBF16}) {
      Spec s;
      s.rows = rows;
      s.cols = cols;
      s.x = narrow;
      s.z = kF32;
      s.y = kF32;
      s.narrow = narrow;
      s.write_y = false;
      s.stats = true;
      s.seed = seed += 4;
      run_and_check(s);
    }
}

TEST(CudaLayerNormKernel, ScaleViewsAndNoBias) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  uint64_t seed = 7000;
  for (DType d : {kF32, kF16})
    for (int64_t cols : {768, 33, 9000})
      for (bool per_row : {true, false}) {
        Spec s;
        s.rows = 5;
        s.cols = cols;
        s.x = d;
        s.z = d;
        s.bias = false;
        s.scale_per_row = per_row;
        s.seed = seed += 4;
        run_and_check(s);
      }
}

TEST(CudaLayerNormKernel, DoubleStatisticsTakeTheResidual) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  uint64_t seed = 8000;
  for (DType d : {kF64, kF16, kF32})
    for (int64_t cols : {768, 9000}) {
      Spec s;
      s.rows = 3;
      s.cols = cols;
      s.x = d;
      s.z = d;
      s.double_stats = true;
      s.stats = true;
      s.seed = seed += 4;
      run_and_check(s);
    }
  // float64 with mixed operands: the sum in double where Y is float64.
  Spec s;
  s.rows = 4;
  s.cols = 100;
  s.x = kF32;
  s.z = kF64;
  s.y = kF64;
  s.seed = seed += 4;
  run_and_check(s);
}

TEST(CudaLayerNormKernel, MoreRowsThanTheGridHolds) {
  SY_SKIP_WITHOUT_CUDA_DEVICE();
  // 4 rows of one column a block and at most 65535 * 32 blocks: each block loops over rows.
  Spec s;
  s.rows = 8400000;
  s.cols = 1;
  s.stats = true;
  s.seed = 9000;
  run_and_check(s);
}

TEST(CudaLayerNormKernel, RefusesInvalidArguments) {
  // Checked before anything is enqueued: no device needed.
  cuda::LayerNormArgs a;
  a.rows = 1;
  a.cols = 4;
  int dummy = 0;
  a.x = &dummy;
  a.scale = &dummy;
  a.y = &dummy;
  a.y_narrow = &dummy;
  a.y_narrow_dtype = kF32;
  EXPECT_EQ(cuda::launch_layer_norm(a, nullptr), cudaErrorInvalidValue);
  a.y_narrow = nullptr;
  a.residual = &dummy;
  a.residual_dtype = DType::Int64;
  EXPECT_EQ(cuda::launch_layer_norm(a, nullptr), cudaErrorInvalidValue);
  a.residual = nullptr;
  a.sum = &dummy;  // a sum needs the residual
  EXPECT_EQ(cuda::launch_layer_norm(a, nullptr), cudaErrorInvalidValue);
  a.sum = nullptr;
  a.x_dtype = DType::Int32;
  EXPECT_EQ(cuda::launch_layer_norm(a, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace switchyard::testing
