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
/// The domain of Switchyard's own ops (SY_DOMAIN_OP in op_kinds.def).
inline constexpr std::string_view kSwitchyardDomain = "ai.switchyard";

/// The op's domain: "" for the default ONNX domain, else e.g. "ai.switchyard".
std::string_view op_domain(OpKind kind);
/// Kind of op type `op_type` in `domain` ("" or "ai.onnx": the default ONNX domain); nullopt
/// if not listed there.
std::optional<OpKind> find_op_kind(std::string_view op_type, std::string_view domain = {});
/// Whether op_kinds.def lists any op of `domain` ("" and "ai.onnx" included).
bool is_known_domain(std::string_view domain);
/// The kind of a node whose kind was resolved by infer_types (or resolves it on the fly).
/// Throws Unsupported naming the node when the op is not listed.
OpKind kind_of(const ir::Node& node);

}  // namespace switchyard::ops
