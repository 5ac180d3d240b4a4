// CUDA kernels of the matmul family: MatMul (numpy rules, broadcast batches, optional fused
// bias and activation) and Gemm (alpha, beta, transposes, C broadcast, optional fused
// activation) through cuBLASLt, for float32 (TF32 under --precision tf32), float16 and bfloat16
// (fp32 accumulation) and float64.
//
// Layout: ONNX tensors are row-major and cuBLASLt is column-major by default, so each product
// Y = op(A) op(B) is computed as Y^T = op(B)^T op(A)^T: a row-major [R, C] matrix read
// column-major is its transpose, so no data moves — B is passed as cuBLASLt's A and A as its B.
// Y's column-major rows are the ONNX columns, which is also where cuBLASLt's bias vector (one
// value per D row) runs: a bias of length N is a plain BIAS epilogue.
//
// Batches: the broadcast batch dims are split into an outer part, one cuBLASLt call each, and
// the longest inner suffix in which each operand either follows the output (stride one matrix)
// or is broadcast (stride 0) — one strided batched call for every common case. When B is
// broadcast over the inner batches, A's batches are folded into M (one plain GEMM).
//
// Permuted operands (a Transpose folded into the MatMul as a fusion::OperandPermutes,
// backends/fusion/matmul_layout.cc): the operand is its input read through the permuted
// strides. Where a matrix dim has unit stride, the other a leading dimension, and the batch dims
// either broadcast or follow the output with one stride between matrices, cuBLASLt reads it in
// place (one strided batched call; attention's head split at batch 1); otherwise the operand is
// first copied into that order (the Transpose's own copy, data.cu).
//
// Per shape (and pointer alignments, workspace, precision) the descriptors, layouts and the
// heuristic's algorithm are built once and kept in a bounded cache in the kernel object.
// cuBLASLt's GELU epilogue is the tanh approximation: "GeluTanh" runs there, "Gelu" (erf form)
// as our own kernel after the product (matmul.cu); float64, a misaligned bias, or a combination
// cuBLASLt has no algorithm for take the same own-kernel epilogue.
//
// A WideProduct (precision.h: absorb_product_casts) writes its float16/bfloat16 product as
// float32: D (and C) are float32 matrices over the 16-bit A and B, with compute and scale type
// float32 as for a 16-bit D. cuBLASLt's bias follows D's type, so a 16-bit bias (or Gemm C) is
// widened into scratch first (the pass already widened constant ones).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <list>
#include <map>
#include <mutex>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/data_host.h"
#include "backends/cuda/kernels/matmul_impl.h"
#include "backends/cuda/precision.h"
#include "backends/fusion/payload.h"
#include "ir/check.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using backends::fusion::Activation;
constexpr uint32_t kMaxAlignment = 256;  // what cuBLASLt's alignment preferences assume at most
constexpr uint32_t kBiasEpilogueAlignment = 16;

const std::vector<ir::DType>& matmul_dtypes() {
  static const std::vector<ir::DType> v = {ir::DType::Float32, ir::DType::Float16,
                                           ir::DType::BFloat16, ir::DType::Float64};
  return v;
}

// ---- Attribute and shape checks -------------------------------------------------------------

// The activation of the node's fusion::Epilogue, or nullopt with `why` set when cuda has none.
std::optional<MatMulActivation> activation_of(const ir::Node& node, std::string* why) {
  const auto* epilogue = node.annotation<backends::fusion::Epilogue>();
  if (!epilogue) return MatMulActivation::None;
  switch (epilogue->activation) {
    case Activation::None:
      return MatMulActivation::None;
    case Activation::Relu:
      return MatMulActivation::Relu;
    case Activation::Gelu:
      return MatMulActivation::Gelu;
    case Activation::GeluTanh:
      return MatMulActivation::GeluTanh;
    default:
      break;
  }
  if (why)
    *why = fmt::format("{} with fused activation '{}' (cuda implements Relu, Gelu and GeluTanh)",
                       node.op_type(), backends::fusion::activation_name(epilogue->activation));
  return std::nullopt;
}

// The fused scale of the product (the fusion::Epilogue's alpha; 1 without one).
float fused_alpha(const ir::Node& node) {
  const auto* epilogue = node.annotation<backends::fusion::Epilogue>();
  return epilogue ? epilogue->alpha : 1.0f;
}

// The folded Transpose of operand A (`a`) or B (fusion::OperandPermutes); empty: none.
std::vector<int64_t> folded_perm(const ir::Node& node, bool a) {
  const auto* permutes = node.annotation<backends::fusion::OperandPermutes>();
  if (!permutes) return {};
  return a ? permutes->a : permutes->b;
}

MatMulActivation activation_or_throw(const ir::Node& node) {
  std::string why;
  auto act = activation_of(node, &why);
  if (!act) SY_THROW(Unsupported, "{}: {}", node.describe(), why);
  return *act;
}

// Whether the node is a WideProduct; throws when its output 0 is not float32 (the pass that marks
// it makes it so).
bool wide_result(const ir::Node& node) {
  if (!node.annotation<WideProduct>()) return false;
  const ir::Value* y = node.output(0);
  SY_CHECK(y && y->type().is_tensor() && y->type().dtype == ir::DType::Float32, Internal,
           "{}: marked to write float32, but its output is {}", node.describe(),
           y && y->type().is_tensor() ? ir::dtype_name(y->type().dtype) : "no tensor");
  return true;
}

