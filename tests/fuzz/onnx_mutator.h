// A structure-aware mutator for serialized ONNX models: parses the bytes as onnx::ModelProto,
// applies one edit a malicious or broken exporter could make (an edge-value dim or attribute, a
// wrong dtype, a rewired input, a dropped or duplicated node, a resized initializer, ... in the
// main graph or any If/Loop/Scan body) and serializes the result. onnx_mutator.cc also defines
// libFuzzer's LLVMFuzzerCustomMutator and LLVMFuzzerCustomCrossOver hooks with these, so every
// target linking it (fuzz_import, fuzz_compile_run) mutates models with structure.
#pragma once

#include <cstddef>
#include <cstdint>

namespace switchyard::fuzz {

/// Mutates the model in data[0, size) in place, writing at most max_size bytes; returns the new
/// size. Bytes that do not parse as a ModelProto with a graph (and, at random, some that do) get
/// libFuzzer's byte-level mutation instead, so the parser's own edges stay covered.
size_t mutate_onnx_model(uint8_t* data, size_t size, size_t max_size, unsigned int seed);

/// Copies a random node (with its attributes and bodies) of model 2 into a random graph of model 1
/// and writes the result to out; returns its size, or 0 when either side does not parse or the
/// result exceeds max_out_size (libFuzzer then tries another mutation).
size_t cross_over_onnx_models(const uint8_t* data1, size_t size1, const uint8_t* data2,
                              size_t size2, uint8_t* out, size_t max_out_size, unsigned int seed);

}  // namespace switchyard::fuzz
