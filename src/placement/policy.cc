#include "placement/policy.h"

#include <fnmatch.h>

#include "ir/check.h"

namespace switchyard::placement {

std::string Policy::describe() const {
  const char* cu = compute_units == ComputeUnits::CpuOnly     ? "cpu_only"
                   : compute_units == ComputeUnits::CpuAndGpu ? "cpu_and_gpu"
                                                              : "all";
  std::string dev;
  for (const auto& d : devices) dev += (dev.empty() ? "" : ",") + d;
  return fmt::format(
      "compute_units={} device={} fallback={} split={} pins={} min_partition_nodes={}", cu,
      dev.empty() ? "default" : dev, fallback == Fallback::Strict ? "strict" : "allow",
      split == SplitMode::Pipeline ? "pipeline" : "none", pins.size(), min_partition_nodes);
}

ComputeUnits parse_compute_units(const std::string& text) {
  if (text == "cpu_only") return ComputeUnits::CpuOnly;
  if (text == "cpu_and_gpu") return ComputeUnits::CpuAndGpu;
  if (text == "all") return ComputeUnits::All;
  SY_THROW(InvalidArgument, "--compute-units '{}': expected cpu_only, cpu_and_gpu or all", text);
}

Fallback parse_fallback(const std::string& text) {
  if (text == "allow") return Fallback::Allow;
  if (text == "strict") return Fallback::Strict;
  SY_THROW(InvalidArgument, "--fallback '{}': expected allow or strict", text);
}

SplitMode parse_split(const std::string& text) {
  if (text == "none") return SplitMode::None;
  if (text == "pipeline") return SplitMode::Pipeline;
  SY_THROW(InvalidArgument, "--split '{}': expected none or pipeline", text);
}

Pin parse_pin(const std::string& text) {
  auto eq = text.rfind('=');
  SY_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < text.size(), InvalidArgument,
           "--pin '{}': expected PATTERN=DEVICE (a node-name glob or op:Type)", text);
  Pin pin{text.substr(0, eq), text.substr(eq + 1)};
  SY_CHECK(pin.pattern != "op:", InvalidArgument, "--pin '{}': op: needs an op type", text);
  return pin;
}

std::pair<std::string, uint64_t> parse_memory_limit(const std::string& text) {
  auto eq = text.rfind('=');
  SY_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < text.size(), InvalidArgument,
           "--memory-limit '{}': expected DEVICE=BYTES (K, M or G suffix allowed)", text);
  std::string device = text.substr(0, eq);
  std::string amount = text.substr(eq + 1);
  uint64_t scale = 1;
  char last = amount.back();
  if (last == 'K' || last == 'k') scale = uint64_t{1} << 10;
  if (last == 'M' || last == 'm') scale = uint64_t{1} << 20;
  if (last == 'G' || last == 'g') scale = uint64_t{1} << 30;
  if (scale != 1) amount.pop_back();
  SY_CHECK(!amount.empty() && amount.size() <= 15 &&
               amount.find_first_not_of("0123456789") == std::string::npos,
           InvalidArgument, "--memory-limit '{}': '{}' is not a byte count", text,
           text.substr(eq + 1));
  return {device, std::stoull(amount) * scale};
}

std::vector<std::string> parse_device_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    SY_CHECK(!item.empty(), InvalidArgument, "--device '{}': empty device in the list", text);
    for (const auto& seen : out)
      SY_CHECK(seen != item, InvalidArgument, "--device '{}': '{}' is listed twice", text, item);
    out.push_back(item);
    start = end + 1;
  }
  return out;
}

bool glob_match(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace switchyard::placement
