// `switchyard devices`: the devices found and the backends built.
#include <fmt/format.h>

#include <fstream>
#include <string>
#include <thread>

#include "backends/cpu/cpu_kernels.h"
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
    const auto& cpu = cpu::cpu_kernels();
    fmt::print("devices:\n");
    fmt::print("  cpu: {}, {} hardware threads\n", cpu_model_name(),
               std::thread::hardware_concurrency());
    for (const std::string& id : available_devices(*options))
      if (id != "cpu") fmt::print("  {}: simulated accelerator (declared)\n", id);
    fmt::print("backends:\n");
    fmt::print("  cpu: built, {} op types (oneDNN for Conv/MatMul/Gemm/pooling)\n",
               cpu.ops().size());
    fmt::print("  sim: built (declare devices with --sim N or --sim-config FILE)\n");
    fmt::print("  cuda: not built into this binary\n");
    exit_code = 0;
  });
}

}  // namespace switchyard::tools
