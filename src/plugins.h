// Loading backend plugins (src/backends/plugin.h) at run time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/plugin.h"

namespace switchyard::plugins {

/// A plugin's load state, for `switchyard devices`.
struct PluginState {
  std::string name;     ///< "cuda"
  std::string library;  ///< the file looked for or loaded
  bool loaded = false;  ///< the library loaded and its ABI matches
  std::string detail;   ///< why not, or what it found
  const backends::BackendPlugin* plugin = nullptr;
};

/// The CUDA backend plugin, loaded once per process (libswitchyard_cuda.so next to
/// libswitchyard.so, or $SWITCHYARD_CUDA_BACKEND; SWITCHYARD_CUDA_BACKEND=off disables it).
const PluginState& cuda_plugin();

/// The CUDA devices under `config` (none when the plugin did not load or found no GPU);
/// `status` receives the plugin's own status line.
std::vector<std::shared_ptr<backends::Backend>> create_cuda_backends(
    const backends::PluginConfig& config, std::string* status = nullptr);

}  // namespace switchyard::plugins
