// CPU kernels of the matmul family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_matmul_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
