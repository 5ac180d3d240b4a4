// Saved executables (.syx, docs/executable-format.md): a compiled model written to one file —
// the optimized graph as an ONNX ModelProto, its placement (record and report), the options and
// devices it was compiled for, and the weights, aligned so that loading maps them from the file
// instead of copying. A file is untrusted input: every offset, length and count is checked
// before use and a checksum covers it all.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/compiler.h"

namespace switchyard::compiler {

/// The format version this build writes and reads.
inline constexpr uint32_t kExecutableFormatVersion = 1;

/// What a saved executable holds, read and checked.
struct SavedExecutable {
  std::string path;
  uint32_t format_version = 0;
  std::string switchyard_version;    ///< of the build that wrote it
  std::string options;               ///< JSON text of the public Options it was compiled with
  std::string cache;                 ///< JSON text of the compile cache's record ("{}" if none)
  std::unique_ptr<ir::Graph> graph;  ///< the optimized graph; its big constants map the file
  PlacementRecord placement;
  placement::PlacementReport report;
};

/// Whether `path` starts with the saved-executable magic (false for anything else, unreadable
/// files included: the caller's loader then says what is wrong).
bool is_executable_file(const std::string& path);

/// Writes `model` to `path` (through a temporary file in the same folder and a rename, so a
/// reader never sees half a file, and two writers of one path leave one whole file). `options` is
/// the JSON text the top records of the public Options. Throws InvalidArgument naming the file when
/// it cannot be written. `cache` (JSON object text) is what the compile cache keeps with an entry
/// ("{}" otherwise).
void write_executable(const std::string& path, const CompiledModel& model,
                      const std::string& options, const std::string& cache = "{}");

/// Reads and checks `path`: InvalidModel naming the file and what is wrong for a truncated,
/// corrupted, random or empty file, Unsupported for another format version, InvalidArgument
/// when it cannot be read.
SavedExecutable read_executable(const std::string& path);

/// The saved devices (by index of the placement record) that `devices` lack: none means the
/// file can be compiled as placed. A device matches by id and kind, and GPUs by name and UUID.
std::vector<std::string> missing_devices(
    const SavedExecutable& saved,
    const std::vector<std::shared_ptr<const backends::Backend>>& devices);

/// Compiles `saved` as it was placed on `devices` (no passes, no placement): each partition
/// on the present device with the saved one's id. Throws DeviceMismatch naming the missing
/// devices and the present ones when missing_devices() is not empty.
std::shared_ptr<const CompiledModel> instantiate(
    SavedExecutable saved, std::vector<std::shared_ptr<const backends::Backend>> devices,
    const CompileOptions& options);

}  // namespace switchyard::compiler
