// The placement flags shared by `run`, `explain` and later subcommands.
#pragma once

#include <CLI/CLI.hpp>

#include "switchyard/switchyard.hpp"

namespace switchyard::tools {

/// Adds --compute-units, --device, --pin, --fallback, --min-partition-nodes, --memory-limit,
/// --split, --precision, --no-cuda-graphs, --no-fusion, --sim, --sim-config and --relower to
/// `cmd`, writing into `options`. Values are checked when the model is compiled (errors name
/// the option).
void add_placement_options(CLI::App* cmd, Options& options);

/// Prints each option the compile could not honour (Executable::warnings) on stderr as
/// "switchyard: warning: ..." and returns `exe`.
Executable warn_unhonoured(Executable exe);

}  // namespace switchyard::tools
