// The top of the library: wires the importer, the runtime and the backends together behind the
// public API. The only file that names concrete backends.
#include "switchyard/switchyard.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>

#include <xxhash.h>
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "backends/sim/sim_backend.h"
#include "compiler/compiler.h"

#include "compiler/compile_cache.h"
#include "compiler/executable_file.h"
#include "ir/check.h"
#include "onnx/import.h"
#include "placement/report.h"
#include "plugins.h"
#include "tooling/report_format.h"

namespace switchyard {

namespace {
double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

void delete_graph(ir::Graph* g) { delete g; }

ValueInfo describe_value(const ir::Value& v) {
  ValueInfo info;
  info.name = v.name();
  const ir::Type* t = &v.type();
  if (t->is_sequence()) info.kind = "sequence";
  if (t->is_optional()) info.kind = "optional";
  while ((t->is_sequence() || t->is_optional()) && t->element) t = t->element.get();
  info.dtype = t->dtype;
  info.has_shape = t->shape.has_value();
  if (t->shape)
    for (const ir::Dim& d : *t->shape) info.dims.push_back(d.to_string());
  return info;
}

std::vector<ValueInfo> describe_values(const std::vector<const ir::Value*>& values) {
  std::vector<ValueInfo> out;
  for (const ir::Value* v : values) out.push_back(describe_value(*v));
  return out;
}
}  // namespace

Model Model::load(const std::string& path) {
  return translate_std_exceptions(fmt::format("loading model '{}'", path), [&] {
    auto start = std::chrono::steady_clock::now();
    onnx_import::ModelInfo info;
    Model m;
    m.graph_ = {onnx_import::import_model(path, &info).release(), delete_graph};
    m.opsets_ = info.opsets;
    m.file_hash_ = info.file_hash;
    m.folder_ = std::filesystem::path(path).parent_path().string();
    m.external_files_ = info.external_files;
    m.load_ms_ = ms_since(start);
    return m;
  });
}

Model Model::from_graph(std::unique_ptr<ir::Graph> graph) {
  SY_CHECK(graph != nullptr, InvalidArgument, "Model::from_graph: no graph given");
  Model m;
  m.graph_ = {graph.release(), delete_graph};
  return m;
}

std::vector<ValueInfo> Model::inputs() const {
  std::vector<ValueInfo> out;
  for (const ir::Value* v : graph_->inputs())
    if (!graph_->find_variable(v->name())) out.push_back(describe_value(*v));
  return out;
}
std::vector<ValueInfo> Model::outputs() const {
  std::vector<ValueInfo> out;
  for (const ir::Value* v : graph_->outputs()) {
    bool assign = false;
    for (const ir::Variable& var : graph_->variables())
      assign = assign || var.assigned == v->name();
    if (!assign) out.push_back(describe_value(*v));
  }
  return out;
}

namespace {

// The --memory-limit entries as (device, bytes), each parsed and checked once.
std::vector<std::pair<std::string, uint64_t>> memory_limits_of(const Options& o) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& limit : o.memory_limits) {
    auto [device, bytes] = placement::parse_memory_limit(limit);
    SY_CHECK(bytes > 0, InvalidArgument, "--memory-limit {}: the limit must be positive", limit);
    out.emplace_back(device, bytes);
  }
  return out;
}

placement::Policy make_policy(const Options& o) {
  placement::Policy p;
  p.compute_units = placement::parse_compute_units(o.compute_units);
  if (!o.device.empty()) p.devices = placement::parse_device_list(o.device);
  for (const auto& pin : o.pins) p.pins.push_back(placement::parse_pin(pin));
  p.fallback = placement::parse_fallback(o.fallback);
  p.min_partition_nodes = o.min_partition_nodes;
  for (const auto& [device, bytes] : memory_limits_of(o))
    SY_CHECK(p.memory_limits.emplace(device, bytes).second, InvalidArgument,
             "--memory-limit {}: the device has two limits", device);
  p.split = placement::parse_split(o.split);
  return p;
}

