// Making inputs for a run: seeded random tensors at a declared shape with symbolic dims bound
// by name or per input, and summaries of values (shape, dtype, min/max/mean).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::tooling {

/// A graph input or output as declared: its name and type (from the public API's ValueInfo, or
/// from a graph inside the library).
struct Declared {
  std::string name;
  ir::Type type;
};

/// The declared type a ValueInfo spells ("batch", "3", "?" dims; sequence and optional kinds).
Declared declared_of(const ValueInfo& info);
std::vector<Declared> declared_of(const std::vector<ValueInfo>& values);
std::vector<Declared> declared_of(const std::vector<ir::Value*>& values);

/// How to size and fill inputs that the caller does not give.
struct InputSpec {
  /// Values of symbolic dims by name (`--dim batch=2`), shared by every input using the name.
  std::map<std::string, int64_t> dims;
  /// Full shapes per input name (`--shape input=1x3x224x224`); wins over `dims`.
  std::map<std::string, std::vector<int64_t>> shapes;
  uint64_t seed = 0;
};

/// Concrete shape of `input` under `spec`. Throws InvalidArgument naming the input and the dim
/// when a symbolic or unknown dim has no value, or when a --shape contradicts a static dim.
std::vector<int64_t> resolve_input_shape(const Declared& input, const InputSpec& spec);

/// A seeded random tensor for `input`: floats N(0,1), integers uniform in [0, 16), bools
/// random. The stream depends on the seed and the input's position, so every input differs.
ir::Tensor make_seeded_input(const Declared& input, size_t position, const InputSpec& spec);

/// The inputs of one run, in graph-input order, and where each came from.
struct ResolvedInputs {
  std::vector<ir::Datum> values;
  /// Per input: "from in.npz" or "seed 7" ("seed 7, not in in.npz" when a file was given).
  std::vector<std::string> origins;
  /// Keys of the file that were not used: `out.<name>` arrays naming a graph output (the
  /// expected outputs a reference file carries).
  std::vector<std::string> ignored_keys;
};

/// Inputs for a run from the arrays of an inputs file (`given`, read from `source`; empty when
/// no file was given) and seeded values. A key names a graph input by its name or as
/// `in.<name>`; an `out.<name>` key naming a graph output is ignored. Throws InvalidArgument,
/// naming the key, input or option, when a key names nothing (the message lists the model's
/// inputs), when an input is missing from a given file and `seed_given` is false, when an
/// array's dtype differs from the declared one, when its shape contradicts a --shape or a
/// --dim binding, or when --shape / --dim names no input / no symbolic dim of an input.
ResolvedInputs resolve_inputs(const std::vector<Declared>& inputs,
                              const std::vector<Declared>& outputs,
                              const std::map<std::string, ir::Tensor>& given,
                              const std::string& source, const InputSpec& spec, bool seed_given);

/// Parses "1x3x224x224" (or "" / "scalar" for rank 0). Throws InvalidArgument.
std::vector<int64_t> parse_shape(const std::string& text);

/// Shape, dtype and statistics of a value, for printing.
struct ValueSummary {
  std::string name;
  std::string dtype;
  std::string shape;
  bool numeric = false;
  double min = 0, max = 0, mean = 0;
};
ValueSummary summarize(const std::string& name, const ir::Datum& value);

}  // namespace switchyard::tooling
