// CPU kernels of the shape family that move data by layout: Transpose, Concat, Split, Slice,
// Expand, Tile, DepthToSpace, SpaceToDepth. All work by element size, so every dtype is served.
#include <limits>
#include <optional>

#include "backends/cpu/kernels/dnnl_util.h"
#include "backends/cpu/kernels/shape_internal.h"
#include "backends/fusion/payload.h"
#include "ir/checked_math.h"
#include "ops/shape_geometry.h"
#include "ops/slice_geometry.h"

namespace switchyard::cpu {

namespace {

using runtime::KernelContext;
using runtime::KernelInit;

// Copies `in` into a new output 0 of shape `out_shape`, element at index i reading
// in[offset + sum(i_k * strides_k)].
void copy_strided_to_output(KernelContext& ctx, const ir::Tensor& in,
                            std::vector<int64_t> out_shape, std::vector<int64_t> strides,
                            int64_t offset = 0) {
  ir::Tensor& out = ctx.allocate_output(0, in.dtype(), out_shape);
  if (out.numel() == 0) return;
  dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
    using T = decltype(tag);
    strided_copy<T>(in.data<T>() + offset, out.data<T>(), std::move(out_shape), std::move(strides),
                    ctx.num_threads());
  });
}

// A Transpose of a dtype oneDNN knows, as a oneDNN reorder from the permuted strides to a plain
// layout (its jit kernels move blocks; the element loop below is several times slower on the
// NCHW <-> NHWC transposes at the edges of channels-last regions and on attention's heads).
struct TransposePlan {
  dnnl::reorder reorder;
  dnnl::memory::desc from, to;
};

class TransposeKernel : public runtime::Kernel {
 public:
  explicit TransposeKernel(const KernelInit& init) {
    if (init.node.has_attribute("perm")) perm_ = init.node.attr_ints("perm");
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    int64_t rank = in.rank();
    std::vector<int64_t> perm = perm_;
    if (!ctx.node().has_attribute("perm"))
      for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    if (static_cast<int64_t>(perm.size()) != rank)
      ctx.fail("perm has {} entries for an input of rank {}", perm.size(), rank);
    std::vector<int64_t> in_strides = strides_of(in.shape());
    std::vector<int64_t> shape, strides;
    for (int64_t p : perm) {
      if (p < 0 || p >= rank) ctx.fail("perm holds {}, out of range for rank {}", p, rank);
      shape.push_back(in.dim(p));
      strides.push_back(in_strides[static_cast<size_t>(p)]);
    }
    auto dt = dnnl_data_type(in.dtype());
    if (dt && rank >= 2 && rank <= 6 && in.numel() >= kReorderMinElements) {
      std::vector<int64_t> key = in.shape();
      key.push_back(static_cast<int64_t>(in.dtype()));
      OmpThreadScope threads(ctx.num_threads());
      auto plan = cache_.get(key, [&] {
        auto p = std::make_shared<TransposePlan>();
        p->from = dnnl::memory::desc(dnnl_dims(shape), *dt, dnnl_dims(strides));
        p->to = plain_desc(shape, *dt);
        p->reorder = make_reorder(p->from, p->to);
        return p;
      });
      ir::Tensor& out = ctx.allocate_output(0, in.dtype(), shape);
      execute_primitive(ctx, plan->reorder,
                        {{DNNL_ARG_FROM, wrap_memory(in, plan->from)},
                         {DNNL_ARG_TO, wrap_memory(out, plan->to)}});
      return;
    }
    copy_strided_to_output(ctx, in, std::move(shape), std::move(strides));
  }

 private:
  static constexpr int64_t kReorderMinElements = 4096;  // below, the loop is cheaper
  std::vector<int64_t> perm_;
  PlanCache<TransposePlan> cache_;
};

