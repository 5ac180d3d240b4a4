// CUDA kernels of the conv family: Conv (1-D, 2-D and 3-D, groups and depthwise, dilations,
// explicit and automatic pads, optional bias) for float32, float16 and bfloat16 through cuDNN's
// backend graph API, including the fused form made by fuse_conv_epilogues (fusion.h):
// Y = act(conv(X, W) + B + Z).
//
// Layout. ONNX tensors are NCHW in memory, while cuDNN's fast engines (tensor cores, runtime
// fusion) want NHWC. Every cuDNN tensor is described in the logical (N, C, spatial...) order
// with the strides of its physical layout, so one graph builder serves both layouts:
//  - float16 / bfloat16 run NHWC: X is transposed into scratch (own kernel), the weights into
//    KRSC once per kernel object and stream (constant weights; cached by device pointer), and
//    the NHWC result is transposed back to NCHW by a kernel that applies whatever epilogue
//    cuDNN did not (bias, residual, activation) on the way, so the plain path costs no extra
//    pass. Mixed-layout graphs (NHWC in, NCHW out) are not tried: few engines take them.
//  - float32 runs NCHW directly (cuDNN has non-tensor-core engines for it, needed unless TF32
//    is allowed), with the epilogue applied in place when cuDNN did not fuse it.
//  - channels-last nodes (fusion::ChannelsLast, set by the partition's layout pass, layout.h: the
//    16-bit 2-D convolutions) have X, Z and Y stored NHWC already: no transposes at all, the
//    epilogue cuDNN did not fuse is applied in place.
// Each layout falls back to the other when cuDNN has no engine for it (not for channels-last
// nodes, whose data is NHWC), and asymmetric pads fall back to an explicitly padded copy of X.
// The fused graph (conv -> add bias -> add residual -> activation in one cuDNN graph) is tried
// before the plain convolution.
//
// Plans. Execution plans are built on first sight of a shape signature and cached per cuDNN
// handle (MXNet clones plans per handle, so a plan is not assumed to be valid with another
// one); every handle belongs to one stream slot of the backend, so one plan is never executed
// concurrently. Plans and packed weights are never evicted: a captured CUDA graph keeps using
// the kernels of a plan's engine and the packed weights at every replay.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/kernels/conv_graph.h"
#include "backends/cuda/kernels/conv_impl.h"
#include "backends/fusion/payload.h"
#include "ops/conv_geometry.h"

