#include "backends/cuda/step_program.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "backends/cuda/control_flow.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_kernels.h"
#include "ir/check.h"
#include "ops/op_traits.h"
#include "runtime/profiler.h"

namespace switchyard::cuda {

namespace {

// The nodes that run on the host with the cpu kernels: the small integer shape computations
// placement keeps inside this partition (docs/placement.md, rule 3). A node qualifies when its
// outputs are shape-like, it is Shape or Size (which read only their input's shape, known on the
// host without a sync) or every other input is a host step's result or an input that arrives on
// the host, and every reader takes its results on the host: another host step, or a step's host
// input (a Reshape target, a Loop's trip count) in this graph. Its results are never outputs of
// the graph, which must be in device memory, nor read from inside a body; a node that misses a
// condition runs its CUDA kernel as before.
std::set<const ir::Node*> find_host_steps(const ir::Graph& g,
                                          const std::vector<const ir::Value*>& inputs,
                                          const std::vector<char>& on_host,
                                          const runtime::KernelRegistry* host_kernels) {
  if (host_kernels == nullptr) return {};
  const runtime::KernelRegistry& host = *host_kernels;
  std::set<const ir::Value*> host_inputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (i < on_host.size() && on_host[i]) host_inputs.insert(inputs[i]);
  std::set<const ir::Node*> steps;
  for (const auto& n : g.nodes()) {
    bool ok = n->subgraphs().empty() && n->num_outputs() > 0 && host.supports(*n).ok;
    for (const ir::Value* v : n->outputs()) ok = ok && ir::is_shape_like(v->type());
    if (ok) steps.insert(n.get());
  }
  // Drop nodes that break a condition until none does: dropping one can break its neighbours'.
  auto reads_ok = [&](const ir::Node& n) {
    if (ops::traits(n).reads_only_shape) return true;
    for (const ir::Value* v : n.inputs()) {
      if (!v || v->is_constant() || host_inputs.count(v)) continue;
      if (!v->producer() || !steps.count(v->producer())) return false;
    }
    return true;
  };
  auto readers_ok = [&](const ir::Node& n) {
    for (const ir::Value* v : n.outputs()) {
      if (g.is_output(v)) return false;
      for (auto [reader, idx] : v->uses()) {
        if (steps.count(reader)) continue;
        if (reader->owner() != &g) return false;  // read inside a body, on the device
        std::vector<int> hi = step_host_inputs(*reader);
        if (std::find(hi.begin(), hi.end(), idx) == hi.end()) return false;
      }
    }
    return true;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = steps.begin(); it != steps.end();) {
      if (reads_ok(**it) && readers_ok(**it)) {
        ++it;
      } else {
        it = steps.erase(it);
        changed = true;
      }
    }
  }
  return steps;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

}  // namespace

ProgramContext::ProgramContext(const CudaBackend& backend,
                               std::shared_ptr<runtime::MemoryBudget> budget,
                               const runtime::KernelRegistry* host_kernels)
    : backend_(backend),
      host_kernels_(host_kernels),
      constants_pool_(backend.create_pool(false, std::move(budget))),
      host_driven_control_flow_(env_flag("SWITCHYARD_CUDA_HOST_LOOPS")) {}

int32_t ProgramContext::add_fault_node(const ir::Node& node) {
  fault_nodes_.push_back(&node);
  const size_t code = fault_nodes_.size();
  SY_CHECK(code < (size_t{1} << kFaultShift), Unsupported,
           "{}: the partition has more than {} steps, more than its error word can name",
           node.describe(), (size_t{1} << kFaultShift) - 1);
  return static_cast<int32_t>(code);
}

void ProgramContext::throw_kernel_fault(int32_t word, int partition) const {
  const int32_t step = word & ((1 << kFaultShift) - 1);
  const auto fault = static_cast<KernelFault>(word >> kFaultShift);
  const std::string& dev = backend_.device().id;
  SY_CHECK(step > 0 && static_cast<size_t>(step) <= fault_nodes_.size(), Internal,
           "partition {} on {}: a kernel reported fault word {:#x}", partition, dev, word);
  const std::string node = fault_nodes_[static_cast<size_t>(step - 1)]->describe();
  if (fault == KernelFault::IntegerDivisionByZero)
    SY_THROW(InvalidArgument,
             "{}: integer division by zero: input 1 holds a zero (found on {} by the kernel)", node,
             dev);
  SY_THROW(InvalidArgument, "{}: an index is out of range (found on {} by the kernel)", node, dev);
}

std::vector<int> step_host_inputs(const ir::Node& node) {
  if (!node.subgraphs().empty()) return control_flow_host_inputs(node);
  return cuda_kernels().host_inputs(node);
}

struct StepProgram::Step {
  const ir::Node* node = nullptr;
  int32_t code = 0;      // CudaRunContext::error_code while it runs
  bool on_host = false;  // a shape computation run by the cpu kernel (find_host_steps)
  std::unique_ptr<runtime::Kernel> kernel;
  std::unique_ptr<CompositeStep> composite;  // control flow (kernel is null then)
  std::vector<int> input_slots;              // -1: omitted; implicit inputs after the node's
  std::vector<char> host_input;              // read on the host
  std::vector<int> output_slots;
  std::vector<int> release_after;
};

StepProgram::StepProgram(const ir::Graph& graph, const std::vector<const ir::Value*>& inputs,
                         const std::vector<const ir::Value*>& outputs,
                         std::vector<char> input_on_host, ProgramContext& context,
                         bool record_profile)
    : graph_(graph),
      context_(context),
      record_profile_(record_profile),
      input_on_host_(std::move(input_on_host)) {
  const runtime::KernelRegistry& kernels = cuda_kernels();
  std::unordered_map<const ir::Value*, int> slot_of;
  auto slot = [&](const ir::Value* v) {
    auto [it, fresh] = slot_of.emplace(v, static_cast<int>(slot_of.size()));
    return it->second;
  };
  // Every slot first: this graph's values, the inputs (values of enclosing graphs among them)
  // and the constants of enclosing graphs that nodes or outputs read.
  for (const auto& v : graph.values()) slot(v.get());
  std::unordered_set<const ir::Value*> given(inputs.begin(), inputs.end());
  for (const ir::Value* v : inputs) input_slots_.push_back(slot(v));
  auto check_reachable = [&](const ir::Value* v, const std::string& who) {
    if (!v || v->owner() == &graph || v->is_constant() || given.count(v)) return;
    SY_THROW(Internal, "{}: value '{}' of an enclosing graph is not passed into graph '{}'", who,
             v->name(), graph.name());
  };
  for (const auto& n : graph.nodes())
    for (const ir::Value* v : n->inputs()) {
      check_reachable(v, n->describe());
      if (v) slot(v);
    }
  for (const ir::Value* v : outputs) {
    check_reachable(v, fmt::format("graph '{}'", graph.name()));
    output_slots_.push_back(slot(v));
  }
  num_slots_ = slot_of.size();
  constants_.resize(num_slots_);
  host_constants_.resize(num_slots_);
  auto device_constant = [&](const ir::Value* v, int s) {
    if (!constants_[static_cast<size_t>(s)].is_tensor())
      constants_[static_cast<size_t>(s)] =
          context.backend().copy_in(ir::Datum(v->constant()), context.constants_pool());
  };

  const std::set<const ir::Node*> host_steps =
      find_host_steps(graph, inputs, input_on_host_, context.host_kernels());
  std::vector<int> last_use(num_slots_, -1);
  for (const auto& n : graph.nodes()) {
    Step step;
    step.node = n.get();
    step.code = context.add_fault_node(*n);
    step.on_host = host_steps.count(n.get()) > 0;
    std::vector<int> hi;
    if (!n->subgraphs().empty()) {
      step.composite = make_control_flow_step(*n, context);
      hi = control_flow_host_inputs(*n);
    } else if (step.on_host) {
      step.kernel = context.host_kernels()->create(*n);
      hi.resize(n->num_inputs());
      std::iota(hi.begin(), hi.end(), 0);  // a host step reads every input on the host
      if (!host_pool_) host_pool_ = runtime::HostPool::create();
    } else {
      step.kernel = kernels.create(*n);
      hi = kernels.host_inputs(*n);
    }
    const int index = static_cast<int>(steps_.size());
    auto read = [&](const ir::Value* v, bool host) {
      step.input_slots.push_back(v ? slot(v) : -1);
      step.host_input.push_back(host ? 1 : 0);
      if (!v) return;
      const int s = slot(v);
      if (v->is_constant()) {
        // Constants live on the device for kernels, on the host for host reads.
        if (host) {
          host_constants_[static_cast<size_t>(s)] = ir::Datum(v->constant());
        } else {
          device_constant(v, s);
        }
      }
      last_use[static_cast<size_t>(s)] = index;
    };
    for (size_t k = 0; k < n->num_inputs(); ++k)
      read(n->input(k), std::find(hi.begin(), hi.end(), static_cast<int>(k)) != hi.end());
    if (step.composite)
      for (const ir::Value* v : step.composite->implicit_inputs()) {
        SY_CHECK(slot_of.count(v), Internal, "{}: its bodies read '{}', which graph '{}' lacks",
                 n->describe(), v->name(), graph.name());
        read(v, false);
      }
    for (const ir::Value* v : n->outputs()) {
      const int s = slot(v);
      step.output_slots.push_back(s);
      if (last_use[static_cast<size_t>(s)] < index) last_use[static_cast<size_t>(s)] = index;
    }
    steps_.push_back(std::move(step));
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i]->is_constant()) device_constant(outputs[i], output_slots_[i]);
  std::set<int> keep(output_slots_.begin(), output_slots_.end());
  for (size_t s = 0; s < num_slots_; ++s) {
    if (last_use[s] < 0 || keep.count(static_cast<int>(s)) || constants_[s].is_tensor() ||
        host_constants_[s].is_tensor())
      continue;
    steps_[static_cast<size_t>(last_use[s])].release_after.push_back(static_cast<int>(s));
  }
}

