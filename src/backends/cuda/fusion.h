// Fusion on a CUDA partition's private graph (after placement, inside CudaBackend::compile):
// fuse_partition runs the shared passes (backends/fusion/fusion.h) with the CUDA kernels' rules,
// then the CUDA-only ones. Attribute set by the layout pass (layout.h), not by fusion:
//
//   "_sy_layout" (string) "NHWC": the node's 4-D activations are stored channels-last.
#pragma once

#include <vector>

#include "backends/fusion/fusion.h"
#include "ir/graph.h"

namespace switchyard::cuda {

/// Every fusion of a CUDA partition, in order (fusion.cc): GELU patterns into Gelu; conv and
/// matmul epilogues (the tanh GELU too: cuBLASLt's GELU epilogue); Transposes folded into MatMul
/// operands of every float dtype; residual Add -> LayerNormalization and mask Add -> Softmax;
/// attention, where it will run in float16 or bfloat16 (its values are, or `precision` narrows
/// float32 to them: kernels/attention.cc); then elementwise chains. Returns the groups for the
/// placement report (merged across passes).
std::vector<runtime::FusionGroup> fuse_partition(ir::Graph& graph, backends::Precision precision);

void fuse_elementwise_chains(ir::Graph& graph);  // kernels/elementwise_fusion.cc

}  // namespace switchyard::cuda
