// The C API (include/switchyard/c_api.h) over the C++ one: every entry point catches what the
// C++ API throws and turns it into an sy_status with a per-thread message.
#include "switchyard/c_api.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

struct sy_model {
  std::unique_ptr<switchyard::Model> model;
};
struct sy_executable {
  switchyard::Executable exe;
};
struct sy_builder {
  std::unique_ptr<switchyard::GraphBuilder> builder;
  std::vector<switchyard::Value> values;
};

namespace {

using switchyard::Error;
using switchyard::ErrorCode;

thread_local std::string last_error;

sy_status to_status(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidModel:
      return SY_INVALID_MODEL;
    case ErrorCode::Unsupported:
      return SY_UNSUPPORTED;
    case ErrorCode::PlacementFailed:
      return SY_PLACEMENT_FAILED;
    case ErrorCode::InvalidArgument:
      return SY_INVALID_ARGUMENT;
    case ErrorCode::OutOfMemory:
      return SY_OUT_OF_MEMORY;
    case ErrorCode::DeviceLost:
      return SY_DEVICE_LOST;
    case ErrorCode::Internal:
      return SY_INTERNAL;
    case ErrorCode::Cancelled:
      return SY_CANCELLED;
    case ErrorCode::DeviceMismatch:
      return SY_DEVICE_MISMATCH;
  }
  return SY_INTERNAL;
}

sy_status fail(sy_status status, const std::string& message) {
  try {
    last_error = message;
  } catch (...) {  // no memory for the message: the status still says what happened
  }
  return status;
}

// Runs `f` (which returns nothing), mapping whatever it throws onto a status.
template <typename F>
sy_status guarded(F&& f) {
  try {
    f();
    return SY_OK;
  } catch (const Error& e) {
    return fail(to_status(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(SY_OUT_OF_MEMORY, "OutOfMemory: out of memory");
  } catch (const std::exception& e) {
    return fail(SY_INTERNAL, std::string("Internal: ") + e.what());
  } catch (...) {
    return fail(SY_INTERNAL, "Internal: an unknown exception");
  }
}

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, message);
}

template <typename T>
T* require(T* p, const char* what, const char* function) {
  if (p == nullptr) invalid(fmt::format("{}: {} is NULL", function, what));
  return p;
}

std::string require_string(const char* s, const char* what, const char* function) {
  return std::string(require(s, what, function));
}

switchyard::DType to_dtype(sy_dtype dtype, const char* function) {
  auto d = static_cast<switchyard::DType>(dtype);
  if (!switchyard::dtype_is_known(d) || d == switchyard::DType::String)
    invalid(fmt::format("{}: dtype {} is not a tensor type the C API takes", function,
                        static_cast<int>(dtype)));
  return d;
}

std::vector<int64_t> to_shape(const sy_tensor& t, const char* function) {
  if (t.rank > 0) require(t.shape, "tensor.shape", function);
  return std::vector<int64_t>(t.shape, t.shape + t.rank);
}

// A view of the caller's tensor (no copy; valid during the call).
switchyard::Tensor wrap_tensor(const sy_tensor& t, const char* function) {
  switchyard::DType dtype = to_dtype(t.dtype, function);
  std::vector<int64_t> shape = to_shape(t, function);
  if (switchyard::checked_numel(shape) > 0) require(t.data, "tensor.data", function);
  return switchyard::Tensor::wrap(dtype, std::move(shape), nullptr, t.data);
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  invalid(fmt::format("option '{}': '{}' is not a boolean (0, 1, true, false)", key, value));
}

int64_t parse_int(const std::string& key, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0)
    invalid(fmt::format("option '{}': '{}' is not an integer", key, value));
  return v;
}

