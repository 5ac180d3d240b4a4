// ModelProto → ir::Graph: opsets, initializers, inputs/outputs and their types, nodes with
// their attributes, and If/Loop/Scan bodies as child graphs.

#include "onnx/import.h"

#include <algorithm>
#include <new>
#include <optional>
#include <unordered_set>

#include "onnx/export.h"
#include "onnx/graph_edit.h"
#include "onnx/proto_convert.h"
#include "ops/op_kind.h"

namespace switchyard::onnx_import {

namespace {

using detail::with_context;

// Subgraph nesting accepted whatever the options say: it bounds the parser's and our own
// recursion, so that a hostile file cannot exhaust the stack.
constexpr int kHardestSubgraphDepth = 1000;

// Protobuf nesting allowed for a given subgraph depth: each level of subgraph costs three
// message levels (Node → Attribute → Graph), types and tensors a few more.
int recursion_limit_for(int max_subgraph_depth) {
  return std::max(1000, 4 * max_subgraph_depth + 64);
}

// Frees the raw bytes of a tensor that has been copied into the graph.
void release_bytes(onnx::TensorProto& tensor) { std::string().swap(*tensor.mutable_raw_data()); }

std::string normalise_domain(const std::string& domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

class Importer {
 public:
  Importer(const onnx::ModelProto& model, std::string base_dir, const ImportOptions& options)
      : model_(model),
        base_dir_(std::move(base_dir)),
        max_depth_(std::clamp(options.max_subgraph_depth, 0, kHardestSubgraphDepth)),
        external_(options.external_data) {}

  /// The main graph's variables (export.h, kVariableMetadataPrefix): name → assigning output.
  void set_variables(std::vector<std::pair<std::string, std::string>> variables) {
    variables_ = std::move(variables);
  }
  /// Declares the variables on the main graph once it is built; throws InvalidModel naming a
  /// variable without its input or initializer.
  void add_variables(ir::Graph& graph);

  /// Builds the main graph (and, recursively, every subgraph) from its GraphProto. Tensor
  /// bytes are released from `proto` once copied, so a model is not held twice in memory.
  void build_graph(onnx::GraphProto& proto, ir::Graph& graph, const std::string& prefix);

 private:
  std::string where(const ir::Graph& graph) const {
    return graph.parent() ? fmt::format(" of graph '{}'", graph.name()) : std::string();
  }
  void add_initializers(onnx::GraphProto& proto, ir::Graph& graph,
                        std::unordered_set<std::string>& names);
  ir::Node* add_node_shell(const onnx::NodeProto& proto, int index, ir::Graph& graph,
                           const std::string& prefix);
  void check_domain(const onnx::NodeProto& proto, const ir::Node& node) const;
  void wire_inputs(const onnx::NodeProto& proto, ir::Node& node, ir::Graph& graph) const;
  ir::Attribute convert_attribute(onnx::AttributeProto& proto, const ir::Node& node,
                                  ir::Graph& graph);
  std::shared_ptr<ir::Graph> build_subgraph(onnx::GraphProto& proto, const ir::Node& node,
                                            const std::string& label, ir::Graph& graph);
  void apply_declared_type(ir::Graph& graph, const onnx::ValueInfoProto& info,
                           const std::string& label) const;
  void refuse_contradicting_dtype(const ir::Value& v, const onnx::ValueInfoProto& info,
                                  const std::string& label) const;

  const onnx::ModelProto& model_;
  std::string base_dir_;
  int max_depth_;
  ExternalDataResolver external_;  // empty: external data from files below base_dir_

 public:
  /// The external data files the tensors read so far name (ModelInfo::external_files).
  std::vector<std::string> external_files;

 private:
  void note_external(const onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    for (const auto& entry : t.external_data())
      if (entry.key() == "location" && std::find(external_files.begin(), external_files.end(),
                                                 entry.value()) == external_files.end())
        external_files.push_back(entry.value());
  }
  detail::NodeNames names_;
  std::vector<std::pair<std::string, std::string>> variables_;
  std::map<std::string, ir::Tensor> variable_values_;  // the variables' initializers
};

void Importer::build_graph(onnx::GraphProto& proto, ir::Graph& graph, const std::string& prefix) {
  for (const auto& sparse : proto.sparse_initializer()) {
    SY_THROW(Unsupported, "sparse initializer '{}'{} is not supported", sparse.values().name(),
             where(graph));
  }
  std::unordered_set<std::string> initializer_names;
  add_initializers(proto, graph, initializer_names);
  for (const auto& input : proto.input()) {
    // Before IR version 4 initializers were also listed as inputs; they stay constants.
    if (initializer_names.count(input.name())) continue;
    std::string label = fmt::format("input '{}'{}", input.name(), where(graph));
    SY_CHECK(!input.name().empty(), InvalidModel, "an input{} has no name", where(graph));
    ir::Type type = input.has_type() ? detail::type_from_proto(input.type(), label) : ir::Type{};
    with_context(label, [&] { return graph.add_input(input.name(), std::move(type)); });
  }

  // Nodes are created in three passes so that a node (or a subgraph) may read a value
  // produced later in the file: outputs first, then attributes (subgraphs), then inputs.
  std::vector<ir::Node*> nodes;
  nodes.reserve(static_cast<size_t>(proto.node_size()));
  for (int i = 0; i < proto.node_size(); ++i)
    nodes.push_back(add_node_shell(proto.node(i), i, graph, prefix));
  for (int i = 0; i < proto.node_size(); ++i) {
    ir::Node* node = nodes[static_cast<size_t>(i)];
    for (auto& attr : *proto.mutable_node(i)->mutable_attribute())
      node->set_attribute(convert_attribute(attr, *node, graph));
  }
  for (int i = 0; i < proto.node_size(); ++i)
    wire_inputs(proto.node(i), *nodes[static_cast<size_t>(i)], graph);

  for (const auto& output : proto.output()) {
    SY_CHECK(!output.name().empty(), InvalidModel, "an output{} has no name", where(graph));
    ir::Value* v = graph.find_value(output.name());
    SY_CHECK(v != nullptr, InvalidModel,
             "output '{}'{} is not produced by any node, input or initializer", output.name(),
             where(graph));
    graph.add_output(v);
    std::string label = fmt::format("output '{}'{}", output.name(), where(graph));
    refuse_contradicting_dtype(*v, output, label);
    apply_declared_type(graph, output, label);
  }
  for (const auto& info : proto.value_info()) {
    apply_declared_type(graph, info, fmt::format("value_info '{}'{}", info.name(), where(graph)));
  }
}

void Importer::add_initializers(onnx::GraphProto& proto, ir::Graph& graph,
                                std::unordered_set<std::string>& names) {
  for (auto& init : *proto.mutable_initializer()) {
    std::string label = fmt::format("initializer '{}'{}", init.name(), where(graph));
    SY_CHECK(!init.name().empty(), InvalidModel, "an initializer{} has no name", where(graph));
    note_external(init);
    ir::Tensor data = detail::tensor_from_proto(init, base_dir_, label, &external_);
    release_bytes(init);
    bool variable = graph.parent() == nullptr &&
                    std::any_of(variables_.begin(), variables_.end(),
                                [&](const auto& v) { return v.first == init.name(); });
    if (variable) {
      // A variable's value: its graph input stays an input, which the executable binds.
      SY_CHECK(variable_values_.emplace(init.name(), std::move(data)).second, InvalidModel,
               "variable '{}' has two initializers", init.name());
      continue;
    }
    with_context(label, [&] { return graph.add_constant(init.name(), std::move(data)); });
    names.insert(init.name());
  }
}

void Importer::add_variables(ir::Graph& graph) {
  for (const auto& [name, assigned] : variables_) {
    auto value = variable_values_.find(name);
    SY_CHECK(value != variable_values_.end(), InvalidModel,
             "variable '{}' (metadata '{}{}') has no initializer holding its value", name,
             kVariableMetadataPrefix, name);
    const ir::Value* input = graph.find_local_value(name);
    SY_CHECK(input && input->is_graph_input(), InvalidModel,
             "variable '{}' (metadata '{}{}') is not a graph input", name, kVariableMetadataPrefix,
             name);
    graph.mutable_variables().push_back({name, std::move(value->second), assigned});
  }
}

ir::Node* Importer::add_node_shell(const onnx::NodeProto& proto, int index, ir::Graph& graph,
                                   const std::string& prefix) {
  std::string base =
      proto.name().empty() ? fmt::format("{}_{}", proto.op_type(), index) : proto.name();
  std::string name = names_.claim(prefix + base);
  SY_CHECK(!proto.op_type().empty(), InvalidModel, "node '{}'{} has no op_type", name,
           where(graph));
  std::vector<std::string> outputs(proto.output().begin(), proto.output().end());
  std::string label = fmt::format("[{}] node '{}'", proto.op_type(), name);
  ir::Node* node = with_context(label, [&] {
    return graph.add_node(proto.op_type(), name, {}, outputs, normalise_domain(proto.domain()));
  });
  check_domain(proto, *node);
  return node;
}

void Importer::check_domain(const onnx::NodeProto& proto, const ir::Node& node) const {
  const std::string& domain = node.domain();
  if (domain.empty() || domain == ops::kSwitchyardDomain) return;
  for (const auto& fn : model_.functions()) {
    SY_CHECK(!(fn.domain() == proto.domain() && fn.name() == proto.op_type()), Unsupported,
             "{}: calls the model-local function '{}' of domain '{}'; model-local functions "
             "are not supported",
             node.describe(), fn.name(), domain);
  }
  SY_CHECK(domain != "ai.onnx.ml", Unsupported,
           "{}: domain 'ai.onnx.ml' (ONNX-ML operators) is not supported", node.describe());
  SY_THROW(Unsupported, "{}: domain '{}' is not supported; only the default ONNX domain is",
           node.describe(), domain);
}

void Importer::wire_inputs(const onnx::NodeProto& proto, ir::Node& node, ir::Graph& graph) const {
  for (int i = 0; i < proto.input_size(); ++i) {
    const std::string& name = proto.input(i);
    if (name.empty()) {
      node.add_input(nullptr);
      continue;
    }
    ir::Value* v = graph.find_value(name);
    SY_CHECK(v != nullptr, InvalidModel,
             "{}: input {} '{}' is not produced by any node, graph input or initializer",
             node.describe(), i, name);
    node.add_input(v);
  }
}

ir::Attribute::Kind attribute_kind(const onnx::AttributeProto& a, const std::string& label) {
  using K = ir::Attribute::Kind;
  using P = onnx::AttributeProto;
  switch (a.type()) {
    case P::FLOAT:
      return K::Float;
    case P::INT:
      return K::Int;
    case P::STRING:
      return K::String;
    case P::TENSOR:
      return K::Tensor;
    case P::GRAPH:
      return K::Graph;
    case P::TYPE_PROTO:
      return K::TypeProto;
    case P::FLOATS:
      return K::Floats;
    case P::INTS:
      return K::Ints;
    case P::STRINGS:
      return K::Strings;
    case P::TENSORS:
      return K::Tensors;
    case P::GRAPHS:
      return K::Graphs;
    case P::TYPE_PROTOS:
      return K::TypeProtos;
    case P::SPARSE_TENSOR:
    case P::SPARSE_TENSORS:
      SY_THROW(Unsupported, "{}: sparse tensor attributes are not supported", label);
    case P::UNDEFINED:
      break;
    default:
      SY_THROW(InvalidModel, "{}: unknown attribute type {}", label, int(a.type()));
  }
  // Files written before IR version 2 carry no type: infer it from the field that is set.
  if (a.has_f()) return K::Float;
  if (a.has_i()) return K::Int;
  if (a.has_s()) return K::String;
  if (a.has_t()) return K::Tensor;
  if (a.has_g()) return K::Graph;
  if (a.floats_size() > 0) return K::Floats;
  if (a.ints_size() > 0) return K::Ints;
  if (a.strings_size() > 0) return K::Strings;
  if (a.tensors_size() > 0) return K::Tensors;
  if (a.graphs_size() > 0) return K::Graphs;
  SY_CHECK(!a.has_sparse_tensor() && a.sparse_tensors_size() == 0, Unsupported,
           "{}: sparse tensor attributes are not supported", label);
  SY_THROW(InvalidModel, "{}: has no type and no value", label);
}

ir::Attribute Importer::convert_attribute(onnx::AttributeProto& proto, const ir::Node& node,
                                          ir::Graph& graph) {
  using K = ir::Attribute::Kind;
  std::string label = fmt::format("{}: attribute '{}'", node.describe(), proto.name());
  SY_CHECK(!proto.name().empty(), InvalidModel, "{}: an attribute has no name", node.describe());
  SY_CHECK(proto.ref_attr_name().empty(), InvalidModel,
           "{}: refers to the function attribute '{}', which is only valid inside a function",
           label, proto.ref_attr_name());
  ir::Attribute a;
  a.name = proto.name();
  a.kind = attribute_kind(proto, label);
  switch (a.kind) {
    case K::Float:
      a.f = proto.f();
      break;
    case K::Int:
      a.i = proto.i();
      break;
    case K::String:
      a.s = proto.s();
      break;
    case K::Tensor:
      note_external(proto.t());
      a.t = detail::tensor_from_proto(proto.t(), base_dir_, label, &external_);
      release_bytes(*proto.mutable_t());
      break;
    case K::Graph:
      a.g = build_subgraph(*proto.mutable_g(), node, a.name, graph);
      break;
    case K::TypeProto:
      a.tp = detail::type_from_proto(proto.tp(), label);
      break;
    case K::Floats:
      a.floats.assign(proto.floats().begin(), proto.floats().end());
      break;
    case K::Ints:
      a.ints.assign(proto.ints().begin(), proto.ints().end());
      break;
    case K::Strings:
      a.strings.assign(proto.strings().begin(), proto.strings().end());
      break;
    case K::Tensors:
      for (int i = 0; i < proto.tensors_size(); ++i) {
        a.tensors.push_back(detail::tensor_from_proto(
            proto.tensors(i), base_dir_, fmt::format("{} tensor {}", label, i), &external_));
      }
      break;
    case K::Graphs:
      for (int i = 0; i < proto.graphs_size(); ++i) {
        a.graphs.push_back(build_subgraph(*proto.mutable_graphs(i), node,
                                          fmt::format("{}[{}]", a.name, i), graph));
      }
      break;
    case K::TypeProtos:
      for (int i = 0; i < proto.type_protos_size(); ++i) {
        a.type_protos.push_back(
            detail::type_from_proto(proto.type_protos(i), fmt::format("{} type {}", label, i)));
      }
      break;
  }
  return a;
}

std::shared_ptr<ir::Graph> Importer::build_subgraph(onnx::GraphProto& proto, const ir::Node& node,
                                                    const std::string& label, ir::Graph& graph) {
  SY_CHECK(graph.depth() < max_depth_, InvalidModel,
           "{}: attribute '{}': subgraphs nest deeper than the limit of {} levels", node.describe(),
           label, max_depth_);
  auto sub = std::make_shared<ir::Graph>(fmt::format("{}/{}", node.name(), label), &graph);
  build_graph(proto, *sub, node.name() + "/");
  return sub;
}

void Importer::apply_declared_type(ir::Graph& graph, const onnx::ValueInfoProto& info,
                                   const std::string& label) const {
  if (!info.has_type()) return;
  ir::Value* v = graph.find_local_value(info.name());
  // Only values computed here take a declared type: inputs and constants already have theirs.
  if (!v || v->is_constant() || v->is_graph_input()) return;
  ir::Type type = detail::type_from_proto(info.type(), label);
  if (!type.is_unknown()) v->set_type(std::move(type));
}

// A graph output that is an input or an initializer has its own dtype, which the declared one
// must match (computed outputs are checked against their producer by type inference).
void Importer::refuse_contradicting_dtype(const ir::Value& v, const onnx::ValueInfoProto& info,
                                          const std::string& label) const {
  if (!info.has_type() || !(v.is_constant() || v.is_graph_input())) return;
  ir::Type declared = detail::type_from_proto(info.type(), label);
  const ir::Type& own = v.type();
  if (!declared.is_tensor() || !own.is_tensor() || declared.dtype == ir::DType::Undefined ||
      own.dtype == ir::DType::Undefined || declared.dtype == own.dtype)
    return;
  SY_THROW(InvalidModel, "{} is declared {}, but it is the {} '{}', which holds {}", label,
           ir::dtype_name(declared.dtype), v.is_constant() ? "initializer" : "input", v.name(),
           ir::dtype_name(own.dtype));
}

// The default-domain opset, or nullopt when the model imports only other domains.
std::optional<int64_t> read_opsets(const onnx::ModelProto& model, ModelInfo& info) {
  for (const auto& entry : model.opset_import())
    info.opsets[normalise_domain(entry.domain())] = entry.version();
  auto it = info.opsets.find("");
  if (it == info.opsets.end()) {
    if (model.opset_import_size() > 0) return std::nullopt;
    // Models of IR version 1 and 2 may omit opset_import; they mean opset 1.
    info.opsets[""] = 1;
    return 1;
  }
  SY_CHECK(it->second >= 1, InvalidModel, "imports default opset {}, which does not exist",
           it->second);
  SY_CHECK(it->second <= kLatestOpset, Unsupported,
           "imports default opset {}; this build knows opsets up to {}", it->second, kLatestOpset);
  return it->second;
}

// Throws when a node of `graph` or its subgraphs uses the default domain, which the model does
// not import.
void refuse_default_domain_nodes(const ir::Graph& graph) {
  for (const auto& node : graph.nodes()) {
    SY_CHECK(!node->domain().empty(), InvalidModel,
             "{}: uses the default ONNX domain, but the model's opset_import does not list it",
             node->describe());
    for (const ir::Graph* sub : node->subgraphs()) refuse_default_domain_nodes(*sub);
  }
}

void sort_recursively(ir::Graph& graph) {
  for (const auto& node : graph.nodes())
    for (ir::Graph* sub : node->subgraphs()) sort_recursively(*sub);
  graph.sort_topologically();
}

// Parses a serialized ModelProto; throws InvalidModel (the caller adds the model's name).
void parse_model(onnx::ModelProto& model, const void* data, size_t size,
                 const ImportOptions& options) {
  int limit = recursion_limit_for(std::clamp(options.max_subgraph_depth, 0, kHardestSubgraphDepth));
  SY_CHECK(detail::parse_proto(model, data, size, limit), InvalidModel,
           "not a valid ONNX model: the protobuf data is truncated, corrupt, larger than 2 GiB, "
           "or nested more than {} levels deep",
           limit);
}

std::unique_ptr<ir::Graph> import_parsed(onnx::ModelProto& model, const std::string& base_dir,
                                         ModelInfo* info_out, const ImportOptions& options) {
  SY_CHECK(model.has_graph(), InvalidModel, "has no graph (not an ONNX model?)");
  ModelInfo info;
  info.ir_version = model.ir_version();
  info.producer = model.producer_name();
  if (!model.producer_version().empty()) info.producer += " " + model.producer_version();
  std::optional<int64_t> opset = read_opsets(model, info);

  onnx::GraphProto& main = *model.mutable_graph();
  auto graph = std::make_unique<ir::Graph>(main.name().empty() ? "main" : main.name());
  Importer importer(model, base_dir, options);
  std::vector<std::pair<std::string, std::string>> variables;
  const std::string prefix = kVariableMetadataPrefix;
  for (const auto& entry : model.metadata_props())
    if (entry.key().rfind(prefix, 0) == 0)
      variables.emplace_back(entry.key().substr(prefix.size()), entry.value());
  importer.set_variables(std::move(variables));
  importer.build_graph(main, *graph, "");
  importer.add_variables(*graph);
  if (opset) {
    normalize_opsets(*graph, *opset);
  } else {
    refuse_default_domain_nodes(*graph);
  }
  sort_recursively(*graph);
  ir::verify(*graph);
  info.external_files = std::move(importer.external_files);
  if (info_out) *info_out = std::move(info);
  return graph;
}

// Runs `body`, putting "model '<what>': " in front of every error and turning the few
// non-switchyard exceptions into Errors.
template <typename F>
std::unique_ptr<ir::Graph> naming_the_model(const std::string& what, F&& body) {
  std::string label = fmt::format("model '{}'", what);
  try {
    return body();
  } catch (const Error& e) {
    throw Error(e.code(), label + ": " + e.message());
  } catch (const std::bad_alloc&) {
    SY_THROW(OutOfMemory, "{}: ran out of memory while importing", label);
  } catch (const std::exception& e) {
    SY_THROW(Internal, "{}: unexpected failure while importing: {}", label, e.what());
  }
}

}  // namespace

std::unique_ptr<ir::Graph> import_model_from_bytes(const void* data, size_t size,
                                                   const std::string& base_dir,
                                                   const std::string& what, ModelInfo* info,
                                                   const ImportOptions& options) {
  return naming_the_model(what, [&] {
    onnx::ModelProto model;
    parse_model(model, data, size, options);
    return import_parsed(model, base_dir, info, options);
  });
}

std::unique_ptr<ir::Graph> import_model(const std::string& path, ModelInfo* info,
                                        const ImportOptions& options) {
  const std::string what = fmt::format("model '{}'", path);
  // Parsed from the file in chunks: its bytes and the parsed model are never both in memory
  // (a model's peak memory would otherwise be twice its weights).
  uint64_t hash = 0;
  onnx::ModelProto model;
  const int limit =
      recursion_limit_for(std::clamp(options.max_subgraph_depth, 0, kHardestSubgraphDepth));
  SY_CHECK(detail::parse_proto_file(model, path, what, limit, &hash), InvalidModel,
           "{}: not a valid ONNX model: the protobuf data is truncated, corrupt, larger than 2 "
           "GiB, or nested more than {} levels deep",
           what, limit);
  return naming_the_model(path, [&] {
    auto graph = import_parsed(model, detail::parent_folder(path), info, options);
    if (info) info->file_hash = hash;
    return graph;
  });
}

}  // namespace switchyard::onnx_import
