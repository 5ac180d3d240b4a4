#include "placement/placer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ir/check.h"
#include "ops/op_traits.h"

namespace switchyard::placement {

namespace {

using backends::Backend;

std::vector<const runtime::DeviceInfo*> infos_of(const std::vector<const Backend*>& devices) {
  std::vector<const runtime::DeviceInfo*> out;
  for (const Backend* b : devices) out.push_back(&b->device());
  return out;
}

bool shape_like(const ir::Value* v) { return ir::is_shape_like(v->type()); }

// Values of `graph` a node reads, directly or from inside its subgraphs, in first-use order.
std::vector<const ir::Value*> values_read(const ir::Node& node, const ir::Graph& graph) {
  std::vector<const ir::Value*> out;
  if (node.subgraphs().empty()) {
    // The common case, without the set and the walk: a handful of inputs.
    for (const ir::Value* v : node.inputs())
      if (v && v->owner() == &graph && std::find(out.begin(), out.end(), v) == out.end())
        out.push_back(v);
    return out;
  }
  std::set<const ir::Value*> seen;
  auto add = [&](const ir::Value* v) {
    if (v && v->owner() == &graph && seen.insert(v).second) out.push_back(v);
  };
  for (const ir::Value* v : node.inputs()) add(v);
  std::function<void(const ir::Graph&)> walk = [&](const ir::Graph& sub) {
    for (const auto& n : sub.nodes()) {
      for (const ir::Value* v : n->inputs()) add(v);
      for (const ir::Graph* s : n->subgraphs()) walk(*s);
    }
    for (const ir::Value* v : sub.outputs()) add(v);
  };
  for (const ir::Graph* s : node.subgraphs()) walk(*s);
  return out;
}

// Values `node` reads only through its ordering inputs (ops::OpTraits::is_ordering_input): the
// node runs after their producers but needs none of their data.
std::vector<const ir::Value*> ordering_only_reads(const ir::Node& node) {
  const ops::OpTraits& traits = ops::traits(node);
  std::vector<const ir::Value*> out;
  if (traits.first_ordering_input < 0 || !node.subgraphs().empty()) return out;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    const ir::Value* v = node.input(i);
    if (!v || !traits.is_ordering_input(i) || std::find(out.begin(), out.end(), v) != out.end())
      continue;
    bool data = false;
    for (size_t k = 0; k < node.num_inputs(); ++k)
      data = data || (node.input(k) == v && !traits.is_ordering_input(k));
    if (!data) out.push_back(v);
  }
  return out;
}

int64_t static_bytes(const ir::Value* v) {
  const ir::Type& t = v->type();
  if (!t.is_tensor() || !t.shape) return -1;
  auto dims = ir::static_dims(*t.shape);
  if (!dims) return -1;
  int64_t n = 1;
  for (int64_t d : *dims) n *= d;
  return n * static_cast<int64_t>(ir::dtype_size(t.dtype));
}

// Estimated microseconds to move `v` to or from a device (unknown dims count as 1).
double copy_cost_us(const ir::Value* v, const runtime::DeviceInfo& d) {
  double bytes = 4;
  const ir::Type& t = v->type();
  if (t.is_tensor() && t.shape) {
    bytes = static_cast<double>(ir::dtype_size(t.dtype));
    for (const ir::Dim& dim : *t.shape)
      bytes *= dim.is_static() ? static_cast<double>(dim.value) : 1;
  }
  double bw = d.copy_gbytes_per_s > 0 ? d.copy_gbytes_per_s : 10.0;
  return d.copy_latency_us + bytes / (bw * 1e3);
}

struct NodeState {
  int device = 0;
  Cause cause = Cause::Preferred;
  std::string reason;
  double copy_cost_us = 0;
  double saving_us = 0;
};

class Placer {
 public:
  Placer(const ir::Graph& graph, const std::vector<const Backend*>& devices, const Policy& policy,
         const backends::CompileOptions& lowering)
      : graph_(graph), all_(devices), policy_(policy), lowering_(lowering) {}

  Placement run() {
    SY_CHECK(!all_.empty() && all_[0]->device().is_host, Internal,
             "placement needs the host cpu as device 0");
    choose_devices();
    index_nodes();
    assign_pins_capability_and_targets();
    keep_shape_computations_on_host();
    merge_islands();
    check_memory_limits();
    return partition_and_plan_copies();
  }