bool has_rank_zero_input(const ir::Node& node, size_t count) {
  for (size_t i = 0; i < std::min(count, node.num_inputs()); ++i) {
    const ir::Value* v = node.input(i);
    if (v && v->type().has_rank() && v->type().rank() == 0) return true;
  }
  return false;
}

bool is_narrow_float(ir::DType d) { return d == ir::DType::Float16 || d == ir::DType::BFloat16; }

// A WideProduct's types as the node declares them: float16/bfloat16 operands, a float32 result.
runtime::Support check_wide_product(const ir::Node& node) {
  if (!node.annotation<WideProduct>()) return runtime::Support::yes();
  const ir::Value* a = node.input(0);
  const ir::Value* y = node.output(0);
  if (a && a->type().is_tensor() && a->type().dtype != ir::DType::Undefined &&
      !is_narrow_float(a->type().dtype))
    return runtime::Support::no(fmt::format(
        "{} writing a float32 result from {} operands (cuda does so from float16 and bfloat16)",
        node.op_type(), ir::dtype_name(a->type().dtype)));
  if (!y || !y->type().is_tensor() || y->type().dtype != ir::DType::Float32)
    return runtime::Support::no(fmt::format(
        "{} marked to write float32 with a result that is not float32", node.op_type()));
  return runtime::Support::yes();
}

runtime::Support check_matmul(const ir::Node& node) {
  if (node.annotation<backends::fusion::Attention>())
    return runtime::Support::no(
        "fused attention (its kernel, attention.cc, takes float16 and bfloat16)");
  if (node.num_inputs() > 3)
    return runtime::Support::no(
        fmt::format("MatMul with {} inputs (cuda takes A, B and a fused bias)", node.num_inputs()));
  if (has_rank_zero_input(node, 2)) return runtime::Support::no("MatMul of a rank-0 input");
  if (const ir::Value* bias = node.input(2);
      bias && bias->type().has_rank() && bias->type().rank() != 1)
    return runtime::Support::no("MatMul with a fused bias that is not 1-D");
  std::string why;
  if (!activation_of(node, &why)) return runtime::Support::no(why);
  return check_wide_product(node);
}

runtime::Support check_gemm(const ir::Node& node) {
  std::string why;
  if (!activation_of(node, &why)) return runtime::Support::no(why);
  return check_wide_product(node);
}

// numpy.matmul dims of one call (1-D operands promoted, batch dims broadcast and padded to one
// rank); fails naming the node like the cpu kernel.
struct MatMulShape {
  std::vector<int64_t> out_shape;
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> a_batch, b_batch, out_batch;
};

MatMulShape matmul_shape(const runtime::KernelContext& ctx, const std::vector<int64_t>& a,
                         const std::vector<int64_t>& b) {
  if (a.empty() || b.empty())
    ctx.fail("inputs must have rank >= 1, got A {} and B {}", ir::shape_to_string(a),
             ir::shape_to_string(b));
  std::vector<int64_t> as = a, bs = b;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  MatMulShape s;
  s.m = as[as.size() - 2];
  s.k = as.back();
  s.n = bs.back();
  if (bs[bs.size() - 2] != s.k)
    ctx.fail("inner dims differ: A {} has K={} but B {} has K={}", ir::shape_to_string(a), s.k,
             ir::shape_to_string(b), bs[bs.size() - 2]);
  const size_t rank = std::max(as.size(), bs.size()) - 2;
  s.a_batch.assign(rank, 1);
  s.b_batch.assign(rank, 1);
  std::copy(as.begin(), as.end() - 2, s.a_batch.end() - static_cast<std::ptrdiff_t>(as.size() - 2));
  std::copy(bs.begin(), bs.end() - 2, s.b_batch.end() - static_cast<std::ptrdiff_t>(bs.size() - 2));
  auto batch = ops::broadcast_dims({s.a_batch, s.b_batch});
  if (!batch)
    ctx.fail("batch dims of A {} and B {} cannot be broadcast", ir::shape_to_string(a),
             ir::shape_to_string(b));
  s.out_batch = *batch;
  s.out_shape = s.out_batch;
  if (!a_vec) s.out_shape.push_back(s.m);
  if (!b_vec) s.out_shape.push_back(s.n);
  ir::checked_numel(s.out_shape);
  return s;
}

// ---- cuBLASLt plans -----------------------------------------------------------------------

uint32_t alignment_of(uintptr_t address) {
  if (address == 0) return kMaxAlignment;
  return static_cast<uint32_t>(std::min<uintptr_t>(address & (~address + 1), kMaxAlignment));
}
uint32_t alignment_of(const void* p) { return alignment_of(reinterpret_cast<uintptr_t>(p)); }

// Element offsets of one cuBLASLt call into A, B and Y.
struct Launch {
  int64_t a = 0, b = 0, y = 0;
};

// One row-major product per launch: batch_count matrices Y[M, N] = op(A) op(B) (+ C, bias,
// activation), strided by a_stride / b_stride elements (0: broadcast) and M*N in Y.
struct Problem {
  ir::DType dtype = ir::DType::Float32;      // A's and B's
  ir::DType out_dtype = ir::DType::Float32;  // Y's (and the bias's): dtype, or float32 (wide)
  bool tf32 = false;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0;  // leading dims of the stored matrices; 0: dense
  int64_t batch_count = 1;
  int64_t a_stride = 0, b_stride = 0;
  std::vector<Launch> launches = {Launch{}};
  bool bias = false;  // a length-N bias is added (before the activation)
  MatMulActivation act = MatMulActivation::None;
  uint32_t align_a = kMaxAlignment, align_b = kMaxAlignment, align_y = kMaxAlignment;
  uint32_t align_bias = kMaxAlignment;
  size_t workspace_bytes = 0;
};

