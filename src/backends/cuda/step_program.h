// The steps of one graph run on one CUDA stream: a partition's private graph, or a body of one
// of its If, Loop or Scan nodes. Each node is a step: its CUDA kernel; the cpu kernel on the host
// for the small shape computations placement keeps in the partition (docs/placement.md, rule 3);
// or, for a control-flow node, a composite step that runs its bodies as programs of their own
// (control_flow.h). Values live in slots, released after their last use; kernels enqueue on the
// stream and never wait for it. Host-only header (g++).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "ir/graph.h"
#include "runtime/graph_program.h"
#include "runtime/kernel.h"
#include "runtime/memory.h"

namespace switchyard::cuda {

class CudaBackend;

/// What the programs of one partition share: the device, the constants' pool, the host kernels
/// and the table that turns a kernel's error word back into its node.
class ProgramContext {
 public:
  /// `host_kernels`: Partition::host_kernels (nullptr: no host steps).
  ProgramContext(const CudaBackend& backend, std::shared_ptr<runtime::MemoryBudget> budget,
                 const runtime::KernelRegistry* host_kernels);

  const CudaBackend& backend() const { return backend_; }
  const runtime::KernelRegistry* host_kernels() const { return host_kernels_; }
  /// Device copies of every program's constants (charged to the memory budget).
  runtime::HostPool& constants_pool() const { return *constants_pool_; }
  /// True when SWITCHYARD_CUDA_HOST_LOOPS=1 was set when the partition compiled: If, Loop and
  /// Scan then run host-driven (the baseline of bench/gpu/control_flow_bench).
  bool host_driven_control_flow() const { return host_driven_control_flow_; }

  /// The code a step's kernels report faults with (CudaRunContext::error_code): unique in the
  /// partition, nested programs included.
  int32_t add_fault_node(const ir::Node& node);
  /// Throws the error a kernel stored in an error word (cuda_context.h: fault_code), naming
  /// its node; Internal for a word no step could have stored.
  [[noreturn]] void throw_kernel_fault(int32_t word, int partition) const;

 private:
  const CudaBackend& backend_;
  const runtime::KernelRegistry* host_kernels_;
  std::shared_ptr<runtime::HostPool> constants_pool_;
  bool host_driven_control_flow_ = false;
  std::vector<const ir::Node*> fault_nodes_;  // code - 1 → node
};

/// A step that is more than one kernel: a control-flow node (control_flow.h).
class CompositeStep {
 public:
  virtual ~CompositeStep() = default;
  /// Computes the node's outputs on rc.stream. `inputs` holds the node's inputs (nullptr for
  /// omitted ones), then the values of enclosing graphs its bodies read, in implicit_inputs()
  /// order.
  virtual void run(const std::vector<const ir::Datum*>& inputs, std::vector<ir::Datum>& outputs,
                   runtime::RunState& state, CudaRunContext& rc) const = 0;
  /// The values of enclosing graphs its bodies read (constants excepted: bodies hold their own).
  const std::vector<const ir::Value*>& implicit_inputs() const { return implicit_inputs_; }

 protected:
  std::vector<const ir::Value*> implicit_inputs_;
};

class StepProgram {
 public:
  /// Builds one step per node of `graph`. `inputs` are the values run() takes, in order: the
  /// graph's inputs, and for a body the non-constant values of enclosing graphs it reads
  /// (constants of enclosing graphs are copied in as this program's own). `input_on_host[i]`:
  /// input i arrives in host memory (Partition::input_on_host). `record_profile`: profiled runs
  /// record one event per step (the partition's own program; bodies do not).
  StepProgram(const ir::Graph& graph, const std::vector<const ir::Value*>& inputs,
              const std::vector<const ir::Value*>& outputs, std::vector<char> input_on_host,
              ProgramContext& context, bool record_profile);
  ~StepProgram();
  StepProgram(const StepProgram&) = delete;
  StepProgram& operator=(const StepProgram&) = delete;

  /// Runs every step on rc.stream and returns the outputs (work may still be queued). With
  /// `retain`, no value is released early: every value the run made is moved there at the end,
  /// so the caller decides when their buffers return to the pool (a loop body captured into a
  /// CUDA graph, whose buffers every iteration reuses).
  std::vector<ir::Datum> execute(std::vector<ir::Datum> inputs, runtime::RunState& state,
                                 CudaRunContext& rc,
                                 std::vector<ir::Datum>* retain = nullptr) const;

  const ir::Graph& graph() const { return graph_; }

 private:
  struct Step;
  void record_profile(runtime::Profiler& profiler, std::vector<cudaEvent_t>& events,
                      int64_t host_start, runtime::RunState& state, CudaRunContext& rc) const;

  const ir::Graph& graph_;
  const ProgramContext& context_;
  const bool record_profile_;
  std::vector<char> input_on_host_;
  std::vector<Step> steps_;
  std::shared_ptr<runtime::HostPool> host_pool_;  // host steps' results (null: none)
  size_t num_slots_ = 0;
  std::vector<ir::Datum> constants_;       // device copies, per slot
  std::vector<ir::Datum> host_constants_;  // host tensors for host reads, per slot
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
};

/// Inputs of `node` its step reads on the host: its CUDA kernel's host inputs
/// (KernelDef::host_inputs), and a Loop's trip count (control_flow.h).
std::vector<int> step_host_inputs(const ir::Node& node);

}  // namespace switchyard::cuda
