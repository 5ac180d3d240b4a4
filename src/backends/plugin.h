// The interface between the core and a backend built as its own shared library (the CUDA
// backend): the library exports one C symbol returning a BackendPlugin; the core dlopens it
// when present (src/plugins.cc), so one binary runs on machines without the library's
// dependencies and `switchyard devices` can say why a backend did not load.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace switchyard::backends {

/// Bump when the struct or the seam headers change incompatibly.
constexpr int kPluginAbiVersion = 3;

struct BackendPlugin {
  int abi_version = kPluginAbiVersion;
  const char* name = "";  ///< "cuda"
  /// The plugin's devices. They hold no option of a compile (precision, memory limits: those
  /// come through Backend::compile). When there are none, returns an empty list and says why in
  /// `status` ("no CUDA device: ..."); otherwise `status` describes what was found.
  std::vector<std::shared_ptr<Backend>> (*create)(std::string* status) = nullptr;
};

}  // namespace switchyard::backends

/// The symbol a plugin library exports.
extern "C" const switchyard::backends::BackendPlugin* switchyard_backend_plugin();
