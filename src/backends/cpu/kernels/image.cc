// CPU kernels of the image family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_image_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
