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
  CudaBackend(int index, const backends::PluginConfig& config);
  const backends::DeviceInfo& device() const override { return info_; }
  backends::Support supports(const ir::Node& node) const override;
  backends::CostEstimate estimate(const ir::Node& node) const override;
  std::unique_ptr<backends::CompiledPartition> compile(
      const backends::Partition& partition) const override;
  std::shared_ptr<backends::HostPool> create_pool(bool poison) const override;
  ir::Datum copy_in(const ir::Datum& value, backends::HostPool& pool) const override;
  ir::Datum copy_out(const ir::Datum& value, backends::HostPool& host_pool) const override;
  std::vector<int> host_inputs(const ir::Node& node) const override;
  std::string precision_of(const ir::Node& node) const override;
  /// Shape computations kept in a partition run there on the host (cuda_partition.cc).
  bool runs_shape_steps_inline() const override { return true; }
  bool owns(const ir::Tensor& tensor) const override;

  int index() const { return index_; }
  Precision precision() const { return precision_; }
  bool graphs_enabled() const { return graphs_; }
  bool fusion_enabled() const { return fusion_; }
  const std::shared_ptr<DeviceAllocator>& allocator() const { return allocator_; }
  /// Records the precision a compiled node runs at (precision_of reads it).
  void record_precision(const ir::Node* node, std::string precision) const;

 private:
  int index_;
  Precision precision_;
  bool graphs_;
  bool fusion_;
  backends::DeviceInfo info_;
  std::shared_ptr<DeviceAllocator> allocator_;
  mutable std::mutex precision_mutex_;
  mutable std::map<const ir::Node*, std::string> node_precision_;
};

/// Compiles a partition for `backend` (cuda_partition.cc).
std::unique_ptr<backends::CompiledPartition> compile_cuda_partition(
    const backends::Partition& partition, const CudaBackend& backend);

}  // namespace switchyard::cuda