namespace switchyard::cuda {

namespace {

using ir::DType;
using runtime::KernelContext;
using runtime::Support;

enum class Layout { Nchw, Nhwc };

// Unique ids of the tensors in a conv graph; virtual intermediates count up from kFirstVirtual.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3, kUidBias = 4, kUidResidual = 5;
constexpr int64_t kFirstVirtual = 100;

// Failure lines shown in an error; the rest are counted.
constexpr size_t kMaxReasons = 16;

// Engines that need more workspace than this are passed over for the next candidate.
constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 30;

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Concrete geometry of one call.
using ConvGeometry = ops::ConvDims;

// Validates x [N, C, in...] (logical dims) and w [M, C/group, k...] against each other and the
// node's window attributes (ops/conv_geometry, shared with the CPU kernel).
ConvGeometry conv_geometry(const KernelContext& ctx, const std::vector<int64_t>& x,
                           const ir::Tensor& w, int64_t group) {
  if (x.size() > 5)
    ctx.fail("input X has shape {}, the CUDA kernel takes 1 to 3 spatial dims",
             ir::shape_to_string(x));
  return ops::conv_dims(ctx.node(), x, w.shape(), group);
}

// [N, C, spatial...] -> [N, spatial..., C] and back: the dims of a channels-last tensor.
std::vector<int64_t> channels_last_dims(const std::vector<int64_t>& nchw) {
  std::vector<int64_t> d = {nchw[0]};
  d.insert(d.end(), nchw.begin() + 2, nchw.end());
  d.push_back(nchw[1]);
  return d;
}

std::vector<int64_t> channels_first_dims(const std::vector<int64_t>& nhwc) {
  std::vector<int64_t> d = {nhwc[0], nhwc.back()};
  d.insert(d.end(), nhwc.begin() + 1, nhwc.end() - 1);
  return d;
}

using backends::fusion::Activation;

// The activation of the node's fusion::Epilogue, or nullopt when the Conv kernel has none.
std::optional<ConvActivation> conv_activation(Activation a) {
  switch (a) {
    case Activation::None:
      return ConvActivation::None;
    case Activation::Relu:
      return ConvActivation::Relu;
    case Activation::Sigmoid:
      return ConvActivation::Sigmoid;
    case Activation::Tanh:
      return ConvActivation::Tanh;
    case Activation::Clip:
      return ConvActivation::Clip;
    default:
      return std::nullopt;
  }
}

Activation fused_activation(const ir::Node& node) {
  const auto* epilogue = node.annotation<backends::fusion::Epilogue>();
  return epilogue ? epilogue->activation : Activation::None;
}

ConvActivation parse_activation(const ir::Node& node) {
  const Activation a = fused_activation(node);
  if (std::optional<ConvActivation> act = conv_activation(a)) return *act;
  SY_THROW(Unsupported, "{}: fused activation '{}' is not supported by the CUDA Conv kernel",
           node.describe(), backends::fusion::activation_name(a));
}

// Clip's bound (`lo` or the upper one) of a fused Clip; 0 for another activation.
float clip_bound(const ir::Node& node, bool lo) {
  const auto* epilogue = node.annotation<backends::fusion::Epilogue>();
  if (!epilogue || epilogue->activation != Activation::Clip) return 0.0f;
  return lo ? epilogue->clip_min : epilogue->clip_max;
}

cudnnDataType_t cudnn_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return CUDNN_DATA_HALF;
    case DType::BFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

// Strides, in elements, of a tensor of logical dims [N, C, spatial...] stored in `layout`.
std::vector<int64_t> layout_strides(const std::vector<int64_t>& dims, Layout layout) {
  std::vector<int64_t> st(dims.size());
  if (layout == Layout::Nchw) {
    int64_t acc = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      st[i] = acc;
      acc *= dims[i];
    }
    return st;
  }
  st[1] = 1;
  int64_t acc = dims[1];
  for (size_t i = dims.size(); i-- > 2;) {
    st[i] = acc;
    acc *= dims[i];
  }
  st[0] = acc;
  return st;
}

// cuDNN convolves 2 or 3 spatial dims: a 1-D convolution becomes 2-D with a leading spatial dim
// of `fill` (1 for sizes, strides and dilations, 0 for pads).
std::vector<int64_t> cudnn_spatial(const std::vector<int64_t>& v, int64_t fill) {
  std::vector<int64_t> out = v;
  if (out.size() == 1) out.insert(out.begin(), fill);
  return out;
}

std::vector<int64_t> cudnn_dims(int64_t n, int64_t c, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> dims = {n, c};
  std::vector<int64_t> s = cudnn_spatial(spatial, 1);
  dims.insert(dims.end(), s.begin(), s.end());
  return dims;
}

// Largest power-of-two alignment (up to 16 bytes) of a device pointer.
int64_t alignment_of(const void* p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  int64_t alignment = 1;
  while (alignment < 16 && address % static_cast<uintptr_t>(2 * alignment) == 0) alignment *= 2;
  return alignment;
}

// How a plan runs the convolution.
struct ConvVariant {
  Layout layout = Layout::Nchw;
  bool fused = false;         // bias, residual and activation inside the cuDNN graph
  bool padded_input = false;  // X copied with its pads; the convolution itself pads nothing

