// CUDA kernels of the shape and data-movement family: views that alias their input (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity, inference Dropout), Shape, Size, Transpose, Concat,
// Split, Slice, Pad, Tile, ConstantOfShape, Range, Trilu, DepthToSpace, SpaceToDepth, EyeLike,
// Gather, GatherElements, GatherND, ScatterElements, ScatterND, OneHot and Resize. The host
// side mirrors the CPU kernels (src/backends/cpu/kernels/shape*.cc, gather_scatter.cc,
// image_resize.cc, normalization.cc's Dropout): same attributes, shape rules and messages.
// Shape-like inputs are host inputs; index tensors stay on the device, where an index out of
// range is never followed (gathers yield zero bytes, scatters skip it) instead of failing as
// on the CPU, which would need a sync to learn. Device code: data.cu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/data_impl.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using backends::KernelContext;
using backends::KernelDef;
using backends::KernelInit;
using backends::Support;
using ir::DType;

// ---- dtypes and checks -------------------------------------------------------------------

// Every dtype a plain copy serves: numeric and bool.
std::vector<DType> plain_dtypes() {
  std::vector<DType> out;
  for (DType d : ops::all_dtypes())
    if (d != DType::String) out.push_back(d);
  return out;
}

const std::vector<DType> kFloatDtypes = {DType::Float32, DType::Float16, DType::BFloat16,
                                         DType::Float64};

bool is_index_dtype(DType d) { return d == DType::Int32 || d == DType::Int64; }

// Refuses a node whose input `i` has a known rank above what the kernels' by-value parameter
// structs hold.
Support rank_fits(const ir::Node& node, size_t i) {
  const ir::Value* v = node.input(i);
  if (v && v->type().has_rank() && v->type().rank() > data::kMaxRank)
    return Support::no(fmt::format("the CUDA {} kernel handles rank up to {}, input {} has rank {}",
                                   node.op_type(), data::kMaxRank, i, v->type().rank()));
  return Support::yes();
}

// Refuses indices (input i) of a dtype other than int32 / int64 when the type says so.
Support indices_fit(const ir::Node& node, size_t i) {
  const ir::Value* v = node.input(i);
  if (v && v->type().is_tensor() && v->type().dtype != DType::Undefined &&
      !is_index_dtype(v->type().dtype))
    return Support::no(fmt::format("the CUDA {} kernel takes int32 or int64 indices, got {}",
                                   node.op_type(), ir::dtype_name(v->type().dtype)));
  return Support::yes();
}

Support both(const Support& a, const Support& b) { return a.ok ? b : a; }

int elem_size(DType d) { return static_cast<int>(ir::dtype_size(d)); }

// ---- host values -------------------------------------------------------------------------

// Input i's integer values (a host input); fails naming the node when not integers.
std::vector<int64_t> int_values(const KernelContext& ctx, size_t i, const char* what) {
  DType d = ctx.input(i).dtype();
  if (!ir::dtype_is_integer(d)) ctx.fail("{} must hold integers, got {}", what, ir::dtype_name(d));
  return read_ints(ctx, i);
}

template <typename T>
uint64_t to_bits(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

// The bits of v in `dtype`, converted as the CPU's Resize does (integers and bool: round to
// nearest even and saturate, NaN → 0; half types through float).
uint64_t bits_from_double(DType dtype, double v) {
  auto integral = [v](auto tag) -> uint64_t {
    using T = decltype(tag);
    if (std::isnan(v)) return to_bits(T(0));
    double r = std::nearbyint(v);
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return to_bits(std::numeric_limits<T>::lowest());
    if (r >= static_cast<double>(std::numeric_limits<T>::max()))
      return to_bits(std::numeric_limits<T>::max());
    return to_bits(static_cast<T>(r));
  };
  switch (dtype) {
    case DType::Float32:
      return to_bits(static_cast<float>(v));
    case DType::Float64:
      return to_bits(v);
    case DType::Float16:
      return to_bits(ir::Float16(static_cast<float>(v)));
    case DType::BFloat16:
      return to_bits(ir::BFloat16(static_cast<float>(v)));
    case DType::Int8:
      return integral(int8_t{});
    case DType::Int16:
      return integral(int16_t{});
    case DType::Int32:
      return integral(int32_t{});
    case DType::Int64:
      return integral(int64_t{});
    case DType::UInt8:
      return integral(uint8_t{});
    case DType::UInt16:
      return integral(uint16_t{});
    case DType::UInt32:
      return integral(uint32_t{});
    case DType::UInt64:
      return integral(uint64_t{});
    case DType::Bool:
      return integral(bool{});
    default:
      SY_THROW(Unsupported, "dtype {} has no CUDA data kernel", ir::dtype_name(dtype));
  }
}

// Element 0 of input i (a host input) as the bits of a `target` value: integers keep their
// bits (truncated to the target's size), floats and bool convert through double.
uint64_t scalar_bits(const KernelContext& ctx, size_t i, DType target) {
  DType d = ctx.input(i).dtype();
  if (ir::dtype_is_integer(d) && ir::dtype_is_integer(target))
    return static_cast<uint64_t>(read_ints(ctx, i).at(0));
  return bits_from_double(target, read_doubles(ctx, i).at(0));
}

// ---- shapes ------------------------------------------------------------------------------

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

template <typename T>
void copy_dims(T* dst, const std::vector<int64_t>& src) {
  for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
}

// Fails naming the node when a rank exceeds what the parameter structs hold.
void require_rank(const KernelContext& ctx, size_t rank, const char* what) {
  if (rank > static_cast<size_t>(data::kMaxRank))
    ctx.fail("{} has rank {}; the CUDA kernel handles up to {}", what, rank, data::kMaxRank);
}

// Output `out_shape` reading source strides `strides`, with size-1 dims dropped and neighbours
// the source walks contiguously merged (as the CPU's strided_copy does).
data::StridedView merged_view(const KernelContext& ctx, const std::vector<int64_t>& out_shape,
                              const std::vector<int64_t>& strides) {
  std::vector<int64_t> shape, st;
  for (size_t i = 0; i < out_shape.size(); ++i) {
    if (out_shape[i] == 1) continue;
    if (!shape.empty() && st.back() == strides[i] * out_shape[i]) {
      shape.back() *= out_shape[i];
      st.back() = strides[i];
      continue;
    }
    shape.push_back(out_shape[i]);
    st.push_back(strides[i]);
  }
  require_rank(ctx, shape.size(), "the copy (after merging dims)");
  data::StridedView view;
  view.rank = static_cast<int>(shape.size());
  copy_dims(view.dims, shape);
  copy_dims(view.strides, st);
  return view;
}

// Output 0 = `in` read at in[offset + sum(i_k * strides_k)] over `out_shape`.
void copy_strided_to_output(KernelContext& ctx, const ir::Tensor& in,
                            std::vector<int64_t> out_shape, const std::vector<int64_t>& strides,
                            int64_t offset = 0) {
  ir::Tensor& out = ctx.allocate_output(0, in.dtype(), out_shape);
  if (out.numel() == 0) return;
  const int es = elem_size(in.dtype());
  const char* src = static_cast<const char*>(in.raw()) + offset * es;
  SY_CUDA_CHECK(data::launch_strided_copy(src, out.raw(), es, merged_view(ctx, out_shape, strides),
                                          stream_of(ctx)));
}

// Sorted distinct axes normalized to `rank`.
std::vector<int64_t> sorted_axes(const KernelContext& ctx, std::vector<int64_t> axes,
                                 int64_t rank) {
  for (int64_t& a : axes) a = ops::normalize_axis(ctx.node(), a, rank);
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    ctx.fail("axes contain a duplicate");
  return axes;
}

// ---- views -------------------------------------------------------------------------------

class IdentityKernel : public backends::Kernel {
 public:
  explicit IdentityKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override { ctx.set_output(0, ctx.input_datum(0)); }
};

class ReshapeKernel : public backends::Kernel {
 public:
  explicit ReshapeKernel(const KernelInit& init)
      : allowzero_(init.node.attr_int("allowzero", 0) != 0) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::vector<int64_t> shape = int_values(ctx, 1, "shape");
    int infer_at = -1;
    bool has_zero = false;
    int64_t known = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      int64_t& v = shape[i];
      if (v == -1) {
        if (infer_at >= 0) ctx.fail("shape has more than one -1");
        infer_at = static_cast<int>(i);
        continue;
      }
      if (v == 0 && !allowzero_) {
        if (i >= in.shape().size())
          ctx.fail("shape copies dim {} (0) but the input has rank {}", i, in.rank());
        v = in.shape()[i];
      } else if (v < 0) {
        ctx.fail("shape has an invalid value {}", v);
      }
      has_zero = has_zero || v == 0;
      if (v != 0 && known > std::numeric_limits<int64_t>::max() / v)
        ctx.fail("shape [{}] has too many elements", fmt::join(shape, ","));
      known *= v;
    }
    if (infer_at >= 0) {
      if (allowzero_ && has_zero) ctx.fail("with allowzero=1, shape may not hold both 0 and -1");
      if (known == 0 || in.numel() % known != 0)
        ctx.fail("cannot reshape {} into [{}]", ir::shape_to_string(in.shape()),
                 fmt::join(shape, ","));
      shape[static_cast<size_t>(infer_at)] = in.numel() / known;
    } else if (known != in.numel()) {
      ctx.fail("cannot reshape {} ({} elements) into [{}]", ir::shape_to_string(in.shape()),
               in.numel(), fmt::join(shape, ","));
    }
    ctx.set_output(0, in.reshaped(std::move(shape)));
  }

 private:
  bool allowzero_;
};

