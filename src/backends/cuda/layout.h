// Channels-last activations in a CUDA partition's private graph (the rewrite itself is shared with
// the cpu: backends/fusion/fusion.h, apply_channels_last). cuDNN's tensor-core engines
// take NHWC, while ONNX values are NCHW: without this pass every fp16/bf16 convolution
// transposes its input in and its output back (two extra passes over memory per conv). The
// pass marks the 2-D convolutions of a 16-bit float type, and the pools, channel Concats and
// layout-free elementwise nodes after them, with a fusion::ChannelsLast (backends/fusion/
// payload.h): their 4-D activations (Conv's
// X, Z and Y, a pool's X and Y) are stored [N, H, W, C] (a Concat's axis is remapped), and
// explicit Transpose nodes convert where a value enters or leaves the channels-last region. A
// resnet or mobilenet partition keeps one transpose at its input and one after its global pool;
// the Transposes show in the trace as "<value>/to_nhwc" and "<node>/to_nchw". Names of the
// original values are kept (a value leaving the region is still produced, by its Transpose,
// under its own name).
#pragma once

#include <cstddef>

#include "ir/graph.h"

namespace switchyard::cuda {

/// Rewrites `graph` as above; returns the number of nodes now channels-last. Needs no device.
size_t apply_channels_last(ir::Graph& graph);

}  // namespace switchyard::cuda
