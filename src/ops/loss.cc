// Schemas of the loss family (see op_kinds.def).
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

void register_loss_schemas(SchemaRegistry& r) { (void)r; }

}  // namespace switchyard::ops
