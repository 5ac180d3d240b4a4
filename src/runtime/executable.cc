#include "runtime/executable.h"

#include <omp.h>

#include <chrono>
#include <set>
#include <thread>
#include <unordered_map>

#include "ir/check.h"

namespace switchyard::runtime {

namespace {

std::string datum_signature(const ir::Datum& d) {
  if (d.is_tensor())
    return fmt::format("{}{}", ir::dtype_name(d.tensor.dtype()),
                       ir::shape_to_string(d.tensor.shape()));
  if (d.is_sequence()) {
    std::string s = "seq(";
    for (const auto& t : d.sequence) s += ir::shape_to_string(t.shape()) + ";";
    return s + ")";
  }
  return "none";
}

// An output's dtype is the one the model declares (compile refuses models whose nodes produce
// another); a kernel that disagreed with type inference would break that promise.
void check_output_dtype(const ir::Value& v, const ir::Datum& d) {
  const ir::Type* t = &v.type();
  if (t->is_optional() && t->element) t = t->element.get();
  ir::DType got = ir::DType::Undefined;
  if (d.is_tensor() && t->is_tensor()) {
    got = d.tensor.dtype();
  } else if (d.is_sequence() && t->is_sequence() && t->element && t->element->is_tensor()) {
    t = t->element.get();
    got = d.sequence_dtype;
  }
  SY_CHECK(got == ir::DType::Undefined || t->dtype == ir::DType::Undefined || got == t->dtype,
           Internal, "output '{}' came out as {}, but its type is {}", v.name(),
           ir::dtype_name(got), ir::dtype_name(t->dtype));
}

}  // namespace

Executable::Executable(std::unique_ptr<ir::Graph> graph,
                       std::vector<std::shared_ptr<const Device>> devices, ExecutionPlan plan,
                       const RuntimeOptions& options)
    : graph_(std::move(graph)),
      devices_(std::move(devices)),
      plan_(std::move(plan)),
      options_(options),
      num_threads_(options.num_threads > 0
                       ? options.num_threads
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {
  SY_CHECK(graph_ != nullptr, Internal, "Executable: no graph");
  SY_CHECK(!devices_.empty() && devices_[0]->device().is_host, Internal,
           "Executable: the host cpu must be the first device");
  SY_CHECK(plan_.values.size() >= graph_->inputs().size(), Internal,
           "Executable: the plan's values do not start with the graph inputs");
  for (size_t i = 0; i < plan_.values.size(); ++i)
    value_ids_.emplace(plan_.values[i], static_cast<int>(i));

  const auto& graph_inputs = graph_->inputs();
  const auto& graph_outputs = graph_->outputs();
  assign_output_.assign(graph_outputs.size(), 0);
  auto state = std::make_shared<VariableValues>();
  for (const ir::Variable& var : graph_->variables()) {
    VariableSlot slot;
    slot.name = var.name;
    slot.dtype = var.initial.dtype();
    slot.shape = var.initial.shape();
    slot.input = graph_inputs.size();
    for (size_t i = 0; i < graph_inputs.size(); ++i)
      if (graph_inputs[i]->name() == var.name) slot.input = i;
    SY_CHECK(slot.input < graph_inputs.size(), Internal, "variable '{}' is not a graph input",
             var.name);
    for (size_t i = 0; i < graph_outputs.size() && !var.assigned.empty(); ++i)
      if (graph_outputs[i]->name() == var.assigned) slot.output = static_cast<int>(i);
    SY_CHECK(var.assigned.empty() || slot.output >= 0, Internal,
             "the assign '{}' of variable '{}' is not a graph output", var.assigned, var.name);
    if (slot.output >= 0) {
      assign_output_[static_cast<size_t>(slot.output)] = 1;
      assigns_ = true;
    }
    state->emplace(var.name, var.initial);
    variable_slots_.push_back(std::move(slot));
  }
  state_ = std::move(state);
  for (const ir::Value* v : graph_inputs)
    if (!graph_->find_variable(v->name())) user_inputs_.push_back(v);
  for (size_t i = 0; i < graph_outputs.size(); ++i)
    if (!assign_output_[i]) user_outputs_.push_back(graph_outputs[i]);
}

std::shared_ptr<const VariableValues> Executable::variables() const {
  std::lock_guard<std::mutex> lock(state_mutex_);
  return state_;
}

void Executable::set_variable(const std::string& name, const ir::Tensor& value) const {
  const VariableSlot* slot = nullptr;
  for (const VariableSlot& s : variable_slots_)
    if (s.name == name) slot = &s;
  if (!slot) {
    std::vector<std::string> names;
    for (const VariableSlot& s : variable_slots_) names.push_back(s.name);
    SY_THROW(InvalidArgument, "set_variable: the model has no variable '{}' (its variables: {})",
             name, names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
  }
  SY_CHECK(value.defined() && value.dtype() == slot->dtype && value.shape() == slot->shape,
           InvalidArgument, "set_variable '{}': the value is {} {}, the variable is {} {}", name,
           value.defined() ? ir::dtype_name(value.dtype()) : "undefined",
           value.defined() ? ir::shape_to_string(value.shape()) : std::string("[]"),
           ir::dtype_name(slot->dtype), ir::shape_to_string(slot->shape));
  SY_CHECK(devices_[0]->owns(value), InvalidArgument,
           "set_variable '{}': the value is in a device's memory; variables live in host memory",
           name);
  // After the assigning run in flight, if any: its commit must not overwrite this value.
  std::lock_guard<std::mutex> serial(run_mutex_);
  std::lock_guard<std::mutex> lock(state_mutex_);
  auto next = std::make_shared<VariableValues>(*state_);
  (*next)[name] = value.clone();
  state_ = std::move(next);
}

std::string Executable::check_inputs(const std::vector<ir::Datum>& inputs) const {
  const auto& declared = graph_->inputs();
  SY_CHECK(inputs.size() == declared.size(), InvalidArgument,
           "the model takes {} inputs, {} were given", declared.size(), inputs.size());
  std::unordered_map<std::string, std::pair<int64_t, std::string>> symbols;
  std::string signature;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value& v = *declared[i];
    const ir::Type& type = v.type();
    const ir::Datum& d = inputs[i];
    signature += datum_signature(d) + "|";
    if (type.is_optional() && d.is_empty()) continue;
    const ir::Type& want = type.is_optional() && type.element ? *type.element : type;
    if (want.is_sequence()) {
      SY_CHECK(d.is_sequence(), InvalidArgument, "input '{}': expected a sequence", v.name());
      continue;
    }
    if (!want.is_tensor()) continue;
    SY_CHECK(d.is_tensor(), InvalidArgument, "input '{}': expected a tensor of {}", v.name(),
             want.to_string());
    const ir::Tensor& t = d.tensor;
    SY_CHECK(t.dtype() == want.dtype, InvalidArgument, "input '{}': dtype {} given, expected {}",
             v.name(), ir::dtype_name(t.dtype()), ir::dtype_name(want.dtype));
    if (!want.shape) continue;
    SY_CHECK(t.rank() == want.rank(), InvalidArgument,
             "input '{}': rank {} given (shape {}), expected rank {} ({})", v.name(), t.rank(),
             ir::shape_to_string(t.shape()), want.rank(), ir::shape_to_string(*want.shape));
    for (size_t k = 0; k < want.shape->size(); ++k) {
      const ir::Dim& dim = (*want.shape)[k];
      int64_t got = t.shape()[k];
      if (dim.is_static()) {
        SY_CHECK(got == dim.value, InvalidArgument,
                 "input '{}': dim {} is {}, expected {} (shape {} given, {} declared)", v.name(), k,
                 got, dim.value, ir::shape_to_string(t.shape()), ir::shape_to_string(*want.shape));
      } else if (dim.is_symbolic()) {
        auto [it, fresh] = symbols.emplace(dim.symbol, std::make_pair(got, v.name()));
        SY_CHECK(fresh || it->second.first == got, InvalidArgument,
                 "input '{}': dim '{}' is {}, but input '{}' gave it {}", v.name(), dim.symbol, got,
                 it->second.second, it->second.first);
      }
    }
  }
  return signature;
}

Executable::PoolSet Executable::acquire_pools(const std::string& signature, bool* hit) const {
  auto fresh_set = [&] {
    PoolSet set;
    for (const auto& d : devices_) {
      auto budget = options_.memory_budgets.find(d->device().id);
      set.push_back(d->create_pool(options_.poison_buffers, budget == options_.memory_budgets.end()
                                                                ? nullptr
                                                                : budget->second));
      auto limit = options_.run_memory_limits.find(d->device().id);
      if (limit != options_.run_memory_limits.end() && limit->second > 0)
        set.back()->set_limit(limit->second, d->device().id);
    }
    return set;
  };
  std::lock_guard<std::mutex> lock(cache_mutex_);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->signature != signature) continue;
    cache_.splice(cache_.begin(), cache_, it);  // most recently used first
    *hit = true;
    if (!it->idle.empty()) {
      PoolSet set = std::move(it->idle.back());
      it->idle.pop_back();
      return set;
    }
    return fresh_set();
  }
  *hit = false;
  cache_.push_front(CacheEntry{signature, {}});
  while (cache_.size() > std::max<size_t>(options_.shape_cache_capacity, 1)) cache_.pop_back();
  return fresh_set();
}

