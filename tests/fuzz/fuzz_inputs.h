// What fuzz_compile_run and fuzz_executable share: seeded, bounded inputs for a graph's inputs,
// and the per-run deadline.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "switchyard/switchyard.hpp"
#include "tooling/inputs.h"

namespace fuzz_inputs {

using namespace switchyard;

// Every symbolic dim of the inputs is bound to this.
constexpr int64_t kSymbolicDimValue = 2;
// The inputs the harness makes itself stay small; what the graph computes from them is bounded by
// the run's memory cap instead.
constexpr int64_t kMaxInputElements = int64_t{1} << 16;
constexpr int64_t kDeadlineMs = 2000;

// Seeded inputs for every graph input, or nullopt when one cannot be made (a sequence or
// optional input, an unknown rank or dim, or more than kMaxInputElements elements).
inline std::optional<std::map<std::string, Tensor>> make_inputs(const ir::Graph& graph) {
  tooling::InputSpec spec;
  spec.seed = 7;
  for (const ir::Value* v : graph.inputs()) {
    const ir::Type& type = v->type();
    if (!type.is_tensor() || !type.shape) return std::nullopt;
    for (const ir::Dim& d : *type.shape) {
      if (d.is_symbolic()) {
        spec.dims[d.symbol] = kSymbolicDimValue;
      } else if (!d.is_static()) {
        return std::nullopt;
      }
    }
  }
  std::map<std::string, Tensor> inputs;
  std::vector<tooling::Declared> declared = tooling::declared_of(graph.inputs());
  for (size_t i = 0; i < declared.size(); ++i) {
    const tooling::Declared& v = declared[i];
    if (checked_numel(tooling::resolve_input_shape(v, spec)) > kMaxInputElements)
      return std::nullopt;
    inputs[v.name] = tooling::make_seeded_input(v, i, spec);
  }
  return inputs;
}

}  // namespace fuzz_inputs
