#include "plugins.h"

#include <dlfcn.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "ir/check.h"

namespace switchyard::plugins {

namespace {

// The folder libswitchyard.so was loaded from.
std::filesystem::path core_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&plugin_states), &info) && info.dli_fname)
    return std::filesystem::path(info.dli_fname).parent_path();
  return {};
}

PluginState load(const PluginSpec& spec) {
  const std::string name = spec.name, file = spec.library;
  const char* env = spec.environment;
  PluginState s;
  s.name = name;
  const char* override_path = std::getenv(env);
  if (override_path && std::string(override_path) == "off") {
    s.library = file;
    s.detail = fmt::format("disabled by {}=off", env);
    return s;
  }
  s.library = override_path && *override_path ? std::string(override_path)
                                              : (core_folder() / file).string();
  bool hardware = spec.device_files.empty() || (override_path && *override_path);
  for (const char* f : spec.device_files) hardware = hardware || std::filesystem::exists(f);
  if (!hardware) {
    s.detail = fmt::format("no driver for it on this machine ({} absent)",
                           fmt::join(spec.device_files, ", "));
    return s;
  }
  if (!std::filesystem::exists(s.library)) {
    s.detail = fmt::format("{} not found (this build has no {} backend)", s.library, name);
    return s;
  }
  void* handle = dlopen(s.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    s.detail = fmt::format("{} did not load: {}", s.library, dlerror());
    return s;
  }
  using Entry = const backends::BackendPlugin* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(handle, "switchyard_backend_plugin"));
  if (!entry) {
    s.detail = fmt::format("{} has no switchyard_backend_plugin symbol", s.library);
    return s;
  }
  const backends::BackendPlugin* plugin = entry();
  if (!plugin || plugin->abi_version != backends::kPluginAbiVersion || !plugin->create) {
    s.detail = fmt::format("{} was built for another plugin ABI ({} here, {} there)", s.library,
                           backends::kPluginAbiVersion, plugin ? plugin->abi_version : -1);
    return s;
  }
  // The handle stays open for the life of the process: its code backs live objects.
  s.loaded = true;
  s.plugin = plugin;
  s.detail = "loaded";
  return s;
}

}  // namespace

const std::vector<PluginSpec>& known_plugins() {
  static const std::vector<PluginSpec> plugins = {
      {"cuda",
       "libswitchyard_cuda.so",
       "SWITCHYARD_CUDA_BACKEND",
       {"/dev/nvidiactl", "/proc/driver/nvidia/version"}},
  };
  return plugins;
}

const std::vector<PluginState>& plugin_states() {
  static const std::vector<PluginState> states = [] {
    std::vector<PluginState> out;
    for (const PluginSpec& p : known_plugins()) out.push_back(load(p));
    return out;
  }();
  return states;
}

std::vector<std::shared_ptr<backends::Backend>> create_plugin_backends(
    std::vector<std::string>* statuses) {
  std::vector<std::shared_ptr<backends::Backend>> devices;
  for (const PluginState& s : plugin_states()) {
    if (!s.loaded) {
      if (statuses) statuses->push_back(s.detail);
      continue;
    }
    std::string status;
    for (auto& d : s.plugin->create(&status)) devices.push_back(std::move(d));
    if (statuses) statuses->push_back(status);
  }
  return devices;
}

}  // namespace switchyard::plugins
