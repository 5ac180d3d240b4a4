// Quantized matrix products: MatMulInteger (int32 result) and QLinearMatMul (requantized
// result), as int32 products of zero-point-shifted values.
#include <limits>

#include "backends/cpu/kernels/matmul_internal.h"

namespace switchyard::cpu {

namespace {

using QuantTypes = TypeList<uint8_t, int8_t>;

// Per-index values of a scalar-or-1-D parameter over `count` entries (rows or columns).
std::vector<double> vector_param(const runtime::KernelContext& ctx, const ir::Tensor* t,
                                 const char* what, int64_t count, DType expected, double fallback) {
  std::vector<double> out(static_cast<size_t>(count), fallback);
  if (!t) return out;
  if (t->dtype() != expected)
    ctx.fail("{} has dtype {}, expected {}", what, ir::dtype_name(t->dtype()),
             ir::dtype_name(expected));
  bool scalar = t->numel() == 1 && t->rank() <= 1;
  if (!scalar && t->shape() != std::vector<int64_t>{count})
    ctx.fail("{} has shape {}, expected a scalar or [{}]", what, ir::shape_to_string(t->shape()),
             count);
  for (int64_t i = 0; i < count; ++i)
    out[static_cast<size_t>(i)] = t->scalar_as_double(scalar ? 0 : i);
  return out;
}

// Matrix [.., rows, cols] of u8/s8 shifted by a per-row (by_row) or per-column zero point.
std::vector<int32_t> shifted(const runtime::KernelContext& ctx, const ir::Tensor& t,
                             const std::vector<double>& zp, bool by_row, int64_t rows,
                             int64_t cols) {
  std::vector<int32_t> out(static_cast<size_t>(t.numel()));
  dispatch(QuantTypes{}, t.dtype(), ctx.node(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      int64_t within = i % (rows * cols);
      int64_t z = by_row ? within / cols : within % cols;
      out[static_cast<size_t>(i)] =
          int32_t{p[i]} - static_cast<int32_t>(zp[static_cast<size_t>(z)]);
    }
  });
  return out;
}

// The int32 product of two quantized operands with their zero points (inputs a_zp, b_zp may
// be null).
std::vector<int32_t> integer_product(const runtime::KernelContext& ctx, const ir::Tensor& a,
                                     const ir::Tensor* a_zp, const ir::Tensor& b,
                                     const ir::Tensor* b_zp, const MatMulDims& d) {
  std::vector<double> azp = vector_param(ctx, a_zp, "a_zero_point", d.m, a.dtype(), 0.0);
  std::vector<double> bzp = vector_param(ctx, b_zp, "b_zero_point", d.n, b.dtype(), 0.0);
  std::vector<int32_t> as = shifted(ctx, a, azp, true, d.m, d.k);
  std::vector<int32_t> bs = shifted(ctx, b, bzp, false, d.k, d.n);
  std::vector<int32_t> out(static_cast<size_t>(d.batch * d.m * d.n));
  if (d.k > 0) batched_gemm<int32_t>(d, as.data(), bs.data(), out.data(), ctx.num_threads());
  return out;
}

class MatMulIntegerKernel : public runtime::Kernel {
 public:
  explicit MatMulIntegerKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    MatMulDims d = matmul_dims(ctx, a.shape(), b.shape());
    ir::Tensor& y = ctx.allocate_output(0, DType::Int32, d.out_shape);
    if (y.numel() == 0) return;
    std::vector<int32_t> acc = integer_product(ctx, a, ctx.has_input(2) ? &ctx.input(2) : nullptr,
                                               b, ctx.has_input(3) ? &ctx.input(3) : nullptr, d);
    std::copy(acc.begin(), acc.end(), y.data<int32_t>());
  }
};

class QLinearMatMulKernel : public runtime::Kernel {
 public:
  explicit QLinearMatMulKernel(const runtime::KernelInit&) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(3);
    const ir::Tensor& y_zp = ctx.input(7);
    MatMulDims d = matmul_dims(ctx, a.shape(), b.shape());
    std::vector<double> a_scale =
        vector_param(ctx, &ctx.input(1), "a_scale", d.m, DType::Float32, 1.0);
    std::vector<double> b_scale =
        vector_param(ctx, &ctx.input(4), "b_scale", d.n, DType::Float32, 1.0);
    std::vector<double> y_scale =
        vector_param(ctx, &ctx.input(6), "y_scale", 1, DType::Float32, 1.0);
    if (y_zp.numel() != 1 || y_zp.rank() > 1)
      ctx.fail("y_zero_point has shape {}, expected a scalar", ir::shape_to_string(y_zp.shape()));
    ir::Tensor& y = ctx.allocate_output(0, y_zp.dtype(), d.out_shape);
    if (y.numel() == 0) return;
    std::vector<int32_t> acc = integer_product(ctx, a, &ctx.input(2), b, &ctx.input(5), d);
    float zp = static_cast<float>(y_zp.scalar_as_int(0));
    dispatch(QuantTypes{}, y_zp.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      T* yp = y.data<T>();
      const float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
      for (int64_t i = 0; i < y.numel(); ++i) {
        int64_t row = i / d.n % d.m, col = i % d.n;
        float multiplier = static_cast<float>(a_scale[static_cast<size_t>(row)]) *
                           static_cast<float>(b_scale[static_cast<size_t>(col)]) /
                           static_cast<float>(y_scale[0]);
        float v = std::nearbyint(static_cast<float>(acc[static_cast<size_t>(i)]) * multiplier) + zp;
        yp[i] = static_cast<T>(std::clamp(v, lo, hi));
      }
    });
  }
};

}  // namespace

void register_matmul_quant_kernels(runtime::KernelRegistry& r) {
  r.add<MatMulIntegerKernel>(ops::OpKind::MatMulInteger, dtypes_of(QuantTypes{}));
  r.add<QLinearMatMulKernel>(ops::OpKind::QLinearMatMul, dtypes_of(QuantTypes{}));
}

}  // namespace switchyard::cpu
