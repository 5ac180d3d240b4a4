#include "runtime/executable.h"

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

  SY_CHECK(options_.max_in_flight >= 1 && options_.max_in_flight <= kMaxRunsInFlight,
           InvalidArgument, "Options.max_in_flight is {}; expected 1 to {} runs",
           options_.max_in_flight, kMaxRunsInFlight);
  link_steps();
  for (const auto& d : devices_) {
    int workers = d->device().concurrent_partitions;
    queues_.push_back(std::make_unique<DeviceQueue>(
        d->device().id, workers > 0 ? workers : options_.max_in_flight, num_threads_));
  }
}

Executable::~Executable() {
  {
    std::unique_lock<std::mutex> lock(flight_mutex_);
    flight_changed_.wait(lock, [&] { return in_flight_ == 0; });
  }
  queues_.clear();  // joins the workers while everything they might touch is still here
}

void Executable::link_steps() {
  const size_t num_steps = plan_.steps.size();
  const size_t num_values = plan_.values.size();
  const size_t num_devices = devices_.size();
  links_.assign(num_steps, StepLinks{});
  readers_.assign(num_values, 0);
  released_.assign(num_values, 0);
  // Replays the plan in order: which step produced each value, and which step last made it
  // present on each device (its producer, or a step whose copies brought it there).
  std::vector<int> producer(num_values, -1);
  std::vector<std::vector<int>> maker(num_values, std::vector<int>(num_devices, -1));
  auto check = [&](int id, int device) {
    SY_CHECK(id >= 0 && static_cast<size_t>(id) < num_values && device >= 0 &&
                 static_cast<size_t>(device) < num_devices,
             Internal, "Executable: the plan names value {} on device {}", id, device);
  };
  for (size_t p = 0; p < num_steps; ++p) {
    const ExecutionPlan::Step& step = plan_.steps[p];
    check(0, step.device);
    std::set<int> waits, reads;
    auto needs = [&](int id, int device) {
      check(id, device);
      reads.insert(id);
      for (int q : {producer[static_cast<size_t>(id)],
                    maker[static_cast<size_t>(id)][static_cast<size_t>(device)]})
        if (q >= 0) waits.insert(q);
    };
    for (const ExecutionPlan::Copy& c : step.copies_before) needs(c.value, c.from_device);
    for (const ExecutionPlan::Copy& c : step.shape_transfers_before) needs(c.value, c.from_device);
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      bool on_host = k < step.input_on_host.size() && step.input_on_host[k];
      needs(step.inputs[k], on_host ? 0 : step.device);
    }
    for (int q : step.after) {
      SY_CHECK(q >= 0 && static_cast<size_t>(q) < p, Internal,
               "Executable: step {} is ordered after step {}, which does not come before it", p, q);
      waits.insert(q);
    }
    for (const ExecutionPlan::Copy& c : step.copies_before) {
      check(c.value, c.to_device);
      maker[static_cast<size_t>(c.value)][static_cast<size_t>(c.to_device)] = static_cast<int>(p);
    }
    for (int id : step.outputs) {
      check(id, step.device);
      producer[static_cast<size_t>(id)] = static_cast<int>(p);
      maker[static_cast<size_t>(id)][static_cast<size_t>(step.device)] = static_cast<int>(p);
    }
    links_[p].dependencies = static_cast<int>(waits.size());
    for (int q : waits) links_[static_cast<size_t>(q)].dependents.push_back(static_cast<int>(p));
    links_[p].reads.assign(reads.begin(), reads.end());
    for (int id : reads) ++readers_[static_cast<size_t>(id)];
    for (int id : step.release_after) {
      check(id, 0);
      released_[static_cast<size_t>(id)] = 1;
    }
  }
  // A device where one step reads another's results (RunJob opens a run stream there).
  chained_on_.assign(num_devices, 0);
  for (size_t p = 0; p < num_steps; ++p)
    for (int q : links_[p].dependents)
      if (plan_.steps[static_cast<size_t>(q)].device == plan_.steps[p].device)
        chained_on_[static_cast<size_t>(plan_.steps[p].device)] = 1;
  // One chain: each step p reaches step p + 1 through the steps that wait for it.
  for (size_t p = 0; p + 1 < num_steps && one_chain_; ++p) {
    std::vector<char> seen(num_steps, 0);
    std::vector<int> work = {static_cast<int>(p)};
    bool reached = false;
    while (!work.empty() && !reached) {
      const int s = work.back();
      work.pop_back();
      for (int q : links_[static_cast<size_t>(s)].dependents) {
        if (static_cast<size_t>(q) == p + 1) reached = true;
        if (static_cast<size_t>(q) < p + 1 && !seen[static_cast<size_t>(q)]) {
          seen[static_cast<size_t>(q)] = 1;
          work.push_back(q);
        }
      }
    }
    one_chain_ = reached;
  }
}

void Executable::begin_flight() const {
  std::unique_lock<std::mutex> lock(flight_mutex_);
  flight_changed_.wait(lock, [&] { return in_flight_ < options_.max_in_flight; });
  ++in_flight_;
}

