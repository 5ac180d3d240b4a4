// Op schemas: arity and symbolic type/shape inference, one registry for all op families.
// Each family file src/ops/<family>.cc defines `void register_<family>_schemas(SchemaRegistry&)`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/check.h"
#include "ir/graph.h"
#include "ops/op_kind.h"

namespace switchyard::ops {

/// What an inference function sees of one node, and where it writes output types.
class InferContext {
 public:
  InferContext(ir::Node& node, std::vector<ir::Type>& outputs) : node_(node), outputs_(outputs) {}

  ir::Node& node() const { return node_; }
  size_t num_inputs() const { return node_.num_inputs(); }
  size_t num_outputs() const { return node_.num_outputs(); }
  /// True when input i is present (not omitted).
  bool has_input(size_t i) const { return node_.input(i) != nullptr; }
  /// Type of input i; an Unknown type when omitted.
  const ir::Type& input_type(size_t i) const;
  /// Input i's tensor type; throws InvalidModel naming the node when it is not a tensor.
  const ir::Type& input_tensor(size_t i) const;
  /// Constant data of input i when known at compile time (initializer), else nullptr.
  const ir::Tensor* input_constant(size_t i) const;
  /// Output i's type (to write). Outputs the node omits are ignored.
  void set_output(size_t i, ir::Type t);
  /// Throws InvalidModel with the node's description prefixed.
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    SY_THROW(InvalidModel, "{}: {}", node_.describe(), fmt::format(f, std::forward<Args>(args)...));
  }
  /// Infers types inside a subgraph whose inputs have been given types (for If/Loop/Scan).
  void infer_subgraph(ir::Graph& body) const;

 private:
  ir::Node& node_;
  std::vector<ir::Type>& outputs_;
};

struct OpSchema {
  OpKind kind{};
  int min_inputs = 0;
  int max_inputs = 0;  ///< -1: variadic
  int min_outputs = 1;
  int max_outputs = 1;  ///< -1: variadic
  /// Sets every output type. May throw InvalidModel for bad attributes / input types.
  std::function<void(InferContext&)> infer;
};

class SchemaRegistry {
 public:
  /// Adds a schema; a second schema for the same kind is an internal error.
  void add(OpSchema schema);
  /// The schema of a kind, or nullptr when this build has none for it.
  const OpSchema* find(OpKind kind) const;

 private:
  std::vector<OpSchema> by_kind_ = std::vector<OpSchema>(kNumOpKinds);
  std::vector<bool> present_ = std::vector<bool>(kNumOpKinds, false);
};

/// The registry with every family's schemas (built once, thread-safe).
const SchemaRegistry& schemas();

/// Resolves each node's kind, checks arity, and infers types in topological order, recursing
/// into subgraphs. Throws Unsupported for ops without a schema and InvalidModel for bad nodes.
void infer_types(ir::Graph& graph);
/// Infers only the node given (used by passes that add nodes).
void infer_node(ir::Node& node);

// Family registration functions, one per file in src/ops/.
void register_elementwise_schemas(SchemaRegistry& r);
void register_quantize_schemas(SchemaRegistry& r);
void register_reduce_schemas(SchemaRegistry& r);
void register_normalization_schemas(SchemaRegistry& r);
void register_conv_schemas(SchemaRegistry& r);
void register_loss_schemas(SchemaRegistry& r);
void register_matmul_schemas(SchemaRegistry& r);
void register_pool_schemas(SchemaRegistry& r);
void register_shape_schemas(SchemaRegistry& r);
void register_gather_scatter_schemas(SchemaRegistry& r);
void register_image_schemas(SchemaRegistry& r);
void register_rnn_schemas(SchemaRegistry& r);
void register_signal_schemas(SchemaRegistry& r);
void register_strings_schemas(SchemaRegistry& r);
void register_sequence_schemas(SchemaRegistry& r);
void register_control_flow_schemas(SchemaRegistry& r);
void register_stencil_schemas(SchemaRegistry& r);
void register_depend_schemas(SchemaRegistry& r);

}  // namespace switchyard::ops
