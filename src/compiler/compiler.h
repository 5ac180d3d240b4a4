// The compile driver: a graph becomes an executable in one pipeline — infer types, verify,
// optimize (passes/), place every node under the policy (placement/), lower each partition on
// its device (the backends' compile), and hand the runtime the program it runs (runtime/).
// The placement report, with what the devices' compiles add to it (fusions, precision), stays
// beside the executable.
#pragma once

#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "ir/graph.h"
#include "placement/placer.h"
#include "runtime/executable.h"

namespace switchyard::compiler {

struct CompileOptions {
  /// Threads per run (0 = every core of the machine).
  int num_threads = 0;
  /// Shape signatures whose prepared state (memory pools) is kept, least recently used first out.
  size_t shape_cache_capacity = 8;
  /// Run the optimization passes (constant folding, dead-node removal).
  bool optimize = true;
  /// Fill fresh buffers with 0xFF bytes (tests use it to catch reads of unwritten memory).
  bool poison_buffers = false;
  /// Runs in flight at once (runtime::RuntimeOptions::max_in_flight).
  int max_in_flight = 8;
  /// Where nodes may and should run.
  placement::Policy policy;
  /// What every device's compile of its partitions is asked for (precision, fusion, device
  /// graphs); placement's estimates assume it too.
  backends::CompileOptions backend;
  /// The public Options this compile came from, as JSON text (recorded by the top, written into
  /// saved executables; the compiler does not read it).
  std::string user_options = "{}";
  /// Lines the placement report carries about this compile (a relowered load says so).
  std::vector<std::string> report_notes;
};

/// The placement a compile made, in the terms a saved executable keeps: device ids, node
/// indices (top-level nodes in graph order) and value names. Loading rebuilds the partitions
/// from it instead of placing again.
struct PlacementRecord {
  struct Partition {
    int device = 0;          ///< index into `devices`
    std::vector<int> nodes;  ///< in execution order
    std::vector<std::string> inputs, outputs;
    std::vector<char> input_on_host;
  };
  struct Copy {
    std::string value;
    int from_device = 0, to_device = 0;
    int before_partition = -1;  ///< -1: after the last partition
  };
  std::vector<runtime::DeviceInfo> devices;  ///< the devices compiled for, [0] the cpu
  std::vector<int> node_device;              ///< per top-level node
  std::vector<Partition> partitions;
  std::vector<Copy> copies, shape_transfers;
};

/// A compiled model: the executable the runtime runs and how it was placed.
class CompiledModel {
 public:
  CompiledModel(std::shared_ptr<const runtime::Executable> executable,
                placement::PlacementReport report, CompileOptions options, PlacementRecord record);

  const runtime::Executable& executable() const { return *executable_; }
  const ir::Graph& graph() const { return executable_->graph(); }
  const CompileOptions& options() const { return options_; }
  const placement::PlacementReport& placement_report() const { return report_; }
  /// "sim:0: 29 of 31 nodes in 2 partitions; cpu: 2 nodes — ...".
  std::string placement_summary() const { return report_.summary(); }
  const PlacementRecord& placement_record() const { return record_; }

  /// runtime::Executable::run (thread-safe).
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, runtime::RunStats* stats = nullptr,
                             runtime::Profiler* profiler = nullptr,
                             const runtime::RunControl* control = nullptr) const {
    return executable_->run(std::move(inputs), stats, profiler, control);
  }
  std::vector<ir::Datum> run(const std::map<std::string, ir::Datum>& inputs,
                             runtime::RunStats* stats = nullptr,
                             runtime::Profiler* profiler = nullptr,
                             const runtime::RunControl* control = nullptr) const {
    return executable_->run(inputs, stats, profiler, control);
  }
  /// runtime::Executable::run_async (thread-safe).
  std::future<std::vector<ir::Datum>> run_async(
      std::vector<ir::Datum> inputs, runtime::RunStats* stats = nullptr,
      runtime::Profiler* profiler = nullptr, const runtime::RunControl* control = nullptr) const {
    return executable_->run_async(std::move(inputs), stats, profiler, control);
  }
  size_t cached_shape_signatures() const { return executable_->cached_shape_signatures(); }

 private:
  std::shared_ptr<const runtime::Executable> executable_;
  placement::PlacementReport report_;
  CompileOptions options_;
  PlacementRecord record_;
};

/// Infers types, verifies, optimizes, places every node on one of `devices` (devices[0] must
/// be the host cpu) under options.policy, and compiles each partition on its device. Throws
/// Unsupported / InvalidModel for the graph, InvalidArgument for bad options,
/// PlacementFailed when the policy cannot be met.
std::shared_ptr<const CompiledModel> compile(
    std::unique_ptr<ir::Graph> graph, std::vector<std::shared_ptr<const backends::Backend>> devices,
    const CompileOptions& options = {});

/// Compiles `graph` (types inferred, already optimized) as `placement` placed it: each partition
/// on its device under options.backend, then the runtime's program. `devices` are the ones the
/// placement indexes; `report` is the placement's report (fusions and precision are added).
std::shared_ptr<const CompiledModel> lower_placed(
    std::unique_ptr<ir::Graph> graph, std::vector<std::shared_ptr<const backends::Backend>> devices,
    placement::Placement placement, const CompileOptions& options);

/// The public Options' lowering fields, validated: throws InvalidArgument naming --precision for
/// an unknown precision.
backends::CompileOptions backend_options(const std::string& precision, bool fusion,
                                         bool device_graphs);

/// The optimization passes compile runs (constant folding over `kernels`, layer-norm fusion,
/// dead-node removal), re-inferring types as they sharpen them.
void optimize_graph(ir::Graph& graph, const runtime::KernelRegistry& kernels);

}  // namespace switchyard::compiler
