// Launch API of the device side of control flow (control_flow.cu): the counters and conditions
// of device-driven loops and branches, and copies at an index the device holds. Plain C++ so the
// host side (control_flow.cc) includes it without nvcc. Launchers enqueue on `stream`, never
// synchronise, and return cudaGetLastError(). Where `set_handle` is true they set a CUDA graph
// conditional node's condition, which only a kernel launched from a graph (captured) may do.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace switchyard::cuda {

/// A running loop's state in device memory.
struct LoopControl {
  int64_t iter;       ///< iterations completed
  int64_t max_trips;  ///< the trip count (INT64_MAX: none)
  int32_t cond;       ///< the condition the last iteration returned (1 before the first)
  int32_t unused;
};

/// Starts a loop: iter = 0, max_trips = *max_trips (or max_trips_value where null), cond =
/// *cond (or cond_value where null); writes the body's iteration-number and condition inputs
/// (where not null) and sets `handle` to whether a first iteration runs.
cudaError_t launch_loop_init(LoopControl* ctrl, const int64_t* max_trips, int64_t max_trips_value,
                             const bool* cond, bool cond_value, int64_t* iter_in, bool* cond_in,
                             cudaGraphConditionalHandle handle, bool set_handle,
                             cudaStream_t stream);
/// Ends an iteration: cond = *cond_out (unchanged where null), ++iter, and sets `handle` to
/// whether another iteration runs.
cudaError_t launch_loop_latch(LoopControl* ctrl, const bool* cond_out,
                              cudaGraphConditionalHandle handle, bool set_handle,
                              cudaStream_t stream);
/// Writes the next iteration's iteration-number and condition inputs from `ctrl`.
cudaError_t launch_loop_publish(const LoopControl* ctrl, int64_t* iter_in, bool* cond_in,
                                cudaStream_t stream);
/// Sets an IF node's `handle` to *cond.
cudaError_t launch_if_select(const bool* cond, cudaGraphConditionalHandle handle,
                             cudaStream_t stream);
/// *iter_in = iter, *cond_in = cond (a host-driven iteration's inputs, without host memory).
cudaError_t launch_set_loop_inputs(int64_t* iter_in, bool* cond_in, int64_t iter, bool cond,
                                   cudaStream_t stream);

/// Copies `blocks` blocks of `block_bytes` bytes at an index i the device holds (*counter, or
/// limit - 1 - *counter when `reverse`): block b goes from src + b * src_stride + i * src_step
/// to dst + b * dst_stride + i * dst_step. Nothing is copied for an index outside [0, limit).
struct IndexedCopy {
  void* dst = nullptr;
  const void* src = nullptr;
  int64_t blocks = 1;
  int64_t block_bytes = 0;
  int64_t dst_stride = 0;
  int64_t src_stride = 0;
  int64_t dst_step = 0;
  int64_t src_step = 0;
  const int64_t* counter = nullptr;
  int64_t limit = 0;
  bool reverse = false;
};
cudaError_t launch_indexed_copy(const IndexedCopy& copy, cudaStream_t stream);

}  // namespace switchyard::cuda
