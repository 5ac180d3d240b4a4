// switchyard/switchyard.hpp — the public C++ API: load a model, compile it once, run it at any
// input shape its symbolic dims allow.
//
//   auto model = switchyard::Model::load("resnet50.onnx");
//   auto exe = model.compile({.num_threads = 2});
//   auto outputs = exe.run({{"input", image}});
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "switchyard/dtype.hpp"
#include "switchyard/error.hpp"
#include "switchyard/export.hpp"
#include "switchyard/tensor.hpp"

namespace switchyard {

namespace ir {
class Graph;
}
namespace runtime {
class Executable;
}

/// How a model is compiled.
struct Options {
  /// Threads per run (0 = every core).
  int num_threads = 0;
  /// Input-shape signatures whose prepared state is cached (least recently used evicted).
  size_t shape_cache_capacity = 8;
  /// Run the graph optimizations (constant folding, dead-node removal).
  bool optimize = true;
};

/// A graph input or output as declared: name, element type and dims ("batch", "3", "?").
struct ValueInfo {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<std::string> dims;
  /// "tensor", "sequence" or "optional".
  std::string kind = "tensor";
};

class Executable;

/// A loaded model: the graph after import, before compilation.
class SWITCHYARD_API Model {
 public:
  /// Loads an ONNX file. Throws Error (InvalidModel, Unsupported, InvalidArgument for an
  /// unreadable file) naming the file and what is wrong.
  static Model load(const std::string& path);
  /// Takes a graph built with the IR (or builder) API.
  static Model from_graph(std::unique_ptr<ir::Graph> graph);

  std::vector<ValueInfo> inputs() const;
  std::vector<ValueInfo> outputs() const;
  /// Opsets the file imports (domain → version; "" is the default domain).
  const std::map<std::string, int64_t>& opsets() const { return opsets_; }

  /// Compiles the model; the Model is consumed (its graph moves into the executable).
  Executable compile(const Options& options = {}) &&;

 private:
  std::unique_ptr<ir::Graph, void (*)(ir::Graph*)> graph_{nullptr, nullptr};
  std::map<std::string, int64_t> opsets_;
};

/// A compiled model. Cheap to copy (shared); run() is thread-safe.
class SWITCHYARD_API Executable {
 public:
  /// Runs with tensors keyed by graph input name; returns outputs keyed by graph output name.
  /// Throws InvalidArgument naming the input when one is missing or has a wrong dtype/shape.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  std::vector<ValueInfo> inputs() const;
  std::vector<ValueInfo> outputs() const;
  /// One line: where the nodes run ("cpu: 122 of 122 nodes in 1 partition").
  std::string placement_summary() const;
  /// The internal executable (for tools and tests inside the project).
  const runtime::Executable& internal() const { return *impl_; }

 private:
  friend class Model;
  std::shared_ptr<const runtime::Executable> impl_;
};

}  // namespace switchyard
