// The fused attention kernel, host side: the MatMul that fuse_attention made
// (backends/fusion/attention.cc; its fusion::Attention), for float16 and bfloat16. It resolves the
// run-time shapes as the unfused nodes would have: Q, K and V read through their permutations as
// [batch, heads, sequence, dim], batch and head dims broadcast as MatMul's (size 1 against
// any), Q's and K's head dims and K's and V's lengths equal, the mask broadcast into the scores
// [batch, heads, query, key] (it may widen the batch, head and query dims, as the unfused Add
// would), and fails naming the node where they would have failed. Device code: attention.cu.
#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/attention_impl.h"
#include "backends/fusion/payload.h"
#include "ops/op_kind.h"

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

View view_of(const KernelContext& ctx, const ir::Tensor& t, const std::vector<int64_t>& perm,
             const char* what) {
  if (t.rank() != 4)
    ctx.fail("{} has shape {}; fused attention reads rank-4 operands", what,
             ir::shape_to_string(t.shape()));
  const std::vector<int64_t> st = dense_strides(t.shape());
  View v;
  for (size_t i = 0; i < 4; ++i) {
    const size_t p = static_cast<size_t>(perm[i]);
    v.dims[i] = t.shape()[p];
    v.strides[i] = t.shape()[p] == 1 ? 0 : st[p];
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
        mask_(mask_of(a.mask)) {
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
    const View qv = view_of(ctx, q, perm_q_, "Q");
    const View kv = view_of(ctx, k, perm_k_, "K");
    const View vv = view_of(ctx, v, perm_v_, "V");
    if (qv.dims[3] != kv.dims[3])
      ctx.fail("inner dims differ: Q's head dim is {} but K's is {}", qv.dims[3], kv.dims[3]);
    if (kv.dims[2] != vv.dims[2])
      ctx.fail("inner dims differ: the scores have {} keys but V has {} rows", kv.dims[2],
               vv.dims[2]);
    // The mask broadcast into [batch, heads, query, key], right-aligned.
    const ir::Tensor* mask = mask_ != AttentionMask::None ? &ctx.input(3) : nullptr;
    int64_t mdims[4] = {1, 1, 1, 1}, mstrides[4] = {0, 0, 0, 0};
    if (mask) {
      const DType want = mask_ == AttentionMask::Add ? dtype : DType::Bool;
      if (mask->dtype() != want)
        ctx.fail("the attention mask is {}, expected {}", ir::dtype_name(mask->dtype()),
                 ir::dtype_name(want));
      if (mask->rank() > 4)
        ctx.fail("the attention mask has shape {}, of more than 4 dims",
                 ir::shape_to_string(mask->shape()));
      const std::vector<int64_t> st = dense_strides(mask->shape());
      const size_t off = 4 - static_cast<size_t>(mask->rank());
      for (size_t i = 0; i < mask->shape().size(); ++i) {
        mdims[off + i] = mask->shape()[i];
        mstrides[off + i] = mask->shape()[i] == 1 ? 0 : st[i];
      }
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
    const CudaRunContext& rc = run_context(ctx);
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
    a.q = q.raw();
    a.k = k.raw();
    a.v = v.raw();
    a.out = y.raw();
    a.alpha = alpha_;
    a.mask_kind = mask_;
    a.mask = mask ? mask->raw() : nullptr;
    a.fill = fill_;
    SY_CUDA_CHECK(launch_attention(a, rc.stream));
  }

 private:
  std::vector<int64_t> perm_q_, perm_k_, perm_v_, perm_out_;
  float alpha_;
  float fill_;
  AttentionMask mask_ = AttentionMask::None;
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
                           runtime::make_factory<AttentionKernel>()});
}

}  // namespace switchyard::cuda
