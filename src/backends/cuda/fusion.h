// CUDA-only fusion on a CUDA partition's private graph (after placement, inside
// CudaBackend::compile); the fusions the cpu shares (conv and matmul epilogues) are in
// backends/fusion/fusion.h. Attribute set by the layout pass (layout.h), not by fusion:
//
//   "_sy_layout" (string) "NHWC": the node's 4-D activations are stored channels-last.
#pragma once

#include "backends/fusion/fusion.h"
#include "ir/graph.h"

namespace switchyard::cuda {

void fuse_elementwise_chains(ir::Graph& graph);  // kernels/elementwise_fusion.cc

}  // namespace switchyard::cuda
