// The compiled model as the Python package drives it: compile (or load a .syx) under Options,
// run with the GIL released, profile into a Chrome trace, explain the placement.
#include "session.h"

#include <pybind11/stl.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <unordered_set>

#include "tooling/trace.h"
#include "value.h"

namespace switchyard::python {

namespace {

// The profiled runs of one session, on one time axis from the log's start.
class ProfileLog {
 public:
  ProfileLog()
      : start_(std::chrono::steady_clock::now()),
        start_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count()) {}
  int64_t now_us() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 start_)
        .count();
  }
  void add(std::vector<ProfileEvent> events, int64_t offset_us) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (ProfileEvent& e : events) {
      e.start_us += offset_us;
      events_.push_back(std::move(e));
    }
  }
  std::string chrome_trace() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return tooling::format_chrome_trace(events_);
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_.size();
  }
  int64_t start_ns() const { return start_ns_; }

 private:
  std::chrono::steady_clock::time_point start_;
  int64_t start_ns_;
  mutable std::mutex mutex_;
  std::vector<ProfileEvent> events_;
};

// RunOptions as one Python RunOptions object holds them: the cancellation token is shared by
// every run given this object, so terminate from another thread stops them.
struct RunControl {
  RunOptions options;
};

py::dict describe_value_info(const ValueInfo& v) {
  py::dict d;
  d["name"] = v.name;
  d["dtype"] = static_cast<int>(v.dtype);
  d["dtype_name"] = std::string(dtype_name(v.dtype));
  d["dims"] = v.dims;
  d["has_shape"] = v.has_shape;
  d["kind"] = v.kind;
  return d;
}

}  // namespace

Session::Session(const std::string& path, const Options& options) {
  py::gil_scoped_release release;
  exe_ = compile_file(path, options);
}

const Executable& Session::exe() const {
  if (!exe_) throw Error(ErrorCode::InvalidArgument, "the session was closed");
  return *exe_;
}

// The one place a value in device memory becomes a run's input: the caller's memory, tagged
// as the device's for this executable (Executable::wrap_device_memory), read in place there.
Tensor Session::input_tensor(const Value& value, const std::string& what) const {
  if (value.on_host()) return value.tensor;
  const Executable& exe = this->exe();
  const Tensor& t = value.tensor;
  if (exe.device_of(t) == value.device) return t;  // already this executable's device memory
  try {
    return exe.wrap_device_memory(value.device, t.dtype(), t.shape(), t.storage(),
                                  const_cast<void*>(t.raw()));
  } catch (const Error& e) {
    throw Error(e.code(), what + ": " + e.message());
  }
}

py::tuple Session::run(const py::list& inputs, const std::vector<int>& output_indices,
                       py::object control, py::object profile, const std::string& outputs_on,
                       const py::dict& output_buffers, uintptr_t cuda_stream) {
  const Executable& exe = this->exe();
  const std::vector<ValueInfo> declared = exe.inputs();
  if (inputs.size() != declared.size())
    invalid_argument("the model takes " + std::to_string(declared.size()) + " inputs, " +
                     std::to_string(inputs.size()) + " were given");
  std::vector<Datum> datums;
  std::unordered_set<const void*> input_storage;
  for (size_t i = 0; i < declared.size(); ++i) {
    const std::string what = "input '" + declared[i].name + "'";
    py::handle item = inputs[i];
    if (item.is_none()) {
      datums.emplace_back();
    } else if (py::isinstance<py::list>(item)) {
      std::vector<Tensor> items;
      for (py::handle element : item.cast<py::list>())
        items.push_back(input_tensor(element.cast<const Value&>(), what));
      datums.push_back(Datum::make_sequence(declared[i].dtype, std::move(items)));
    } else {
      datums.emplace_back(input_tensor(item.cast<const Value&>(), what));
      if (datums.back().tensor.storage())
        input_storage.insert(datums.back().tensor.storage().get());
    }
  }
  const size_t num_outputs = exe.outputs().size();
  for (int index : output_indices)
    if (index < 0 || static_cast<size_t>(index) >= num_outputs)
      invalid_argument("output index " + std::to_string(index) + " out of range");

  RunOptions options;
  if (!control.is_none()) options = control.cast<RunControl&>().options;
  options.profile = !profile.is_none();
  options.outputs_on = outputs_on;
  options.cuda_stream = reinterpret_cast<void*>(cuda_stream);  // NOLINT: a cudaStream_t
  for (auto [name, buffer] : output_buffers) {
    const std::string output = name.cast<std::string>();
    options.output_buffers[output] =
        input_tensor(buffer.cast<const Value&>(), "output buffer '" + output + "'");
  }
  ProfileLog* log = options.profile ? &profile.cast<ProfileLog&>() : nullptr;
  RunResult result;
  {
    py::gil_scoped_release release;
    int64_t offset_us = log ? log->now_us() : 0;
    result = exe.run_values(std::move(datums), options);
    if (log) log->add(std::move(result.profile), offset_us);
  }

  // Outputs come back as views of their memory, so one that shares it with something else (a
  // graph input passed through, a model constant, another output) is copied first: writing to
  // a result must never change an input or the model.
  auto exclusive = [&](const Tensor& t) {
    if (t.numel() == 0 || t.dtype() == DType::String) return t;
    const std::shared_ptr<void>& s = t.storage();
    if (s && s.use_count() == 1 && !input_storage.count(s.get())) return t;
    return t.clone();
  };
  // A caller's buffer is returned as itself.
  auto to_value = [&](const Tensor& t, bool buffer) {
    std::string device = t.defined() ? exe.device_of(t) : "cpu";
    return Value{device == "cpu" && !buffer ? exclusive(t) : t, device};
  };
  const std::vector<ValueInfo> declared_outputs = exe.outputs();
  auto to_python = [&](size_t index) -> py::object {
    const Datum& d = result.outputs[index];
    if (d.is_empty()) return py::none();
    if (d.is_sequence()) {
      py::list items;
      for (const Tensor& t : d.sequence) items.append(py::cast(to_value(t, false)));
      return items;
    }
    return py::cast(to_value(d.tensor, options.output_buffers.count(declared_outputs[index].name)));
  };
  py::list outputs;
  if (output_indices.empty()) {
    for (size_t i = 0; i < result.outputs.size(); ++i) outputs.append(to_python(i));
  } else {
    for (int index : output_indices) outputs.append(to_python(static_cast<size_t>(index)));
  }
  py::dict stats;
  stats["peak_bytes"] = result.stats.peak_bytes;
  stats["shape_cache_hit"] = result.stats.shape_cache_hit;
  stats["shape_signature"] = result.stats.shape_signature;
  stats["copies"] = result.stats.copies;
  stats["copied_bytes"] = result.stats.copied_bytes;
  return py::make_tuple(outputs, stats);
}

