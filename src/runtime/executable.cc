#include "runtime/executable.h"

#include <omp.h>

#include <thread>
#include <unordered_map>

#include "ir/check.h"
#include "ops/schema.h"
#include "passes/passes.h"

namespace switchyard::runtime {

namespace {

std::string datum_signature(const ir::Datum& d) {
  if (d.is_tensor())
    return fmt::format("{}{}", ir::dtype_name(d.tensor.dtype()), ir::shape_to_string(d.tensor.shape()));
  if (d.is_sequence()) {
    std::string s = "seq(";
    for (const auto& t : d.sequence) s += ir::shape_to_string(t.shape()) + ";";
    return s + ")";
  }
  return "none";
}

void optimize_graph(ir::Graph& graph, const backends::KernelRegistry& kernels) {
  passes::PassContext ctx;
  ctx.evaluate = [&kernels](const ir::Node& node, const std::vector<ir::Datum>& inputs) {
    if (!kernels.supports(node).ok) return std::vector<ir::Datum>{};
    try {
      return backends::evaluate_node(kernels, node, inputs);
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
  passes::remove_dead_nodes(graph, ctx);
}

}  // namespace

std::shared_ptr<const Executable> Executable::compile(std::unique_ptr<ir::Graph> graph,
                                                      const backends::KernelRegistry& kernels,
                                                      const CompileOptions& options) {
  SY_CHECK(graph != nullptr, InvalidArgument, "compile: no graph given");
  std::shared_ptr<Executable> exe(new Executable());
  ops::infer_types(*graph);
  ir::verify(*graph);
  if (options.optimize) {
    optimize_graph(*graph, kernels);
    ir::verify(*graph);
  }
  for (const auto& node : graph->nodes()) {
    backends::Support s = kernels.supports(*node);
    SY_CHECK(s.ok, Unsupported, "{}: cannot run on {}: {}", node->describe(),
             kernels.backend_name(), s.reason);
    exe->placement_.push_back({node->name(), node->op_type(), kernels.backend_name(), "preferred",
                               fmt::format("{} is the only device", kernels.backend_name())});
  }
  exe->program_ = std::make_unique<backends::GraphProgram>(*graph, kernels);
  exe->graph_ = std::move(graph);
  exe->options_ = options;
  exe->device_name_ = kernels.backend_name();
  exe->num_threads_ = options.num_threads > 0
                          ? options.num_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return exe;
}

std::string Executable::placement_summary() const {
  return fmt::format("{}: {} of {} nodes in 1 partition", device_name_, placement_.size(),
                     placement_.size());
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
                 "input '{}': dim {} is {}, expected {} (shape {} given, {} declared)", v.name(),
                 k, got, dim.value, ir::shape_to_string(t.shape()),
                 ir::shape_to_string(*want.shape));
      } else if (dim.is_symbolic()) {
        auto [it, fresh] = symbols.emplace(dim.symbol, std::make_pair(got, v.name()));
        SY_CHECK(fresh || it->second.first == got, InvalidArgument,
                 "input '{}': dim '{}' is {}, but input '{}' gave it {}", v.name(), dim.symbol,
                 got, it->second.second, it->second.first);
      }
    }
  }
  return signature;
}

std::shared_ptr<backends::HostPool> Executable::acquire_pool(const std::string& signature,
                                                             bool* hit) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->signature != signature) continue;
    cache_.splice(cache_.begin(), cache_, it);  // most recently used first
    *hit = true;
    if (!it->idle.empty()) {
      auto pool = std::move(it->idle.back());
      it->idle.pop_back();
      return pool;
    }
    return backends::HostPool::create(options_.poison_buffers);
  }
  *hit = false;
  cache_.push_front(CacheEntry{signature, {}});
  while (cache_.size() > std::max<size_t>(options_.shape_cache_capacity, 1)) cache_.pop_back();
  return backends::HostPool::create(options_.poison_buffers);
}

void Executable::release_pool(const std::string& signature,
                              std::shared_ptr<backends::HostPool> pool) const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  for (auto& entry : cache_) {
    if (entry.signature == signature) {
      // Keep a few idle pools per signature for concurrent runs; more would only hold memory.
      if (entry.idle.size() < 4) entry.idle.push_back(std::move(pool));
      return;
    }
  }
}

size_t Executable::cached_shape_signatures() const {
  std::lock_guard<std::mutex> lock(cache_mutex_);
  return cache_.size();
}

std::vector<ir::Datum> Executable::run(std::vector<ir::Datum> inputs, RunStats* stats,
                                       backends::Profiler* profiler) const {
  std::string signature = check_inputs(inputs);
  bool hit = false;
  std::shared_ptr<backends::HostPool> pool = acquire_pool(signature, &hit);
  pool->reset_peak();
  backends::RunState state;
  state.pool = pool;
  state.num_threads = num_threads_;
  state.profiler = profiler;
  // OpenMP's thread count is per calling thread, so concurrent runs do not disturb each other.
  omp_set_num_threads(num_threads_);
  int64_t start = profiler ? profiler->now_us() : 0;
  std::vector<ir::Datum> outputs = program_->run(std::move(inputs), state);
  if (profiler) {
    backends::ProfileEvent e;
    e.name = "model_run";
    e.op = "run";
    e.device = device_name_;
    e.category = "Session";
    e.start_us = start;
    e.duration_us = profiler->now_us() - start;
    profiler->record(std::move(e));
  }
  if (stats) {
    stats->peak_bytes = pool->peak_bytes();
    stats->shape_cache_hit = hit;
    stats->shape_signature = signature;
  }
  release_pool(signature, std::move(pool));
  return outputs;
}

std::vector<ir::Datum> Executable::run(const std::map<std::string, ir::Datum>& inputs,
                                       RunStats* stats, backends::Profiler* profiler) const {
  std::vector<ir::Datum> ordered;
  size_t used = 0;
  for (const ir::Value* v : graph_->inputs()) {
    auto it = inputs.find(v->name());
    SY_CHECK(it != inputs.end(), InvalidArgument, "input '{}' is missing (expected {})",
             v->name(), v->type().to_string());
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
  return run(std::move(ordered), stats, profiler);
}

}  // namespace switchyard::runtime
