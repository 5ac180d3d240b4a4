#include "ir/attribute.h"

#include "ir/graph.h"

namespace switchyard::ir {

std::string_view attribute_kind_name(Attribute::Kind kind) {
  switch (kind) {
    case Attribute::Kind::Float: return "float";
    case Attribute::Kind::Int: return "int";
    case Attribute::Kind::String: return "string";
    case Attribute::Kind::Tensor: return "tensor";
    case Attribute::Kind::Graph: return "graph";
    case Attribute::Kind::TypeProto: return "type";
    case Attribute::Kind::Floats: return "floats";
    case Attribute::Kind::Ints: return "ints";
    case Attribute::Kind::Strings: return "strings";
    case Attribute::Kind::Tensors: return "tensors";
    case Attribute::Kind::Graphs: return "graphs";
    case Attribute::Kind::TypeProtos: return "types";
  }
  return "?";
}

Attribute Attribute::make_int(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
Attribute Attribute::make_float(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Float;
  a.f = v;
  return a;
}
Attribute Attribute::make_string(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::String;
  a.s = std::move(v);
  return a;
}
Attribute Attribute::make_ints(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute Attribute::make_floats(std::string name, std::vector<float> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Floats;
  a.floats = std::move(v);
  return a;
}
Attribute Attribute::make_tensor(std::string name, ir::Tensor v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Tensor;
  a.t = std::move(v);
  return a;
}
Attribute Attribute::make_graph(std::string name, std::shared_ptr<ir::Graph> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Graph;
  a.g = std::move(v);
  return a;
}

}  // namespace switchyard::ir
