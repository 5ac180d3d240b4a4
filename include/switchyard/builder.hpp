// switchyard/builder.hpp — build a graph in C++ (MPSGraph-style), with If/Loop control flow,
// and compile it like a loaded model.
//
//   switchyard::GraphBuilder b;
//   auto x = b.placeholder("x", switchyard::DType::Float32, {"batch", 4});
//   auto w = b.constant(weights);                          // float [4, 8]
//   b.outputs({{"y", b.relu(b.matmul(x, w))}});            // y: float [batch, 8]
//   auto exe = std::move(b).build().compile();
//
// Every op is checked when it is added, by the schemas and type inference the ONNX importer
// uses; a bad use throws Error(InvalidArgument) naming the op and its inputs. Ops take the
// latest ONNX opset's semantics.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "switchyard/dtype.hpp"
#include "switchyard/error.hpp"
#include "switchyard/export.hpp"
#include "switchyard/tensor.hpp"

namespace switchyard {

namespace ir {
class Value;
}
class Model;

/// One dimension of a shape: a known size (value >= 0), a named symbol ("batch"), or unknown
/// (value < 0 and no symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;

  Dim() = default;
  Dim(int v) : value(v) {}                      // NOLINT: implicit from a size
  Dim(int64_t v) : value(v) {}                  // NOLINT: implicit from a size
  Dim(const char* s) : symbol(s) {}             // NOLINT: implicit from a symbol
  Dim(std::string s) : symbol(std::move(s)) {}  // NOLINT: implicit from a symbol
  bool is_static() const { return value >= 0; }
  bool is_symbolic() const { return value < 0 && !symbol.empty(); }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  /// "7", "batch" or "?".
  std::string to_string() const {
    return value >= 0 ? std::to_string(value) : symbol.empty() ? "?" : symbol;
  }
};

/// One attribute of an op: an int, a float, a string, a list of ints or floats, or a tensor.
struct AttributeValue {
  std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>, Tensor> value;
  AttributeValue(int v) : value(int64_t{v}) {}                     // NOLINT
  AttributeValue(int64_t v) : value(v) {}                          // NOLINT
  AttributeValue(float v) : value(v) {}                            // NOLINT
  AttributeValue(double v) : value(static_cast<float>(v)) {}       // NOLINT
  AttributeValue(const char* v) : value(std::string(v)) {}         // NOLINT
  AttributeValue(std::string v) : value(std::move(v)) {}           // NOLINT
  AttributeValue(std::vector<int64_t> v) : value(std::move(v)) {}  // NOLINT
  AttributeValue(std::vector<float> v) : value(std::move(v)) {}    // NOLINT
  AttributeValue(Tensor v) : value(std::move(v)) {}                // NOLINT
};

/// An op's attributes by name, as ONNX names them ({"axis", 1}, {"perm",
/// std::vector<int64_t>{...}}).
using Attributes = std::map<std::string, AttributeValue>;

/// A value of a graph being built: a placeholder, a constant or an op's output. A handle into
/// its GraphBuilder: valid while that builder (or the builder of the enclosing graph, for a
/// value of a branch or loop body) lives and has not been built.
class SWITCHYARD_API Value {
 public:
  Value() = default;
  /// False for a default-constructed Value (an omitted optional input).
  bool valid() const { return value_ != nullptr; }
  /// The value's name in the graph.
  const std::string& name() const;
  /// The inferred element type (Undefined when inference could not tell).
  DType dtype() const;
  /// Whether the rank is known.
  bool has_shape() const;
  /// The inferred symbolic shape (empty when !has_shape(), or for a scalar).
  std::vector<Dim> shape() const;
  /// "float[batch,8]".
  std::string type_string() const;
  /// The IR value (for code inside the project).
  ir::Value* internal() const { return value_; }

 private:
  friend class GraphBuilder;
  explicit Value(ir::Value* v) : value_(v) {}
  ir::Value* value_ = nullptr;
};