  std::string describe() const {
    return fmt::format("{}{}{}", layout == Layout::Nchw ? "NCHW" : "NHWC",
                       fused ? " fused" : " plain", padded_input ? " padded-input" : "");
  }
};

// What a node asks for beyond the convolution itself.
struct EpilogueShape {
  bool bias = false;
  bool residual = false;
  ConvActivation activation = ConvActivation::None;
  bool any() const { return bias || residual || activation != ConvActivation::None; }
};

// Variants to try, best first: the dtype's preferred layout, then the other one (a channels-last
// node, whose X, Z and Y are stored NHWC, runs NHWC only); per layout
// the fused graph before the plain one, native pads before a padded copy of X. A Clip (ReLU6)
// epilogue is never put in the cuDNN graph: the runtime-fusion engines cuDNN 9.19 picks for a
// clipped ReLU ran mobilenet_v2's 52 convs at b256 fp16 in 172 ms against 47 ms unfused (GPU
// run 15, tests/gpu/RESULTS.md); our epilogue kernel applies bias and Clip instead, in place on
// a result in its own layout or while transposing an NHWC result back to NCHW.
std::vector<ConvVariant> candidate_variants(DType dtype, const EpilogueShape& epilogue,
                                            bool symmetric_pads, bool channels_last) {
  std::vector<Layout> layouts = channels_last ? std::vector<Layout>{Layout::Nhwc}
                                : dtype == DType::Float32
                                    ? std::vector<Layout>{Layout::Nchw, Layout::Nhwc}
                                    : std::vector<Layout>{Layout::Nhwc, Layout::Nchw};
  std::vector<bool> paddings = {false};
  if (!symmetric_pads) paddings.push_back(true);
  std::vector<ConvVariant> variants;
  for (Layout layout : layouts)
    for (bool padded : paddings) {
      if (epilogue.any() && epilogue.activation != ConvActivation::Clip)
        variants.push_back({layout, true, padded});
      variants.push_back({layout, false, padded});
    }
  return variants;
}

// A prepared call: its geometry and, when the convolution has work to do, the cuDNN plan.
struct ConvPlan {
  ConvGeometry geo;
  bool has_conv = false;  // false: X or W is empty, the convolution sums nothing
  ConvVariant variant;
  std::vector<int64_t> padded_in;          // spatial sizes of X's padded copy
  std::deque<CudnnDescriptor> keep_alive;  // tensors, operations and the graph of `exec`
  ExecutionPlan exec;
  std::vector<int64_t> uids;  // X, W, Y, then bias and residual when fused
};

// Builds the cuDNN operation graph of `variant` into plan.keep_alive (the graph last).
void build_graph(ConvPlan& plan, cudnnHandle_t handle, DType dtype, int64_t alignment,
                 const EpilogueShape& epilogue) {
  const ConvGeometry& g = plan.geo;
  const ConvVariant& v = plan.variant;
  const cudnnDataType_t data_type = cudnn_dtype(dtype);
  auto& descs = plan.keep_alive;
  auto tensor = [&](int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                    bool is_virtual) -> const CudnnDescriptor& {
    descs.push_back(make_tensor_descriptor(uid, type, dims, layout_strides(dims, v.layout),
                                           alignment, is_virtual));
    return descs.back();
  };
  std::vector<int64_t> x_spatial = v.padded_input ? plan.padded_in : g.in;
  std::vector<int64_t> y_dims = cudnn_dims(g.batch, g.out_channels, g.out);
  // A deque: the references taken here stay valid while more descriptors are added.
  const CudnnDescriptor& x =
      tensor(kUidX, data_type, cudnn_dims(g.batch, g.in_channels, x_spatial), false);
  // Grouped (and depthwise) convolution: cuDNN infers the groups from X's C over W's C.
  const CudnnDescriptor& w = tensor(
      kUidW, data_type, cudnn_dims(g.out_channels, g.in_channels / g.group, g.kernel), false);
  plan.uids = {kUidX, kUidW, kUidY};

  int stages = v.fused ? static_cast<int>(epilogue.bias) + static_cast<int>(epilogue.residual) +
                             static_cast<int>(epilogue.activation != ConvActivation::None)
                       : 0;
  int64_t next_virtual = kFirstVirtual;
  // The output of the next operation: Y for the last one, else a float intermediate.
  auto stage_output = [&]() -> const CudnnDescriptor& {
    if (stages-- == 0) return tensor(kUidY, data_type, y_dims, false);
    return tensor(next_virtual++, CUDNN_DATA_FLOAT, y_dims, true);
  };
  std::vector<const CudnnDescriptor*> ops;

  CudnnDescriptor conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  std::vector<int64_t> zeros(g.in.size(), 0);
  conv.set_int64(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,
                 static_cast<int64_t>(cudnn_spatial(g.in, 1).size()),
                 "setting the convolution's spatial dims");
  conv.set_data_type(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_DATA_FLOAT,
                     "setting the convolution's compute type");
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode,
           "setting the convolution mode");
  conv.set_int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, cudnn_spatial(g.strides, 1),
                  "setting the convolution's strides");
  conv.set_int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, cudnn_spatial(g.dilations, 1),
                  "setting the convolution's dilations");
  conv.set_int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                  cudnn_spatial(v.padded_input ? zeros : g.pad_begin, 0),
                  "setting the convolution's leading pads");
  conv.set_int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
                  cudnn_spatial(v.padded_input ? zeros : g.pad_end, 0),
                  "setting the convolution's trailing pads");
  conv.finalize("finalizing the convolution descriptor");
  descs.push_back(std::move(conv));
  const CudnnDescriptor& conv_desc = descs.back();

  const CudnnDescriptor* current = &stage_output();
  CudnnDescriptor conv_op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  conv_op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x, "setting the conv's X");
  conv_op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w, "setting the conv's W");
  conv_op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, *current,
                         "setting the conv's Y");
  conv_op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv_desc,
                         "setting the conv's descriptor");
  float alpha = 1.0f, beta = 0.0f;
  conv_op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha,
              "setting the conv's alpha");
  conv_op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta,
              "setting the conv's beta");
  conv_op.finalize("finalizing the convolution operation");
  descs.push_back(std::move(conv_op));
  ops.push_back(&descs.back());

  // One pointwise operation: out = mode(in, operand) (operand null for unary modes).
  auto pointwise = [&](cudnnPointwiseMode_t pw_mode, const CudnnDescriptor* operand) {
    CudnnDescriptor pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &pw_mode,
           "setting a pointwise mode");
    pw.set_data_type(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_DATA_FLOAT,
                     "setting a pointwise precision");
    pw.finalize("finalizing a pointwise descriptor");
    descs.push_back(std::move(pw));
    const CudnnDescriptor& pw_desc = descs.back();
    const CudnnDescriptor* out = &stage_output();
    CudnnDescriptor op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw_desc,
                      "setting a pointwise operation's mode");
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *current,
                      "setting a pointwise operation's input");
    if (operand)
      op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *operand,
                        "setting a pointwise operation's second input");
    op.set_descriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *out,
                      "setting a pointwise operation's output");
    op.finalize("finalizing a pointwise operation");
    descs.push_back(std::move(op));
    ops.push_back(&descs.back());
    current = out;
  };

  if (v.fused && epilogue.bias) {
    std::vector<int64_t> bias_dims(y_dims.size(), 1);
    bias_dims[1] = g.out_channels;
    pointwise(CUDNN_POINTWISE_ADD, &tensor(kUidBias, data_type, bias_dims, false));
    plan.uids.push_back(kUidBias);
  }
  if (v.fused && epilogue.residual) {
    pointwise(CUDNN_POINTWISE_ADD, &tensor(kUidResidual, data_type, y_dims, false));
    plan.uids.push_back(kUidResidual);
  }
  if (v.fused) {
    switch (epilogue.activation) {
      case ConvActivation::Relu:
        pointwise(CUDNN_POINTWISE_RELU_FWD, nullptr);
        break;
      case ConvActivation::Sigmoid:
        pointwise(CUDNN_POINTWISE_SIGMOID_FWD, nullptr);
        break;
      case ConvActivation::Tanh:
        pointwise(CUDNN_POINTWISE_TANH_FWD, nullptr);
        break;
      case ConvActivation::Clip:  // never fused (candidate_variants)
        SY_ASSERT(false);
        break;
      case ConvActivation::None:
        break;
    }
  }
  SY_ASSERT(stages < 0);  // every stage produced its output, the last one Y
  descs.push_back(make_operation_graph(handle, ops));
}

