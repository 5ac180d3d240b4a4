// One run of an executable's plan (RunJob): each step — a partition with the copies before it —
// is queued on its device's DeviceQueue once every step it reads from is done (the dependencies
// Executable::link_steps found), so partitions on different devices run at the same time; the
// last step to finish assembles the outputs and hands them to the run's callback. A step that
// fails fails its run only: the steps after it are skipped, the others end, and the run reports
// the first error. A synchronous run (Executable::run) of a plan whose steps form one chain runs
// its steps on the calling thread instead: that thread would only wait, and each hand-over to a
// worker and back costs two thread wake-ups (about 0.1 ms of a 1 ms model on a 2-core VM). A
// device that gives each run a stream (Device::open_run_stream: a GPU) gets one when the run
// starts: the run's partitions there leave their work queued on it, so one that reads another's
// results on the same device follows it in the stream without a host wait; the host waits for
// the stream only where a copy enters or leaves the device, and at the run's end.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "ir/check.h"
#include "runtime/executable.h"

namespace switchyard::runtime {

namespace {

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

size_t datum_bytes(const ir::Datum& d) {
  size_t bytes = d.is_tensor() ? d.tensor.nbytes() : 0;
  for (const auto& t : d.sequence) bytes += t.nbytes();
  return bytes;
}

}  // namespace

class RunJob : public std::enable_shared_from_this<RunJob> {
 public:
  // Places the inputs on the devices whose memory holds them; throws InvalidArgument for one in
  // the memory of a device the executable does not use, or a bad output device.
  RunJob(const Executable& exe, std::vector<ir::Datum> inputs, const Executable::RunDone& done,
         RunStats* stats, Profiler* profiler, const RunControl& control,
         std::chrono::steady_clock::time_point started)
      : exe_(exe),
        plan_(exe.plan_),
        done_(done),
        stats_(stats),
        profiler_(profiler),
        control_(control) {
    const size_t num_devices = exe.devices_.size();
    out_device_ = static_cast<size_t>(control.output_device);
    SY_CHECK(control.output_device >= 0 && out_device_ < num_devices, InvalidArgument,
             "the outputs' device index {} is out of range", control.output_device);
    base_.num_threads = exe.num_threads_;
    base_.profiler = profiler;
    base_.cancel_flag = control.cancel_flag;
    base_.caller_queue = control.caller_queue;
    if (control.deadline_ms > 0) {
      base_.deadline_ms = control.deadline_ms;
      base_.deadline = started + std::chrono::milliseconds(control.deadline_ms);
    }
    // Each crossing value, per device where a copy of it lives. An input starts on the device
    // whose memory holds it (the host unless a caller passed device memory).
    where_.assign(plan_.values.size(), std::vector<ir::Datum>(num_devices));
    present_.assign(plan_.values.size(), std::vector<char>(num_devices, 0));
    for (size_t i = 0; i < inputs.size(); ++i) {
      size_t at = 0;
      if (inputs[i].is_tensor() && !exe.devices_[0]->owns(inputs[i].tensor)) {
        for (size_t d = 1; d < num_devices; ++d)
          if (exe.devices_[d]->owns(inputs[i].tensor)) at = d;
        if (at == 0) {
          std::vector<const DeviceInfo*> infos;
          for (const auto& d : exe.devices_) infos.push_back(&d->device());
          SY_THROW(InvalidArgument,
                   "input '{}' is in the memory of a device this executable does not use ({})",
                   exe.graph_->inputs()[i]->name(), device_list_text(infos));
        }
      }
      where_[i][at] = std::move(inputs[i]);
      present_[i][at] = 1;
    }
    lanes_ = std::make_unique<Lane[]>(num_devices);
    waiting_.resize(plan_.steps.size());
    for (size_t p = 0; p < plan_.steps.size(); ++p) waiting_[p] = exe.links_[p].dependencies;
    readers_left_ = exe.readers_;
    steps_left_ = plan_.steps.size();
  }

