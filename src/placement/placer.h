// The placer: assigns every node of a graph to a device under a Policy, in numbered passes that
// follow the precedence of docs/placement.md — pins, capability, host-side shape subgraphs,
// preferred device (or pipeline stage), island merging — then forms acyclic partitions and plans
// the copies between them. Deterministic: the same graph, policy and devices give the same
// placement.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "placement/policy.h"
#include "placement/report.h"

namespace switchyard::placement {

/// A value moved between devices before a partition runs (or back to the host at the end).
struct PlannedCopy {
  const ir::Value* value = nullptr;
  int from_device = 0;  ///< index into the device list
  int to_device = 0;
  int before_partition = -1;  ///< -1: after the last partition (a graph output to the host)
};

struct Placement {
  /// The devices considered, in order; [0] is the cpu (the host).
  std::vector<const backends::Backend*> devices;
  /// Device index of each top-level node, in graph order.
  std::vector<int> node_device;
  /// Partitions in execution order; Partition::device is the device id.
  std::vector<backends::Partition> partitions;
  /// Device index of each partition.
  std::vector<int> partition_device;
  std::vector<PlannedCopy> copies;
  /// Values a partition reads only through Shape/Size nodes: only their shape crosses, so no
  /// data is copied (not counted as copies).
  std::vector<PlannedCopy> shape_transfers;
  PlacementReport report;
};

/// Places `graph` (types inferred) on `devices` ([0] must be the host cpu) under `policy`.
/// Throws InvalidArgument for unknown or contradictory options (a device that does not exist
/// or that the compute units exclude) and PlacementFailed for a pin onto a device that cannot
/// run the node, or strict mode with unplaceable nodes (one line per node: name, op, device
/// asked, reason).
/// Cost estimates assume the devices compile under `lowering` (precision changes GPU rates).
Placement place(const ir::Graph& graph, const std::vector<const backends::Backend*>& devices,
                const Policy& policy, const backends::CompileOptions& lowering = {});

}  // namespace switchyard::placement
