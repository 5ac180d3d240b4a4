// CPU kernels of the sequence family: sequences of tensors and optionals. Elements are shared,
// not copied, wherever a value passes through unchanged (tensors are immutable once made).
#include "backends/cpu/kernels/sequence_internal.h"

namespace switchyard::cpu {

namespace {

const std::vector<DType> kPositionDtypes = {DType::Int32, DType::Int64};

// Input i as a sequence; fails naming the node otherwise.
const ir::Datum& sequence_input(const runtime::KernelContext& ctx, size_t i) {
  const ir::Datum& d = ctx.input_datum(i);
  if (!d.is_sequence()) ctx.fail("input {} must be a sequence", i);
  return d;
}

// A position in [-size, size + extra) mapped to [0, size + extra).
int64_t resolve_position(const runtime::KernelContext& ctx, size_t input, int64_t size,
                         int64_t extra) {
  int64_t pos = read_scalar(ctx, ctx.input(input), kPositionDtypes, "position");
  if (pos < -size || pos >= size + extra)
    ctx.fail("position {} is out of range for a sequence of {} elements (accepted [{}, {}])", pos,
             size, -size, size + extra - 1);
  return pos < 0 ? pos + size : pos;
}

class SequenceConstructKernel : public runtime::Kernel {
 public:
  explicit SequenceConstructKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    std::vector<ir::Tensor> items;
    items.reserve(ctx.num_inputs());
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      const ir::Tensor& t = ctx.input(i);
      if (!items.empty() && t.dtype() != items[0].dtype())
        ctx.fail("input {} has dtype {}, but input 0 has {}", i, ir::dtype_name(t.dtype()),
                 ir::dtype_name(items[0].dtype()));
      items.push_back(t);
    }
    DType dtype = items[0].dtype();
    ctx.set_output(0, ir::Datum::make_sequence(dtype, std::move(items)));
  }
};

class SequenceEmptyKernel : public runtime::Kernel {
 public:
  explicit SequenceEmptyKernel(const runtime::KernelInit& init)
      : dtype_(
            static_cast<DType>(init.node.attr_int("dtype", static_cast<int64_t>(DType::Float32)))) {
  }
  void run(runtime::KernelContext& ctx) const override {
    ctx.set_output(0, ir::Datum::make_sequence(dtype_, {}));
  }

 private:
  DType dtype_;
};

class SequenceAtKernel : public runtime::Kernel {
 public:
  explicit SequenceAtKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    const ir::Datum& seq = sequence_input(ctx, 0);
    int64_t size = static_cast<int64_t>(seq.sequence.size());
    int64_t pos = resolve_position(ctx, 1, size, 0);
    ctx.set_output(0, seq.sequence[static_cast<size_t>(pos)]);
  }
};

class SequenceInsertKernel : public runtime::Kernel {
 public:
  explicit SequenceInsertKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    const ir::Datum& seq = sequence_input(ctx, 0);
    const ir::Tensor& t = ctx.input(1);
    DType dtype = seq.sequence_dtype == DType::Undefined ? t.dtype() : seq.sequence_dtype;
    if (t.dtype() != dtype)
      ctx.fail("cannot insert a {} tensor into a sequence of {}", ir::dtype_name(t.dtype()),
               ir::dtype_name(dtype));
    int64_t size = static_cast<int64_t>(seq.sequence.size());
    int64_t pos = ctx.has_input(2) ? resolve_position(ctx, 2, size, 1) : size;
    std::vector<ir::Tensor> items = seq.sequence;
    items.insert(items.begin() + pos, t);
    ctx.set_output(0, ir::Datum::make_sequence(dtype, std::move(items)));
  }
};

class SequenceEraseKernel : public runtime::Kernel {
 public:
  explicit SequenceEraseKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    const ir::Datum& seq = sequence_input(ctx, 0);
    int64_t size = static_cast<int64_t>(seq.sequence.size());
    if (size == 0) ctx.fail("cannot erase from an empty sequence");
    int64_t pos = ctx.has_input(1) ? resolve_position(ctx, 1, size, 0) : size - 1;
    std::vector<ir::Tensor> items = seq.sequence;
    items.erase(items.begin() + pos);
    ctx.set_output(0, ir::Datum::make_sequence(seq.sequence_dtype, std::move(items)));
  }
};

