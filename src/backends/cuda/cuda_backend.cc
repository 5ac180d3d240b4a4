#include "backends/cuda/cuda_backend.h"

#include <cstring>

#include "backends/cuda/control_flow.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/step_program.h"
#include "ir/check.h"

namespace switchyard::cuda {

CudaBackend::CudaBackend(int index) : index_(index) {
  info_.id = "cuda:" + std::to_string(index);
  allocator_ = std::make_shared<DeviceAllocator>(index);
  if (device_lost(index)) {
    info_.kind = "cuda";
    info_.index = index;
    info_.name = "lost device";
    info_.is_gpu = true;
    info_.host_addressable = false;
    return;
  }
  DeviceState& d = device_state(index);
  const cudaDeviceProp& p = d.props();
  info_.id = "cuda:" + std::to_string(index);
  info_.kind = "cuda";
  info_.index = index;
  info_.name = p.name;
  info_.uuid = d.uuid();
  info_.memory_bytes = p.totalGlobalMem;
  info_.is_gpu = true;
  info_.host_addressable = false;
  info_.sm_count = p.multiProcessorCount;
  info_.compute_capability = fmt::format("{}.{}", p.major, p.minor);
  int driver = 0, runtime_version = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime_version);
  info_.software = fmt::format("CUDA driver {}, runtime {}, cuDNN {}, cuBLASLt {}", driver,
                               runtime_version, cudnnGetVersion(), cublasLtGetVersion());
  int count = 0;
  cudaGetDeviceCount(&count);
  for (int other = 0; other < count; ++other) {
    int can = 0;
    if (other != index && cudaDeviceCanAccessPeer(&can, index, other) == cudaSuccess && can)
      info_.peers.push_back("cuda:" + std::to_string(other));
  }
  // Cost model: fp32 FMA rate (128 lanes per SM on sm_80+) and DRAM bandwidth (DDR: 2
  // transfers per clock). estimate() scales the arithmetic rate for --precision.
  double sm_ghz = d.sm_clock_khz() > 0 ? d.sm_clock_khz() / 1e6 : 1.5;
  info_.gflops = p.multiProcessorCount * 128.0 * 2.0 * sm_ghz;
  double mem_ghz = d.memory_clock_khz() > 0 ? d.memory_clock_khz() / 1e6 : 1.0;
  info_.gbytes_per_s = 2.0 * mem_ghz * p.memoryBusWidth / 8.0;
  if (info_.gbytes_per_s <= 0) info_.gbytes_per_s = 1000;
  info_.copy_latency_us = 10;
  info_.copy_gbytes_per_s = 20;
}

runtime::Support CudaBackend::supports(const ir::Node& node) const {
  // If, Loop and Scan run in the partition with their bodies (control_flow.h).
  if (!node.subgraphs().empty()) return control_flow_support(node);
  runtime::Support s = cuda_kernels().supports(node);
  if (!s.ok) return runtime::Support::no(fmt::format("no CUDA kernel: {}", s.reason));
  return s;
}

backends::CostEstimate CudaBackend::estimate(const ir::Node& node,
                                             const backends::CompileOptions& options) const {
  double gflops = info_.gflops;
  if (options.precision == Precision::Fp16 || options.precision == Precision::Bf16) gflops *= 16;
  if (options.precision == Precision::Tf32) gflops *= 8;
  backends::CostEstimate e = backends::estimate_at(node, gflops, info_.gbytes_per_s);
  e.microseconds += 2.0;  // a kernel launch (hidden by CUDA graphs, but not free)
  return e;
}

std::unique_ptr<runtime::CompiledPartition> CudaBackend::compile(
    const backends::Partition& partition, const backends::CompileOptions& options) const {
  check_device_alive(index_);
  return compile_cuda_partition(partition, *this, options);
}

std::shared_ptr<runtime::HostPool> CudaBackend::create_pool(
    bool poison, std::shared_ptr<runtime::MemoryBudget> budget) const {
  auto pool = runtime::HostPool::create(poison, memory_space_of_device(index_),
                                        runtime::budgeted(allocator_, std::move(budget)));
  pool->set_max_cached_bytes(SIZE_MAX);
  return pool;
}

ir::Datum CudaBackend::copy_in(const ir::Datum& value, runtime::HostPool& pool) const {
  SY_ASSERT(pool.memory_space() == memory_space_of_device(index_));
  return runtime::map_tensors(value, [&](const ir::Tensor& t) {
    SY_CHECK(t.dtype() != ir::DType::String, Unsupported, "string tensors cannot be copied to {}",
             info_.id);
    ir::Tensor out = runtime::allocate_like(t, pool);
    if (!t.nbytes()) return out;
    int from = device_of_memory_space(runtime::memory_space_of(t));
    if (from < 0) {
      device_state(index_).copy_from_host(out.raw(), t.raw(), t.nbytes());
    } else {
      // Another GPU (peer access where enabled; staged by the driver otherwise) or this one.
      check_device_alive(from);
      device_state(index_).copy_from_device(out.raw(), t.raw(), from, t.nbytes());
    }
    return out;
  });
}

ir::Datum CudaBackend::copy_out(const ir::Datum& value, runtime::HostPool& host_pool) const {
  return runtime::map_tensors(value, [&](const ir::Tensor& t) {
    ir::Tensor out = runtime::allocate_like(t, host_pool);
    if (!t.nbytes()) return out;
    if (owns(t)) {
      device_state(index_).copy_to_host(out.raw(), t.raw(), t.nbytes());
    } else {
      std::memcpy(out.raw(), t.raw(), t.nbytes());  // already host memory
    }
    return out;
  });
}

void CudaBackend::copy_into(const ir::Tensor& src, const ir::Tensor& dst) const {
  SY_CHECK(src.dtype() != ir::DType::String, Unsupported, "string tensors cannot be copied to {}",
           info_.id);
  if (!src.nbytes() || src.raw() == dst.raw()) return;
  use_device(index_);
  // Unified addressing: one call for a device source and for a host one.
  SY_CUDA_CHECK(
      cudaMemcpy(const_cast<void*>(dst.raw()), src.raw(), src.nbytes(), cudaMemcpyDefault));
}

std::unique_ptr<runtime::RunStream> CudaBackend::open_run_stream() const {
  return std::make_unique<CudaRunStream>(index_);
}

std::vector<int> CudaBackend::host_inputs(const ir::Node& node) const {
  return step_host_inputs(node);
}

namespace {

std::vector<std::shared_ptr<backends::Backend>> create_backends(std::string* status) {
  std::string why;
  int count = device_count(&why);
  std::vector<std::shared_ptr<backends::Backend>> out;
  // A lost device stays listed: compiling or running there fails with DeviceLost.
  for (int i = 0; i < count; ++i) out.push_back(std::make_shared<CudaBackend>(i));
  if (status) {
    if (count == 0) {
      *status = why;
    } else {
      std::string names;
      for (const auto& b : out) names += (names.empty() ? "" : ", ") + b->device().name;
      *status = fmt::format("{} device{}: {}", out.size(), out.size() == 1 ? "" : "s", names);
    }
  }
  return out;
}

const backends::BackendPlugin kPlugin{backends::kPluginAbiVersion, "cuda", &create_backends};

}  // namespace

}  // namespace switchyard::cuda

extern "C" __attribute__((visibility("default"))) const switchyard::backends::BackendPlugin*
switchyard_backend_plugin() {
  return &switchyard::cuda::kPlugin;
}
