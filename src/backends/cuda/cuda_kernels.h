// The CUDA backend's kernel registry: one register_* function per op family (kernels/<family>.cc,
// with its device code in kernels/<family>.cu behind kernels/<family>_impl.h).
#pragma once

#include "runtime/kernel.h"

namespace switchyard::cuda {

const runtime::KernelRegistry& cuda_kernels();

void register_matmul_kernels(runtime::KernelRegistry& r);          // kernels/matmul.cc
void register_attention_kernels(runtime::KernelRegistry& r);       // kernels/attention.cc
void register_conv_kernels(runtime::KernelRegistry& r);            // kernels/conv.cc
void register_elementwise_kernels(runtime::KernelRegistry& r);     // kernels/elementwise.cc
void register_reduce_kernels(runtime::KernelRegistry& r);          // kernels/reduce.cc
void register_normalization_kernels(runtime::KernelRegistry& r);   // kernels/normalization.cc
void register_data_kernels(runtime::KernelRegistry& r);            // kernels/data.cc
void register_gather_scatter_kernels(runtime::KernelRegistry& r);  // kernels/gather_scatter.cc
void register_resize_kernels(runtime::KernelRegistry& r);          // kernels/resize.cc
void register_pool_kernels(runtime::KernelRegistry& r);            // kernels/pool.cc
void register_stencil_kernels(runtime::KernelRegistry& r);         // kernels/stencil.cc

}  // namespace switchyard::cuda