struct LtTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

std::optional<LtTypes> lt_types(ir::DType dtype, bool tf32) {
  switch (dtype) {
    case ir::DType::Float32:
      return LtTypes{CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                     CUDA_R_32F};
    case ir::DType::Float16:
      return LtTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case ir::DType::BFloat16:
      return LtTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F};
    case ir::DType::Float64:
      return LtTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F};
    default:
      return std::nullopt;
  }
}

struct MatmulDesc {
  cublasLtMatmulDesc_t handle = nullptr;
  MatmulDesc() = default;
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
  ~MatmulDesc() {
    if (handle) cublasLtMatmulDescDestroy(handle);
  }
};

struct Layout {
  cublasLtMatrixLayout_t handle = nullptr;
  Layout() = default;
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
  ~Layout() {
    if (handle) cublasLtMatrixLayoutDestroy(handle);
  }
};

struct Preference {
  cublasLtMatmulPreference_t handle = nullptr;
  Preference() = default;
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  ~Preference() {
    if (handle) cublasLtMatmulPreferenceDestroy(handle);
  }
};

// What a problem lowers to: everything cublasLtMatmul needs but the data pointers.
struct LtPlan {
  ir::DType dtype = ir::DType::Float32;      // A's and B's
  ir::DType out_dtype = ir::DType::Float32;  // Y's and the bias's
  cudaDataType_t scale_type = CUDA_R_32F;
  int64_t n = 0;
  MatmulDesc desc;
  Layout lt_a, lt_b, lt_d;  // cuBLASLt's A is our B, its B our A (see the file comment)
  cublasLtMatmulAlgo_t algo{};
  std::vector<Launch> launches;
  bool lt_bias = false;   // bias through the cuBLASLt epilogue
  bool own_bias = false;  // bias through launch_bias_activation
  MatMulActivation own_act = MatMulActivation::None;
  // The bias pointer is an attribute of the shared descriptor: set it and enqueue under this.
  mutable std::mutex bias_mutex;
};

void create_layout(Layout& layout, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                   int64_t batch_count, int64_t batch_stride) {
  SY_CUDA_CHECK(cublasLtMatrixLayoutCreate(&layout.handle, type, static_cast<uint64_t>(rows),
                                           static_cast<uint64_t>(cols), ld));
  if (batch_count == 1) return;
  const auto count = static_cast<int32_t>(batch_count);
  SY_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(layout.handle, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                 &count, sizeof(count)));
  SY_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(layout.handle,
                                                 CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                 &batch_stride, sizeof(batch_stride)));
}

// The heuristic's best algorithm for `epilogue`, or false when cuBLASLt has none.
bool find_algo(cublasLtHandle_t handle, LtPlan& plan, const Problem& p, cublasLtEpilogue_t epilogue,
               const void* bias) {
  SY_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan.desc.handle, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                               &epilogue, sizeof(epilogue)));
  if (epilogue & CUBLASLT_EPILOGUE_BIAS) {
    // The heuristic reads the pointer's alignment (never its data); the cache key holds it.
    SY_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc.handle, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  Preference pref;
  SY_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref.handle));
  const uint64_t workspace = p.workspace_bytes;
  SY_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.handle, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.align_y},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.align_y}};
  for (const auto& [attr, bytes] : alignments)
    SY_CUDA_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.handle, attr, &bytes, sizeof(bytes)));
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle, plan.desc.handle, plan.lt_a.handle, plan.lt_b.handle, plan.lt_d.handle,
      plan.lt_d.handle, pref.handle, 1, &result, &count);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && count == 0))
    return false;
  SY_CUDA_CHECK(status);
  plan.algo = result.algo;
  return true;
}

