// CPU kernels of the sequence family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_sequence_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
