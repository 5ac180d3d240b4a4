// Small pattern-matching helpers the fusion passes share (fusion/*.cc only).
#pragma once

#include "ir/graph.h"

namespace switchyard::backends::pattern {

/// Whether `n` is the ONNX op `type` (default domain).
inline bool is_onnx_op(const ir::Node& n, const char* type) {
  return n.op_type() == type && (n.domain().empty() || n.domain() == "ai.onnx");
}

/// The one node of `g` that reads `v` (once), or nullptr when v has other readers or is a graph
/// output.
inline ir::Node* sole_reader(const ir::Graph& g, const ir::Value* v) {
  if (g.is_output(v) || v->uses().size() != 1) return nullptr;
  ir::Node* n = v->uses().front().first;
  return n->owner() == &g ? n : nullptr;
}

/// Whether two values are tensors of the same dtype and provably the same shape.
inline bool same_shape(const ir::Type& a, const ir::Type& b) {
  if (!a.has_rank() || !b.has_rank() || a.dtype != b.dtype) return false;
  if (a.shape->size() != b.shape->size()) return false;
  for (size_t i = 0; i < a.shape->size(); ++i) {
    const ir::Dim& da = (*a.shape)[i];
    if (da.is_unknown() || !(da == (*b.shape)[i])) return false;
  }
  return true;
}

inline bool is_float(ir::DType d) {
  return d == ir::DType::Float32 || d == ir::DType::Float16 || d == ir::DType::BFloat16 ||
         d == ir::DType::Float64;
}

/// Removes `node` from `g`.
inline void remove_node(ir::Graph& g, const ir::Node* node) {
  g.remove_nodes_if([&](const ir::Node& n) { return &n == node; });
}

}  // namespace switchyard::backends::pattern