// Joins failure reasons into one message, at most kMaxReasons of them.
std::string join_reasons(const std::vector<std::string>& reasons) {
  std::string text;
  for (size_t i = 0; i < reasons.size() && i < kMaxReasons; ++i) text += "\n  " + reasons[i];
  if (reasons.size() > kMaxReasons)
    text += fmt::format("\n  ... and {} more", reasons.size() - kMaxReasons);
  return text;
}

// Destroys a variant pack descriptor when the call that uses it ends.
struct VariantPackGuard {
  cudnnBackendDescriptor_t desc = nullptr;
  ~VariantPackGuard() {
    if (desc) cudnnBackendDestroyDescriptor(desc);
  }
};

class ConvKernel : public runtime::Kernel {
 public:
  explicit ConvKernel(const runtime::KernelInit& init)
      : group_(ops::read_group(init.node)),
        activation_(parse_activation(init.node)),
        clip_lo_(clip_bound(init.node, true)),
        clip_hi_(clip_bound(init.node, false)),
        constant_weights_(init.node.input(1) && init.node.input(1)->is_constant()),
        channels_last_(init.node.annotation<backends::fusion::ChannelsLast>() != nullptr) {
    SY_CHECK(group_ >= 1, InvalidModel, "{}: group must be >= 1, got {}", init.node.describe(),
             group_);
  }

