// Schema of Depend (domain ai.switchyard): Y = X, after the producers of every further input.
// Inputs 1.. carry no data, only an ordering edge (GraphBuilder::control_dependency); op_traits
// declares them ordering only, so placement never copies them across devices.
#include "ops/schema.h"

namespace switchyard::ops {

namespace {

// A partition's private copy omits ordering inputs produced in another partition
// (backends/partition_graph.h), so they may be absent here.
void infer_depend(InferContext& ctx) {
  if (!ctx.has_input(0)) ctx.fail("input 0 (the value passed on) is omitted");
  ctx.set_output(0, ctx.input_type(0));
}

}  // namespace

void register_depend_schemas(SchemaRegistry& r) {
  r.add(OpSchema{OpKind::Depend, 2, -1, 1, 1, infer_depend});
}

}  // namespace switchyard::ops