class SequenceLengthKernel : public runtime::Kernel {
 public:
  explicit SequenceLengthKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    const ir::Datum& seq = sequence_input(ctx, 0);
    ctx.allocate_output(0, DType::Int64, {}).data<int64_t>()[0] =
        static_cast<int64_t>(seq.sequence.size());
  }
};

class SplitToSequenceKernel : public runtime::Kernel {
 public:
  explicit SplitToSequenceKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis", 0)), keepdims_(init.node.attr_int("keepdims", 1) != 0) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() == 0) ctx.fail("input must have rank >= 1 to be split");
    size_t axis = static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, in.rank()));
    int64_t dim = in.dim(static_cast<int64_t>(axis));
    std::vector<int64_t> sizes = chunk_sizes(ctx, dim);
    bool squeeze = !ctx.has_input(1) && !keepdims_;

    int64_t outer = dims_product(in.shape(), 0, axis);
    int64_t inner = dims_product(in.shape(), axis + 1, in.shape().size());
    std::vector<ir::Tensor> items;
    items.reserve(sizes.size());
    int64_t start = 0;
    for (int64_t len : sizes) {
      std::vector<int64_t> shape = in.shape();
      if (squeeze)
        shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
      else
        shape[axis] = len;
      items.push_back(slice(ctx, in, std::move(shape), outer, dim, inner, start, len));
      start += len;
    }
    ctx.set_output(0, ir::Datum::make_sequence(in.dtype(), std::move(items)));
  }

 private:
  std::vector<int64_t> chunk_sizes(const runtime::KernelContext& ctx, int64_t dim) const {
    if (!ctx.has_input(1)) return std::vector<int64_t>(static_cast<size_t>(dim), 1);
    const ir::Tensor& split = ctx.input(1);
    if (split.dtype() != DType::Int32 && split.dtype() != DType::Int64)
      ctx.fail("'split' must be int32 or int64, got {}", ir::dtype_name(split.dtype()));
    if (split.rank() > 1) ctx.fail("'split' must be a scalar or 1-D, got rank {}", split.rank());
    std::vector<int64_t> sizes = split.to_int_vector();
    if (split.rank() == 0) {
      int64_t chunk = sizes[0];
      if (chunk <= 0) ctx.fail("scalar 'split' must be positive, got {}", chunk);
      sizes.clear();
      for (int64_t s = 0; s < dim; s += chunk) sizes.push_back(std::min(chunk, dim - s));
      return sizes;
    }
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0 || s > dim) ctx.fail("'split' size {} is out of range for axis size {}", s, dim);
      total += s;
    }
    if (total != dim)
      ctx.fail("'split' sizes sum to {}, but the split axis has size {}", total, dim);
    return sizes;
  }

  // Rows [start, start + len) of the axis; shares the input's storage when they are contiguous.
  static ir::Tensor slice(runtime::KernelContext& ctx, const ir::Tensor& in,
                          std::vector<int64_t> shape, int64_t outer, int64_t dim, int64_t inner,
                          int64_t start, int64_t len) {
    if (outer == 1 && in.numel() > 0) return view_of(in, std::move(shape), start * inner);
    ir::Tensor out = new_tensor(ctx, in.dtype(), std::move(shape));
    copy_blocks(in, start * inner, dim * inner, out, 0, len * inner, outer, len * inner);
    return out;
  }

  int64_t axis_;
  bool keepdims_;
};

class ConcatFromSequenceKernel : public runtime::Kernel {
 public:
  explicit ConcatFromSequenceKernel(const runtime::KernelInit& init)
      : axis_(init.node.attr_int("axis")), new_axis_(init.node.attr_int("new_axis", 0) != 0) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Datum& seq = sequence_input(ctx, 0);
    if (seq.sequence.empty()) ctx.fail("cannot concatenate an empty sequence");
    const ir::Tensor& first = seq.sequence[0];
    int64_t rank = first.rank();
    if (!new_axis_ && rank == 0) ctx.fail("cannot concatenate scalars without 'new_axis'");
    size_t axis =
        static_cast<size_t>(ops::normalize_axis(ctx.node(), axis_, rank + (new_axis_ ? 1 : 0)));