  void run(KernelContext& ctx) const override {
    const ir::Tensor& x = ctx.input(0);
    const ir::Tensor& w = ctx.input(1);
    const ir::Tensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const ir::Tensor* z = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()) || (z && z->dtype() != x.dtype()))
      ctx.fail("inputs must share X's dtype {}", ir::dtype_name(x.dtype()));
    if (x.dtype() != DType::Float32 && x.dtype() != DType::Float16 && x.dtype() != DType::BFloat16)
      ctx.fail("dtype {} is not supported by the CUDA Conv kernel", ir::dtype_name(x.dtype()));
    if (channels_last_ && x.rank() < 3)
      ctx.fail("channels-last input X has shape {}, expected [N, spatial..., C]",
               ir::shape_to_string(x.shape()));
    const std::vector<int64_t> x_dims = channels_last_ ? channels_first_dims(x.shape()) : x.shape();
    CudaRunContext& rc = run_context(ctx);
    EpilogueShape epilogue{b != nullptr, z != nullptr, activation_};

    int64_t alignment = std::min(alignment_of(x.raw()), alignment_of(w.raw()));
    if (b) alignment = std::min(alignment, alignment_of(b->raw()));
    if (z) alignment = std::min(alignment, alignment_of(z->raw()));
    std::vector<int64_t> key = {static_cast<int64_t>(reinterpret_cast<uintptr_t>(rc.cudnn)),
                                static_cast<int64_t>(x.dtype()),
                                alignment,
                                allow_tf32(ctx) ? 1 : 0,
                                b ? b->rank() : -1,
                                b ? b->numel() : -1,
                                z ? z->rank() : -1,
                                x.rank()};
    key.insert(key.end(), x.shape().begin(), x.shape().end());
    key.insert(key.end(), w.shape().begin(), w.shape().end());
    if (z) key.insert(key.end(), z->shape().begin(), z->shape().end());
    std::shared_ptr<const ConvPlan> plan = plan_for(
        key, [&] { return make_plan(ctx, x_dims, x.dtype(), w, b, z, epilogue, alignment); });

    ir::Tensor& y = ctx.allocate_output(0, x.dtype(), stored_dims(plan->geo.out_shape()));
    if (y.numel() == 0) return;
    const ConvGeometry& g = plan->geo;
    const int64_t out_size = product(g.out);
    cudaStream_t stream = rc.stream;
    ConvEpilogue full{b ? b->raw() : nullptr, z ? z->raw() : nullptr, activation_, clip_lo_,
                      clip_hi_};
    if (!plan->has_conv) {
      // No input channels: the result is the epilogue applied to zeros.
      SY_CUDA_CHECK(cudaMemsetAsync(y.raw(), 0, y.nbytes(), stream));
      SY_CUDA_CHECK(launch_conv_epilogue_in_place(x.dtype(), y.raw(), g.batch, g.out_channels,
                                                  out_size, channels_last_, full, stream));
      return;
    }
    run_plan(ctx, *plan, x, w, b, z, y, full);
  }

 private:
  // A logical [N, C, spatial...] shape as this node stores it.
  std::vector<int64_t> stored_dims(const std::vector<int64_t>& nchw) const {
    return channels_last_ ? channels_last_dims(nchw) : nchw;
  }

  std::shared_ptr<const ConvPlan> make_plan(const KernelContext& ctx,
                                            const std::vector<int64_t>& x_dims, DType dtype,
                                            const ir::Tensor& w, const ir::Tensor* b,
                                            const ir::Tensor* z, const EpilogueShape& epilogue,
                                            int64_t alignment) const {
    auto plan = std::make_shared<ConvPlan>();
    plan->geo = conv_geometry(ctx, x_dims, w, group_);
    const ConvGeometry& g = plan->geo;
    if (b && b->shape() != std::vector<int64_t>{g.out_channels})
      ctx.fail("bias B has shape {}, expected [{}]", ir::shape_to_string(b->shape()),
               g.out_channels);
    if (z && z->shape() != stored_dims(g.out_shape()))
      ctx.fail("residual input Z has shape {}, expected the output shape {}",
               ir::shape_to_string(z->shape()), ir::shape_to_string(stored_dims(g.out_shape())));
    plan->has_conv = product(x_dims) > 0 && w.numel() > 0;
    if (!plan->has_conv || product(g.out_shape()) == 0) return plan;

    std::vector<cudnnBackendNumericalNote_t> excluded;
    if (dtype == DType::Float32 && !allow_tf32(ctx))
      excluded = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS};
    cudnnHandle_t handle = run_context(ctx).cudnn;
    std::vector<std::string> reasons;
    for (const ConvVariant& variant :
         candidate_variants(dtype, epilogue, g.symmetric_pads(), channels_last_)) {
      plan->variant = variant;
      plan->keep_alive.clear();
      plan->padded_in.clear();
      if (variant.padded_input)
        for (size_t i = 0; i < g.in.size(); ++i)
          plan->padded_in.push_back(g.in[i] + g.pad_begin[i] + g.pad_end[i]);
      std::vector<std::string> variant_reasons;
      try {
        build_graph(*plan, handle, dtype, alignment, epilogue);
        std::optional<ExecutionPlan> exec = find_execution_plan(
            handle, plan->keep_alive.back(), excluded, kMaxWorkspaceBytes, variant_reasons);
        if (exec) {
          plan->exec = std::move(*exec);
          return plan;
        }
      } catch (const CudnnGraphError& e) {
        variant_reasons.push_back(e.what());
      }
      for (const std::string& r : variant_reasons)
        reasons.push_back(fmt::format("{}: {}", variant.describe(), r));
    }
    SY_THROW(Unsupported,
             "{}: cuDNN has no engine for this convolution (X {} {}, W {}, strides {}, "
             "dilations {}, pads {} / {}, group {}{}{}); tried:{}",
             ctx.node().describe(), ir::shape_to_string(x_dims), ir::dtype_name(dtype),
             ir::shape_to_string(w.shape()), g.strides, g.dilations, g.pad_begin, g.pad_end, group_,
             channels_last_ ? ", channels-last" : "",
             dtype == DType::Float32 && !allow_tf32(ctx) ? ", tensor cores excluded" : "",
             join_reasons(reasons));
  }

  template <typename Build>
  std::shared_ptr<const ConvPlan> plan_for(const std::vector<int64_t>& key, Build build) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    // Built outside the lock: a plan belongs to one handle, which one thread uses at a time.
    std::shared_ptr<const ConvPlan> plan = build();
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.emplace(key, std::move(plan)).first->second;
  }

  // W in KRSC order. Constant weights are transposed once per stream and kept (a stream never
  // reads a copy another stream may still be writing; a partition run ends with a stream sync,
  // so a kept copy is complete for every later run). Other weights, and a weight first met
  // while the stream is being captured into a CUDA graph (the capture may be discarded), go
  // through scratch held in `keep`.
  const void* nhwc_weights(KernelContext& ctx, const ConvGeometry& g, const ir::Tensor& w,
                           std::vector<std::shared_ptr<void>>& keep) const {
    CudaRunContext& rc = run_context(ctx);
    const std::pair<uintptr_t, uintptr_t> key = {reinterpret_cast<uintptr_t>(w.raw()),
                                                 reinterpret_cast<uintptr_t>(rc.stream)};
    if (constant_weights_) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = weights_.find(key);
      if (it != weights_.end()) return it->second.get();
    }
    std::shared_ptr<void> packed = ctx.scratch(w.nbytes());
    SY_CUDA_CHECK(launch_batched_transpose(w.dtype(), w.raw(), packed.get(), g.out_channels,
                                           w.dim(1), product(g.kernel), rc.stream));
    if (!constant_weights_ || rc.capturing) {
      keep.push_back(packed);
      return packed.get();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    return weights_.emplace(key, std::move(packed)).first->second.get();
  }

  void run_plan(KernelContext& ctx, const ConvPlan& plan, const ir::Tensor& x, const ir::Tensor& w,
                const ir::Tensor* b, const ir::Tensor* z, ir::Tensor& y,
                const ConvEpilogue& full) const {
    CudaRunContext& rc = run_context(ctx);
    cudaStream_t stream = rc.stream;
    const ConvGeometry& g = plan.geo;
    const DType dtype = x.dtype();
    const bool nhwc = plan.variant.layout == Layout::Nhwc;
    // NCHW data around an NHWC convolution is transposed in and out; channels-last data is not.
    const bool transposed = nhwc && !channels_last_;
    const bool fused = plan.variant.fused;
    const int64_t in_size = product(g.in), out_size = product(g.out);
    std::vector<std::shared_ptr<void>> keep;  // scratch in use until the stream passes run()
    auto scratch = [&](size_t bytes) {
      keep.push_back(ctx.scratch(bytes));
      return keep.back().get();
    };

    const void* x_ptr = x.raw();
    if (plan.variant.padded_input) {
      size_t bytes = ir::checked_nbytes(dtype, g.batch * g.in_channels * product(plan.padded_in));
      void* padded = scratch(bytes);
      SY_CUDA_CHECK(launch_pad_input(dtype, x.raw(), channels_last_, padded, g.batch, g.in_channels,
                                     static_cast<int>(g.in.size()), g.in.data(),
                                     plan.padded_in.data(), g.pad_begin.data(), nhwc, stream));
      x_ptr = padded;
    } else if (transposed) {
      void* x_nhwc = scratch(x.nbytes());
      SY_CUDA_CHECK(launch_batched_transpose(dtype, x.raw(), x_nhwc, g.batch, g.in_channels,
                                             in_size, stream));
      x_ptr = x_nhwc;
    }
    const void* w_ptr = nhwc ? nhwc_weights(ctx, g, w, keep) : w.raw();
    void* conv_out = transposed ? scratch(y.nbytes()) : y.raw();

    std::vector<void*> pointers = {const_cast<void*>(x_ptr), const_cast<void*>(w_ptr), conv_out};
    if (fused && b) pointers.push_back(const_cast<void*>(b->raw()));
    if (fused && z) {
      const void* z_ptr = z->raw();
      if (transposed) {
        void* z_nhwc = scratch(z->nbytes());
        SY_CUDA_CHECK(launch_batched_transpose(dtype, z->raw(), z_nhwc, g.batch, g.out_channels,
                                               out_size, stream));
        z_ptr = z_nhwc;
      }
      pointers.push_back(const_cast<void*>(z_ptr));
    }
    SY_ASSERT(pointers.size() == plan.uids.size());

    // A captured graph may replay on another stream's lease: it gets a workspace of its own.
    const auto workspace_bytes = static_cast<size_t>(plan.exec.workspace_bytes);
    void* workspace = rc.workspace;
    if (workspace_bytes > 0 && (rc.capturing || workspace_bytes > rc.workspace_bytes))
      workspace = scratch(workspace_bytes);
    try {
      VariantPackGuard pack;
      SY_CUDA_CHECK(
          cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack.desc));
      SY_CUDA_CHECK(
          cudnnBackendSetAttribute(pack.desc, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                   static_cast<int64_t>(plan.uids.size()), plan.uids.data()));
      SY_CUDA_CHECK(cudnnBackendSetAttribute(
          pack.desc, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
          static_cast<int64_t>(pointers.size()), pointers.data()));
      SY_CUDA_CHECK(cudnnBackendSetAttribute(pack.desc, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                             CUDNN_TYPE_VOID_PTR, 1, &workspace));
      SY_CUDA_CHECK(cudnnBackendFinalize(pack.desc));
      SY_CUDA_CHECK(cudnnBackendExecute(rc.cudnn, plan.exec.plan.get(), pack.desc));
    } catch (const Error& e) {
      throw Error(e.code(),
                  fmt::format("{}: running cuDNN engine {} ({}): {}", ctx.node().describe(),
                              plan.exec.engine_index, plan.variant.describe(), e.message()));
    }

    const ConvEpilogue rest = fused ? ConvEpilogue{} : full;
    if (transposed)
      SY_CUDA_CHECK(launch_conv_epilogue_from_nhwc(dtype, conv_out, y.raw(), g.batch,
                                                   g.out_channels, out_size, rest, stream));
    else if (rest.bias || rest.residual || rest.activation != ConvActivation::None)
      SY_CUDA_CHECK(launch_conv_epilogue_in_place(dtype, y.raw(), g.batch, g.out_channels, out_size,
                                                  nhwc, rest, stream));
  }

  int64_t group_;
  ConvActivation activation_;
  float clip_lo_, clip_hi_;  // activation Clip
  bool constant_weights_;
  bool channels_last_;  // fusion::ChannelsLast (layout.h): X, Z and Y are stored [N, spatial..., C]
  mutable std::mutex mutex_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const ConvPlan>> plans_;
  mutable std::map<std::pair<uintptr_t, uintptr_t>, std::shared_ptr<void>> weights_;
};