// Lowers a problem: descriptors, layouts, and the algorithm with the epilogue cuBLASLt can do
// (bias, Relu, the tanh GELU), leaving the rest to launch_bias_activation.
std::shared_ptr<const LtPlan> build_plan(const runtime::KernelContext& ctx, cublasLtHandle_t handle,
                                         const Problem& p, const void* bias) {
  const LtTypes types = *lt_types(p.dtype, p.tf32);  // the kernels checked the dtypes
  const cudaDataType_t d_type = lt_types(p.out_dtype, false)->data;
  if (p.batch_count > INT32_MAX)
    ctx.fail("{} matrices in one batch exceed cuBLASLt's limit", p.batch_count);
  auto plan = std::make_shared<LtPlan>();
  plan->dtype = p.dtype;
  plan->out_dtype = p.out_dtype;
  plan->scale_type = types.scale;
  plan->n = p.n;
  plan->launches = p.launches;

  SY_CUDA_CHECK(cublasLtMatmulDescCreate(&plan->desc.handle, types.compute, types.scale));
  const int32_t op_a = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t op_b = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  SY_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan->desc.handle, CUBLASLT_MATMUL_DESC_TRANSA,
                                               &op_a, sizeof(op_a)));
  SY_CUDA_CHECK(cublasLtMatmulDescSetAttribute(plan->desc.handle, CUBLASLT_MATMUL_DESC_TRANSB,
                                               &op_b, sizeof(op_b)));
  // Row-major B [K, N] (transB: [N, K]) read column-major; likewise A [M, K] (transA: [K, M]).
  if (p.trans_b) {
    create_layout(plan->lt_a, types.data, p.k, p.n, p.ldb ? p.ldb : p.k, p.batch_count, p.b_stride);
  } else {
    create_layout(plan->lt_a, types.data, p.n, p.k, p.ldb ? p.ldb : p.n, p.batch_count, p.b_stride);
  }
  if (p.trans_a) {
    create_layout(plan->lt_b, types.data, p.m, p.k, p.lda ? p.lda : p.m, p.batch_count, p.a_stride);
  } else {
    create_layout(plan->lt_b, types.data, p.k, p.m, p.lda ? p.lda : p.k, p.batch_count, p.a_stride);
  }
  create_layout(plan->lt_d, d_type, p.n, p.m, p.n, p.batch_count, p.m * p.n);

  // cuBLASLt's epilogues for what they compute exactly; float64 and a bias it cannot read
  // aligned use our kernel.
  const bool lt_epilogues = p.dtype != ir::DType::Float64;
  const bool lt_bias = lt_epilogues && p.bias && p.align_bias >= kBiasEpilogueAlignment;
  const bool lt_relu = lt_epilogues && p.act == MatMulActivation::Relu;
  const bool lt_gelu = lt_epilogues && p.act == MatMulActivation::GeluTanh;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (lt_bias)
    epilogue = lt_relu   ? CUBLASLT_EPILOGUE_RELU_BIAS
               : lt_gelu ? CUBLASLT_EPILOGUE_GELU_BIAS
                         : CUBLASLT_EPILOGUE_BIAS;
  else if (lt_relu && !p.bias)
    epilogue = CUBLASLT_EPILOGUE_RELU;
  else if (lt_gelu && !p.bias)
    epilogue = CUBLASLT_EPILOGUE_GELU;
  // An activation after an own-kernel bias must wait for that bias.
  const bool act_in_lt =
      epilogue == CUBLASLT_EPILOGUE_RELU || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
      epilogue == CUBLASLT_EPILOGUE_GELU || epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  if (find_algo(handle, *plan, p, epilogue, bias)) {
    plan->lt_bias = lt_bias;
    plan->own_bias = p.bias && !lt_bias;
    plan->own_act = act_in_lt ? MatMulActivation::None : p.act;
  } else if (epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
             find_algo(handle, *plan, p, CUBLASLT_EPILOGUE_DEFAULT, nullptr)) {
    plan->own_bias = p.bias;
    plan->own_act = p.act;
  } else {
    SY_THROW(Unsupported,
             "{}: cuBLASLt has no algorithm for {} [{}x{}] @ [{}x{}] -> {} (batch {}, transA {}, "
             "transB {})",
             ctx.node().describe(), ir::dtype_name(p.dtype), p.m, p.k, p.k, p.n,
             ir::dtype_name(p.out_dtype), p.batch_count, int{p.trans_a}, int{p.trans_b});
  }
  return plan;
}

// Enqueues a plan on the run's stream: one cublasLtMatmul per launch, then our epilogue kernel.
void run_plan(const LtPlan& plan, const CudaRunContext& rc, const void* a, const void* b, void* y,
              int64_t y_numel, const void* bias, double alpha, double beta) {
  const size_t elem = ir::dtype_size(plan.dtype), out_elem = ir::dtype_size(plan.out_dtype);
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const bool f64 = plan.scale_type == CUDA_R_64F;
  const void* alpha_p = f64 ? static_cast<const void*>(&alpha) : &alpha_f;
  const void* beta_p = f64 ? static_cast<const void*>(&beta) : &beta_f;
  const char* a_bytes = static_cast<const char*>(a);
  const char* b_bytes = static_cast<const char*>(b);
  char* y_bytes = static_cast<char*>(y);
  auto bytes = [elem](int64_t offset) { return static_cast<size_t>(offset) * elem; };
  auto out_bytes = [out_elem](int64_t offset) { return static_cast<size_t>(offset) * out_elem; };
  std::unique_lock<std::mutex> lock(plan.bias_mutex, std::defer_lock);
  if (plan.lt_bias) {
    lock.lock();
    SY_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
        plan.desc.handle, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  }
  for (const Launch& l : plan.launches) {
    void* d = y_bytes + out_bytes(l.y);
    SY_CUDA_CHECK(cublasLtMatmul(rc.cublaslt, plan.desc.handle, alpha_p, b_bytes + bytes(l.b),
                                 plan.lt_a.handle, a_bytes + bytes(l.a), plan.lt_b.handle, beta_p,
                                 d, plan.lt_d.handle, d, plan.lt_d.handle, &plan.algo, rc.workspace,
                                 rc.workspace_bytes, rc.stream));
  }
  if (lock.owns_lock()) lock.unlock();
  if (plan.own_bias || plan.own_act != MatMulActivation::None)
    SY_CUDA_CHECK(launch_bias_activation(plan.out_dtype, y, plan.own_bias ? bias : nullptr,
                                         y_numel / plan.n, plan.n, plan.own_act, rc.stream));
}

