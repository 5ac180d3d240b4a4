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

/// A backend plugin the core looks for: its name, its library (beside libswitchyard.so) and the
/// environment variable that overrides the library's path ("off" disables the plugin).
struct PluginSpec {
  const char* name;         ///< "cuda"
  const char* library;      ///< "libswitchyard_cuda.so"
  const char* environment;  ///< "SWITCHYARD_CUDA_BACKEND"
  /// Files of which one exists where the plugin's devices can exist (the NVIDIA driver's):
  /// when none does, the library is not loaded at all, so machines without the hardware do
  /// not pay for loading its libraries (the environment variable still forces a path).
  std::vector<const char*> device_files;
};

/// Every plugin the core knows of, in device order (today: the CUDA backend). Adding a backend
/// plugin is one line here and a library exporting switchyard_backend_plugin().
const std::vector<PluginSpec>& known_plugins();

/// Each known plugin's load state, in known_plugins() order, loaded once per process.
const std::vector<PluginState>& plugin_states();

/// The devices of every loaded plugin under `config`, in plugin order (none for a plugin that
/// did not load or found no device). `statuses`, when given, receives one status line per
/// plugin (its own line, or why it did not load).
std::vector<std::shared_ptr<backends::Backend>> create_plugin_backends(
    std::vector<std::string>* statuses = nullptr);

}  // namespace switchyard::plugins
