// PlacementReport: every placement decision with its cause, the partitions, the copies, and its
// one-line summary. Its renderings (table, JSON, DOT, HTML) are in src/tooling/report_format.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::placement {

/// Why a node runs where it runs; the precedence rules of docs/placement.md, strongest first.
enum class Cause {
  Pinned,       ///< a --pin matched the node
  Unsupported,  ///< the target cannot run it; fell back to the cpu (fallback = allow)
  HostShape,    ///< a small integer shape computation kept on the host
  Preferred,    ///< the target device
  Split,        ///< a pipeline stage's device (--split pipeline)
  Island,       ///< moved to its neighbours' device: copies would cost more than it saves
};

/// "pinned", "unsupported", "host_shape", "preferred", "split", "island".
const char* cause_name(Cause cause);

struct NodeDecision {
  std::string node;
  std::string op;
  std::string device;
  Cause cause = Cause::Preferred;
  std::string reason;  ///< a human sentence
  int partition = -1;
  /// Island moves: the estimated copy cost and compute saving that decided it (µs); else 0.
  double copy_cost_us = 0;
  double saving_us = 0;
  /// The arithmetic precision the node runs at where its device reports one ("fp16");
  /// filled in after the partitions compile.
  std::string precision;
  /// The node whose fused kernel runs this one (a backend fusion inside its partition: a
  /// Conv's epilogue, a Gelu pattern); empty when it runs as its own kernel.
  std::string fused_into;
};

struct PartitionInfo {
  int index = 0;
  std::string device;
  std::vector<std::string> nodes;  ///< node names in execution order
  double estimated_us = 0;
};

struct CopyInfo {
  std::string value;
  std::string from_device;
  std::string to_device;
  int from_partition = -1;  ///< -1: a graph input (host)
  int to_partition = -1;    ///< -1: a graph output (back to the host)
  int64_t bytes = -1;       ///< from the static type; -1 when a dim is symbolic
};

/// An edge between two nodes (for drawing): a data edge, with `copy` when the two run on
/// different devices, or a control edge (`control`: a control dependency, which orders
/// `to_node` after `from_node` and moves no data, so never a copy).
struct EdgeInfo {
  std::string from_node;
  std::string to_node;
  std::string value;
  bool copy = false;
  bool control = false;
};

/// Nodes of the user's graph that one partition runs as one kernel (filled in after the
/// partitions compile): `nodes[0]` names the kernel, the rest were absorbed into it.
struct FusionInfo {
  int partition = -1;
  std::string device;
  std::vector<std::string> nodes;
};

struct PlacementReport {
  std::string model;                 ///< graph name or file
  std::string target;                ///< the preferred device
  std::vector<std::string> devices;  ///< devices available under the policy, in order
  std::string policy;                ///< the policy in words ("compute_units=all fallback=allow")
  std::vector<NodeDecision> nodes;   ///< in execution order
  std::vector<PartitionInfo> partitions;
  std::vector<CopyInfo> copies;
  std::vector<EdgeInfo> edges;
  std::vector<FusionInfo> fusions;
  /// Lines about the compile itself ("relowered at load: ...").
  std::vector<std::string> notes;

  /// "sim:0: 29 of 31 nodes in 2 partitions; cpu: 2 nodes — NonMaxSuppression: not supported
  /// on sim:0". Devices in order of first use; the reasons of unsupported fallbacks grouped by op.
  std::string summary() const;
};

/// Words the summary and the renderers (src/tooling/report_format.h) share.
/// "1 node", "3 nodes".
std::string count_of(size_t count, std::string_view one, std::string_view many);
/// `parts` joined with `separator`.
std::string join(const std::vector<std::string>& parts, std::string_view separator);
/// The devices of a comma list such as "cuda:0,cuda:1", each once.
std::vector<std::string> split_devices(const std::string& list);
/// Devices in the order nodes first use them.
std::vector<std::string> devices_in_use(const PlacementReport& report);
/// Every device the report mentions: the available ones first, then any others in use.
std::vector<std::string> all_devices(const PlacementReport& report);

}  // namespace switchyard::placement
