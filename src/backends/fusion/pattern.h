// Small pattern-matching and rewriting helpers the fusion passes share (fusion/*.cc, and the
// cuda backend's precision rewrite, which fuses Casts into its LayerNormalizations).
#pragma once

#include <vector>

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

/// Whether `v` is computed from an output of `node`: produced by it, or by a node that reads
/// such a value (as an input or inside a body), through any number of nodes. Where it holds, a
/// reader of `v` fused with `node` into one node would read its own output.
bool depends_on(const ir::Value* v, const ir::Node* node);

/// Replaces the nodes `gone` (of `g`) by one new node made like `like` — its op type, name,
/// domain, kind, attributes and annotations (`like` may be one of `gone`) — that reads `inputs`
/// (none of them an output of `gone`; nullptr: an omitted input). Its output i takes over the
/// value `outputs[i]` (an output of one of `gone`): name, type, readers and places among the
/// graph outputs; where `outputs[i]` is null, output i is a new placeholder nobody reads. Every
/// other output of `gone` must be read only by `gone`. A node's outputs are fixed when it is
/// made: this is how a rewrite adds or drops one. Returns the new node; the caller sorts `g`.
ir::Node* replace_nodes(ir::Graph& g, const std::vector<ir::Node*>& gone, const ir::Node& like,
                        std::vector<ir::Value*> inputs, const std::vector<ir::Value*>& outputs);

}  // namespace switchyard::backends::pattern
