// The error of the shared op rules (ops/*_geometry): InvalidArgument naming the node, as a
// kernel's ctx.fail() words it, so every device reports bad inputs alike.
#pragma once

#include <fmt/format.h>

#include <utility>

#include "ir/check.h"
#include "ir/graph.h"

namespace switchyard::ops {

template <typename... Args>
[[noreturn]] void fail_node(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  SY_THROW(InvalidArgument, "{}: {}", node.describe(), fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace switchyard::ops
