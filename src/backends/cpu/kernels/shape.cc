// CPU kernels of the shape family: constants, shape queries, views that alias their input
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity), Range, EyeLike, Trilu. Layout ops live in
// shape_layout.cc and shape_pad.cc.
#include <cmath>
#include <limits>

#include "backends/cpu/kernels/shape_internal.h"
#include "ir/checked_math.h"
#include "ops/shape_geometry.h"

namespace switchyard::cpu {

namespace {

using runtime::KernelContext;
using runtime::KernelInit;

class ConstantKernel : public runtime::Kernel {
 public:
  explicit ConstantKernel(const KernelInit& init) : value_(init.node.attr_tensor("value")) {}
  void run(KernelContext& ctx) const override { ctx.set_output(0, value_); }

 private:
  ir::Tensor value_;
};

class ConstantOfShapeKernel : public runtime::Kernel {
 public:
  explicit ConstantOfShapeKernel(const KernelInit& init) {
    if (init.node.has_attribute("value")) {
      value_ = init.node.attr_tensor("value");
    } else {
      value_ = ir::Tensor(DType::Float32, {1});
      *value_.data<float>() = 0.0f;
    }
    SY_CHECK(value_.numel() == 1, InvalidModel, "{}: 'value' must hold one element",
             init.node.describe());
  }
  void run(KernelContext& ctx) const override {
    std::vector<int64_t> shape = int_values(ctx, 0, "shape");
    for (int64_t d : shape)
      if (d < 0) ctx.fail("shape has a negative dimension {}", d);
    ir::Tensor& out = ctx.allocate_output(0, value_.dtype(), shape);
    dispatch_by_size(value_.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, std::string>) {
        T v;
        std::memcpy(&v, value_.raw(), sizeof(T));
        std::fill(out.data<T>(), out.data<T>() + out.numel(), v);
      }
    });
  }

 private:
  ir::Tensor value_;
};

class IdentityKernel : public runtime::Kernel {
 public:
  explicit IdentityKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override { ctx.set_output(0, ctx.input_datum(0)); }
};

class ShapeKernel : public runtime::Kernel {
 public:
  explicit ShapeKernel(const KernelInit& init)
      : start_(init.node.attr_int("start", 0)),
        end_(init.node.attr_int("end", std::numeric_limits<int64_t>::max())) {}
  void run(KernelContext& ctx) const override {
    const std::vector<int64_t>& shape = ctx.input(0).shape();
    int64_t rank = static_cast<int64_t>(shape.size());
    auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    int64_t start = clamp(start_), end = clamp(end_);
    int64_t len = std::max<int64_t>(end - start, 0);
    ir::Tensor& out = ctx.allocate_output(0, DType::Int64, {len});
    for (int64_t i = 0; i < len; ++i)
      out.data<int64_t>()[i] = shape[static_cast<size_t>(start + i)];
  }

 private:
  int64_t start_, end_;
};

class SizeKernel : public runtime::Kernel {
 public:
  explicit SizeKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    int64_t n = ctx.input(0).numel();
    *ctx.allocate_output(0, DType::Int64, {}).data<int64_t>() = n;
  }
};

class ReshapeKernel : public runtime::Kernel {
 public:
  explicit ReshapeKernel(const KernelInit& init)
      : allowzero_(init.node.attr_int("allowzero", 0) != 0) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::vector<int64_t> shape = ops::reshape_shape(ctx.node(), in.shape(), in.numel(),
                                                    int_values(ctx, 1, "shape"), allowzero_);
    ctx.set_output(0, in.reshaped(std::move(shape)));
  }

 private:
  bool allowzero_;
};

class FlattenKernel : public runtime::Kernel {
 public:
  explicit FlattenKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 1)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    if (axis_ < -rank || axis_ > rank) ctx.fail("axis {} is out of range for rank {}", axis_, rank);
    int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    // An empty tensor may hold any dims beside its zero: their products are checked.
    const std::vector<int64_t>& dims = in.shape();
    auto split = dims.begin() + static_cast<std::ptrdiff_t>(axis);
    int64_t outer = ir::checked_product({dims.begin(), split}, "Flatten's outer size");
    int64_t inner = ir::checked_product({split, dims.end()}, "Flatten's inner size");
    ctx.set_output(0, in.reshaped({outer, inner}));
  }

 private:
  int64_t axis_;
};

