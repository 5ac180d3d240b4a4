// CPU kernels of the reduce family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_reduce_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