switchyard::Options parse_options(const char* const* options, size_t n, const char* function) {
  switchyard::Options o;
  if (n > 0) require(options, "options", function);
  for (size_t i = 0; i < n; ++i) {
    std::string entry = require_string(options[i], "an option", function);
    size_t eq = entry.find('=');
    if (eq == std::string::npos)
      invalid(fmt::format("{}: option '{}' is not key=value", function, entry));
    std::string key = entry.substr(0, eq);
    std::string value = entry.substr(eq + 1);
    auto to_int = [&] { return static_cast<int>(parse_int(key, value)); };
    if (key == "device")
      o.device = value;
    else if (key == "compute_units")
      o.compute_units = value;
    else if (key == "fallback")
      o.fallback = value;
    else if (key == "precision")
      o.precision = value;
    else if (key == "split")
      o.split = value;
    else if (key == "sim_config")
      o.sim_config = value;
    else if (key == "cache_dir")
      o.cache_dir = value;
    else if (key == "num_threads")
      o.num_threads = to_int();
    else if (key == "sim_devices")
      o.sim_devices = to_int();
    else if (key == "max_in_flight")
      o.max_in_flight = to_int();
    else if (key == "min_partition_nodes")
      o.min_partition_nodes = to_int();
    else if (key == "shape_cache_capacity")
      o.shape_cache_capacity = static_cast<size_t>(parse_int(key, value));
    else if (key == "cache_max_bytes")
      o.cache_max_bytes = static_cast<uint64_t>(parse_int(key, value));
    else if (key == "optimize")
      o.optimize = parse_bool(key, value);
    else if (key == "fusion")
      o.fusion = parse_bool(key, value);
    else if (key == "cuda_graphs")
      o.cuda_graphs = parse_bool(key, value);
    else if (key == "allow_relower")
      o.allow_relower = parse_bool(key, value);
    else if (key == "pin" || key == "pins")
      o.pins.push_back(value);
    else if (key == "memory_limit" || key == "memory_limits")
      o.memory_limits.push_back(value);
    else
      invalid(fmt::format("{}: unknown option '{}'", function, key));
  }
  return o;
}

switchyard::Value value_at(const sy_builder& b, sy_value v, const char* function) {
  if (v == SY_NO_VALUE) return {};
  if (v < 0 || static_cast<size_t>(v) >= b.values.size())
    invalid(fmt::format("{}: value {} is not one of this builder's", function, v));
  return b.values[static_cast<size_t>(v)];
}

sy_value add_value(sy_builder& b, switchyard::Value v) {
  b.values.push_back(v);
  return static_cast<sy_value>(b.values.size() - 1);
}

switchyard::GraphBuilder& live_builder(sy_builder* b, const char* function) {
  require(b, "builder", function);
  if (!b->builder) invalid(fmt::format("{}: the builder was already built", function));
  return *b->builder;
}

switchyard::AttributeValue to_attribute(const sy_attribute& a, const char* function) {
  switch (a.kind) {
    case SY_ATTR_INT:
      return switchyard::AttributeValue(a.i);
    case SY_ATTR_FLOAT:
      return switchyard::AttributeValue(a.f);
    case SY_ATTR_STRING:
      return switchyard::AttributeValue(require_string(a.s, "attr.s", function));
    case SY_ATTR_INTS:
      if (a.count > 0) require(a.ints, "attr.ints", function);
      return switchyard::AttributeValue(std::vector<int64_t>(a.ints, a.ints + a.count));
    case SY_ATTR_FLOATS:
      if (a.count > 0) require(a.floats, "attr.floats", function);
      return switchyard::AttributeValue(std::vector<float>(a.floats, a.floats + a.count));
  }
  invalid(fmt::format("{}: attribute '{}' has unknown kind {}", function, a.name,
                      static_cast<int>(a.kind)));
}

// What a returned tensor's owner_ holds.
struct OutputHolder {
  switchyard::Tensor tensor;
  std::string name;
};

}  // namespace

