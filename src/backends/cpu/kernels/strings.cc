// CPU kernels of the strings family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_strings_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