class FlattenKernel : public backends::Kernel {
 public:
  explicit FlattenKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 1)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    if (axis_ < -rank || axis_ > rank) ctx.fail("axis {} is out of range for rank {}", axis_, rank);
    size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    ctx.set_output(0, in.reshaped({product(in.shape(), 0, axis),
                                   product(in.shape(), axis, in.shape().size())}));
  }

 private:
  int64_t axis_;
};

class SqueezeKernel : public backends::Kernel {
 public:
  explicit SqueezeKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::vector<int64_t> out;
    if (!ctx.has_input(1)) {
      for (int64_t d : in.shape())
        if (d != 1) out.push_back(d);
    } else {
      std::vector<int64_t> axes = sorted_axes(ctx, int_values(ctx, 1, "axes"), in.rank());
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

class UnsqueezeKernel : public backends::Kernel {
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

// Training-mode dropout with a ratio above 0 needs random numbers, which this backend does not
// generate. Refused here when the inputs say so at compile time; run() checks the rest.
Support check_dropout(const ir::Node& node) {
  const ir::Value* training = node.input(2);
  if (!training || !training->is_constant()) return Support::yes();
  const ir::Tensor& t = training->constant();
  if (t.numel() != 1 || t.scalar_as_int(0) == 0) return Support::yes();
  const ir::Value* ratio = node.input(1);
  if (ratio && ratio->is_constant() && ratio->constant().numel() == 1 &&
      ratio->constant().scalar_as_double(0) == 0.0)
    return Support::yes();
  return Support::no(
      "Dropout in training mode with a ratio above 0 needs random numbers, which the CUDA "
      "backend does not generate");
}

class DropoutKernel : public backends::Kernel {
 public:
  explicit DropoutKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    if (ctx.has_input(2)) {
      const ir::Tensor& t = ctx.input(2);
      if (t.dtype() != DType::Bool || t.numel() != 1)
        ctx.fail("training_mode must be a bool scalar");
      double ratio = 0.5;
      if (ctx.has_input(1)) {
        const ir::Tensor& r = ctx.input(1);
        if (!ir::dtype_is_float(r.dtype()) || r.numel() != 1)
          ctx.fail("ratio must be a float scalar");
        ratio = read_doubles(ctx, 1)[0];
        if (!(ratio >= 0.0 && ratio < 1.0)) ctx.fail("ratio must be in [0, 1), got {}", ratio);
      }
      if (read_doubles(ctx, 2)[0] != 0.0 && ratio != 0.0)
        ctx.fail(
            "training mode with ratio {} needs random numbers, which the CUDA backend does "
            "not generate",
            ratio);
    }
    ctx.set_output(0, ir::Datum(x));
    if (ctx.num_outputs() > 1) {
      ir::Tensor& mask = ctx.allocate_output(1, DType::Bool, x.shape());
      SY_CUDA_CHECK(data::launch_fill(mask.raw(), mask.numel(), 1, 1, stream_of(ctx)));
    }
  }
};

// ---- shape queries and generators ----------------------------------------------------------

// Writes host-computed int64 values into device memory by kernels (values travel by value, so
// nothing on the host has to outlive the launch).
void write_int64s(KernelContext& ctx, int64_t* dst, const std::vector<int64_t>& values) {
  for (size_t first = 0; first < values.size(); first += data::Int64Values::kMaxValues) {
    data::Int64Values chunk;
    chunk.count =
        static_cast<int>(std::min<size_t>(values.size() - first, data::Int64Values::kMaxValues));
    for (int k = 0; k < chunk.count; ++k) chunk.values[k] = values[first + static_cast<size_t>(k)];
    SY_CUDA_CHECK(data::launch_write_int64s(dst + first, chunk, stream_of(ctx)));
  }
}

class ShapeKernel : public backends::Kernel {
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
    write_int64s(ctx, out.data<int64_t>(), {shape.begin() + start, shape.begin() + start + len});
  }

 private:
  int64_t start_, end_;
};

class SizeKernel : public backends::Kernel {
 public:
  explicit SizeKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    int64_t n = ctx.input(0).numel();
    write_int64s(ctx, ctx.allocate_output(0, DType::Int64, {}).data<int64_t>(), {n});
  }
};

// The float dtype a node's output 0 was retyped to under --precision, when `dtype` is a float
// type and the output is another one; `dtype` otherwise.
DType retyped_float(const ir::Node& node, DType dtype) {
  const ir::Value* out = node.output(0);
  if (out && out->type().is_tensor() && ir::dtype_is_float(dtype) &&
      ir::dtype_is_float(out->type().dtype))
    return out->type().dtype;
  return dtype;
}

class ConstantOfShapeKernel : public backends::Kernel {
 public:
  explicit ConstantOfShapeKernel(const KernelInit& init) {
    ir::Tensor value;
    if (init.node.has_attribute("value")) {
      value = init.node.attr_tensor("value");
    } else {
      value = ir::Tensor(DType::Float32, {1});
      *value.data<float>() = 0.0f;
    }
    SY_CHECK(value.numel() == 1, InvalidModel, "{}: 'value' must hold one element",
             init.node.describe());
    SY_CHECK(value.dtype() != DType::String, Unsupported, "{}: a string 'value' has no CUDA kernel",
             init.node.describe());
    dtype_ = retyped_float(init.node, value.dtype());
    if (dtype_ == value.dtype())
      std::memcpy(&bits_, value.raw(), ir::dtype_size(dtype_));
    else
      bits_ = bits_from_double(dtype_, value.scalar_as_double(0));
  }
  void run(KernelContext& ctx) const override {
    std::vector<int64_t> shape = int_values(ctx, 0, "shape");
    for (int64_t d : shape)
      if (d < 0) ctx.fail("shape has a negative dimension {}", d);
    ir::Tensor& out = ctx.allocate_output(0, dtype_, shape);
    SY_CUDA_CHECK(
        data::launch_fill(out.raw(), out.numel(), elem_size(dtype_), bits_, stream_of(ctx)));
  }

