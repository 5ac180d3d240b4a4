// What the steps of control_flow.cc share below the steps themselves: tensors in a run's device
// pool, copies on the stream, the checks of a node's scalar inputs and body results, the
// stacking of scan outputs, and the pieces of a CUDA graph capture with conditional nodes (a
// side stream for body captures, conditional nodes added to a running capture, a node run as a
// graph of its own).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/device.h"
#include "ir/check.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace switchyard::cuda::control_flow_shared {

// ---- Device memory

/// Whether `t` lives in host memory.
bool in_host_memory(const ir::Tensor& t);
/// A tensor of `dtype` and `shape` in `pool` (uninitialized).
ir::Tensor new_tensor(runtime::HostPool& pool, ir::DType dtype, std::vector<int64_t> shape);
/// A device-to-device copy on `stream` (none for 0 bytes or dst == src).
void copy_device(void* dst, const void* src, size_t bytes, cudaStream_t stream);
/// The product of shape[from, to), checked for overflow.
int64_t dims_product(const std::vector<int64_t>& shape, size_t from, size_t to);
/// A node input that may be omitted (nullptr or an empty optional).
const ir::Datum* given(const std::vector<const ir::Datum*>& in, size_t i);
/// `t` in host memory: itself, or read back with a wait for the stream (a host
/// synchronisation, counted) — never while capturing.
ir::Tensor to_host(const ir::Tensor& t, runtime::RunState& state, CudaRunContext& rc,
                   const ir::Node& node, const char* what);
/// A one-element input of `dtype` (a condition, a trip count), checked as the cpu checks it.
const ir::Tensor& scalar_input(const ir::Datum& d, ir::DType dtype, const ir::Node& node,
                               const char* what);
/// A body's result as a tensor in device memory (where a device-driven node reads it).
const ir::Tensor& device_result(const ir::Datum& d, const ir::Node& node, const char* what,
                                size_t i);
/// Whether the bytes of `a` and `b` overlap.
bool overlaps(const ir::Tensor& a, const ir::Tensor& b);
/// Copies an iteration's results into the carried buffers. A result that is a carried buffer
/// stays; one that overlaps another carried buffer (a body that swaps two values) goes through
/// a temporary first, so no copy reads what an earlier one overwrote.
void copy_into_carried(const std::vector<ir::Tensor>& results,
                       const std::vector<ir::Datum>& carried, runtime::HostPool& pool,
                       cudaStream_t stream);
/// The per-iteration `items` of scan output `index` stacked along `axis_attr` (counted in the
/// output's rank; `reverse` puts the last iteration first), as the cpu's Loop and Scan do; with
/// no iteration the dtype and the other dims come from the body's static type.
ir::Tensor stack_on_device(const std::vector<ir::Tensor>& items, const ir::Type& type,
                           int64_t axis_attr, bool reverse, size_t index, runtime::HostPool& pool,
                           cudaStream_t stream, const ir::Node& node);

// ---- CUDA graph capture

// A second stream of the device, with its own library handles, for the capture of a body
// into a conditional node's body graph while the partition's stream captures the node itself.
// Workspace, error word and the buffers kept alive are the outer run's.
struct SideStream {
  StreamLease lease;
  CudaRunContext rc;
  runtime::RunState state;
  SideStream(const CudaRunContext& outer, const runtime::RunState& outer_state)
      : lease(device_state(outer.device).lease_stream()), rc(outer), state(outer_state) {
    rc.stream = lease->stream;
    rc.stream_index = lease->index;
    rc.cudnn = lease->cudnn;
    rc.cublaslt = lease->cublaslt;
    rc.capturing = true;
    // Host buffers a body's kernels upload from are re-read at every iteration.
    if (!rc.keepalive) rc.keepalive = rc.pending;
    state.stream = &rc;
  }
};

/// The handle of a conditional node about to be added to `stream`'s capture.
cudaGraphConditionalHandle create_handle(cudaStream_t stream);
/// Adds a conditional node after what `stream` has captured so far (the capture continues
/// after it) and returns its body graphs.
std::vector<cudaGraph_t> add_conditional(cudaStream_t stream, cudaGraphConditionalHandle handle,
                                         cudaGraphConditionalNodeType type, unsigned size);
/// Leases `count` streams of `device` at once and gives them back: the side streams a capture
/// of the node will lease then exist already (creating one mid-capture could synchronise).
void warm_side_streams(int device, int count);

// Captures what `fn` enqueues on the side stream into `body`.
template <typename Fn>
void capture_into(cudaGraph_t body, SideStream& side, Fn&& fn) {
  SY_CUDA_CHECK(cudaStreamBeginCaptureToGraph(side.rc.stream, body, nullptr, nullptr, 0,
                                              cudaStreamCaptureModeRelaxed));
  try {
    fn();
  } catch (...) {
    cudaGraph_t ended = nullptr;
    cudaStreamEndCapture(side.rc.stream, &ended);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t ended = nullptr;
  SY_CUDA_CHECK(cudaStreamEndCapture(side.rc.stream, &ended));
}

// Runs `embed` (which adds a node's work to a capture of rc.stream) as a graph of its own:
// captured, instantiated and launched on rc.stream. The graph is freed after the run's final
// wait (the partition's pending list).
template <typename Fn>
auto run_as_graph(CudaRunContext& rc, Fn&& embed) -> decltype(embed()) {
  SY_ASSERT(rc.pending != nullptr);
  CaptureScope scope;  // no implicitly synchronising call until the capture ends (device.h)
  SY_CUDA_CHECK(cudaStreamBeginCapture(rc.stream, cudaStreamCaptureModeRelaxed));
  rc.capturing = true;
  decltype(embed()) result;
  try {
    result = embed();
  } catch (...) {
    rc.capturing = false;
    cudaGraph_t ended = nullptr;
    cudaStreamEndCapture(rc.stream, &ended);
    if (ended) cudaGraphDestroy(ended);
    cudaGetLastError();
    throw;
  }
  rc.capturing = false;
  cudaGraph_t graph = nullptr;
  SY_CUDA_CHECK(cudaStreamEndCapture(rc.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    cudaGetLastError();
    SY_THROW(Unsupported, "a control-flow graph could not be instantiated: {}",
             cudaGetErrorString(made));
  }
  rc.pending->push_back(std::shared_ptr<void>(exec, [](void* e) {
    release_outside_captures([e] { cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(e)); });
  }));
  SY_CUDA_CHECK(cudaGraphLaunch(exec, rc.stream));
  return result;
}

}  // namespace switchyard::cuda::control_flow_shared
