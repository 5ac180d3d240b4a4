// CpuBackend: the host as a device. Its kernels are the CPU kernel registry.
#pragma once

#include "backends/backend.h"

namespace switchyard::cpu {

class CpuBackend : public backends::Backend {
 public:
  CpuBackend();
  const backends::DeviceInfo& device() const override { return info_; }
  backends::Support supports(const ir::Node& node) const override;
  std::unique_ptr<backends::CompiledPartition> compile(
      const backends::Partition& partition) const override;
  std::shared_ptr<backends::HostPool> create_pool(bool poison) const override;
  ir::Datum copy_in(const ir::Datum& value, backends::HostPool& pool) const override;
  bool owns(const ir::Tensor& tensor) const override;
  const backends::KernelRegistry* host_kernels() const override;

 private:
  backends::DeviceInfo info_;
};

}  // namespace switchyard::cpu