StepProgram::~StepProgram() = default;

std::vector<ir::Datum> StepProgram::execute(std::vector<ir::Datum> inputs, runtime::RunState& state,
                                            CudaRunContext& rc,
                                            std::vector<ir::Datum>* retain) const {
  SY_CHECK(inputs.size() == input_slots_.size(), Internal, "graph '{}' takes {} inputs, got {}",
           graph_.name(), input_slots_.size(), inputs.size());
  std::vector<ir::Datum> slots = constants_;
  for (size_t i = 0; i < inputs.size(); ++i)
    slots[static_cast<size_t>(input_slots_[i])] = std::move(inputs[i]);
  runtime::Profiler* profiler = record_profile_ ? state.profiler : nullptr;
  std::vector<cudaEvent_t> events;
  int64_t host_start = profiler ? profiler->now_us() : 0;
  // Host steps allocate their small results in host memory.
  runtime::RunState host_state;
  host_state.pool = host_pool_;
  host_state.num_threads = 1;
  for (const Step& step : steps_) {
    rc.error_code = step.code;
    std::vector<const ir::Datum*> in;
    in.reserve(step.input_slots.size());
    for (size_t k = 0; k < step.input_slots.size(); ++k) {
      int s = step.input_slots[k];
      if (s < 0) {
        in.push_back(nullptr);
      } else if (step.host_input[k] && host_constants_[static_cast<size_t>(s)].is_tensor()) {
        in.push_back(&host_constants_[static_cast<size_t>(s)]);
      } else {
        in.push_back(&slots[static_cast<size_t>(s)]);
      }
    }
    std::vector<ir::Datum> out(step.output_slots.size());
    if (profiler) {
      cudaEvent_t e;
      SY_CUDA_CHECK(cudaEventCreate(&e));
      events.push_back(e);
      SY_CUDA_CHECK(cudaEventRecord(e, rc.stream));
    }
    if (step.composite) {
      step.composite->run(in, out, state, rc);
    } else {
      in.resize(step.node->num_inputs());
      runtime::KernelContext ctx(*step.node, in, out, step.on_host ? host_state : state, nullptr);
      step.kernel->run(ctx);
    }
    for (size_t k = 0; k < out.size(); ++k)
      slots[static_cast<size_t>(step.output_slots[k])] = std::move(out[k]);
    for (int s : step.release_after) {
      if (retain) retain->push_back(std::move(slots[static_cast<size_t>(s)]));
      slots[static_cast<size_t>(s)] = ir::Datum();
    }
  }
  std::vector<ir::Datum> results;
  for (int s : output_slots_) results.push_back(slots[static_cast<size_t>(s)]);
  if (retain)
    for (ir::Datum& d : slots) retain->push_back(std::move(d));
  if (profiler) record_profile(*profiler, events, host_start, state, rc);
  return results;
}

