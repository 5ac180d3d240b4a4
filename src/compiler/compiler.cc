#include "compiler/compiler.h"

#include <algorithm>
#include <set>

#include "ir/check.h"
#include "ops/op_traits.h"
#include "ops/schema.h"
#include "passes/passes.h"

namespace switchyard::compiler {

namespace {

// The most arithmetic constant folding spends on one node (a second or so on one core).
constexpr double kMaxFoldedFlops = 1e9;

// The compiled partitions know each node's precision and fusions: the report learns them.
void record_compiled_facts(const placement::Placement& pl,
                           const std::vector<runtime::ExecutionPlan::Step>& steps,
                           placement::PlacementReport& report) {
  std::map<std::string, size_t> decision_of;
  for (size_t i = 0; i < report.nodes.size(); ++i) decision_of.emplace(report.nodes[i].node, i);
  for (size_t p = 0; p < steps.size(); ++p) {
    for (runtime::FusionGroup& group : steps[p].partition->fusions()) {
      if (group.members.size() < 2) continue;
      for (size_t m = 1; m < group.members.size(); ++m) {
        auto it = decision_of.find(group.members[m]);
        if (it != decision_of.end()) report.nodes[it->second].fused_into = group.members[0];
      }
      report.fusions.push_back(
          {static_cast<int>(p), pl.partitions[p].device, std::move(group.members)});
    }
  }
  for (const runtime::ExecutionPlan::Step& step : steps) {
    for (const runtime::NodePrecision& np : step.partition->precisions()) {
      auto it = decision_of.find(np.node);
      if (it != decision_of.end()) report.nodes[it->second].precision = np.precision;
    }
  }
}

// An option no partition honours is said, never silently ignored: a "warning:" note in the
// report (the CLI prints it on stderr), or an error under --fallback strict.
void check_options_took_effect(placement::Placement& pl,
                               const std::vector<runtime::ExecutionPlan::Step>& steps,
                               const CompileOptions& options) {
  // --precision and --no-cuda-graphs are GPU options: they take effect where a partition runs
  // on a GPU (a GPU partition of data-movement ops alone computes nothing at any precision).
  bool on_gpu = false;
  std::vector<std::string> used;
  for (size_t p = 0; p < steps.size(); ++p) {
    const runtime::DeviceInfo& d =
        pl.devices[static_cast<size_t>(pl.partition_device[p])]->device();
    on_gpu = on_gpu || d.is_gpu;
    if (std::find(used.begin(), used.end(), d.id) == used.end()) used.push_back(d.id);
  }
  std::vector<std::string> unused;
  if (options.backend.precision != backends::Precision::Fp32 && !on_gpu)
    unused.push_back(fmt::format(
        "--precision {} has no effect: no partition runs on a GPU (the nodes run on {}, in fp32)",
        backends::precision_name(options.backend.precision), placement::join(used, ", ")));
  if (!options.backend.device_graphs && !on_gpu)
    unused.push_back(
        fmt::format("--no-cuda-graphs has no effect: no partition runs on a GPU "
                    "(the nodes run on {})",
                    placement::join(used, ", ")));
  for (const std::string& why : unused) {
    SY_CHECK(options.policy.fallback != placement::Fallback::Strict, InvalidArgument,
             "{} — an error under --fallback strict", why);
    std::string note = "warning: " + why;
    if (std::find(pl.report.notes.begin(), pl.report.notes.end(), note) == pl.report.notes.end())
      pl.report.notes.push_back(std::move(note));
  }
}

// The runtime's program from the placement: dense ids for the values that cross partitions,
// the copies around each partition, and when each value can be dropped.
runtime::ExecutionPlan make_plan(const ir::Graph& graph, const placement::Placement& pl,
                                 std::vector<std::unique_ptr<runtime::CompiledPartition>> parts) {
  runtime::ExecutionPlan plan;
  std::map<const ir::Value*, int> ids;
  auto id_of = [&](const ir::Value* v) {
    auto [it, fresh] = ids.emplace(v, static_cast<int>(plan.values.size()));
    if (fresh) plan.values.push_back(v);
    return it->second;
  };
  for (const ir::Value* v : graph.inputs()) id_of(v);
  size_t num_parts = pl.partitions.size();
  plan.steps.resize(num_parts);
  std::map<int, int> last_use;
  for (size_t p = 0; p < num_parts; ++p) {
    const backends::Partition& part = pl.partitions[p];
    runtime::ExecutionPlan::Step& step = plan.steps[p];
    step.device = pl.partition_device[p];
    step.partition = std::move(parts[p]);
    step.input_on_host = part.input_on_host;
    if (!part.nodes.empty()) step.first_node = part.nodes.front();
    std::set<const ir::Node*> members(part.nodes.begin(), part.nodes.end());
    for (const ir::Value* v : part.inputs) {
      int id = id_of(v);
      step.inputs.push_back(id);
      last_use[id] = static_cast<int>(p);
      // Read here by Shape/Size alone (a read from inside a body counts as a data read).
      bool shape_only = true;
      for (auto [user, idx] : v->uses()) {
        if (user->owner() != &graph) {
          shape_only = false;
        } else if (members.count(user) && !ops::traits(*user).reads_only_shape) {
          shape_only = false;
        }
      }
      step.input_shape_only.push_back(shape_only ? 1 : 0);
    }
    for (const ir::Value* v : part.outputs) step.outputs.push_back(id_of(v));
  }
  // A copy or a shape transfer before a partition reads its value there too (a saved file's
  // record may copy a value no partition reads afterwards); a final copy keeps it to the end.
  std::set<int> keep;
  for (const ir::Value* v : graph.outputs())
    if (!v->is_constant()) keep.insert(id_of(v));
  for (const auto* list : {&pl.copies, &pl.shape_transfers})
    for (const auto& c : *list) {
      int id = id_of(c.value);
      if (c.before_partition < 0) {
        keep.insert(id);
      } else {
        int& last = last_use.try_emplace(id, c.before_partition).first->second;
        last = std::max(last, c.before_partition);
      }
    }
  for (auto [id, p] : last_use)
    if (!keep.count(id)) plan.steps[static_cast<size_t>(p)].release_after.push_back(id);
  auto copy_of = [&](const placement::PlannedCopy& c) {
    return runtime::ExecutionPlan::Copy{id_of(c.value), c.from_device, c.to_device};
  };
  for (const auto& c : pl.copies) {
    if (c.before_partition < 0) {
      plan.final_copies.push_back(copy_of(c));
    } else {
      plan.steps[static_cast<size_t>(c.before_partition)].copies_before.push_back(copy_of(c));
    }
  }
  for (const auto& c : pl.shape_transfers)
    plan.steps[static_cast<size_t>(c.before_partition)].shape_transfers_before.push_back(
        copy_of(c));
  // Steps run as soon as what they read is ready: a step also waits for each partition that
  // produces a value one of its nodes reads without it being a partition input (a control
  // dependency's ordering input), so the order placement promised holds.
  std::map<const ir::Node*, size_t> partition_of;
  for (size_t p = 0; p < num_parts; ++p)
    for (const ir::Node* n : pl.partitions[p].nodes) partition_of.emplace(n, p);
  for (size_t p = 0; p < num_parts; ++p) {
    std::set<int> after;
    for (const ir::Node* n : pl.partitions[p].nodes)
      for (const ir::Value* v : n->inputs()) {
        auto it = v && v->producer() ? partition_of.find(v->producer()) : partition_of.end();
        if (it != partition_of.end() && it->second != p) after.insert(static_cast<int>(it->second));
      }
    plan.steps[p].after.assign(after.begin(), after.end());
  }
  return plan;
}

}  // namespace

backends::CompileOptions backend_options(const std::string& precision, bool fusion,
                                         bool device_graphs) {
  backends::CompileOptions o;
  o.precision = backends::parse_precision(precision);
  o.fusion = fusion;
  o.device_graphs = device_graphs;
  return o;
}

void optimize_graph(ir::Graph& graph, const runtime::KernelRegistry& kernels) {
  passes::PassContext ctx;
  ctx.evaluate = [&kernels, &ctx](const ir::Node& node, const std::vector<ir::Datum>& inputs) {
    if (!kernels.supports(node).ok) return std::vector<ir::Datum>{};
    // Compile time stays bounded whatever the model holds: folding skips nodes whose static
    // work is large (deterministic, unlike a timer) and caps what one evaluation allocates.
    if (backends::estimate_node_work(node).flops > kMaxFoldedFlops) return std::vector<ir::Datum>{};
    try {
      return runtime::evaluate_node(kernels, node, inputs, 4 * ctx.max_folded_bytes);
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
  passes::merge_common_subexpressions(graph);
  if (passes::fuse_layer_norm(graph) > 0) ops::infer_types(graph);
  passes::remove_dead_nodes(graph, ctx);
}

CompiledModel::CompiledModel(std::shared_ptr<const runtime::Executable> executable,
                             placement::PlacementReport report, CompileOptions options,
                             PlacementRecord record)
    : executable_(std::move(executable)),
      report_(std::move(report)),
      options_(std::move(options)),
      record_(std::move(record)) {}

std::shared_ptr<const CompiledModel> compile(
    std::unique_ptr<ir::Graph> graph, std::vector<std::shared_ptr<const backends::Backend>> devices,
    const CompileOptions& options) {
  SY_CHECK(graph != nullptr, InvalidArgument, "compile: no graph given");
  SY_CHECK(!devices.empty() && devices[0]->device().is_host, Internal,
           "compile: the host cpu must be the first device");
  ops::infer_types(*graph);
  ir::verify(*graph);
  if (options.optimize && devices[0]->host_kernels()) {
    optimize_graph(*graph, *devices[0]->host_kernels());
    ir::verify(*graph);
  }
  std::vector<const backends::Backend*> raw;
  for (const auto& d : devices) raw.push_back(d.get());
  placement::Placement pl = placement::place(*graph, raw, options.policy, options.backend);
  pl.report.model = graph->name();
  return lower_placed(std::move(graph), std::move(devices), std::move(pl), options);
}

namespace {

PlacementRecord record_of(const ir::Graph& graph, const placement::Placement& pl,
                          const std::vector<std::shared_ptr<const backends::Backend>>& devices) {
  PlacementRecord r;
  for (const auto& d : devices) r.devices.push_back(d->device());
  r.node_device = pl.node_device;
  std::map<const ir::Node*, int> index;
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    index.emplace(graph.nodes()[i].get(), static_cast<int>(i));
  for (size_t p = 0; p < pl.partitions.size(); ++p) {
    const backends::Partition& part = pl.partitions[p];
    PlacementRecord::Partition rp;
    rp.device = pl.partition_device[p];
    for (const ir::Node* n : part.nodes) rp.nodes.push_back(index.at(n));
    for (const ir::Value* v : part.inputs) rp.inputs.push_back(v->name());
    for (const ir::Value* v : part.outputs) rp.outputs.push_back(v->name());
    rp.input_on_host = part.input_on_host;
    r.partitions.push_back(std::move(rp));
  }
  for (const auto& c : pl.copies)
    r.copies.push_back({c.value->name(), c.from_device, c.to_device, c.before_partition});
  for (const auto& c : pl.shape_transfers)
    r.shape_transfers.push_back({c.value->name(), c.from_device, c.to_device, c.before_partition});
  return r;
}

}  // namespace

std::shared_ptr<const CompiledModel> lower_placed(
    std::unique_ptr<ir::Graph> graph, std::vector<std::shared_ptr<const backends::Backend>> devices,
    placement::Placement pl, const CompileOptions& options) {
  std::vector<const backends::Backend*> raw;
  for (const auto& d : devices) raw.push_back(d.get());
  PlacementRecord record = record_of(*graph, pl, devices);
  for (const std::string& note : options.report_notes) pl.report.notes.push_back(note);
  for (backends::Partition& p : pl.partitions) p.host_kernels = raw[0]->host_kernels();
  // --memory-limit: the cpu's caps each run's host memory; any other device's is a budget the
  // executable's partitions and runs share there.
  runtime::RuntimeOptions ro;
  std::vector<std::shared_ptr<runtime::MemoryBudget>> budgets(devices.size());
  {
    std::vector<const runtime::DeviceInfo*> infos;
    for (const auto& d : devices) infos.push_back(&d->device());
    for (const auto& [spec, bytes] : options.policy.memory_limits) {
      size_t d = static_cast<size_t>(runtime::resolve_device(spec, infos));
      if (infos[d]->is_host) {
        ro.run_memory_limits[infos[d]->id] = bytes;
      } else {
        budgets[d] = std::make_shared<runtime::MemoryBudget>(bytes, infos[d]->id);
        ro.memory_budgets[infos[d]->id] = budgets[d];
      }
    }
  }
  std::vector<std::unique_ptr<runtime::CompiledPartition>> parts;
  for (size_t p = 0; p < pl.partitions.size(); ++p) {
    size_t d = static_cast<size_t>(pl.partition_device[p]);
    backends::CompileOptions bo = options.backend;
    bo.memory_budget = budgets[d];
    parts.push_back(raw[d]->compile(pl.partitions[p], bo));
  }
  runtime::ExecutionPlan plan = make_plan(*graph, pl, std::move(parts));
  record_compiled_facts(pl, plan.steps, pl.report);
  check_options_took_effect(pl, plan.steps, options);

  ro.num_threads = options.num_threads;
  ro.shape_cache_capacity = options.shape_cache_capacity;
  ro.poison_buffers = options.poison_buffers;
  ro.max_in_flight = options.max_in_flight;
  std::vector<std::shared_ptr<const runtime::Device>> run_devices(devices.begin(), devices.end());
  auto exe = std::make_shared<const runtime::Executable>(std::move(graph), std::move(run_devices),
                                                         std::move(plan), ro);
  return std::make_shared<const CompiledModel>(std::move(exe), std::move(pl.report), options,
                                               std::move(record));
}

}  // namespace switchyard::compiler
