// The CLI's argument checks. A malformed command line — an option value out of range, a
// repeated or malformed NAME=VALUE — throws UsageError (main.cc prints it and exits with 2, as
// the argument parser's own errors do); `require` is for what fails while the command runs (a
// file that cannot be written: exit 1). Both carry the public Error, code InvalidArgument,
// naming the option and the value.
#pragma once

#include <fmt/format.h>

#include <utility>

#include "switchyard/error.hpp"

namespace switchyard::tools {

/// The command line itself is wrong (exit status 2).
class UsageError : public Error {
 public:
  explicit UsageError(std::string message)
      : Error(ErrorCode::InvalidArgument, std::move(message)) {}
};

template <typename... Args>
void require(bool ok, fmt::format_string<Args...> message, Args&&... args) {
  if (!ok)
    throw Error(ErrorCode::InvalidArgument, fmt::format(message, std::forward<Args>(args)...));
}

template <typename... Args>
void require_usage(bool ok, fmt::format_string<Args...> message, Args&&... args) {
  if (!ok) throw UsageError(fmt::format(message, std::forward<Args>(args)...));
}

}  // namespace switchyard::tools