 private:
  // Pass 0: the devices the compute units allow, the target(s), and option checks.
  void choose_devices() {
    for (size_t i = 0; i < all_.size(); ++i) {
      const auto& d = all_[i]->device();
      bool allowed = d.is_host || policy_.compute_units == ComputeUnits::All ||
                     (policy_.compute_units == ComputeUnits::CpuAndGpu && d.is_gpu);
      if (allowed) allowed_.push_back(static_cast<int>(i));
    }
    // Errors name the option that asked for the device (`option`: "--device sim:3").
    auto resolve_for = [&](const std::string& spec, const std::string& option) {
      try {
        return runtime::resolve_device(spec, infos_of(all_));
      } catch (const Error& e) {
        SY_THROW(InvalidArgument, "{}: {}", option, e.message());
      }
    };
    auto allowed_index = [&](const std::string& spec, const std::string& option) {
      int idx = resolve_for(spec, option);
      SY_CHECK(std::find(allowed_.begin(), allowed_.end(), idx) != allowed_.end(), InvalidArgument,
               "{}: the device is excluded by --compute-units {}", option,
               policy_.compute_units == ComputeUnits::CpuOnly ? "cpu_only" : "cpu_and_gpu");
      return idx;
    };
    for (const std::string& spec : policy_.devices)
      targets_.push_back(allowed_index(spec, "--device " + spec));
    if (targets_.empty()) {
      // Default: the GPU with the most memory among those allowed, else the cpu.
      int best = 0;
      for (int i : allowed_) {
        const auto& d = all_[static_cast<size_t>(i)]->device();
        if (d.is_gpu &&
            (best == 0 || d.memory_bytes > all_[static_cast<size_t>(best)]->device().memory_bytes))
          best = i;
      }
      targets_.push_back(best);
    }
    if (policy_.split == SplitMode::Pipeline) {
      SY_CHECK(targets_.size() >= 2, InvalidArgument,
               "--split pipeline needs at least two devices in --device (got {})", targets_.size());
    } else {
      SY_CHECK(targets_.size() == 1, InvalidArgument,
               "--device lists {} devices; several devices need --split pipeline", targets_.size());
    }
    SY_CHECK(policy_.min_partition_nodes >= 1, InvalidArgument,
             "--min-partition-nodes {}: must be at least 1", policy_.min_partition_nodes);
    for (const auto& [spec, bytes] : policy_.memory_limits) {
      int idx = resolve_for(spec, fmt::format("--memory-limit {}={}", spec, bytes));
      memory_limit_[idx] = bytes;
    }
    for (const Pin& pin : policy_.pins)
      pin_devices_.push_back(
          allowed_index(pin.device, fmt::format("--pin {}={}", pin.pattern, pin.device)));
  }

  void index_nodes() {
    for (const auto& n : graph_.nodes()) {
      node_index_[n.get()] = static_cast<int>(nodes_.size());
      nodes_.push_back(n.get());
    }
    state_.resize(nodes_.size());
    reads_.resize(nodes_.size());
    estimates_.resize(all_.size());
    host_runs_.assign(nodes_.size(), -1);
    ordering_reads_.resize(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      reads_[i] = values_read(*nodes_[i], graph_);
      for (const ir::Value* v : ordering_only_reads(*nodes_[i])) ordering_reads_[i].insert(v);
    }
    std::function<void(const ir::Graph&, const ir::Node*)> own = [&](const ir::Graph& g,
                                                                     const ir::Node* top) {
      top_of_graph_[&g] = top;
      for (const auto& n : g.nodes())
        for (const ir::Graph* s : n->subgraphs()) own(*s, top);
    };
    for (const ir::Node* n : nodes_)
      for (const ir::Graph* s : n->subgraphs()) own(*s, n);
    graph_outputs_.insert(graph_.outputs().begin(), graph_.outputs().end());
  }

  const Backend& dev(int i) const { return *all_[static_cast<size_t>(i)]; }

  // Node i's estimated µs on device d; each is computed once (estimates are pure).
  double estimate_us(size_t i, int d) {
    std::vector<double>& cache = estimates_[static_cast<size_t>(d)];
    if (cache.empty()) cache.assign(nodes_.size(), -1.0);
    if (cache[i] < 0) cache[i] = dev(d).estimate(*nodes_[i], lowering_).microseconds;
    return cache[i];
  }

