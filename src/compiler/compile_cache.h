// The compile cache (Options.cache_dir, --cache-dir, SWITCHYARD_CACHE_DIR): saved executables
// keyed by a compile's identity — the model's bytes and its external data, every option that
// changes the result, the devices found with their driver and library versions, and the
// Switchyard and format versions — so that a compile seen before loads instead of compiling.
// Entries are written atomically (temporary file, rename), the folder is bounded (least
// recently used out), and a corrupt entry is removed and rebuilt with one line on stderr.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/executable_file.h"

namespace switchyard::compiler {

/// What identifies a compile, besides the devices.
struct CompileIdentity {
  /// XXH3-64 of the model file's bytes (or of the graph's content for a graph built in code).
  uint64_t model_hash = 0;
  /// The model's folder and the external data files it names (relative to it): their bytes
  /// are hashed into the entry and checked on every hit.
  std::string model_folder;
  std::vector<std::string> external_files;
  /// JSON text of the options that change the result.
  std::string options;
};

/// XXH3-64 of a file's bytes (read in 1 MiB blocks); throws InvalidArgument naming it when it
/// cannot be read.
uint64_t file_hash(const std::string& path);

/// XXH3-64 of a graph's content (its ONNX export, weights included): the identity of a graph
/// built in code.
uint64_t graph_hash(const ir::Graph& graph);

class CompileCache {
 public:
  /// `dir` is created when missing; `max_bytes` bounds the folder (0: unbounded).
  CompileCache(std::string dir, uint64_t max_bytes);

  /// The entry's key: the model's hash, the options, the devices with their software, the
  /// Switchyard and format versions. (The external data files are checked by find: which
  /// files a model names is only known once it is imported.)
  std::string key(const CompileIdentity& identity,
                  const std::vector<std::shared_ptr<const backends::Backend>>& devices) const;
  /// The saved executable of `key`, or nullopt on a miss: no entry, or one whose recorded
  /// external data files (below `model_folder`) no longer hash as they did. A corrupt or
  /// unreadable entry is removed (one line on stderr) and counts as a miss.
  std::optional<SavedExecutable> find(const std::string& key,
                                      const std::string& model_folder) const;
  /// Writes `model` as the entry of `key` with the hashes of identity's external data files,
  /// then evicts the least recently used entries over the bound. A failure to write is one
  /// line on stderr, never an error: the compile stands.
  void store(const std::string& key, const CompiledModel& model, const std::string& options,
             const CompileIdentity& identity) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string path_of(const std::string& key) const;
  void evict(const std::string& keep) const;
  std::string dir_;
  uint64_t max_bytes_;
};

}  // namespace switchyard::compiler
