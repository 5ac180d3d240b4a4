// Registration functions of the image family's kernel files, called from image.cc.
#pragma once

#include "backends/kernel.h"

namespace switchyard::cpu {

/// Resize (image_resize.cc).
void register_image_resize_kernels(backends::KernelRegistry& r);
/// GridSample and Col2Im (image_sampling.cc).
void register_image_sampling_kernels(backends::KernelRegistry& r);

}  // namespace switchyard::cpu
