// switchyard/switchyard.hpp — the public C++ API: load a model, compile it once, run it at any
// input shape its symbolic dims allow.
//
//   auto model = switchyard::Model::load("resnet50.onnx");
//   auto exe = model.compile({.num_threads = 2});
//   auto outputs = exe.run({{"input", image}});
#pragma once

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "switchyard/dtype.hpp"
#include "switchyard/error.hpp"
#include "switchyard/export.hpp"
#include "switchyard/profile.hpp"
#include "switchyard/tensor.hpp"
#include "switchyard/version.hpp"

namespace switchyard {

namespace ir {
class Graph;
}
namespace compiler {
class CompiledModel;
}

/// How a model is compiled and where it may run. The placement fields take the CLI's
/// spellings (docs/placement.md); unknown or contradictory values make compile() throw
/// InvalidArgument naming the option.
struct Options {
  /// Threads per run (0 = every core).
  int num_threads = 0;
  /// Input-shape signatures whose prepared state is cached (least recently used evicted).
  size_t shape_cache_capacity = 8;
  /// Runs of the executable in flight at once, 1 to 1024 (another value makes compile() throw
  /// InvalidArgument naming it): run_async, and run() from several threads. A run beyond it
  /// waits in run_async (or run) until one ends. Runs in flight overlap on the devices: the
  /// stages of a pipeline split work on successive runs at once (docs/api.md, "Asynchronous
  /// runs"). Belongs to the process: not saved, and given again to Executable::load.
  int max_in_flight = 8;
  /// Run the graph optimizations (constant folding, dead-node removal).
  bool optimize = true;
  /// "cpu_only", "cpu_and_gpu" or "all".
  std::string compute_units = "all";
  /// Preferred device ("cpu", "sim:0", "cuda:1", "cuda:most-memory", ...) or a comma list for
  /// a split; empty: the first GPU by memory, else the cpu.
  std::string device;
  /// "PATTERN=DEVICE" pins (node-name glob or op:Type); the first matching pin wins.
  std::vector<std::string> pins;
  /// "allow" (unsupported nodes fall back to the cpu, and the report says so) or "strict".
  std::string fallback = "allow";
  /// Accelerator islands smaller than this move to the cpu.
  int min_partition_nodes = 1;
  /// "DEVICE=BYTES" (K/M/G suffixes) limits. On a GPU: the device memory its allocator may
  /// hold (and what --split pipeline stages must fit). On "cpu": the memory one run may hold
  /// in intermediate values and outputs; a run that would pass it throws OutOfMemory before
  /// allocating, and later runs are unaffected.
  std::vector<std::string> memory_limits;
  /// "none" or "pipeline".
  std::string split = "none";
  /// Simulated accelerators that run every op (sim:0 .. sim:N-1).
  int sim_devices = 0;
  /// A JSON file declaring simulated accelerators with op subsets and costs.
  std::string sim_config;
  /// Arithmetic precision on GPUs: "fp32" (default; TF32 off), "tf32" (float32 storage, TF32
  /// matrix math), "fp16" or "bf16" (GPU partitions store float32 values in the narrower type;
  /// reductions, Softmax and LayerNorm accumulate in float32).
  std::string precision = "fp32";
  /// Capture static-shape GPU partitions as CUDA graphs and replay them.
  bool cuda_graphs = true;
  /// Fuse inside each partition after placement (Conv / MatMul / Gemm with their bias,
  /// residual and activation; GELU patterns; CUDA elementwise chains). Off: every node runs
  /// its own kernel (for comparing numerics or measuring what fusion buys).
  bool fusion = true;
  /// Executable::load: when a device the file was compiled for is missing, place the saved
  /// graph again on the devices present (the report says so) instead of failing with
  /// DeviceMismatch.
  bool allow_relower = false;
  /// The compile cache's folder: a compile whose identity (the model's bytes and external
  /// data, every option that changes the result, the devices with their driver and library
  /// versions, the Switchyard version) matches an entry loads it instead of compiling, and a
  /// miss stores the result. Empty: $SWITCHYARD_CACHE_DIR when set, else no cache; "off": no
  /// cache whatever the environment says.
  std::string cache_dir;
  /// Bound of the cache folder in bytes (least recently used entries are removed past it;
  /// 0 = unbounded).
  uint64_t cache_max_bytes = uint64_t{4} << 30;
};

/// Whether `path` holds a saved executable (Executable::save), judged by its first bytes.
SWITCHYARD_API bool is_executable_file(const std::string& path);

/// How an executable came to be, for `run --json` and `bench`.
struct CompileStats {
  double load_ms = 0;     ///< importing the model file, or loading a saved executable / cache entry
  double compile_ms = 0;  ///< compiling (0 when it was loaded)
  std::string cache = "off";  ///< "hit", "miss" or "off" (no compile cache was used)
};

class Executable;
/// Model::load(path).compile(options), except that with a compile cache (Options.cache_dir)
/// the cache is looked up before the model is imported, so a hit costs a hash of the file and
/// a load. A saved executable (.syx) is loaded (Executable::load).
SWITCHYARD_API Executable compile_file(const std::string& path, const Options& options = {});

/// A backend and whether it can be used: the built-in ones (cpu, sim) and the plugins (cuda).
struct BackendStatus {
  std::string name;     ///< "cpu", "sim", "cuda"
  std::string library;  ///< the plugin's shared library looked for; empty for built-in ones
  bool loaded = false;
  /// Why it did not load, or what it found ("1 device: NVIDIA H200").
  std::string detail;
};

/// A device as discovery found it.
struct DeviceDescription {
  std::string id;    ///< "cpu", "cuda:0", "sim:1"
  std::string kind;  ///< "cpu", "cuda", "sim"
  std::string name;  ///< "NVIDIA H200"
  std::string uuid;
  uint64_t memory_bytes = 0;  ///< 0 for the host
  int sm_count = 0;
  std::string compute_capability;
  std::vector<std::string> peers;  ///< GPUs it can access directly
  /// The driver and libraries behind it ("oneDNN 2.6.3"; a GPU's driver, CUDA runtime, cuDNN
  /// and cuBLASLt versions), as the compile cache's identity records them.
  std::string software;
};

/// The devices `options` makes available, in placement order, with what discovery found.
SWITCHYARD_API std::vector<DeviceDescription> describe_devices(const Options& options = {});

/// Every backend of this process and its state: cpu, sim, then the plugins.
SWITCHYARD_API std::vector<BackendStatus> backend_status();

/// A graph input or output as declared: name, element type and dims ("batch", "3", "?").
struct ValueInfo {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<std::string> dims;
  /// False when the model declares no shape (then `dims` is empty; a rank-0 value has an
  /// empty `dims` and has_shape true).
  bool has_shape = true;
  /// "tensor", "sequence" or "optional".
  std::string kind = "tensor";
};

class Executable;

/// Stops runs from another thread: copies share one flag; a run given the token throws
/// Error(Cancelled) soon after cancel() (before its next node or loop iteration).
class SWITCHYARD_API CancellationToken {
 public:
  CancellationToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  /// Asks every run holding this token (now or later) to stop.
  void cancel() const { flag_->store(true); }
  /// Whether cancel() was called since the last reset().
  bool cancelled() const { return flag_->load(); }
  /// Clears the flag so the token can serve further runs.
  void reset() const { flag_->store(false); }
  /// The shared flag (for the runtime).
  const std::atomic<bool>* flag() const { return flag_.get(); }

