// Executable: a model compiled once — types inferred, optimized, placed on devices under a
// policy, cut into partitions that each device's backend compiles — and run at any input shape
// its symbolic dims allow. Immutable after compile; run() is thread-safe and reentrant (per-run
// scratch comes from pools, never from members).
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/profiler.h"
#include "ir/graph.h"
#include "placement/placer.h"

namespace switchyard::runtime {

struct CompileOptions {
  /// Threads per run (0 = every core of the machine).
  int num_threads = 0;
  /// Shape signatures whose prepared state (memory pools) is kept, least recently used first out.
  size_t shape_cache_capacity = 8;
  /// Run the optimization passes (constant folding, dead-node removal).
  bool optimize = true;
  /// Fill fresh buffers with 0xFF bytes (tests use it to catch reads of unwritten memory).
  bool poison_buffers = false;
  /// Where nodes may and should run.
  placement::Policy policy;
};

struct RunStats {
  size_t peak_bytes = 0;         ///< peak bytes of intermediate values, all devices together
  bool shape_cache_hit = false;  ///< prepared state for this shape signature was reused
  std::string shape_signature;
  int copies = 0;  ///< values copied between devices in this run
  size_t copied_bytes = 0;
};

/// When a run must stop early (public RunOptions).
struct RunControl {
  int64_t deadline_ms = 0;  ///< 0 = no deadline
  const std::atomic<bool>* cancel_flag = nullptr;
};

class Executable {
 public:
  /// Infers types, verifies, optimizes, places every node on one of `devices` (devices[0] must
  /// be the host cpu) under options.policy, and compiles each partition on its device. Throws
  /// Unsupported / InvalidModel for the graph, InvalidArgument for bad options,
  /// PlacementFailed when the policy cannot be met.
  static std::shared_ptr<const Executable> compile(
      std::unique_ptr<ir::Graph> graph,
      std::vector<std::shared_ptr<const backends::Backend>> devices,
      const CompileOptions& options = {});

  const ir::Graph& graph() const { return *graph_; }
  const CompileOptions& options() const { return options_; }
  const placement::PlacementReport& placement_report() const { return placement_.report; }
  /// "sim:0: 29 of 31 nodes in 2 partitions; cpu: 2 nodes — ...".
  std::string placement_summary() const { return placement_.report.summary(); }

  /// Runs with inputs in graph-input order. Checks each input's kind, dtype, rank and dims
  /// against the declared type (symbolic dims must agree across inputs); throws
  /// InvalidArgument naming the input. Returns outputs in graph-output order, in host memory.
  /// `control` (optional) sets a deadline and a cancellation flag: the run throws Cancelled.
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, RunStats* stats = nullptr,
                             backends::Profiler* profiler = nullptr,
                             const RunControl* control = nullptr) const;
  /// Same, inputs by name (every graph input must be given; unknown names are errors).
  std::vector<ir::Datum> run(const std::map<std::string, ir::Datum>& inputs,
                             RunStats* stats = nullptr, backends::Profiler* profiler = nullptr,
                             const RunControl* control = nullptr) const;

  /// Number of shape signatures currently cached.
  size_t cached_shape_signatures() const;

 private:
  Executable() = default;
  using PoolSet = std::vector<std::shared_ptr<backends::HostPool>>;
  std::string check_inputs(const std::vector<ir::Datum>& inputs) const;
  PoolSet acquire_pools(const std::string& signature, bool* hit) const;
  void release_pools(const std::string& signature, PoolSet pools) const;
  int value_id(const ir::Value* v) const;

  std::unique_ptr<ir::Graph> graph_;
  CompileOptions options_;
  std::vector<std::shared_ptr<const backends::Backend>> devices_;
  placement::Placement placement_;
  std::vector<std::unique_ptr<backends::CompiledPartition>> compiled_;
  int num_threads_ = 1;

  // Values crossing partitions, by dense id.
  std::map<const ir::Value*, int> value_ids_;
  std::vector<const ir::Value*> values_;
  std::vector<std::vector<int>> partition_inputs_;   // value ids per partition
  std::vector<std::vector<int>> partition_outputs_;  // value ids per partition
  std::vector<std::vector<int>> release_after_;      // value ids to drop after each partition
  std::vector<std::vector<const placement::PlannedCopy*>> copies_before_;
  std::vector<const placement::PlannedCopy*> final_copies_;
  std::vector<std::vector<const placement::PlannedCopy*>> shape_transfers_before_;

  // Per shape signature: idle pool sets (one pool per device), most recently used first.
  struct CacheEntry {
    std::string signature;
    std::vector<PoolSet> idle;
  };
  mutable std::mutex cache_mutex_;
  mutable std::list<CacheEntry> cache_;
};

}  // namespace switchyard::runtime
