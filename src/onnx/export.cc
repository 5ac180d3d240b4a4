#include "onnx/export.h"

#include <onnx/onnx_pb.h>

#include <cstring>

#include "ir/check.h"
#include "onnx/import.h"

namespace switchyard::onnx_import {

namespace {

void type_to_proto(const ir::Type& type, onnx::TypeProto& out) {
  switch (type.kind) {
    case ir::Type::Kind::Tensor: {
      onnx::TypeProto::Tensor* t = out.mutable_tensor_type();
      if (type.dtype != ir::DType::Undefined) t->set_elem_type(static_cast<int32_t>(type.dtype));
      if (type.shape) {
        onnx::TensorShapeProto* shape = t->mutable_shape();
        for (const ir::Dim& d : *type.shape) {
          onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
          if (d.is_static()) {
            dim->set_dim_value(d.value);
          } else if (d.is_symbolic()) {
            dim->set_dim_param(d.symbol);
          }
        }
      }
      return;
    }
    case ir::Type::Kind::Sequence:
      if (type.element)
        type_to_proto(*type.element, *out.mutable_sequence_type()->mutable_elem_type());
      else
        out.mutable_sequence_type();
      return;
    case ir::Type::Kind::Optional:
      if (type.element)
        type_to_proto(*type.element, *out.mutable_optional_type()->mutable_elem_type());
      else
        out.mutable_optional_type();
      return;
    default:
      return;  // unknown: no type
  }
}

class Exporter {
 public:
  explicit Exporter(const ExportOptions& options) : options_(options) {}

  void tensor_to_proto(const ir::Tensor& t, const std::string& name, onnx::TensorProto& out) {
    out.set_name(name);
    out.set_data_type(static_cast<int32_t>(t.dtype()));
    for (int64_t d : t.shape()) out.add_dims(d);
    if (t.dtype() == ir::DType::String) {
      for (int64_t i = 0; i < t.numel(); ++i) out.add_string_data(t.data<std::string>()[i]);
      return;
    }
    if (options_.external && t.nbytes() >= options_.external_min_bytes) {
      auto [location, offset] = options_.external(t);
      out.set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [&](const char* key, const std::string& value) {
        onnx::StringStringEntryProto* e = out.add_external_data();
        e->set_key(key);
        e->set_value(value);
      };
      add("location", location);
      add("offset", std::to_string(offset));
      add("length", std::to_string(t.nbytes()));
      return;
    }
    out.set_raw_data(std::string(static_cast<const char*>(t.raw()), t.nbytes()));
  }

  void value_info(const ir::Value& v, onnx::ValueInfoProto& out) {
    SY_CHECK(!v.name().empty(), Internal, "export: a graph input or output has no name");
    out.set_name(v.name());
    if (!v.type().is_unknown()) type_to_proto(v.type(), *out.mutable_type());
  }

  void attribute_to_proto(const ir::Attribute& a, const ir::Node& node, onnx::AttributeProto& out) {
    using K = ir::Attribute::Kind;
    out.set_name(a.name);
    switch (a.kind) {
      case K::Float:
        out.set_type(onnx::AttributeProto::FLOAT);
        out.set_f(a.f);
        break;
      case K::Int:
        out.set_type(onnx::AttributeProto::INT);
        out.set_i(a.i);
        break;
      case K::String:
        out.set_type(onnx::AttributeProto::STRING);
        out.set_s(a.s);
        break;
      case K::Tensor:
        out.set_type(onnx::AttributeProto::TENSOR);
        tensor_to_proto(a.t, "", *out.mutable_t());
        break;
      case K::Graph:
        out.set_type(onnx::AttributeProto::GRAPH);
        graph_to_proto(*a.g, node.name() + "/", *out.mutable_g());
        break;
      case K::TypeProto:
        out.set_type(onnx::AttributeProto::TYPE_PROTO);
        type_to_proto(a.tp, *out.mutable_tp());
        break;
      case K::Floats:
        out.set_type(onnx::AttributeProto::FLOATS);
        for (float f : a.floats) out.add_floats(f);
        break;
      case K::Ints:
        out.set_type(onnx::AttributeProto::INTS);
        for (int64_t i : a.ints) out.add_ints(i);
        break;
      case K::Strings:
        out.set_type(onnx::AttributeProto::STRINGS);
        for (const std::string& s : a.strings) out.add_strings(s);
        break;
      case K::Tensors:
        out.set_type(onnx::AttributeProto::TENSORS);
        for (const ir::Tensor& t : a.tensors) tensor_to_proto(t, "", *out.add_tensors());
        break;
      case K::Graphs:
        out.set_type(onnx::AttributeProto::GRAPHS);
        for (const auto& g : a.graphs) graph_to_proto(*g, node.name() + "/", *out.add_graphs());
        break;
      case K::TypeProtos:
        out.set_type(onnx::AttributeProto::TYPE_PROTOS);
        for (const ir::Type& t : a.type_protos) type_to_proto(t, *out.add_type_protos());
        break;
    }
  }

  // `prefix`: what the importer puts before the names of this graph's nodes ("" for the main
  // graph, "<parent node>/" for a body), taken off so that a round trip keeps the names.
  void graph_to_proto(const ir::Graph& graph, const std::string& prefix, onnx::GraphProto& out) {
    out.set_name(graph.name());
    for (const ir::Value* v : graph.inputs()) value_info(*v, *out.add_input());
    for (const ir::Value* c : graph.constants())
      tensor_to_proto(c->constant(), c->name(), *out.add_initializer());
    for (const ir::Variable& var : graph.variables()) {
      const ir::Tensor* value = &var.initial;
      if (options_.variable_values) {
        auto it = options_.variable_values->find(var.name);
        if (it != options_.variable_values->end()) value = &it->second;
      }
      tensor_to_proto(*value, var.name, *out.add_initializer());
    }
    for (const auto& node : graph.nodes()) {
      onnx::NodeProto* n = out.add_node();
      n->set_op_type(node->op_type());
      if (!node->domain().empty()) n->set_domain(node->domain());
      std::string name = node->name();
      if (!prefix.empty() && name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
      n->set_name(name);
      for (const ir::Value* v : node->inputs()) n->add_input(v ? v->name() : std::string());
      for (const ir::Value* v : node->outputs()) n->add_output(v ? v->name() : std::string());
      // Annotations (ir/annotation.h) are not written: only a backend's private partition graph
      // carries them, and those are never exported.
      for (const ir::Attribute& a : node->attributes())
        attribute_to_proto(a, *node, *n->add_attribute());
    }
    for (const ir::Value* v : graph.outputs()) value_info(*v, *out.add_output());
  }

 private:
  const ExportOptions& options_;
};

}  // namespace

std::string export_model(const ir::Graph& graph, const ExportOptions& options) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("switchyard");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kLatestOpset);
  Exporter exporter(options);
  exporter.graph_to_proto(graph, "", *model.mutable_graph());
  for (const ir::Variable& var : graph.variables()) {
    onnx::StringStringEntryProto* entry = model.add_metadata_props();
    entry->set_key(kVariableMetadataPrefix + var.name);
    entry->set_value(var.assigned);
  }
  std::string bytes;
  SY_CHECK(model.SerializeToString(&bytes), Internal,
           "export: the model does not serialize (over protobuf's 2 GiB limit?)");
  return bytes;
}

}  // namespace switchyard::onnx_import
