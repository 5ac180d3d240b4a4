// A partition's nodes cloned into a graph of their own, for backends that rewrite what they
// compile (fusion, precision, layouts) without touching the user's graph: partition inputs
// become graph inputs, constants initializers (sharing storage), partition outputs graph
// outputs in partition order. An ordering-only input (ops::OpTraits::is_ordering_input) made
// by another partition is omitted: the partitions run in order, and no data crosses for it.
#pragma once

#include <map>
#include <memory>

#include "backends/backend.h"
#include "ir/graph.h"

namespace switchyard::backends {

/// The clone; `origin` maps each cloned node to the partition node it copies. Nodes keep
/// their names, so fusion groups and errors name the user's nodes.
std::unique_ptr<ir::Graph> clone_partition(const Partition& p,
                                           std::map<const ir::Node*, const ir::Node*>& origin);

/// Whether some node of the partition has a graph body (If, Loop, Scan): bodies read outer
/// values by pointer, so such a partition cannot be cloned.
bool has_graph_bodies(const Partition& p);

}  // namespace switchyard::backends