 private:
  std::shared_ptr<std::atomic<bool>> flag_;
};

/// Per-run controls for untrusted or latency-bound workloads.
struct RunOptions {
  /// Wall-clock budget of the run in milliseconds (0 = none), counted from the run() or
  /// run_async() call. Past it the run throws Error(Cancelled); a run stops within one kernel's
  /// time, also inside Loop and Scan.
  int64_t deadline_ms = 0;
  /// Cancels the run when cancel() is called on it (or a copy) from any thread.
  CancellationToken cancel;
  /// Record every node, copy and the whole run with its time (RunResult::profile; tooling
  /// writes it as a Chrome trace).
  bool profile = false;
  /// The device whose memory the outputs are left in: "" or "cpu" for host memory, else one of
  /// Executable::devices() ("sim:0", "cuda:0"). An output made there stays without a copy;
  /// others are copied there. Read them with Executable::device_of; host code must not read a
  /// GPU's memory.
  std::string outputs_on;
  /// A CUDA stream (a cudaStream_t) of the device the run's GPU partitions run on: their work
  /// starts after what is already queued there (a caller's kernels writing an input), and the
  /// run returns once its outputs are complete, so work queued there afterwards may read them.
  /// nullptr: the run orders itself against nothing of the caller's. The legacy default stream
  /// (a handle of 0 elsewhere, torch's default stream) is named by cudaStreamLegacy,
  /// `reinterpret_cast<void*>(1)`.
  void* cuda_stream = nullptr;
  /// Buffers of the caller's, by output name, that those outputs are written into (one copy,
  /// counted in RunStats) and returned as: host memory, or a device's memory made with
  /// Executable::wrap_device_memory. Each must have the output's dtype and, once the run knows
  /// it, its shape; otherwise the run throws InvalidArgument naming the output.
  std::map<std::string, Tensor> output_buffers;
};

/// What Executable::run_values returns.
struct RunResult {
  std::vector<Datum> outputs;  ///< in graph-output order, in RunOptions.outputs_on's memory
  RunStats stats;
  std::vector<ProfileEvent> profile;  ///< empty unless RunOptions.profile
};

/// Ids of the devices `options` makes available ("cpu", "sim:0", ...), in placement order.
SWITCHYARD_API std::vector<std::string> available_devices(const Options& options = {});

/// A loaded model: the graph after import, before compilation.
class SWITCHYARD_API Model {
 public:
  /// Loads an ONNX file. Throws Error (InvalidModel, Unsupported, InvalidArgument for an
  /// unreadable file) naming the file and what is wrong.
  static Model load(const std::string& path);
  /// Takes a graph built with the IR (or builder) API.
  static Model from_graph(std::unique_ptr<ir::Graph> graph);