void bind_session(py::module_& m) {
  py::class_<Options>(m, "_Options", "switchyard::Options, field by field.")
      .def(py::init<>())
      .def_readwrite("num_threads", &Options::num_threads)
      .def_readwrite("shape_cache_capacity", &Options::shape_cache_capacity)
      .def_readwrite("max_in_flight", &Options::max_in_flight)
      .def_readwrite("optimize", &Options::optimize)
      .def_readwrite("compute_units", &Options::compute_units)
      .def_readwrite("device", &Options::device)
      .def_readwrite("pins", &Options::pins)
      .def_readwrite("fallback", &Options::fallback)
      .def_readwrite("min_partition_nodes", &Options::min_partition_nodes)
      .def_readwrite("memory_limits", &Options::memory_limits)
      .def_readwrite("split", &Options::split)
      .def_readwrite("sim_devices", &Options::sim_devices)
      .def_readwrite("sim_config", &Options::sim_config)
      .def_readwrite("precision", &Options::precision)
      .def_readwrite("cuda_graphs", &Options::cuda_graphs)
      .def_readwrite("fusion", &Options::fusion)
      .def_readwrite("allow_relower", &Options::allow_relower)
      .def_readwrite("cache_dir", &Options::cache_dir)
      .def_readwrite("cache_max_bytes", &Options::cache_max_bytes);

  py::class_<RunControl>(m, "_RunControl", "RunOptions with a shared cancellation token.")
      .def(py::init<>())
      .def_property(
          "deadline_ms", [](const RunControl& c) { return c.options.deadline_ms; },
          [](RunControl& c, int64_t ms) { c.options.deadline_ms = ms; })
      .def("cancel", [](const RunControl& c) { c.options.cancel.cancel(); })
      .def("reset", [](const RunControl& c) { c.options.cancel.reset(); })
      .def_property_readonly("cancelled",
                             [](const RunControl& c) { return c.options.cancel.cancelled(); });

  py::class_<ProfileLog>(m, "_ProfileLog", "The profiled runs of a session.")
      .def(py::init<>())
      .def("chrome_trace", &ProfileLog::chrome_trace)
      .def("__len__", &ProfileLog::size)
      .def_property_readonly("start_ns", &ProfileLog::start_ns);

  py::class_<Session>(m, "_Session", "A compiled model (switchyard::Executable).")
      .def(py::init<const std::string&, const Options&>(), py::arg("path"), py::arg("options"))
      .def("inputs",
           [](const Session& s) {
             py::list out;
             for (const ValueInfo& v : s.exe().inputs()) out.append(describe_value_info(v));
             return out;
           })
      .def("outputs",
           [](const Session& s) {
             py::list out;
             for (const ValueInfo& v : s.exe().outputs()) out.append(describe_value_info(v));
             return out;
           })
      .def("run", &Session::run, py::arg("inputs"), py::arg("output_indices"),
           py::arg("control") = py::none(), py::arg("profile") = py::none(),
           py::arg("outputs_on") = "", py::arg("output_buffers") = py::dict(),
           py::arg("cuda_stream") = 0)
      .def("explain",
           [](const Session& s, const std::string& format) {
             py::gil_scoped_release release;
             return s.exe().explain(format);
           })
      .def("placement_summary", [](const Session& s) { return s.exe().placement_summary(); })
      .def("warnings", [](const Session& s) { return s.exe().warnings(); })
      .def("devices", [](const Session& s) { return s.exe().devices(); })
      .def("save",
           [](const Session& s, const std::string& path) {
             py::gil_scoped_release release;
             s.exe().save(path);
           })
      .def("num_threads", [](const Session& s) { return s.exe().num_threads(); })
      .def("compile_stats",
           [](const Session& s) {
             const CompileStats& c = s.exe().compile_stats();
             py::dict d;
             d["load_ms"] = c.load_ms;
             d["compile_ms"] = c.compile_ms;
             d["cache"] = c.cache;
             return d;
           })
      .def("close", &Session::close)
      .def_property_readonly("closed", &Session::closed);
}

}  // namespace switchyard::python
