#include "ops/op_traits.h"

#include <array>
#include <vector>

namespace switchyard::ops {

namespace {

using K = OpKind;

constexpr OpTraits kUnary{.unary_elementwise = true};
constexpr OpTraits kBroadcast{.broadcast_elementwise = true};
constexpr OpTraits kShapeOnly{.reads_only_shape = true};
constexpr OpTraits kPool{.spatial_pool = true};
constexpr OpTraits kOrderingAfterFirst{.first_ordering_input = 1};

struct Row {
  OpKind kind;
  OpTraits traits;
};

// One row per op with any trait, grouped by trait; ops without a row have none.
constexpr Row kRows[] = {
    {K::Abs, kUnary},
    {K::Acos, kUnary},
    {K::Acosh, kUnary},
    {K::Asin, kUnary},
    {K::Asinh, kUnary},
    {K::Atan, kUnary},
    {K::Atanh, kUnary},
    {K::Ceil, kUnary},
    {K::Cos, kUnary},
    {K::Cosh, kUnary},
    {K::Erf, kUnary},
    {K::Exp, kUnary},
    {K::Floor, kUnary},
    {K::IsInf, kUnary},
    {K::IsNaN, kUnary},
    {K::Log, kUnary},
    {K::Neg, kUnary},
    {K::Not, kUnary},
    {K::Reciprocal, kUnary},
    {K::Round, kUnary},
    {K::Sign, kUnary},
    {K::Sin, kUnary},
    {K::Sinh, kUnary},
    {K::Sqrt, kUnary},
    {K::Tan, kUnary},
    {K::Tanh, kUnary},
    {K::BitwiseNot, kUnary},
    {K::Celu, kUnary},
    {K::Elu, kUnary},
    {K::Gelu, kUnary},
    {K::HardSigmoid, kUnary},
    {K::HardSwish, kUnary},
    {K::LeakyRelu, kUnary},
    {K::Mish, kUnary},
    {K::Relu, kUnary},
    {K::Selu, kUnary},
    {K::Shrink, kUnary},
    {K::Sigmoid, kUnary},
    {K::Softplus, kUnary},
    {K::Softsign, kUnary},
    {K::ThresholdedRelu, kUnary},
    {K::Clip, kUnary},
    {K::Add, kBroadcast},
    {K::Sub, kBroadcast},
    {K::Mul, kBroadcast},
    {K::Div, kBroadcast},
    {K::Pow, kBroadcast},
    {K::Mod, kBroadcast},
    {K::PRelu, kBroadcast},
    {K::BitShift, kBroadcast},
    {K::BitwiseAnd, kBroadcast},
    {K::BitwiseOr, kBroadcast},
    {K::BitwiseXor, kBroadcast},
    {K::And, kBroadcast},
    {K::Or, kBroadcast},
    {K::Xor, kBroadcast},
    {K::Equal, kBroadcast},
    {K::Greater, kBroadcast},
    {K::GreaterOrEqual, kBroadcast},
    {K::Less, kBroadcast},
    {K::LessOrEqual, kBroadcast},
    {K::Max, kBroadcast},
    {K::Min, kBroadcast},
    {K::Mean, kBroadcast},
    {K::Sum, kBroadcast},
    {K::Where, kBroadcast},
    {K::Identity, kUnary},
    {K::Shape, kShapeOnly},
    {K::Size, kShapeOnly},
    {K::AveragePool, kPool},
    {K::MaxPool, kPool},
    {K::LpPool, kPool},
    {K::GlobalAveragePool, kPool},
    {K::GlobalMaxPool, kPool},
    {K::GlobalLpPool, kPool},
    {K::Depend, kOrderingAfterFirst},
};

const OpTraits kNone{};

}  // namespace

const OpTraits& traits(OpKind kind) {
  static const std::array<OpTraits, kNumOpKinds> table = [] {
    std::array<OpTraits, kNumOpKinds> t{};
    for (const Row& r : kRows) t[static_cast<size_t>(r.kind)] = r.traits;
    return t;
  }();
  const auto i = static_cast<size_t>(kind);
  return i < table.size() ? table[i] : kNone;
}

const OpTraits& traits(std::string_view op_type, std::string_view domain) {
  auto kind = find_op_kind(op_type, domain);
  return kind ? traits(*kind) : kNone;
}

const OpTraits& traits(const ir::Node& node) { return traits(node.op_type(), node.domain()); }

std::span<const OpKind> kinds_with_traits() {
  static const std::vector<OpKind> kinds = [] {
    std::vector<OpKind> k;
    for (const Row& r : kRows) k.push_back(r.kind);
    return k;
  }();
  return kinds;
}

}  // namespace switchyard::ops
