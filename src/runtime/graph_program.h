// GraphProgram: a graph compiled to one kernel per node, run in topological order with values
// released after their last use (buffers recycled through the run's HostPool). Control-flow
// kernels compile their bodies into nested GraphPrograms.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/kernel.h"

namespace switchyard::runtime {

class Profiler;
class RunStream;
class Stream;

/// A queue of the caller's that the run's work on one kind of device must come after
/// (RunOptions.cuda_stream): the devices of `kind` read `handle` (a cudaStream_t for "cuda";
/// opaque to the runtime), others ignore it.
struct CallerQueue {
  std::string kind;
  void* handle = nullptr;
};

/// Simulated timing (a simulated device's `"timing": "model"`): holds the thread that ran a node
/// until the time the device's cost model gives the node has passed.
class NodePacer {
 public:
  virtual ~NodePacer() = default;
  /// Called by the executor after `node` ran, with the time it started.
  virtual void after_node(const ir::Node& node,
                          std::chrono::steady_clock::time_point started) const = 0;
};

/// Per-run state shared by every kernel of one partition's run (each partition of a run gets
/// its own copy: partitions on different devices run at the same time).
struct RunState {
  std::shared_ptr<HostPool> pool;
  int num_threads = 1;
  /// Optional: records each node's time (nullptr = off).
  Profiler* profiler = nullptr;
  /// The device running the current partition (for the profile).
  std::string device = "cpu";
  /// Which of the device's queue workers runs it (for the profile's tracks).
  int worker = 0;
  /// Simulated timing: paces each node to its modelled time (nullptr = real time).
  const NodePacer* pacer = nullptr;
  /// The stream the running partition's kernels enqueue on (runtime/device.h; the CUDA
  /// backend's stream and library handles); nullptr on the cpu and sim devices.
  Stream* stream = nullptr;
  /// The run's stream on the running partition's device (runtime/device.h; set by the runtime
  /// where the device gives one): the partition may leave its work queued there.
  RunStream* run_stream = nullptr;
  /// The caller's queue the run's device work follows (none when handle is null).
  CallerQueue caller_queue;
  /// When the run must stop (RunOptions): its deadline (time_point::max() = none), the
  /// deadline as the caller gave it (for messages), and a flag another thread may set.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int64_t deadline_ms = 0;
  const std::atomic<bool>* cancel_flag = nullptr;
  /// Where the run counts the times the host waited for a device (RunStats::host_syncs);
  /// copies of the state share it. nullptr: not counted.
  std::atomic<int64_t>* host_syncs = nullptr;
  /// Counts `n` host waits for a device (a stream synchronisation, a read of device data).
  void count_host_sync(int64_t n = 1) const {
    if (host_syncs) host_syncs->fetch_add(n, std::memory_order_relaxed);
  }
  /// Throws Cancelled naming `where` when the run was cancelled or its deadline passed. The
  /// executor calls it before every node and control-flow kernels before every iteration, so
  /// a run stops within one kernel's time.
  void check_stop(const ir::Node& where) const {
    if (cancel_flag == nullptr && deadline == std::chrono::steady_clock::time_point::max()) return;
    check_stop_slow(where);
  }

 private:
  void check_stop_slow(const ir::Node& where) const;
};

/// The values of one running graph, with a link to the enclosing graph's frame.
struct Frame {
  const GraphProgram* program = nullptr;
  std::vector<ir::Datum>* slots = nullptr;
  const Frame* parent = nullptr;
  /// The value's current datum here or in an enclosing frame; nullptr if not (yet) computed.
  const ir::Datum* lookup(const ir::Value* v) const;
};

class GraphProgram {
 public:
  /// Creates one kernel per node; throws Unsupported naming the first node without a kernel.
  GraphProgram(const ir::Graph& graph, const KernelRegistry& registry);
  /// A program over some of `graph`'s nodes (a partition): `inputs` are the values it reads
  /// from outside, `outputs` those it returns; run() takes and returns them in these orders.
  GraphProgram(const ir::Graph& graph, const std::vector<const ir::Node*>& nodes,
               const std::vector<const ir::Value*>& inputs,
               const std::vector<const ir::Value*>& outputs, const KernelRegistry& registry);

  /// Runs with `inputs` in graph-input order; returns the graph outputs in order. `outer` gives
  /// values of enclosing graphs (for subgraphs; nullptr at top level).
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, RunState& state,
                             const Frame* outer = nullptr) const;

  const ir::Graph& graph() const { return graph_; }
  /// Slot of a value owned by this graph, or -1.
  int slot_of(const ir::Value* v) const;

 private:
  struct Step {
    const ir::Node* node;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> input_slots;  // -1 for omitted; -2 for outer-scope value
    std::vector<int> output_slots;
    std::vector<int> release_after;  // slots whose last use is this step
  };
  const ir::Graph& graph_;
  std::unordered_map<const ir::Value*, int> slot_by_value_;
  std::vector<ir::Datum> constants_;  // per slot; empty kind when not a constant
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<const ir::Value*> output_values_;
  std::vector<Step> steps_;
  size_t num_slots_ = 0;
};

}  // namespace switchyard::runtime

namespace switchyard::runtime {
/// Runs `kernel` for `node`: an Error that does not name the node gets its name prefixed;
/// bad_alloc becomes OutOfMemory and length_error InvalidArgument, both naming the node.
void run_kernel(const Kernel& kernel, const ir::Node& node, KernelContext& ctx);
/// Runs one node's kernel on the given inputs outside any graph (constant folding).
/// `memory_limit` (bytes, 0 = none) caps what the evaluation may allocate (OutOfMemory past it).
std::vector<ir::Datum> evaluate_node(const KernelRegistry& registry, const ir::Node& node,
                                     const std::vector<ir::Datum>& inputs, size_t memory_limit = 0);
}  // namespace switchyard::runtime