// The devices this process can use: the cpu first, then declared simulated devices.
std::vector<std::shared_ptr<const backends::Backend>> make_devices(const Options& o) {
  SY_CHECK(o.sim_devices == 0 || o.sim_config.empty(), InvalidArgument,
           "--sim and --sim-config both declare simulated devices; give one of them");
  std::vector<std::shared_ptr<const backends::Backend>> devices;
  devices.push_back(std::make_shared<cpu::CpuBackend>());
  for (auto& d : plugins::create_plugin_backends()) devices.push_back(std::move(d));
  std::vector<std::shared_ptr<backends::Backend>> sims =
      o.sim_config.empty() ? sim::create_sim_backends(o.sim_devices)
                           : sim::create_sim_backends(sim::parse_sim_config(o.sim_config));
  for (auto& s : sims) devices.push_back(std::move(s));
  return devices;
}

}  // namespace

std::vector<BackendStatus> backend_status() {
  std::vector<BackendStatus> out;
  out.push_back({"cpu", "", true,
                 fmt::format("built, {} op types (oneDNN for Conv/MatMul/Gemm/pooling)",
                             cpu::cpu_kernels().ops().size())});
  out.push_back({"sim", "", true, "built (declare devices with --sim N or --sim-config FILE)"});
  std::vector<std::string> statuses;
  plugins::create_plugin_backends(&statuses);
  const std::vector<plugins::PluginState>& states = plugins::plugin_states();
  for (size_t i = 0; i < states.size(); ++i)
    out.push_back({states[i].name, states[i].library, states[i].loaded,
                   i < statuses.size() ? statuses[i] : states[i].detail});
  return out;
}

std::vector<DeviceDescription> describe_devices(const Options& options) {
  std::vector<DeviceDescription> out;
  for (const auto& d : make_devices(options)) {
    const runtime::DeviceInfo& i = d->device();
    out.push_back({i.id, i.kind, i.name, i.uuid, i.memory_bytes, i.sm_count, i.compute_capability,
                   i.peers, i.software});
  }
  return out;
}

std::vector<std::string> available_devices(const Options& options) {
  std::vector<std::string> ids;
  for (const auto& d : make_devices(options)) ids.push_back(d->device().id);
  return ids;
}

Executable Model::compile(const Options& options) && {
  SY_CHECK(graph_ != nullptr, InvalidArgument, "Model::compile: the model was already compiled");
  return translate_std_exceptions("compiling the model", [&] { return compile_graph(options); });
}

namespace {

// The public Options as saved executables record them (docs/executable-format.md).
nlohmann::json options_json(const Options& o) {
  return {{"num_threads", o.num_threads},
          {"shape_cache_capacity", o.shape_cache_capacity},
          {"optimize", o.optimize},
          {"compute_units", o.compute_units},
          {"device", o.device},
          {"pins", o.pins},
          {"fallback", o.fallback},
          {"min_partition_nodes", o.min_partition_nodes},
          {"memory_limits", o.memory_limits},
          {"split", o.split},
          {"sim_devices", o.sim_devices},
          {"sim_config", o.sim_config},
          {"precision", o.precision},
          {"cuda_graphs", o.cuda_graphs},
          {"fusion", o.fusion}};
}

Options options_from_json(const std::string& text, const std::string& path) {
  Options o;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    o.num_threads = j.at("num_threads").get<int>();
    o.shape_cache_capacity = j.at("shape_cache_capacity").get<size_t>();
    o.optimize = j.at("optimize").get<bool>();
    o.compute_units = j.at("compute_units").get<std::string>();
    o.device = j.at("device").get<std::string>();
    o.pins = j.at("pins").get<std::vector<std::string>>();
    o.fallback = j.at("fallback").get<std::string>();
    o.min_partition_nodes = j.at("min_partition_nodes").get<int>();
    o.memory_limits = j.at("memory_limits").get<std::vector<std::string>>();
    o.split = j.at("split").get<std::string>();
    o.sim_devices = j.at("sim_devices").get<int>();
    o.sim_config = j.at("sim_config").get<std::string>();
    o.precision = j.at("precision").get<std::string>();
    o.cuda_graphs = j.at("cuda_graphs").get<bool>();
    o.fusion = j.at("fusion").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    SY_THROW(InvalidModel, "executable '{}': the saved options do not read: {}", path, e.what());
  }
  return o;
}