void Executable::end_flight() const {
  // Notified under the lock: a destructor waiting for the last run may free the condition
  // variable as soon as it can take the lock.
  std::lock_guard<std::mutex> lock(flight_mutex_);
  --in_flight_;
  flight_changed_.notify_all();
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
  ir::Tensor copy = value.clone();
  run_turn_.acquire();
  struct Turn {
    std::binary_semaphore& turn;
    ~Turn() { turn.release(); }
  } release_turn{run_turn_};
  std::lock_guard<std::mutex> lock(state_mutex_);
  auto next = std::make_shared<VariableValues>(*state_);
  (*next)[name] = std::move(copy);
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
  // Only a plan of one chain is over when start_run returns (it ran on this thread); any other
  // ends on the devices' workers, after this frame would be gone.
  if (!one_chain_) return run_async(std::move(inputs), stats, profiler, control).get();
  std::vector<ir::Datum> outputs;
  std::exception_ptr error;
  start_run(
      std::move(inputs),
      [&](std::vector<ir::Datum> out, std::exception_ptr e) {
        outputs = std::move(out);
        error = std::move(e);
      },
      stats, profiler, control, true);
  if (error) std::rethrow_exception(error);
  return outputs;
}

std::future<std::vector<ir::Datum>> Executable::run_async(std::vector<ir::Datum> inputs,
                                                          RunStats* stats,
                                                          runtime::Profiler* profiler,
                                                          const RunControl* control) const {
  auto promise = std::make_shared<std::promise<std::vector<ir::Datum>>>();
  std::future<std::vector<ir::Datum>> future = promise->get_future();
  start_run(
      std::move(inputs),
      [promise](std::vector<ir::Datum> outputs, std::exception_ptr error) {
        if (error) {
          promise->set_exception(std::move(error));
        } else {
          promise->set_value(std::move(outputs));
        }
      },
      stats, profiler, control);
  return future;
}

void Executable::start_run(std::vector<ir::Datum> inputs, RunDone done, RunStats* stats,
                           runtime::Profiler* profiler, const RunControl* control,
                           bool caller_waits) const {
  // The deadline counts from the call, waits for a place in flight or a turn included.
  const auto started = std::chrono::steady_clock::now();
  const RunControl no_control;
  if (variable_slots_.empty()) {
    try {
      launch_graph(std::move(inputs), done, stats, profiler, control ? *control : no_control,
                   started, caller_waits);
    } catch (...) {
      done({}, std::current_exception());
    }
    return;
  }
  bool turn = false;
  try {
    SY_CHECK(inputs.size() == user_inputs_.size(), InvalidArgument,
             "the model takes {} inputs, {} were given", user_inputs_.size(), inputs.size());
    const auto& graph_outputs = graph_->outputs();
    // Caller buffers come indexed by user output; the plan indexes every graph output.
    RunControl graph_control = control ? *control : no_control;
    graph_control.output_buffers.clear();
    for (size_t i = 0, u = 0;
         control && i < graph_outputs.size() && !control->output_buffers.empty(); ++i) {
      graph_control.output_buffers.emplace_back();
      if (!assign_output_[i] && u < control->output_buffers.size())
        graph_control.output_buffers.back() = control->output_buffers[u++];
    }
    // A run that assigns holds the turn from its read of the state to its commit: runs are
    // serializable, and concurrent increments are never lost.
    if (assigns_) {
      run_turn_.acquire();
      turn = true;
    }
    std::shared_ptr<const VariableValues> state = variables();
    std::vector<ir::Datum> all(graph_->inputs().size());
    std::vector<char> bound(all.size(), 0);
    for (const VariableSlot& v : variable_slots_) {
      all[v.input] = ir::Datum(state->at(v.name));
      bound[v.input] = 1;
    }
    for (size_t i = 0, u = 0; i < all.size(); ++i)
      if (!bound[i]) all[i] = std::move(inputs[u++]);
    RunDone commit = [this, state, turn, done](std::vector<ir::Datum> outs,
                                               std::exception_ptr error) {
      if (!error && assigns_) {
        try {
          auto next = std::make_shared<VariableValues>(*state);
          for (const VariableSlot& v : variable_slots_) {
            if (v.output < 0) continue;
            const ir::Datum& d = outs[static_cast<size_t>(v.output)];
            SY_CHECK(d.is_tensor() && d.tensor.dtype() == v.dtype && d.tensor.shape() == v.shape,
                     InvalidArgument,
                     "variable '{}': the run assigned it {} {}, but the variable is {} {}; "
                     "nothing was assigned",
                     v.name, d.is_tensor() ? ir::dtype_name(d.tensor.dtype()) : "a non-tensor",
                     d.is_tensor() ? ir::shape_to_string(d.tensor.shape()) : std::string(),
                     ir::dtype_name(v.dtype), ir::shape_to_string(v.shape));
            // A copy: the state owns its memory, apart from the run's pools and the caller's.
            (*next)[v.name] = d.tensor.clone();
          }
          std::lock_guard<std::mutex> lock(state_mutex_);
          state_ = std::move(next);
        } catch (...) {
          error = std::current_exception();
        }
      }
      if (turn) run_turn_.release();
      std::vector<ir::Datum> results;
      for (size_t i = 0; !error && i < outs.size(); ++i)
        if (!assign_output_[i]) results.push_back(std::move(outs[i]));
      done(std::move(results), std::move(error));
    };
    launch_graph(std::move(all), commit, stats, profiler, graph_control, started, caller_waits);
  } catch (...) {
    // Nothing was started: the turn (if taken) is free again.
    if (turn) run_turn_.release();
    done({}, std::current_exception());
  }
}

std::vector<ir::Datum> Executable::order_inputs(
    const std::map<std::string, ir::Datum>& inputs) const {
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
  return ordered;
}

std::vector<ir::Datum> Executable::run(const std::map<std::string, ir::Datum>& inputs,
                                       RunStats* stats, runtime::Profiler* profiler,
                                       const RunControl* control) const {
  return run(order_inputs(inputs), stats, profiler, control);
}

}  // namespace switchyard::runtime