// Sorted distinct axes normalized to `rank`.
std::vector<int64_t> sorted_axes(const KernelContext& ctx, std::vector<int64_t> axes,
                                 int64_t rank) {
  for (int64_t& a : axes) a = ops::normalize_axis(ctx.node(), a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    ctx.fail("axes contain a duplicate");
  return axes;
}

class SqueezeKernel : public runtime::Kernel {
 public:
  explicit SqueezeKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::vector<int64_t> out;
    if (!ctx.has_input(1)) {
      for (int64_t d : in.shape())
        if (d != 1) out.push_back(d);
    } else {
      std::vector<int64_t> raw = int_values(ctx, 1, "axes");
      // normalize_axis lets axis 0 through for rank 0; a scalar has no axis to squeeze.
      if (in.rank() == 0 && !raw.empty())
        ctx.fail("axis {} is out of range for a rank-0 input", raw[0]);
      std::vector<int64_t> axes = sorted_axes(ctx, std::move(raw), in.rank());
      for (int64_t i = 0; i < in.rank(); ++i) {
        if (!std::binary_search(axes.begin(), axes.end(), i)) {
          out.push_back(in.dim(i));
        } else if (in.dim(i) != 1) {
          ctx.fail("cannot squeeze axis {} of size {}", i, in.dim(i));
        }
      }
    }
    ctx.set_output(0, in.reshaped(std::move(out)));
  }
};

class UnsqueezeKernel : public runtime::Kernel {
 public:
  explicit UnsqueezeKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::vector<int64_t> raw = int_values(ctx, 1, "axes");
    int64_t out_rank = in.rank() + static_cast<int64_t>(raw.size());
    std::vector<int64_t> axes = sorted_axes(ctx, std::move(raw), out_rank);
    std::vector<int64_t> out;
    size_t next = 0;
    for (int64_t i = 0; i < out_rank; ++i) {
      if (std::binary_search(axes.begin(), axes.end(), i))
        out.push_back(1);
      else
        out.push_back(in.shape()[next++]);
    }
    ctx.set_output(0, in.reshaped(std::move(out)));
  }
};

class RangeKernel : public runtime::Kernel {
 public:
  explicit RangeKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    for (size_t i = 0; i < 3; ++i)
      if (ctx.input(i).numel() != 1) ctx.fail("input {} must be a scalar", i);
    DType dtype = ctx.input(0).dtype();
    for (size_t i = 1; i < 3; ++i)
      if (ctx.input(i).dtype() != dtype) ctx.fail("inputs must share one dtype");
    dispatch(TypeList<float, double, int16_t, int32_t, int64_t>{}, dtype, ctx.node(),
             [&](auto tag) {
               using T = decltype(tag);
               T start = *ctx.input(0).data<T>();
               T limit = *ctx.input(1).data<T>();
               T delta = *ctx.input(2).data<T>();
               if (delta == T(0)) ctx.fail("delta must not be zero");
               int64_t n = 0;
               if constexpr (std::is_integral_v<T>) {
                 __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start);
                 __int128 d = static_cast<__int128>(delta);
                 if ((span > 0 && d > 0) || (span < 0 && d < 0))
                   n = static_cast<int64_t>((span + d + (d > 0 ? -1 : 1)) / d);
               } else {
                 double count = std::ceil((static_cast<double>(limit) - start) / delta);
                 if (!(count < 9.0e18)) ctx.fail("range of {} elements is too large", count);
                 n = count > 0 ? static_cast<int64_t>(count) : 0;  // -3e38 must not be cast
               }
               T* out = ctx.allocate_output(0, dtype, {n}).template data<T>();
               for (int64_t i = 0; i < n; ++i)
                 out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
             });
  }
};

