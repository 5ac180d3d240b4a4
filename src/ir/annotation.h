// Typed annotations of a node: immutable payloads that a rewrite attaches for the kernels that run
// the node (the fusions' epilogues, permutations and layouts: backends/fusion/payload.h). The IR
// knows only this base; each payload type is declared beside the pass that makes it. Annotations
// are internal to a compile: exporters do not write them and verify does not read them.
#pragma once

#include <string>

namespace switchyard::ir {

/// The base of every node annotation. A node holds at most one annotation of each dynamic type,
/// shared (std::shared_ptr<const NodeAnnotation>) by every copy of the node, so a payload never
/// changes once attached: a pass that updates one attaches a new one (Node::annotate).
struct NodeAnnotation {
  virtual ~NodeAnnotation() = default;
  /// What the payload says, in one line for reports and messages ("activation=Relu alpha=0.5").
  virtual std::string describe() const = 0;

 protected:
  NodeAnnotation() = default;
  NodeAnnotation(const NodeAnnotation&) = default;
  NodeAnnotation& operator=(const NodeAnnotation&) = default;
};

}  // namespace switchyard::ir