// One "Node" event per step from CUDA events (device time), placed after the host time the
// partition started.
void StepProgram::record_profile(runtime::Profiler& profiler, std::vector<cudaEvent_t>& events,
                                 int64_t host_start, runtime::RunState& state,
                                 CudaRunContext& rc) const {
  struct Destroy {
    std::vector<cudaEvent_t>& events;
    ~Destroy() {
      for (cudaEvent_t e : events) cudaEventDestroy(e);
    }
  } destroy{events};
  cudaEvent_t end;
  SY_CUDA_CHECK(cudaEventCreate(&end));
  events.push_back(end);
  SY_CUDA_CHECK(cudaEventRecord(end, rc.stream));
  SY_CUDA_CHECK(cudaEventSynchronize(end));
  state.count_host_sync();
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    float from_start = 0, duration = 0;
    SY_CUDA_CHECK(cudaEventElapsedTime(&from_start, events[0], events[i]));
    SY_CUDA_CHECK(cudaEventElapsedTime(&duration, events[i], events[i + 1]));
    runtime::ProfileEvent e;
    e.name = steps_[i].node->name();
    e.op = steps_[i].node->op_type();
    e.device = context_.backend().device().id;
    e.worker = rc.stream_index;  // the trace's track: one per CUDA stream
    e.category = "Node";
    e.start_us = host_start + static_cast<int64_t>(from_start * 1000);
    e.duration_us = static_cast<int64_t>(duration * 1000);
    for (const ir::Value* v : steps_[i].node->outputs())
      if (v->type().is_tensor() && v->type().shape)
        e.output_shapes.push_back(ir::Type(v->type()).to_string());
    profiler.record(std::move(e));
  }
}

}  // namespace switchyard::cuda
