// If, Loop and Scan inside a CUDA partition. Their bodies are step programs of the partition
// (step_program.h), run on the partition's stream; what decides a branch or another iteration
// stays in device memory and drives CUDA graph conditional nodes (CUDA >= 12.4):
//
//  - device-driven: the node becomes an IF node (then and else bodies) or a WHILE node whose
//    body is captured from the body program; a tiny kernel before the node and one at the end
//    of each iteration read the condition, the trip count and the iteration counter on the
//    device and set the node's condition (cudaGraphSetConditional). Loop-carried values live in
//    buffers of fixed shape that each iteration's results are copied back into; Scan's slices
//    and the scan outputs are read and written at the device-side iteration index. Inside a
//    captured partition the node is part of the partition's graph; run eagerly, it is captured
//    and launched as a graph of its own. No host synchronisation per iteration.
//  - host-driven, where that cannot hold: a carried value whose shape changes per iteration,
//    branches of different shapes, a body that must read device data on the host, scan outputs
//    of a loop whose trip count the host cannot know; and every loop when
//    SWITCHYARD_CUDA_HOST_LOOPS=1 is set at compile time, or a while loop without trip count in a
//    run with a deadline (so the deadline can stop it). The body's steps still run on the GPU, on
//    the stream; the host reads the condition each iteration (a host synchronisation, counted in
//    RunStats) unless the body passes it through unchanged. A captured partition cannot hold such a
//    node: it runs uncaptured.
//
// Host-only header (g++).
#pragma once

#include <memory>
#include <vector>

#include "backends/cuda/step_program.h"
#include "ir/graph.h"
#include "runtime/kernel.h"

namespace switchyard::cuda {

/// Whether cuda:N runs control-flow node `node` (If, Loop or Scan) with every node of its
/// bodies; the reason names the first body node that cannot run there.
runtime::Support control_flow_support(const ir::Node& node);

/// Inputs of control-flow node `node` read on the host: a Loop's trip count (so one computed
/// from shapes needs no read-back).
std::vector<int> control_flow_host_inputs(const ir::Node& node);

/// The values of enclosing graphs that `node`'s bodies read, constants excepted, in first-read
/// order.
std::vector<const ir::Value*> implicit_inputs_of(const ir::Node& node);

/// The step of control-flow node `node`, its bodies compiled as programs in `context`.
std::unique_ptr<CompositeStep> make_control_flow_step(const ir::Node& node,
                                                      ProgramContext& context);

/// Replaces every body of `graph`'s nodes (recursively) by a copy whose reads of enclosing
/// values point at `graph`'s values, found by name (a partition's clone keeps names; a
/// constant it lacks is added). Passes that rewrite `graph` then see the bodies' reads among
/// the values' uses.
void clone_control_flow_bodies(ir::Graph& graph);

/// A read of a value of the partition's graph from inside a body: an input of a body node, or
/// a body output (`node` null, `body` set), with the dtype it had before the precision rewrite.
struct BodyRead {
  ir::Node* node = nullptr;
  ir::Graph* body = nullptr;
  size_t index = 0;
  ir::Value* value = nullptr;
  ir::DType dtype = ir::DType::Undefined;
};
using BodyReads = std::vector<BodyRead>;

/// Every read of `graph`'s values from inside its nodes' bodies.
BodyReads record_body_reads(const ir::Graph& graph);
/// After the --precision rewrite: bodies keep their types (they run in float32), so each read
/// recorded gets its old dtype back: the original value where the rewrite redirected the read,
/// or a Cast back where it retyped the value itself.
void restore_body_reads(ir::Graph& graph, const BodyReads& reads);

}  // namespace switchyard::cuda
