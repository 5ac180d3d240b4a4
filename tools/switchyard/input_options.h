// The input flags shared by `run` and `bench`: --inputs, --dim, --shape and --seed, and turning
// them into the inputs of a run.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "switchyard/switchyard.hpp"
#include "tooling/inputs.h"

namespace switchyard::tools {

/// What the input flags say, as parsed.
struct InputOptions {
  std::string inputs_path;  ///< --inputs in.npz; empty = seed every input
  std::vector<std::string> dims;
  std::vector<std::string> shapes;
  uint64_t seed = 0;
  /// The --seed option, to tell `--seed 0` from no --seed (set by add_input_shape_options).
  const CLI::Option* seed_option = nullptr;

  /// True when --seed was on the command line: then it seeds what --inputs lacks.
  bool seed_given() const { return seed_option != nullptr && seed_option->count() > 0; }
};

/// Adds --inputs to `cmd`, writing into `inputs`. Separate from the other input flags so that
/// `run` keeps --outputs beside it in its help.
void add_inputs_file_option(CLI::App* cmd, InputOptions& inputs);

/// Adds --dim, --shape and --seed to `cmd`, writing into `inputs`.
void add_input_shape_options(CLI::App* cmd, InputOptions& inputs);

/// "NAME=VALUE" → (NAME, VALUE). Throws InvalidArgument naming `option` and the text.
std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option);

/// The --dim / --shape / --seed values as an InputSpec. Throws InvalidArgument naming the option
/// when a value does not parse.
tooling::InputSpec make_input_spec(const InputOptions& inputs);

/// The inputs of a run of `exe`: read from --inputs (when given) and seeded as the flags say;
/// prints a note on stderr naming the file's keys that were ignored (reference outputs). Throws
/// what tooling::read_npz and tooling::resolve_inputs throw.
tooling::ResolvedInputs resolve_input_options(const InputOptions& inputs, const Executable& exe);

}  // namespace switchyard::tools
