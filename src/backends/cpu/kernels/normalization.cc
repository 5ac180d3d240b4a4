// CPU kernels of the normalization family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_normalization_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
