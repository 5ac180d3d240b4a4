// CPU kernels of the conv family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_conv_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
