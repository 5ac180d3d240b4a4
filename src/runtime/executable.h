// Executable: what the compiler produced (src/compiler/), run at any input shape its symbolic
// dims allow — compiled partitions in order on their devices, with the copies between them.
// Immutable once built but for its variables' state (a snapshot pointer swapped under a lock);
// run() is thread-safe and reentrant (per-run scratch comes from pools, never from members). The
// runtime knows nothing of how the plan was made (passes, placement).
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/device.h"
#include "runtime/profiler.h"

namespace switchyard::runtime {

/// How runs behave (set at compile time, fixed for the executable's life).
struct RuntimeOptions {
  /// Threads per run (0 = every core of the machine).
  int num_threads = 0;
  /// Shape signatures whose prepared state (memory pools) is kept, least recently used first out.
  size_t shape_cache_capacity = 8;
  /// Fill fresh buffers with 0xFF bytes (tests use it to catch reads of unwritten memory).
  bool poison_buffers = false;
  /// Device id → bytes one run may hold in that device's pool (`--memory-limit cpu=BYTES`):
  /// past it, an allocation throws OutOfMemory naming the device, before it is made.
  std::map<std::string, uint64_t> run_memory_limits;
  /// Device id → the executable's budget there (`--memory-limit` on any other device), shared
  /// with its compiled partitions: every run's pool on the device is charged to it.
  std::map<std::string, std::shared_ptr<MemoryBudget>> memory_budgets;
};

/// The program of an executable: the compiled partitions in execution order and the values
/// that cross between them, by dense id.
struct ExecutionPlan {
  /// A value moved from one device's memory to another's (indices into the device list).
  struct Copy {
    int value = 0;
    int from_device = 0;
    int to_device = 0;
  };
  /// One compiled partition and what surrounds its run.
  struct Step {
    int device = 0;
    std::unique_ptr<runtime::CompiledPartition> partition;
    std::vector<int> inputs;          ///< value ids in the partition's input order
    std::vector<char> input_on_host;  ///< per input: 1 when it is read from host memory
    std::vector<int> outputs;         ///< value ids in the partition's output order
    std::vector<Copy> copies_before;
    /// Values read only through Shape/Size: only their shape crosses (no data, no copy).
    std::vector<Copy> shape_transfers_before;
    std::vector<int> release_after;        ///< value ids no later step or output reads
    const ir::Node* first_node = nullptr;  ///< named when a stop request is seen before it
  };
  /// Crossing values by id; the graph inputs come first, in graph-input order.
  std::vector<const ir::Value*> values;
  std::vector<Step> steps;
  /// Graph outputs produced off the host, copied there after the last step.
  std::vector<Copy> final_copies;
};

using switchyard::RunStats;

/// The values of an executable's variables by name: one committed state, never changed once
/// published (a run reads the state it started with; a commit publishes a new one).
using VariableValues = std::map<std::string, ir::Tensor>;

/// When a run must stop early (public RunOptions).
struct RunControl {
  int64_t deadline_ms = 0;  ///< 0 = no deadline
  const std::atomic<bool>* cancel_flag = nullptr;
  /// Index into devices() of the device whose memory the outputs are left in (0: the host).
  int output_device = 0;
  /// The caller's queue the run's device work must come after (RunState::caller_queue).
  CallerQueue caller_queue;
  /// Per graph output (in order; empty = none, or an undefined tensor): a caller's buffer, in
  /// host memory or one of devices()', that the output is written into and returned as.
  std::vector<ir::Tensor> output_buffers;
};

class Executable {
 public:
  /// `devices[0]` is the host cpu; every step's device indexes `devices`.
  Executable(std::unique_ptr<ir::Graph> graph, std::vector<std::shared_ptr<const Device>> devices,
             ExecutionPlan plan, const RuntimeOptions& options);

  const ir::Graph& graph() const { return *graph_; }
  const RuntimeOptions& options() const { return options_; }
  /// Threads each run uses (options().num_threads, or every core when that was 0).
  int num_threads() const { return num_threads_; }

  /// The devices the plan indexes; [0] is the host cpu.
  const std::vector<std::shared_ptr<const Device>>& devices() const { return devices_; }