  /// The graph inputs a run takes (variables excluded).
  std::vector<ValueInfo> inputs() const;
  /// The graph outputs a run returns (variables' assigns excluded).
  std::vector<ValueInfo> outputs() const;
  /// Opsets the file imports (domain → version; "" is the default domain).
  const std::map<std::string, int64_t>& opsets() const { return opsets_; }

  /// Writes the graph as an ONNX file (latest opset; an opset import for each other domain its
  /// nodes use, such as "ai.switchyard"). Atomic, as Executable::save. Throws InvalidArgument
  /// naming the file when it cannot be written or the model was compiled, and naming the node
  /// when one cannot be represented in ONNX.
  void save_onnx(const std::string& path) const;

  /// Compiles the model; the Model is consumed (its graph moves into the executable).
  Executable compile(const Options& options = {}) &&;

 private:
  Executable compile_graph(const Options& options);
  std::unique_ptr<ir::Graph, void (*)(ir::Graph*)> graph_{nullptr, nullptr};
  std::map<std::string, int64_t> opsets_;
  // What identifies a model loaded from a file (the compile cache): its bytes' hash, its
  // folder and the external data files it names.
  uint64_t file_hash_ = 0;
  double load_ms_ = 0;
  std::string folder_;
  std::vector<std::string> external_files_;
};

/// A compiled model. Cheap to copy (shared); run() and run_async() are thread-safe.
class SWITCHYARD_API Executable {
 public:
  /// Runs with tensors keyed by graph input name; returns outputs keyed by graph output name.
  /// Throws InvalidArgument naming the input when one is missing or has a wrong dtype/shape.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs) const;
  /// Same, under `options` (deadline, cancellation): throws Cancelled when the run stops early.
  /// OutOfMemory when it would pass a --memory-limit; the executable stays usable either way.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs,
                                    const RunOptions& options) const;
  /// Starts a run and returns once it is in flight, with a future of its outputs (keyed as
  /// run() keys them); run() is run_async(...).get(). The future holds the Error a run fails
  /// with (the codes run() throws); a failed run leaves the executable usable. Waits first while
  /// Options.max_in_flight runs are in flight, and, when the graph assigns variables, until the
  /// assigning run before it has committed. The run keeps references to the input tensors (their
  /// memory stays alive until it ends, whatever the caller drops), not copies: do not write into
  /// an input until the future is ready. `options` is copied. Destroying the last copy of the
  /// executable waits for its runs in flight.
  std::future<std::map<std::string, Tensor>> run_async(const std::map<std::string, Tensor>& inputs,
                                                       const RunOptions& options = {}) const;
  /// Runs with values of any kind (tensors, sequences, absent optionals) in inputs() order;
  /// returns them in outputs() order with the run's statistics (and profile when asked).
  /// Throws as run() does.
  RunResult run_values(std::vector<Datum> inputs, const RunOptions& options = {}) const;
  /// run_values started as run_async starts a run: run_values is run_values_async(...).get().
  std::future<RunResult> run_values_async(std::vector<Datum> inputs,
                                          const RunOptions& options = {}) const;
  /// The inputs a run takes (a variable is no input: the executable binds it).
  std::vector<ValueInfo> inputs() const;
  /// The outputs a run returns (a variable's assign is none: the run commits it).
  std::vector<ValueInfo> outputs() const;
  /// The variables (GraphBuilder::variable): state that persists across runs, in declaration
  /// order. Copies of an Executable share them. docs/api.md ("State") gives the rules: a run
  /// reads the values current when it starts and, when it succeeds, commits all its assigns at
  /// once (a failed or cancelled run commits nothing); runs of an executable whose graph assigns
  /// variables run one at a time, so the state is always that of some order of whole runs.
  std::vector<ValueInfo> variables() const;
  /// A copy of variable `name`'s current value (what the last successful assigning run, or
  /// set_variable, left). Never waits for a run. Throws InvalidArgument naming an unknown
  /// variable.
  Tensor variable(const std::string& name) const;
  /// Replaces variable `name`'s value by a copy of `value` (host memory, the variable's dtype and
  /// shape), once any run that assigns variables has finished; later runs read it. Throws
  /// InvalidArgument naming the variable when it is unknown or `value` does not fit it.
  void set_variable(const std::string& name, const Tensor& value) const;
  /// Threads each run uses (Options.num_threads, or every core when that was 0).
  int num_threads() const;
  /// The devices the executable uses, the cpu first ("cpu", "sim:0", "cuda:0").
  std::vector<std::string> devices() const;
  /// The device whose memory holds `tensor`'s data: "cpu" for host memory, else one of
  /// devices(), or "unknown" for another device's memory.
  std::string device_of(const Tensor& tensor) const;
  /// A tensor over `data` in the memory of `device` (one of devices(); "cpu" for host memory),
  /// kept alive by `owner`: a run reads it in place where the partition that reads it runs on
  /// that device, and copies it only where something reads it elsewhere (RunStats counts the
  /// copies). `data` must address the tensor's bytes in that device's memory (a CUDA pointer
  /// for "cuda:N"); this cannot be checked. Throws InvalidArgument naming an unknown device.
  Tensor wrap_device_memory(const std::string& device, DType dtype, std::vector<int64_t> shape,
                            std::shared_ptr<void> owner, void* data) const;
  /// One line: where the nodes run ("sim:0: 29 of 31 nodes in 2 partitions; cpu: 2 nodes —
  /// NonMaxSuppression: not supported on sim:0").
  std::string placement_summary() const;
  /// The placement report as text, "json", "dot" or "html" (docs/placement.md).
  std::string explain(const std::string& format = "text") const;
  /// What the compile could not honour, one line each ("--precision fp16 has no effect: ..."):
  /// the report's "warning:" notes without the prefix. Empty when every option took effect.
  std::vector<std::string> warnings() const;
  /// Writes the executable to `path` (docs/executable-format.md): the optimized, placed graph,
  /// its options, devices and report, the weights, and the variables' current values (a loaded
  /// executable starts from them). Atomic: a reader sees the old file or
  /// the whole new one. Throws InvalidArgument naming the file when it cannot be written.
  void save(const std::string& path) const;
  /// Loads a saved executable without compiling it again: the partitions are compiled as they
  /// were placed. `options` gives what belongs to this process — threads, the shape cache,
  /// memory limits, declared simulated devices (when none are declared, the file's), and
  /// allow_relower; its placement and precision fields must be left as they are or match the
  /// file's (they are fixed at compile time). Throws InvalidModel for a truncated, corrupted
  /// or foreign file, Unsupported for another format version, DeviceMismatch when a device
  /// it was compiled for is missing (unless allow_relower), each naming the file.
  static Executable load(const std::string& path, const Options& options = {});
  /// The load and compile times and how the compile cache served this executable: "hit"
  /// (loaded from the cache), "miss" (compiled and stored) or "off".
  const CompileStats& compile_stats() const { return stats_; }
  /// The internal executable (for tools and tests inside the project).
  const compiler::CompiledModel& internal() const { return *impl_; }

 private:
  friend class Model;
  friend struct ExecutableAccess;  // the library's own constructors (src/switchyard.cc)
  std::shared_ptr<const compiler::CompiledModel> impl_;
  CompileStats stats_;
};

}  // namespace switchyard