// Refuses what the kernel does not implement, so placement sees the gap with a reason.
Support check_conv(const ir::Node& node) {
  if (node.num_inputs() > 4)
    return Support::no(
        fmt::format("Conv takes at most 4 inputs on CUDA, got {}", node.num_inputs()));
  for (size_t i = 0; i < 2; ++i) {
    const ir::Value* v = node.input(i);
    int64_t rank = v ? v->type().rank() : -1;
    if (rank >= 0 && (rank < 3 || rank > 5))
      return Support::no(fmt::format(
          "the CUDA Conv kernel takes 1 to 3 spatial dims (rank 3 to 5), input {} has rank {}", i,
          rank));
  }
  if (!conv_activation(fused_activation(node)))
    return Support::no("the CUDA Conv kernel fuses only Relu, Sigmoid, Tanh and Clip");
  const ir::Attribute* group = node.find_attribute("group");
  if (group && (group->kind != ir::Attribute::Kind::Int || group->i < 1))
    return Support::no("group must be an integer >= 1");
  return Support::yes();
}

}  // namespace

void register_conv_kernels(runtime::KernelRegistry& r) {
  r.add(runtime::KernelDef{ops::OpKind::Conv,
                           {DType::Float32, DType::Float16, DType::BFloat16},
                           0,
                           check_conv,
                           runtime::make_factory<ConvKernel>()});
}

}  // namespace switchyard::cuda