  /// The inputs a caller gives: the graph inputs but the variables' (which the executable
  /// binds itself), in graph-input order.
  const std::vector<const ir::Value*>& user_inputs() const { return user_inputs_; }
  /// The outputs a run returns: the graph outputs but the variables' assigns, in order.
  const std::vector<const ir::Value*>& user_outputs() const { return user_outputs_; }
  /// The variables' current values: the state the last successful assigning run (or
  /// set_variable) committed. Never waits for a run.
  std::shared_ptr<const VariableValues> variables() const;
  /// Replaces variable `name`'s value by a copy of `value`, after any run that assigns variables
  /// has finished. Throws InvalidArgument naming the variable when there is none of that name or
  /// `value` has another dtype or shape, or lives in a device's memory.
  void set_variable(const std::string& name, const ir::Tensor& value) const;

  /// Runs with inputs in user_inputs() order. Checks each input's kind, dtype, rank and dims
  /// against the declared type (symbolic dims must agree across inputs); throws
  /// InvalidArgument naming the input. An input tensor in a device's memory (Device::owns)
  /// starts there: a partition on that device reads it in place, and it is copied only where
  /// something reads it elsewhere. Returns outputs in graph-output order, in host memory, or
  /// in the memory of `control->output_device`, in user_outputs() order (`control`'s
  /// output_buffers are indexed alike).
  /// `control` (optional) sets a deadline and a cancellation flag: the run throws Cancelled.
  /// Variables: the run reads the state current when it starts and, when it succeeds, commits
  /// every assign at once (a failed run commits nothing); runs of a graph that assigns
  /// variables run one at a time, so the state is always that of some sequence of whole runs.
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, RunStats* stats = nullptr,
                             runtime::Profiler* profiler = nullptr,
                             const RunControl* control = nullptr) const;
  /// Same, inputs by name (every user input must be given; unknown names and variables' names
  /// are errors).
  std::vector<ir::Datum> run(const std::map<std::string, ir::Datum>& inputs,
                             RunStats* stats = nullptr, runtime::Profiler* profiler = nullptr,
                             const RunControl* control = nullptr) const;

  /// Number of shape signatures currently cached.
  size_t cached_shape_signatures() const;

 private:
  using PoolSet = std::vector<std::shared_ptr<runtime::HostPool>>;
  // Runs the plan with every graph input (variables included); returns every graph output,
  // the assigns' in host memory. `control`'s output_buffers are indexed by graph output.
  std::vector<ir::Datum> run_graph(std::vector<ir::Datum> inputs, RunStats* stats,
                                   runtime::Profiler* profiler, const RunControl* control) const;
  std::vector<ir::Datum> run_with_variables(std::vector<ir::Datum> inputs, RunStats* stats,
                                            runtime::Profiler* profiler,
                                            const RunControl* control) const;
  std::string check_inputs(const std::vector<ir::Datum>& inputs) const;
  PoolSet acquire_pools(const std::string& signature, bool* hit) const;
  void release_pools(const std::string& signature, PoolSet pools) const;

  std::unique_ptr<ir::Graph> graph_;
  std::vector<std::shared_ptr<const Device>> devices_;
  ExecutionPlan plan_;
  RuntimeOptions options_;
  int num_threads_ = 1;
  std::map<const ir::Value*, int> value_ids_;

  // Variables: each one's graph input and assign (graph output index, -1: none).
  struct VariableSlot {
    std::string name;
    size_t input = 0;
    int output = -1;
    ir::DType dtype = ir::DType::Undefined;
    std::vector<int64_t> shape;
  };
  std::vector<VariableSlot> variable_slots_;
  std::vector<const ir::Value*> user_inputs_, user_outputs_;
  std::vector<char> assign_output_;  // per graph output: 1 when it is a variable's assign
  bool assigns_ = false;             // some variable is assigned: runs are serialized
  mutable std::mutex run_mutex_;     // held by each assigning run and by set_variable
  mutable std::mutex state_mutex_;   // guards state_ (held only to read or swap the pointer)
  mutable std::shared_ptr<const VariableValues> state_;

  // Per shape signature: idle pool sets (one pool per device), most recently used first.
  struct CacheEntry {
    std::string signature;
    std::vector<PoolSet> idle;
  };
  mutable std::mutex cache_mutex_;
  mutable std::list<CacheEntry> cache_;
};

}  // namespace switchyard::runtime