void Executable::release_pools(const std::string& signature, PoolSet pools) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  for (auto& entry : cache_) {
    if (entry.signature == signature) {
      // Keep a few idle sets per signature for concurrent runs; more would only hold memory.
      if (entry.idle.size() < 4) entry.idle.push_back(std::move(pools));
      return;
    }
  }
}

size_t Executable::cached_shape_signatures() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.size();
}

std::vector<ir::Datum> Executable::run(std::vector<ir::Datum> inputs, RunStats* stats,
                                       runtime::Profiler* profiler,
                                       const RunControl* control) const {
  if (variable_slots_.empty()) return run_graph(std::move(inputs), stats, profiler, control);
  return run_with_variables(std::move(inputs), stats, profiler, control);
}

std::vector<ir::Datum> Executable::run_with_variables(std::vector<ir::Datum> inputs,
                                                      RunStats* stats, runtime::Profiler* profiler,
                                                      const RunControl* control) const {
  SY_CHECK(inputs.size() == user_inputs_.size(), InvalidArgument,
           "the model takes {} inputs, {} were given", user_inputs_.size(), inputs.size());
  const auto& graph_outputs = graph_->outputs();
  // Caller buffers come indexed by user output; the plan indexes every graph output.
  RunControl graph_control;
  if (control) {
    graph_control = *control;
    graph_control.output_buffers.clear();
    for (size_t i = 0, u = 0; i < graph_outputs.size() && !control->output_buffers.empty(); ++i) {
      graph_control.output_buffers.emplace_back();
      if (!assign_output_[i] && u < control->output_buffers.size())
        graph_control.output_buffers.back() = control->output_buffers[u++];
    }
  }
  // A run that assigns holds the lock from its read of the state to its commit: runs are
  // serializable, and concurrent increments are never lost.
  std::unique_lock<std::mutex> serial(run_mutex_, std::defer_lock);
  if (assigns_) serial.lock();
  std::shared_ptr<const VariableValues> state = variables();
  std::vector<ir::Datum> all(graph_->inputs().size());
  std::vector<char> bound(all.size(), 0);
  for (const VariableSlot& v : variable_slots_) {
    all[v.input] = ir::Datum(state->at(v.name));
    bound[v.input] = 1;
  }
  for (size_t i = 0, u = 0; i < all.size(); ++i)
    if (!bound[i]) all[i] = std::move(inputs[u++]);
  std::vector<ir::Datum> outs =
      run_graph(std::move(all), stats, profiler, control ? &graph_control : nullptr);
  if (assigns_) {
    auto next = std::make_shared<VariableValues>(*state);
    for (const VariableSlot& v : variable_slots_) {
      if (v.output < 0) continue;
      const ir::Datum& d = outs[static_cast<size_t>(v.output)];
      SY_CHECK(d.is_tensor() && d.tensor.dtype() == v.dtype && d.tensor.shape() == v.shape,
               InvalidArgument,
               "variable '{}': the run assigned it {} {}, but the variable is {} {}; nothing was "
               "assigned",
               v.name, d.is_tensor() ? ir::dtype_name(d.tensor.dtype()) : "a non-tensor",
               d.is_tensor() ? ir::shape_to_string(d.tensor.shape()) : std::string(),
               ir::dtype_name(v.dtype), ir::shape_to_string(v.shape));
      // A copy: the state owns its memory, apart from the run's pools and the caller's tensors.
      (*next)[v.name] = d.tensor.clone();
    }
    std::lock_guard<std::mutex> lock(state_mutex_);
    state_ = std::move(next);
  }
  std::vector<ir::Datum> results;
  for (size_t i = 0; i < outs.size(); ++i)
    if (!assign_output_[i]) results.push_back(std::move(outs[i]));
  return results;
}

