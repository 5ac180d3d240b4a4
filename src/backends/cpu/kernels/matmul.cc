// CPU kernels of the matmul family: MatMul and Gemm through oneDNN's matmul for float32 (with
// constant weights packed once), plain loops for the other dtypes.
#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/dnnl_util.h"
#include "backends/cpu/kernels/epilogue.h"
#include "backends/cpu/kernels/matmul_internal.h"
#include "backends/fusion/payload.h"

namespace switchyard::cpu {

MatMulDims matmul_dims(const runtime::KernelContext& ctx, const std::vector<int64_t>& a,
                       const std::vector<int64_t>& b) {
  if (a.empty() || b.empty())
    ctx.fail("inputs must have rank >= 1, got A {} and B {}", ir::shape_to_string(a),
             ir::shape_to_string(b));
  std::vector<int64_t> as = a, bs = b;
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  MatMulDims d;
  d.m = as[as.size() - 2];
  d.k = as.back();
  d.n = bs.back();
  if (bs[bs.size() - 2] != d.k)
    ctx.fail("inner dims differ: A {} has K={} but B {} has K={}", ir::shape_to_string(a), d.k,
             ir::shape_to_string(b), bs[bs.size() - 2]);
  size_t rank = std::max(as.size(), bs.size()) - 2;
  d.a_batch.assign(rank, 1);
  d.b_batch.assign(rank, 1);
  std::copy(as.begin(), as.end() - 2, d.a_batch.end() - static_cast<std::ptrdiff_t>(as.size() - 2));
  std::copy(bs.begin(), bs.end() - 2, d.b_batch.end() - static_cast<std::ptrdiff_t>(bs.size() - 2));
  auto batch = ops::broadcast_dims({d.a_batch, d.b_batch});
  if (!batch)
    ctx.fail("batch dims of A {} and B {} cannot be broadcast", ir::shape_to_string(a),
             ir::shape_to_string(b));
  d.out_batch = *batch;
  d.batch = ir::checked_numel(d.out_batch);
  std::vector<int64_t> as_str = strides_of(d.a_batch), bs_str = strides_of(d.b_batch);
  d.a_index.resize(static_cast<size_t>(d.batch));
  d.b_index.resize(static_cast<size_t>(d.batch));
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < d.batch; ++i) {
    int64_t ai = 0, bi = 0;
    for (size_t r = 0; r < rank; ++r) {
      if (d.a_batch[r] != 1) ai += idx[r] * as_str[r];
      if (d.b_batch[r] != 1) bi += idx[r] * bs_str[r];
    }
    d.a_index[static_cast<size_t>(i)] = ai;
    d.b_index[static_cast<size_t>(i)] = bi;
    for (size_t r = rank; r-- > 0;) {
      if (++idx[r] < d.out_batch[r]) break;
      idx[r] = 0;
    }
  }
  d.out_shape = d.out_batch;
  if (!a_vec) d.out_shape.push_back(d.m);
  if (!b_vec) d.out_shape.push_back(d.n);
  return d;
}