// A bounded map from a shape key to its plan, least recently used evicted. Thread-safe; a plan
// is built outside the lock (two runs meeting a new shape at once may both build it).
class PlanCache {
 public:
  template <typename Make>
  std::shared_ptr<const LtPlan> get(const std::vector<int64_t>& key, Make make) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        return it->second->second;
      }
    }
    std::shared_ptr<const LtPlan> plan = make();
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->second;
    lru_.emplace_front(key, plan);
    index_[key] = lru_.begin();
    if (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return plan;
  }

 private:
  static constexpr size_t kCapacity = 64;
  using Entry = std::pair<std::vector<int64_t>, std::shared_ptr<const LtPlan>>;
  mutable std::mutex mutex_;
  mutable std::list<Entry> lru_;
  mutable std::map<std::vector<int64_t>, std::list<Entry>::iterator> index_;
};

void append_shape(std::vector<int64_t>& key, const std::vector<int64_t>& shape) {
  key.push_back(static_cast<int64_t>(shape.size()));
  key.insert(key.end(), shape.begin(), shape.end());
}

// The smallest alignment `base` keeps at every launch offset of one operand.
uint32_t launch_alignment(uint32_t base, const std::vector<Launch>& launches,
                          int64_t Launch::*offset, size_t elem) {
  uint32_t align = base;
  for (const Launch& l : launches)
    align = std::min(align, alignment_of(static_cast<uintptr_t>(l.*offset) * elem));
  return align;
}

// Fills the batch part of a MatMul problem (see the file comment).
void plan_batches(const MatMulShape& s, Problem& p) {
  const size_t rank = s.out_batch.size();
  // Grow the inner suffix [split, rank) while each operand follows the output or is broadcast.
  size_t split = rank;
  bool a_bcast = true, b_bcast = true;
  while (split > 0) {
    bool af = true, ab = true, bf = true, bb = true;
    for (size_t d = split - 1; d < rank; ++d) {
      af = af && s.a_batch[d] == s.out_batch[d];
      ab = ab && s.a_batch[d] == 1;
      bf = bf && s.b_batch[d] == s.out_batch[d];
      bb = bb && s.b_batch[d] == 1;
    }
    if (!(af || ab) || !(bf || bb)) break;
    --split;
    a_bcast = ab;
    b_bcast = bb;
  }
  int64_t inner = 1, outer = 1;
  for (size_t d = split; d < rank; ++d) inner *= s.out_batch[d];
  for (size_t d = 0; d < split; ++d) outer *= s.out_batch[d];
  p.m = s.m;
  if (b_bcast) {
    p.m = s.m * inner;  // A's inner matrices are contiguous rows against one B
  } else {
    p.batch_count = inner;
    p.a_stride = a_bcast ? 0 : s.m * s.k;
    p.b_stride = s.k * s.n;
  }
  // Outer launches: offsets of each outer batch index in A's and B's own batch dims.
  std::vector<int64_t> a_str(rank, 1), b_str(rank, 1);
  for (size_t d = rank; d-- > 1;) {
    a_str[d - 1] = a_str[d] * s.a_batch[d];
    b_str[d - 1] = b_str[d] * s.b_batch[d];
  }
  p.launches.clear();
  std::vector<int64_t> idx(split, 0);
  for (int64_t o = 0; o < outer; ++o) {
    Launch l;
    for (size_t d = 0; d < split; ++d) {
      if (s.a_batch[d] != 1) l.a += idx[d] * a_str[d];
      if (s.b_batch[d] != 1) l.b += idx[d] * b_str[d];
    }
    l.a *= s.m * s.k;
    l.b *= s.k * s.n;
    l.y = o * inner * s.m * s.n;
    p.launches.push_back(l);
    for (size_t d = split; d-- > 0;) {
      if (++idx[d] < s.out_batch[d]) break;
      idx[d] = 0;
    }
  }
}

// A MatMul operand as the product reads it: its input, through a folded permutation or not.
struct Operand {
  const void* data = nullptr;
  std::vector<int64_t> shape;    // the operand's (permuted) shape
  std::vector<int64_t> strides;  // in elements of its input, per dim of `shape`
  bool permuted = false;         // strides are not the dense row-major ones of `shape`
};

// The operand input `t` is, read through `perm` (empty: as it is); fails naming `what` when the
// permutation does not fit t.
Operand operand_of(const runtime::KernelContext& ctx, const ir::Tensor& t,
                   const std::vector<int64_t>& perm, const char* what) {
  Operand o;
  o.data = t.raw();
  const std::vector<int64_t> dense = movement::strides_of(t.shape());
  if (perm.empty()) {
    o.shape = t.shape();
    o.strides = dense;
    return o;
  }
  if (static_cast<int64_t>(perm.size()) != t.rank())
    ctx.fail("the folded permutation of {} has {} entries for an input of rank {}", what,
             perm.size(), t.rank());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i];
    if (p < 0 || p >= t.rank() || seen[static_cast<size_t>(p)])
      ctx.fail("the folded permutation [{}] of {} is not a permutation of its {} dims",
               fmt::join(perm, ","), what, t.rank());
    seen[static_cast<size_t>(p)] = true;
    o.shape.push_back(t.dim(p));
    o.strides.push_back(dense[static_cast<size_t>(p)]);
    o.permuted = o.permuted || p != static_cast<int64_t>(i);
  }
  return o;
}

