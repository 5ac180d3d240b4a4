// CPU kernel of Depend (domain ai.switchyard): passes input 0 on without a copy; the ordering
// inputs are never read (their producers have run before, which is all they ask).
#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

namespace {

class Depend : public runtime::Kernel {
 public:
  explicit Depend(const runtime::KernelInit&) {}
  void run(runtime::KernelContext& ctx) const override { ctx.set_output(0, ctx.input_datum(0)); }
};

}  // namespace

void register_depend_kernels(runtime::KernelRegistry& r) { r.add<Depend>(ops::OpKind::Depend, {}); }

}  // namespace switchyard::cpu
