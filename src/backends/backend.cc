#include "backends/backend.h"

#include <cstring>

#include "ir/check.h"
#include "ops/op_kind.h"

namespace switchyard::backends {

namespace {

// Elements of a static type, with unknown and symbolic dims counted as 1.
double numel_estimate(const ir::Value* v) {
  if (!v || !v->type().is_tensor() || !v->type().shape) return 1;
  double n = 1;
  for (const ir::Dim& d : *v->type().shape) n *= d.is_static() ? static_cast<double>(d.value) : 1;
  return n;
}

double dim_estimate(const ir::Value* v, size_t i) {
  if (!v || !v->type().is_tensor() || !v->type().shape || i >= v->type().shape->size()) return 1;
  const ir::Dim& d = (*v->type().shape)[i];
  return d.is_static() ? static_cast<double>(d.value) : 1;
}

double elem_bytes(const ir::Value* v) {
  if (!v || !v->type().is_tensor()) return 4;
  size_t s = ir::dtype_size(v->type().dtype);
  return s ? static_cast<double>(s) : 4;
}

class ProgramPartition : public runtime::CompiledPartition {
 public:
  ProgramPartition(const Partition& p, const runtime::KernelRegistry& registry)
      : program_(*p.graph, p.nodes, p.inputs, p.outputs, registry) {}
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs,
                             runtime::RunState& state) const override {
    return program_.run(std::move(inputs), state);
  }

 private:
  runtime::GraphProgram program_;
};

}  // namespace

CostEstimate estimate_node_work(const ir::Node& node) {
  CostEstimate e;
  for (const ir::Value* v : node.inputs()) e.bytes += numel_estimate(v) * elem_bytes(v);
  for (const ir::Value* v : node.outputs()) e.bytes += numel_estimate(v) * elem_bytes(v);
  double out = node.num_outputs() ? numel_estimate(node.output(0)) : 0;
  auto kind = ops::find_op_kind(node.op_type());
  using ops::OpKind;
  if (kind == OpKind::Conv || kind == OpKind::ConvTranspose || kind == OpKind::ConvInteger ||
      kind == OpKind::QLinearConv) {
    // 2 x output elements x (weight elements / output channels).
    const ir::Value* w = node.input(kind == OpKind::QLinearConv ? 3 : 1);
    double per_out = numel_estimate(w) / std::max(1.0, dim_estimate(w, 0));
    e.flops = 2 * out * per_out;
  } else if (kind == OpKind::MatMul || kind == OpKind::Gemm || kind == OpKind::MatMulInteger ||
             kind == OpKind::QLinearMatMul) {
    const ir::Value* a = node.input(0);
    double k = 1;
    if (a && a->type().shape && !a->type().shape->empty()) {
      bool trans_a = kind == OpKind::Gemm && node.attr_int("transA", 0) != 0;
      k = dim_estimate(a, trans_a ? 0 : a->type().shape->size() - 1);
    }
    e.flops = 2 * out * k;
  } else {
    e.flops = out * 2;
  }
  return e;
}

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::Fp32;
  if (text == "tf32") return Precision::Tf32;
  if (text == "fp16") return Precision::Fp16;
  if (text == "bf16") return Precision::Bf16;
  SY_THROW(InvalidArgument, "--precision '{}': expected fp32, tf32, fp16 or bf16", text);
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32:
      return "fp32";
    case Precision::Tf32:
      return "tf32";
    case Precision::Fp16:
      return "fp16";
    case Precision::Bf16:
      return "bf16";
  }
  return "fp32";
}

CostEstimate estimate_at(const ir::Node& node, double gflops, double gbytes_per_s) {
  CostEstimate e = estimate_node_work(node);
  e.microseconds = e.flops / (gflops * 1e3) + e.bytes / (gbytes_per_s * 1e3);
  return e;
}

CostEstimate Backend::estimate(const ir::Node& node, const CompileOptions&) const {
  return estimate_at(node, device().gflops, device().gbytes_per_s);
}

std::unique_ptr<runtime::CompiledPartition> compile_program_partition(
    const Partition& partition, const runtime::KernelRegistry& registry) {
  return std::make_unique<ProgramPartition>(partition, registry);
}

}  // namespace switchyard::backends
