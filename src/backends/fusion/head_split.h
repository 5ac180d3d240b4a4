// What fold_packed_attention_operands (fusion/attention_views.cc) and pack_sibling_matmuls
// (fusion/matmul_pack.cc) agree on: which Reshape is an attention operand's head split that a
// view can replace, and which Shape reader of a packed product's part may measure the product
// instead (fusion/*.cc only).
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace switchyard::backends::head_split {

/// Whether `reshape` may be read as the head split of its [batch, sequence, width] input: a
/// Reshape of a rank-3 value with a static last dim to a 1-D int64 target of 4 values. A target
/// the graph shows (a constant; the constant pieces of a Concat) must not contradict
/// [batch, sequence, heads, width / heads]; a constant one must prove it. A target known only at
/// run time passes (the kernel resolves it: payload.h, Attention::View).
bool may_split_heads(const ir::Node& reshape);

/// Whether the Shape node `shape` of a rank-`rank` value gives nothing that depends on the
/// value's last dim: it measures only the leading dims (its start / end), or every reader is a
/// Gather (axis 0) in `graph` with constant indices of the leading dims. Such a Shape may
/// measure any value of the same rank and leading dims instead (the packed product).
bool reads_leading_dims_only(const ir::Graph& graph, const ir::Node& shape, int64_t rank);

}  // namespace switchyard::backends::head_split
