// Checked macros: SY_THROW / SY_CHECK raise switchyard::Error with a formatted message;
// SY_ASSERT guards internal invariants and reports file and line.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "switchyard/error.hpp"

#define SY_THROW(code, ...) \
  throw ::switchyard::Error(::switchyard::ErrorCode::code, ::fmt::format(__VA_ARGS__))

#define SY_CHECK(cond, code, ...) \
  do {                            \
    if (!(cond)) SY_THROW(code, __VA_ARGS__); \
  } while (0)

#define SY_ASSERT(cond)                                                                 \
  do {                                                                                  \
    if (!(cond))                                                                        \
      throw ::switchyard::Error(::switchyard::ErrorCode::Internal,                      \
                                ::fmt::format("internal check failed: {} at {}:{}", #cond, \
                                              __FILE__, __LINE__));                     \
  } while (0)
