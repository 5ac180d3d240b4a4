#include "ops/schema.h"

#include "ir/checked_math.h"
#include "ir/tensor.h"

#include <mutex>

namespace switchyard::ops {

namespace {
const ir::Type kUnknownType{};

// Keeps what the model declared (value_info, graph outputs) where inference knows less.
ir::Type merge_types(const ir::Type& inferred, const ir::Type& declared) {
  if (inferred.is_unknown()) return declared;
  if (!inferred.is_tensor() || !declared.is_tensor()) return inferred;
  if (inferred.dtype != declared.dtype && declared.dtype != ir::DType::Undefined) return inferred;
  if (!inferred.shape) return ir::Type::tensor(inferred.dtype, declared.shape);
  if (!declared.shape || declared.shape->size() != inferred.shape->size()) return inferred;
  ir::Type out = inferred;
  for (size_t i = 0; i < out.shape->size(); ++i) {
    if ((*out.shape)[i].is_unknown()) (*out.shape)[i] = (*declared.shape)[i];
  }
  return out;
}
// A graph output keeps the dtype the model declares for it: a node that produces another dtype
// is refused, so run() returns what the model promises. Intermediate values merely take the
// inferred type.
void check_declared_output(const ir::Node& node, const ir::Value& v, const ir::Type& inferred) {
  const ir::Type& declared = v.type();
  if (!inferred.is_tensor() || !declared.is_tensor()) return;
  if (inferred.dtype == ir::DType::Undefined || declared.dtype == ir::DType::Undefined) return;
  if (inferred.dtype == declared.dtype || !v.owner() || !v.owner()->is_output(&v)) return;
  SY_THROW(InvalidModel, "output '{}'{} is declared {}, but {} produces {}", v.name(),
           v.owner()->parent() ? fmt::format(" of graph '{}'", v.owner()->name()) : "",
           ir::dtype_name(declared.dtype), node.describe(), ir::dtype_name(inferred.dtype));
}
// An inferred output must be able to exist: at most kMaxRank dims and, when its shape is
// static, a byte size that fits in memory addressing. A model that makes one is refused here,
// before any plan or allocation is sized by it.
void check_output_size(const ir::Node& node, const ir::Value& v, const ir::Type& t) {
  if (!t.is_tensor() || !t.shape) return;
  SY_CHECK(static_cast<int64_t>(t.shape->size()) <= ir::kMaxRank, InvalidModel,
           "{}: output '{}' would have {} dims; a tensor has at most {}", node.describe(), v.name(),
           t.shape->size(), ir::kMaxRank);
  std::optional<std::vector<int64_t>> dims = ir::static_dims(*t.shape);
  if (!dims) return;
  try {
    ir::checked_nbytes(t.dtype == ir::DType::Undefined ? ir::DType::UInt8 : t.dtype,
                       ir::checked_numel(*dims));
  } catch (const Error& e) {
    SY_THROW(InvalidModel, "{}: output '{}' of shape {} cannot exist: {}", node.describe(),
             v.name(), ir::shape_to_string(*dims), e.message());
  }
}
}  // namespace

const ir::Type& InferContext::input_type(size_t i) const {
  const ir::Value* v = node_.input(i);
  return v ? v->type() : kUnknownType;
}

const ir::Type& InferContext::input_tensor(size_t i) const {
  const ir::Value* v = node_.input(i);
  if (!v) fail("input {} is required but omitted", i);
  if (!v->type().is_tensor() && !v->type().is_unknown())
    fail("input {} '{}' must be a tensor, got {}", i, v->name(), v->type().to_string());
  return v->type();
}

const ir::Tensor* InferContext::input_constant(size_t i) const {
  const ir::Value* v = node_.input(i);
  return v && v->is_constant() ? &v->constant() : nullptr;
}

void InferContext::set_output(size_t i, ir::Type t) {
  if (i < outputs_.size()) outputs_[i] = std::move(t);
}

void InferContext::infer_subgraph(ir::Graph& body) const { infer_types(body); }

void SchemaRegistry::add(OpSchema schema) {
  size_t k = static_cast<size_t>(schema.kind);
  SY_ASSERT(k < by_kind_.size() && !present_[k]);
  present_[k] = true;
  by_kind_[k] = std::move(schema);
}

const OpSchema* SchemaRegistry::find(OpKind kind) const {
  size_t k = static_cast<size_t>(kind);
  return k < by_kind_.size() && present_[k] ? &by_kind_[k] : nullptr;
}

const SchemaRegistry& schemas() {
  static const SchemaRegistry registry = [] {
    SchemaRegistry r;
    register_elementwise_schemas(r);
    register_quantize_schemas(r);
    register_reduce_schemas(r);
    register_normalization_schemas(r);
    register_conv_schemas(r);
    register_matmul_schemas(r);
    register_loss_schemas(r);
    register_pool_schemas(r);
    register_shape_schemas(r);
    register_gather_scatter_schemas(r);
    register_image_schemas(r);
    register_rnn_schemas(r);
    register_signal_schemas(r);
    register_strings_schemas(r);
    register_sequence_schemas(r);
    register_control_flow_schemas(r);
    register_stencil_schemas(r);
    register_depend_schemas(r);
    return r;
  }();
  return registry;
}

void infer_node(ir::Node& node) {
  SY_CHECK(is_known_domain(node.domain()), Unsupported, "{}: domain '{}' is not supported",
           node.describe(), node.domain());
  auto kind = find_op_kind(node.op_type(), node.domain());
  SY_CHECK(kind.has_value(), Unsupported, "{}: op type '{}' is not supported", node.describe(),
           node.op_type());
  const OpSchema* schema = schemas().find(*kind);
  SY_CHECK(schema != nullptr, Unsupported, "{}: op type '{}' has no schema in this build",
           node.describe(), node.op_type());
  node.set_kind_id(static_cast<int>(*kind));

  // Trailing omitted inputs do not count.
  int given = static_cast<int>(node.num_inputs());
  while (given > 0 && node.input(static_cast<size_t>(given - 1)) == nullptr) --given;
  SY_CHECK(given >= schema->min_inputs && (schema->max_inputs < 0 || given <= schema->max_inputs),
           InvalidModel, "{}: has {} inputs, expected {}..{}", node.describe(), given,
           schema->min_inputs,
           schema->max_inputs < 0 ? std::string("any") : std::to_string(schema->max_inputs));
  for (int i = 0; i < schema->min_inputs; ++i) {
    SY_CHECK(node.input(static_cast<size_t>(i)) != nullptr, InvalidModel,
             "{}: required input {} is missing", node.describe(), i);
  }
  int outs = static_cast<int>(node.num_outputs());
  SY_CHECK(outs >= schema->min_outputs && (schema->max_outputs < 0 || outs <= schema->max_outputs),
           InvalidModel, "{}: has {} outputs, expected {}..{}", node.describe(), outs,
           schema->min_outputs,
           schema->max_outputs < 0 ? std::string("any") : std::to_string(schema->max_outputs));

  std::vector<ir::Type> out_types(node.num_outputs());
  InferContext ctx(node, out_types);
  try {
    schema->infer(ctx);
  } catch (const Error& e) {
    // Shared helpers (checked arithmetic, tensor sizes) do not know the node: name it here.
    if (e.message().find(node.describe()) != std::string::npos) throw;
    throw Error(e.code(), fmt::format("{}: {}", node.describe(), e.message()));
  }
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    ir::Value* v = node.output(i);
    check_output_size(node, *v, out_types[i]);
    check_declared_output(node, *v, out_types[i]);
    v->set_type(merge_types(out_types[i], v->type()));
  }
}

void infer_types(ir::Graph& graph) {
  for (auto& node : graph.nodes()) infer_node(*node);
}

}  // namespace switchyard::ops
