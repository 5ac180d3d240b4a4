// The CPU backend's kernel registry: one registration function per op family, each in
// src/backends/cpu/kernels/<family>.cc, with one registry line per kernel.
#pragma once

#include "backends/kernel.h"

namespace switchyard::cpu {

/// Every CPU kernel (built once, thread-safe).
const backends::KernelRegistry& cpu_kernels();

void register_elementwise_kernels(backends::KernelRegistry& r);
void register_quantize_kernels(backends::KernelRegistry& r);
void register_reduce_kernels(backends::KernelRegistry& r);
void register_normalization_kernels(backends::KernelRegistry& r);
void register_conv_kernels(backends::KernelRegistry& r);
void register_loss_kernels(backends::KernelRegistry& r);
void register_matmul_kernels(backends::KernelRegistry& r);
void register_pool_kernels(backends::KernelRegistry& r);
void register_shape_kernels(backends::KernelRegistry& r);
void register_gather_scatter_kernels(backends::KernelRegistry& r);
void register_image_kernels(backends::KernelRegistry& r);
void register_rnn_kernels(backends::KernelRegistry& r);
void register_signal_kernels(backends::KernelRegistry& r);
void register_strings_kernels(backends::KernelRegistry& r);
void register_sequence_kernels(backends::KernelRegistry& r);
void register_control_flow_kernels(backends::KernelRegistry& r);

}  // namespace switchyard::cpu
