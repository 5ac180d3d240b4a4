#include "backends/cuda/control_flow_shared.h"

#include "backends/cuda/kernels/data_impl.h"

#include "ir/checked_math.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda::control_flow_shared {

using ir::DType;

bool in_host_memory(const ir::Tensor& t) {
  return device_of_memory_space(runtime::memory_space_of(t)) < 0;
}

// ---- Device memory

ir::Tensor new_tensor(runtime::HostPool& pool, DType dtype, std::vector<int64_t> shape) {
  const size_t bytes = ir::checked_nbytes(dtype, ir::checked_numel(shape));
  std::shared_ptr<void> storage = pool.allocate(bytes);
  void* data = storage.get();
  return ir::Tensor::wrap(dtype, std::move(shape), std::move(storage), data);
}

void copy_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0 || dst == src) return;
  SY_CUDA_CHECK(data::launch_device_copy(dst, src, bytes, stream));
}

int64_t dims_product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p = ir::checked_mul(p, shape[i], "a tensor's size");
  return p;
}

const ir::Datum* given(const std::vector<const ir::Datum*>& in, size_t i) {
  return i < in.size() && in[i] && !in[i]->is_empty() ? in[i] : nullptr;
}

ir::Tensor to_host(const ir::Tensor& t, runtime::RunState& state, CudaRunContext& rc,
                   const ir::Node& node, const char* what) {
  if (in_host_memory(t)) return t;
  SY_CHECK(!rc.capturing, Unsupported,
           "{}: {} must be read on the host, which a CUDA graph capture cannot do", node.describe(),
           what);
  ir::Tensor out(t.dtype(), t.shape());
  if (t.nbytes()) {
    SY_CUDA_CHECK(
        cudaMemcpyAsync(out.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, rc.stream));
    SY_CUDA_CHECK(cudaStreamSynchronize(rc.stream));
    state.count_host_sync();
  }
  return out;
}

const ir::Tensor& scalar_input(const ir::Datum& d, DType dtype, const ir::Node& node,
                               const char* what) {
  SY_CHECK(d.is_tensor(), InvalidArgument, "{}: {} is not a tensor", node.describe(), what);
  SY_CHECK(d.tensor.dtype() == dtype, InvalidArgument, "{}: {} has dtype {}, which is not accepted",
           node.describe(), what, ir::dtype_name(d.tensor.dtype()));
  SY_CHECK(d.tensor.numel() == 1, InvalidArgument, "{}: {} must hold one element, got shape {}",
           node.describe(), what, ir::shape_to_string(d.tensor.shape()));
  return d.tensor;
}

const ir::Tensor& device_result(const ir::Datum& d, const ir::Node& node, const char* what,
                                size_t i) {
  SY_CHECK(d.is_tensor(), Unsupported, "{}: {} {} is not a tensor", node.describe(), what, i);
  SY_CHECK(d.tensor.nbytes() == 0 || !in_host_memory(d.tensor), Unsupported,
           "{}: {} {} is in host memory", node.describe(), what, i);
  return d.tensor;
}

