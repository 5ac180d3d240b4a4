// Checked macros: SY_THROW / SY_CHECK raise switchyard::Error with a formatted message;
// SY_ASSERT guards internal invariants and reports file and line.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <new>
#include <stdexcept>
#include <string_view>

#include "switchyard/error.hpp"

#define SY_THROW(code, ...) \
  throw ::switchyard::Error(::switchyard::ErrorCode::code, ::fmt::format(__VA_ARGS__))

#define SY_CHECK(cond, code, ...)             \
  do {                                        \
    if (!(cond)) SY_THROW(code, __VA_ARGS__); \
  } while (0)

#define SY_ASSERT(cond)                                                                    \
  do {                                                                                     \
    if (!(cond))                                                                           \
      throw ::switchyard::Error(                                                           \
          ::switchyard::ErrorCode::Internal,                                               \
          ::fmt::format("internal check failed: {} at {}:{}", #cond, __FILE__, __LINE__)); \
  } while (0)

namespace switchyard {
/// Runs `f`; a standard exception that is not a switchyard::Error becomes one, so nothing else
/// leaves the public API: bad_alloc → OutOfMemory, length_error → InvalidModel (a size taken
/// from the model is too large), anything else → Internal. `what` says what was being done.
template <typename F>
auto translate_std_exceptions(std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    SY_THROW(OutOfMemory, "{}: out of memory", what);
  } catch (const std::length_error& e) {
    SY_THROW(InvalidModel, "{}: a size is too large ({})", what, e.what());
  } catch (const std::exception& e) {
    SY_THROW(Internal, "{}: {}", what, e.what());
  }
}
}  // namespace switchyard