 private:
  DType dtype_;
  uint64_t bits_ = 0;
};

class RangeKernel : public backends::Kernel {
 public:
  explicit RangeKernel(const KernelInit& init) : node_out_(DType::Undefined) {
    const ir::Value* out = init.node.output(0);
    if (out && out->type().is_tensor()) node_out_ = out->type().dtype;
  }
  void run(KernelContext& ctx) const override {
    for (size_t i = 0; i < 3; ++i)
      if (ctx.input(i).numel() != 1) ctx.fail("input {} must be a scalar", i);
    DType dtype = ctx.input(0).dtype();
    for (size_t i = 1; i < 3; ++i)
      if (ctx.input(i).dtype() != dtype) ctx.fail("inputs must share one dtype");
    // Under --precision the float32 output is stored narrower; the values are computed alike.
    DType out_dtype =
        dtype == DType::Float32 && (node_out_ == DType::Float16 || node_out_ == DType::BFloat16)
            ? node_out_
            : dtype;
    int64_t n = 0;
    double start_f = 0, delta_f = 0;
    int64_t start_i = 0, delta_i = 0;
    if (ir::dtype_is_integer(dtype)) {
      start_i = read_ints(ctx, 0)[0];
      int64_t limit = read_ints(ctx, 1)[0];
      delta_i = read_ints(ctx, 2)[0];
      if (delta_i == 0) ctx.fail("delta must not be zero");
      __int128 span = static_cast<__int128>(limit) - static_cast<__int128>(start_i);
      __int128 d = static_cast<__int128>(delta_i);
      if ((span > 0 && d > 0) || (span < 0 && d < 0))
        n = static_cast<int64_t>((span + d + (d > 0 ? -1 : 1)) / d);
    } else {
      start_f = read_doubles(ctx, 0)[0];
      double limit = read_doubles(ctx, 1)[0];
      delta_f = read_doubles(ctx, 2)[0];
      if (delta_f == 0) ctx.fail("delta must not be zero");
      double count = std::ceil((limit - start_f) / delta_f);
      if (!(count < 9.0e18)) ctx.fail("range of {} elements is too large", count);
      n = std::max<int64_t>(static_cast<int64_t>(count), 0);
    }
    ir::Tensor& out = ctx.allocate_output(0, out_dtype, {n});
    SY_CUDA_CHECK(data::launch_range(dtype, out_dtype, out.raw(), n, start_f, delta_f, start_i,
                                     delta_i, stream_of(ctx)));
  }

 private:
  DType node_out_;
};

class EyeLikeKernel : public backends::Kernel {
 public:
  explicit EyeLikeKernel(const KernelInit& init)
      : has_dtype_(init.node.has_attribute("dtype")),
        dtype_(has_dtype_ ? static_cast<DType>(init.node.attr_int("dtype")) : DType::Undefined),
        k_(init.node.attr_int("k", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() != 2) ctx.fail("input must be 2-D, got {}", ir::shape_to_string(in.shape()));
    DType dtype = has_dtype_ ? dtype_ : in.dtype();
    if (dtype == DType::String || ir::dtype_size(dtype) == 0)
      ctx.fail("dtype {} has no CUDA EyeLike kernel", ir::dtype_name(dtype));
    ir::Tensor& out = ctx.allocate_output(0, dtype, in.shape());
    int64_t rows = in.dim(0), cols = in.dim(1);
    // Clamped so that c - r == k keeps its truth for every cell and r + k cannot overflow.
    int64_t k = std::clamp<int64_t>(k_, -rows - 1, cols + 1);
    SY_CUDA_CHECK(data::launch_eye_like(out.raw(), elem_size(dtype), rows, cols, k,
                                        bits_from_double(dtype, 1.0), stream_of(ctx)));
  }

 private:
  bool has_dtype_;
  DType dtype_;
  int64_t k_;
};

class TriluKernel : public backends::Kernel {
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
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
    SY_CUDA_CHECK(data::launch_trilu(in.raw(), out.raw(), elem_size(in.dtype()), batches, rows,
                                     cols, k, upper_, stream_of(ctx)));
  }

 private:
  bool upper_;
};

// ---- layout ------------------------------------------------------------------------------

class TransposeKernel : public backends::Kernel {
 public:
  explicit TransposeKernel(const KernelInit& init) : has_perm_(init.node.has_attribute("perm")) {
    if (has_perm_) perm_ = init.node.attr_ints("perm");
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    std::vector<int64_t> perm = perm_;
    if (!has_perm_)
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int64_t>(perm.size()) != rank)
      ctx.fail("perm has {} entries for an input of rank {}", perm.size(), rank);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[static_cast<size_t>(p)])
        ctx.fail("perm [{}] is not a permutation of the input's {} dims", fmt::join(perm, ","),
                 rank);
      seen[static_cast<size_t>(p)] = true;
    }
    std::vector<int64_t> in_strides = strides_of(in.shape());
    std::vector<int64_t> shape, strides;
    for (int64_t p : perm) {
      shape.push_back(in.dim(p));
      strides.push_back(in_strides[static_cast<size_t>(p)]);
    }
    copy_strided_to_output(ctx, in, std::move(shape), strides);
  }

 private:
  bool has_perm_;
  std::vector<int64_t> perm_;
};

class ConcatKernel : public backends::Kernel {
 public:
  explicit ConcatKernel(const KernelInit& init) : axis_(init.node.attr_int("axis")) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& first = ctx.input(0);
    int64_t rank = first.rank();
    if (rank == 0) ctx.fail("cannot concatenate scalars");
    size_t axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, rank));
    std::vector<int64_t> out_shape = first.shape();
    out_shape[axis] = 0;
    std::vector<const ir::Tensor*> ins;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ir::Tensor& t = ctx.input(i);
      if (t.dtype() != first.dtype()) ctx.fail("input {} has another dtype than input 0", i);
      if (t.rank() != rank)
        ctx.fail("input {} has shape {}, input 0 has {}", i, ir::shape_to_string(t.shape()),
                 ir::shape_to_string(first.shape()));
      for (size_t k = 0; k < static_cast<size_t>(rank); ++k)
        if (k != axis && t.shape()[k] != first.shape()[k])
          ctx.fail("input {} has shape {}, input 0 has {}", i, ir::shape_to_string(t.shape()),
                   ir::shape_to_string(first.shape()));
      out_shape[axis] += t.shape()[axis];
      ins.push_back(&t);
    }
    ir::Tensor& out = ctx.allocate_output(0, first.dtype(), out_shape);
    if (out.numel() == 0) return;
    const int64_t outer = product(out_shape, 0, axis);
    const int64_t inner = product(out_shape, axis + 1, out_shape.size());
    int64_t column = 0;
    for (size_t begin = 0; begin < ins.size(); begin += data::ConcatChunk::kMaxInputs) {
      data::ConcatChunk chunk;
      chunk.outer = outer;
      chunk.dst_row = out_shape[axis] * inner;
      chunk.dst_offset = column;
      size_t end = std::min(ins.size(), begin + data::ConcatChunk::kMaxInputs);
      for (size_t j = begin; j < end; ++j) {
        int k = chunk.count++;
        chunk.src[k] = ins[j]->raw();
        chunk.block[k] = ins[j]->shape()[axis] * inner;
        chunk.begin[k] = chunk.span;
        chunk.span += chunk.block[k];
      }
      SY_CUDA_CHECK(
          data::launch_concat(out.raw(), elem_size(first.dtype()), chunk, stream_of(ctx)));
      column += chunk.span;
    }
  }

 private:
  int64_t axis_;
};

