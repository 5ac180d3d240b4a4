// ir::Graph → a serialized ONNX ModelProto (opset kLatestOpset), the inverse of import: what a
// saved executable stores of its optimized graph, so that loading it goes through the same
// checked importer as any model file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "ir/graph.h"

namespace switchyard::onnx_import {

struct ExportOptions {
  /// Set: every constant tensor of at least `external_min_bytes` bytes (strings excepted) is
  /// handed here instead of written inline; it stores the bytes and returns the (location,
  /// offset) the TensorProto then names as external data, which ImportOptions::external_data
  /// resolves on the way back.
  std::function<std::pair<std::string, uint64_t>(const ir::Tensor&)> external;
  size_t external_min_bytes = 1024;
  /// The values written for the main graph's variables (an executable's current state), by
  /// name; absent, or a variable missing from it: its initial value.
  const std::map<std::string, ir::Tensor>* variable_values = nullptr;
};

/// The metadata key prefix of the main graph's variables (ir::Graph::variables): one entry
/// "ai.switchyard.variable.<name>" per variable, in order, whose value names the graph output
/// that assigns it (empty: none). The variable is the graph input of that name, and an
/// initializer of the same name holds its value (ONNX's default for an input that a caller may
/// override). export_model writes it; import restores the variables from it.
inline constexpr const char* kVariableMetadataPrefix = "ai.switchyard.variable.";

/// The graph (types as inferred, subgraphs, constants as initializers, variables as described
/// at kVariableMetadataPrefix) as ModelProto bytes.
/// Node names are kept (a subgraph node's name without the "<parent node>/" prefix the
/// importer adds back), so a re-imported graph has the same node and value names. Throws
/// Internal for a graph the importer could not read back (a value without a name).
std::string export_model(const ir::Graph& graph, const ExportOptions& options = {});

}  // namespace switchyard::onnx_import
