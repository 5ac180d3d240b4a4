// The backend seam: a Backend is one device (cpu, sim:N, cuda:N). Placement asks it what it can
// run and what that costs; the runtime asks it to compile a partition and to move values into
// its memory. Placement and runtime see only this header (and kernel.h / memory.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/executor.h"
#include "backends/kernel.h"

namespace switchyard::backends {

/// What a device is, for discovery, placement and reports.
struct DeviceInfo {
  std::string id;    ///< "cpu", "sim:0", "cuda:1": what --device and reports use
  std::string kind;  ///< "cpu", "sim", "cuda"
  int index = 0;     ///< N of sim:N / cuda:N
  std::string name;  ///< human-readable ("simulated accelerator 0", "NVIDIA H200")
  std::string uuid;
  uint64_t memory_bytes = 0;  ///< 0 = unknown / host memory
  bool is_host = false;       ///< values here are host memory (the cpu)
  bool is_gpu = false;        ///< counts as a GPU for compute units and defaults
  /// Host code may read values in this device's memory (cpu, sim); false for GPUs, whose
  /// values leave through Backend::copy_out.
  bool host_addressable = true;
  int sm_count = 0;                ///< GPUs: multiprocessors
  std::string compute_capability;  ///< GPUs: "9.0"
  std::vector<std::string> peers;  ///< GPUs: ids of devices it can access directly
  // Cost-model parameters (placement estimates; not promises).
  double gflops = 50.0;            ///< sustained arithmetic rate
  double gbytes_per_s = 20.0;      ///< sustained memory bandwidth
  double copy_latency_us = 0.0;    ///< fixed cost of one transfer to/from the host
  double copy_gbytes_per_s = 0.0;  ///< transfer bandwidth to/from the host (0: no copies)
};

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
  const KernelRegistry* host_kernels = nullptr;
};

/// The arithmetic precision one node of the user's graph runs at in a compiled partition.
struct NodePrecision {
  std::string node;       ///< the node's name in the user's graph
  std::string precision;  ///< "fp32", "fp16", ...
};

/// Nodes of the user's graph that run as one fused kernel: `members[0]` is the node that
/// remains (its name is the fused node's), the rest were absorbed into it.
struct FusionGroup {
  std::vector<std::string> members;
};

/// A partition lowered to one device.
class CompiledPartition {
 public:
  virtual ~CompiledPartition() = default;
  /// The groups of the partition's nodes it runs as fused kernels (for the placement report).
  virtual std::vector<FusionGroup> fusions() const { return {}; }
  /// The precision each node computes at, where the device has more than one (empty: the
  /// device's one precision, not reported).
  virtual std::vector<NodePrecision> precisions() const { return {}; }
  /// Runs with inputs in Partition::inputs order (already in this device's memory); returns
  /// outputs in Partition::outputs order, in this device's memory.
  virtual std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, RunState& state) const = 0;
};

/// Deep copy of a value (tensors, sequences) into `pool`'s memory (host-addressable pools).
ir::Datum copy_datum(const ir::Datum& value, HostPool& pool);
/// An uninitialised tensor of `like`'s dtype and shape in `pool`'s memory.
ir::Tensor allocate_like(const ir::Tensor& like, HostPool& pool);
/// `value` with `f` applied to its tensor or to each tensor of its sequence (other kinds as
/// they are): how a device moves a value of any kind.
ir::Datum map_tensors(const ir::Datum& value,
                      const std::function<ir::Tensor(const ir::Tensor&)>& f);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceInfo& device() const = 0;
  /// Whether this device can run the node; the reason is user-facing when not.
  virtual Support supports(const ir::Node& node) const = 0;
  /// Estimated cost of the node here under `options` (precision changes arithmetic rates),
  /// from its static types (unknown dims count as 1).
  virtual CostEstimate estimate(const ir::Node& node, const CompileOptions& options) const;
  /// Lowers a partition (its nodes all placed here) to this device under `options`.
  virtual std::unique_ptr<CompiledPartition> compile(const Partition& partition,
                                                     const CompileOptions& options) const = 0;
  /// A new pool of this device's memory for one run's values.
  virtual std::shared_ptr<HostPool> create_pool(bool poison) const = 0;
  /// Copies a value (host memory or another device's) into this device's memory, allocating
  /// from `pool` (a pool this backend created).
  virtual ir::Datum copy_in(const ir::Datum& value, HostPool& pool) const = 0;
  /// Copies a value in this device's memory to host memory allocated from `host_pool` (a pool
  /// of a host-addressable device). Only devices that are not host_addressable need this.
  virtual ir::Datum copy_out(const ir::Datum& value, HostPool& host_pool) const {
    return copy_datum(value, host_pool);
  }
  /// Inputs of the node this device's kernel reads on the host (shape-like values).
  virtual std::vector<int> host_inputs(const ir::Node&) const { return {}; }
  /// Whether a tensor's storage lives in this device's memory (for checks and tests).
  virtual bool owns(const ir::Tensor& tensor) const = 0;
  /// The host kernels when this backend runs them (cpu, sim): used to fold constants.
  virtual const KernelRegistry* host_kernels() const { return nullptr; }
  /// Whether this device's partitions run small integer shape computations (placement's
  /// host-shape nodes: Shape/Size and what is computed from them) on the host inside the
  /// partition, so they may stay in it instead of splitting it around a cpu partition.
  virtual bool runs_shape_steps_inline() const { return false; }
};

/// A partition run by a GraphProgram over `registry`'s kernels (the cpu and sim backends).
std::unique_ptr<CompiledPartition> compile_program_partition(const Partition& partition,
                                                             const KernelRegistry& registry);
/// FLOPs and bytes of a node from its static types (shared by every backend's estimate()).
CostEstimate estimate_node_work(const ir::Node& node);

}  // namespace switchyard::backends
