// `switchyard devices`: the devices found and the backends built.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <string>
#include <thread>

#include "commands.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::tools {

namespace {
std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}
}  // namespace

void add_devices_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("devices", "List the devices found and the backends built");
  auto options = std::make_shared<Options>();
  cmd->add_option("--sim", options->sim_devices, "also declare N simulated accelerators");
  cmd->add_option("--sim-config", options->sim_config, "JSON file declaring simulated devices");
  cmd->callback([options, &exit_code] {
    fmt::print("devices:\n");
    for (const DeviceDescription& d : describe_devices(*options)) {
      if (d.kind == "cpu")
        fmt::print("  cpu: {}, {} hardware threads, {}\n", cpu_model_name(),
                   std::thread::hardware_concurrency(), d.software);
      if (d.kind == "sim") fmt::print("  {}: simulated accelerator (declared)\n", d.id);
      if (d.kind != "cuda") continue;
      fmt::print(
          "  {}: {}, {}, {:.1f} GiB, {} SMs, compute capability {}, peers: {}; {}\n", d.id, d.name,
          d.uuid, static_cast<double>(d.memory_bytes) / (1 << 30), d.sm_count, d.compute_capability,
          d.peers.empty() ? "none" : fmt::format("{}", fmt::join(d.peers, ", ")), d.software);
    }
    fmt::print("backends:\n");
    for (const BackendStatus& b : backend_status()) {
      if (b.library.empty()) {
        fmt::print("  {}: {}\n", b.name, b.detail);  // built in
      } else {
        fmt::print("  {}: {} — {}\n", b.name, b.loaded ? "loaded from " + b.library : "not loaded",
                   b.detail);
      }
    }
    exit_code = 0;
  });
}

}  // namespace switchyard::tools
