// absorb_product_casts (precision.h): under --precision fp16/bf16 a product whose result leaves
// the narrow region (a float32 partition output such as GPT's logits, a residual Add kept
// float32) is followed by a Cast to float32 that reads the 16-bit product and writes float32: a
// full pass over the output. cuBLASLt writes a float32 D from 16-bit A and B directly (compute
// and scale type float32, as for a 16-bit D), so the product takes the Cast's value and the Cast
// goes.
#include <memory>
#include <typeinfo>

#include "backends/cuda/precision.h"
#include "backends/fusion/pattern.h"
#include "backends/fusion/payload.h"
#include "ir/check.h"

namespace switchyard::cuda {

namespace {

namespace pattern = backends::pattern;

bool is_narrow_float(ir::DType d) { return d == ir::DType::Float16 || d == ir::DType::BFloat16; }

bool is_tensor_of(const ir::Value* v, ir::DType dtype) {
  return v && v->type().is_tensor() && v->type().dtype == dtype;
}

// A plain widening Cast of a 16-bit value to float32: one input, one output, no payload (a
// SaturatingCast narrows; any other payload changes what the node computes).
bool is_widening_cast(const ir::Node& n) {
  if (!pattern::is_onnx_op(n, "Cast") || n.num_inputs() != 1 || n.num_outputs() != 1 ||
      !n.input(0) || !n.annotations().empty())
    return false;
  if (n.attr_int("to", 0) != static_cast<int64_t>(ir::DType::Float32)) return false;
  return n.input(0)->type().is_tensor() && is_narrow_float(n.input(0)->type().dtype) &&
         is_tensor_of(n.output(0), ir::DType::Float32);
}

// Whether `p` is a product the matmul kernels write float32 from `dtype` operands: a MatMul or
// Gemm whose payloads are only the ones those kernels read (a fused epilogue, folded transposes;
// a fused attention is another kernel), with A and B (and a bias or C) of `dtype`.
bool is_narrow_product(const ir::Node& p, ir::DType dtype) {
  if (!pattern::is_onnx_op(p, "MatMul") && !pattern::is_onnx_op(p, "Gemm")) return false;
  if (p.num_outputs() != 1 || p.num_inputs() < 2 || p.num_inputs() > 3) return false;
  for (const auto& a : p.annotations()) {
    const auto& held = *a;
    if (typeid(held) != typeid(backends::fusion::Epilogue) &&
        typeid(held) != typeid(backends::fusion::OperandPermutes))
      return false;
  }
  for (size_t i = 0; i < p.num_inputs(); ++i) {
    const ir::Value* v = p.input(i);
    if (i == 2 && !v) continue;  // no bias / C
    if (!is_tensor_of(v, dtype)) return false;
  }
  return true;
}

// `t` (float16 or bfloat16) widened to float32: exact, so the product adds what it added before.
ir::Tensor widen(const ir::Tensor& t) {
  ir::Tensor out(ir::DType::Float32, t.shape());
  float* dst = out.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i)
    dst[i] = t.dtype() == ir::DType::Float16 ? static_cast<float>(t.data<Float16>()[i])
                                             : static_cast<float>(t.data<BFloat16>()[i]);
  return out;
}

}  // namespace

std::string WideProduct::describe() const { return "float32 result"; }

size_t absorb_product_casts(ir::Graph& graph) {
  std::vector<ir::Node*> casts;
  for (const auto& n : graph.nodes())
    if (is_widening_cast(*n)) casts.push_back(n.get());
  size_t absorbed = 0;
  for (ir::Node* cast : casts) {
    ir::Value* product = cast->input(0);
    ir::Node* p = product->producer();
    const ir::DType dtype = product->type().dtype;
    if (!p || p->owner() != &graph || p->annotation<backends::fusion::Attention>() ||
        p->annotation<WideProduct>() || !is_narrow_product(*p, dtype) ||
        pattern::sole_reader(graph, product) != cast)
      continue;
    ir::Value* wide = cast->output(0);
    // A Cast read by nothing is dead code, not a product's output: leave it to dead-node removal
    // (removing it here would drop its value).
    if (wide->uses().empty() && !graph.is_output(wide)) continue;
    // The product's value goes with the Cast; the Cast's value, readers and graph-output place
    // stay, now written by the product.
    pattern::remove_node(graph, cast);
    graph.adopt_output(p, 0, wide);
    if (ir::Value* bias = p->input(2); bias && bias->is_constant()) {
      ir::Value* widened = graph.add_constant(graph.unique_value_name(bias->name() + "_fp32"),
                                              widen(bias->constant()));
      p->set_input(2, widened);
    }
    p->annotate(std::make_shared<WideProduct>());
    ++absorbed;
  }
  return absorbed;
}

}  // namespace switchyard::cuda