namespace {

using MatMulTypes =
    TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;

// A oneDNN matmul prepared for one shape signature.
struct DnnlMatMulPlan {
  dnnl::matmul primitive;
  dnnl::memory::desc src_md, dst_md, bias_md;
  dnnl::memory::desc user_weights_md, weights_md;
  dnnl::memory packed_weights;  // weights_md copy of constant weights (else empty)
};

// Builds the oneDNN matmul; nullptr when oneDNN declines. Weights are packed when constant.
std::shared_ptr<DnnlMatMulPlan> make_dnnl_matmul(const dnnl::memory::desc& src,
                                                 const dnnl::memory::desc& user_weights,
                                                 const dnnl::memory::desc& bias,
                                                 const dnnl::memory::desc& dst,
                                                 const dnnl::primitive_attr& attr,
                                                 const ir::Tensor& w, bool constant_weights) {
  try {
    auto plan = std::make_shared<DnnlMatMulPlan>();
    dnnl::memory::desc wdesc =
        constant_weights ? dnnl::memory::desc(user_weights.dims(), user_weights.data_type(),
                                              dnnl::memory::format_tag::any)
                         : user_weights;
    dnnl::matmul::desc desc(src, wdesc, bias, dst);
    dnnl::matmul::primitive_desc pd(desc, attr, dnnl_engine());
    plan->src_md = pd.src_desc();
    plan->dst_md = pd.dst_desc();
    plan->bias_md = pd.bias_desc();
    plan->weights_md = pd.weights_desc();
    plan->user_weights_md = user_weights;
    if (constant_weights) {
      plan->packed_weights = dnnl::memory(plan->weights_md, dnnl_engine());
      reorder_memory(wrap_memory(w, user_weights), plan->packed_weights);
    }
    plan->primitive = dnnl::matmul(pd);
    return plan;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

void run_dnnl_matmul(const runtime::KernelContext& ctx, const DnnlMatMulPlan& plan, const void* src,
                     const ir::Tensor& w, const void* bias, void* dst) {
  dnnl::memory weights =
      plan.packed_weights ? plan.packed_weights : wrap_memory(w, plan.user_weights_md);
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, wrap_memory(src, plan.src_md)},
                                                {DNNL_ARG_WEIGHTS, weights},
                                                {DNNL_ARG_DST, wrap_memory(dst, plan.dst_md)}};
  if (bias) args[DNNL_ARG_BIAS] = wrap_memory(bias, plan.bias_md);
  execute_primitive(ctx, plan.primitive, args);
}

struct MatMulPlan {
  MatMulDims dims;
  std::shared_ptr<DnnlMatMulPlan> dnnl;
};

// A tensor read through a permutation of its dims (a folded Transpose, fusion.h): logical dim i
// is the tensor's dim perm[i], with its stride.
struct PermutedView {
  std::vector<int64_t> shape, strides;
};

PermutedView permuted_view(const ir::Tensor& t, const std::vector<int64_t>& perm) {
  std::vector<int64_t> own = strides_of(t.shape());
  PermutedView v;
  for (int64_t p : perm) {
    v.shape.push_back(t.dim(p));
    v.strides.push_back(own[static_cast<size_t>(p)]);
  }
  return v;
}

// A contiguous copy of `t` read through `perm` (Transpose(t, perm)).
ir::Tensor permuted_copy(const ir::Tensor& t, const std::vector<int64_t>& perm) {
  PermutedView v = permuted_view(t, perm);
  ir::Tensor out(t.dtype(), v.shape);
  const size_t elem = ir::dtype_size(t.dtype());
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  const size_t rank = v.shape.size();
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += index[d] * v.strides[d];
    std::memcpy(dst + static_cast<size_t>(i) * elem, src + static_cast<size_t>(off) * elem, elem);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < v.shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// The folded Transpose of operand A (`a`) or B (fusion::OperandPermutes); empty: none.
std::vector<int64_t> folded_perm(const ir::Node& node, bool a) {
  const auto* permutes = node.annotation<backends::fusion::OperandPermutes>();
  if (!permutes) return {};
  return a ? permutes->a : permutes->b;
}

// The fused scale of the product (fusion::Epilogue's alpha; 1 without one).
float fused_alpha(const ir::Node& node) {
  const auto* epilogue = node.annotation<backends::fusion::Epilogue>();
  return epilogue ? epilogue->alpha : 1.0f;
}

// MatMul, and its fused form (backends/fusion/payload.h): input 2 a bias of length N, the
// fusion::Epilogue's alpha a scale of the product and its activation:
// Y = act(alpha * (A @ B) + bias); fusion::OperandPermutes a Transpose folded into the operand
// (read through strides, no copy).
class MatMulKernel : public runtime::Kernel {
 public:
  explicit MatMulKernel(const runtime::KernelInit& init)
      : constant_b_(input_is_constant(init.node, 1)),
        alpha_(fused_alpha(init.node)),
        epilogue_(Epilogue::of(init.node)),
        perm_a_(folded_perm(init.node, true)),
        perm_b_(folded_perm(init.node, false)) {}

  void run(runtime::KernelContext& ctx) const override {
    if (!perm_a_.empty() || !perm_b_.empty()) return run_permuted(ctx);
    run_plain(ctx, ctx.input(0), ctx.input(1));
  }

 private:
  // Operands read through the folded Transposes' strides by oneDNN; where oneDNN does not take
  // them (another dtype, a shape it declines), transposed copies through the plain path.
  void run_permuted(runtime::KernelContext& ctx) const {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    auto check_perm = [&](const std::vector<int64_t>& perm, const ir::Tensor& t, const char* what) {
      if (perm.empty()) return;
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      bool ok = static_cast<int64_t>(perm.size()) == t.rank();
      for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
      if (!ok)
        ctx.fail("the folded transpose of {} has perm {}, not a permutation of its rank {}", what,
                 ir::shape_to_string(perm), t.rank());
    };
    check_perm(perm_a_, a, "A");
    check_perm(perm_b_, b, "B");
    const PermutedView va = permuted_view(a, perm_a_.empty() ? identity_perm(a.rank()) : perm_a_);
    const PermutedView vb = permuted_view(b, perm_b_.empty() ? identity_perm(b.rank()) : perm_b_);
    const ir::Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    std::vector<int64_t> key = va.shape;
    key.push_back(-1);
    key.insert(key.end(), vb.shape.begin(), vb.shape.end());
    key.push_back(-2);
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(key, [&] { return make_permuted_plan(ctx, a, b, va, vb, bias); });
    if (!plan->dnnl || plan->dims.k == 0) {
      run_plain(ctx, perm_a_.empty() ? a : permuted_copy(a, perm_a_),
                perm_b_.empty() ? b : permuted_copy(b, perm_b_));
      return;
    }
    const MatMulDims& d = plan->dims;
    check_bias(ctx, bias, a, d);
    ir::Tensor& y = ctx.allocate_output(0, a.dtype(), d.out_shape);
    if (y.numel() == 0) return;
    run_dnnl_product(ctx, *plan, a, b, bias, y);
  }

  static std::vector<int64_t> identity_perm(int64_t rank) {
    std::vector<int64_t> p(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) p[static_cast<size_t>(i)] = i;
    return p;
  }

  void check_bias(const runtime::KernelContext& ctx, const ir::Tensor* bias, const ir::Tensor& a,
                  const MatMulDims& d) const {
    if (bias && (bias->dtype() != a.dtype() || bias->shape() != std::vector<int64_t>{d.n}))
      ctx.fail("fused bias {}{} is not a vector of length N = {}", ir::dtype_name(bias->dtype()),
               ir::shape_to_string(bias->shape()), d.n);
  }

  void run_dnnl_product(const runtime::KernelContext& ctx, const MatMulPlan& plan,
                        const ir::Tensor& a, const ir::Tensor& b, const ir::Tensor* bias,
                        ir::Tensor& y) const {
    // oneDNN scales the bias with the product: give it bias / alpha.
    std::vector<float> scaled;
    const void* bias_data = bias ? bias->raw() : nullptr;
    if (bias && alpha_ != 1.0f) {
      scaled.resize(static_cast<size_t>(plan.dims.n));
      for (int64_t j = 0; j < plan.dims.n; ++j) scaled[j] = bias->data<float>()[j] / alpha_;
      bias_data = scaled.data();
    }
    run_dnnl_matmul(ctx, *plan.dnnl, a.raw(), b, bias_data, y.raw());
    epilogue_.finish(ctx.node(), y, ctx.num_threads());
  }

  // The fused epilogue as oneDNN attributes: alpha as the output scale, the activation as a
  // post-op (the bias goes in as its own argument, bias_desc).
  dnnl::primitive_attr epilogue_attr() const {
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (alpha_ != 1.0f) attr.set_output_scales(0, {alpha_});
    dnnl::post_ops ops;
    epilogue_.append_to(ops);
    if (ops.len() > 0) attr.set_post_ops(ops);
    return attr;
  }

  // The bias of length n, broadcast over every dim of a rank-`rank` result but the last.
  static dnnl::memory::desc bias_desc(size_t rank, int64_t n) {
    std::vector<int64_t> dims(rank, 1);
    dims.back() = n;
    return plain_desc(dims, dnnl::memory::data_type::f32);
  }

  std::shared_ptr<const MatMulPlan> make_permuted_plan(const runtime::KernelContext& ctx,
                                                       const ir::Tensor& a, const ir::Tensor& b,
                                                       const PermutedView& va,
                                                       const PermutedView& vb,
                                                       const ir::Tensor* bias) const {
    auto plan = std::make_shared<MatMulPlan>();
    plan->dims = matmul_dims(ctx, va.shape, vb.shape);
    const MatMulDims& d = plan->dims;
    // Strided operands of one rank (the fusion folds only such), float32.
    if (a.dtype() != DType::Float32 || va.shape.size() != vb.shape.size() || va.shape.size() < 2 ||
        va.shape.size() > 6 || d.batch * d.m * d.n == 0 || d.k == 0)
      return plan;
    if (bias && alpha_ != 1.0f && !std::isnormal(alpha_)) return plan;
    using dt = dnnl::memory::data_type;
    std::vector<int64_t> dst = d.out_batch;
    dst.insert(dst.end(), {d.m, d.n});
    const dnnl::memory::desc bias_md = bias ? bias_desc(dst.size(), d.n) : dnnl::memory::desc();
    const dnnl::primitive_attr attr = epilogue_attr();
    auto strided = [](const PermutedView& v) {
      return dnnl::memory::desc(dnnl_dims(v.shape), dt::f32, dnnl_dims(v.strides));
    };
    plan->dnnl = make_dnnl_matmul(strided(va), strided(vb), bias_md, plain_desc(dst, dt::f32), attr,
                                  b, /*constant_weights=*/false);
    return plan;
  }

  void run_plain(runtime::KernelContext& ctx, const ir::Tensor& a, const ir::Tensor& b) const {
    if (a.dtype() != b.dtype())
      ctx.fail("B has dtype {}, expected {} like A", ir::dtype_name(b.dtype()),
               ir::dtype_name(a.dtype()));
    const ir::Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    std::vector<int64_t> key = a.shape();
    key.push_back(-1);
    key.insert(key.end(), b.shape().begin(), b.shape().end());
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(key, [&] { return make_plan(ctx, a, b, bias != nullptr); });
    const MatMulDims& d = plan->dims;
    check_bias(ctx, bias, a, d);
    ir::Tensor& y = ctx.allocate_output(0, a.dtype(), d.out_shape);
    if (y.numel() == 0) return;
    if (plan->dnnl && d.k > 0) {
      run_dnnl_product(ctx, *plan, a, b, bias, y);
      return;
    }
    if (d.k == 0) {
      std::memset(y.raw(), 0, y.nbytes());
    } else {
      run_loop(ctx, d, a, b, y);
    }
    if (alpha_ != 1.0f || bias) scale_and_add_bias(ctx, d, bias, y);
    epilogue_.apply(ctx.node(), y, ctx.num_threads());
  }

 private:
  // y = alpha * y + bias (bias along the last dim), for the paths oneDNN does not take.
  void scale_and_add_bias(const runtime::KernelContext& ctx, const MatMulDims& d,
                          const ir::Tensor* bias, ir::Tensor& y) const {
    dispatch(FloatTypes{}, y.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* yp = y.data<T>();
      const T* bp = bias ? bias->data<T>() : nullptr;
      const int64_t n = std::max<int64_t>(d.n, 1);
      for (int64_t i = 0; i < y.numel(); ++i) {
        C v = static_cast<C>(alpha_) * static_cast<C>(yp[i]);
        if (bp) v += static_cast<C>(bp[i % n]);
        yp[i] = convert<T>(v);
      }
    });
  }

  void run_loop(const runtime::KernelContext& ctx, const MatMulDims& d, const ir::Tensor& a,
                const ir::Tensor& b, ir::Tensor& y) const {
    dispatch(MatMulTypes{}, a.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      if constexpr (std::is_same_v<T, C>) {
        batched_gemm<C>(d, a.data<T>(), b.data<T>(), y.data<T>(), ctx.num_threads());
      } else {
        std::vector<C> ac = to_compute<C>(a.data<T>(), a.numel());
        std::vector<C> bc = to_compute<C>(b.data<T>(), b.numel());
        std::vector<C> yc(static_cast<size_t>(y.numel()));
        batched_gemm<C>(d, ac.data(), bc.data(), yc.data(), ctx.num_threads());
        T* yp = y.data<T>();
        for (int64_t i = 0; i < y.numel(); ++i) yp[i] = convert<T>(yc[static_cast<size_t>(i)]);
      }
    });
  }

