#include "runtime/kernel.h"

#include "runtime/graph_program.h"

namespace switchyard::runtime {

const ir::Datum& KernelContext::input_datum(size_t i) const {
  if (i >= inputs_.size() || !inputs_[i]) fail("input {} is required but missing", i);
  return *inputs_[i];
}

const ir::Tensor& KernelContext::input(size_t i) const {
  const ir::Datum& d = input_datum(i);
  if (!d.is_tensor()) fail("input {} must be a tensor", i);
  return d.tensor;
}

ir::Tensor& KernelContext::allocate_output(size_t i, ir::DType dtype, std::vector<int64_t> shape) {
  SY_ASSERT(i < outputs_.size());
  if (dtype == ir::DType::String) {
    outputs_[i] = ir::Datum(ir::Tensor(dtype, std::move(shape)));
    return outputs_[i].tensor;
  }
  int64_t numel = ir::checked_numel(shape);
  size_t bytes = ir::checked_nbytes(dtype, numel);
  std::shared_ptr<void> storage = state_.pool->allocate(bytes);
  void* data = storage.get();
  outputs_[i] = ir::Datum(ir::Tensor::wrap(dtype, std::move(shape), std::move(storage), data));
  return outputs_[i].tensor;
}

void KernelContext::set_output(size_t i, ir::Datum value) {
  SY_ASSERT(i < outputs_.size());
  outputs_[i] = std::move(value);
}

std::shared_ptr<void> KernelContext::scratch(size_t bytes) const {
  return state_.pool->allocate(bytes);
}

int KernelContext::num_threads() const { return state_.num_threads; }

void KernelRegistry::add(KernelDef def) {
  SY_ASSERT(def.create != nullptr);
  by_op_.at(static_cast<size_t>(def.op)).push_back(std::move(def));
}

const KernelDef* KernelRegistry::find(const ir::Node& node, Support* why) const {
  ops::OpKind kind = ops::kind_of(node);
  const auto& defs = by_op_.at(static_cast<size_t>(kind));
  if (defs.empty()) {
    if (why) *why = Support::no(fmt::format("no {} kernel on {}", node.op_type(), backend_name_));
    return nullptr;
  }
  std::string last_reason;
  for (const KernelDef& def : defs) {
    if (!def.dtypes.empty()) {
      const ir::Value* v =
          def.dtype_input >= 0 ? node.input(static_cast<size_t>(def.dtype_input)) : node.output(0);
      ir::DType dt = v ? v->type().dtype : ir::DType::Undefined;
      if (v && v->type().is_tensor() && dt != ir::DType::Undefined &&
          std::find(def.dtypes.begin(), def.dtypes.end(), dt) == def.dtypes.end()) {
        last_reason = fmt::format("no {} kernel for {} on {}", node.op_type(), ir::dtype_name(dt),
                                  backend_name_);
        continue;
      }
    }
    if (def.check) {
      Support s = def.check(node);
      if (!s.ok) {
        last_reason = s.reason;
        continue;
      }
    }
    return &def;
  }
  if (why) *why = Support::no(last_reason);
  return nullptr;
}

std::vector<int> KernelRegistry::host_inputs(const ir::Node& node) const {
  const KernelDef* def = find(node, nullptr);
  return def ? def->host_inputs : std::vector<int>{};
}

Support KernelRegistry::supports(const ir::Node& node) const {
  Support why;
  return find(node, &why) ? Support::yes() : why;
}

std::unique_ptr<Kernel> KernelRegistry::create(const ir::Node& node) const {
  Support why;
  const KernelDef* def = find(node, &why);
  SY_CHECK(def != nullptr, Unsupported, "{}: {}", node.describe(), why.reason);
  return def->create(KernelInit{node, *this});
}

std::vector<ops::OpKind> KernelRegistry::ops() const {
  std::vector<ops::OpKind> out;
  for (size_t i = 0; i < by_op_.size(); ++i)
    if (!by_op_[i].empty()) out.push_back(static_cast<ops::OpKind>(i));
  return out;
}

}  // namespace switchyard::runtime
