#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/cpu_kernels.h"

namespace switchyard::cpu {

CpuBackend::CpuBackend(uint64_t run_memory_limit) : run_memory_limit_(run_memory_limit) {
  info_.id = "cpu";
  info_.kind = "cpu";
  info_.name = "host CPU";
  info_.is_host = true;
  // Estimates only, and fixed rather than measured, so the same graph, options and devices
  // place the same way on every machine: about what oneDNN reaches on two AVX2 cores.
  info_.gflops = 80.0;
  info_.gbytes_per_s = 30.0;
}

backends::Support CpuBackend::supports(const ir::Node& node) const {
  return cpu_kernels().supports(node);
}

std::unique_ptr<backends::CompiledPartition> CpuBackend::compile(
    const backends::Partition& partition) const {
  return backends::compile_program_partition(partition, cpu_kernels());
}

std::shared_ptr<backends::HostPool> CpuBackend::create_pool(bool poison) const {
  auto pool = backends::HostPool::create(poison, backends::kHostMemorySpace);
  if (run_memory_limit_ > 0) pool->set_limit(run_memory_limit_, "cpu");
  return pool;
}

ir::Datum CpuBackend::copy_in(const ir::Datum& value, backends::HostPool& pool) const {
  return backends::copy_datum(value, pool);
}

bool CpuBackend::owns(const ir::Tensor& tensor) const {
  return backends::memory_space_of(tensor) == backends::kHostMemorySpace;
}

const backends::KernelRegistry* CpuBackend::host_kernels() const { return &cpu_kernels(); }

}  // namespace switchyard::cpu