  std::shared_ptr<const MatMulPlan> make_plan(const runtime::KernelContext& ctx,
                                              const ir::Tensor& a, const ir::Tensor& b,
                                              bool has_bias) const {
    auto plan = std::make_shared<MatMulPlan>();
    plan->dims = matmul_dims(ctx, a.shape(), b.shape());
    const MatMulDims& d = plan->dims;
    if (a.dtype() != DType::Float32 || d.batch * d.m * d.n == 0 || d.k == 0) return plan;
    // A bias with a scale goes in as bias / alpha (see run): only for a normal, finite alpha.
    if (has_bias && alpha_ != 1.0f && !std::isnormal(alpha_)) return plan;
    using dt = dnnl::memory::data_type;
    std::vector<int64_t> src, wei, dst;
    if (b.rank() <= 2) {
      // One weight matrix: fold every batch dim of A into M.
      int64_t rows = d.batch * d.m;
      src = {rows, d.k};
      wei = {d.k, d.n};
      dst = {rows, d.n};
    } else {
      if (d.out_batch.size() + 2 > 6) return plan;
      src = d.a_batch;
      wei = d.b_batch;
      dst = d.out_batch;
      src.insert(src.end(), {d.m, d.k});
      wei.insert(wei.end(), {d.k, d.n});
      dst.insert(dst.end(), {d.m, d.n});
    }
    const dnnl::memory::desc bias_md = has_bias ? bias_desc(dst.size(), d.n) : dnnl::memory::desc();
    const dnnl::primitive_attr attr = epilogue_attr();
    plan->dnnl = make_dnnl_matmul(plain_desc(src, dt::f32), plain_desc(wei, dt::f32), bias_md,
                                  plain_desc(dst, dt::f32), attr, b, constant_b_);
    return plan;
  }

