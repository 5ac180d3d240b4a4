// The fusion payloads' names and descriptions (payload.h). Their virtual functions are defined
// here, once, so each payload's type information lives in the core library that the backend
// plugins share.
#include "backends/fusion/payload.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/check.h"
#include "ir/graph.h"

namespace switchyard::backends::fusion {

namespace {

std::string perm(const char* name, const std::vector<int64_t>& p) {
  return fmt::format("{}=[{}]", name, fmt::join(p, ", "));
}

}  // namespace

const char* activation_name(Activation activation) {
  switch (activation) {
    case Activation::None:
      return "None";
    case Activation::Relu:
      return "Relu";
    case Activation::Gelu:
      return "Gelu";
    case Activation::GeluTanh:
      return "GeluTanh";
    case Activation::Sigmoid:
      return "Sigmoid";
    case Activation::Tanh:
      return "Tanh";
    case Activation::Clip:
      return "Clip";
    case Activation::HardSwish:
      return "HardSwish";
    case Activation::Swish:
      return "Swish";
  }
  return "?";
}

std::string Epilogue::describe() const {
  std::string out = fmt::format("activation={}", activation_name(activation));
  if (activation == Activation::Clip) out += fmt::format(" clip=[{}, {}]", clip_min, clip_max);
  if (alpha != 1.0f) out += fmt::format(" alpha={}", alpha);
  return out;
}

std::string OperandPermutes::describe() const {
  std::string out;
  if (!a.empty()) out = perm("perm_a", a);
  if (!b.empty()) out += (out.empty() ? "" : " ") + perm("perm_b", b);
  return out.empty() ? "perm_a=[] perm_b=[]" : out;
}

const char* mask_name(Attention::Mask mask) {
  switch (mask) {
    case Attention::Mask::None:
      return "none";
    case Attention::Mask::Add:
      return "add";
    case Attention::Mask::WhereTrue:
      return "where_true";
    case Attention::Mask::WhereFalse:
      return "where_false";
  }
  return "?";
}

std::string Attention::describe() const {
  std::string out = fmt::format("attention {} {} {}", perm("perm_q", perm_q),
                                perm("perm_k", perm_k), perm("perm_v", perm_v));
  if (!perm_out.empty()) out += " " + perm("perm_out", perm_out);
  out += fmt::format(" alpha={} mask={}", alpha, mask_name(mask));
  if (mask == Mask::WhereTrue || mask == Mask::WhereFalse)
    out += fmt::format(" fill={}", mask_fill);
  if (!views.empty()) {
    out += " views";
    const char* names[] = {"q", "k", "v"};
    for (size_t i = 0; i < views.size() && i < 3; ++i)
      if (views[i].width > 0)
        out += fmt::format(" {}=[{}, {})", names[i], views[i].offset,
                           views[i].offset + views[i].width);
  }
  if (!mask_slices.empty()) out += fmt::format(" mask_slices={}", mask_slices.size());
  return out;
}

int residual_sum_output(const ir::Node& node) {
  const ResidualSum* sum = node.annotation<ResidualSum>();
  if (!sum) return -1;
  SY_CHECK(sum->output > 2 && sum->output < node.num_outputs() && node.num_inputs() > 3, Internal,
           "{}: a residual sum is an output past InvStdDev of a node with input 3",
           node.describe());
  return static_cast<int>(sum->output);
}

std::string ChannelsLast::describe() const { return "layout=NHWC"; }

std::string ConcatAffine::describe() const {
  return fmt::format("affine channels={}{}", scale.size(), relu ? " relu" : "");
}

std::string ResidualSum::describe() const {
  return fmt::format("residual sum in output {}", output);
}

}  // namespace switchyard::backends::fusion
