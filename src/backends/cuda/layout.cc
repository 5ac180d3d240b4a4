#include "backends/cuda/layout.h"

#include "backends/fusion/fusion.h"

namespace switchyard::cuda {

size_t apply_channels_last(ir::Graph& graph) {
  // cuDNN's NHWC tensor-core engines take the 16-bit float types; its pools take NHWC too.
  static const backends::ChannelsLastRules rules{{ir::DType::Float16, ir::DType::BFloat16}, true};
  return backends::apply_channels_last(graph, rules);
}

}  // namespace switchyard::cuda
