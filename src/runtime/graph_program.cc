#include "runtime/graph_program.h"

#include <functional>
#include <new>
#include <stdexcept>
#include <unordered_set>

#include "runtime/profiler.h"

namespace switchyard::runtime {

void RunState::check_stop_slow(const ir::Node& where) const {
  if (cancel_flag && cancel_flag->load(std::memory_order_relaxed))
    SY_THROW(Cancelled, "the run was cancelled (at {})", where.describe());
  if (std::chrono::steady_clock::now() >= deadline)
    SY_THROW(Cancelled, "the run passed its deadline of {} ms (at {})", deadline_ms,
             where.describe());
}

void run_kernel(const Kernel& kernel, const ir::Node& node, KernelContext& ctx) {
  try {
    kernel.run(ctx);
  } catch (const Error& e) {
    // Shared helpers (checked arithmetic, tensor sizes, pools) do not know the node: name it.
    if (e.message().find(node.describe()) != std::string::npos) throw;
    throw Error(e.code(), fmt::format("{}: {}", node.describe(), e.message()));
  } catch (const std::bad_alloc&) {
    SY_THROW(OutOfMemory, "{}: out of host memory", node.describe());
  } catch (const std::length_error& e) {
    SY_THROW(InvalidArgument, "{}: a size derived from the inputs is too large ({})",
             node.describe(), e.what());
  }
}

const ir::Datum* Frame::lookup(const ir::Value* v) const {
  for (const Frame* f = this; f; f = f->parent) {
    int s = f->program->slot_of(v);
    if (s >= 0) return &(*f->slots)[static_cast<size_t>(s)];
  }
  return nullptr;
}

namespace {
// Values of `graph` read by a node, directly or from inside its subgraphs.
void collect_reads(const ir::Node& node, const ir::Graph& graph,
                   std::unordered_set<const ir::Value*>& reads) {
  for (const ir::Value* v : node.inputs())
    if (v && v->owner() == &graph) reads.insert(v);
  std::function<void(const ir::Graph&)> walk = [&](const ir::Graph& sub) {
    for (const auto& n : sub.nodes()) {
      for (const ir::Value* v : n->inputs())
        if (v && v->owner() == &graph) reads.insert(v);
      for (const ir::Graph* s : n->subgraphs()) walk(*s);
    }
    for (const ir::Value* v : sub.outputs())
      if (v && v->owner() == &graph) reads.insert(v);
  };
  for (const ir::Graph* s : node.subgraphs()) walk(*s);
}

std::string shape_text(const ir::Datum* d) {
  if (!d) return "";
  if (d->is_tensor()) return ir::shape_to_string(d->tensor.shape());
  if (d->is_sequence()) return fmt::format("seq[{}]", d->sequence.size());
  return "none";
}
}  // namespace

namespace {
std::vector<const ir::Node*> all_nodes(const ir::Graph& g) {
  std::vector<const ir::Node*> out;
  for (const auto& n : g.nodes()) out.push_back(n.get());
  return out;
}
std::vector<const ir::Value*> as_const(const std::vector<ir::Value*>& values) {
  return {values.begin(), values.end()};
}
}  // namespace

GraphProgram::GraphProgram(const ir::Graph& graph, const KernelRegistry& registry)
    : GraphProgram(graph, all_nodes(graph), as_const(graph.inputs()), as_const(graph.outputs()),
                   registry) {}

GraphProgram::GraphProgram(const ir::Graph& graph, const std::vector<const ir::Node*>& nodes,
                           const std::vector<const ir::Value*>& inputs,
                           const std::vector<const ir::Value*>& outputs,
                           const KernelRegistry& registry)
    : graph_(graph), output_values_(outputs) {
  for (const auto& v : graph.values()) slot_by_value_[v.get()] = static_cast<int>(num_slots_++);
  constants_.resize(num_slots_);
  for (const auto& v : graph.values())
    if (v->is_constant()) constants_[static_cast<size_t>(slot_by_value_[v.get()])] = v->constant();
  for (const ir::Value* v : inputs) input_slots_.push_back(slot_of(v));
  for (const ir::Value* v : outputs) output_slots_.push_back(slot_of(v));

  std::vector<int> last_use(num_slots_, -1);
  for (const ir::Node* node : nodes) {
    Step step;
    step.node = node;
    step.kernel = registry.create(*node);
    for (const ir::Value* v : node->inputs()) {
      if (!v) {
        step.input_slots.push_back(-1);
      } else {
        int s = slot_of(v);
        step.input_slots.push_back(s >= 0 ? s : -2);
      }
    }
    for (const ir::Value* v : node->outputs()) step.output_slots.push_back(slot_of(v));
    int index = static_cast<int>(steps_.size());
    std::unordered_set<const ir::Value*> reads;
    collect_reads(*node, graph, reads);
    for (const ir::Value* v : reads) last_use[static_cast<size_t>(slot_of(v))] = index;
    for (int s : step.output_slots)
      if (last_use[static_cast<size_t>(s)] < index) last_use[static_cast<size_t>(s)] = index;
    steps_.push_back(std::move(step));
  }
  std::unordered_set<int> keep(output_slots_.begin(), output_slots_.end());
  for (size_t s = 0; s < num_slots_; ++s) {
    if (last_use[s] < 0 || keep.count(static_cast<int>(s)) || constants_[s].is_tensor()) continue;
    steps_[static_cast<size_t>(last_use[s])].release_after.push_back(static_cast<int>(s));
  }
}

int GraphProgram::slot_of(const ir::Value* v) const {
  auto it = slot_by_value_.find(v);
  return it == slot_by_value_.end() ? -1 : it->second;
}

std::vector<ir::Datum> GraphProgram::run(std::vector<ir::Datum> inputs, RunState& state,
                                         const Frame* outer) const {
  SY_CHECK(inputs.size() == input_slots_.size(), InvalidArgument,
           "graph '{}' takes {} inputs, got {}", graph_.name(), input_slots_.size(), inputs.size());
  std::vector<ir::Datum> slots = constants_;
  for (size_t i = 0; i < inputs.size(); ++i)
    slots[static_cast<size_t>(input_slots_[i])] = std::move(inputs[i]);
  Frame frame{this, &slots, outer};

  for (const Step& step : steps_) {
    state.check_stop(*step.node);
    std::vector<const ir::Datum*> in;
    in.reserve(step.input_slots.size());
    for (size_t i = 0; i < step.input_slots.size(); ++i) {
      int s = step.input_slots[i];
      if (s == -1) {
        in.push_back(nullptr);
      } else if (s == -2) {
        const ir::Datum* d = outer ? outer->lookup(step.node->input(i)) : nullptr;
        SY_CHECK(d != nullptr, Internal, "{}: outer value '{}' is not available",
                 step.node->describe(), step.node->input(i)->name());
        in.push_back(d);
      } else {
        in.push_back(&slots[static_cast<size_t>(s)]);
      }
    }
    std::vector<ir::Datum> out(step.output_slots.size());
    KernelContext ctx(*step.node, in, out, state, &frame);
    int64_t start = state.profiler ? state.profiler->now_us() : 0;
    const auto started =
        state.pacer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    run_kernel(*step.kernel, *step.node, ctx);
    if (state.pacer) state.pacer->after_node(*step.node, started);
    if (state.profiler) {
      ProfileEvent e;
      e.name = step.node->name();
      e.op = step.node->op_type();
      e.device = state.device;
      e.worker = state.worker;
      e.category = "Node";
      e.start_us = start;
      e.duration_us = state.profiler->now_us() - start;
      for (const ir::Datum* d : in) e.input_shapes.push_back(shape_text(d));
      for (const ir::Datum& d : out) e.output_shapes.push_back(shape_text(&d));
      state.profiler->record(std::move(e));
    }
    for (size_t i = 0; i < out.size(); ++i)
      slots[static_cast<size_t>(step.output_slots[i])] = std::move(out[i]);
    for (int s : step.release_after) slots[static_cast<size_t>(s)] = ir::Datum();
  }

  std::vector<ir::Datum> results;
  results.reserve(output_slots_.size());
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    int s = output_slots_[i];
    if (s >= 0) {
      results.push_back(slots[static_cast<size_t>(s)]);
      continue;
    }
    // A body may return a value of an enclosing graph unchanged.
    const ir::Datum* d = outer ? outer->lookup(output_values_[i]) : nullptr;
    SY_CHECK(d != nullptr, Internal, "graph '{}': output '{}' is not available", graph_.name(),
             output_values_[i]->name());
    results.push_back(*d);
  }
  return results;
}

}  // namespace switchyard::runtime

namespace switchyard::runtime {

std::vector<ir::Datum> evaluate_node(const KernelRegistry& registry, const ir::Node& node,
                                     const std::vector<ir::Datum>& inputs, size_t memory_limit) {
  std::unique_ptr<Kernel> kernel = registry.create(node);
  RunState state;
  state.pool = HostPool::create();
  if (memory_limit > 0) state.pool->set_limit(memory_limit, "constant folding");
  state.num_threads = 1;
  std::vector<const ir::Datum*> in;
  for (const ir::Datum& d : inputs) in.push_back(&d);
  for (size_t i = 0; i < node.num_inputs(); ++i)
    if (!node.input(i)) in[i] = nullptr;
  std::vector<ir::Datum> out(node.num_outputs());
  KernelContext ctx(node, in, out, state, nullptr);
  run_kernel(*kernel, node, ctx);
  return out;
}

}  // namespace switchyard::runtime