    // Every element, viewed as [outer, len, inner] around the axis.
    std::vector<int64_t> out_shape = first.shape();
    if (new_axis_) out_shape.insert(out_shape.begin() + static_cast<std::ptrdiff_t>(axis), 0);
    int64_t total = 0;
    for (size_t k = 0; k < seq.sequence.size(); ++k) {
      const ir::Tensor& t = seq.sequence[k];
      if (t.dtype() != first.dtype())
        ctx.fail("element {} has dtype {}, element 0 has {}", k, ir::dtype_name(t.dtype()),
                 ir::dtype_name(first.dtype()));
      bool match = t.rank() == rank;
      for (int64_t d = 0; match && d < rank; ++d) {
        bool concat_dim = !new_axis_ && static_cast<size_t>(d) == axis;
        match = concat_dim || t.dim(d) == first.dim(d);
      }
      if (!match)
        ctx.fail("element {} has shape {}, which does not fit element 0's {} along axis {}", k,
                 ir::shape_to_string(t.shape()), ir::shape_to_string(first.shape()), axis);
      total += new_axis_ ? 1 : t.dim(static_cast<int64_t>(axis));
    }
    out_shape[axis] = total;
    ir::Tensor& out = ctx.allocate_output(0, first.dtype(), out_shape);
    int64_t outer = dims_product(out_shape, 0, axis);
    int64_t inner = dims_product(out_shape, axis + 1, out_shape.size());
    int64_t offset = 0;
    for (const ir::Tensor& t : seq.sequence) {
      int64_t len = new_axis_ ? 1 : t.dim(static_cast<int64_t>(axis));
      copy_blocks(t, 0, len * inner, out, offset * inner, total * inner, outer, len * inner);
      offset += len;
    }
  }

 private:
  int64_t axis_;
  bool new_axis_;
};

class OptionalKernel : public runtime::Kernel {
 public:
  explicit OptionalKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    ctx.set_output(0, ctx.has_input(0) ? ctx.input_datum(0) : ir::Datum());
  }
};

class OptionalHasElementKernel : public runtime::Kernel {
 public:
  explicit OptionalHasElementKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    ctx.allocate_output(0, DType::Bool, {}).data<bool>()[0] = ctx.has_input(0);
  }
};

class OptionalGetElementKernel : public runtime::Kernel {
 public:
  explicit OptionalGetElementKernel(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override {
    if (!ctx.has_input(0))
      ctx.fail("the optional input '{}' holds no value",
               ctx.node().input(0) ? ctx.node().input(0)->name() : "");
    ctx.set_output(0, ctx.input_datum(0));
  }
};

}  // namespace

void register_sequence_kernels(runtime::KernelRegistry& r) {
  r.add<SequenceConstructKernel>(ops::OpKind::SequenceConstruct, movable_dtypes());
  r.add<SequenceEmptyKernel>(ops::OpKind::SequenceEmpty, {});
  r.add<SequenceAtKernel>(ops::OpKind::SequenceAt, {});
  r.add<SequenceInsertKernel>(ops::OpKind::SequenceInsert, movable_dtypes(), 1);
  r.add<SequenceEraseKernel>(ops::OpKind::SequenceErase, {});
  r.add<SequenceLengthKernel>(ops::OpKind::SequenceLength, {});
  r.add<SplitToSequenceKernel>(ops::OpKind::SplitToSequence, movable_dtypes());
  r.add<ConcatFromSequenceKernel>(ops::OpKind::ConcatFromSequence, {});
  r.add<OptionalKernel>(ops::OpKind::Optional, movable_dtypes());
  r.add<OptionalHasElementKernel>(ops::OpKind::OptionalHasElement, movable_dtypes());
  r.add<OptionalGetElementKernel>(ops::OpKind::OptionalGetElement, movable_dtypes());
}

}  // namespace switchyard::cpu
