// CPU kernels of the gather_scatter family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_gather_scatter_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
