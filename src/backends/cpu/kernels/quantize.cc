// CPU kernels of the quantize family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_quantize_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
