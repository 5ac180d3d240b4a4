// Properties of ops that backends and passes ask about, declared once beside the op list
// (op_kinds.def): what is true of the op's semantics, whatever kernels a backend has. Which ops
// a backend runs, and in which forms, stays in that backend's kernel registry.
//
// To add a trait: a field below with its one-line doc, the rows of op_traits.cc that set it (one
// row per op), and a check in tests/ops/op_traits_test.cc that makes a wrong row fail.
#pragma once

#include <span>
#include <string_view>

#include "ir/graph.h"
#include "ops/op_kind.h"

namespace switchyard::ops {

struct OpTraits {
  /// y = f(x) element by element: output 0 has input 0's shape, and any other input is a
  /// scalar parameter (Clip's min and max), not data.
  bool unary_elementwise = false;
  /// Every input is data, broadcast numpy-style, and each output element is computed from the
  /// inputs' elements at its position alone (Add, PRelu, Where, Max, ...).
  bool broadcast_elementwise = false;
  /// The result is computed from input 0's shape alone, never its values (Shape, Size): a host
  /// knows it without reading the data.
  bool reads_only_shape = false;
  /// Pools each channel of [N, C, spatial...] over spatial windows, channels independent.
  bool spatial_pool = false;
  /// Inputs from this index on are ordering only (Depend's): the node runs after their
  /// producers but never reads their data, so no copy of them crosses devices. -1: none.
  int first_ordering_input = -1;

  /// Whether input `i` only orders the node after its producer (first_ordering_input).
  bool is_ordering_input(size_t i) const {
    return first_ordering_input >= 0 && i >= static_cast<size_t>(first_ordering_input);
  }

  /// Elementwise (unary or broadcasting), so the same in any memory layout of its data inputs
  /// when they share one layout (and any other operand broadcasts alike in every layout).
  bool layout_free() const { return unary_elementwise || broadcast_elementwise; }
  /// Whether any trait is set.
  bool any() const {
    return unary_elementwise || broadcast_elementwise || reads_only_shape || spatial_pool ||
           first_ordering_input >= 0;
  }
};

/// The traits of a kind (all false for a kind without any).
const OpTraits& traits(OpKind kind);
/// The traits of an op type in `domain` ("" or "ai.onnx": the default domain); all false for an
/// op not listed in op_kinds.def under that domain.
const OpTraits& traits(std::string_view op_type, std::string_view domain = {});
/// The traits of a node's op (its domain included).
const OpTraits& traits(const ir::Node& node);
/// Every kind the table gives a trait, in table order, each once (for tests).
std::span<const OpKind> kinds_with_traits();

}  // namespace switchyard::ops