class EyeLikeKernel : public runtime::Kernel {
 public:
  explicit EyeLikeKernel(const KernelInit& init)
      : dtype_(init.node.has_attribute("dtype") ? static_cast<DType>(init.node.attr_int("dtype"))
                                                : init.node.input(0)->type().dtype),
        k_(init.node.attr_int("k", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() != 2) ctx.fail("input must be 2-D, got {}", ir::shape_to_string(in.shape()));
    DType dtype = ctx.node().has_attribute("dtype") ? dtype_ : in.dtype();
    ir::Tensor& out = ctx.allocate_output(0, dtype, in.shape());
    int64_t rows = in.dim(0), cols = in.dim(1);
    dispatch(AllPodTypes{}, dtype, ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      T* p = out.data<T>();
      std::memset(static_cast<void*>(p), 0, out.nbytes());
      // The diagonal's rows: c = r + k inside [0, cols), without forming r + k for any k
      // (k may be near INT64_MAX or INT64_MIN).
      for (int64_t r = 0; r < rows; ++r) {
        if (k_ >= cols || k_ <= -rows) break;  // no element of the diagonal lies inside
        if (k_ < 0 && r < -k_) continue;
        int64_t c = r + k_;
        if (c >= 0 && c < cols) p[r * cols + c] = convert<T>(1);
      }
    });
  }

 private:
  DType dtype_;
  int64_t k_;
};

class TriluKernel : public runtime::Kernel {
 public:
  explicit TriluKernel(const KernelInit& init) : upper_(init.node.attr_int("upper", 1) != 0) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() < 2) ctx.fail("input must have rank >= 2, got {}", in.rank());
    int64_t k = 0;
    if (ctx.has_input(1)) {
      std::vector<int64_t> kv = int_values(ctx, 1, "k");
      if (kv.size() != 1) ctx.fail("k must hold one value, got {}", kv.size());
      k = kv[0];
    }
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), in.shape());
    int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
    int64_t batches = rows * cols == 0 ? 0 : in.numel() / (rows * cols);
    // Keep column c of row r when c - r >= k (upper) or c - r <= k (lower).
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
    dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      const T* src = in.data<T>();
      T* dst = out.data<T>();
      parallel_for(batches * rows, 256, ctx.num_threads(), [&](int64_t b, int64_t e) {
        for (int64_t row = b; row < e; ++row) {
          int64_t r = row % rows;
          const T* s = src + row * cols;
          T* d = dst + row * cols;
          int64_t split = std::clamp<int64_t>(upper_ ? r + k : r + k + 1, 0, cols);
          // Columns [0, split) are zero for upper, kept for lower.
          if (upper_) {
            std::fill(d, d + split, T{});
            copy_elements(s + split, d + split, cols - split);
          } else {
            copy_elements(s, d, split);
            std::fill(d + split, d + cols, T{});
          }
        }
      });
    });
  }

 private:
  bool upper_;
};

}  // namespace

void register_shape_kernels(runtime::KernelRegistry& r) {
  std::vector<DType> pod = dtypes_of(AllPodTypes{});
  r.add<ConstantKernel>(ops::OpKind::Constant, movable_dtypes(), -1);
  r.add<ConstantOfShapeKernel>(ops::OpKind::ConstantOfShape, pod, -1);
  r.add<IdentityKernel>(ops::OpKind::Identity, {});
  r.add<ShapeKernel>(ops::OpKind::Shape, movable_dtypes());
  r.add<SizeKernel>(ops::OpKind::Size, movable_dtypes());
  r.add<ReshapeKernel>(ops::OpKind::Reshape, movable_dtypes());
  r.add<FlattenKernel>(ops::OpKind::Flatten, movable_dtypes());
  r.add<SqueezeKernel>(ops::OpKind::Squeeze, movable_dtypes());
  r.add<UnsqueezeKernel>(ops::OpKind::Unsqueeze, movable_dtypes());
  r.add<RangeKernel>(ops::OpKind::Range,
                     dtypes_of(TypeList<float, double, int16_t, int32_t, int64_t>{}));
  r.add<EyeLikeKernel>(ops::OpKind::EyeLike, pod);
  r.add<TriluKernel>(ops::OpKind::Trilu, movable_dtypes());
  register_shape_layout_kernels(r);
  register_shape_pad_kernels(r);
}

}  // namespace switchyard::cpu
