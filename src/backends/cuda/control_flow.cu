// Device code of control flow (launch API in control_flow_impl.h): single-thread kernels that
// move a loop's counter and condition and set CUDA graph conditional nodes, and a grid-stride
// copy at a device-held index (Scan's slices, scan outputs).
#include <cuda_runtime.h>

#include "backends/cuda/control_flow_impl.h"

namespace switchyard::cuda {

namespace {

__global__ void loop_init_kernel(LoopControl* ctrl, const int64_t* max_trips,
                                 int64_t max_trips_value, const bool* cond, bool cond_value,
                                 int64_t* iter_in, bool* cond_in, cudaGraphConditionalHandle handle,
                                 bool set_handle) {
  const int64_t max = max_trips ? *max_trips : max_trips_value;
  const bool c = cond ? *cond : cond_value;
  ctrl->iter = 0;
  ctrl->max_trips = max;
  ctrl->cond = c ? 1 : 0;
  if (iter_in) *iter_in = 0;
  if (cond_in) *cond_in = c;
  if (set_handle) cudaGraphSetConditional(handle, c && max > 0 ? 1u : 0u);
}

__global__ void loop_latch_kernel(LoopControl* ctrl, const bool* cond_out,
                                  cudaGraphConditionalHandle handle, bool set_handle) {
  if (cond_out) ctrl->cond = *cond_out ? 1 : 0;
  const int64_t iter = ctrl->iter + 1;
  ctrl->iter = iter;
  if (set_handle) cudaGraphSetConditional(handle, ctrl->cond && iter < ctrl->max_trips ? 1u : 0u);
}

__global__ void loop_publish_kernel(const LoopControl* ctrl, int64_t* iter_in, bool* cond_in) {
  if (iter_in) *iter_in = ctrl->iter;
  if (cond_in) *cond_in = ctrl->cond != 0;
}

__global__ void if_select_kernel(const bool* cond, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, *cond ? 1u : 0u);
}

__global__ void set_loop_inputs_kernel(int64_t* iter_in, bool* cond_in, int64_t iter, bool cond) {
  *iter_in = iter;
  *cond_in = cond;
}

template <typename U>
__global__ void indexed_copy_kernel(IndexedCopy c, int64_t units) {
  int64_t index = *c.counter;
  if (c.reverse) index = c.limit - 1 - index;
  if (index < 0 || index >= c.limit) return;
  char* dst = static_cast<char*>(c.dst) + index * c.dst_step;
  const char* src = static_cast<const char*>(c.src) + index * c.src_step;
  const int64_t total = c.blocks * units;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / units, u = i % units;
    reinterpret_cast<U*>(dst + b * c.dst_stride)[u] =
        reinterpret_cast<const U*>(src + b * c.src_stride)[u];
  }
}

template <typename U>
cudaError_t launch_copy_as(const IndexedCopy& c, cudaStream_t stream) {
  const int64_t units = c.block_bytes / static_cast<int64_t>(sizeof(U));
  const int64_t total = c.blocks * units;
  constexpr int kThreads = 256;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  indexed_copy_kernel<U>
      <<<static_cast<unsigned>(blocks < 1024 ? blocks : 1024), kThreads, 0, stream>>>(c, units);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_loop_init(LoopControl* ctrl, const int64_t* max_trips, int64_t max_trips_value,
                             const bool* cond, bool cond_value, int64_t* iter_in, bool* cond_in,
                             cudaGraphConditionalHandle handle, bool set_handle,
                             cudaStream_t stream) {
  loop_init_kernel<<<1, 1, 0, stream>>>(ctrl, max_trips, max_trips_value, cond, cond_value, iter_in,
                                        cond_in, handle, set_handle);
  return cudaGetLastError();
}

cudaError_t launch_loop_latch(LoopControl* ctrl, const bool* cond_out,
                              cudaGraphConditionalHandle handle, bool set_handle,
                              cudaStream_t stream) {
  loop_latch_kernel<<<1, 1, 0, stream>>>(ctrl, cond_out, handle, set_handle);
  return cudaGetLastError();
}

cudaError_t launch_loop_publish(const LoopControl* ctrl, int64_t* iter_in, bool* cond_in,
                                cudaStream_t stream) {
  loop_publish_kernel<<<1, 1, 0, stream>>>(ctrl, iter_in, cond_in);
  return cudaGetLastError();
}

cudaError_t launch_if_select(const bool* cond, cudaGraphConditionalHandle handle,
                             cudaStream_t stream) {
  if_select_kernel<<<1, 1, 0, stream>>>(cond, handle);
  return cudaGetLastError();
}

cudaError_t launch_set_loop_inputs(int64_t* iter_in, bool* cond_in, int64_t iter, bool cond,
                                   cudaStream_t stream) {
  set_loop_inputs_kernel<<<1, 1, 0, stream>>>(iter_in, cond_in, iter, cond);
  return cudaGetLastError();
}

cudaError_t launch_indexed_copy(const IndexedCopy& c, cudaStream_t stream) {
  if (c.blocks <= 0 || c.block_bytes <= 0 || c.limit <= 0) return cudaSuccess;
  // The widest unit that every size, stride and address is a multiple of.
  uint64_t bits = static_cast<uint64_t>(c.block_bytes) | static_cast<uint64_t>(c.dst_stride) |
                  static_cast<uint64_t>(c.src_stride) | static_cast<uint64_t>(c.dst_step) |
                  static_cast<uint64_t>(c.src_step) | reinterpret_cast<uintptr_t>(c.dst) |
                  reinterpret_cast<uintptr_t>(c.src);
  if ((bits & 15) == 0) return launch_copy_as<uint4>(c, stream);
  if ((bits & 7) == 0) return launch_copy_as<uint2>(c, stream);
  if ((bits & 3) == 0) return launch_copy_as<uint32_t>(c, stream);
  if ((bits & 1) == 0) return launch_copy_as<uint16_t>(c, stream);
  return launch_copy_as<uint8_t>(c, stream);
}

}  // namespace switchyard::cuda