compiler::CompileOptions compile_options(const Options& options) {
  SY_CHECK(options.max_in_flight >= 1 && options.max_in_flight <= runtime::kMaxRunsInFlight,
           InvalidArgument, "Options.max_in_flight is {}; expected 1 to {} runs",
           options.max_in_flight, runtime::kMaxRunsInFlight);
  compiler::CompileOptions co;
  co.num_threads = options.num_threads;
  co.max_in_flight = options.max_in_flight;
  co.shape_cache_capacity = options.shape_cache_capacity;
  co.optimize = options.optimize;
  co.policy = make_policy(options);
  co.backend = compiler::backend_options(options.precision, options.fusion, options.cuda_graphs);
  co.user_options = options_json(options).dump();
  return co;
}

// Load: placement and precision are fixed when the file is compiled; an option given to load
// that would change them is refused rather than ignored.
void check_load_options(const Options& given, const Options& saved, const std::string& path) {
  const Options defaults;
  auto check = [&](bool is_default, bool same, const char* option) {
    SY_CHECK(is_default || same, InvalidArgument,
             "executable '{}': {} was fixed when it was compiled and cannot change at load; "
             "compile the model again with the new value",
             path, option);
  };
  check(given.compute_units == defaults.compute_units, given.compute_units == saved.compute_units,
        "--compute-units");
  check(given.device.empty(), given.device == saved.device, "--device");
  check(given.pins.empty(), given.pins == saved.pins, "--pin");
  check(given.fallback == defaults.fallback, given.fallback == saved.fallback, "--fallback");
  check(given.min_partition_nodes == defaults.min_partition_nodes,
        given.min_partition_nodes == saved.min_partition_nodes, "--min-partition-nodes");
  check(given.split == defaults.split, given.split == saved.split, "--split");
  check(given.precision == defaults.precision, given.precision == saved.precision, "--precision");
  check(given.cuda_graphs == defaults.cuda_graphs, given.cuda_graphs == saved.cuda_graphs,
        "--no-cuda-graphs");
  check(given.fusion == defaults.fusion, given.fusion == saved.fusion, "--no-fusion");
  check(given.optimize == defaults.optimize, given.optimize == saved.optimize, "optimize");
}

// The saved options with what names a device that is not present dropped (the preferred
// devices of --device, the pins onto them, a pipeline left with one stage), for placing again
// on the devices present.
Options relower_options(Options o, const std::vector<std::string>& present) {
  auto here = [&](const std::string& id) {
    return std::find(present.begin(), present.end(), id) != present.end();
  };
  std::vector<std::string> kept;
  for (const std::string& d : placement::parse_device_list(o.device.empty() ? "cpu" : o.device))
    if (here(d)) kept.push_back(d);
  o.device = o.device.empty() ? "" : fmt::format("{}", fmt::join(kept, ","));
  if (kept.size() < 2) o.split = "none";  // a pipeline needs two stages
  std::vector<std::string> pins;
  for (const std::string& pin : o.pins)
    if (here(placement::parse_pin(pin).device)) pins.push_back(pin);
  o.pins = pins;
  return o;
}

}  // namespace

bool is_executable_file(const std::string& path) { return compiler::is_executable_file(path); }

const char* version() { return SWITCHYARD_VERSION_STRING; }

void Executable::save(const std::string& path) const {
  translate_std_exceptions(fmt::format("saving the executable '{}'", path), [&] {
    compiler::write_executable(path, *impl_, impl_->options().user_options);
    return 0;
  });
}