class SplitKernel : public backends::Kernel {
 public:
  explicit SplitKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)), uneven_(init.node.has_attribute("num_outputs")) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() == 0) ctx.fail("cannot split a scalar");
    size_t axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, in.rank()));
    int64_t dim = in.shape()[axis];
    size_t n = ctx.num_outputs();
    std::vector<int64_t> sizes;
    if (ctx.has_input(1)) {
      sizes = int_values(ctx, 1, "split");
      if (sizes.size() != n) ctx.fail("'split' has {} values for {} outputs", sizes.size(), n);
      int64_t sum = 0;
      for (int64_t s : sizes) {
        if (s < 0) ctx.fail("'split' has a negative size {}", s);
        sum += s;
      }
      if (sum != dim) ctx.fail("'split' sums to {} but axis {} has size {}", sum, axis, dim);
    } else {
      int64_t k = static_cast<int64_t>(n);
      int64_t chunk = dim / k;
      if (dim % k != 0) {
        if (!uneven_)
          ctx.fail("axis {} of size {} does not split into {} equal parts", axis, dim, k);
        ++chunk;
        if (chunk * (k - 1) > dim)
          ctx.fail("axis {} of size {} cannot split into {} parts", axis, dim, k);
      }
      for (int64_t i = 0; i < k; ++i) sizes.push_back(i + 1 < k ? chunk : dim - chunk * (k - 1));
    }
    const int64_t outer = product(in.shape(), 0, axis);
    const int64_t inner = product(in.shape(), axis + 1, in.shape().size());
    const int es = elem_size(in.dtype());
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> shape = in.shape();
      shape[axis] = sizes[i];
      ir::Tensor& out = ctx.allocate_output(i, in.dtype(), shape);
      if (out.numel() > 0) {
        // Output i is `outer` rows of sizes[i] * inner elements, one per input row.
        const char* src = static_cast<const char*>(in.raw()) + offset * inner * es;
        SY_CUDA_CHECK(data::launch_strided_copy(
            src, out.raw(), es, merged_view(ctx, {outer, sizes[i] * inner}, {dim * inner, 1}),
            stream_of(ctx)));
      }
      offset += sizes[i];
    }
  }

 private:
  int64_t axis_;
  bool uneven_;
};

class SliceKernel : public backends::Kernel {
 public:
  explicit SliceKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    std::vector<int64_t> starts = int_values(ctx, 1, "starts");
    std::vector<int64_t> ends = int_values(ctx, 2, "ends");
    if (starts.size() != ends.size())
      ctx.fail("starts has {} values and ends has {}", starts.size(), ends.size());
    std::vector<int64_t> axes;
    if (ctx.has_input(3)) {
      axes = int_values(ctx, 3, "axes");
      if (axes.size() != starts.size())
        ctx.fail("axes has {} values for {} starts", axes.size(), starts.size());
    } else {
      if (static_cast<int64_t>(starts.size()) > rank)
        ctx.fail("starts has {} values for an input of rank {}", starts.size(), rank);
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    std::vector<int64_t> steps(starts.size(), 1);
    if (ctx.has_input(4)) {
      steps = int_values(ctx, 4, "steps");
      if (steps.size() != starts.size())
        ctx.fail("steps has {} values for {} starts", steps.size(), starts.size());
    }
    std::vector<int64_t> shape = in.shape();
    std::vector<int64_t> in_strides = strides_of(in.shape());
    std::vector<int64_t> strides = in_strides;
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    int64_t offset = 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axes[i], rank));
      if (seen[a]) ctx.fail("axis {} appears more than once", a);
      seen[a] = true;
      int64_t d = in.shape()[a], step = steps[i];
      if (step == 0) ctx.fail("steps must not be zero");
      int64_t start = starts[i], end = ends[i];
      if (start < 0) start += d;
      if (end < 0) end += d;
      int64_t len;
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, d);
        end = std::clamp<int64_t>(end, 0, d);
        len = end > start ? 1 + (end - start - 1) / step : 0;
      } else {
        start = std::clamp<int64_t>(start, 0, std::max<int64_t>(d - 1, 0));
        end = std::clamp<int64_t>(end, -1, d - 1);
        int64_t neg = step == std::numeric_limits<int64_t>::min()
                          ? std::numeric_limits<int64_t>::max()
                          : -step;
        len = d > 0 && start > end ? 1 + (start - end - 1) / neg : 0;
      }
      shape[a] = len;
      if (len > 0) offset += start * in_strides[a];
      // A single element needs no stride; this also avoids overflow for huge steps.
      strides[a] = len > 1 ? in_strides[a] * step : in_strides[a];
    }
    copy_strided_to_output(ctx, in, std::move(shape), strides, offset);
  }
};

// DepthToSpace and SpaceToDepth: a 6-D view of the input, transposed.
class BlockRearrangeKernel : public backends::Kernel {
 public:
  BlockRearrangeKernel(const KernelInit& init, bool to_space)
      : to_space_(to_space),
        crd_(init.node.attr_string("mode", "DCR") == "CRD"),
        block_(init.node.attr_int("blocksize")) {
    SY_CHECK(block_ > 0, InvalidModel, "{}: blocksize must be positive, got {}",
             init.node.describe(), block_);
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() != 4) ctx.fail("input must be 4-D, got {}", ir::shape_to_string(in.shape()));
    int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3), b = block_;
    std::vector<int64_t> shape, strides;
    if (to_space_) {
      if (c % (b * b) != 0) ctx.fail("channels {} are not divisible by blocksize^2 = {}", c, b * b);
      int64_t cc = c / (b * b);
      std::vector<int64_t> view =
          crd_ ? std::vector<int64_t>{n, cc, b, b, h, w} : std::vector<int64_t>{n, b, b, cc, h, w};
      std::vector<int64_t> s = strides_of(view);
      shape = {n, cc, h, b, w, b};
      strides = crd_ ? std::vector<int64_t>{s[0], s[1], s[4], s[2], s[5], s[3]}
                     : std::vector<int64_t>{s[0], s[3], s[4], s[1], s[5], s[2]};
    } else {
      if (h % b != 0 || w % b != 0)
        ctx.fail("height {} and width {} must be divisible by blocksize {}", h, w, b);
      std::vector<int64_t> s = strides_of({n, c, h / b, b, w / b, b});
      shape = {n, b, b, c, h / b, w / b};
      strides = {s[0], s[3], s[5], s[1], s[2], s[4]};
    }
    std::vector<int64_t> out_shape = to_space_ ? std::vector<int64_t>{n, c / (b * b), h * b, w * b}
                                               : std::vector<int64_t>{n, c * b * b, h / b, w / b};
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), out_shape);
    if (out.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_strided_copy(in.raw(), out.raw(), elem_size(in.dtype()),
                                            merged_view(ctx, shape, strides), stream_of(ctx)));
  }

 private:
  bool to_space_, crd_;
  int64_t block_;
};

data::PadMode parse_pad_mode(const ir::Node& node) {
  std::string mode = node.attr_string("mode", "constant");
  if (mode == "constant") return data::PadMode::Constant;
  if (mode == "reflect") return data::PadMode::Reflect;
  if (mode == "edge") return data::PadMode::Edge;
  if (mode == "wrap") return data::PadMode::Wrap;
  SY_THROW(InvalidModel, "{}: mode '{}' is not one of constant, reflect, edge, wrap",
           node.describe(), mode);
}

