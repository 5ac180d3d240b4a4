// The compiler side of the backend seam: a Backend is one device (cpu, sim:N, cuda:N) — its
// device side (runtime/device.h: info, pools, copies) plus what placement and the compiler ask
// of it: whether it can run a node, what that costs, and a partition lowered under the compile's
// options.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/graph_program.h"
#include "runtime/kernel.h"

namespace switchyard::backends {

/// Arithmetic precision a device computes floats at (Options.precision).
enum class Precision { Fp32, Tf32, Fp16, Bf16 };
/// "fp32", "tf32", "fp16" or "bf16"; throws InvalidArgument naming --precision otherwise.
Precision parse_precision(const std::string& text);
const char* precision_name(Precision p);

/// What one compile asks of every device's lowering of its partitions: the public Options that
/// change how a partition is lowered, validated once by the compiler and handed to
/// Backend::estimate and Backend::compile (never kept as device state).
struct CompileOptions {
  /// GPUs: fp32 (TF32 off), tf32 (float32 storage, TF32 matrix math), fp16 or bf16.
  Precision precision = Precision::Fp32;
  /// Capture static-shape partitions as device graphs (CUDA graphs) and replay them.
  bool device_graphs = true;
  /// Fuse inside partitions (backends/fusion and the backends' own chains).
  bool fusion = true;
  /// The executable's `--memory-limit` on the partition's device (null: none): every pool the
  /// compiled partition makes there (constants, captured graphs' buffers) is charged to it, as
  /// are the runs' pools.
  std::shared_ptr<runtime::MemoryBudget> memory_budget;
};

/// Estimated cost of one node on a device.
struct CostEstimate {
  double microseconds = 0;
  double flops = 0;
  double bytes = 0;  ///< bytes read and written
};

/// The nodes a backend compiles together, with the values that cross its boundary.
struct Partition {
  int index = 0;
  std::string device;
  const ir::Graph* graph = nullptr;
  std::vector<const ir::Node*> nodes;     ///< in execution (topological) order
  std::vector<const ir::Value*> inputs;   ///< read from outside: graph inputs, other partitions
  std::vector<const ir::Value*> outputs;  ///< read by later partitions or graph outputs
  /// Per input: 1 when every read of it here is a host input of its kernel
  /// (Backend::host_inputs), so it arrives in host memory instead of this device's.
  std::vector<char> input_on_host;
  /// The host's kernels (the cpu's), for a device that runs small shape computations on the
  /// host inside its partition (runs_shape_steps_inline); filled in by the runtime, so no
  /// backend includes another's headers. nullptr: the partition has no host steps.
  const runtime::KernelRegistry* host_kernels = nullptr;
};

class Backend : public runtime::Device {
 public:
  /// Whether this device can run the node; the reason is user-facing when not.
  virtual runtime::Support supports(const ir::Node& node) const = 0;
  /// Estimated cost of the node here under `options` (precision changes arithmetic rates),
  /// from its static types (unknown dims count as 1).
  virtual CostEstimate estimate(const ir::Node& node, const CompileOptions& options) const;
  /// Lowers a partition (its nodes all placed here) to this device under `options`.
  virtual std::unique_ptr<runtime::CompiledPartition> compile(
      const Partition& partition, const CompileOptions& options) const = 0;
  /// Inputs of the node this device's kernel reads on the host (shape-like values).
  virtual std::vector<int> host_inputs(const ir::Node&) const { return {}; }
  /// The host kernels when this backend runs them (cpu, sim): used to fold constants.
  virtual const runtime::KernelRegistry* host_kernels() const { return nullptr; }
  /// Whether this device's partitions run small integer shape computations (placement's
  /// host-shape nodes: Shape/Size and what is computed from them) on the host inside the
  /// partition, so they may stay in it instead of splitting it around a cpu partition.
  virtual bool runs_shape_steps_inline() const { return false; }
};

/// A partition run by a GraphProgram over `registry`'s kernels (the cpu and sim backends).
std::unique_ptr<runtime::CompiledPartition> compile_program_partition(
    const Partition& partition, const runtime::KernelRegistry& registry);
/// FLOPs and bytes of a node from its static types (shared by every backend's estimate()).
CostEstimate estimate_node_work(const ir::Node& node);
/// estimate_node_work with the time it takes at `gflops` and `gbytes_per_s`.
CostEstimate estimate_at(const ir::Node& node, double gflops, double gbytes_per_s);

}  // namespace switchyard::backends