Executable Executable::load(const std::string& path, const Options& options) {
  return translate_std_exceptions(fmt::format("loading the executable '{}'", path), [&] {
    auto start = std::chrono::steady_clock::now();
    compiler::SavedExecutable saved = compiler::read_executable(path);
    Options saved_options = options_from_json(saved.options, path);
    check_load_options(options, saved_options, path);
    // What belongs to this process: threads, the cache, memory limits, the declared
    // simulated devices (the file's when none are declared here).
    Options here = saved_options;
    here.num_threads = options.num_threads;
    here.shape_cache_capacity = options.shape_cache_capacity;
    here.max_in_flight = options.max_in_flight;
    here.memory_limits = options.memory_limits;
    if (options.sim_devices != 0 || !options.sim_config.empty()) {
      here.sim_devices = options.sim_devices;
      here.sim_config = options.sim_config;
    } else {
      // A path named by the file is never read: the caller names the config file.
      SY_CHECK(saved_options.sim_config.empty(), InvalidArgument,
               "executable '{}' was compiled for the simulated devices of --sim-config '{}'; "
               "give --sim-config (Options.sim_config) to load it",
               path, saved_options.sim_config);
    }
    auto devices = make_devices(here);
    compiler::CompileOptions co = compile_options(here);
    std::vector<std::string> missing = compiler::missing_devices(saved, devices);
    Executable exe;
    if (missing.empty() || !options.allow_relower) {
      exe.impl_ = compiler::instantiate(std::move(saved), std::move(devices), co);
      exe.stats_.load_ms = ms_since(start);
      return exe;
    }
    std::vector<std::string> present;
    for (const auto& d : devices) present.push_back(d->device().id);
    Options again = relower_options(here, present);
    co = compile_options(again);
    co.optimize = false;  // the saved graph is the optimized one
    co.report_notes.push_back(fmt::format(
        "relowered at load: compiled for {}, which {} not present; placed again on {}",
        fmt::join(missing, ", "), missing.size() == 1 ? "is" : "are", fmt::join(present, ", ")));
    auto loaded = std::chrono::steady_clock::now();
    exe.impl_ = compiler::compile(std::move(saved.graph), std::move(devices), co);
    exe.stats_.load_ms = ms_since(start) - ms_since(loaded);
    exe.stats_.compile_ms = ms_since(loaded);
    return exe;
  });
}