// How cuBLASLt reads one operand of a strided batched call: its stored matrix (transposed or
// not) with leading dimension ld, and the stride between its matrices (0: broadcast).
struct StridedOperand {
  bool trans = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

// Whether operand `o` (rank >= 2) is readable in place against the output's batch dims
// `out_batch`: a matrix dim of unit stride and the other a leading dimension, and batch dims
// that all broadcast or that equal the output's and step by one stride.
bool strided_operand(const Operand& o, const std::vector<int64_t>& out_batch, StridedOperand& r) {
  const size_t rank = o.shape.size();
  if (rank < 2) return false;
  const size_t nb = rank - 2;
  bool broadcast = true;
  for (size_t d = 0; d < nb; ++d) broadcast = broadcast && o.shape[d] == 1;
  r.batch_stride = 0;
  if (!broadcast) {
    if (nb > out_batch.size()) return false;
    const size_t pad = out_batch.size() - nb;
    for (size_t d = 0; d < out_batch.size(); ++d)
      if ((d < pad ? 1 : o.shape[d - pad]) != out_batch[d]) return false;
    int64_t stride = -1, span = 1;  // walking the batch dims outward
    for (size_t d = nb; d-- > 0;) {
      if (o.shape[d] == 1) continue;
      if (stride < 0) {
        stride = o.strides[d];
      } else if (o.strides[d] != stride * span) {
        return false;
      }
      span *= o.shape[d];
    }
    r.batch_stride = stride;
  }
  // A dim of size 1 is read at index 0 only: its stride is whatever suits.
  const int64_t rows = o.shape[rank - 2], cols = o.shape[rank - 1];
  const int64_t row_stride = rows == 1 ? std::max<int64_t>(cols, 1) : o.strides[rank - 2];
  const int64_t col_stride = cols == 1 ? 1 : o.strides[rank - 1];
  if (col_stride == 1 && row_stride >= cols) {
    r.trans = false;
    r.ld = row_stride;
    return true;
  }
  if (row_stride == 1 && col_stride >= rows) {
    r.trans = true;
    r.ld = col_stride;
    return true;
  }
  return false;
}

// The batch and layout part of a MatMul problem whose operands cuBLASLt reads in place (see
// strided_operand); false when one of them cannot be.
bool plan_strided(const MatMulShape& s, const Operand& a, const Operand& b, Problem& p) {
  StridedOperand sa, sb;
  if (!strided_operand(a, s.out_batch, sa) || !strided_operand(b, s.out_batch, sb)) return false;
  p.m = s.m;
  p.trans_a = sa.trans;
  p.lda = sa.ld;
  p.trans_b = sb.trans;
  p.ldb = sb.ld;
  p.batch_count = 1;
  for (int64_t d : s.out_batch) p.batch_count *= d;
  p.a_stride = p.batch_count > 1 ? sa.batch_stride : 0;
  p.b_stride = p.batch_count > 1 ? sb.batch_stride : 0;
  p.launches = {Launch{}};
  return true;
}

// Copies a permuted operand into its own order (a dense tensor of its shape) in scratch memory,
// as the folded Transpose would have; the result keeps the scratch alive.
std::shared_ptr<void> materialize(const runtime::KernelContext& ctx, Operand& o, ir::DType dtype) {
  const size_t elem = ir::dtype_size(dtype);
  const int64_t numel = ir::checked_numel(o.shape);
  std::shared_ptr<void> copy = ctx.scratch(static_cast<size_t>(numel) * elem + 1);
  if (numel > 0)
    SY_CUDA_CHECK(data::launch_strided_copy(o.data, copy.get(), static_cast<int>(elem),
                                            movement::merged_view(ctx, o.shape, o.strides),
                                            stream_of(ctx)));
  o.data = copy.get();
  o.strides = movement::strides_of(o.shape);
  o.permuted = false;
  return copy;
}

// Runtime dtypes come from the partition (--precision retypes float32), not the node's types.
void require_float(const runtime::KernelContext& ctx, ir::DType dtype) {
  if (!lt_types(dtype, false)) ctx.fail("no CUDA kernel for dtype {}", ir::dtype_name(dtype));
}

// The dtype a product of `dtype` operands writes: its own, or float32 for a WideProduct, which
// only float16 and bfloat16 operands may be.
ir::DType result_dtype(const runtime::KernelContext& ctx, ir::DType dtype, bool wide) {
  require_float(ctx, dtype);
  if (!wide) return dtype;
  if (!is_narrow_float(dtype))
    ctx.fail("a float32 result from {} operands (cuda writes one from float16 and bfloat16)",
             ir::dtype_name(dtype));
  return ir::DType::Float32;
}

// A bias or C of the operands' 16-bit type as `out` (float32) in scratch memory, for a product
// that writes float32 (cuBLASLt's bias follows D's type); `t` itself when it already is `out`.
// Fails naming `what` for any other dtype.
const void* as_result_dtype(const runtime::KernelContext& ctx, const ir::Tensor& t,
                            ir::DType operands, ir::DType out, const char* what,
                            std::shared_ptr<void>& keep) {
  if (t.dtype() == out) return t.raw();
  if (t.dtype() != operands)
    ctx.fail("{} is {}, expected {} (or {} like the result)", what, ir::dtype_name(t.dtype()),
             ir::dtype_name(operands), ir::dtype_name(out));
  keep = ctx.scratch(static_cast<size_t>(t.numel()) * ir::dtype_size(out) + 1);
  SY_CUDA_CHECK(launch_broadcast_matrix(t.dtype(), t.raw(), 0, 1, out, keep.get(), 1, t.numel(),
                                        1.0, stream_of(ctx)));
  return keep.get();
}

// Y = act(bias) over an empty inner dim (K = 0): zeros, or Y's preset C, plus bias (of Y's
// dtype).
void run_empty_product(const CudaRunContext& rc, ir::Tensor& y, bool preset, int64_t n,
                       const void* bias, MatMulActivation act) {
  if (!preset) SY_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), rc.stream));
  if (bias || act != MatMulActivation::None)
    SY_CUDA_CHECK(
        launch_bias_activation(y.dtype(), y.raw(), bias, y.numel() / n, n, act, rc.stream));
}

