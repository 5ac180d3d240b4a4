// CpuBackend: the host as a device. Its kernels are the CPU kernel registry.
#pragma once

#include "backends/backend.h"

namespace switchyard::cpu {

class CpuBackend : public backends::Backend {
 public:
  CpuBackend();
  const runtime::DeviceInfo& device() const override { return info_; }
  runtime::Support supports(const ir::Node& node) const override;
  /// compile_fused_partition, fusing unless options.fusion is off.
  std::unique_ptr<runtime::CompiledPartition> compile(
      const backends::Partition& partition, const backends::CompileOptions& options) const override;
  std::shared_ptr<runtime::HostPool> create_pool(
      bool poison, std::shared_ptr<runtime::MemoryBudget> budget) const override;
  ir::Datum copy_in(const ir::Datum& value, runtime::HostPool& pool) const override;
  int memory_space() const override { return runtime::kHostMemorySpace; }
  const runtime::KernelRegistry* host_kernels() const override;

 private:
  runtime::DeviceInfo info_;
};

/// A partition run by the cpu kernels after the shared fusions (backends/fusion/fusion.h): what
/// the cpu compiles, and the simulated devices too, so that a model gives the same bits
/// wherever placement puts a whole fusion group.
/// With `fusion` false, the partition's nodes run one kernel each (--no-fusion).
std::unique_ptr<runtime::CompiledPartition> compile_fused_partition(
    const backends::Partition& partition, bool fusion = true);

}  // namespace switchyard::cpu
