#include "switchyard/error.hpp"

namespace switchyard {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidModel:
      return "InvalidModel";
    case ErrorCode::Unsupported:
      return "Unsupported";
    case ErrorCode::PlacementFailed:
      return "PlacementFailed";
    case ErrorCode::InvalidArgument:
      return "InvalidArgument";
    case ErrorCode::OutOfMemory:
      return "OutOfMemory";
    case ErrorCode::DeviceLost:
      return "DeviceLost";
    case ErrorCode::Internal:
      return "Internal";
    case ErrorCode::Cancelled:
      return "Cancelled";
    case ErrorCode::DeviceMismatch:
      return "DeviceMismatch";
  }
  return "Unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string(error_code_name(code)) + ": " + message),
      code_(code),
      message_(message) {}

}  // namespace switchyard
