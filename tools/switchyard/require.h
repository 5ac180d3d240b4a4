// The CLI's argument checks: a failed one throws the public Error with code InvalidArgument
// (main.cc prints it and exits with status 1), naming the option and the value.
#pragma once

#include <fmt/format.h>

#include <utility>

#include "switchyard/error.hpp"

namespace switchyard::tools {

template <typename... Args>
void require(bool ok, fmt::format_string<Args...> message, Args&&... args) {
  if (!ok)
    throw Error(ErrorCode::InvalidArgument, fmt::format(message, std::forward<Args>(args)...));
}

}  // namespace switchyard::tools
