// The CPU backend's kernel registry: one registration function per op family, each in
// src/backends/cpu/kernels/<family>.cc, with one registry line per kernel.
#pragma once

#include "runtime/kernel.h"

namespace switchyard::cpu {

/// Every CPU kernel (built once, thread-safe).
const runtime::KernelRegistry& cpu_kernels();

void register_elementwise_kernels(runtime::KernelRegistry& r);
void register_quantize_kernels(runtime::KernelRegistry& r);
void register_reduce_kernels(runtime::KernelRegistry& r);
void register_normalization_kernels(runtime::KernelRegistry& r);
void register_conv_kernels(runtime::KernelRegistry& r);
void register_loss_kernels(runtime::KernelRegistry& r);
void register_matmul_kernels(runtime::KernelRegistry& r);
void register_pool_kernels(runtime::KernelRegistry& r);
void register_shape_kernels(runtime::KernelRegistry& r);
void register_gather_scatter_kernels(runtime::KernelRegistry& r);
void register_image_kernels(runtime::KernelRegistry& r);
void register_rnn_kernels(runtime::KernelRegistry& r);
void register_signal_kernels(runtime::KernelRegistry& r);
void register_strings_kernels(runtime::KernelRegistry& r);
void register_sequence_kernels(runtime::KernelRegistry& r);
void register_control_flow_kernels(runtime::KernelRegistry& r);
void register_stencil_kernels(runtime::KernelRegistry& r);
void register_depend_kernels(runtime::KernelRegistry& r);

}  // namespace switchyard::cpu
