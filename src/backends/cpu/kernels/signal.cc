// CPU kernels of the signal family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_signal_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
