// Fusion on a CUDA partition's private graph (after placement, inside CudaBackend::compile):
// fuse_partition runs the shared passes (backends/fusion/fusion.h, their payloads in
// backends/fusion/payload.h) with the CUDA kernels' rules, then the CUDA-only ones, whose
// payload is declared here. The layout pass (layout.h) runs later and marks its nodes with the
// shared fusion::ChannelsLast.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/kernels/elementwise_impl.h"
#include "backends/fusion/fusion.h"
#include "ir/graph.h"

namespace switchyard::cuda {

/// Every fusion of a CUDA partition, in order (fusion.cc): GELU patterns into Gelu; conv and
/// matmul epilogues (the tanh GELU too: cuBLASLt's GELU epilogue); Transposes folded into MatMul
/// operands of every float dtype; residual Add -> LayerNormalization (a pre-norm running sum
/// too, which the norm then writes: fusion::ResidualSum) and mask Add -> Softmax;
/// attention, where it will run in float16 or bfloat16 (its values are, or `precision` narrows
/// float32 to them: kernels/attention.cc), reading operands cut out of one product (GPT's QKV
/// Split) in place; sibling products that are such an attention's operands (BERT's query, key
/// and value) packed into one and read in place too; then elementwise chains. Returns the
/// groups for the placement report (merged across passes, naming only the partition's nodes).
std::vector<runtime::FusionGroup> fuse_partition(ir::Graph& graph, backends::Precision precision);

/// A fused elementwise chain on its head node (fuse_elementwise_chains,
/// kernels/elementwise_fusion.cc): the node computes, per element of the broadcast of input 0 and
/// the inputs its steps read, v = input 0; v = step(v) for each step, in one launch of the chain
/// kernel (elementwise.cc), and its output has input 0's dtype. The head keeps its op type, which
/// then only selects the registry entry; every plain elementwise kernel refuses such a node.
struct ElementwiseChain final : ir::NodeAnnotation {
  struct Step {
    /// The step's op, one of kEwChainOps (elementwise_impl.h); step 0 is the head's own op, or
    /// Gelu for a recognised GELU pattern.
    EwOp op = EwOp::Relu;
    /// A binary step's scalar operand (operand kEwScalarStep), or a unary step's attribute: alpha
    /// of LeakyRelu / Elu / Celu / ThresholdedRelu, for Gelu 1 = tanh approximation and 0 =
    /// exact; 0 otherwise.
    float alpha = 0;
    /// kEwUnaryStep: a unary step; kEwScalarStep: the other operand is `alpha`; k >= 0: the
    /// other operand is the node's input k (its own inputs, then the absorbed nodes' tensor
    /// operands, appended as extra inputs).
    int64_t operand = kEwUnaryStep;
    /// The running value is the op's second operand (Sub(c, v), Div(c, v)).
    bool swapped = false;
  };
  std::vector<Step> steps;  ///< at most kEwMaxChainSteps

  /// "chain=[Add(input 1), Relu]".
  std::string describe() const override;
};

/// The ONNX op type of a chain step's op ("Add"; "?" for an op that is no chain op).
const char* chain_op_name(EwOp op);

/// Fuses runs of single-reader elementwise nodes into one node with an ElementwiseChain
/// (kernels/elementwise_fusion.cc).
void fuse_elementwise_chains(ir::Graph& graph);

}  // namespace switchyard::cuda