bool overlaps(const ir::Tensor& a, const ir::Tensor& b) {
  if (!a.nbytes() || !b.nbytes()) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(a.raw()), b0 = reinterpret_cast<uintptr_t>(b.raw());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

void copy_into_carried(const std::vector<ir::Tensor>& results,
                       const std::vector<ir::Datum>& carried, runtime::HostPool& pool,
                       cudaStream_t stream) {
  std::vector<ir::Tensor> from = results;
  for (size_t k = 0; k < from.size(); ++k) {
    if (from[k].raw() == carried[k].tensor.raw()) continue;
    bool clash = false;
    for (const ir::Datum& c : carried) clash = clash || overlaps(from[k], c.tensor);
    if (!clash) continue;
    ir::Tensor staged = runtime::allocate_like(from[k], pool);
    copy_device(staged.raw(), from[k].raw(), from[k].nbytes(), stream);
    from[k] = std::move(staged);
  }
  for (size_t k = 0; k < from.size(); ++k)
    copy_device(const_cast<void*>(carried[k].tensor.raw()), from[k].raw(), from[k].nbytes(),
                stream);
}

ir::Tensor stack_on_device(const std::vector<ir::Tensor>& items, const ir::Type& type,
                           int64_t axis_attr, bool reverse, size_t index, runtime::HostPool& pool,
                           cudaStream_t stream, const ir::Node& node) {
  if (items.empty()) {
    SY_CHECK(type.is_tensor() && type.dtype != DType::Undefined, InvalidArgument,
             "{}: scan output {} ran no iteration and its dtype is not known", node.describe(),
             index);
    std::vector<int64_t> shape;
    if (type.shape)
      for (const ir::Dim& d : *type.shape) shape.push_back(d.is_static() ? d.value : 0);
    const auto rank = static_cast<int64_t>(shape.size());
    const auto axis = static_cast<size_t>(ops::normalize_axis(node, axis_attr, rank + 1));
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), 0);
    return new_tensor(pool, type.dtype, std::move(shape));
  }
  const ir::Tensor& first = items[0];
  for (size_t t = 1; t < items.size(); ++t)
    SY_CHECK(
        items[t].dtype() == first.dtype() && items[t].shape() == first.shape(), InvalidArgument,
        "{}: scan output {} is {} {} in iteration {} but {} {} in iteration 0", node.describe(),
        index, ir::dtype_name(items[t].dtype()), ir::shape_to_string(items[t].shape()), t,
        ir::dtype_name(first.dtype()), ir::shape_to_string(first.shape()));
  const auto axis = static_cast<size_t>(ops::normalize_axis(node, axis_attr, first.rank() + 1));
  const auto count = static_cast<int64_t>(items.size());
  std::vector<int64_t> shape = first.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), count);
  ir::Tensor out = new_tensor(pool, first.dtype(), shape);
  const auto outer = static_cast<size_t>(dims_product(first.shape(), 0, axis));
  const size_t inner =
      static_cast<size_t>(dims_product(first.shape(), axis, first.shape().size())) *
      ir::dtype_size(first.dtype());
  if (outer == 0 || inner == 0) return out;
  for (int64_t t = 0; t < count; ++t) {
    const ir::Tensor& item = items[static_cast<size_t>(reverse ? count - 1 - t : t)];
    SY_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<char*>(out.raw()) + static_cast<size_t>(t) * inner,
                                    static_cast<size_t>(count) * inner, item.raw(), inner, inner,
                                    outer, cudaMemcpyDeviceToDevice, stream));
  }
  return out;
}

// ---- CUDA graph capture

cudaGraphConditionalHandle create_handle(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  SY_CUDA_CHECK(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr));
  SY_CHECK(status == cudaStreamCaptureStatusActive && graph, Internal,
           "a conditional node was asked for outside a CUDA graph capture");
  cudaGraphConditionalHandle handle = 0;
  SY_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 0, cudaGraphCondAssignDefault));
  return handle;
}

std::vector<cudaGraph_t> add_conditional(cudaStream_t stream, cudaGraphConditionalHandle handle,
                                         cudaGraphConditionalNodeType type, unsigned size) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  size_t num_deps = 0;
  SY_CUDA_CHECK(
      cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, &edges, &num_deps));
  SY_CHECK(status == cudaStreamCaptureStatusActive && graph, Internal,
           "a conditional node was asked for outside a CUDA graph capture");
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  cudaGraphNode_t node = nullptr;
  SY_CUDA_CHECK(cudaGraphAddNode(&node, graph, deps, edges, num_deps, &params));
  SY_CUDA_CHECK(cudaStreamUpdateCaptureDependencies(stream, &node, nullptr, 1,
                                                    cudaStreamSetCaptureDependencies));
  return std::vector<cudaGraph_t>(params.conditional.phGraph_out,
                                  params.conditional.phGraph_out + size);
}

void warm_side_streams(int device, int count) {
  if (count <= 0) return;
  StreamLease lease = device_state(device).lease_stream();
  warm_side_streams(device, count - 1);
}

}  // namespace switchyard::cuda::control_flow_shared
