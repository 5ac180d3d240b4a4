// CPU kernels of the rnn family.
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

void register_rnn_kernels(backends::KernelRegistry& r) { (void)r; }

}  // namespace switchyard::cpu