// Out[i] = act(in[i] * scale[c] + shift[c]) over `channels` channels of `inner` values each
// (c the channel of i, act Relu keeping NaN or none): a Concat's fused normalization.
void affine_channels(const float* in, float* out, int64_t channels, int64_t inner,
                     const float* scale, const float* shift, bool relu) {
  auto act = [relu](float v) { return relu && v < 0.0f ? 0.0f : v; };  // NaN < 0 is false
  if (inner == 1) {
#pragma omp simd
    for (int64_t c = 0; c < channels; ++c) out[c] = act(in[c] * scale[c] + shift[c]);
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    const float m = scale[c], a = shift[c];
    const float* p = in + c * inner;
    float* q = out + c * inner;
#pragma omp simd
    for (int64_t s = 0; s < inner; ++s) q[s] = act(p[s] * m + a);
  }
}

class ConcatKernel : public runtime::Kernel {
 public:
  explicit ConcatKernel(const KernelInit& init) : axis_(init.node.attr_int("axis")) {
    if (const auto* a = init.node.annotation<backends::fusion::ConcatAffine>()) {
      SY_CHECK(a->scale.size() == a->shift.size(), Internal,
               "{}: the fused normalization has {} scales and {} shifts", init.node.describe(),
               a->scale.size(), a->shift.size());
      affine_ = true;
      scale_ = a->scale;
      shift_ = a->shift;
      relu_ = a->relu;
    }
  }
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
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < axis; ++k) outer *= out_shape[k];
    for (size_t k = axis + 1; k < out_shape.size(); ++k) inner *= out_shape[k];
    ir::Tensor& out = ctx.allocate_output(0, first.dtype(), out_shape);
    if (out.numel() == 0) return;
    int64_t row = out_shape[axis] * inner;
    if (affine_) {
      if (first.dtype() != ir::DType::Float32)
        ctx.fail("the fused normalization takes float32, got {}", ir::dtype_name(first.dtype()));
      if (static_cast<size_t>(out_shape[axis]) != scale_.size())
        ctx.fail("the fused normalization has {} channels, the result {} along axis {}",
                 scale_.size(), out_shape[axis], axis);
      const float* scale = scale_.data();
      const float* shift = shift_.data();
      const bool relu = relu_;
      float* dst = out.data<float>();
      parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(row, 1)),
                   ctx.num_threads(), [&](int64_t b, int64_t e) {
                     for (int64_t o = b; o < e; ++o) {
                       float* d = dst + o * row;
                       int64_t channel = 0;
                       for (const ir::Tensor* t : ins) {
                         const int64_t c = t->shape()[axis];
                         affine_channels(t->data<float>() + o * c * inner, d, c, inner,
                                         scale + channel, shift + channel, relu);
                         d += c * inner;
                         channel += c;
                       }
                     }
                   });
      return;
    }
    dispatch_by_size(first.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      T* dst = out.data<T>();
      parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(row, 1)),
                   ctx.num_threads(), [&](int64_t b, int64_t e) {
                     for (int64_t o = b; o < e; ++o) {
                       T* d = dst + o * row;
                       for (const ir::Tensor* t : ins) {
                         int64_t block = t->shape()[axis] * inner;
                         copy_elements(t->data<T>() + o * block, d, block);
                         d += block;
                       }
                     }
                   });
    });
  }

 private:
  int64_t axis_;
  // fusion::ConcatAffine (Concat -> inference BatchNormalization -> Relu): per channel along
  // the axis, y = act(x * scale + shift).
  bool affine_ = false;
  std::vector<float> scale_, shift_;
  bool relu_ = false;
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
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < axis; ++k) outer *= in.shape()[k];
    for (size_t k = axis + 1; k < in.shape().size(); ++k) inner *= in.shape()[k];
    int64_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
      std::vector<int64_t> shape = in.shape();
      shape[axis] = sizes[i];
      ir::Tensor& out = ctx.allocate_output(i, in.dtype(), shape);
      int64_t block = sizes[i] * inner;
      if (out.numel() > 0) {
        dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
          using T = decltype(tag);
          const T* src = in.data<T>() + offset * inner;
          T* dst = out.data<T>();
          int64_t row = dim * inner;
          parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(block, 1)),
                       ctx.num_threads(), [&](int64_t b, int64_t e) {
                         for (int64_t o = b; o < e; ++o)
                           copy_elements(src + o * row, dst + o * block, block);
                       });
        });
      }
      offset += sizes[i];
    }
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
    copy_strided_to_output(ctx, in, std::move(view.shape), std::move(view.strides), view.offset);
  }
};