// ---- Kernels -------------------------------------------------------------------------------

class MatMulKernel : public runtime::Kernel {
 public:
  explicit MatMulKernel(const runtime::KernelInit& init)
      : act_(activation_or_throw(init.node)),
        alpha_(fused_alpha(init.node)),
        perm_a_(folded_perm(init.node, true)),
        perm_b_(folded_perm(init.node, false)),
        wide_(wide_result(init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a_in = ctx.input(0);
    const ir::Tensor& b_in = ctx.input(1);
    const ir::Tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const ir::DType dtype = a_in.dtype();
    if (b_in.dtype() != dtype)
      ctx.fail("B has dtype {}, expected {} like A", ir::dtype_name(b_in.dtype()),
               ir::dtype_name(dtype));
    const ir::DType out_dtype = result_dtype(ctx, dtype, wide_);
    Operand a = operand_of(ctx, a_in, perm_a_, "A");
    Operand b = operand_of(ctx, b_in, perm_b_, "B");
    MatMulShape s = matmul_shape(ctx, a.shape, b.shape);
    if (bias && ((bias->dtype() != dtype && bias->dtype() != out_dtype) || bias->rank() != 1 ||
                 bias->dim(0) != s.n))
      ctx.fail("fused bias is {}[{}], expected {}[{}]", ir::dtype_name(bias->dtype()),
               ir::shape_to_string(bias->shape()), ir::dtype_name(dtype), s.n);
    ir::Tensor& y = ctx.allocate_output(0, out_dtype, s.out_shape);
    if (y.numel() == 0) return;
    const CudaRunContext& rc = run_context(ctx);
    std::shared_ptr<void> wide_bias;
    const void* bias_p =
        bias ? as_result_dtype(ctx, *bias, dtype, out_dtype, "fused bias", wide_bias) : nullptr;
    if (s.k == 0) {
      run_empty_product(rc, y, false, s.n, bias_p, act_);
      return;
    }
    // Permuted operands cuBLASLt cannot read in place are copied into their order first.
    Problem strided;
    const bool in_place = (a.permuted || b.permuted) && plan_strided(s, a, b, strided);
    std::shared_ptr<void> a_copy, b_copy;
    if (!in_place) {
      if (a.permuted) a_copy = materialize(ctx, a, dtype);
      if (b.permuted) b_copy = materialize(ctx, b, dtype);
    }
    const bool tf32 = allow_tf32(ctx);
    std::vector<int64_t> key = {static_cast<int64_t>(dtype), tf32,
                                static_cast<int64_t>(rc.workspace_bytes), rc.device, in_place};
    key.push_back(static_cast<int64_t>(out_dtype));
    append_shape(key, a.shape);
    append_shape(key, a.strides);
    append_shape(key, b.shape);
    append_shape(key, b.strides);
    key.insert(key.end(), {bias != nullptr, alignment_of(a.data), alignment_of(b.data),
                           alignment_of(y.raw()), alignment_of(bias_p)});
    auto plan = cache_.get(key, [&] {
      Problem p = strided;
      p.dtype = dtype;
      p.out_dtype = out_dtype;
      p.tf32 = tf32;
      p.n = s.n;
      p.k = s.k;
      if (!in_place) plan_batches(s, p);
      p.bias = bias != nullptr;
      p.act = act_;
      const size_t elem = ir::dtype_size(dtype);
      p.align_a = launch_alignment(alignment_of(a.data), p.launches, &Launch::a, elem);
      p.align_b = launch_alignment(alignment_of(b.data), p.launches, &Launch::b, elem);
      p.align_y = launch_alignment(alignment_of(y.raw()), p.launches, &Launch::y,
                                   ir::dtype_size(out_dtype));
      if (in_place) {  // the matrices of a batch start at multiples of the batch strides
        p.align_a = std::min(p.align_a, alignment_of(static_cast<uintptr_t>(p.a_stride) * elem));
        p.align_b = std::min(p.align_b, alignment_of(static_cast<uintptr_t>(p.b_stride) * elem));
      }
      p.align_bias = alignment_of(bias_p);
      p.workspace_bytes = rc.workspace_bytes;
      return build_plan(ctx, rc.cublaslt, p, bias_p);
    });
    run_plan(*plan, rc, a.data, b.data, y.raw(), y.numel(), bias_p, alpha_, 0.0);
  }

 private:
  MatMulActivation act_;
  float alpha_;  // the Epilogue's fused scale of the product (fusion/matmul_epilogue.cc)
  std::vector<int64_t> perm_a_, perm_b_;  // fusion::OperandPermutes (fusion/matmul_layout.cc)
  bool wide_;  // a WideProduct: float32 result from 16-bit operands (precision.h)
  PlanCache cache_;
};

class GemmKernel : public runtime::Kernel {
 public:
  explicit GemmKernel(const runtime::KernelInit& init)
      : trans_a_(init.node.attr_int("transA", 0) != 0),
        trans_b_(init.node.attr_int("transB", 0) != 0),
        alpha_(init.node.attr_float("alpha", 1.0f)),
        beta_(init.node.attr_float("beta", 1.0f)),
        act_(activation_or_throw(init.node)),
        wide_(wide_result(init.node)) {}

