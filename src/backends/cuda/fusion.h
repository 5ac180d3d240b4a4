// Backend-specific fusion on a CUDA partition's private graph (after placement, inside
// CudaBackend::compile). A fused node keeps its op type and gains internal attributes and
// inputs that only the CUDA kernels read:
//
//   attribute "_sy_activation" (string): "Relu", "Gelu" (erf form), "Sigmoid", "Tanh", "Clip"
//       (Conv only, bounds in "_sy_clip_min" / "_sy_clip_max") — applied to the node's result
//       after bias/residual.
//   Conv: optional input 3 = residual Z (same shape as Y): Y = act(conv(X, W) + B + Z).
//   MatMul: optional input 2 = bias (1-D, length N), attribute "_sy_alpha" (float, default 1):
//       Y = act(alpha * (A @ B) + bias).
//   Gemm: "_sy_activation" only (C already is its bias).
//   attribute "_sy_layout" (string) "NHWC": set by the layout pass (layout.h), not by fusion;
//       the node's 4-D activations are stored channels-last.
//
// Each pass rewires the absorbed nodes' consumers to the fused node's output and removes the
// absorbed nodes; it fuses only when the absorbed nodes have no other reader and their outputs
// are not partition outputs (graph outputs of the private graph).
#pragma once

#include "ir/graph.h"

namespace switchyard::cuda {

void fuse_conv_epilogues(ir::Graph& graph);      // kernels/conv_fusion.cc
void fuse_matmul_epilogues(ir::Graph& graph);    // kernels/matmul_fusion.cc
void fuse_elementwise_chains(ir::Graph& graph);  // kernels/elementwise_fusion.cc

}  // namespace switchyard::cuda
