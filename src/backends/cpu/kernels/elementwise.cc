// CPU kernels of the elementwise family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_elementwise_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
