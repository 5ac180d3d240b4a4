// CPU kernels of the loss family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_loss_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