class ExpandKernel : public runtime::Kernel {
 public:
  explicit ExpandKernel(const KernelInit&) {}
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    std::vector<int64_t> shape = int_values(ctx, 1, "shape");
    for (int64_t d : shape)
      if (d < 0) ctx.fail("shape has a negative dimension {}", d);
    std::vector<int64_t> out = broadcast_or_fail(ctx, {in.shape(), shape});
    copy_strided_to_output(ctx, in, out, broadcast_strides(in.shape(), out));
  }
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
    std::vector<std::vector<int64_t>> maps(shape.size());
    for (size_t a = 0; a < shape.size(); ++a) {
      if (repeats[a] < 0) ctx.fail("repeats has a negative value {}", repeats[a]);
      int64_t d = shape[a];
      if (d != 0 && repeats[a] > std::numeric_limits<int64_t>::max() / d)
        ctx.fail("tiled dimension {} x {} is too large", d, repeats[a]);
      shape[a] = d * repeats[a];
    }
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), shape);
    if (out.numel() == 0) return;
    for (size_t a = 0; a < shape.size(); ++a) {
      maps[a].resize(static_cast<size_t>(shape[a]));
      for (int64_t j = 0; j < shape[a]; ++j) maps[a][static_cast<size_t>(j)] = j % in.shape()[a];
    }
    dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      axis_map_copy<T>(in.data<T>(), out.data<T>(), in.shape(), shape, maps, T{},
                       ctx.num_threads());
    });
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
    block_squared_ = ir::checked_mul(block_, block_, init.node.describe() + ": blocksize^2");
  }
  void run(KernelContext& ctx) const override {
    const ir::Tensor& in = ctx.input(0);
    if (in.rank() != 4) ctx.fail("input must be 4-D, got {}", ir::shape_to_string(in.shape()));
    int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3), b = block_;
    std::vector<int64_t> shape, strides;
    if (to_space_) {
      if (c % block_squared_ != 0)
        ctx.fail("channels {} are not divisible by blocksize^2 = {}", c, block_squared_);
      int64_t cc = c / block_squared_;
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
    const std::string what = ctx.node().describe() + ": output shape";
    std::vector<int64_t> out_shape =
        to_space_ ? std::vector<int64_t>{n, c / block_squared_, ir::checked_mul(h, b, what),
                                         ir::checked_mul(w, b, what)}
                  : std::vector<int64_t>{n, ir::checked_mul(c, block_squared_, what), h / b, w / b};
    ir::Tensor& out = ctx.allocate_output(0, in.dtype(), out_shape);
    if (out.numel() == 0) return;
    dispatch_by_size(in.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      strided_copy<T>(in.data<T>(), out.data<T>(), shape, strides, ctx.num_threads());
    });
  }

 private:
  bool to_space_, crd_;
  int64_t block_;
  int64_t block_squared_ = 1;
};

}  // namespace

void register_shape_layout_kernels(runtime::KernelRegistry& r) {
  r.add<TransposeKernel>(ops::OpKind::Transpose, movable_dtypes());
  r.add<ConcatKernel>(ops::OpKind::Concat, movable_dtypes());
  r.add<SplitKernel>(ops::OpKind::Split, movable_dtypes());
  r.add<SliceKernel>(ops::OpKind::Slice, movable_dtypes());
  r.add<ExpandKernel>(ops::OpKind::Expand, movable_dtypes());
  r.add<TileKernel>(ops::OpKind::Tile, movable_dtypes());
  r.add(runtime::KernelDef{ops::OpKind::DepthToSpace,
                           movable_dtypes(),
                           0,
                           {},
                           [](const KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
                             return std::make_unique<BlockRearrangeKernel>(init, true);
                           }});
  r.add(runtime::KernelDef{ops::OpKind::SpaceToDepth,
                           movable_dtypes(),
                           0,
                           {},
                           [](const KernelInit& init) -> std::unique_ptr<runtime::Kernel> {
                             return std::make_unique<BlockRearrangeKernel>(init, false);
                           }});
}

}  // namespace switchyard::cpu
