#include "runtime/executable.h"

#include <omp.h>

#include <chrono>
#include <set>
#include <thread>
#include <unordered_map>

#include "ir/check.h"
#include "ops/schema.h"
#include "passes/passes.h"

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

// The most arithmetic constant folding spends on one node (a second or so on one core).
constexpr double kMaxFoldedFlops = 1e9;

void optimize_graph(ir::Graph& graph, const backends::KernelRegistry& kernels) {
  passes::PassContext ctx;
  ctx.evaluate = [&kernels, &ctx](const ir::Node& node, const std::vector<ir::Datum>& inputs) {
    if (!kernels.supports(node).ok) return std::vector<ir::Datum>{};
    // Compile time stays bounded whatever the model holds: folding skips nodes whose static
    // work is large (deterministic, unlike a timer) and caps what one evaluation allocates.
    if (backends::estimate_node_work(node).flops > kMaxFoldedFlops) return std::vector<ir::Datum>{};
    try {
      return backends::evaluate_node(kernels, node, inputs, 4 * ctx.max_folded_bytes);
    } catch (const Error&) {
      // A node that fails on its constants is left for run time, where the error names it
      // in context (it may sit in a branch that never runs).
      return std::vector<ir::Datum>{};
    }
  };
  // Folding makes shape inputs constant, which sharpens inference, which enables more folding.
  for (int round = 0; round < 4; ++round) {
    size_t folded = passes::fold_constants(graph, ctx);
    ops::infer_types(graph);
    if (folded == 0) break;
  }
  if (passes::fuse_layer_norm(graph) > 0) ops::infer_types(graph);
  passes::remove_dead_nodes(graph, ctx);
}

}  // namespace

std::shared_ptr<const Executable> Executable::compile(
    std::unique_ptr<ir::Graph> graph, std::vector<std::shared_ptr<const backends::Backend>> devices,
    const CompileOptions& options) {
  SY_CHECK(graph != nullptr, InvalidArgument, "compile: no graph given");
  SY_CHECK(!devices.empty() && devices[0]->device().is_host, Internal,
           "compile: the host cpu must be the first device");
  std::shared_ptr<Executable> exe(new Executable());
  ops::infer_types(*graph);
  ir::verify(*graph);
  if (options.optimize && devices[0]->host_kernels()) {
    optimize_graph(*graph, *devices[0]->host_kernels());
    ir::verify(*graph);
  }
  std::vector<const backends::Backend*> raw;
  for (const auto& d : devices) raw.push_back(d.get());
  exe->placement_ = placement::place(*graph, raw, options.policy);
  exe->placement_.report.model = graph->name();
  for (backends::Partition& p : exe->placement_.partitions) p.host_kernels = raw[0]->host_kernels();
  const placement::Placement& pl = exe->placement_;
  for (size_t p = 0; p < pl.partitions.size(); ++p)
    exe->compiled_.push_back(
        raw[static_cast<size_t>(pl.partition_device[p])]->compile(pl.partitions[p]));
  // Devices know each node's precision and fusions once they compiled it.
  const auto& nodes = graph->nodes();
  std::map<std::string, size_t> decision_of;
  for (size_t i = 0; i < exe->placement_.report.nodes.size(); ++i)
    decision_of.emplace(exe->placement_.report.nodes[i].node, i);
  for (size_t p = 0; p < exe->compiled_.size(); ++p) {
    for (backends::FusionGroup& group : exe->compiled_[p]->fusions()) {
      if (group.members.size() < 2) continue;
      for (size_t m = 1; m < group.members.size(); ++m) {
        auto it = decision_of.find(group.members[m]);
        if (it != decision_of.end())
          exe->placement_.report.nodes[it->second].fused_into = group.members[0];
      }
      exe->placement_.report.fusions.push_back(
          {static_cast<int>(p), pl.partitions[p].device, std::move(group.members)});
    }
  }
  for (size_t i = 0; i < nodes.size() && i < exe->placement_.report.nodes.size(); ++i) {
    int d = pl.node_device[i];
    if (d >= 0)
      exe->placement_.report.nodes[i].precision =
          raw[static_cast<size_t>(d)]->precision_of(*nodes[i]);
  }

  // Dense ids for the values that cross partitions, and when each can be dropped.
  auto id_of = [&](const ir::Value* v) {
    auto [it, fresh] = exe->value_ids_.emplace(v, static_cast<int>(exe->values_.size()));
    if (fresh) exe->values_.push_back(v);
    return it->second;
  };
  for (const ir::Value* v : graph->inputs()) id_of(v);
  size_t num_parts = pl.partitions.size();
  exe->partition_inputs_.resize(num_parts);
  exe->partition_outputs_.resize(num_parts);
  exe->release_after_.resize(num_parts);
  exe->copies_before_.resize(num_parts);
  exe->shape_transfers_before_.resize(num_parts);
  std::map<int, int> last_use;
  for (size_t p = 0; p < num_parts; ++p) {
    for (const ir::Value* v : pl.partitions[p].inputs) {
      int id = id_of(v);
      exe->partition_inputs_[p].push_back(id);
      last_use[id] = static_cast<int>(p);
    }
    for (const ir::Value* v : pl.partitions[p].outputs)
      exe->partition_outputs_[p].push_back(id_of(v));
  }
  std::set<int> keep;
  for (const ir::Value* v : graph->outputs())
    if (!v->is_constant()) keep.insert(id_of(v));
  for (auto [id, p] : last_use)
    if (!keep.count(id)) exe->release_after_[static_cast<size_t>(p)].push_back(id);
  for (const auto& c : pl.copies) {
    if (c.before_partition < 0) {
      exe->final_copies_.push_back(&c);
    } else {
      exe->copies_before_[static_cast<size_t>(c.before_partition)].push_back(&c);
    }
  }
  for (const auto& c : pl.shape_transfers)
    exe->shape_transfers_before_[static_cast<size_t>(c.before_partition)].push_back(&c);

  exe->graph_ = std::move(graph);
  exe->devices_ = std::move(devices);
  exe->options_ = options;
  exe->num_threads_ = options.num_threads > 0
                          ? options.num_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return exe;
}

