// Node attributes, as ONNX defines them (graphs included, for If/Loop/Scan bodies).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "ir/type.h"

namespace switchyard::ir {

class Graph;

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Graph, TypeProto, Floats, Ints, Strings, Tensors,
                    Graphs, TypeProtos };
  std::string name;
  Kind kind = Kind::Int;
  float f = 0;
  int64_t i = 0;
  std::string s;
  ir::Tensor t;
  std::shared_ptr<ir::Graph> g;
  ir::Type tp;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<ir::Tensor> tensors;
  std::vector<std::shared_ptr<ir::Graph>> graphs;
  std::vector<ir::Type> type_protos;

  static Attribute make_int(std::string name, int64_t v);
  static Attribute make_float(std::string name, float v);
  static Attribute make_string(std::string name, std::string v);
  static Attribute make_ints(std::string name, std::vector<int64_t> v);
  static Attribute make_floats(std::string name, std::vector<float> v);
  static Attribute make_tensor(std::string name, ir::Tensor v);
  static Attribute make_graph(std::string name, std::shared_ptr<ir::Graph> v);
};

std::string_view attribute_kind_name(Attribute::Kind kind);

}  // namespace switchyard::ir