namespace {

// The compile cache Options ask for: Options.cache_dir, else $SWITCHYARD_CACHE_DIR; "off" or
// neither: none.
std::optional<compiler::CompileCache> cache_of(const Options& o) {
  std::string dir = o.cache_dir;
  if (dir.empty()) {
    const char* env = std::getenv("SWITCHYARD_CACHE_DIR");
    if (env) dir = env;
  }
  if (dir.empty() || dir == "off") return std::nullopt;
  return compiler::CompileCache(dir, o.cache_max_bytes);
}

// The options that change a compile's result: all but the run-time ones (threads, the shape
// cache), with the content of a --sim-config file.
std::string identity_options(const Options& o) {
  nlohmann::json j = options_json(o);
  j.erase("num_threads");
  j.erase("shape_cache_capacity");
  if (!o.sim_config.empty()) {
    std::ifstream in(o.sim_config, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    j["sim_config_text"] = text;
  }
  return j.dump();
}

}  // namespace

// A compile through `cache`: `id` identifies it before any import. A hit loads the entry; a
// miss compiles the graph `import` gives (which may add the external data files it read to
// `id`) and stores it. `prior_load_ms` is what loading the model took before `start`.
struct ExecutableAccess {
  static Executable compile_cached(
      const compiler::CompileCache& cache, compiler::CompileIdentity id, const Options& options,
      std::chrono::steady_clock::time_point start, double prior_load_ms,
      const std::function<std::unique_ptr<ir::Graph>(compiler::CompileIdentity&)>& import);
};

Executable ExecutableAccess::compile_cached(
    const compiler::CompileCache& cache, compiler::CompileIdentity id, const Options& options,
    std::chrono::steady_clock::time_point start, double prior_load_ms,
    const std::function<std::unique_ptr<ir::Graph>(compiler::CompileIdentity&)>& import) {
  compiler::CompileOptions co = compile_options(options);
  id.options = identity_options(options);
  auto devices = make_devices(options);
  std::string key = cache.key(id, devices);
  Executable exe;
  if (auto saved = cache.find(key, id.model_folder)) {
    exe.impl_ = compiler::instantiate(std::move(*saved), std::move(devices), co);
    exe.stats_.cache = "hit";
    exe.stats_.load_ms = prior_load_ms + ms_since(start);
    return exe;
  }
  auto import_start = std::chrono::steady_clock::now();
  std::unique_ptr<ir::Graph> graph = import(id);
  double import_ms = ms_since(import_start);
  exe.impl_ = compiler::compile(std::move(graph), std::move(devices), co);
  exe.stats_.cache = "miss";
  exe.stats_.load_ms = prior_load_ms + import_ms;
  exe.stats_.compile_ms = ms_since(start) - import_ms;
  cache.store(key, *exe.impl_, co.user_options, id);
  return exe;
}

Executable compile_file(const std::string& path, const Options& options) {
  if (is_executable_file(path)) return Executable::load(path, options);
  std::optional<compiler::CompileCache> cache =
      translate_std_exceptions("opening the compile cache", [&] { return cache_of(options); });
  if (!cache) return Model::load(path).compile(options);
  // Looked up before the import: a hit costs a hash of the file and a load.
  return translate_std_exceptions(fmt::format("compiling '{}'", path), [&] {
    auto start = std::chrono::steady_clock::now();
    compiler::CompileIdentity id;
    id.model_hash = compiler::file_hash(path);
    id.model_folder = std::filesystem::path(path).parent_path().string();
    return ExecutableAccess::compile_cached(*cache, std::move(id), options, start, 0,
                                            [&](compiler::CompileIdentity& identity) {
                                              onnx_import::ModelInfo info;
                                              auto graph = onnx_import::import_model(path, &info);
                                              identity.external_files = info.external_files;
                                              return graph;
                                            });
  });
}

Executable Model::compile_graph(const Options& options) {
  auto start = std::chrono::steady_clock::now();
  if (std::optional<compiler::CompileCache> cache = cache_of(options)) {
    compiler::CompileIdentity id;
    id.model_hash = file_hash_ ? file_hash_ : compiler::graph_hash(*graph_);
    id.model_folder = folder_;
    id.external_files = external_files_;
    Executable exe = ExecutableAccess::compile_cached(
        *cache, std::move(id), options, start, load_ms_,
        [&](compiler::CompileIdentity&) { return std::unique_ptr<ir::Graph>(graph_.release()); });
    graph_.reset();  // consumed on a hit too
    return exe;
  }
  compiler::CompileOptions co = compile_options(options);
  auto devices = make_devices(options);
  std::unique_ptr<ir::Graph> graph(graph_.release());
  Executable exe;
  exe.impl_ = compiler::compile(std::move(graph), std::move(devices), co);
  exe.stats_.load_ms = load_ms_;
  exe.stats_.compile_ms = ms_since(start);
  return exe;
}

std::map<std::string, Tensor> Executable::run(const std::map<std::string, Tensor>& inputs) const {
  return run(inputs, RunOptions{});
}

namespace {
// The index of `device` among the executable's devices, or InvalidArgument naming `what`.
int device_index(const compiler::CompiledModel& impl, const std::string& device,
                 const std::string& what) {
  const auto& devices = impl.executable().devices();
  std::vector<const runtime::DeviceInfo*> infos;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d]->device().id == device) return static_cast<int>(d);
    infos.push_back(&devices[d]->device());
  }
  SY_THROW(InvalidArgument, "{} '{}': the executable uses no such device (it has {})", what, device,
           runtime::device_list_text(infos));
}

runtime::RunControl run_control(const compiler::CompiledModel& impl, const RunOptions& options) {
  SY_CHECK(options.deadline_ms >= 0, InvalidArgument,
           "RunOptions.deadline_ms is {}; expected 0 (none) or a positive count of milliseconds",
           options.deadline_ms);
  runtime::RunControl control;
  control.deadline_ms = options.deadline_ms;
  control.cancel_flag = options.cancel.flag();
  if (!options.outputs_on.empty())
    control.output_device = device_index(impl, options.outputs_on, "RunOptions.outputs_on");
  control.caller_queue = {"cuda", options.cuda_stream};
  if (!options.output_buffers.empty()) {
    const auto& outs = impl.executable().user_outputs();
    control.output_buffers.resize(outs.size());
    for (const auto& [name, buffer] : options.output_buffers) {
      size_t i = 0;
      while (i < outs.size() && outs[i]->name() != name) ++i;
      if (i == outs.size()) {
        std::vector<std::string> names;
        for (const ir::Value* v : outs) names.push_back(v->name());
        SY_THROW(InvalidArgument,
                 "RunOptions.output_buffers: '{}' is not an output of the model (its outputs: {})",
                 name, fmt::join(names, ", "));
      }
      const ir::Type& type = outs[i]->type();
      SY_CHECK(!type.is_tensor() || type.dtype == buffer.dtype(), InvalidArgument,
               "RunOptions.output_buffers: output '{}' is {}; the buffer given for it is {}", name,
               dtype_name(type.dtype), dtype_name(buffer.dtype()));
      control.output_buffers[i] = buffer;
    }
  }
  return control;
}

