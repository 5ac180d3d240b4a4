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

/// How a plugin's devices are set up (device state; what a compile asks of them comes through
/// Backend::compile's CompileOptions instead).
struct PluginConfig {
  /// Device id ("cuda:0", or "cuda:uuid=PREFIX") → byte limit of its allocator.
  std::map<std::string, uint64_t> memory_limits;
};

/// Bump when the struct or the seam headers change incompatibly.
constexpr int kPluginAbiVersion = 2;

struct BackendPlugin {
  int abi_version = kPluginAbiVersion;
  const char* name = "";  ///< "cuda"
  /// The plugin's devices under `config`. When there are none, returns an empty list and says
  /// why in `status` ("no CUDA device: ..."); otherwise `status` describes what was found.
  /// Throws InvalidArgument for a bad config value.
  std::vector<std::shared_ptr<Backend>> (*create)(const PluginConfig& config,
                                                  std::string* status) = nullptr;
};

}  // namespace switchyard::backends

/// The symbol a plugin library exports.
extern "C" const switchyard::backends::BackendPlugin* switchyard_backend_plugin();
