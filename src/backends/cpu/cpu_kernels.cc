#include "backends/cpu/cpu_kernels.h"

namespace switchyard::cpu {

const runtime::KernelRegistry& cpu_kernels() {
  static const runtime::KernelRegistry registry = [] {
    runtime::KernelRegistry r("cpu");
    register_elementwise_kernels(r);
    register_quantize_kernels(r);
    register_reduce_kernels(r);
    register_normalization_kernels(r);
    register_conv_kernels(r);
    register_matmul_kernels(r);
    register_loss_kernels(r);
    register_pool_kernels(r);
    register_shape_kernels(r);
    register_gather_scatter_kernels(r);
    register_image_kernels(r);
    register_rnn_kernels(r);
    register_signal_kernels(r);
    register_strings_kernels(r);
    register_sequence_kernels(r);
    register_control_flow_kernels(r);
    register_stencil_kernels(r);
    register_depend_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace switchyard::cpu