  // Queues the steps that wait for nothing (or ends a plan without steps). Never throws: every
  // failure reaches the callback.
  void start(Executable::PoolSet pools, std::string signature, bool hit, bool on_caller) {
    on_caller_ = on_caller;
    pools_ = std::move(pools);
    signature_ = std::move(signature);
    hit_ = hit;
    run_start_ = profiler_ ? profiler_->now_us() : 0;
    if (plan_.steps.empty()) {
      finish();
      return;
    }
    try {
      // Only where one of the run's partitions reads another's results on the same device: a
      // stream held for the whole run buys nothing else, and a partition that ends with its
      // own wait frees its device for the next run sooner (a GPU part followed by a cpu tail,
      // with runs in flight, went from 664 to 229 runs/s with a stream per run everywhere).
      for (size_t d = 0; d < exe_.devices_.size(); ++d)
        if (exe_.chained_on_[d]) lanes_[d].stream = exe_.devices_[d]->open_run_stream();
    } catch (...) {
      fail(std::current_exception());
      finish();
      return;
    }
    std::vector<int> unqueued;
    for (size_t p = 0; p < plan_.steps.size(); ++p)
      if (exe_.links_[p].dependencies == 0 && !dispatch(static_cast<int>(p)))
        unqueued.push_back(static_cast<int>(p));
    for (int p : unqueued) step_done(p);
  }

 private:
  // Queues step `p` on its device; false (the run failed) when no worker could take it.
  bool dispatch(int p) {
    size_t device = static_cast<size_t>(plan_.steps[static_cast<size_t>(p)].device);
    if (on_caller_) {
      // As a worker of the device would run it: with the executable's OpenMP thread count.
      const int saved = omp_get_max_threads();
      omp_set_num_threads(exe_.num_threads_);
      run_step(p);
      omp_set_num_threads(saved);
      return true;
    }
    try {
      exe_.queues_[device]->push([self = shared_from_this(), p] { self->run_step(p); });
      handoffs_.fetch_add(1, std::memory_order_relaxed);
      return true;
    } catch (...) {
      fail(std::current_exception());
      return false;
    }
  }

  void fail(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::move(error);
    failed_ = true;
  }

  void run_step(int p) {
    if (!failed_) {
      try {
        execute(static_cast<size_t>(p));
      } catch (...) {
        fail(std::current_exception());
      }
    }
    step_done(p);
  }

  // Step `p` is over: values no step reads any more are dropped, and the steps that waited only
  // for it are queued (or, once the run failed, passed over in turn). The last step ends the run.
  void step_done(int p) {
    std::vector<int> over{p};
    bool last = false;
    while (!over.empty()) {
      const size_t s = static_cast<size_t>(over.back());
      over.pop_back();
      std::vector<int> ready;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (int id : exe_.links_[s].reads) {
          const size_t v = static_cast<size_t>(id);
          if (exe_.released_[v] && --readers_left_[v] == 0)
            for (size_t d = 0; d < where_[v].size(); ++d) {
              where_[v][d] = ir::Datum();
              present_[v][d] = 0;
            }
        }
        for (int d : exe_.links_[s].dependents)
          if (--waiting_[static_cast<size_t>(d)] == 0) ready.push_back(d);
        if (--steps_left_ == 0) last = true;
      }
      for (int r : ready)
        if (failed_ || !dispatch(r)) over.push_back(r);
    }
    if (last) finish();
  }

  // Where value `id` is read from: device `preferred` when it is there, else the first device
  // that has it (the host first), which must exist (`who` needs it). Under mutex_.
  size_t source_of(size_t id, size_t preferred, size_t who) const {
    if (present_[id][preferred]) return preferred;
    for (size_t d = 0; d < present_[id].size(); ++d)
      if (present_[id][d]) return d;
    SY_THROW(Internal, "value '{}' is on no device when {} needs it", plan_.values[id]->name(),
             exe_.devices_[who]->device().id);
  }

  // Waits for the work the run queued on device `d`'s stream (a host wait when there was some);
  // throws the first fault that work found. Under the lane's turn.
  void synchronize_lane(size_t d) {
    if (lanes_[d].stream->synchronize()) host_syncs_.fetch_add(1, std::memory_order_relaxed);
  }

  // Takes the turns of devices `a` and `b` where the run has a stream, in device order, and
  // waits for the work queued there (throwing the first fault it found): a copy in or out then
  // sees that work done, and no partition queues more there until the turns are given back.
  std::vector<std::unique_lock<std::mutex>> drain(size_t a, size_t b) {
    std::vector<std::unique_lock<std::mutex>> turns;
    for (size_t d : {std::min(a, b), std::max(a, b)}) {
      if (!lanes_[d].stream || (a == b && !turns.empty())) continue;
      turns.emplace_back(lanes_[d].turn);
      synchronize_lane(d);
    }
    return turns;
  }

