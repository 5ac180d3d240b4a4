#include "input_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "require.h"
#include "tooling/npz.h"

namespace switchyard::tools {

void add_inputs_file_option(CLI::App* cmd, InputOptions& inputs) {
  cmd->add_option("--inputs", inputs.inputs_path, ".npz with inputs keyed by graph input name");
}

void add_input_shape_options(CLI::App* cmd, InputOptions& inputs) {
  cmd->add_option("--dim", inputs.dims, "bind a symbolic dim: NAME=VALUE (repeatable)");
  cmd->add_option("--shape", inputs.shapes, "an input's shape: INPUT=1x3x224x224 (repeatable)");
  inputs.seed_option = cmd->add_option(
      "--seed", inputs.seed, "seed for random inputs; with --inputs, for the inputs it lacks");
}

std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option) {
  auto eq = text.find('=');
  require_usage(eq != std::string::npos && eq > 0 && eq + 1 < text.size(),
                "{} '{}': expected NAME=VALUE", option, text);
  return {text.substr(0, eq), text.substr(eq + 1)};
}

tooling::InputSpec make_input_spec(const InputOptions& inputs) {
  tooling::InputSpec spec;
  spec.seed = inputs.seed;
  for (const auto& d : inputs.dims) {
    auto [name, value] = split_assignment(d, "--dim");
    require_usage(value.find_first_not_of("0123456789") == std::string::npos && value.size() < 19,
                  "--dim {}: '{}' is not a non-negative integer", name, value);
    require_usage(!spec.dims.count(name), "--dim {} is given twice ({} and {})", name,
                  spec.dims.count(name) ? spec.dims.at(name) : 0, value);
    spec.dims[name] = std::stoll(value);
  }
  for (const auto& s : inputs.shapes) {
    auto [name, value] = split_assignment(s, "--shape");
    require_usage(!spec.shapes.count(name), "--shape {} is given twice", name);
    spec.shapes[name] = tooling::parse_shape(value);
  }
  return spec;
}

tooling::ResolvedInputs resolve_input_options(const InputOptions& inputs, const Executable& exe) {
  std::map<std::string, Tensor> given;
  if (!inputs.inputs_path.empty()) given = tooling::read_npz(inputs.inputs_path);
  tooling::ResolvedInputs resolved = tooling::resolve_inputs(
      tooling::declared_of(exe.inputs()), tooling::declared_of(exe.outputs()), given,
      inputs.inputs_path, make_input_spec(inputs), inputs.seed_given());
  if (!resolved.ignored_keys.empty())
    fmt::print(stderr, "switchyard: note: {}: ignoring {} (reference outputs, not inputs)\n",
               inputs.inputs_path, fmt::join(resolved.ignored_keys, ", "));
  return resolved;
}

}  // namespace switchyard::tools
