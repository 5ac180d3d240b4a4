// Executable: what the compiler produced (src/compiler/), run at any input shape its symbolic
// dims allow — compiled partitions on their devices, with the copies between them. Each device
// runs its partitions from its own queue (DeviceQueue); a partition starts once the partitions
// it reads from are done, so devices work at the same time, within a run and across the runs in
// flight (run_async). On a device that gives each run a stream (a GPU: Device::open_run_stream)
// "done" means queued there: the host waits for that stream only where a copy enters or leaves
// the device, and at the run's end (run_job.cc). Immutable once built but for its variables' state
// (a snapshot pointer swapped under a lock); runs are thread-safe and reentrant (per-run scratch
// comes from pools, never from members). The runtime knows nothing of how the plan was made
// (passes, placement).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/device.h"
#include "runtime/device_queue.h"
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
  /// Runs in flight at once (Options.max_in_flight): one more waits in run_async until one ends.
  int max_in_flight = 8;
};

/// The bounds of RuntimeOptions::max_in_flight.
constexpr int kMaxRunsInFlight = 1024;

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
    /// Per input: 1 when the step's nodes read only its shape (Shape/Size). On a host step, an
    /// input the caller gave in a device's memory then crosses as its shape alone (no copy).
    std::vector<char> input_shape_only;
    std::vector<int> outputs;  ///< value ids in the partition's output order
    std::vector<Copy> copies_before;
    /// Values read only through Shape/Size: only their shape crosses (no data, no copy).
    std::vector<Copy> shape_transfers_before;
    std::vector<int> release_after;        ///< value ids no later step or output reads
    const ir::Node* first_node = nullptr;  ///< named when a stop request is seen before it
    /// Earlier steps this one must follow though it reads nothing they produce in its inputs
    /// (a control dependency's ordering input: no data crosses, the order does).
    std::vector<int> after;
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

class RunJob;

class Executable {
 public:
  /// `devices[0]` is the host cpu; every step's device indexes `devices`. Throws
  /// InvalidArgument naming Options.max_in_flight when it is outside 1..kMaxRunsInFlight.
  Executable(std::unique_ptr<ir::Graph> graph, std::vector<std::shared_ptr<const Device>> devices,
             ExecutionPlan plan, const RuntimeOptions& options);
  /// Waits for the runs in flight to end, then stops the devices' workers.
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

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
  /// run_async(...).get(), except that a plan whose steps form one chain (each step follows
  /// the one before it: one partition, or a cpu shape step before a GPU partition) runs on the
  /// calling thread, which would only wait for a worker: no hand-over to a device worker and
  /// back (start_run's `caller_waits`).
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, RunStats* stats = nullptr,
                             runtime::Profiler* profiler = nullptr,
                             const RunControl* control = nullptr) const;
  /// Same, inputs by name (every user input must be given; unknown names and variables' names
  /// are errors).
  std::vector<ir::Datum> run(const std::map<std::string, ir::Datum>& inputs,
                             RunStats* stats = nullptr, runtime::Profiler* profiler = nullptr,
                             const RunControl* control = nullptr) const;
  /// The run of run() started on the devices' queues: returns once it is in flight, with a
  /// future of its outputs, or of the Error it fails with. Waits first while max_in_flight runs
  /// are in flight, and, when the graph assigns variables, until the assigning run before it has
  /// committed. The run holds references to its inputs (their storage stays alive until it
  /// ends; the caller must not write into them meanwhile) and copies `control`; `stats`,
  /// `profiler` and the cancellation flag must stay valid until the future is ready.
  std::future<std::vector<ir::Datum>> run_async(std::vector<ir::Datum> inputs,
                                                RunStats* stats = nullptr,
                                                runtime::Profiler* profiler = nullptr,
                                                const RunControl* control = nullptr) const;
  /// What start_run calls once the run ends: its outputs, or the error it failed with (and no
  /// outputs). Called on a device worker (or on the caller's thread, for a run that fails its
  /// checks or has no partition); it must not throw, and must not destroy the executable.
  using RunDone = std::function<void(std::vector<ir::Datum> outputs, std::exception_ptr error)>;
  /// run_async with a completion callback instead of a future.
  /// `caller_waits`: the caller only waits for the run to end (a synchronous run): a plan whose
  /// steps form one chain then runs on the calling thread, and start_run returns once the run
  /// has ended.
  void start_run(std::vector<ir::Datum> inputs, RunDone done, RunStats* stats = nullptr,
                 runtime::Profiler* profiler = nullptr, const RunControl* control = nullptr,
                 bool caller_waits = false) const;
  /// Named inputs in user_inputs() order; throws InvalidArgument for a missing, unknown or
  /// variable's name.
  std::vector<ir::Datum> order_inputs(const std::map<std::string, ir::Datum>& inputs) const;
  /// The bound on runs in flight (RuntimeOptions::max_in_flight).
  int max_in_flight() const { return options_.max_in_flight; }

  /// Number of shape signatures currently cached.
  size_t cached_shape_signatures() const;

 private:
  friend class RunJob;
  using PoolSet = std::vector<std::shared_ptr<runtime::HostPool>>;
  // Starts the plan with every graph input (variables included) once a place in flight is free
  // (run_job.cc); `done` gets every graph output, the assigns' in host memory, and the run
  // leaves flight after it. `control`'s output_buffers are indexed by graph output. Throws
  // (before anything is in flight) for inputs that do not fit.
  // `caller_waits`: start_run's; a plan of one chain then runs on the calling thread.
  void launch_graph(std::vector<ir::Datum> inputs, const RunDone& done, RunStats* stats,
                    runtime::Profiler* profiler, const RunControl& control,
                    std::chrono::steady_clock::time_point started, bool caller_waits) const;
  std::string check_inputs(const std::vector<ir::Datum>& inputs) const;
  PoolSet acquire_pools(const std::string& signature, bool* hit) const;
  void release_pools(const std::string& signature, PoolSet pools) const;
  void begin_flight() const;
  void end_flight() const;
  // Which steps wait for which (from the plan, once): a step reads values that earlier steps
  // produce or copy where it reads them.
  void link_steps();

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
  // Taken by each assigning run from its read of the state to its commit (which may happen on
  // another thread: a semaphore, not a mutex) and by set_variable.
  mutable std::binary_semaphore run_turn_{1};
  mutable std::mutex state_mutex_;  // guards state_ (held only to read or swap the pointer)
  mutable std::shared_ptr<const VariableValues> state_;

  // The schedule: per step, the steps that wait for it, how many it waits for, and the values
  // it reads; per value, how many steps read it and whether it is dropped once they are done.
  struct StepLinks {
    std::vector<int> dependents;
    int dependencies = 0;
    std::vector<int> reads;
  };
  std::vector<StepLinks> links_;
  std::vector<int> readers_;
  std::vector<char> released_;
  std::vector<char> chained_on_;  // per device: a step there reads another step's results there
  // Every step follows the one before it (directly or through others): nothing in the plan can
  // run at the same time as anything else, so a synchronous run loses nothing on one thread.
  bool one_chain_ = true;
  // One queue per device, its workers started as work arrives.
  std::vector<std::unique_ptr<DeviceQueue>> queues_;
  mutable std::mutex flight_mutex_;
  mutable std::condition_variable flight_changed_;
  mutable int in_flight_ = 0;

  // Per shape signature: idle pool sets (one pool per device), most recently used first.
  struct CacheEntry {
    std::string signature;
    std::vector<PoolSet> idle;
  };
  mutable std::mutex cache_mutex_;
  mutable std::list<CacheEntry> cache_;
};

}  // namespace switchyard::runtime
