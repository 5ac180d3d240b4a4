// What `switchyard info` shows of a model: inputs and outputs with symbolic dims, op histogram
// (subgraphs included) and parameter count.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"

namespace switchyard::runtime {

struct GraphStats {
  /// Op type → node count, nodes of subgraphs included.
  std::map<std::string, int64_t> op_histogram;
  int64_t num_nodes = 0;
  /// Elements of all constants (initializers), subgraphs included.
  int64_t num_parameters = 0;
  int64_t parameter_bytes = 0;
};

GraphStats graph_stats(const ir::Graph& graph);

}  // namespace switchyard::runtime