std::vector<ir::Datum> Executable::run_graph(std::vector<ir::Datum> inputs, RunStats* stats,
                                             runtime::Profiler* profiler,
                                             const RunControl* control) const {
  auto started = std::chrono::steady_clock::now();
  std::string signature = check_inputs(inputs);
  bool hit = false;
  PoolSet pools = acquire_pools(signature, &hit);
  for (auto& pool : pools) pool->reset_peak();
  runtime::RunState state;
  state.num_threads = num_threads_;
  state.profiler = profiler;
  if (control) {
    state.cancel_flag = control->cancel_flag;
    state.caller_queue = control->caller_queue;
    if (control->deadline_ms > 0) {
      state.deadline_ms = control->deadline_ms;
      state.deadline = started + std::chrono::milliseconds(control->deadline_ms);
    }
  }
  // OpenMP's thread count is per calling thread, so concurrent runs do not disturb each other.
  omp_set_num_threads(num_threads_);
  int64_t run_start = profiler ? profiler->now_us() : 0;

  // Each crossing value, per device where a copy of it lives. An input starts on the device
  // whose memory holds it (the host unless a caller passed device memory).
  const std::vector<const ir::Value*>& values = plan_.values;
  size_t num_devices = devices_.size();
  std::vector<std::vector<ir::Datum>> where(values.size(), std::vector<ir::Datum>(num_devices));
  std::vector<std::vector<char>> present(values.size(), std::vector<char>(num_devices, 0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    size_t at = 0;
    if (inputs[i].is_tensor() && !devices_[0]->owns(inputs[i].tensor)) {
      for (size_t d = 1; d < num_devices; ++d)
        if (devices_[d]->owns(inputs[i].tensor)) at = d;
      if (at == 0) {
        std::vector<const DeviceInfo*> infos;
        for (const auto& d : devices_) infos.push_back(&d->device());
        SY_THROW(InvalidArgument,
                 "input '{}' is in the memory of a device this executable does not use ({})",
                 graph_->inputs()[i]->name(), device_list_text(infos));
      }
    }
    where[i][at] = std::move(inputs[i]);
    present[i][at] = 1;
  }
  int copies = 0;
  size_t copied_bytes = 0;
  // Where value `id` is read from: device `preferred` when it is there, else the first device
  // that has it (the host first), which must exist (`who` needs it).
  auto source_of = [&](size_t id, size_t preferred, size_t who) {
    if (present[id][preferred]) return preferred;
    for (size_t d = 0; d < num_devices; ++d)
      if (present[id][d]) return d;
    SY_THROW(Internal, "value '{}' is on no device when {} needs it", values[id]->name(),
             devices_[who]->device().id);
  };
  // Makes value `id` present on device `to`, copying from `from` when it is there, else from
  // wherever it is (the host first): a planned copy of a value that is already where it goes
  // (a caller's device input) is skipped.
  auto ensure = [&](size_t id, size_t to, size_t from) {
    if (present[id][to]) return;
    from = source_of(id, from, to);
    int64_t start = profiler ? profiler->now_us() : 0;
    const ir::Datum& src = where[id][from];
    // A device whose memory host code cannot read copies its values out itself.
    const Device& source = *devices_[from];
    where[id][to] = !source.device().host_addressable && devices_[to]->device().host_addressable
                        ? source.copy_out(src, *pools[to])
                        : devices_[to]->copy_in(src, *pools[to]);
    present[id][to] = 1;
    ++copies;
    size_t bytes = src.is_tensor() ? src.tensor.nbytes() : 0;
    for (const auto& t : src.sequence) bytes += t.nbytes();
    copied_bytes += bytes;
    if (profiler) {
      runtime::ProfileEvent e;
      e.name = fmt::format("copy {} {}->{}", values[id]->name(), devices_[from]->device().id,
                           devices_[to]->device().id);
      e.op = "Copy";
      e.device = devices_[to]->device().id;
      e.category = "Copy";
      e.start_us = start;
      e.duration_us = profiler->now_us() - start;
      if (src.is_tensor()) e.input_shapes.push_back(ir::shape_to_string(src.tensor.shape()));
      profiler->record(std::move(e));
    }
  };
  auto do_copy = [&](const ExecutionPlan::Copy& c) {
    ensure(static_cast<size_t>(c.value), static_cast<size_t>(c.to_device),
           static_cast<size_t>(c.from_device));
  };

  for (size_t p = 0; p < plan_.steps.size(); ++p) {
    const ExecutionPlan::Step& step = plan_.steps[p];
    size_t pd = static_cast<size_t>(step.device);
    for (const ExecutionPlan::Copy& c : step.copies_before) do_copy(c);
    std::map<int, ir::Datum> shape_only;
    for (const ExecutionPlan::Copy& c : step.shape_transfers_before) {
      // Only the shape crosses: a tensor without data, read by Shape/Size alone.
      size_t id = static_cast<size_t>(c.value);
      const ir::Datum& src = where[id][source_of(id, static_cast<size_t>(c.from_device), pd)];
      SY_ASSERT(src.is_tensor());
      shape_only[c.value] =
          ir::Datum(ir::Tensor::wrap(src.tensor.dtype(), src.tensor.shape(), nullptr, nullptr));
    }
    std::vector<ir::Datum> part_inputs;
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      int id = step.inputs[k];
      size_t at = k < step.input_on_host.size() && step.input_on_host[k] ? 0 : pd;
      // A caller's device input read elsewhere than where it is: copied there now.
      if (!shape_only.count(id)) ensure(static_cast<size_t>(id), at, 0);
      if (present[static_cast<size_t>(id)][at]) {
        part_inputs.push_back(where[static_cast<size_t>(id)][at]);
      } else {
        auto it = shape_only.find(id);
        SY_CHECK(it != shape_only.end(), Internal, "value '{}' is not on {} for partition {}",
                 values[static_cast<size_t>(id)]->name(), devices_[pd]->device().id, p);
        part_inputs.push_back(it->second);
      }
    }
    if (step.first_node) state.check_stop(*step.first_node);
    state.pool = pools[pd];
    state.device = devices_[pd]->device().id;
    std::vector<ir::Datum> outs = step.partition->run(std::move(part_inputs), state);
    for (size_t i = 0; i < outs.size(); ++i) {
      size_t id = static_cast<size_t>(step.outputs[i]);
      where[id][pd] = std::move(outs[i]);
      present[id][pd] = 1;
    }
    for (int id : step.release_after) {
      for (size_t d = 0; d < num_devices; ++d) {
        where[static_cast<size_t>(id)][d] = ir::Datum();
        present[static_cast<size_t>(id)][d] = 0;
      }
    }
  }
  size_t out_device = control ? static_cast<size_t>(control->output_device) : 0;
  SY_CHECK(out_device < num_devices, InvalidArgument,
           "the outputs' device index {} is out of range", out_device);
  if (out_device == 0)
    for (const ExecutionPlan::Copy& c : plan_.final_copies) do_copy(c);

  std::vector<ir::Datum> outputs;
  for (size_t o = 0; o < graph_->outputs().size(); ++o) {
    const ir::Value* v = graph_->outputs()[o];
    // A variable's assign is committed from host memory, wherever the outputs go.
    const size_t out_at = assign_output_[o] ? 0 : out_device;
    if (v->is_constant()) {
      outputs.emplace_back(v->constant());
      if (out_at != 0) {
        outputs.back() = devices_[out_device]->copy_in(outputs.back(), *pools[out_device]);
        ++copies;
        copied_bytes += v->constant().nbytes();
      }
      continue;
    }
    auto found = value_ids_.find(v);
    int id = found == value_ids_.end() ? -1 : found->second;
    SY_CHECK(id >= 0, Internal, "output '{}' is not in the plan", v->name());
    ensure(static_cast<size_t>(id), out_at, 0);
    outputs.push_back(where[static_cast<size_t>(id)][out_at]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) check_output_dtype(*graph_->outputs()[i], outputs[i]);
  // Caller buffers: each output written into its buffer on the buffer's device (a copy).
  for (size_t i = 0; control && i < control->output_buffers.size() && i < outputs.size(); ++i) {
    const ir::Tensor& buffer = control->output_buffers[i];
    if (!buffer.defined()) continue;
    const ir::Value& v = *graph_->outputs()[i];
    size_t at = num_devices;
    for (size_t d = 0; d < num_devices && at == num_devices; ++d)
      if (devices_[d]->owns(buffer)) at = d;
    SY_CHECK(at < num_devices, InvalidArgument,
             "the buffer for output '{}' is in the memory of a device this executable does not use",
             v.name());
    SY_CHECK(outputs[i].is_tensor(), InvalidArgument,
             "output '{}' is not a tensor; it cannot be written into a buffer", v.name());
    ir::Tensor result = outputs[i].tensor;
    SY_CHECK(result.dtype() == buffer.dtype() && result.shape() == buffer.shape(), InvalidArgument,
             "output '{}' is {} {}; the buffer given for it is {} {}", v.name(),
             ir::dtype_name(result.dtype()), ir::shape_to_string(result.shape()),
             ir::dtype_name(buffer.dtype()), ir::shape_to_string(buffer.shape()));
    if (at != out_device && !v.is_constant()) {
      auto found = value_ids_.find(&v);
      ensure(static_cast<size_t>(found->second), at, out_device);
      result = where[static_cast<size_t>(found->second)][at].tensor;
    }
    devices_[at]->copy_into(result, buffer);
    ++copies;
    copied_bytes += buffer.nbytes();
    outputs[i] = ir::Datum(buffer);
  }
  if (profiler) {
    runtime::ProfileEvent e;
    e.name = "model_run";
    e.op = "run";
    e.device = "cpu";
    e.category = "Session";
    e.start_us = run_start;
    e.duration_us = profiler->now_us() - run_start;
    profiler->record(std::move(e));
  }
  if (stats) {
    stats->peak_bytes = 0;
    for (const auto& pool : pools) stats->peak_bytes += pool->peak_bytes();
    stats->shape_cache_hit = hit;
    stats->shape_signature = signature;
    stats->copies = copies;
    stats->copied_bytes = copied_bytes;
  }
  release_pools(signature, std::move(pools));
  return outputs;
}

std::vector<ir::Datum> Executable::run(const std::map<std::string, ir::Datum>& inputs,
                                       RunStats* stats, runtime::Profiler* profiler,
                                       const RunControl* control) const {
  std::vector<ir::Datum> ordered;
  size_t used = 0;
  for (const auto& [name, d] : inputs)
    SY_CHECK(!graph_->find_variable(name), InvalidArgument,
             "'{}' is a variable of the model, not an input: the executable binds it (set it "
             "with set_variable)",
             name);
  for (const ir::Value* v : user_inputs_) {
    auto it = inputs.find(v->name());
    SY_CHECK(it != inputs.end(), InvalidArgument, "input '{}' is missing (expected {})", v->name(),
             v->type().to_string());
    ordered.push_back(it->second);
    ++used;
  }
  if (used != inputs.size()) {
    for (const auto& [name, d] : inputs) {
      bool known = false;
      for (const ir::Value* v : user_inputs_) known = known || v->name() == name;
      SY_CHECK(known, InvalidArgument, "'{}' is not an input of the model", name);
    }
  }
  return run(std::move(ordered), stats, profiler, control);
}

}  // namespace switchyard::runtime
