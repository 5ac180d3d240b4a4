#include "compiler/compile_cache.h"

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/check.h"
#include "onnx/export.h"

namespace switchyard::compiler {

namespace fs = std::filesystem;

namespace {

constexpr const char* kSuffix = ".syx";

std::string hex(uint64_t v) { return fmt::format("{:016x}", v); }

}  // namespace

uint64_t file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  SY_CHECK(in.good(), InvalidArgument, "cannot read '{}'", path);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    XXH3_64bits_update(state, block.data(), static_cast<size_t>(in.gcount()));
  }
  uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

uint64_t graph_hash(const ir::Graph& graph) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  onnx_import::ExportOptions eo;
  uint64_t count = 0;
  eo.external = [&](const ir::Tensor& t) {
    XXH3_64bits_update(state, t.raw(), t.nbytes());
    return std::make_pair(std::string("w"), count++);
  };
  std::string proto = onnx_import::export_model(graph, eo);
  XXH3_64bits_update(state, proto.data(), proto.size());
  uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return h;
}

CompileCache::CompileCache(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  SY_CHECK(!ec && fs::is_directory(dir_), InvalidArgument,
           "--cache-dir {}: not a folder that can be created or written ({})", dir_,
           ec ? ec.message() : "exists and is not a folder");
}

std::string CompileCache::key(
    const CompileIdentity& identity,
    const std::vector<std::shared_ptr<const backends::Backend>>& devices) const {
  nlohmann::json devs = nlohmann::json::array();
  for (const auto& d : devices) {
    const runtime::DeviceInfo& i = d->device();
    devs.push_back(
        {i.id, i.kind, i.name, i.uuid, i.compute_capability, i.memory_bytes, i.software});
  }
  nlohmann::json all = {{"switchyard", SWITCHYARD_VERSION},
                        {"format", kExecutableFormatVersion},
                        {"model", hex(identity.model_hash)},
                        {"options", nlohmann::json::parse(identity.options)},
                        {"devices", devs}};
  std::string text = all.dump();
  XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return hex(h.high64) + hex(h.low64);
}

std::string CompileCache::path_of(const std::string& key) const {
  return (fs::path(dir_) / (key + kSuffix)).string();
}

std::optional<SavedExecutable> CompileCache::find(const std::string& key,
                                                  const std::string& model_folder) const {
  const std::string path = path_of(key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    SavedExecutable saved = read_executable(path);
    nlohmann::json record = nlohmann::json::parse(saved.cache);
    SY_CHECK(record.value("key", "") == key && record.contains("external") &&
                 record["external"].is_array(),
             InvalidModel, "the entry's record does not match its name");
    for (const auto& dep : record["external"]) {
      SY_CHECK(dep.is_array() && dep.size() == 2 && dep[0].is_string() && dep[1].is_string(),
               InvalidModel, "a malformed external data record");
      fs::path file = fs::path(model_folder) / dep[0].get<std::string>();
      // A changed (or vanished) external data file: a miss, and the store replaces the entry.
      if (!fs::is_regular_file(file, ec) ||
          hex(file_hash(file.string())) != dep[1].get<std::string>())
        return std::nullopt;
    }
    // Least recently used is by modification time: a hit makes the entry the newest.
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
    return saved;
  } catch (const Error& e) {
    fs::remove(path, ec);
    std::fprintf(stderr,
                 "switchyard: compile cache: removed the corrupt entry %s (%s); compiling\n",
                 path.c_str(), e.message().c_str());
    return std::nullopt;
  }
}

void CompileCache::store(const std::string& key, const CompiledModel& model,
                         const std::string& options, const CompileIdentity& identity) const {
  const std::string path = path_of(key);
  try {
    nlohmann::json external = nlohmann::json::array();
    for (const std::string& f : identity.external_files)
      external.push_back({f, hex(file_hash((fs::path(identity.model_folder) / f).string()))});
    write_executable(path, model, options,
                     nlohmann::json{{"key", key}, {"external", external}}.dump());
  } catch (const Error& e) {
    std::fprintf(stderr, "switchyard: compile cache: could not write %s: %s\n", path.c_str(),
                 e.message().c_str());
    return;
  }
  evict(path);
}

void CompileCache::evict(const std::string& keep) const {
  if (max_bytes_ == 0) return;
  struct Entry {
    fs::path path;
    uint64_t bytes;
    fs::file_time_type used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != kSuffix) continue;
    uint64_t bytes = e.file_size(ec);
    if (ec) continue;
    entries.push_back({e.path(), bytes, e.last_write_time(ec)});
    total += bytes;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const Entry& e : entries) {
    if (total <= max_bytes_) break;
    if (e.path == fs::path(keep)) continue;  // the entry just written stays
    // Another process may have removed it already: that is fine.
    if (fs::remove(e.path, ec)) total -= e.bytes;
  }
}

}  // namespace switchyard::compiler