class PadKernel : public backends::Kernel {
 public:
  explicit PadKernel(const KernelInit& init) : mode_(parse_pad_mode(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    std::vector<int64_t> pads = int_values(ctx, 1, "pads");
    std::vector<int64_t> axes;
    if (ctx.has_input(3)) {
      axes = int_values(ctx, 3, "axes");
    } else {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    }
    if (pads.size() != 2 * axes.size())
      ctx.fail("pads has {} values, expected {} (2 per axis)", pads.size(), 2 * axes.size());
    std::vector<int64_t> pre(static_cast<size_t>(rank), 0), post(static_cast<size_t>(rank), 0);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axes[i], rank));
      if (seen[a]) ctx.fail("axis {} appears more than once", a);
      seen[a] = true;
      pre[a] = pads[i];
      post[a] = pads[i + axes.size()];
    }
    std::vector<int64_t> shape = in.shape();
    constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 4;
    for (size_t a = 0; a < shape.size(); ++a) {
      if (std::abs(pre[a]) > kLimit || std::abs(post[a]) > kLimit)
        ctx.fail("pads {} / {} are too large", pre[a], post[a]);
      int64_t d = shape[a] + pre[a] + post[a];
      if (d < 0)
        ctx.fail("pads {} and {} shrink axis {} of size {} below zero", pre[a], post[a], a,
                 shape[a]);
      if (d > 0 && shape[a] == 0 && mode_ != data::PadMode::Constant)
        ctx.fail("cannot pad the empty axis {} in a mode other than constant", a);
      shape[a] = d;
    }
    uint64_t fill = 0;
    if (mode_ == data::PadMode::Constant && ctx.has_input(2)) {
      const ir::Tensor& value = ctx.input(2);
      // Under --precision the host-read value stays float32 while the data is narrower.
      bool float_pair = ir::dtype_is_float(value.dtype()) && ir::dtype_is_float(in.dtype());
      if (value.dtype() != in.dtype() && !float_pair)
        ctx.fail("constant_value must have the data's dtype");
      if (value.numel() > 1) ctx.fail("constant_value must be a scalar");
      if (value.numel() == 1) fill = scalar_bits(ctx, 2, in.dtype());
    }
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), shape);
    if (out.numel() == 0) return;
    require_rank(ctx, shape.size(), "the input");
    data::PadParams p;
    p.rank = static_cast<int>(rank);
    p.mode = mode_;
    copy_dims(p.out_dims, shape);
    copy_dims(p.in_dims, in.shape());
    copy_dims(p.in_strides, strides_of(in.shape()));
    copy_dims(p.pre, pre);
    SY_CUDA_CHECK(
        data::launch_pad(in.raw(), out.raw(), elem_size(in.dtype()), p, fill, stream_of(ctx)));
  }

 private:
  data::PadMode mode_;
};

class TileKernel : public backends::Kernel {
 public:
  explicit TileKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::vector<int64_t> repeats = int_values(ctx, 1, "repeats");
    if (static_cast<int64_t>(repeats.size()) != in.rank())
      ctx.fail("repeats has {} values for an input of rank {}", repeats.size(), in.rank());
    std::vector<int64_t> shape = in.shape();
    for (size_t a = 0; a < shape.size(); ++a) {
      if (repeats[a] < 0) ctx.fail("repeats has a negative value {}", repeats[a]);
      int64_t d = shape[a];
      if (d != 0 && repeats[a] > std::numeric_limits<int64_t>::max() / d)
        ctx.fail("tiled dimension {} x {} is too large", d, repeats[a]);
      shape[a] = d * repeats[a];
    }
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), shape);
    if (out.numel() == 0) return;
    require_rank(ctx, shape.size(), "the input");
    // Tiling is wrap-around padding with nothing in front: output j reads input j mod d.
    data::PadParams p;
    p.rank = static_cast<int>(shape.size());
    p.mode = data::PadMode::Wrap;
    copy_dims(p.out_dims, shape);
    copy_dims(p.in_dims, in.shape());
    copy_dims(p.in_strides, strides_of(in.shape()));
    SY_CUDA_CHECK(
        data::launch_pad(in.raw(), out.raw(), elem_size(in.dtype()), p, 0, stream_of(ctx)));
  }
};

// ---- gather and scatter ------------------------------------------------------------------

// The dtype of index input i, checked at run time.
DType index_dtype(const KernelContext& ctx, size_t i) {
  DType d = ctx.input(i).dtype();
  if (!is_index_dtype(d)) ctx.fail("indices must be int32 or int64, got {}", ir::dtype_name(d));
  return d;
}

class GatherKernel : public backends::Kernel {
 public:
  explicit GatherKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    if (data.rank() == 0) ctx.fail("data must have rank >= 1");
    size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, data.rank()));
    const ir::Tensor& indices = ctx.input(1);
    DType idt = index_dtype(ctx, 1);
    std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + a);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + a + 1, data.shape().end());
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), shape);
    if (out.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_gather(
        data.raw(), indices.raw(), idt, out.raw(), elem_size(data.dtype()),
        product(data.shape(), 0, a), data.shape()[a], indices.numel(),
        product(data.shape(), a + 1, data.shape().size()), run_context(ctx).device_error,
        run_context(ctx).error_code, stream_of(ctx)));
  }

 private:
  int64_t axis_;
};

// Checks that `indices` (same rank as data) fits data on every axis but `axis`.
void check_element_indices_shape(const KernelContext& ctx, const ir::Tensor& data,
                                 const std::vector<int64_t>& shape, size_t axis) {
  if (static_cast<int64_t>(shape.size()) != data.rank())
    ctx.fail("indices have rank {}, data has rank {}", shape.size(), data.rank());
  for (size_t k = 0; k < shape.size(); ++k)
    if (k != axis && shape[k] > data.shape()[k])
      ctx.fail("indices have shape {}, larger than data {} on axis {}", ir::shape_to_string(shape),
               ir::shape_to_string(data.shape()), k);
}

data::ElementsParams elements_params(const KernelContext& ctx, const ir::Tensor& data,
                                     const std::vector<int64_t>& idx_shape, size_t axis) {
  require_rank(ctx, idx_shape.size(), "data");
  data::ElementsParams p;
  p.error = run_context(ctx).device_error;
  p.error_code = run_context(ctx).error_code;
  p.rank = static_cast<int>(idx_shape.size());
  p.axis = static_cast<int>(axis);
  p.axis_dim = data.shape()[axis];
  copy_dims(p.idx_dims, idx_shape);
  copy_dims(p.data_strides, strides_of(data.shape()));
  return p;
}

class GatherElementsKernel : public backends::Kernel {
 public:
  explicit GatherElementsKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    if (data.rank() == 0) ctx.fail("data must have rank >= 1");
    size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, data.rank()));
    const ir::Tensor& indices = ctx.input(1);
    DType idt = index_dtype(ctx, 1);
    check_element_indices_shape(ctx, data, indices.shape(), a);
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), indices.shape());
    if (out.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_gather_elements(
        data.raw(), indices.raw(), idt, out.raw(), elem_size(data.dtype()),
        elements_params(ctx, data, indices.shape(), a), stream_of(ctx)));
  }

 private:
  int64_t axis_;
};