// What a run started by run_async owns until it ends: its options (the cancellation flag the
// control points into), the control, the statistics and the profile.
struct AsyncRun {
  RunOptions options;
  runtime::RunControl control;
  RunStats stats;
  runtime::Profiler profiler;
};

// A run's failure as the public API reports it: an Error, whatever was thrown. Takes the
// caller's reference, so a worker thread keeps none once the future holds it.
std::exception_ptr public_error(std::exception_ptr&& error) {
  std::exception_ptr thrown = std::move(error);
  error = nullptr;
  try {
    translate_std_exceptions("running the model", [&] { std::rethrow_exception(thrown); });
  } catch (...) {
    thrown = nullptr;
    return std::current_exception();
  }
  return thrown;
}

// Starts a run of `inputs` under `options` on `impl`; `deliver` gets the run's state and its
// outputs once it ends (on a device worker; what it throws becomes the future's error).
// Holds no reference to the executable: its destructor waits for the run instead.
template <typename T, typename Deliver>
std::future<T> start_public_run(const compiler::CompiledModel& impl, std::vector<Datum> inputs,
                                const RunOptions& options, Deliver deliver,
                                bool caller_waits = false) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> future = promise->get_future();
  auto run = std::make_shared<AsyncRun>();
  try {
    run->options = options;
    run->control = run_control(impl, run->options);
  } catch (...) {
    promise->set_exception(public_error(std::current_exception()));
    return future;
  }
  impl.executable().start_run(
      std::move(inputs),
      [promise, run, deliver](std::vector<Datum> outputs, std::exception_ptr error) {
        if (!error) {
          try {
            promise->set_value(deliver(*run, std::move(outputs)));
            return;
          } catch (...) {
            error = std::current_exception();
          }
        }
        promise->set_exception(public_error(std::move(error)));
      },
      &run->stats, run->options.profile ? &run->profiler : nullptr, &run->control, caller_waits);
  return future;
}

}  // namespace

namespace {
std::future<RunResult> start_values_run(const compiler::CompiledModel& impl,
                                        std::vector<Datum> inputs, const RunOptions& options,
                                        bool caller_waits) {
  return start_public_run<RunResult>(
      impl, std::move(inputs), options,
      [](AsyncRun& run, std::vector<Datum> outputs) {
        RunResult result;
        result.outputs = std::move(outputs);
        result.stats = run.stats;
        if (run.options.profile) result.profile = run.profiler.events();
        return result;
      },
      caller_waits);
}
}  // namespace

std::future<RunResult> Executable::run_values_async(std::vector<Datum> inputs,
                                                    const RunOptions& options) const {
  return start_values_run(*impl_, std::move(inputs), options, false);
}

RunResult Executable::run_values(std::vector<Datum> inputs, const RunOptions& options) const {
  return start_values_run(*impl_, std::move(inputs), options, true).get();
}

namespace {
std::future<std::map<std::string, Tensor>> start_named_run(
    const compiler::CompiledModel& impl, const std::map<std::string, Tensor>& inputs,
    const RunOptions& options, bool caller_waits) {
  std::vector<Datum> ordered;
  try {
    std::map<std::string, ir::Datum> named;
    for (const auto& [name, t] : inputs) named.emplace(name, ir::Datum(t));
    ordered = impl.executable().order_inputs(named);
  } catch (...) {
    std::promise<std::map<std::string, Tensor>> failed;
    failed.set_exception(public_error(std::current_exception()));
    return failed.get_future();
  }
  const runtime::Executable* exe = &impl.executable();
  return start_public_run<std::map<std::string, Tensor>>(
      impl, std::move(ordered), options,
      [exe](AsyncRun&, std::vector<Datum> results) {
        std::map<std::string, Tensor> out;
        const auto& outs = exe->user_outputs();
        for (size_t i = 0; i < outs.size(); ++i) {
          SY_CHECK(results[i].is_tensor(), Unsupported,
                   "output '{}' is a sequence or optional; use the internal API", outs[i]->name());
          out.emplace(outs[i]->name(), results[i].tensor);
        }
        return out;
      },
      caller_waits);
}
}  // namespace