  // Whether the host can run node i (asked once).
  bool host_runs(size_t i) {
    if (host_runs_[i] < 0) host_runs_[i] = dev(0).supports(*nodes_[i]).ok ? 1 : 0;
    return host_runs_[i] == 1;
  }
  const std::string& dev_id(int i) const { return dev(i).device().id; }

  // The device each node is meant for before capability: the target, or its pipeline stage.
  std::vector<int> stage_devices() {
    std::vector<int> out(nodes_.size(), targets_[0]);
    if (policy_.split != SplitMode::Pipeline) return out;
    // Contiguous stages balanced by estimated cost, each bounded by its device's memory limit
    // (the bytes of the weights its nodes read).
    std::vector<double> cost(nodes_.size());
    std::vector<double> weights(nodes_.size(), 0);
    double total = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      cost[i] = estimate_us(i, targets_[0]);
      total += cost[i];
      for (const ir::Value* v : reads_[i])
        if (v->is_constant()) weights[i] += static_cast<double>(v->constant().nbytes());
    }
    size_t stages = targets_.size();
    size_t node = 0;
    double done = 0;
    for (size_t s = 0; s < stages; ++s) {
      int d = targets_[s];
      double limit = limit_of(d);
      double used = 0;
      double goal = total * static_cast<double>(s + 1) / static_cast<double>(stages);
      size_t begin = node;
      while (node < nodes_.size()) {
        bool last_stage = s + 1 == stages;
        if (!last_stage && node > begin && done + cost[node] / 2 > goal) break;
        if (used + weights[node] > limit) {
          SY_CHECK(!last_stage && node > begin, PlacementFailed,
                   "--split pipeline: the weights of stage {} exceed the memory limit of {} "
                   "({:.0f} bytes > {:.0f})",
                   s + 1, dev_id(d), used + weights[node], limit);
          break;
        }
        used += weights[node];
        done += cost[node];
        out[node] = d;
        stage_of_[node] = static_cast<int>(s);
        ++node;
      }
    }
    return out;
  }

  double limit_of(int d) const {
    auto it = memory_limit_.find(d);
    if (it != memory_limit_.end()) return static_cast<double>(it->second);
    uint64_t m = dev(d).device().memory_bytes;
    return m ? static_cast<double>(m) : 1e300;
  }

