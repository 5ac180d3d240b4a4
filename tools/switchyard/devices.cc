// `switchyard devices`: the devices found and the backends built.
#include <fmt/format.h>

#include <fstream>
#include <string>
#include <thread>

#include "backends/cpu/cpu_kernels.h"
#include "commands.h"

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
  cmd->callback([&exit_code] {
    const auto& cpu = cpu::cpu_kernels();
    fmt::print("devices:\n");
    fmt::print("  cpu: {}, {} hardware threads\n", cpu_model_name(),
               std::thread::hardware_concurrency());
    fmt::print("backends:\n");
    fmt::print("  cpu: built, {} op types (oneDNN for Conv/MatMul/Gemm/pooling)\n",
               cpu.ops().size());
    fmt::print("  cuda: not built into this binary\n");
    exit_code = 0;
  });
}

}  // namespace switchyard::tools