  // Makes value `id` present on device `to`, copying from `from` when it is there, else from
  // wherever it is (the host first): a planned copy of a value that is already where it goes
  // (a caller's device input) is skipped. A simulated device with modelled timing holds the
  // copying thread for the copy's modelled time.
  void ensure(size_t id, size_t to, size_t from) {
    ir::Datum src;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (present_[id][to]) return;
      from = source_of(id, from, to);
      src = where_[id][from];
    }
    std::vector<std::unique_lock<std::mutex>> turns = drain(from, to);
    const int64_t start = profiler_ ? profiler_->now_us() : 0;
    const auto started = std::chrono::steady_clock::now();
    // A device whose memory host code cannot read copies its values out itself.
    const Device& source = *exe_.devices_[from];
    const Device& target = *exe_.devices_[to];
    ir::Datum copy = !source.device().host_addressable && target.device().host_addressable
                         ? source.copy_out(src, *pools_[to])
                         : target.copy_in(src, *pools_[to]);
    const size_t bytes = datum_bytes(src);
    const double modelled_us = source.simulated_copy_us(bytes) + target.simulated_copy_us(bytes);
    if (modelled_us > 0)
      std::this_thread::sleep_until(started +
                                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                        std::chrono::duration<double, std::micro>(modelled_us)));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!present_[id][to]) {
        where_[id][to] = std::move(copy);
        present_[id][to] = 1;
        ++copies_;
        copied_bytes_ += bytes;
      }
    }
    if (profiler_) {
      ProfileEvent e;
      e.name = fmt::format("copy {} {}->{}", plan_.values[id]->name(), source.device().id,
                           target.device().id);
      e.op = "Copy";
      e.device = target.device().id;
      e.worker = current_worker();
      e.category = "Copy";
      e.start_us = start;
      e.duration_us = profiler_->now_us() - start;
      if (src.is_tensor()) e.input_shapes.push_back(ir::shape_to_string(src.tensor.shape()));
      profiler_->record(std::move(e));
    }
  }

  void execute(size_t p) {
    const ExecutionPlan::Step& step = plan_.steps[p];
    const size_t pd = static_cast<size_t>(step.device);
    RunState state = base_;
    state.pool = pools_[pd];
    state.device = exe_.devices_[pd]->device().id;
    state.worker = current_worker();
    state.host_syncs = &host_syncs_;
    if (step.first_node) state.check_stop(*step.first_node);
    for (const ExecutionPlan::Copy& c : step.copies_before)
      ensure(static_cast<size_t>(c.value), static_cast<size_t>(c.to_device),
             static_cast<size_t>(c.from_device));
    std::map<int, ir::Datum> shape_only;
    for (const ExecutionPlan::Copy& c : step.shape_transfers_before) {
      // Only the shape crosses: a tensor without data, read by Shape/Size alone.
      const size_t id = static_cast<size_t>(c.value);
      ir::Datum src;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        src = where_[id][source_of(id, static_cast<size_t>(c.from_device), pd)];
      }
      SY_ASSERT(src.is_tensor());
      shape_only[c.value] =
          ir::Datum(ir::Tensor::wrap(src.tensor.dtype(), src.tensor.shape(), nullptr, nullptr));
    }
    std::vector<ir::Datum> part_inputs;
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const int id = step.inputs[k];
      const size_t v = static_cast<size_t>(id);
      const size_t at = k < step.input_on_host.size() && step.input_on_host[k] ? 0 : pd;
      // A caller's device input read elsewhere than where it is: copied there now, unless a
      // host step reads only its shape.
      if (!shape_only.count(id)) {
        const bool shape_read = k < step.input_shape_only.size() && step.input_shape_only[k] &&
                                exe_.devices_[at]->device().is_host;
        std::unique_lock<std::mutex> lock(mutex_);
        if (shape_read && !present_[v][at]) {
          const ir::Datum& src = where_[v][source_of(v, at, pd)];
          if (src.is_tensor()) {
            part_inputs.push_back(ir::Datum(
                ir::Tensor::wrap(src.tensor.dtype(), src.tensor.shape(), nullptr, nullptr)));
            continue;
          }
        }
        lock.unlock();
        ensure(v, at, 0);
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (present_[v][at]) {
        part_inputs.push_back(where_[v][at]);
      } else {
        auto it = shape_only.find(id);
        SY_CHECK(it != shape_only.end(), Internal, "value '{}' is not on {} for partition {}",
                 plan_.values[v]->name(), exe_.devices_[pd]->device().id, p);
        part_inputs.push_back(it->second);
      }
    }
    // Where the run has a stream, the partition takes the device's turn and may leave its work
    // queued there.
    Lane& lane = lanes_[pd];
    std::unique_lock<std::mutex> turn(lane.turn, std::defer_lock);
    if (lane.stream) {
      turn.lock();
      state.run_stream = lane.stream.get();
    }
    std::vector<ir::Datum> outs = step.partition->run(std::move(part_inputs), state);
    if (turn.owns_lock()) turn.unlock();
    SY_CHECK(outs.size() == step.outputs.size(), Internal,
             "partition {} on {} returned {} values, expected {}", p, state.device, outs.size(),
             step.outputs.size());
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < outs.size(); ++i) {
      const size_t id = static_cast<size_t>(step.outputs[i]);
      where_[id][pd] = std::move(outs[i]);
      present_[id][pd] = 1;
    }
  }

  // The graph outputs, in host memory or the output device's, written into the caller's
  // buffers where given.
  std::vector<ir::Datum> collect_outputs() {
    const ir::Graph& graph = *exe_.graph_;
    const size_t num_devices = exe_.devices_.size();
    if (out_device_ == 0)
      for (const ExecutionPlan::Copy& c : plan_.final_copies)
        ensure(static_cast<size_t>(c.value), static_cast<size_t>(c.to_device),
               static_cast<size_t>(c.from_device));
    std::vector<ir::Datum> outputs;
    for (size_t o = 0; o < graph.outputs().size(); ++o) {
      const ir::Value* v = graph.outputs()[o];
      // A variable's assign is committed from host memory, wherever the outputs go.
      const size_t out_at = exe_.assign_output_[o] ? 0 : out_device_;
      if (v->is_constant()) {
        outputs.emplace_back(v->constant());
        if (out_at != 0) {
          outputs.back() =
              exe_.devices_[out_device_]->copy_in(outputs.back(), *pools_[out_device_]);
          ++copies_;
          copied_bytes_ += v->constant().nbytes();
        }
        continue;
      }
      auto found = exe_.value_ids_.find(v);
      SY_CHECK(found != exe_.value_ids_.end(), Internal, "output '{}' is not in the plan",
               v->name());
      const size_t id = static_cast<size_t>(found->second);
      ensure(id, out_at, 0);
      std::lock_guard<std::mutex> lock(mutex_);
      outputs.push_back(where_[id][out_at]);
    }
    for (size_t i = 0; i < outputs.size(); ++i) check_output_dtype(*graph.outputs()[i], outputs[i]);
    // Caller buffers: each output written into its buffer on the buffer's device (a copy).
    for (size_t i = 0; i < control_.output_buffers.size() && i < outputs.size(); ++i) {
      const ir::Tensor& buffer = control_.output_buffers[i];
      if (!buffer.defined()) continue;
      const ir::Value& v = *graph.outputs()[i];
      size_t at = num_devices;
      for (size_t d = 0; d < num_devices && at == num_devices; ++d)
        if (exe_.devices_[d]->owns(buffer)) at = d;
      SY_CHECK(at < num_devices, InvalidArgument,
               "the buffer for output '{}' is in the memory of a device this executable does not "
               "use",
               v.name());
      SY_CHECK(outputs[i].is_tensor(), InvalidArgument,
               "output '{}' is not a tensor; it cannot be written into a buffer", v.name());
      ir::Tensor result = outputs[i].tensor;
      SY_CHECK(result.dtype() == buffer.dtype() && result.shape() == buffer.shape(),
               InvalidArgument, "output '{}' is {} {}; the buffer given for it is {} {}", v.name(),
               ir::dtype_name(result.dtype()), ir::shape_to_string(result.shape()),
               ir::dtype_name(buffer.dtype()), ir::shape_to_string(buffer.shape()));
      if (at != out_device_ && !v.is_constant()) {
        const size_t id = static_cast<size_t>(exe_.value_ids_.at(&v));
        ensure(id, at, out_device_);
        std::lock_guard<std::mutex> lock(mutex_);
        result = where_[id][at].tensor;
      }
      exe_.devices_[at]->copy_into(result, buffer);
      ++copies_;
      copied_bytes_ += buffer.nbytes();
      outputs[i] = ir::Datum(buffer);
    }
    return outputs;
  }

  // Every step is over: the outputs (or the first error) go to the callback, and the run leaves
  // flight — the last thing it does with the executable.
  void finish() {
    // The run's references to its error are handed on, not kept: whoever waits for the run
    // holds the last one (an exception freed here could race with the caller reading it).
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error = std::move(error_);
      error_ = nullptr;
    }
    // The work the run left queued on its devices' streams ends before anything reads its
    // outputs or its pools go back; a fault found there fails the run (the first, in device
    // order).
    for (size_t d = 0; d < exe_.devices_.size(); ++d) {
      if (!lanes_[d].stream) continue;
      try {
        std::lock_guard<std::mutex> turn(lanes_[d].turn);
        synchronize_lane(d);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
      lanes_[d].stream.reset();
    }
    std::vector<ir::Datum> outputs;
    if (!error) {
      try {
        outputs = collect_outputs();
      } catch (...) {
        error = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      where_.clear();
      present_.clear();
    }
    if (!error) {
      if (profiler_) {
        ProfileEvent e;
        e.name = "model_run";
        e.op = "run";
        e.device = "cpu";
        e.category = "Session";
        e.start_us = run_start_;
        e.duration_us = profiler_->now_us() - run_start_;
        profiler_->record(std::move(e));
      }
      if (stats_) {
        stats_->peak_bytes = 0;
        for (const auto& pool : pools_) stats_->peak_bytes += pool->peak_bytes();
        stats_->shape_cache_hit = hit_;
        stats_->shape_signature = signature_;
        stats_->copies = copies_;
        stats_->copied_bytes = copied_bytes_;
        stats_->host_syncs = host_syncs_.load();
        stats_->worker_handoffs = handoffs_.load();
      }
      exe_.release_pools(signature_, std::move(pools_));
    }
    pools_.clear();
    Executable::RunDone done = std::move(done_);
    done(std::move(outputs), std::move(error));
    exe_.end_flight();
  }

  const Executable& exe_;
  const ExecutionPlan& plan_;
  Executable::RunDone done_;
  RunStats* stats_;
  Profiler* profiler_;
  RunControl control_;
  size_t out_device_ = 0;
  RunState base_;  // what every step's RunState starts from
  Executable::PoolSet pools_;
  std::string signature_;
  bool hit_ = false;
  bool on_caller_ = false;  // the steps run on the thread that started the run (start())
  int64_t run_start_ = 0;
  std::atomic<int64_t> host_syncs_{0};  // RunStats::host_syncs, counted by the partitions
  std::atomic<int> handoffs_{0};        // RunStats::worker_handoffs
  // Per device: the run's stream there (null for devices without), opened when the run starts
  // and closed as it ends, and the turn its partitions and the copies in and out of the device
  // take one at a time (so no work is queued there while a copy, which drained it, runs).
  struct Lane {
    std::unique_ptr<RunStream> stream;
    std::mutex turn;
  };
  std::unique_ptr<Lane[]> lanes_;

  // Guards what follows: the values' whereabouts, the steps' countdowns, the first error and
  // the copy counts.
  std::mutex mutex_;
  std::vector<std::vector<ir::Datum>> where_;
  std::vector<std::vector<char>> present_;
  std::vector<int> waiting_;       // per step: the steps it still waits for
  std::vector<int> readers_left_;  // per value: the steps that still read it
  size_t steps_left_ = 0;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
  int copies_ = 0;
  size_t copied_bytes_ = 0;
};

void Executable::launch_graph(std::vector<ir::Datum> inputs, const RunDone& done, RunStats* stats,
                              runtime::Profiler* profiler, const RunControl& control,
                              std::chrono::steady_clock::time_point started,
                              bool caller_waits) const {
  std::string signature = check_inputs(inputs);
  auto job =
      std::make_shared<RunJob>(*this, std::move(inputs), done, stats, profiler, control, started);
  begin_flight();
  PoolSet pools;
  bool hit = false;
  try {
    pools = acquire_pools(signature, &hit);
    for (auto& pool : pools) pool->reset_peak();
  } catch (...) {
    end_flight();
    throw;
  }
  job->start(std::move(pools), std::move(signature), hit, caller_waits && one_chain_);
}

}  // namespace switchyard::runtime
