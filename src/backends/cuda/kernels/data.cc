// CUDA kernels of the shape and data-movement family: views that alias their input (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity, ai.switchyard's Depend, inference Dropout), Shape, Size,
// Transpose, Concat, Split, Slice, Pad, Tile, ConstantOfShape, Range, Trilu, DepthToSpace,
// SpaceToDepth, EyeLike
// (gathers and scatters: gather_scatter.cc; Resize: resize.cc). The host side mirrors the CPU
// kernels (src/backends/cpu/kernels/shape*.cc, normalization.cc's Dropout): same attributes,
// shape rules and messages. Shape-like inputs are host inputs. Device code: data.cu.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/data_host.h"
#include "backends/cuda/kernels/data_impl.h"
#include "ops/pad_geometry.h"
#include "ops/shape_geometry.h"
#include "ops/shape_inference.h"
#include "ops/slice_geometry.h"

namespace switchyard::cuda {

namespace {

using namespace movement;  // NOLINT: the family's shared helpers
// ---- views -------------------------------------------------------------------------------

class IdentityKernel : public runtime::Kernel {
 public:
  explicit IdentityKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override { ctx.set_output(0, ctx.input_datum(0)); }
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
    size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    ctx.set_output(0, in.reshaped({product(in.shape(), 0, axis),
                                   product(in.shape(), axis, in.shape().size())}));
  }

 private:
  int64_t axis_;
};

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

class DropoutKernel : public runtime::Kernel {
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
    write_int64s(ctx, out.data<int64_t>(), {shape.begin() + start, shape.begin() + start + len});
  }

 private:
  int64_t start_, end_;
};

class SizeKernel : public runtime::Kernel {
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

class ConstantOfShapeKernel : public runtime::Kernel {
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

class RangeKernel : public runtime::Kernel {
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

class EyeLikeKernel : public runtime::Kernel {
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
    k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
    SY_CUDA_CHECK(data::launch_trilu(in.raw(), out.raw(), elem_size(in.dtype()), batches, rows,
                                     cols, k, upper_, stream_of(ctx)));
  }

 private:
  bool upper_;
};

// ---- layout ------------------------------------------------------------------------------

class TransposeKernel : public runtime::Kernel {
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

class ConcatKernel : public runtime::Kernel {
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

class SplitKernel : public runtime::Kernel {
 public:
  explicit SplitKernel(const KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)), uneven_(init.node.has_attribute("num_outputs")) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() == 0) ctx.fail("cannot split a scalar");
    size_t axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, in.rank()));
    int64_t dim = in.shape()[axis];
    size_t n = ctx.num_outputs();
    std::optional<std::vector<int64_t>> split;
    if (ctx.has_input(1)) split = int_values(ctx, 1, "split");
    std::vector<int64_t> sizes =
        ops::split_sizes(ctx.node(), dim, static_cast<int64_t>(axis), n, split, uneven_);
    const int64_t outer = product(in.shape(), 0, axis);
    const int64_t inner = product(in.shape(), axis + 1, in.shape().size());
    const int es = elem_size(in.dtype());
    // Output i is `outer` rows of sizes[i] * inner elements, one per input row: every output
    // in one launch (GPT's fused QKV product split three ways is one kernel, not three).
    data::SplitChunk chunk;
    chunk.src_row = dim * inner;
    chunk.outer = outer;
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> shape = in.shape();
      shape[axis] = sizes[i];
      ir::Tensor& out = ctx.allocate_output(i, in.dtype(), shape);
      if (out.numel() > 0) {
        if (chunk.count == data::SplitChunk::kMaxOutputs) {
          SY_CUDA_CHECK(data::launch_split(in.raw(), es, chunk, stream_of(ctx)));
          chunk.count = 0;
        }
        chunk.dst[chunk.count] = out.raw();
        chunk.block[chunk.count] = sizes[i] * inner;
        chunk.begin[chunk.count] = offset * inner;
        ++chunk.count;
      }
      offset += sizes[i];
    }
    SY_CUDA_CHECK(data::launch_split(in.raw(), es, chunk, stream_of(ctx)));
  }

 private:
  int64_t axis_;
  bool uneven_;
};

class SliceKernel : public runtime::Kernel {
 public:
  explicit SliceKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::optional<std::vector<int64_t>> axes, steps;
    if (ctx.has_input(3)) axes = int_values(ctx, 3, "axes");
    if (ctx.has_input(4)) steps = int_values(ctx, 4, "steps");
    ops::SliceView view = ops::slice_view(ctx.node(), in.shape(), int_values(ctx, 1, "starts"),
                                          int_values(ctx, 2, "ends"), axes, steps);
    copy_strided_to_output(ctx, in, std::move(view.shape), view.strides, view.offset);
  }
};

// DepthToSpace and SpaceToDepth: a 6-D view of the input, transposed.
class BlockRearrangeKernel : public runtime::Kernel {
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

static_assert(static_cast<int>(ops::PadMode::Wrap) == static_cast<int>(data::PadMode::Wrap) &&
                  static_cast<int>(ops::PadMode::Edge) == static_cast<int>(data::PadMode::Edge),
              "the device kernel numbers pad modes as ops::PadMode does");

class PadKernel : public runtime::Kernel {
 public:
  explicit PadKernel(const KernelInit& init) : mode_(ops::pad_mode(init.node)) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    const int64_t rank = in.rank();
    std::optional<std::vector<int64_t>> axes;
    if (ctx.has_input(3)) axes = int_values(ctx, 3, "axes");
    const ops::PadGeometry g =
        ops::pad_geometry(ctx.node(), in.shape(), int_values(ctx, 1, "pads"), axes, mode_);
    const std::vector<int64_t>& shape = g.shape;
    uint64_t fill = 0;
    if (mode_ == ops::PadMode::Constant && ctx.has_input(2)) {
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
    p.mode = static_cast<data::PadMode>(mode_);  // the same numbering
    copy_dims(p.out_dims, shape);
    copy_dims(p.in_dims, in.shape());
    copy_dims(p.in_strides, strides_of(in.shape()));
    copy_dims(p.pre, g.pre);
    SY_CUDA_CHECK(
        data::launch_pad(in.raw(), out.raw(), elem_size(in.dtype()), p, fill, stream_of(ctx)));
  }

 private:
  ops::PadMode mode_;
};

class TileKernel : public runtime::Kernel {
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

}  // namespace

void register_data_kernels(runtime::KernelRegistry& r) {
  using ops::OpKind;
  const std::vector<DType> plain = plain_dtypes();
  r.add(def<IdentityKernel>(OpKind::Identity, plain, {}, [](const ir::Node& n) {
    const ir::Value* v = n.input(0);
    if (v && !v->type().is_tensor() && v->type().kind != ir::Type::Kind::Unknown)
      return Support::no("the CUDA Identity kernel passes tensors only");
    return Support::yes();
  }));
  // Depend (ai.switchyard) passes input 0 on as Identity does; its ordering inputs are not read.
  r.add(def<IdentityKernel>(OpKind::Depend, plain, {}, [](const ir::Node& n) {
    const ir::Value* v = n.input(0);
    if (v && !v->type().is_tensor() && v->type().kind != ir::Type::Kind::Unknown)
      return Support::no("the CUDA Depend kernel passes tensors only");
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
                  [](const KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
                    return std::make_unique<BlockRearrangeKernel>(init, true);
                  }});
  r.add(KernelDef{OpKind::SpaceToDepth,
                  plain,
                  0,
                  {},
                  [](const KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
                    return std::make_unique<BlockRearrangeKernel>(init, false);
                  }});
}

}  // namespace switchyard::cuda
