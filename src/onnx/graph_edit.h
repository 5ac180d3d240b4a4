// Small graph-editing helpers for the importer and the opset normalisation: unique node names,
// constant inputs, helper nodes, and replacing a node while keeping its output value names.
// Internal to src/onnx.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"

namespace switchyard::onnx_import::detail {

/// The node names used in one graph tree; hands out unique ones.
class NodeNames {
 public:
  NodeNames() = default;
  /// Records the names of every node in `root` and its subgraphs.
  explicit NodeNames(const ir::Graph& root);
  /// Returns `wanted` if unused, else the first unused `wanted_1`, `wanted_2`, ...; records it.
  std::string claim(const std::string& wanted);

 private:
  void collect(const ir::Graph& graph);
  std::unordered_set<std::string> used_;
};

/// What a removed node was: enough to build its replacement. The uses of its outputs are held
/// by a placeholder node until reattach() hands them to the values that take the old names.
struct DetachedNode {
  ir::Graph* graph = nullptr;
  std::string name;
  std::string op_type;
  std::string domain;
  std::vector<ir::Value*> inputs;
  std::vector<ir::Attribute> attributes;
  std::vector<std::shared_ptr<const ir::NodeAnnotation>> annotations;
  std::vector<std::string> output_names;
  std::vector<ir::Type> output_types;
  ir::Node* placeholder = nullptr;
};

/// Edits one graph tree; every node it adds gets a name unique in the tree.
class GraphEditor {
 public:
  explicit GraphEditor(ir::Graph& root) : names_(root) {}

  /// Adds a 1-D int64 constant (a scalar when `scalar`) to `graph`, named after `base`.
  ir::Value* add_int64s(ir::Graph& graph, const std::string& base,
                        const std::vector<int64_t>& values, bool scalar = false);
  /// Adds a 1-D float constant (a scalar when `scalar`) to `graph`, named after `base`.
  ir::Value* add_floats(ir::Graph& graph, const std::string& base, const std::vector<float>& values,
                        bool scalar = false);
  /// Adds a node named after `name_base` (made unique) with fresh output values.
  ir::Node* add_node(ir::Graph& graph, const std::string& op_type, const std::string& name_base,
                     const std::vector<ir::Value*>& inputs, size_t num_outputs = 1);
  /// Adds a node named after `name_base` (made unique) whose outputs take `output_names`
  /// ("" = a fresh name).
  ir::Node* add_node_named_outputs(ir::Graph& graph, const std::string& op_type,
                                   const std::string& name_base,
                                   const std::vector<ir::Value*>& inputs,
                                   const std::vector<std::string>& output_names);
  /// Adds a node that must be called exactly `name` (the name of a detached node).
  ir::Node* add_named_node(ir::Graph& graph, const std::string& op_type, const std::string& name,
                           const std::vector<ir::Value*>& inputs,
                           const std::vector<std::string>& output_names);

  /// Removes `node`, parking the uses of its outputs on a placeholder; the caller then builds
  /// nodes producing values with `output_names` and calls reattach().
  DetachedNode detach(ir::Node* node);
  /// Moves the parked uses to the values now called `output_names`; restores their types.
  void reattach(DetachedNode& detached);
  /// Makes every reader of `from` (nodes and graph outputs, in any graph of the tree) read `to`.
  void redirect(ir::Value* from, ir::Value* to);

 private:
  NodeNames names_;
};

/// Rank of `value` when known from its constant data or declared type.
std::optional<int64_t> known_rank(const ir::Value* value);
/// Element type of `value` when known from its constant data or declared type.
std::optional<ir::DType> known_dtype(const ir::Value* value);
/// Sets input `index` of `node`, appending omitted (nullptr) inputs as needed.
void set_input_at(ir::Node& node, size_t index, ir::Value* value);

}  // namespace switchyard::onnx_import::detail