extern "C" {

const char* sy_last_error_message(void) { return last_error.c_str(); }

const char* sy_status_name(sy_status status) {
  switch (status) {
    case SY_OK:
      return "OK";
    case SY_INVALID_MODEL:
      return "InvalidModel";
    case SY_UNSUPPORTED:
      return "Unsupported";
    case SY_PLACEMENT_FAILED:
      return "PlacementFailed";
    case SY_INVALID_ARGUMENT:
      return "InvalidArgument";
    case SY_OUT_OF_MEMORY:
      return "OutOfMemory";
    case SY_DEVICE_LOST:
      return "DeviceLost";
    case SY_INTERNAL:
      return "Internal";
    case SY_CANCELLED:
      return "Cancelled";
    case SY_DEVICE_MISMATCH:
      return "DeviceMismatch";
  }
  return "Unknown";
}

sy_status sy_model_load(const char* path, sy_model** model) {
  return guarded([&] {
    std::string p = require_string(path, "path", "sy_model_load");
    require(model, "model", "sy_model_load");
    auto m = std::make_unique<sy_model>();
    m->model = std::make_unique<switchyard::Model>(switchyard::Model::load(p));
    *model = m.release();
  });
}

sy_status sy_model_save_onnx(const sy_model* model, const char* path) {
  return guarded([&] {
    require(model, "model", "sy_model_save_onnx");
    std::string p = require_string(path, "path", "sy_model_save_onnx");
    if (!model->model) invalid("sy_model_save_onnx: the model was already compiled");
    model->model->save_onnx(p);
  });
}

sy_status sy_model_compile(sy_model* model, const char* const* options, size_t n_options,
                           sy_executable** exe) {
  return guarded([&] {
    require(model, "model", "sy_model_compile");
    require(exe, "exe", "sy_model_compile");
    switchyard::Options o = parse_options(options, n_options, "sy_model_compile");
    if (!model->model) invalid("sy_model_compile: the model was already compiled");
    std::unique_ptr<switchyard::Model> m = std::move(model->model);
    auto e = std::make_unique<sy_executable>(sy_executable{std::move(*m).compile(o)});
    *exe = e.release();
  });
}

void sy_model_free(sy_model* model) { delete model; }

sy_status sy_executable_run(const sy_executable* exe, const char* const* names,
                            const sy_tensor* inputs, size_t n_inputs, sy_tensor** outputs,
                            size_t* n_outputs) {
  return guarded([&] {
    const char* fn = "sy_executable_run";
    require(exe, "exe", fn);
    require(outputs, "outputs", fn);
    require(n_outputs, "n_outputs", fn);
    if (n_inputs > 0) {
      require(names, "names", fn);
      require(inputs, "inputs", fn);
    }
    std::map<std::string, switchyard::Tensor> feeds;
    for (size_t i = 0; i < n_inputs; ++i)
      feeds[require_string(names[i], "an input name", fn)] = wrap_tensor(inputs[i], fn);
    std::map<std::string, switchyard::Tensor> results = exe->exe.run(feeds);
    std::vector<switchyard::ValueInfo> order = exe->exe.outputs();
    std::vector<std::unique_ptr<OutputHolder>> holders;
    for (const switchyard::ValueInfo& info : order) {
      auto it = results.find(info.name);
      if (it == results.end())
        throw Error(ErrorCode::Internal, fmt::format("{}: no output '{}'", fn, info.name));
      if (it->second.dtype() == switchyard::DType::String)
        throw Error(ErrorCode::Unsupported,
                    fmt::format("{}: output '{}' is a string tensor, which the C API does not "
                                "return",
                                fn, info.name));
      holders.push_back(std::make_unique<OutputHolder>(OutputHolder{it->second, info.name}));
    }
    auto array = std::make_unique<sy_tensor[]>(holders.size());
    for (size_t i = 0; i < holders.size(); ++i) {
      OutputHolder& h = *holders[i];
      array[i].dtype = static_cast<sy_dtype>(h.tensor.dtype());
      array[i].rank = h.tensor.shape().size();
      array[i].shape = h.tensor.shape().data();
      array[i].data = h.tensor.raw();
      array[i].name = h.name.c_str();
    }
    for (size_t i = 0; i < holders.size(); ++i) array[i].owner_ = holders[i].release();
    *n_outputs = order.size();
    *outputs = array.release();
  });
}

sy_status sy_executable_variable(const sy_executable* exe, const char* name, sy_tensor** value) {
  return guarded([&] {
    const char* fn = "sy_executable_variable";
    require(exe, "exe", fn);
    require(value, "value", fn);
    std::string n = require_string(name, "name", fn);
    auto holder = std::make_unique<OutputHolder>(OutputHolder{exe->exe.variable(n), n});
    auto array = std::make_unique<sy_tensor[]>(1);
    array[0].dtype = static_cast<sy_dtype>(holder->tensor.dtype());
    array[0].rank = holder->tensor.shape().size();
    array[0].shape = holder->tensor.shape().data();
    array[0].data = holder->tensor.raw();
    array[0].name = holder->name.c_str();
    array[0].owner_ = holder.release();
    *value = array.release();
  });
}

sy_status sy_executable_set_variable(const sy_executable* exe, const char* name,
                                     const sy_tensor* value) {
  return guarded([&] {
    const char* fn = "sy_executable_set_variable";
    require(exe, "exe", fn);
    require(value, "value", fn);
    exe->exe.set_variable(require_string(name, "name", fn), wrap_tensor(*value, fn));
  });
}

sy_status sy_executable_explain(const sy_executable* exe, const char* format, char** text) {
  return guarded([&] {
    require(exe, "exe", "sy_executable_explain");
    require(text, "text", "sy_executable_explain");
    std::string report = exe->exe.explain(format ? format : "text");
    auto* out = static_cast<char*>(std::malloc(report.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, report.c_str(), report.size() + 1);
    *text = out;
  });
}

sy_status sy_executable_save(const sy_executable* exe, const char* path) {
  return guarded([&] {
    require(exe, "exe", "sy_executable_save");
    exe->exe.save(require_string(path, "path", "sy_executable_save"));
  });
}

sy_status sy_executable_load(const char* path, const char* const* options, size_t n_options,
                             sy_executable** exe) {
  return guarded([&] {
    std::string p = require_string(path, "path", "sy_executable_load");
    require(exe, "exe", "sy_executable_load");
    switchyard::Options o = parse_options(options, n_options, "sy_executable_load");
    auto e = std::make_unique<sy_executable>(sy_executable{switchyard::Executable::load(p, o)});
    *exe = e.release();
  });
}

void sy_executable_free(sy_executable* exe) { delete exe; }

void sy_tensor_free(sy_tensor* tensors, size_t count) {
  if (tensors == nullptr) return;
  for (size_t i = 0; i < count; ++i) delete static_cast<OutputHolder*>(tensors[i].owner_);
  delete[] tensors;
}

void sy_string_free(char* text) { std::free(text); }

sy_status sy_builder_new(const char* graph_name, sy_builder** builder) {
  return guarded([&] {
    require(builder, "builder", "sy_builder_new");
    auto b = std::make_unique<sy_builder>();
    b->builder = std::make_unique<switchyard::GraphBuilder>(graph_name ? graph_name : "main");
    *builder = b.release();
  });
}

sy_status sy_builder_placeholder(sy_builder* b, const char* name, sy_dtype dtype,
                                 const int64_t* dims, const char* const* symbols, size_t rank,
                                 sy_value* value) {
  return guarded([&] {
    const char* fn = "sy_builder_placeholder";
    switchyard::GraphBuilder& g = live_builder(b, fn);
    std::string n = require_string(name, "name", fn);
    require(value, "value", fn);
    std::vector<switchyard::Dim> shape;
    for (size_t i = 0; i < rank; ++i) {
      if (symbols != nullptr && symbols[i] != nullptr)
        shape.emplace_back(std::string(symbols[i]));
      else
        shape.emplace_back(require(dims, "dims", fn)[i]);
    }
    *value = add_value(*b, g.placeholder(n, to_dtype(dtype, fn), std::move(shape)));
  });
}

sy_status sy_builder_constant(sy_builder* b, const char* name, const sy_tensor* tensor,
                              sy_value* value) {
  return guarded([&] {
    const char* fn = "sy_builder_constant";
    switchyard::GraphBuilder& g = live_builder(b, fn);
    require(tensor, "tensor", fn);
    require(value, "value", fn);
    *value = add_value(*b, g.constant(wrap_tensor(*tensor, fn), name ? name : ""));
  });
}

sy_status sy_builder_op(sy_builder* b, const char* op_type, const char* domain,
                        const sy_value* inputs, size_t n_inputs, const sy_attribute* attrs,
                        size_t n_attrs, size_t n_outputs, sy_value* outputs) {
  return guarded([&] {
    const char* fn = "sy_builder_op";
    switchyard::GraphBuilder& g = live_builder(b, fn);
    std::string type = require_string(op_type, "op_type", fn);
    if (domain != nullptr && *domain != '\0' && std::strcmp(domain, "ai.onnx") != 0)
      throw Error(ErrorCode::Unsupported,
                  fmt::format("{}: [{}] domain '{}' is not supported; only the default ONNX "
                              "domain is",
                              fn, type, domain));
    if (n_inputs > 0) require(inputs, "inputs", fn);
    if (n_attrs > 0) require(attrs, "attrs", fn);
    if (n_outputs > 0) require(outputs, "outputs", fn);
    std::vector<switchyard::Value> ins;
    for (size_t i = 0; i < n_inputs; ++i) ins.push_back(value_at(*b, inputs[i], fn));
    switchyard::Attributes attributes;
    for (size_t i = 0; i < n_attrs; ++i)
      attributes.emplace(require_string(attrs[i].name, "attr.name", fn),
                         to_attribute(attrs[i], fn));
    std::vector<switchyard::Value> outs = g.op(type, ins, attributes, static_cast<int>(n_outputs));
    if (outs.size() != n_outputs)
      invalid(fmt::format("{}: [{}] made {} outputs, {} were asked for", fn, type, outs.size(),
                          n_outputs));
    for (size_t i = 0; i < n_outputs; ++i) outputs[i] = add_value(*b, outs[i]);
  });
}

sy_status sy_builder_variable(sy_builder* b, const char* name, const sy_tensor* initial,
                              sy_value* value) {
  return guarded([&] {
    const char* fn = "sy_builder_variable";
    switchyard::GraphBuilder& g = live_builder(b, fn);
    std::string n = require_string(name, "name", fn);
    require(initial, "initial", fn);
    require(value, "value", fn);
    *value = add_value(*b, g.variable(n, wrap_tensor(*initial, fn)));
  });
}

sy_status sy_builder_assign(sy_builder* b, sy_value variable, sy_value value, sy_value* assigned) {
  return guarded([&] {
    const char* fn = "sy_builder_assign";
    switchyard::GraphBuilder& g = live_builder(b, fn);
    switchyard::Value out = g.assign(value_at(*b, variable, fn), value_at(*b, value, fn));
    sy_value index = add_value(*b, out);
    if (assigned) *assigned = index;
  });
}

sy_status sy_builder_control_dependency(sy_builder* b, const sy_value* dependents,
                                        size_t n_dependents, const sy_value* on, size_t n_on,
                                        sy_value* outputs) {
  return guarded([&] {
    const char* fn = "sy_builder_control_dependency";
    switchyard::GraphBuilder& g = live_builder(b, fn);
    if (n_dependents > 0) {
      require(dependents, "dependents", fn);
      require(outputs, "outputs", fn);
    }
    if (n_on > 0) require(on, "on", fn);
    std::vector<switchyard::Value> deps, after;
    for (size_t i = 0; i < n_dependents; ++i) deps.push_back(value_at(*b, dependents[i], fn));
    for (size_t i = 0; i < n_on; ++i) after.push_back(value_at(*b, on[i], fn));
    std::vector<switchyard::Value> outs = g.control_dependency(deps, after);
    for (size_t i = 0; i < outs.size(); ++i) outputs[i] = add_value(*b, outs[i]);
  });
}

sy_status sy_builder_outputs(sy_builder* b, const char* const* names, const sy_value* values,
                             size_t n) {
  return guarded([&] {
    const char* fn = "sy_builder_outputs";
    switchyard::GraphBuilder& g = live_builder(b, fn);
    if (n > 0) {
      require(names, "names", fn);
      require(values, "values", fn);
    }
    std::vector<std::pair<std::string, switchyard::Value>> named;
    for (size_t i = 0; i < n; ++i)
      named.emplace_back(require_string(names[i], "an output name", fn),
                         value_at(*b, values[i], fn));
    g.outputs(named);
  });
}

sy_status sy_builder_build(sy_builder* b, sy_model** model) {
  return guarded([&] {
    live_builder(b, "sy_builder_build");
    require(model, "model", "sy_builder_build");
    // Consumed whether or not the build succeeds: a failed build may leave it half moved.
    std::unique_ptr<switchyard::GraphBuilder> builder = std::move(b->builder);
    b->values.clear();
    auto m = std::make_unique<sy_model>();
    m->model = std::make_unique<switchyard::Model>(std::move(*builder).build());
    *model = m.release();
  });
}

void sy_builder_free(sy_builder* b) { delete b; }

}  // extern "C"