  bool constant_b_;
  float alpha_;                           // fusion::Epilogue's alpha
  Epilogue epilogue_;                     // fusion::Epilogue's activation
  std::vector<int64_t> perm_a_, perm_b_;  // fusion::OperandPermutes (empty: none)
  PlanCache<MatMulPlan> cache_;
};

struct GemmPlan {
  int64_t m = 0, k = 0, n = 0;
  enum class Bias { None, Row, Full } bias = Bias::None;  // Row: C is [N] or [1, N]
  std::shared_ptr<DnnlMatMulPlan> dnnl;
};

class GemmKernel : public runtime::Kernel {
 public:
  explicit GemmKernel(const runtime::KernelInit& init)
      : trans_a_(init.node.attr_int("transA", 0) != 0),
        trans_b_(init.node.attr_int("transB", 0) != 0),
        alpha_(init.node.attr_float("alpha", 1.0f)),
        beta_(init.node.attr_float("beta", 1.0f)),
        constant_b_(input_is_constant(init.node, 1)),
        epilogue_(Epilogue::of(init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    const ir::Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (b.dtype() != a.dtype() || (c && c->dtype() != a.dtype()))
      ctx.fail("inputs must share A's dtype {}", ir::dtype_name(a.dtype()));
    std::vector<int64_t> key = a.shape();
    key.push_back(-1);
    key.insert(key.end(), b.shape().begin(), b.shape().end());
    key.push_back(-1);
    if (c) key.insert(key.end(), c->shape().begin(), c->shape().end());
    OmpThreadScope threads(ctx.num_threads());
    auto plan = cache_.get(key, [&] { return make_plan(ctx, a, b, c); });
    const int64_t m = plan->m, n = plan->n;
    ir::Tensor& y = ctx.allocate_output(0, a.dtype(), {m, n});
    if (y.numel() == 0) return;
    if (plan->dnnl) {
      float* yp = y.data<float>();
      std::vector<float> scaled_bias;
      const void* bias = nullptr;
      if (plan->bias == GemmPlan::Bias::Row) {
        bias = c->raw();
        if (beta_ != 1.0f) {
          scaled_bias.resize(static_cast<size_t>(n));
          for (int64_t j = 0; j < n; ++j)
            scaled_bias[static_cast<size_t>(j)] = beta_ * c->data<float>()[j];
          bias = scaled_bias.data();
        }
      } else if (plan->bias == GemmPlan::Bias::Full) {
        fill_scaled_c<float, float>(*c, yp, m, n);
      }
      run_dnnl_matmul(ctx, *plan->dnnl, a.raw(), b, bias, yp);
      epilogue_.finish(ctx.node(), y, ctx.num_threads());
      return;
    }
    run_loop(ctx, a, b, c, y);
    epilogue_.apply(ctx.node(), y, ctx.num_threads());
  }

 private:
  void run_loop(const runtime::KernelContext& ctx, const ir::Tensor& a, const ir::Tensor& b,
                const ir::Tensor* c, ir::Tensor& y) const {
    const int64_t m = y.dim(0), n = y.dim(1), k = trans_a_ ? a.dim(0) : a.dim(1);
    dispatch(MatMulTypes{}, a.dtype(), ctx.node(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      const T* ap = a.data<T>();
      const T* bp = b.data<T>();
      std::vector<C> yc(static_cast<size_t>(m * n), C(0));
      if (c && beta_ != 0.0f) fill_scaled_c<T, C>(*c, yc.data(), m, n);
      // Integer results scale in double so a fractional alpha does not truncate to 0 first.
      auto scale = [&](C v) {
        if constexpr (std::is_integral_v<C>) {
          if (alpha_ == 1.0f) return v;
          return static_cast<C>(static_cast<double>(alpha_) * static_cast<double>(v));
        } else {
          return static_cast<C>(alpha_) * v;
        }
      };
      parallel_for(m, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, k * n)), ctx.num_threads(),
                   [&](int64_t lo, int64_t hi) {
                     std::vector<C> row(static_cast<size_t>(n));
                     for (int64_t i = lo; i < hi; ++i) {
                       std::fill(row.begin(), row.end(), C(0));
                       for (int64_t kk = 0; kk < k; ++kk) {
                         C av = static_cast<C>(ap[trans_a_ ? kk * m + i : i * k + kk]);
                         for (int64_t j = 0; j < n; ++j)
                           row[static_cast<size_t>(j)] +=
                               av * static_cast<C>(bp[trans_b_ ? j * k + kk : kk * n + j]);
                       }
                       for (int64_t j = 0; j < n; ++j)
                         yc[static_cast<size_t>(i * n + j)] += scale(row[static_cast<size_t>(j)]);
                     }
                   });
      T* yp = y.data<T>();
      for (int64_t i = 0; i < m * n; ++i) yp[i] = convert<T>(yc[static_cast<size_t>(i)]);
    });
  }

  // out[i, j] = beta * C broadcast to [M, N], for C of storage type T.
  template <typename T, typename Cv>
  void fill_scaled_c(const ir::Tensor& c, Cv* out, int64_t m, int64_t n) const {
    std::vector<int64_t> cs = c.shape();
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    const int64_t row_stride = cs[0] == 1 ? 0 : cs[1], col_stride = cs[1] == 1 ? 0 : 1;
    const T* cp = c.data<T>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        auto v = static_cast<compute_t<T>>(cp[i * row_stride + j * col_stride]);
        out[i * n + j] = beta_ == 1.0f
                             ? static_cast<Cv>(v)
                             : static_cast<Cv>(static_cast<double>(beta_) * static_cast<double>(v));
      }
  }

  std::shared_ptr<const GemmPlan> make_plan(const runtime::KernelContext& ctx, const ir::Tensor& a,
                                            const ir::Tensor& b, const ir::Tensor* c) const {
    if (a.rank() != 2 || b.rank() != 2)
      ctx.fail("A {} and B {} must be matrices", ir::shape_to_string(a.shape()),
               ir::shape_to_string(b.shape()));
    auto plan = std::make_shared<GemmPlan>();
    plan->m = trans_a_ ? a.dim(1) : a.dim(0);
    plan->k = trans_a_ ? a.dim(0) : a.dim(1);
    plan->n = trans_b_ ? b.dim(0) : b.dim(1);
    int64_t kb = trans_b_ ? b.dim(1) : b.dim(0);
    if (kb != plan->k)
      ctx.fail("inner dims differ: A {} (transA={}) and B {} (transB={})",
               ir::shape_to_string(a.shape()), int{trans_a_}, ir::shape_to_string(b.shape()),
               int{trans_b_});
    if (c) {
      std::vector<int64_t> cs = c->shape();
      if (cs.size() > 2) ctx.fail("C has shape {}, expected rank <= 2", ir::shape_to_string(cs));
      while (cs.size() < 2) cs.insert(cs.begin(), 1);
      if ((cs[0] != 1 && cs[0] != plan->m) || (cs[1] != 1 && cs[1] != plan->n))
        ctx.fail("C {} cannot be broadcast to [{}, {}]", ir::shape_to_string(c->shape()), plan->m,
                 plan->n);
      if (beta_ != 0.0f)
        plan->bias = cs[0] == 1 && cs[1] == plan->n && alpha_ == 1.0f ? GemmPlan::Bias::Row
                                                                      : GemmPlan::Bias::Full;
    }
    if (a.dtype() != DType::Float32 || plan->m * plan->n == 0 || plan->k == 0) return plan;
    using dt = dnnl::memory::data_type;
    const int64_t m = plan->m, k = plan->k, n = plan->n;
    dnnl::memory::desc src({m, k}, dt::f32,
                           trans_a_ ? dnnl::memory::dims{1, m} : dnnl::memory::dims{k, 1});
    dnnl::memory::desc wei({k, n}, dt::f32,
                           trans_b_ ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1});
    dnnl::memory::desc bias = plan->bias == GemmPlan::Bias::Row
                                  ? dnnl::memory::desc({1, n}, dt::f32, dnnl::memory::dims{n, 1})
                                  : dnnl::memory::desc();
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (alpha_ != 1.0f) attr.set_output_scales(0, {alpha_});
    dnnl::post_ops ops;
    if (plan->bias == GemmPlan::Bias::Full) ops.append_sum(1.0f);
    epilogue_.append_to(ops);
    if (ops.len() > 0) attr.set_post_ops(ops);
    plan->dnnl =
        make_dnnl_matmul(src, wei, bias, plain_desc({m, n}, dt::f32), attr, b, constant_b_);
    return plan;
  }

  bool trans_a_, trans_b_;
  float alpha_, beta_;
  bool constant_b_;
  Epilogue epilogue_;  // fusion::Epilogue's activation
  PlanCache<GemmPlan> cache_;
};

}  // namespace

void register_matmul_kernels(runtime::KernelRegistry& r) {
  r.add<MatMulKernel>(ops::OpKind::MatMul, dtypes_of(MatMulTypes{}));
  r.add<GemmKernel>(ops::OpKind::Gemm, dtypes_of(MatMulTypes{}));
  register_matmul_quant_kernels(r);
  register_matmul_einsum_kernels(r);
}

}  // namespace switchyard::cpu
