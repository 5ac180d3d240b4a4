// The `switchyard` subcommands: each file adds one subcommand to the CLI11 app and runs it.
#pragma once

#include <CLI/CLI.hpp>

namespace switchyard::tools {

/// Adds `run`; the callback does the work and sets `exit_code`.
void add_run_command(CLI::App& app, int& exit_code);
/// Adds `bench`: load, compile and first-run times, latency percentiles and throughput.
void add_bench_command(CLI::App& app, int& exit_code);
void add_info_command(CLI::App& app, int& exit_code);
void add_devices_command(CLI::App& app, int& exit_code);
void add_explain_command(CLI::App& app, int& exit_code);
/// Adds `compile`: compile a model and save the executable (.syx).
void add_compile_command(CLI::App& app, int& exit_code);

}  // namespace switchyard::tools
