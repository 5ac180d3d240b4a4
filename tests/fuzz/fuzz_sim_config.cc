// fuzz_sim_config: bytes -> a scratch file -> sim::parse_sim_config (the --sim-config JSON).
#include <cstddef>
#include <cstdint>

#include "backends/sim/sim_backend.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = switchyard::fuzz::write_scratch_file(data, size, ".json");
  switchyard::fuzz::run_expecting_only_errors("fuzz_sim_config",
                                              [&] { switchyard::sim::parse_sim_config(path); });
  return 0;
}
