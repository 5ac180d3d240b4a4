// The PlacementReport model's own words: cause names, the one-line summary, and the device
// lists and phrases the renderers (src/tooling/report_format.cc) share.
#include "placement/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <utility>

namespace switchyard::placement {

const char* cause_name(Cause cause) {
  switch (cause) {
    case Cause::Pinned:
      return "pinned";
    case Cause::Unsupported:
      return "unsupported";
    case Cause::HostShape:
      return "host_shape";
    case Cause::Preferred:
      return "preferred";
    case Cause::Split:
      return "split";
    case Cause::Island:
      return "island";
  }
  return "unknown";
}

namespace {

void add_unique(std::vector<std::string>& list, const std::string& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

}  // namespace

std::string count_of(size_t count, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", count, count == 1 ? one : many);
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split_devices(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    if (!item.empty()) add_unique(out, item);
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> devices_in_use(const PlacementReport& report) {
  std::vector<std::string> out;
  for (const NodeDecision& node : report.nodes) add_unique(out, node.device);
  return out;
}

std::vector<std::string> all_devices(const PlacementReport& report) {
  std::vector<std::string> out;
  for (const std::string& device : report.devices) add_unique(out, device);
  for (const std::string& device : split_devices(report.target)) add_unique(out, device);
  for (const std::string& device : devices_in_use(report)) add_unique(out, device);
  for (const PartitionInfo& partition : report.partitions) add_unique(out, partition.device);
  return out;
}

std::string PlacementReport::summary() const {
  if (nodes.empty()) return "no nodes";
  const std::vector<std::string> targets = split_devices(target);
  // A target that runs nothing still leads, so the summary says where nodes were meant to go.
  std::vector<std::string> order;
  const std::vector<std::string> used = devices_in_use(*this);
  for (const std::string& device : targets) {
    if (std::find(used.begin(), used.end(), device) == used.end()) order.push_back(device);
  }
  for (const std::string& device : used) order.push_back(device);

  std::vector<std::string> parts;
  for (const std::string& device : order) {
    size_t num_nodes = std::count_if(nodes.begin(), nodes.end(),
                                     [&](const NodeDecision& n) { return n.device == device; });
    if (std::find(targets.begin(), targets.end(), device) == targets.end()) {
      parts.push_back(fmt::format("{}: {}", device, count_of(num_nodes, "node", "nodes")));
      continue;
    }
    size_t num_partitions =
        std::count_if(partitions.begin(), partitions.end(),
                      [&](const PartitionInfo& p) { return p.device == device; });
    std::string part =
        fmt::format("{}: {} of {}", device, num_nodes, count_of(nodes.size(), "node", "nodes"));
    if (num_partitions > 0) part += " in " + count_of(num_partitions, "partition", "partitions");
    parts.push_back(std::move(part));
  }

  std::vector<std::string> notes;
  for (Cause cause : {Cause::Pinned, Cause::HostShape, Cause::Island}) {
    size_t num_nodes = std::count_if(nodes.begin(), nodes.end(),
                                     [&](const NodeDecision& n) { return n.cause == cause; });
    if (num_nodes > 0) notes.push_back(fmt::format("{} {}", num_nodes, cause_name(cause)));
  }
  if (!notes.empty()) parts.push_back(join(notes, ", "));
  if (!copies.empty()) parts.push_back(count_of(copies.size(), "copy", "copies"));

  std::vector<std::string> reasons;
  for (const NodeDecision& node : nodes) {
    if (node.cause != Cause::Unsupported) continue;
    add_unique(reasons, node.reason.empty() ? node.op : node.op + ": " + node.reason);
  }
  std::string out = join(parts, "; ");
  if (!reasons.empty()) out += " — " + join(reasons, "; ");
  return out;
}

}  // namespace switchyard::placement
