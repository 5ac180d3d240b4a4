// Registration of the pool family's kernels that live outside pool.cc.
#pragma once

#include "runtime/kernel.h"

namespace switchyard::cpu {

/// MaxUnpool, MaxRoiPool and RoiAlign (pool_roi.cc).
void register_pool_roi_kernels(runtime::KernelRegistry& r);

}  // namespace switchyard::cpu