class GatherNDKernel : public backends::Kernel {
 public:
  explicit GatherNDKernel(const KernelInit& init)
      : batch_dims_(init.node.attr_int("batch_dims", 0)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    int64_t r = data.rank(), q = indices.rank(), b = batch_dims_;
    if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
    if (b < 0 || b >= std::min(r, q))
      ctx.fail("batch_dims {} must be less than both ranks ({}, {})", b, r, q);
    int64_t m = indices.shape().back();
    if (m < 1 || m > r - b)
      ctx.fail("indices' last dim {} must be in [1, {}] (data rank - batch_dims)", m, r - b);
    for (int64_t i = 0; i < b; ++i)
      if (data.dim(i) != indices.dim(i))
        ctx.fail("batch dim {} is {} in data and {} in indices", i, data.dim(i), indices.dim(i));
    DType idt = index_dtype(ctx, 1);
    std::vector<int64_t> shape(indices.shape().begin(), indices.shape().end() - 1);
    shape.insert(shape.end(), data.shape().begin() + b + m, data.shape().end());
    ir::Tensor& out = ctx.allocate_output(0, data.dtype(), shape);
    if (out.numel() == 0) return;
    require_rank(ctx, static_cast<size_t>(m), "the index tuple");
    size_t ub = static_cast<size_t>(b), um = static_cast<size_t>(m);
    const std::vector<int64_t>& ds = data.shape();
    int64_t batch = product(ds, 0, ub);
    std::vector<int64_t> strides = strides_of(ds);
    data::TupleParams p;
    p.error = run_context(ctx).device_error;
    p.error_code = run_context(ctx).error_code;
    p.m = static_cast<int>(m);
    for (size_t j = 0; j < um; ++j) {
      p.dims[j] = ds[ub + j];
      p.strides[j] = strides[ub + j];
    }
    p.tuples_per_batch = batch == 0 ? 0 : indices.numel() / m / batch;
    p.num_tuples = batch * p.tuples_per_batch;
    p.tuples_per_batch = std::max<int64_t>(p.tuples_per_batch, 1);
    p.batch_stride = product(ds, ub, ds.size());
    p.slice = product(ds, ub + um, ds.size());
    SY_CUDA_CHECK(data::launch_gather_nd(data.raw(), indices.raw(), idt, out.raw(),
                                         elem_size(data.dtype()), p, stream_of(ctx)));
  }

 private:
  int64_t batch_dims_;
};

data::Reduction parse_reduction(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "none");
  if (r == "none") return data::Reduction::None;
  if (r == "add") return data::Reduction::Add;
  if (r == "mul") return data::Reduction::Mul;
  if (r == "max") return data::Reduction::Max;
  if (r == "min") return data::Reduction::Min;
  SY_THROW(InvalidModel, "{}: reduction '{}' is not one of none, add, mul, max, min",
           node.describe(), r);
}

// Reductions need arithmetic: numeric dtypes only; plain scatter moves any dtype.
Support check_scatter(const ir::Node& node) {
  std::string r = node.attr_string("reduction", "none");
  const ir::Value* v = node.input(0);
  DType dt = v ? v->type().dtype : DType::Undefined;
  if (r != "none" && dt == DType::Bool)
    return Support::no(fmt::format("no {} kernel with reduction '{}' for {} on cuda",
                                   node.op_type(), r, ir::dtype_name(dt)));
  return both(rank_fits(node, 0), indices_fit(node, 1));
}

// Copies data into a fresh output 0 (the scatter target).
ir::Tensor& copy_data_to_output(KernelContext& ctx, const ir::Tensor& data) {
  ir::Tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
  if (out.nbytes() > 0)
    SY_CUDA_CHECK(cudaMemcpyAsync(out.raw(), data.raw(), out.nbytes(), cudaMemcpyDeviceToDevice,
                                  stream_of(ctx)));
  return out;
}

// Scratch of one int32 per destination, for resolving duplicate indices (reduction none).
std::shared_ptr<void> winners_scratch(KernelContext& ctx, data::Reduction r, int64_t slots,
                                      int64_t updates) {
  if (r != data::Reduction::None || slots == 0) return nullptr;
  if (updates > std::numeric_limits<int32_t>::max())
    ctx.fail("{} updates are more than the CUDA kernel orders (2^31 - 1)", updates);
  return ctx.scratch(static_cast<size_t>(slots) * sizeof(int32_t));
}

class ScatterElementsKernel : public backends::Kernel {
 public:
  explicit ScatterElementsKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)), reduction_(parse_reduction(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    const ir::Tensor& updates = ctx.input(2);
    if (data.rank() == 0) ctx.fail("data must have rank >= 1");
    size_t a = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, data.rank()));
    const std::vector<int64_t>& shape = indices.shape();
    if (updates.shape() != shape)
      ctx.fail("updates have shape {}, indices have {}", ir::shape_to_string(updates.shape()),
               ir::shape_to_string(shape));
    if (updates.dtype() != data.dtype()) ctx.fail("updates must have the data's dtype");
    check_element_indices_shape(ctx, data, shape, a);
    DType idt = index_dtype(ctx, 1);
    if (reduction_ != data::Reduction::None && data.dtype() == DType::Bool)
      ctx.fail("reduction needs a numeric dtype, got bool");
    ir::Tensor& out = copy_data_to_output(ctx, data);
    if (updates.numel() == 0 || out.numel() == 0) return;
    std::shared_ptr<void> winners = winners_scratch(ctx, reduction_, out.numel(), updates.numel());
    SY_CUDA_CHECK(data::launch_scatter_elements(
        out.raw(), out.numel(), indices.raw(), idt, updates.raw(), data.dtype(), reduction_,
        elements_params(ctx, data, shape, a), static_cast<int32_t*>(winners.get()),
        stream_of(ctx)));
  }

 private:
  int64_t axis_;
  data::Reduction reduction_;
};

class ScatterNDKernel : public backends::Kernel {
 public:
  explicit ScatterNDKernel(const KernelInit& init) : reduction_(parse_reduction(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& data = ctx.input(0);
    const ir::Tensor& indices = ctx.input(1);
    const ir::Tensor& updates = ctx.input(2);
    if (indices.rank() < 1) ctx.fail("indices must have rank >= 1");
    if (updates.dtype() != data.dtype()) ctx.fail("updates must have the data's dtype");
    int64_t k = indices.shape().back();
    if (k > data.rank()) ctx.fail("indices' last dim {} exceeds the data rank {}", k, data.rank());
    std::vector<int64_t> want(indices.shape().begin(), indices.shape().end() - 1);
    want.insert(want.end(), data.shape().begin() + k, data.shape().end());
    if (updates.shape() != want)
      ctx.fail("updates have shape {}, expected {}", ir::shape_to_string(updates.shape()),
               ir::shape_to_string(want));
    DType idt = index_dtype(ctx, 1);
    if (reduction_ != data::Reduction::None && data.dtype() == DType::Bool)
      ctx.fail("reduction needs a numeric dtype, got bool");
    ir::Tensor& out = copy_data_to_output(ctx, data);
    size_t uk = static_cast<size_t>(k);
    const std::vector<int64_t>& ds = data.shape();
    data::TupleParams p;
    p.error = run_context(ctx).device_error;
    p.error_code = run_context(ctx).error_code;
    p.m = static_cast<int>(k);
    p.slice = product(ds, uk, ds.size());
    p.num_tuples = product(indices.shape(), 0, indices.shape().size() - 1);
    p.tuples_per_batch = std::max<int64_t>(p.num_tuples, 1);
    if (out.numel() == 0 || p.num_tuples == 0) return;
    require_rank(ctx, uk, "the index tuple");
    std::vector<int64_t> strides = strides_of(ds);
    for (size_t j = 0; j < uk; ++j) {
      p.dims[j] = ds[j];
      p.strides[j] = strides[j];
    }
    std::shared_ptr<void> winners =
        winners_scratch(ctx, reduction_, out.numel() / p.slice, p.num_tuples);
    SY_CUDA_CHECK(data::launch_scatter_nd(out.raw(), out.numel(), indices.raw(), idt, updates.raw(),
                                          data.dtype(), reduction_, p,
                                          static_cast<int32_t*>(winners.get()), stream_of(ctx)));
  }

 private:
  data::Reduction reduction_;
};

class OneHotKernel : public backends::Kernel {
 public:
  explicit OneHotKernel(const KernelInit& init) : axis_(init.node.attr_int("axis", -1)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& indices = ctx.input(0);
    const ir::Tensor& depth_t = ctx.input(1);
    const ir::Tensor& values = ctx.input(2);
    if (depth_t.numel() != 1) ctx.fail("depth must hold one value, got {}", depth_t.numel());
    if (values.numel() != 2) ctx.fail("values must hold 2 elements, got {}", values.numel());
    if (indices.dtype() == DType::Bool || indices.dtype() == DType::String)
      ctx.fail("indices must be numeric, got {}", ir::dtype_name(indices.dtype()));
    double depth_v = read_doubles(ctx, 1)[0];
    if (!(depth_v >= 1 && depth_v < 9.0e18)) ctx.fail("depth must be positive, got {}", depth_v);
    int64_t depth = static_cast<int64_t>(depth_v);
    int64_t rank = indices.rank() + 1;
    if (axis_ < -rank || axis_ >= rank)
      ctx.fail("axis {} is out of range for rank {}", axis_, rank);
    size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    std::vector<int64_t> shape = indices.shape();
    shape.insert(shape.begin() + static_cast<int64_t>(axis), depth);
    ir::Tensor& out = ctx.allocate_output(0, values.dtype(), shape);
    if (out.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_one_hot(
        indices.raw(), indices.dtype(), values.raw(), out.raw(), elem_size(values.dtype()),
        product(indices.shape(), 0, axis), depth, depth_v,
        product(indices.shape(), axis, indices.shape().size()), stream_of(ctx)));
  }

