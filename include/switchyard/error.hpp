// switchyard/error.hpp — the one exception type that leaves the library.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "switchyard/export.hpp"

namespace switchyard {

/// What kind of failure an Error reports. The C API and the CLI map these to status values.
enum class ErrorCode {
  InvalidModel,     ///< the model file or graph is malformed
  Unsupported,      ///< a valid construct that this build cannot run (unknown op, dtype)
  PlacementFailed,  ///< placement could not satisfy the policy (strict mode, bad pin)
  InvalidArgument,  ///< a caller-supplied value is wrong (input dtype/shape, option)
  OutOfMemory,      ///< an allocation failed
  DeviceLost,       ///< a device reported a sticky fault
  Internal,         ///< an invariant of ours was broken: a bug
  Cancelled,        ///< a run was cancelled or passed its deadline (RunOptions)
  DeviceMismatch,   ///< a saved executable's devices are not all present (Options.allow_relower)
};

/// Returns the code's name, e.g. "InvalidModel".
SWITCHYARD_API std::string_view error_code_name(ErrorCode code);

/// The exception every public function throws. `what()` is "<Code>: <message>".
class SWITCHYARD_API Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  /// The failure kind.
  ErrorCode code() const { return code_; }
  /// The message without the code prefix; names the node, tensor or file involved.
  const std::string& message() const { return message_; }

 private:
  ErrorCode code_;
  std::string message_;
};

}  // namespace switchyard
