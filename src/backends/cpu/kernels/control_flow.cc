// CPU kernels of the control_flow family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_control_flow_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