 private:
  int64_t axis_;
};

// ---- Resize ------------------------------------------------------------------------------

// Enum values as data::ResizeParams documents them (the CPU kernel's order).
template <typename E>
E parse_choice(const ir::Node& node, const std::string& attr, const std::string& value,
               std::initializer_list<std::pair<const char*, E>> choices) {
  for (const auto& [name, e] : choices)
    if (value == name) return e;
  SY_THROW(InvalidModel, "{}: {} '{}' is not supported", node.describe(), attr, value);
}

constexpr int kNearest = 0, kLinear = 1;
constexpr int kTfCropAndResize = 5;
enum class AspectPolicy { Stretch, NotLarger, NotSmaller };

Support check_resize(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (x && x->type().dtype == DType::Bool && node.attr_string("mode", "nearest") != "nearest")
    return Support::no("the CUDA Resize kernel interpolates bool only in mode nearest");
  return rank_fits(node, 0);
}

class ResizeKernel final : public backends::Kernel {
 public:
  explicit ResizeKernel(const KernelInit& init) {
    const ir::Node& n = init.node;
    mode_ = parse_choice<int>(n, "mode", n.attr_string("mode", "nearest"),
                              {{"nearest", 0}, {"linear", 1}, {"cubic", 2}});
    transform_ = parse_choice<int>(n, "coordinate_transformation_mode",
                                   n.attr_string("coordinate_transformation_mode", "half_pixel"),
                                   {{"half_pixel", 0},
                                    {"half_pixel_symmetric", 1},
                                    {"pytorch_half_pixel", 2},
                                    {"align_corners", 3},
                                    {"asymmetric", 4},
                                    {"tf_crop_and_resize", 5},
                                    {"tf_half_pixel_for_nn", 6}});
    rounding_ = parse_choice<int>(
        n, "nearest_mode", n.attr_string("nearest_mode", "round_prefer_floor"),
        {{"round_prefer_floor", 0}, {"round_prefer_ceil", 1}, {"floor", 2}, {"ceil", 3}});
    policy_ = parse_choice<AspectPolicy>(n, "keep_aspect_ratio_policy",
                                         n.attr_string("keep_aspect_ratio_policy", "stretch"),
                                         {{"stretch", AspectPolicy::Stretch},
                                          {"not_larger", AspectPolicy::NotLarger},
                                          {"not_smaller", AspectPolicy::NotSmaller}});
    cubic_a_ = n.attr_float("cubic_coeff_a", -0.75f);
    exclude_outside_ = n.attr_int("exclude_outside", 0) != 0;
    antialias_ = n.attr_int("antialias", 0) != 0;
    extrapolation_ = n.attr_float("extrapolation_value", 0.0f);
    axes_attr_ = n.attr_ints("axes", {});
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const int64_t rank = x.rank();
    if (rank == 0) ctx.fail("X must have rank >= 1");
    std::vector<int64_t> axes;
    if (axes_attr_.empty()) {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    } else {
      std::set<int64_t> seen;
      for (int64_t a : axes_attr_) {
        int64_t axis = ops::normalize_axis(ctx.node(), a, rank);
        if (!seen.insert(axis).second) ctx.fail("axes has axis {} twice", a);
        axes.push_back(axis);
      }
    }
    const size_t num_axes = axes.size();
    auto present = [&](size_t i) { return ctx.has_input(i) && ctx.input(i).numel() > 0; };
    const bool has_scales = present(2);
    const bool has_sizes = present(3);
    if (has_scales == has_sizes)
      ctx.fail("exactly one of scales and sizes must be given (non-empty)");

    std::vector<int64_t> in_shape = x.shape();
    std::vector<int64_t> out_shape = in_shape;
    std::vector<double> scale(static_cast<size_t>(rank), 1.0);
    std::vector<double> length_resized(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i)
      length_resized[static_cast<size_t>(i)] =
          static_cast<double>(in_shape[static_cast<size_t>(i)]);
    std::vector<bool> resized(static_cast<size_t>(rank), false);
    for (int64_t a : axes) resized[static_cast<size_t>(a)] = true;

    if (has_scales) {
      const ir::Tensor& s = ctx.input(2);
      if (!ir::dtype_is_float(s.dtype())) ctx.fail("scales must be a float tensor");
      if (static_cast<size_t>(s.numel()) != num_axes)
        ctx.fail("scales has {} values, expected {}", s.numel(), num_axes);
      std::vector<double> values = read_doubles(ctx, 2);
      for (size_t i = 0; i < num_axes; ++i) {
        double v = values[i];
        if (!(v > 0) || !std::isfinite(v)) ctx.fail("scales[{}] = {} must be positive", i, v);
        size_t a = static_cast<size_t>(axes[i]);
        double len = static_cast<double>(in_shape[a]) * v;
        if (len > 9.0e18) ctx.fail("scales[{}] = {} makes axis {} too large", i, v, a);
        scale[a] = v;
        length_resized[a] = len;
        out_shape[a] = static_cast<int64_t>(std::floor(len));
      }
    } else {
      const ir::Tensor& s = ctx.input(3);
      if (s.dtype() != DType::Int64) ctx.fail("sizes must be an int64 tensor");
      if (static_cast<size_t>(s.numel()) != num_axes)
        ctx.fail("sizes has {} values, expected {}", s.numel(), num_axes);
      std::vector<int64_t> sizes = read_ints(ctx, 3);
      for (size_t i = 0; i < num_axes; ++i) {
        if (sizes[i] < 0) ctx.fail("sizes[{}] = {} is negative", i, sizes[i]);
        if (sizes[i] > 0 && in_shape[static_cast<size_t>(axes[i])] == 0)
          ctx.fail("cannot resize empty axis {} to size {}", axes[i], sizes[i]);
      }
      if (policy_ == AspectPolicy::Stretch) {
        for (size_t i = 0; i < num_axes; ++i) {
          size_t a = static_cast<size_t>(axes[i]);
          out_shape[a] = sizes[i];
          length_resized[a] = static_cast<double>(sizes[i]);
          scale[a] = in_shape[a] > 0 ? static_cast<double>(sizes[i]) / in_shape[a] : 1.0;
        }
      } else {
        double common = policy_ == AspectPolicy::NotLarger ? INFINITY : 0.0;
        for (size_t i = 0; i < num_axes; ++i) {
          size_t a = static_cast<size_t>(axes[i]);
          if (in_shape[a] == 0) continue;
          double r = static_cast<double>(sizes[i]) / static_cast<double>(in_shape[a]);
          common = policy_ == AspectPolicy::NotLarger ? std::min(common, r) : std::max(common, r);
        }
        if (!std::isfinite(common) || common <= 0) common = 1.0;
        for (size_t i = 0; i < num_axes; ++i) {
          size_t a = static_cast<size_t>(axes[i]);
          scale[a] = common;
          length_resized[a] = common * static_cast<double>(in_shape[a]);
          out_shape[a] = static_cast<int64_t>(std::floor(length_resized[a] + 0.5));
        }
      }
    }

    std::vector<double> roi_start(static_cast<size_t>(rank), 0.0);
    std::vector<double> roi_end(static_cast<size_t>(rank), 1.0);
    if (transform_ == kTfCropAndResize && present(1)) {
      const ir::Tensor& roi = ctx.input(1);
      if (!ir::dtype_is_float(roi.dtype())) ctx.fail("roi must be a float tensor");
      if (static_cast<size_t>(roi.numel()) != 2 * num_axes)
        ctx.fail("roi has {} values, expected {}", roi.numel(), 2 * num_axes);
      std::vector<double> values = read_doubles(ctx, 1);
      for (size_t i = 0; i < num_axes; ++i) {
        roi_start[static_cast<size_t>(axes[i])] = values[i];
        roi_end[static_cast<size_t>(axes[i])] = values[i + num_axes];
      }
    }
    (void)ir::checked_numel(out_shape);
    if (x.dtype() == DType::Bool && mode_ != kNearest)
      ctx.fail("mode must be nearest for bool input");
    require_rank(ctx, static_cast<size_t>(rank), "X");

    data::ResizeParams p;
    p.rank = static_cast<int>(rank);
    p.mode = mode_;
    p.transform = transform_;
    p.rounding = rounding_;
    p.exclude_outside = exclude_outside_ ? 1 : 0;
    p.normalize = antialias_ || exclude_outside_ ? 1 : 0;
    p.cubic_a = cubic_a_;
    p.extrapolation_bits = bits_from_double(x.dtype(), extrapolation_);
    std::vector<int64_t> in_strides = strides_of(in_shape);
    for (size_t a = 0; a < static_cast<size_t>(rank); ++a) {
      data::ResizeAxis& ax = p.axes[a];
      ax.in_len = in_shape[a];
      ax.out_len = out_shape[a];
      ax.in_stride = in_strides[a];
      ax.resized = resized[a] ? 1 : 0;
      ax.scale = scale[a];
      ax.length_resized = length_resized[a];
      ax.roi_start = roi_start[a];
      ax.roi_end = roi_end[a];
      // The filter is stretched by 1/scale when antialiasing a downscale.
      ax.support_scale = antialias_ ? std::min(scale[a], 1.0) : 1.0;
      if (mode_ != kNearest) {
        double reach = mode_ == kLinear ? 1.0 : 2.0;
        ax.first = static_cast<int64_t>(std::floor(-reach / ax.support_scale)) + 1;
        ax.width = 2 - 2 * ax.first;
      }
    }
    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), out_shape);
    if (y.numel() == 0) return;
    SY_CUDA_CHECK(data::launch_resize(x.raw(), y.raw(), x.dtype(), p, stream_of(ctx)));
  }

 private:
  int mode_, transform_, rounding_;
  AspectPolicy policy_;
  double cubic_a_ = -0.75;
  bool exclude_outside_ = false;
  bool antialias_ = false;
  double extrapolation_ = 0;
  std::vector<int64_t> axes_attr_;
};

