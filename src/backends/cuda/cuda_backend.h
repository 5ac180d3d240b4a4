// CudaBackend: one NVIDIA GPU (cuda:N) behind the backend seam. Values live in device memory
// from a caching allocator (with --memory-limit); copies to and from the host go through pinned
// staging buffers, between GPUs peer-to-peer. A partition compiles to a private graph (fused,
// retyped for --precision) run as kernels on a leased stream, captured as a CUDA graph per
// input-shape signature (cuda_partition.cc).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/device.h"
#include "backends/plugin.h"

namespace switchyard::cuda {

class CudaBackend : public backends::Backend {
 public:
  explicit CudaBackend(int index);
  const runtime::DeviceInfo& device() const override { return info_; }
  runtime::Support supports(const ir::Node& node) const override;
  /// The seam's estimate at this GPU's rates under options.precision (16x the fp32 arithmetic
  /// rate where matrix units take fp16/bf16, 8x for TF32), plus a kernel launch.
  backends::CostEstimate estimate(const ir::Node& node,
                                  const backends::CompileOptions& options) const override;
  std::unique_ptr<runtime::CompiledPartition> compile(
      const backends::Partition& partition, const backends::CompileOptions& options) const override;
  std::shared_ptr<runtime::HostPool> create_pool(
      bool poison, std::shared_ptr<runtime::MemoryBudget> budget) const override;
  ir::Datum copy_in(const ir::Datum& value, runtime::HostPool& pool) const override;
  ir::Datum copy_out(const ir::Datum& value, runtime::HostPool& host_pool) const override;
  std::vector<int> host_inputs(const ir::Node& node) const override;
  /// Shape computations kept in a partition run there on the host (cuda_partition.cc).
  bool runs_shape_steps_inline() const override { return true; }
  void copy_into(const ir::Tensor& src, const ir::Tensor& dst) const override;
  /// A CudaRunStream (device.h): the run's partitions here queue their work on one stream.
  std::unique_ptr<runtime::RunStream> open_run_stream() const override;
  int memory_space() const override { return memory_space_of_device(index_); }

  int index() const { return index_; }
  const std::shared_ptr<DeviceAllocator>& allocator() const { return allocator_; }

 private:
  int index_;
  runtime::DeviceInfo info_;
  std::shared_ptr<DeviceAllocator> allocator_;
};

/// Compiles a partition for `backend` under `options` (cuda_partition.cc).
std::unique_ptr<runtime::CompiledPartition> compile_cuda_partition(
    const backends::Partition& partition, const CudaBackend& backend,
    const backends::CompileOptions& options);

}  // namespace switchyard::cuda
