// Policy: what the user asks of placement (compute units, preferred device(s), pins, fallback,
// island threshold, memory limits, split), with the parsers the CLI and API share. Unknown or
// malformed values are errors naming the option, never ignored.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace switchyard::placement {

enum class ComputeUnits { CpuOnly, CpuAndGpu, All };
enum class Fallback { Allow, Strict };
enum class SplitMode { None, Pipeline };

/// `--pin PATTERN=DEVICE`: PATTERN is a node-name glob (`*`, `?`, `[...]`) or `op:Type`.
struct Pin {
  std::string pattern;
  std::string device;
};

struct Policy {
  ComputeUnits compute_units = ComputeUnits::All;
  /// `--device`: the preferred device, or several (a comma list) for a split. Empty: the first
  /// GPU by memory, else the cpu.
  std::vector<std::string> devices;
  /// Tried in order; the first matching pin places the node.
  std::vector<Pin> pins;
  Fallback fallback = Fallback::Allow;
  /// Accelerator islands with fewer nodes than this move to the cpu (1 = no threshold).
  int min_partition_nodes = 1;
  /// Device id → bytes its stages' weights may take (`--memory-limit DEVICE=BYTES`).
  std::map<std::string, uint64_t> memory_limits;
  SplitMode split = SplitMode::None;

  /// "compute_units=all device=sim:0 fallback=allow split=none pins=1".
  std::string describe() const;
};

ComputeUnits parse_compute_units(const std::string& text);
Fallback parse_fallback(const std::string& text);
SplitMode parse_split(const std::string& text);
/// "PATTERN=DEVICE".
Pin parse_pin(const std::string& text);
/// "DEVICE=BYTES" with an optional K, M or G suffix (powers of 1024).
std::pair<std::string, uint64_t> parse_memory_limit(const std::string& text);
/// "cuda:0,cuda:1" → {"cuda:0", "cuda:1"}; empty items are errors.
std::vector<std::string> parse_device_list(const std::string& text);
/// Shell-style glob match of a whole name.
bool glob_match(const std::string& pattern, const std::string& name);

}  // namespace switchyard::placement
