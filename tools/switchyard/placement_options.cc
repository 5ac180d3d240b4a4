#include "placement_options.h"

#include <fmt/format.h>

namespace switchyard::tools {

void add_placement_options(CLI::App* cmd, Options& o) {
  cmd->add_option("--compute-units", o.compute_units, "cpu_only | cpu_and_gpu | all");
  cmd->add_option("--device", o.device,
                  "preferred device (cpu, cuda:N, cuda:uuid=P, cuda:name=S, cuda:most-memory, "
                  "sim:N) or a comma list for a split");
  cmd->add_option("--pin", o.pins, "PATTERN=DEVICE: node-name glob or op:Type (repeatable)");
  cmd->add_option("--fallback", o.fallback, "allow | strict");
  cmd->add_option("--min-partition-nodes", o.min_partition_nodes,
                  "accelerator islands smaller than this move to the cpu");
  cmd->add_option("--memory-limit", o.memory_limits, "DEVICE=BYTES (K/M/G suffixes; repeatable)");
  cmd->add_option("--split", o.split, "none | pipeline");
  cmd->add_option("--precision", o.precision,
                  "GPU arithmetic: fp32 (default) | tf32 | fp16 | bf16");
  cmd->add_flag("!--no-cuda-graphs", o.cuda_graphs,
                "run GPU partitions kernel by kernel instead of replaying CUDA graphs");
  cmd->add_flag("!--no-fusion", o.fusion,
                "run every node as its own kernel (no fusion inside partitions)");
  cmd->add_option("--sim", o.sim_devices, "declare N simulated accelerators (sim:0..N-1)");
  cmd->add_option("--sim-config", o.sim_config, "JSON file declaring simulated accelerators");
  cmd->add_flag("--relower", o.allow_relower,
                "a saved .syx whose devices are missing here: place it again on these");
  cmd->add_option("--cache-dir", o.cache_dir,
                  "compile cache folder (default $SWITCHYARD_CACHE_DIR; off: none)");
  cmd->add_option("--cache-max-bytes", o.cache_max_bytes,
                  "bound of the cache folder; least recently used entries go (default 4 GiB)");
}

Executable warn_unhonoured(Executable exe) {
  for (const std::string& w : exe.warnings()) fmt::print(stderr, "switchyard: warning: {}\n", w);
  return exe;
}

}  // namespace switchyard::tools
