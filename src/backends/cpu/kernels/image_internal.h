// Registration functions of the image family's kernel files, called from image.cc.
#pragma once

#include "runtime/kernel.h"

namespace switchyard::cpu {

/// Resize (image_resize.cc).
void register_image_resize_kernels(runtime::KernelRegistry& r);
/// GridSample and Col2Im (image_sampling.cc).
void register_image_sampling_kernels(runtime::KernelRegistry& r);

}  // namespace switchyard::cpu
