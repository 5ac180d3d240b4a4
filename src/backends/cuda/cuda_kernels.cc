#include "backends/cuda/cuda_kernels.h"

namespace switchyard::cuda {

const runtime::KernelRegistry& cuda_kernels() {
  static const runtime::KernelRegistry registry = [] {
    runtime::KernelRegistry r("cuda");
    register_matmul_kernels(r);
    register_attention_kernels(r);
    register_conv_kernels(r);
    register_elementwise_kernels(r);
    register_reduce_kernels(r);
    register_normalization_kernels(r);
    register_data_kernels(r);
    register_gather_scatter_kernels(r);
    register_resize_kernels(r);
    register_pool_kernels(r);
    register_stencil_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace switchyard::cuda
