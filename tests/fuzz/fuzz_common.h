// What the fuzz targets share: the one exception policy (a switchyard::Error is how the library
// refuses bad input; anything else escaping is a finding and aborts, so libFuzzer records it) and
// a per-process scratch file for the readers that take a path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <unistd.h>

#include "switchyard/error.hpp"

namespace switchyard::fuzz {

/// Whether an Error with ErrorCode::Internal counts as accepted. By default it does not: the code
/// means "an invariant of ours was broken" (an SY_ASSERT, or a standard exception the importer
/// wrapped), which bad input must never reach. SY_FUZZ_ALLOW_INTERNAL=1 accepts it, to look past
/// a known one.
inline bool internal_errors_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("SY_FUZZ_ALLOW_INTERNAL");
    return v != nullptr && std::string(v) == "1";
  }();
  return allowed;
}

/// Runs `body`; returns true when it finished, false when it threw an accepted switchyard::Error.
/// Any other exception, or an Internal error, prints what escaped and aborts. The message starts
/// with "ERROR:" because libFuzzer's fork mode keeps only such lines of a child's log.
template <typename F>
bool run_expecting_only_errors(const char* target, F&& body) {
  try {
    body();
    return true;
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Internal && !internal_errors_allowed()) {
      std::fprintf(stderr, "ERROR: %s: an Internal error escaped (a bug, not a refusal): %s\n",
                   target, e.what());
      std::abort();
    }
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: %s: a non-switchyard exception escaped: %s\n", target, e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "ERROR: %s: an exception of unknown type escaped\n", target);
    std::abort();
  }
}

/// Writes data to this process's scratch file (under $TMPDIR, else /tmp) with the given suffix
/// and returns its path; the same path every call, so the file system stays clean.
inline std::string write_scratch_file(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string dir = [] {
    const char* t = std::getenv("TMPDIR");
    return std::string(t != nullptr && *t != '\0' ? t : "/tmp");
  }();
  std::string path = dir + "/switchyard-fuzz-" + std::to_string(::getpid()) + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::abort();
  }
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  return path;
}

}  // namespace switchyard::fuzz