  // Passes 1, 2 and 4: pins, capability (fallback or strict), preferred device / stage.
  void assign_pins_capability_and_targets() {
    std::vector<int> wanted = stage_devices();
    std::vector<std::string> strict_failures;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const ir::Node& n = *nodes_[i];
      NodeState& st = state_[i];
      int pin = matching_pin(n);
      if (pin >= 0) {
        int d = pin_devices_[static_cast<size_t>(pin)];
        runtime::Support s = dev(d).supports(n);
        SY_CHECK(s.ok, PlacementFailed, "--pin {}={}: node '{}' ({}) cannot run on {}: {}",
                 policy_.pins[static_cast<size_t>(pin)].pattern,
                 policy_.pins[static_cast<size_t>(pin)].device, n.name(), n.op_type(), dev_id(d),
                 s.reason);
        st = {d, Cause::Pinned,
              fmt::format("pinned by --pin {}={}", policy_.pins[static_cast<size_t>(pin)].pattern,
                          policy_.pins[static_cast<size_t>(pin)].device)};
        continue;
      }
      int d = wanted[i];
      runtime::Support s = dev(d).supports(n);
      if (!s.ok) {
        if (policy_.fallback == Fallback::Strict) {
          strict_failures.push_back(fmt::format("  node '{}' ({}) on {}: {}", n.name(), n.op_type(),
                                                dev_id(d), s.reason));
          continue;
        }
        runtime::Support host = dev(0).supports(n);
        SY_CHECK(host.ok, Unsupported, "{}: no device can run it: {}; cpu: {}", n.describe(),
                 s.reason, host.reason);
        st = {0, Cause::Unsupported, s.reason};
        continue;
      }
      if (policy_.split == SplitMode::Pipeline) {
        st = {d, Cause::Split,
              fmt::format("pipeline stage {} of {} on {}", stage_of_[i] + 1, targets_.size(),
                          dev_id(d))};
      } else {
        st = {d, Cause::Preferred, preferred_reason(d)};
      }
    }
    for (size_t p = 0; p < policy_.pins.size(); ++p) {
      const std::string& pat = policy_.pins[p].pattern;
      bool any = false;
      for (const ir::Node* n : nodes_)
        any = any || (pat.rfind("op:", 0) == 0 ? n->op_type() == pat.substr(3)
                                               : glob_match(pat, n->name()));
      SY_CHECK(any, InvalidArgument,
               "--pin {}={}: matches no node (patterns match node names as `switchyard explain` "
               "shows them, or op:Type)",
               pat, policy_.pins[p].device);
    }
    if (!strict_failures.empty()) {
      std::string lines;
      for (const auto& l : strict_failures) lines += "\n" + l;
      SY_THROW(PlacementFailed, "strict placement failed: {} node{} cannot run where asked:{}",
               strict_failures.size(), strict_failures.size() == 1 ? "" : "s", lines);
    }
  }

  // The reason of a node the target runs, formatted once per device.
  const std::string& preferred_reason(int d) {
    auto [it, fresh] = preferred_reasons_.emplace(d, "");
    if (!fresh) return it->second;
    it->second = d == 0 && all_.size() == 1 ? "cpu is the only device"
                                            : fmt::format("{} is the preferred device", dev_id(d));
    return it->second;
  }

  int matching_pin(const ir::Node& n) const {
    for (size_t p = 0; p < policy_.pins.size(); ++p) {
      const std::string& pat = policy_.pins[p].pattern;
      bool hit =
          pat.rfind("op:", 0) == 0 ? n.op_type() == pat.substr(3) : glob_match(pat, n.name());
      if (hit) return static_cast<int>(p);
    }
    return -1;
  }

  // The weights each device holds (each constant once) must fit its --memory-limit.
  // The host's limit caps what a run allocates (the runtime enforces it), not the weights.
  void check_memory_limits() const {
    for (const auto& [d, limit] : memory_limit_) {
      if (dev(d).device().is_host) continue;
      std::set<const ir::Value*> weights;
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (state_[i].device == d)
          for (const ir::Value* v : reads_[i])
            if (v->is_constant()) weights.insert(v);
      uint64_t bytes = 0;
      for (const ir::Value* v : weights) bytes += v->constant().nbytes();
      SY_CHECK(bytes <= limit, PlacementFailed,
               "--memory-limit {}={}: the weights placed there take {} bytes", dev_id(d), limit,
               bytes);
    }
  }

  // Pass 3: small integer shape computations (Shape → Gather → Concat chains) stay on the host,
  // so no device sync is needed to learn a shape.
  void keep_shape_computations_on_host() {
    std::vector<bool> host_shape(nodes_.size(), false);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const ir::Node& n = *nodes_[i];
      bool outputs_small = n.num_outputs() > 0;
      for (const ir::Value* v : n.outputs()) outputs_small = outputs_small && shape_like(v);
      if (!outputs_small || !n.subgraphs().empty()) continue;
      bool from_shapes = ops::traits(n).reads_only_shape;
      if (!from_shapes) {
        bool any_input = false;
        from_shapes = true;
        for (const ir::Value* v : n.inputs()) {
          if (!v || v->is_constant()) continue;
          any_input = true;
          const ir::Node* p = v->owner() == &graph_ ? v->producer() : nullptr;
          if (!p || !host_shape[static_cast<size_t>(node_index_.at(p))]) from_shapes = false;
        }
        from_shapes = from_shapes && any_input;
      }
      if (!from_shapes) continue;
      host_shape[i] = true;
      NodeState& st = state_[i];
      if (st.device == 0 || (st.cause != Cause::Preferred && st.cause != Cause::Split)) continue;
      // A device that runs shape steps inside its partitions keeps a chain that starts from
      // its own values: the partition need not be split around a cpu partition.
      if (dev(st.device).runs_shape_steps_inline() && inputs_produced_on(i, st.device)) {
        st.cause = Cause::HostShape;
        st.reason = fmt::format(
            "a small integer shape computation: run on the host inside its {} partition, so no "
            "device sync is needed and the partition is not split",
            dev_id(st.device));
        continue;
      }
      if (!host_runs(i)) continue;
      st = {0, Cause::HostShape,
            "a small integer shape computation: kept on the host so no device sync is needed"};
    }
  }

  // Whether every non-constant input of node i is produced by a node on device d, or is a
  // graph input that a node on d reads for its data (so d's partition takes it anyway: the
  // Shape of a transformer's input_ids beside the embedding Gather).
  bool inputs_produced_on(size_t i, int d) const {
    for (const ir::Value* v : nodes_[i]->inputs()) {
      if (!v || v->is_constant()) continue;
      if (v->is_graph_input() && v->owner() == &graph_) {
        if (!data_read_on(v, d, i)) return false;
        continue;
      }
      const ir::Node* p = v->owner() == &graph_ ? v->producer() : nullptr;
      if (!p || state_[static_cast<size_t>(node_index_.at(p))].device != d) return false;
    }
    return true;
  }

  // Whether a node on device d other than node `except` reads `v`'s data (not Shape or Size).
  bool data_read_on(const ir::Value* v, int d, size_t except) const {
    for (size_t j = 0; j < nodes_.size(); ++j)
      if (j != except && state_[j].device == d && !ops::traits(*nodes_[j]).reads_only_shape &&
          std::find(reads_[j].begin(), reads_[j].end(), v) != reads_[j].end())
        return true;
    return false;
  }

  // Pass 5: an accelerator island whose copies cost more than it saves moves to the host;
  // so does one smaller than --min-partition-nodes. Never across a pin; never in strict mode
  // onto a device the user did not ask for.
  void merge_islands() {
    bool host_allowed = policy_.fallback == Fallback::Allow ||
                        std::find(targets_.begin(), targets_.end(), 0) != targets_.end();
    if (!host_allowed) return;
    std::vector<int> island(nodes_.size(), -1);
    std::vector<size_t> next;  // one node's neighbours, reused
    int count = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (island[i] >= 0 || state_[i].device == 0 || !movable(i)) continue;
      // Flood-fill movable nodes on the same device connected by data edges.
      std::vector<size_t> members;
      std::vector<size_t> work = {i};
      island[i] = count;
      while (!work.empty()) {
        size_t k = work.back();
        work.pop_back();
        members.push_back(k);
        neighbours(k, next);
        for (size_t j : next) {
          if (island[j] < 0 && state_[j].device == state_[i].device && movable(j)) {
            island[j] = count;
            work.push_back(j);
          }
        }
      }
      std::sort(members.begin(), members.end());
      consider_island(members, island, count);
      ++count;
    }
  }

  bool movable(size_t i) const {
    return state_[i].cause == Cause::Preferred || state_[i].cause == Cause::Split;
  }

  // Node k's producers and (top-level) consumers, into `out`.
  void neighbours(size_t k, std::vector<size_t>& out) {
    out.clear();
    for (const ir::Value* v : reads_[k])
      if (v->producer()) out.push_back(static_cast<size_t>(node_index_.at(v->producer())));
    for (const ir::Value* v : nodes_[k]->outputs())
      for (auto [user, idx] : v->uses()) {
        const ir::Node* top = top_level(user);
        if (top) out.push_back(static_cast<size_t>(node_index_.at(top)));
      }
  }

  // The top-level node a (possibly nested) node belongs to; nullptr if none.
  const ir::Node* top_level(const ir::Node* n) const {
    if (!n || n->owner() == &graph_) return n;
    auto it = top_of_graph_.find(n->owner());
    return it == top_of_graph_.end() ? nullptr : it->second;
  }

  // `members`: the nodes k with island[k] == id.
  void consider_island(const std::vector<size_t>& members, const std::vector<int>& island, int id) {
    int d = state_[members[0]].device;
    auto in_island = [&](const ir::Node* n) {
      return island[static_cast<size_t>(node_index_.at(n))] == id;
    };
    for (size_t k : members)
      if (!host_runs(k)) return;  // cannot move to the host
    const auto& info = dev(d).device();
    double copy_cost = 0;
    double saving = 0;
    // In first-seen order, not pointer order: the sum of their costs must not depend on where
    // the allocator put the values (the report prints it, and ties decide moves).
    std::vector<const ir::Value*> crossing;
    std::set<const ir::Value*> crossing_seen;
    auto cross = [&](const ir::Value* v) {
      if (crossing_seen.insert(v).second) crossing.push_back(v);
    };
    for (size_t k : members) {
      saving += estimate_us(k, 0) - estimate_us(k, d);
      for (const ir::Value* v : reads_[k]) {
        if (v->is_constant() || ordering_reads_[k].count(v)) continue;  // no data crosses
        const ir::Node* p = v->producer();
        if (!p || !in_island(p)) cross(v);
      }
      for (const ir::Value* v : nodes_[k]->outputs()) {
        bool leaves = graph_outputs_.count(v) > 0;
        for (auto [user, idx] : v->uses()) {
          const ir::Node* top = top_level(user);
          if (top && !in_island(top) &&
              !ordering_reads_[static_cast<size_t>(node_index_.at(top))].count(v))
            leaves = true;
        }
        if (leaves) cross(v);
      }
    }
    for (const ir::Value* v : crossing) copy_cost += copy_cost_us(v, info);
    bool too_small = static_cast<int>(members.size()) < policy_.min_partition_nodes;
    if (!(copy_cost > saving) && !too_small) return;
    std::string reason =
        too_small && !(copy_cost > saving)
            ? fmt::format("island of {} node{} on {} is below --min-partition-nodes {}",
                          members.size(), members.size() == 1 ? "" : "s", info.id,
                          policy_.min_partition_nodes)
            : fmt::format(
                  "island of {} node{} moved from {} to the cpu: its copies "
                  "would cost more than running there saves",
                  members.size(), members.size() == 1 ? "" : "s", info.id);
    for (size_t k : members) {
      NodeState& st = state_[k];
      st.device = 0;
      st.cause = Cause::Island;
      st.copy_cost_us = copy_cost;
      st.saving_us = saving;
      st.reason = reason;
    }
  }

  // Partitions: stage(n) = max over producers p of stage(p) + (device differs). Nodes sharing
  // (stage, device) form one partition; every cross-device edge climbs a stage, so the
  // partition graph is acyclic. Then one copy per (value, destination device).
  Placement partition_and_plan_copies() {
    // Levels: the device changes on the longest path to a node (earliest). Then, from the last
    // node back, a node moves as late as its readers allow, but only into a level where its
    // device already has a group: a node that can wait (BERT's word embedding, a graph input's
    // gather on cuda:0, beside a host shape step whose cuda:0 readers come later) joins its
    // device's later partition instead of opening one of its own, and no move opens a
    // partition the earliest levels did not have. nodes_ is in topological order.
    std::vector<int> level(nodes_.size(), 0);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      for (const ir::Value* v : reads_[i]) {
        if (!v->producer()) continue;
        size_t p = static_cast<size_t>(node_index_.at(v->producer()));
        level[i] = std::max(level[i], level[p] + (state_[p].device != state_[i].device ? 1 : 0));
      }
    }
    const int last = nodes_.empty() ? 0 : *std::max_element(level.begin(), level.end());
    std::set<std::pair<int, int>> earliest_groups;  // (level, device) of the earliest levels
    for (size_t i = 0; i < nodes_.size(); ++i) earliest_groups.insert({level[i], state_[i].device});
    std::vector<int> bound(nodes_.size(), last);  // the latest level each node's readers allow
    for (size_t i = nodes_.size(); i-- > 0;) {
      for (int l = bound[i]; l > level[i]; --l) {
        if (earliest_groups.count({l, state_[i].device})) {
          level[i] = l;
          break;
        }
      }
      for (const ir::Value* v : reads_[i]) {
        if (!v->producer()) continue;
        size_t p = static_cast<size_t>(node_index_.at(v->producer()));
        bound[p] = std::min(bound[p], level[i] - (state_[p].device != state_[i].device ? 1 : 0));
      }
    }
    std::map<std::pair<int, int>, int> key_to_partition;  // (level, device order) → index
    std::map<std::pair<int, int>, std::vector<size_t>> groups;
    for (size_t i = 0; i < nodes_.size(); ++i) groups[{level[i], state_[i].device}].push_back(i);
    Placement out;
    out.devices = all_;
    out.node_device.resize(nodes_.size());
    std::vector<int> partition_of(nodes_.size());
    for (auto& [key, members] : groups) {
      int index = static_cast<int>(out.partitions.size());
      backends::Partition p;
      p.index = index;
      p.device = dev_id(key.second);
      p.graph = &graph_;
      for (size_t k : members) {
        p.nodes.push_back(nodes_[k]);
        partition_of[k] = index;
      }
      out.partitions.push_back(std::move(p));
      out.partition_device.push_back(key.second);
    }
    for (size_t i = 0; i < nodes_.size(); ++i) out.node_device[i] = state_[i].device;

    // Boundary values and copies.
    auto home_of = [&](const ir::Value* v) {
      return v->producer() ? state_[static_cast<size_t>(node_index_.at(v->producer()))].device : 0;
    };
    std::set<std::pair<const ir::Value*, int>> resident;  // (value, device) already there
    for (auto& p : out.partitions) {
      int pd = out.partition_device[static_cast<size_t>(p.index)];
      std::set<const ir::Value*> inside;
      for (const ir::Node* n : p.nodes)
        for (const ir::Value* v : n->outputs()) inside.insert(v);
      std::set<const ir::Value*> seen;
      // Values some node of the partition reads for their data: all that a node other than
      // Shape/Size reads, directly or from its bodies (Shape and Size have no bodies).
      std::unordered_set<const ir::Value*> data_read;
      for (const ir::Node* n : p.nodes)
        if (!ops::traits(*n).reads_only_shape)
          for (const ir::Value* v : reads_[static_cast<size_t>(node_index_.at(n))])
            data_read.insert(v);
      // On a device, values that every reading kernel takes on the host (shape-like inputs)
      // go to the host instead, so the kernel needs no device sync to read them.
      std::set<const ir::Value*> host_read, device_read;
      if (!dev(pd).device().is_host) {
        for (const ir::Node* n : p.nodes) {
          std::vector<int> hi = dev(pd).host_inputs(*n);
          std::set<const ir::Value*> direct;
          for (size_t k = 0; k < n->num_inputs(); ++k) {
            const ir::Value* v = n->input(k);
            if (!v) continue;
            direct.insert(v);
            bool on_host = std::find(hi.begin(), hi.end(), static_cast<int>(k)) != hi.end();
            (on_host ? host_read : device_read).insert(v);
          }
          for (const ir::Value* v : reads_[static_cast<size_t>(node_index_.at(n))])
            if (!direct.count(v)) device_read.insert(v);
        }
      }
      // Values the partition's nodes read only to run after their producers: no input, no
      // copy (the producer's partition comes first: its level is lower or it is this one).
      std::unordered_set<const ir::Value*> needed;
      for (const ir::Node* n : p.nodes) {
        size_t i = static_cast<size_t>(node_index_.at(n));
        for (const ir::Value* v : reads_[i])
          if (!ordering_reads_[i].count(v)) needed.insert(v);
      }
      for (const ir::Node* n : p.nodes) {
        for (const ir::Value* v : reads_[static_cast<size_t>(node_index_.at(n))]) {
          if (v->is_constant() || inside.count(v) || !needed.count(v)) continue;
          if (!seen.insert(v).second) continue;
          p.inputs.push_back(v);
          bool on_host = host_read.count(v) && !device_read.count(v);
          p.input_on_host.push_back(on_host ? 1 : 0);
          int home = home_of(v);
          if (on_host) {
            if (home != 0 && resident.insert({v, 0}).second)
              out.copies.push_back({v, home, 0, p.index});
            continue;
          }
          if (home == pd) continue;
          // Only the host takes a value's shape without its data: a device partition checks
          // that every input lives in its memory, so it gets a real copy.
          bool shape_only = dev(pd).device().is_host && !data_read.count(v);
          if (shape_only) {
            out.shape_transfers.push_back({v, home, pd, p.index});
          } else if (resident.insert({v, pd}).second) {
            out.copies.push_back({v, home, pd, p.index});
          }
        }
      }
      for (const ir::Node* n : p.nodes)
        for (const ir::Value* v : n->outputs()) {
          bool read_elsewhere = graph_outputs_.count(v) > 0;
          for (auto [user, idx] : v->uses()) {
            const ir::Node* top = top_level(user);
            if (!top) continue;
            size_t t = static_cast<size_t>(node_index_.at(top));
            if (partition_of[t] != p.index && !ordering_reads_[t].count(v)) read_elsewhere = true;
          }
          if (read_elsewhere) p.outputs.push_back(v);
        }
    }
    for (const ir::Value* v : graph_.outputs()) {
      if (v->is_constant() || v->is_graph_input()) continue;
      int home = home_of(v);
      if (home != 0 && resident.insert({v, 0}).second) out.copies.push_back({v, home, 0, -1});
    }
    out.report = make_report(out, partition_of);
    return out;
  }

  PlacementReport make_report(const Placement& pl, const std::vector<int>& partition_of) {
    PlacementReport r;
    r.model = graph_.name();
    r.target = dev_id(targets_[0]);
    for (size_t t = 1; t < targets_.size(); ++t) r.target += "," + dev_id(targets_[t]);
    for (int i : allowed_) r.devices.push_back(dev_id(i));
    r.policy = policy_.describe();
    for (size_t i = 0; i < nodes_.size(); ++i) {
      NodeState& st = state_[i];
      NodeDecision d;
      d.node = nodes_[i]->name();
      d.op = nodes_[i]->op_type();
      d.device = dev_id(st.device);
      d.cause = st.cause;
      d.reason = std::move(st.reason);  // the placer is done with it
      d.partition = partition_of[i];
      d.copy_cost_us = st.copy_cost_us;
      d.saving_us = st.saving_us;
      r.nodes.push_back(std::move(d));
    }
    for (size_t p = 0; p < pl.partitions.size(); ++p) {
      PartitionInfo info;
      info.index = static_cast<int>(p);
      info.device = pl.partitions[p].device;
      for (const ir::Node* n : pl.partitions[p].nodes) {
        info.nodes.push_back(n->name());
        info.estimated_us +=
            estimate_us(static_cast<size_t>(node_index_.at(n)), pl.partition_device[p]);
      }
      r.partitions.push_back(std::move(info));
    }
    for (const PlannedCopy& c : pl.copies) {
      CopyInfo info;
      info.value = c.value->name();
      info.from_device = dev_id(c.from_device);
      info.to_device = dev_id(c.to_device);
      info.from_partition =
          c.value->producer()
              ? partition_of[static_cast<size_t>(node_index_.at(c.value->producer()))]
              : -1;
      info.to_partition = c.before_partition;
      info.bytes = static_bytes(c.value);
      r.copies.push_back(std::move(info));
    }
    for (size_t i = 0; i < nodes_.size(); ++i)
      for (const ir::Value* v : reads_[i])
        if (v->producer()) {
          size_t p = static_cast<size_t>(node_index_.at(v->producer()));
          bool control = ordering_reads_[i].count(v) > 0;
          r.edges.push_back({nodes_[p]->name(), nodes_[i]->name(), v->name(),
                             !control && state_[p].device != state_[i].device, control});
        }
    return r;
  }

  const ir::Graph& graph_;
  const std::vector<const Backend*>& all_;
  const Policy& policy_;
  const backends::CompileOptions& lowering_;  // what the devices' estimates assume
  std::vector<int> allowed_;
  std::vector<int> targets_;
  std::vector<int> pin_devices_;
  std::map<int, uint64_t> memory_limit_;
  std::vector<const ir::Node*> nodes_;
  std::unordered_map<const ir::Node*, int> node_index_;
  std::vector<std::vector<const ir::Value*>> reads_;
  // Per node: the values of reads_ it reads only through ordering inputs (no data needed).
  std::vector<std::unordered_set<const ir::Value*>> ordering_reads_;
  std::vector<NodeState> state_;
  std::map<size_t, int> stage_of_;
  std::unordered_map<const ir::Graph*, const ir::Node*> top_of_graph_;  // nested graph → top node
  std::set<const ir::Value*> graph_outputs_;
  std::map<int, std::string> preferred_reasons_;
  std::vector<std::vector<double>> estimates_;  // [device][node]; empty until asked, -1 unknown
  std::vector<signed char> host_runs_;          // per node: -1 unknown, 0 or 1
};

}  // namespace

Placement place(const ir::Graph& graph, const std::vector<const Backend*>& devices,
                const Policy& policy, const backends::CompileOptions& lowering) {
  return Placer(graph, devices, policy, lowering).run();
}

}  // namespace switchyard::placement
