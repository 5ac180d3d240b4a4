// CPU kernels of the shape family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_shape_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
