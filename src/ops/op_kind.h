// The enum of op kinds, generated from op_kinds.def, and name lookup.
#pragma once

#include <optional>
#include <string_view>

#include "ir/graph.h"

namespace switchyard::ops {

enum class OpKind : int {
#define SY_OP(name, family) name,
#include "ops/op_kinds.def"
#undef SY_OP
  Count
};

constexpr int kNumOpKinds = static_cast<int>(OpKind::Count);

/// "Conv".
std::string_view op_name(OpKind kind);
/// The family file the op belongs to ("conv", "elementwise", ...).
std::string_view op_family(OpKind kind);
/// Kind of an ONNX op type in the default domain; nullopt if not listed.
std::optional<OpKind> find_op_kind(std::string_view op_type);
/// The kind of a node whose kind was resolved by infer_types (or resolves it on the fly).
/// Throws Unsupported naming the node when the op is not listed.
OpKind kind_of(const ir::Node& node);

}  // namespace switchyard::ops