/// Conv2d's geometry; empty lists take ONNX's defaults (strides and dilations 1, pads 0).
struct Conv2dOptions {
  std::vector<int64_t> strides;
  std::vector<int64_t> pads;  ///< {top, left, bottom, right}
  std::vector<int64_t> dilations;
  int64_t group = 1;
};

/// Stencil's window attributes (op Stencil of domain "ai.switchyard"); empty lists take the
/// defaults (strides and dilations 1, pads 0).
struct StencilOptions {
  /// "sum", "min", "max" (of x·w over the window), "argmin" or "argmax" (the flat index within
  /// the window; the output is int64).
  std::string reduction = "sum";
  /// What padded positions read: "zero", "clamp", "reflect" or "symmetric".
  std::string padding = "zero";
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  ///< begins then ends, one per spatial dim each
};

/// Builds one graph. The builder handed to an if_else branch or a loop body builds that
/// subgraph: it may use the enclosing graphs' values (they become outer-scope references of
/// the subgraph) but declares no placeholders or outputs.
class SWITCHYARD_API GraphBuilder {
 public:
  explicit GraphBuilder(const std::string& graph_name = "main");
  ~GraphBuilder();
  GraphBuilder(GraphBuilder&&) noexcept;
  GraphBuilder& operator=(GraphBuilder&&) noexcept;

  /// A graph input. Throws InvalidArgument when the name is taken or this is a subgraph.
  Value placeholder(const std::string& name, DType dtype, std::vector<Dim> dims);
  /// A constant (an initializer) holding a copy of `t`; an empty name picks one.
  Value constant(const Tensor& t, const std::string& name = "");
  /// A rank-0 constant of `dtype` holding `value`.
  Value scalar(DType dtype, double value);

  /// Adds one node of ONNX op `type` (latest opset) and returns its outputs. Omitted optional
  /// inputs are default Values. Throws InvalidArgument naming the op and its inputs when the
  /// schema or type inference rejects the node (the node is not added).
  std::vector<Value> op(const std::string& type, const std::vector<Value>& inputs,
                        const Attributes& attributes = {}, int num_outputs = 1);

  // Typed helpers over op(), each adding one node (constants for shape/axes inputs aside).
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value div(Value a, Value b);
  Value matmul(Value a, Value b);
  Value relu(Value x);
  Value sigmoid(Value x);
  Value tanh(Value x);
  Value softmax(Value x, int64_t axis = -1);
  /// Reshape to `shape` (ONNX rules: 0 copies the input's dim, -1 is inferred).
  Value reshape(Value x, const std::vector<int64_t>& shape);
  Value transpose(Value x, const std::vector<int64_t>& perm);
  Value concat(const std::vector<Value>& values, int64_t axis);
  /// Sums over `axes` (empty: every axis).
  Value reduce_sum(Value x, const std::vector<int64_t>& axes = {}, bool keepdims = true);
  /// NCHW convolution with OIHW weights; `bias` may be a default Value (none).
  Value conv2d(Value x, Value weights, Value bias = {}, const Conv2dOptions& options = {});
  /// Slides the float32 window `weights` ([kH, kW] or [kD, kH, kW]) over each channel of float32
  /// `x` ([N, C, H, W] or [N, C, D, H, W]) and reduces x·w per position (docs/api.md, Stencil).
  /// Throws InvalidArgument naming the node on bad options or shapes.
  Value stencil(Value x, Value weights, const StencilOptions& options = {});
  Value gather_nd(Value data, Value indices, int64_t batch_dims = 0);
  Value cast(Value x, DType to);
  Value less(Value a, Value b);
  Value greater(Value a, Value b);
  Value equal(Value a, Value b);
  Value where(Value condition, Value a, Value b);