  void run(runtime::KernelContext& ctx) const override {
    const ir::Tensor& a = ctx.input(0);
    const ir::Tensor& b = ctx.input(1);
    const ir::Tensor* c = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const ir::DType out_dtype = result_dtype(ctx, a.dtype(), wide_);
    // C may also be of the result's dtype (a WideProduct's widened constant C).
    if (b.dtype() != a.dtype() || (c && c->dtype() != a.dtype() && c->dtype() != out_dtype))
      ctx.fail("inputs must share A's dtype {}", ir::dtype_name(a.dtype()));
    if (a.rank() != 2 || b.rank() != 2)
      ctx.fail("A {} and B {} must be matrices", ir::shape_to_string(a.shape()),
               ir::shape_to_string(b.shape()));
    const int64_t m = trans_a_ ? a.dim(1) : a.dim(0);
    const int64_t k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t n = trans_b_ ? b.dim(0) : b.dim(1);
    if ((trans_b_ ? b.dim(1) : b.dim(0)) != k)
      ctx.fail("inner dims differ: A {} (transA={}) and B {} (transB={})",
               ir::shape_to_string(a.shape()), int{trans_a_}, ir::shape_to_string(b.shape()),
               int{trans_b_});
    // C as [rows, cols] broadcast to [M, N]: a bias row (beta 1) or copied into Y first.
    enum class CMode { None, Bias, Full } mode = CMode::None;
    std::vector<int64_t> cs;
    if (c) {
      cs = c->shape();
      if (cs.size() > 2) ctx.fail("C has shape {}, expected rank <= 2", ir::shape_to_string(cs));
      while (cs.size() < 2) cs.insert(cs.begin(), 1);
      if ((cs[0] != 1 && cs[0] != m) || (cs[1] != 1 && cs[1] != n))
        ctx.fail("C {} cannot be broadcast to [{}, {}]", ir::shape_to_string(c->shape()), m, n);
      if (beta_ != 0.0f)
        mode = cs[0] == 1 && cs[1] == n && beta_ == 1.0f ? CMode::Bias : CMode::Full;
    }
    ir::Tensor& y = ctx.allocate_output(0, out_dtype, {m, n});
    if (y.numel() == 0) return;
    const CudaRunContext& rc = run_context(ctx);
    std::shared_ptr<void> wide_bias;
    const void* bias_p = mode == CMode::Bias
                             ? as_result_dtype(ctx, *c, a.dtype(), out_dtype, "C", wide_bias)
                             : nullptr;
    if (mode == CMode::Full)  // widens a 16-bit C into a float32 Y as it copies
      SY_CUDA_CHECK(launch_broadcast_matrix(c->dtype(), c->raw(), cs[0] == 1 ? 0 : cs[1],
                                            cs[1] == 1 ? 0 : 1, y.dtype(), y.raw(), m, n,
                                            k == 0 ? beta_ : 1.0, rc.stream));
    if (k == 0) {
      run_empty_product(rc, y, mode == CMode::Full, n, bias_p, act_);
      return;
    }
    const bool tf32 = allow_tf32(ctx);
    std::vector<int64_t> key = {static_cast<int64_t>(a.dtype()), static_cast<int64_t>(out_dtype),
                                tf32, static_cast<int64_t>(rc.workspace_bytes), rc.device};
    append_shape(key, a.shape());
    append_shape(key, b.shape());
    key.insert(key.end(), {static_cast<int64_t>(mode), alignment_of(a.raw()), alignment_of(b.raw()),
                           alignment_of(y.raw()), alignment_of(bias_p)});
    auto plan = cache_.get(key, [&] {
      Problem p;
      p.dtype = a.dtype();
      p.out_dtype = out_dtype;
      p.tf32 = tf32;
      p.m = m;
      p.n = n;
      p.k = k;
      p.trans_a = trans_a_;
      p.trans_b = trans_b_;
      p.bias = mode == CMode::Bias;
      p.act = act_;
      p.align_a = alignment_of(a.raw());
      p.align_b = alignment_of(b.raw());
      p.align_y = alignment_of(y.raw());
      p.align_bias = alignment_of(bias_p);
      p.workspace_bytes = rc.workspace_bytes;
      return build_plan(ctx, rc.cublaslt, p, bias_p);
    });
    run_plan(*plan, rc, a.raw(), b.raw(), y.raw(), y.numel(), bias_p, alpha_,
             mode == CMode::Full ? beta_ : 0.0);
  }

 private:
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  MatMulActivation act_;
  bool wide_;  // a WideProduct: float32 result from 16-bit operands (precision.h)
  PlanCache cache_;
};

}  // namespace

void register_matmul_kernels(runtime::KernelRegistry& r) {
  r.add(runtime::KernelDef{ops::OpKind::MatMul, matmul_dtypes(), 0, check_matmul,
                           runtime::make_factory<MatMulKernel>()});
  r.add(runtime::KernelDef{ops::OpKind::Gemm, matmul_dtypes(), 0, check_gemm,
                           runtime::make_factory<GemmKernel>()});
}

}  // namespace switchyard::cuda