int Executable::value_id(const ir::Value* v) const {
  auto it = value_ids_.find(v);
  return it == value_ids_.end() ? -1 : it->second;
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
    for (const auto& d : devices_) set.push_back(d->create_pool(options_.poison_buffers));
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
                                       backends::Profiler* profiler,
                                       const RunControl* control) const {
  auto started = std::chrono::steady_clock::now();
  std::string signature = check_inputs(inputs);
  bool hit = false;
  PoolSet pools = acquire_pools(signature, &hit);
  for (auto& pool : pools) pool->reset_peak();
  backends::RunState state;
  state.num_threads = num_threads_;
  state.profiler = profiler;
  if (control) {
    state.cancel_flag = control->cancel_flag;
    if (control->deadline_ms > 0) {
      state.deadline_ms = control->deadline_ms;
      state.deadline = started + std::chrono::milliseconds(control->deadline_ms);
    }
  }
  // OpenMP's thread count is per calling thread, so concurrent runs do not disturb each other.
  omp_set_num_threads(num_threads_);
  int64_t run_start = profiler ? profiler->now_us() : 0;

  // Each crossing value, per device where a copy of it lives.
  size_t num_devices = devices_.size();
  std::vector<std::vector<ir::Datum>> where(values_.size(), std::vector<ir::Datum>(num_devices));
  std::vector<std::vector<char>> present(values_.size(), std::vector<char>(num_devices, 0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    where[i][0] = std::move(inputs[i]);
    present[i][0] = 1;
  }
  int copies = 0;
  size_t copied_bytes = 0;
  auto do_copy = [&](const placement::PlannedCopy& c) {
    int id = value_id(c.value);
    size_t from = static_cast<size_t>(c.from_device), to = static_cast<size_t>(c.to_device);
    SY_CHECK(present[static_cast<size_t>(id)][from], Internal,
             "value '{}' is not on {} when it should be copied from there", c.value->name(),
             devices_[from]->device().id);
    int64_t start = profiler ? profiler->now_us() : 0;
    const ir::Datum& src = where[static_cast<size_t>(id)][from];
    // A device whose memory host code cannot read copies its values out itself.
    const backends::Backend& source = *devices_[from];
    where[static_cast<size_t>(id)][to] =
        !source.device().host_addressable && devices_[to]->device().host_addressable
            ? source.copy_out(src, *pools[to])
            : devices_[to]->copy_in(src, *pools[to]);
    present[static_cast<size_t>(id)][to] = 1;
    ++copies;
    size_t bytes = src.is_tensor() ? src.tensor.nbytes() : 0;
    for (const auto& t : src.sequence) bytes += t.nbytes();
    copied_bytes += bytes;
    if (profiler) {
      backends::ProfileEvent e;
      e.name = fmt::format("copy {} {}->{}", c.value->name(), devices_[from]->device().id,
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

  const placement::Placement& pl = placement_;
  for (size_t p = 0; p < compiled_.size(); ++p) {
    size_t pd = static_cast<size_t>(pl.partition_device[p]);
    for (const placement::PlannedCopy* c : copies_before_[p]) do_copy(*c);
    std::map<int, ir::Datum> shape_only;
    for (const placement::PlannedCopy* c : shape_transfers_before_[p]) {
      // Only the shape crosses: a tensor without data, read by Shape/Size alone.
      const ir::Datum& src =
          where[static_cast<size_t>(value_id(c->value))][static_cast<size_t>(c->from_device)];
      SY_ASSERT(src.is_tensor());
      shape_only[value_id(c->value)] =
          ir::Datum(ir::Tensor::wrap(src.tensor.dtype(), src.tensor.shape(), nullptr, nullptr));
    }
    std::vector<ir::Datum> part_inputs;
    const std::vector<char>& on_host = pl.partitions[p].input_on_host;
    for (size_t k = 0; k < partition_inputs_[p].size(); ++k) {
      int id = partition_inputs_[p][k];
      size_t at = k < on_host.size() && on_host[k] ? 0 : pd;
      if (present[static_cast<size_t>(id)][at]) {
        part_inputs.push_back(where[static_cast<size_t>(id)][at]);
      } else {
        auto it = shape_only.find(id);
        SY_CHECK(it != shape_only.end(), Internal, "value '{}' is not on {} for partition {}",
                 values_[static_cast<size_t>(id)]->name(), devices_[pd]->device().id, p);
        part_inputs.push_back(it->second);
      }
    }
    if (!pl.partitions[p].nodes.empty()) state.check_stop(*pl.partitions[p].nodes.front());
    state.pool = pools[pd];
    state.device = devices_[pd]->device().id;
    std::vector<ir::Datum> outs = compiled_[p]->run(std::move(part_inputs), state);
    for (size_t i = 0; i < outs.size(); ++i) {
      size_t id = static_cast<size_t>(partition_outputs_[p][i]);
      where[id][pd] = std::move(outs[i]);
      present[id][pd] = 1;
    }
    for (int id : release_after_[p]) {
      for (size_t d = 0; d < num_devices; ++d) {
        where[static_cast<size_t>(id)][d] = ir::Datum();
        present[static_cast<size_t>(id)][d] = 0;
      }
    }
  }
  for (const placement::PlannedCopy* c : final_copies_) do_copy(*c);

  std::vector<ir::Datum> outputs;
  for (const ir::Value* v : graph_->outputs()) {
    if (v->is_constant()) {
      outputs.emplace_back(v->constant());
      continue;
    }
    int id = value_id(v);
    SY_CHECK(id >= 0 && present[static_cast<size_t>(id)][0], Internal,
             "output '{}' did not reach the host", v->name());
    outputs.push_back(where[static_cast<size_t>(id)][0]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) check_output_dtype(*graph_->outputs()[i], outputs[i]);
  if (profiler) {
    backends::ProfileEvent e;
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
                                       RunStats* stats, backends::Profiler* profiler,
                                       const RunControl* control) const {
  std::vector<ir::Datum> ordered;
  size_t used = 0;
  for (const ir::Value* v : graph_->inputs()) {
    auto it = inputs.find(v->name());
    SY_CHECK(it != inputs.end(), InvalidArgument, "input '{}' is missing (expected {})", v->name(),
             v->type().to_string());
    ordered.push_back(it->second);
    ++used;
  }
  if (used != inputs.size()) {
    for (const auto& [name, d] : inputs) {
      bool known = false;
      for (const ir::Value* v : graph_->inputs()) known = known || v->name() == name;
      SY_CHECK(known, InvalidArgument, "'{}' is not an input of the model", name);
    }
  }
  return run(std::move(ordered), stats, profiler, control);
}

}  // namespace switchyard::runtime