  /// A branch: builds its subgraph and returns the values it yields.
  using BranchFn = std::function<std::vector<Value>(GraphBuilder&)>;
  /// ONNX If: `predicate` is a bool tensor of one element; runs then_fn's or else_fn's graph.
  /// Both must return as many values, of compatible types. Returns the chosen branch's values.
  std::vector<Value> if_else(Value predicate, const BranchFn& then_fn, const BranchFn& else_fn);

  using ForBodyFn =
      std::function<std::vector<Value>(GraphBuilder&, Value index, std::vector<Value> carried)>;
  /// ONNX Loop with a trip count: runs `body` `iterations` (an int64 one-element tensor) times,
  /// index 0, 1, ...; body returns the next carried values (as many as `initial`). Returns the
  /// final carried values (`initial` when iterations <= 0).
  std::vector<Value> for_loop(Value iterations, std::vector<Value> initial, const ForBodyFn& body);

  using BeforeFn =
      std::function<std::pair<Value, std::vector<Value>>(GraphBuilder&, std::vector<Value>)>;
  using AfterFn = std::function<std::vector<Value>(GraphBuilder&, std::vector<Value>)>;
  /// MPSGraph's while: each iteration runs `before` on the carried values, giving a bool
  /// condition and results; while the condition holds, `after` maps the results to the next
  /// carried values; once it fails, the results are returned. Lowered to `before` once outside
  /// a Loop without trip count (so a first false condition runs no iteration and returns
  /// before(initial)'s results), and a body computing after, then before.
  std::vector<Value> while_loop(std::vector<Value> initial, const BeforeFn& before,
                                const AfterFn& after);

  // ---- State and ordering (docs/api.md, "State and control dependencies")

  /// Declares a variable: state of the executable, starting at a copy of `initial` (its dtype
  /// and shape are the variable's for good), that persists across runs and that
  /// Executable::variable / set_variable read and write. Returns its value as a run reads it:
  /// the state when the run starts (an assign in the same run does not change what it reads).
  /// It is no input of the executable. Main graph only. Throws InvalidArgument naming the
  /// variable when the name is empty or taken, the tensor is empty or of strings, or this
  /// builds a branch or loop body.
  Value variable(const std::string& name, const Tensor& initial);
  /// Gives `variable` (a value variable() returned) the new value `value`, committed when the
  /// run ends successfully, with the run's other assigns. One assign per variable and graph; in
  /// an if_else branch it is lifted into the If (the branch that does not assign keeps the
  /// current value); not in a loop body. Returns the assign's value, for control_dependency.
  /// Throws InvalidArgument naming the variable when it is none, `value` has another dtype,
  /// rank or static dim, the variable is already assigned here, or this builds a loop body.
  Value assign(Value variable, Value value);
  /// assign() by the variable's name.
  Value assign(const std::string& variable, Value value);
  /// Orders `dependents` after `on` without moving data: returns each dependent through an
  /// ai.switchyard Depend node (its value unchanged, without a copy) that runs after every
  /// value of `on` is computed; use the returned values instead of the dependents. The edge is
  /// kept by every pass (what it depends on is never removed as dead, and nothing is reordered
  /// across it), by placement across partitions and devices (no copy is made for it), and is
  /// drawn in the placement report. Throws InvalidArgument naming the value when one belongs to
  /// another builder or to a body this graph does not enclose.
  std::vector<Value> control_dependency(const std::vector<Value>& dependents,
                                        const std::vector<Value>& on);
  /// control_dependency() of one value.
  Value control_dependency(Value dependent, const std::vector<Value>& on);

  /// Names the graph outputs, in order (each name must be unused). Throws InvalidArgument for
  /// a taken or repeated name, or on a subgraph's builder.
  void outputs(const std::vector<std::pair<std::string, Value>>& named);

  /// The finished graph as a Model, to compile (placement, explain and .syx save/load work as
  /// for a loaded model). The builder is consumed; its Values become invalid. Throws
  /// InvalidArgument when no outputs were named and no variable is assigned.
  Model build() &&;

 private:
  struct Impl;
  explicit GraphBuilder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard
