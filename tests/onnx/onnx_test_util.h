// Helpers for the importer tests: build small ModelProtos in C++, write them to a temporary
// folder, import them, and check errors.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <stdlib.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx/import.h"
#include "switchyard/error.hpp"

namespace switchyard::onnx_test {

/// A fresh folder under the system temp folder, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sy_onnx_XXXXXX").string();
    char* made = ::mkdtemp(pattern.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// Writes `bytes` to `path`, creating parent folders.
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A model of IR version 8 importing the default domain at `opset`.
inline onnx::ModelProto make_model(int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("switchyard-test");
  m.set_producer_version("1.0");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("test_graph");
  return m;
}

/// Fills a TypeProto with a tensor type; dims are numbers, symbols, or "?" for unknown.
inline void set_tensor_type(onnx::TypeProto* type, int elem_type,
                            const std::vector<std::string>& dims) {
  auto* tt = type->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (const std::string& d : dims) {
    auto* dim = shape->add_dim();
    if (d == "?") continue;
    if (std::isdigit(static_cast<unsigned char>(d[0]))) {
      dim->set_dim_value(std::stoll(d));
    } else {
      dim->set_dim_param(d);
    }
  }
}

/// Adds a graph input of tensor type.
inline onnx::ValueInfoProto* add_input(onnx::GraphProto* g, const std::string& name, int elem_type,
                                       const std::vector<std::string>& dims) {
  auto* vi = g->add_input();
  vi->set_name(name);
  set_tensor_type(vi->mutable_type(), elem_type, dims);
  return vi;
}

/// Adds a graph output of tensor type.
inline onnx::ValueInfoProto* add_output(onnx::GraphProto* g, const std::string& name, int elem_type,
                                        const std::vector<std::string>& dims) {
  auto* vi = g->add_output();
  vi->set_name(name);
  set_tensor_type(vi->mutable_type(), elem_type, dims);
  return vi;
}

/// Adds a graph output without a type (allowed in subgraphs).
inline void add_untyped_output(onnx::GraphProto* g, const std::string& name) {
  g->add_output()->set_name(name);
}

/// Adds a node; an empty `name` leaves it unnamed.
inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                                 const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name,
                                      onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void set_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  add_attr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void set_float(onnx::NodeProto* n, const std::string& name, float v) {
  add_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void set_string(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  add_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
inline void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void set_floats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = add_attr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
inline void set_graph(onnx::NodeProto* n, const std::string& name, onnx::GraphProto g) {
  add_attr(n, name, onnx::AttributeProto::GRAPH)->mutable_g()->Swap(&g);
}

/// Adds a float initializer stored as raw_data.
inline onnx::TensorProto* add_float_initializer(onnx::GraphProto* g, const std::string& name,
                                                const std::vector<int64_t>& dims,
                                                const std::vector<float>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(
      std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  return t;
}

/// Adds an int64 initializer stored in int64_data.
inline onnx::TensorProto* add_int64_initializer(onnx::GraphProto* g, const std::string& name,
                                                const std::vector<int64_t>& dims,
                                                const std::vector<int64_t>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return t;
}

/// Serializes and imports `model` from memory, as "test.onnx" without a base folder.
inline std::unique_ptr<ir::Graph> import_proto(const onnx::ModelProto& model,
                                               onnx_import::ModelInfo* info = nullptr) {
  std::string bytes = model.SerializeAsString();
  return onnx_import::import_model_from_bytes(bytes.data(), bytes.size(), "", "test.onnx", info);
}

/// Writes `model` to `path` (creating folders).
inline void write_model(const std::string& path, const onnx::ModelProto& model) {
  write_bytes(path, model.SerializeAsString());
}

/// Runs `body` and checks that it throws a switchyard::Error of `code` whose message contains
/// every one of `parts`.
template <typename F>
void expect_error(F&& body, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "no error thrown; expected " << error_code_name(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts)
      EXPECT_NE(e.message().find(part), std::string::npos)
          << "'" << part << "' not in: " << e.message();
  }
}

/// The node called `name` in `graph` (not its subgraphs); fails the test when absent.
inline const ir::Node& node_named(const ir::Graph& graph, const std::string& name) {
  const ir::Node* n = graph.find_node(name);
  if (n == nullptr) {
    std::string names;
    for (const auto& node : graph.nodes()) names += " " + node->name();
    throw std::runtime_error("no node '" + name + "'; nodes:" + names);
  }
  return *n;
}

/// Number of nodes of `op_type` in `graph` (not its subgraphs).
inline size_t count_ops(const ir::Graph& graph, const std::string& op_type) {
  size_t count = 0;
  for (const auto& n : graph.nodes()) count += n->op_type() == op_type ? 1 : 0;
  return count;
}

/// The int64 values of a constant input.
inline std::vector<int64_t> constant_ints(const ir::Value* v) {
  if (v == nullptr || !v->is_constant()) throw std::runtime_error("not a constant");
  return v->constant().to_int_vector();
}

}  // namespace switchyard::onnx_test
