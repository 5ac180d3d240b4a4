// Executable: a model compiled once — types inferred, optimized, placed, lowered to kernels —
// and run at any input shape its symbolic dims allow. Immutable after compile; run() is
// thread-safe and reentrant (per-run scratch comes from a pool, never from members).
#pragma once

#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/executor.h"
#include "backends/profiler.h"
#include "ir/graph.h"

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
};

/// Where one node runs and why (the placement report's row).
struct NodePlacement {
  std::string node;
  std::string op;
  std::string device;
  std::string cause;   ///< "preferred", "unsupported", "pinned", ...
  std::string reason;  ///< human sentence
};

struct RunStats {
  size_t peak_bytes = 0;        ///< peak bytes of intermediate values in this run
  bool shape_cache_hit = false;  ///< prepared state for this shape signature was reused
  std::string shape_signature;
};

class Executable {
 public:
  /// Infers types, verifies, optimizes, places every node on the device whose kernels are
  /// given (the CPU until placement lands) and compiles. Throws
  /// Unsupported naming the first node that cannot run, InvalidModel for malformed graphs.
  static std::shared_ptr<const Executable> compile(std::unique_ptr<ir::Graph> graph,
                                                   const backends::KernelRegistry& kernels,
                                                   const CompileOptions& options = {});

  const ir::Graph& graph() const { return *graph_; }
  const CompileOptions& options() const { return options_; }
  const std::vector<NodePlacement>& placement() const { return placement_; }
  /// "cpu: 48 of 48 nodes in 1 partition".
  std::string placement_summary() const;

  /// Runs with inputs in graph-input order. Checks each input's kind, dtype, rank and dims
  /// against the declared type (symbolic dims must agree across inputs); throws
  /// InvalidArgument naming the input. Returns outputs in graph-output order.
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, RunStats* stats = nullptr,
                             backends::Profiler* profiler = nullptr) const;
  /// Same, inputs by name (every graph input must be given; unknown names are errors).
  std::vector<ir::Datum> run(const std::map<std::string, ir::Datum>& inputs,
                             RunStats* stats = nullptr,
                             backends::Profiler* profiler = nullptr) const;

  /// Number of shape signatures currently cached.
  size_t cached_shape_signatures() const;

 private:
  Executable() = default;
  std::string check_inputs(const std::vector<ir::Datum>& inputs) const;
  std::shared_ptr<backends::HostPool> acquire_pool(const std::string& signature, bool* hit) const;
  void release_pool(const std::string& signature, std::shared_ptr<backends::HostPool> pool) const;

  std::unique_ptr<ir::Graph> graph_;
  CompileOptions options_;
  std::unique_ptr<backends::GraphProgram> program_;
  std::vector<NodePlacement> placement_;
  int num_threads_ = 1;
  std::string device_name_;

  // Per shape signature: idle pools that hold the buffers that shape needs, most recent first.
  struct CacheEntry {
    std::string signature;
    std::vector<std::shared_ptr<backends::HostPool>> idle;
  };
  mutable std::mutex cache_mutex_;
  mutable std::list<CacheEntry> cache_;
};

}  // namespace switchyard::runtime
