// What `switchyard info` shows of a model: inputs and outputs with symbolic dims, opsets, op
// histogram (subgraphs included) and parameter count.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace switchyard::tooling {

struct GraphStats {
  /// Op type → node count, nodes of subgraphs included.
  std::map<std::string, int64_t> op_histogram;
  int64_t num_nodes = 0;
  /// Elements of all constants (initializers), subgraphs included.
  int64_t num_parameters = 0;
  int64_t parameter_bytes = 0;
};

GraphStats graph_stats(const ir::Graph& graph);

/// What `switchyard info` prints of a model file.
struct ModelSummary {
  int64_t ir_version = 0;
  std::string producer;                   ///< "" when the file names none
  std::map<std::string, int64_t> opsets;  ///< domain ("" = ai.onnx) → version
  /// Inputs and outputs as "name: type" ("input: float32[batch,3,224,224]").
  std::vector<std::string> inputs, outputs;
  GraphStats stats;
  /// A saved executable's own lines (format, the build that wrote it, the devices it was
  /// compiled for, its placement); empty for an ONNX model.
  std::vector<std::string> executable;
};

/// Imports the ONNX file at `path` (or reads the saved executable there) and summarizes it;
/// throws what the import or the executable reader throws.
ModelSummary summarize_model(const std::string& path);

}  // namespace switchyard::tooling
