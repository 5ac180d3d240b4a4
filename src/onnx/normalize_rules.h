// The rewrite rules of opset normalisation, shared by normalize_opsets.cc (the table and the
// attribute-to-input rules) and legacy_rewrites.cc (rules that add or replace nodes).
// Internal to src/onnx.
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"
#include "onnx/graph_edit.h"

namespace switchyard::onnx_import::detail {

/// What a rule may use: the editor of the graph tree and the model's default opset.
struct RuleContext {
  GraphEditor& edit;
  int64_t opset;
};

/// A rule rewrites one node in place, or replaces it and points `node` at its replacement.
using RuleFn = void (*)(RuleContext& context, ir::Node*& node);

/// A scalar of `value` with the element type of `like`: a constant when that type is known, else
/// a float constant passed through CastLike.
ir::Value* scalar_like(RuleContext& context, ir::Node& node, ir::Value* like, double value,
                       const std::string& what);

// Rules that add or replace nodes (legacy_rewrites.cc).
void rewrite_legacy_broadcast(RuleContext& context, ir::Node*& node);
void rewrite_legacy_prelu(RuleContext& context, ir::Node*& node);
void rewrite_legacy_softmax(RuleContext& context, ir::Node*& node);
void rewrite_upsample(RuleContext& context, ir::Node*& node);
void rewrite_resize_10(RuleContext& context, ir::Node*& node);
void rewrite_scatter(RuleContext& context, ir::Node*& node);
void rewrite_dropout(RuleContext& context, ir::Node*& node);
void rewrite_group_norm_per_group(RuleContext& context, ir::Node*& node);
void rewrite_scan_8(RuleContext& context, ir::Node*& node);

}  // namespace switchyard::onnx_import::detail
