// Test helpers for type inference: one node named 'node' over typed graph inputs, constants or
// omitted inputs, run through ops::infer_types; the output types are read back.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace switchyard::testing {

// The IR names the inference tests (which live in this namespace) use unqualified.
using ir::Attribute;
using ir::Dim;
using ir::DType;
using ir::Shape;
using ir::Type;

/// One input of the node under test: a graph input of a Type, a constant (initializer) Tensor,
/// or omitted (nullptr, or an Unknown Type).
struct InferArg {
  std::optional<ir::Type> type;
  std::optional<ir::Tensor> constant;
  InferArg(ir::Type t) {  // NOLINT: implicit so that call sites list Types and Tensors
    if (!t.is_unknown()) type = std::move(t);
  }
  InferArg(ir::Tensor t) : constant(std::move(t)) {}  // NOLINT
  InferArg(std::nullptr_t) {}                         // NOLINT: omitted input
};

/// A one-node graph after type inference.
struct InferredNode {
  std::unique_ptr<ir::Graph> graph;
  ir::Node* node = nullptr;
  /// Output i's inferred type as text, e.g. "float[N,3]".
  std::string out(size_t i = 0) const;
};

/// Builds a graph holding one node 'node' of `op` over `args` (named in0, in1, …) with `attrs` and
/// `num_outputs` outputs, and infers its types. Throws what inference throws.
InferredNode infer_node(const std::string& op, const std::vector<InferArg>& args,
                        const std::vector<ir::Attribute>& attrs = {}, int num_outputs = 1);
/// Same; returns the inferred output types.
std::vector<ir::Type> infer_op(const std::string& op, const std::vector<InferArg>& args,
                               const std::vector<ir::Attribute>& attrs = {}, int num_outputs = 1);
/// Same for one output; returns its inferred type.
ir::Type infer_type(const std::string& op, const std::vector<InferArg>& args,
                    const std::vector<ir::Attribute>& attrs = {});
/// Same; returns the type as text.
std::string infer1(const std::string& op, const std::vector<InferArg>& args,
                   const std::vector<ir::Attribute>& attrs = {});

/// infer_node over inputs of `types` (Unknown = omitted), except that constants[i], where given,
/// is input i.
InferredNode build_node(const std::string& op, const std::vector<ir::Type>& types, int num_outputs,
                        const std::vector<ir::Attribute>& attrs,
                        const std::vector<std::optional<ir::Tensor>>& constants = {});
/// Each type as text.
std::vector<std::string> to_strings(const std::vector<ir::Type>& types);
/// A symbolic dim ("N").
ir::Dim sym(const std::string& name);

/// Expects infer_op(op, args, attrs, num_outputs) to throw InvalidModel naming node 'node' and
/// containing `fragment`.
void expect_invalid(const std::string& op, const std::vector<InferArg>& args,
                    const std::vector<ir::Attribute>& attrs, const std::string& fragment,
                    int num_outputs = 1);
/// Expects `f` to throw an Error naming node 'node'.
void expect_fails_naming_node(const std::function<void()>& f);

}  // namespace switchyard::testing
