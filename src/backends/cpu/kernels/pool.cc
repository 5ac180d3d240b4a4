// CPU kernels of the pool family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_pool_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
