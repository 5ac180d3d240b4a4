// Making inputs for a run: seeded random tensors at a declared shape with symbolic dims bound
// by name or per input, and summaries of values (shape, dtype, min/max/mean).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace switchyard::runtime {

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
std::vector<int64_t> resolve_input_shape(const ir::Value& input, const InputSpec& spec);

/// A seeded random tensor for `input`: floats N(0,1), integers uniform in [0, 16), bools
/// random. The stream depends on the seed and the input's position, so every input differs.
ir::Tensor make_seeded_input(const ir::Value& input, size_t position, const InputSpec& spec);

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

}  // namespace switchyard::runtime
