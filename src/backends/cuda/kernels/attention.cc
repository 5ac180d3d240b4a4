// The fused attention kernel, host side: the MatMul that fuse_attention made
// (backends/fusion/attention.cc; its fusion::Attention), for float16 and bfloat16. It resolves the
// run-time shapes as the unfused nodes would have: Q, K and V read through their permutations as
// [batch, heads, sequence, dim], batch and head dims broadcast as MatMul's (size 1 against
// any), Q's and K's head dims and K's and V's lengths equal, the mask broadcast into the scores
// [batch, heads, query, key] (it may widen the batch, head and query dims, as the unfused Add
// would), and fails naming the node where they would have failed. An operand read as a view
// (fusion::Attention::View: columns of a packed product P [batch, sequence, W] and the target of
// the head split Reshape it replaced, a host input) is P read in place through its strides when
// the target resolves to [batch, sequence, heads, width / heads], and otherwise a dense copy of
// those columns reshaped as the Reshape would have. Device code: attention.cu.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/attention_impl.h"
#include "backends/fusion/payload.h"
#include "ir/checked_math.h"
#include "ops/op_kind.h"
#include "ops/shape_geometry.h"
#include "ops/slice_geometry.h"

namespace switchyard::cuda {

namespace {

using ir::DType;
using runtime::KernelContext;
using runtime::Support;

// Row-major element strides of `shape`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// An input read as [batch, heads, sequence, dim] through `perm`.
struct View {
  int64_t dims[4] = {};
  int64_t strides[4] = {};
};

// An operand before its permutation: its data, dims and element strides.
struct Operand {
  const void* data = nullptr;
  std::vector<int64_t> shape, strides;
};

using PackedView = backends::fusion::Attention::View;

// The Attention's views, checked against the node's inputs: none, or one per Q, K and V.
std::vector<PackedView> checked_views(const ir::Node& node, const std::vector<PackedView>& views) {
  SY_CHECK(views.empty() || views.size() == 3, InvalidModel,
           "{}: the fused attention has {} operand views, expected 0 or 3", node.describe(),
           views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    const PackedView& v = views[i];
    SY_CHECK(v.offset >= 0 && v.width >= 0, InvalidModel,
             "{}: operand {}'s view [{}, +{}) is invalid", node.describe(), i, v.offset, v.width);
    SY_CHECK(v.width == 0 || node.input(4 + i) != nullptr, InvalidModel,
             "{}: operand {} is a view but input {} (its Reshape's target) is absent",
             node.describe(), i, 4 + i);
  }
  return views;
}

// The fusion::Attention of a node that check_attention accepted.
const backends::fusion::Attention& attention_of(const ir::Node& node) {
  const auto* attention = node.annotation<backends::fusion::Attention>();
  SY_CHECK(attention != nullptr, Internal, "{}: no fused attention", node.describe());
  return *attention;
}

// One of the Attention's permutations (empty: the identity), checked.
std::vector<int64_t> checked_perm(const ir::Node& node, const std::vector<int64_t>& perm,
                                  const char* name) {
  std::vector<int64_t> p = perm.empty() ? std::vector<int64_t>{0, 1, 2, 3} : perm;
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  SY_CHECK(sorted == (std::vector<int64_t>{0, 1, 2, 3}), InvalidModel,
           "{}: {} is not a permutation of 4 dims", node.describe(), name);
  return p;
}

AttentionMask mask_of(backends::fusion::Attention::Mask mask) {
  using Mask = backends::fusion::Attention::Mask;
  switch (mask) {
    case Mask::Add:
      return AttentionMask::Add;
    case Mask::WhereTrue:
      return AttentionMask::WhereTrue;
    case Mask::WhereFalse:
      return AttentionMask::WhereFalse;
    case Mask::None:
      break;
  }
  return AttentionMask::None;
}

View view_of(const KernelContext& ctx, const Operand& t, const std::vector<int64_t>& perm,
             const char* what) {
  if (t.shape.size() != 4)
    ctx.fail("{} has shape {}; fused attention reads rank-4 operands", what,
             ir::shape_to_string(t.shape));
  View v;
  for (size_t i = 0; i < 4; ++i) {
    const size_t p = static_cast<size_t>(perm[i]);
    v.dims[i] = t.shape[p];
    v.strides[i] = t.shape[p] == 1 ? 0 : t.strides[p];
  }
  return v;
}

// The broadcast of the sizes `dims` (1 against any), failing like MatMul's batch broadcast.
int64_t broadcast(const KernelContext& ctx, std::initializer_list<int64_t> dims, const char* what) {
  int64_t out = 1;
  for (int64_t d : dims) {
    if (d == 1 || d == out) continue;
    if (out != 1)
      ctx.fail("the {} dims of the attention's operands ({}) cannot be broadcast", what,
               fmt::join(dims, ", "));
    out = d;
  }
  return out;
}

class AttentionKernel : public runtime::Kernel {
 public:
  explicit AttentionKernel(const runtime::KernelInit& init)
      : AttentionKernel(init.node, attention_of(init.node)) {}
  AttentionKernel(const ir::Node& node, const backends::fusion::Attention& a)
      : perm_q_(checked_perm(node, a.perm_q, "perm_q")),
        perm_k_(checked_perm(node, a.perm_k, "perm_k")),
        perm_v_(checked_perm(node, a.perm_v, "perm_v")),
        perm_out_(checked_perm(node, a.perm_out, "perm_out")),
        alpha_(a.alpha),
        fill_(a.mask_fill),
        mask_(mask_of(a.mask)),
        views_(checked_views(node, a.views)),
        mask_slices_(a.mask_slices) {
    SY_CHECK(mask_slices_.empty() ||
                 (mask_ != AttentionMask::None && node.num_inputs() >= 7 + 4 * mask_slices_.size()),
             InvalidModel,
             "{}: the fused attention reads its mask through {} Slices but has {} inputs",
             node.describe(), mask_slices_.size(), node.num_inputs());
    SY_CHECK(perm_out_[3] == 3, InvalidModel,
             "{}: the fused attention's output permutation must keep the head dim last",
             node.describe());
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& q = ctx.input(0);
    const ir::Tensor& k = ctx.input(1);
    const ir::Tensor& v = ctx.input(2);
    const DType dtype = q.dtype();
    if (dtype != DType::Float16 && dtype != DType::BFloat16)
      ctx.fail("fused attention runs float16 and bfloat16, got {}", ir::dtype_name(dtype));
    if (k.dtype() != dtype || v.dtype() != dtype)
      ctx.fail("Q, K and V must share one dtype, got {}, {} and {}", ir::dtype_name(dtype),
               ir::dtype_name(k.dtype()), ir::dtype_name(v.dtype()));
    const CudaRunContext& rc = run_context(ctx);
    std::vector<std::shared_ptr<void>> keep;  // dense copies, in use until the stream passes run()
    const Operand qo = operand(ctx, 0, "Q", rc.stream, keep);
    const Operand ko = operand(ctx, 1, "K", rc.stream, keep);
    const Operand vo = operand(ctx, 2, "V", rc.stream, keep);
    const View qv = view_of(ctx, qo, perm_q_, "Q");
    const View kv = view_of(ctx, ko, perm_k_, "K");
    const View vv = view_of(ctx, vo, perm_v_, "V");
    if (qv.dims[3] != kv.dims[3])
      ctx.fail("inner dims differ: Q's head dim is {} but K's is {}", qv.dims[3], kv.dims[3]);
    if (kv.dims[2] != vv.dims[2])
      ctx.fail("inner dims differ: the scores have {} keys but V has {} rows", kv.dims[2],
               vv.dims[2]);
    // The mask broadcast into [batch, heads, query, key], right-aligned: the input, or the view
    // of it that the absorbed Slices cut.
    const ir::Tensor* mask = mask_ != AttentionMask::None ? &ctx.input(3) : nullptr;
    int64_t mdims[4] = {1, 1, 1, 1}, mstrides[4] = {0, 0, 0, 0};
    const char* mask_data = nullptr;
    if (mask) {
      const DType want = mask_ == AttentionMask::Add ? dtype : DType::Bool;
      if (mask->dtype() != want)
        ctx.fail("the attention mask is {}, expected {}", ir::dtype_name(mask->dtype()),
                 ir::dtype_name(want));
      MaskView mv = mask_view(ctx, *mask);
      if (mv.shape.size() > 4)
        ctx.fail("the attention mask has shape {}, of more than 4 dims",
                 ir::shape_to_string(mv.shape));
      const size_t off = 4 - mv.shape.size();
      for (size_t i = 0; i < mv.shape.size(); ++i) {
        mdims[off + i] = mv.shape[i];
        mstrides[off + i] = mv.shape[i] == 1 ? 0 : mv.strides[i];
      }
      mask_data = static_cast<const char*>(mask->raw()) +
                  mv.offset * static_cast<int64_t>(ir::dtype_size(mask->dtype()));
    }
    AttentionArgs a;
    a.dtype = dtype;
    a.batch = broadcast(ctx, {qv.dims[0], kv.dims[0], vv.dims[0], mdims[0]}, "batch");
    a.heads = broadcast(ctx, {qv.dims[1], kv.dims[1], vv.dims[1], mdims[1]}, "head");
    a.q_len = broadcast(ctx, {qv.dims[2], mdims[2]}, "query");
    a.kv_len = kv.dims[2];
    if (mdims[3] != 1 && mdims[3] != a.kv_len)
      ctx.fail("the attention mask has {} keys, the scores {}", mdims[3], a.kv_len);
    a.head_dim = qv.dims[3];
    a.v_dim = vv.dims[3];
    // The result [batch, heads, query, v_dim], stored through the head merge's permutation.
    const int64_t canonical[4] = {a.batch, a.heads, a.q_len, a.v_dim};
    std::vector<int64_t> out_shape(4);
    for (size_t i = 0; i < 4; ++i) out_shape[i] = canonical[perm_out_[i]];
    ir::Tensor& y = ctx.allocate_output(0, dtype, out_shape);
    if (y.numel() == 0) return;
    if (a.kv_len == 0) {  // a product over no keys is zero, as the unfused MatMul gives
      SY_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), rc.stream));
      return;
    }
    const std::vector<int64_t> ost = dense_strides(out_shape);
    int64_t out_stride[4] = {};
    for (size_t i = 0; i < 4; ++i) out_stride[perm_out_[i]] = ost[i];
    for (int i = 0; i < 3; ++i) {
      // A broadcast operand dim reads index 0; a dim of one does not move.
      a.q_stride[i] = qv.dims[i] == 1 ? 0 : qv.strides[i];
      a.k_stride[i] = kv.dims[i] == 1 ? 0 : kv.strides[i];
      a.v_stride[i] = vv.dims[i] == 1 ? 0 : vv.strides[i];
      a.out_stride[i] = out_stride[i];
    }
    for (int i = 0; i < 4; ++i) a.mask_stride[i] = mstrides[i];
    if (qv.dims[3] > 1 && qv.strides[3] != 1) ctx.fail("Q's head dim is not contiguous");
    if (kv.dims[3] > 1 && kv.strides[3] != 1) ctx.fail("K's head dim is not contiguous");
    if (vv.dims[3] > 1 && vv.strides[3] != 1) ctx.fail("V's head dim is not contiguous");
    a.q = qo.data;
    a.k = ko.data;
    a.v = vo.data;
    a.out = y.raw();
    a.alpha = alpha_;
    a.mask_kind = mask_;
    a.mask = mask_data;
    a.fill = fill_;
    SY_CUDA_CHECK(launch_attention(a, rc.stream));
  }

 private:
  // Operand `i` (`what`): its input as it is, or its view of the packed product there.
  Operand operand(const KernelContext& ctx, size_t i, const char* what, cudaStream_t stream,
                  std::vector<std::shared_ptr<void>>& keep) const {
    const ir::Tensor& t = ctx.input(i);
    if (i >= views_.size() || views_[i].width == 0)
      return Operand{t.raw(), t.shape(), dense_strides(t.shape())};
    const PackedView& view = views_[i];
    if (t.rank() != 3)
      ctx.fail("{} is read out of a packed product of shape {}; expected [batch, sequence, width]",
               what, ir::shape_to_string(t.shape()));
    const int64_t batch = t.shape()[0], seq = t.shape()[1], packed = t.shape()[2];
    if (view.offset + view.width > packed)
      ctx.fail("{} is columns [{}, {}) of a packed product of {} columns", what, view.offset,
               view.offset + view.width, packed);
    // The absorbed Reshape's target, resolved as it would have resolved it.
    const std::vector<int64_t> part = {batch, seq, view.width};
    const int64_t numel =
        ir::checked_mul(ir::checked_mul(batch, seq, "operand"), view.width, "operand");
    std::vector<int64_t> shape;
    try {
      shape = ops::reshape_shape(ctx.node(), part, numel, read_ints(ctx, 4 + i), view.allowzero);
    } catch (const Error& e) {
      SY_THROW(InvalidArgument, "{} (the head split '{}' of {}, read out of a packed product)",
               e.message(), view.reshape, what);
    }
    const size_t es = ir::dtype_size(t.dtype());
    const char* base = static_cast<const char*>(t.raw()) + static_cast<size_t>(view.offset) * es;
    if (shape.size() == 4 && shape[0] == batch && shape[1] == seq &&
        shape[2] * shape[3] == view.width)
      return Operand{base, shape, {seq * packed, packed, shape[3], 1}};
    // Any other target: the columns made dense, then reshaped.
    const size_t row = static_cast<size_t>(view.width) * es;
    keep.push_back(ctx.scratch(std::max<size_t>(ir::checked_nbytes(t.dtype(), numel), 1)));
    if (numel > 0)
      SY_CUDA_CHECK(
          cudaMemcpy2DAsync(keep.back().get(), row, base, static_cast<size_t>(packed) * es, row,
                            static_cast<size_t>(batch * seq), cudaMemcpyDeviceToDevice, stream));
    return Operand{keep.back().get(), shape, dense_strides(shape)};
  }

  // The mask's elements as the kernel reads them: `mask` itself, or the strided view of it that
  // the absorbed Slices give (each resolved as the Slice would have resolved it, in order).
  struct MaskView {
    std::vector<int64_t> shape, strides;  // in elements
    int64_t offset = 0;
  };
  MaskView mask_view(const KernelContext& ctx, const ir::Tensor& mask) const {
    MaskView v{mask.shape(), dense_strides(mask.shape()), 0};
    for (size_t s = 0; s < mask_slices_.size(); ++s) {
      const size_t base = 7 + 4 * s;
      auto optional_ints = [&](size_t i) -> std::optional<std::vector<int64_t>> {
        if (!ctx.has_input(i)) return std::nullopt;
        return read_ints(ctx, i);
      };
      ops::SliceView sv;
      try {
        sv = ops::slice_view(ctx.node(), v.shape, read_ints(ctx, base), read_ints(ctx, base + 1),
                             optional_ints(base + 2), optional_ints(base + 3));
      } catch (const Error& e) {
        SY_THROW(InvalidArgument, "{} (the mask's Slice '{}', read by the fused attention)",
                 e.message(), mask_slices_[s].slice);
      }
      // sv indexes v's elements densely: its offset and strides become v's own.
      const std::vector<int64_t> dense = dense_strides(v.shape);
      int64_t rest = sv.offset, offset = v.offset;
      std::vector<int64_t> strides(v.shape.size());
      for (size_t k = 0; k < v.shape.size(); ++k) {
        const int64_t start = dense[k] > 0 ? rest / dense[k] : 0;
        rest -= start * dense[k];
        offset += start * v.strides[k];
        const int64_t step = dense[k] > 0 ? sv.strides[k] / dense[k] : 1;
        strides[k] = step * v.strides[k];
      }
      v = MaskView{sv.shape, std::move(strides), offset};
    }
    return v;
  }

  std::vector<int64_t> perm_q_, perm_k_, perm_v_, perm_out_;
  float alpha_;
  float fill_;
  AttentionMask mask_ = AttentionMask::None;
  std::vector<PackedView> views_;
  std::vector<backends::fusion::Attention::MaskSlice> mask_slices_;
};

Support check_attention(const ir::Node& node) {
  if (!node.annotation<backends::fusion::Attention>())
    return Support::no("a MatMul that is no fused attention");
  return Support::yes();
}

}  // namespace

void register_attention_kernels(runtime::KernelRegistry& r) {
  r.add(runtime::KernelDef{ops::OpKind::MatMul,
                           {DType::Float16, DType::BFloat16},
                           0,
                           check_attention,
                           runtime::make_factory<AttentionKernel>(),
                           // the views' Reshape targets, the mask Slices' parameters
                           /*host_inputs=*/{4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}});
}

}  // namespace switchyard::cuda
