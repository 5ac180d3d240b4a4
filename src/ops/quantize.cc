// Schemas of the quantize family (see op_kinds.def).
#include "ops/schema.h"
#include "ops/shape_inference.h"

namespace switchyard::ops {

void register_quantize_schemas(SchemaRegistry& r) { (void)r; }

}  // namespace switchyard::ops
