#include "ops/op_kind.h"

#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>

#include "ir/check.h"

namespace switchyard::ops {

namespace {
constexpr std::array<std::string_view, kNumOpKinds> kNames = {
#define SY_OP(name, family) #name,
#include "ops/op_kinds.def"
#undef SY_OP
};
constexpr std::array<std::string_view, kNumOpKinds> kFamilies = {
#define SY_OP(name, family) #family,
#include "ops/op_kinds.def"
#undef SY_OP
};
constexpr std::array<std::string_view, kNumOpKinds> kDomains = {
#define SY_OP(name, family) "",
#define SY_DOMAIN_OP(name, family, domain) domain,
#include "ops/op_kinds.def"
#undef SY_DOMAIN_OP
#undef SY_OP
};

std::string_view normalise_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string_view() : domain;
}
}  // namespace

std::string_view op_name(OpKind kind) { return kNames.at(static_cast<size_t>(kind)); }
std::string_view op_family(OpKind kind) { return kFamilies.at(static_cast<size_t>(kind)); }

std::string_view op_domain(OpKind kind) { return kDomains.at(static_cast<size_t>(kind)); }

std::optional<OpKind> find_op_kind(std::string_view op_type, std::string_view domain) {
  static const std::unordered_map<std::string_view, OpKind> by_name = [] {
    std::unordered_map<std::string_view, OpKind> m;
    for (int i = 0; i < kNumOpKinds; ++i) m.emplace(kNames[static_cast<size_t>(i)], OpKind(i));
    return m;
  }();
  auto it = by_name.find(op_type);
  if (it == by_name.end() || op_domain(it->second) != normalise_domain(domain)) return std::nullopt;
  return it->second;
}

bool is_known_domain(std::string_view domain) {
  domain = normalise_domain(domain);
  return std::find(kDomains.begin(), kDomains.end(), domain) != kDomains.end();
}

OpKind kind_of(const ir::Node& node) {
  if (node.kind_id() >= 0) return static_cast<OpKind>(node.kind_id());
  auto k = find_op_kind(node.op_type(), node.domain());
  SY_CHECK(k.has_value(), Unsupported, "{}: op type '{}' is not supported", node.describe(),
           node.op_type());
  return *k;
}

}  // namespace switchyard::ops
