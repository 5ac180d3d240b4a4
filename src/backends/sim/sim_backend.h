// SimBackend: a simulated accelerator — the CPU's kernels behind a separate memory space, with a
// configurable op subset and cost parameters — so partitioning, copies and fallback are
// exercised where no GPU exists (CI). The one backend allowed to use another's code (the CPU
// kernels); its results are therefore bit-identical to the CPU's.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace switchyard::sim {

/// One simulated device as --sim-config describes it (schema in docs/placement.md).
struct SimDeviceConfig {
  std::string name;
  bool all_ops = true;        ///< "ops": "all" (default) or a list
  std::set<std::string> ops;  ///< when !all_ops: the op types it runs
  std::set<std::string> exclude_ops;
  // Defaults describe a modest accelerator: faster than the host at arithmetic, with a PCIe-like
  // link, so that island merging has real trade-offs to weigh.
  double gflops = 1000.0;
  double gbytes_per_s = 500.0;
  double copy_latency_us = 10.0;
  double copy_gbytes_per_s = 10.0;
  uint64_t memory_bytes = 0;        ///< 0 = unlimited
  bool shape_steps_inline = false;  ///< Backend::runs_shape_steps_inline (as the CUDA backend)
  /// "timing": "model": each node takes (at least) the time estimate() gives it and each copy
  /// to or from the device copy_latency_us + bytes / copy_gbytes_per_s, the device's worker
  /// sleeping out the rest; "real" (default): the time the cpu kernels take.
  bool modelled_timing = false;
};

/// Parses a --sim-config file: a JSON list with one object per device. Throws InvalidArgument
/// naming the file, the device index and the field on any error (unknown fields included).
std::vector<SimDeviceConfig> parse_sim_config(const std::string& path);

class SimBackend : public backends::Backend {
 public:
  SimBackend(int index, SimDeviceConfig config);
  const runtime::DeviceInfo& device() const override { return info_; }
  /// Supported when the op (and every op of its bodies) is in the subset and a CPU kernel
  /// accepts the node.
  runtime::Support supports(const ir::Node& node) const override;
  /// Runs the partition on the CPU kernels, after checking that every input arrived in this
  /// device's memory (a missing copy is an internal error, never silently tolerated).
  std::unique_ptr<runtime::CompiledPartition> compile(
      const backends::Partition& partition, const backends::CompileOptions& options) const override;
  std::shared_ptr<runtime::HostPool> create_pool(
      bool poison, std::shared_ptr<runtime::MemoryBudget> budget) const override;
  ir::Datum copy_in(const ir::Datum& value, runtime::HostPool& pool) const override;
  int memory_space() const override;
  const runtime::KernelRegistry* host_kernels() const override;
  bool runs_shape_steps_inline() const override { return config_.shape_steps_inline; }
  /// Under "timing": "model", copy_latency_us + bytes / copy_gbytes_per_s; else 0.
  double simulated_copy_us(size_t bytes) const override;
  const SimDeviceConfig& config() const { return config_; }

 private:
  bool op_allowed(const std::string& op) const;
  int index_;
  SimDeviceConfig config_;
  runtime::DeviceInfo info_;
};

/// `count` devices that run every op (--sim N).
std::vector<std::shared_ptr<backends::Backend>> create_sim_backends(int count);
/// Devices from a --sim-config file.
std::vector<std::shared_ptr<backends::Backend>> create_sim_backends(
    const std::vector<SimDeviceConfig>& configs);

}  // namespace switchyard::sim