std::future<std::map<std::string, Tensor>> Executable::run_async(
    const std::map<std::string, Tensor>& inputs, const RunOptions& options) const {
  return start_named_run(*impl_, inputs, options, false);
}

int Executable::num_threads() const { return impl_->executable().num_threads(); }

std::vector<std::string> Executable::devices() const {
  std::vector<std::string> ids;
  for (const auto& d : impl_->executable().devices()) ids.push_back(d->device().id);
  return ids;
}

std::string Executable::device_of(const Tensor& tensor) const {
  for (const auto& d : impl_->executable().devices())
    if (d->owns(tensor)) return d->device().id;
  return "unknown";
}

Tensor Executable::wrap_device_memory(const std::string& device, DType dtype,
                                      std::vector<int64_t> shape, std::shared_ptr<void> owner,
                                      void* data) const {
  const auto& devices = impl_->executable().devices();
  const runtime::Device& d =
      *devices[static_cast<size_t>(device_index(*impl_, device, "wrap_device_memory"))];
  SY_CHECK(data != nullptr || checked_numel(shape) == 0, InvalidArgument,
           "wrap_device_memory: a null pointer for a {} tensor of {} elements on {}",
           dtype_name(dtype), checked_numel(shape), device);
  SY_CHECK(dtype != DType::String || d.device().is_host, InvalidArgument,
           "wrap_device_memory: string tensors live in host memory, not on {}", device);
  return Tensor::wrap(dtype, std::move(shape),
                      runtime::in_memory_space(d.memory_space(), std::move(owner), data), data);
}

std::map<std::string, Tensor> Executable::run(const std::map<std::string, Tensor>& inputs,
                                              const RunOptions& options) const {
  return start_named_run(*impl_, inputs, options, true).get();
}

std::vector<ValueInfo> Executable::inputs() const {
  return describe_values(impl_->executable().user_inputs());
}
std::vector<ValueInfo> Executable::outputs() const {
  return describe_values(impl_->executable().user_outputs());
}

std::vector<ValueInfo> Executable::variables() const {
  std::vector<ValueInfo> out;
  for (const ir::Variable& var : impl_->graph().variables())
    out.push_back(describe_value(*impl_->graph().find_local_value(var.name)));
  return out;
}

Tensor Executable::variable(const std::string& name) const {
  std::shared_ptr<const runtime::VariableValues> state = impl_->executable().variables();
  auto it = state->find(name);
  if (it == state->end()) {
    std::vector<std::string> names;
    for (const auto& [n, value] : *state) names.push_back(n);
    SY_THROW(InvalidArgument,
             "Executable::variable: the model has no variable '{}' (its "
             "variables: {})",
             name, names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
  }
  return it->second.clone();
}

void Executable::set_variable(const std::string& name, const Tensor& value) const {
  translate_std_exceptions(fmt::format("setting variable '{}'", name), [&] {
    impl_->executable().set_variable(name, value);
    return 0;
  });
}
std::string Executable::placement_summary() const { return impl_->placement_summary(); }

std::vector<std::string> Executable::warnings() const {
  std::vector<std::string> out;
  const std::string prefix = "warning: ";
  for (const std::string& note : impl_->placement_report().notes)
    if (note.rfind(prefix, 0) == 0) out.push_back(note.substr(prefix.size()));
  return out;
}

std::string Executable::explain(const std::string& format) const {
  return translate_std_exceptions("explaining the placement", [&] {
    return tooling::format_report(impl_->placement_report(), format);
  });
}

}  // namespace switchyard