// ---- registration ------------------------------------------------------------------------

template <typename K>
KernelDef def(ops::OpKind op, std::vector<DType> dtypes, std::vector<int> host_inputs = {},
              std::function<Support(const ir::Node&)> check = {}, int dtype_input = 0) {
  return KernelDef{op,
                   std::move(dtypes),
                   dtype_input,
                   std::move(check),
                   backends::make_factory<K>(),
                   std::move(host_inputs)};
}

Support check_rank0(const ir::Node& n) { return rank_fits(n, 0); }
Support check_gather(const ir::Node& n) { return indices_fit(n, 1); }
Support check_gather_ranked(const ir::Node& n) { return both(rank_fits(n, 0), indices_fit(n, 1)); }

}  // namespace

void register_data_kernels(backends::KernelRegistry& r) {
  using ops::OpKind;
  const std::vector<DType> plain = plain_dtypes();
  r.add(def<IdentityKernel>(OpKind::Identity, plain, {}, [](const ir::Node& n) {
    const ir::Value* v = n.input(0);
    if (v && !v->type().is_tensor() && v->type().kind != ir::Type::Kind::Unknown)
      return Support::no("the CUDA Identity kernel passes tensors only");
    return Support::yes();
  }));
  r.add(def<ReshapeKernel>(OpKind::Reshape, plain, {1}));
  r.add(def<FlattenKernel>(OpKind::Flatten, plain));
  r.add(def<SqueezeKernel>(OpKind::Squeeze, plain, {1}));
  r.add(def<UnsqueezeKernel>(OpKind::Unsqueeze, plain, {1}));
  r.add(def<DropoutKernel>(OpKind::Dropout, kFloatDtypes, {1, 2}, check_dropout));
  r.add(def<ShapeKernel>(OpKind::Shape, plain));
  r.add(def<SizeKernel>(OpKind::Size, plain));
  r.add(def<ConstantOfShapeKernel>(OpKind::ConstantOfShape, plain, {0}, {}, -1));
  r.add(def<RangeKernel>(OpKind::Range,
                         {DType::Float32, DType::Float64, DType::Int16, DType::Int32, DType::Int64},
                         {0, 1, 2}));
  r.add(def<EyeLikeKernel>(OpKind::EyeLike, plain));
  r.add(def<TriluKernel>(OpKind::Trilu, plain, {1}));
  r.add(def<TransposeKernel>(OpKind::Transpose, plain, {}, check_rank0));
  r.add(def<ConcatKernel>(OpKind::Concat, plain));
  r.add(def<SplitKernel>(OpKind::Split, plain, {1}));
  r.add(def<SliceKernel>(OpKind::Slice, plain, {1, 2, 3, 4}, check_rank0));
  r.add(def<PadKernel>(OpKind::Pad, plain, {1, 2, 3}, check_rank0));
  r.add(def<TileKernel>(OpKind::Tile, plain, {1}, check_rank0));
  r.add(KernelDef{OpKind::DepthToSpace,
                  plain,
                  0,
                  {},
                  [](const KernelInit& init) -> std::unique_ptr<backends::Kernel> {
                    return std::make_unique<BlockRearrangeKernel>(init, true);
                  }});
  r.add(KernelDef{OpKind::SpaceToDepth,
                  plain,
                  0,
                  {},
                  [](const KernelInit& init) -> std::unique_ptr<backends::Kernel> {
                    return std::make_unique<BlockRearrangeKernel>(init, false);
                  }});
  r.add(def<GatherKernel>(OpKind::Gather, plain, {}, check_gather));
  r.add(def<GatherElementsKernel>(OpKind::GatherElements, plain, {}, check_gather_ranked));
  r.add(def<GatherNDKernel>(OpKind::GatherND, plain, {}, check_gather_ranked));
  r.add(def<ScatterElementsKernel>(OpKind::ScatterElements, plain, {}, check_scatter));
  r.add(def<ScatterNDKernel>(OpKind::ScatterND, plain, {}, check_scatter));
  r.add(def<OneHotKernel>(
      OpKind::OneHot, plain, {1},
      [](const ir::Node& n) {
        const ir::Value* v = n.input(0);
        DType d = v ? v->type().dtype : DType::Undefined;
        if (d == DType::Bool || d == DType::String)
          return Support::no(fmt::format("the CUDA OneHot kernel takes numeric indices, got {}",
                                         ir::dtype_name(d)));
        return Support::yes();
      },
      2));
  r.add(def<ResizeKernel>(OpKind::Resize, plain, {1, 2, 3}, check_resize));
}

}  // namespace switchyard::cuda
