// A CUDA partition: the partition's nodes cloned into a private graph, fused (fusion.h) and
// retyped for --precision (precision.h), then run kernel by kernel on a stream leased from the
// device — no host syncs until the partition's end. Static-shape runs are captured as CUDA
// graphs: the first run of a shape signature runs eagerly (kernels build their cuDNN plans and
// cuBLASLt heuristics, the pool fills), the second is captured and launched, later ones replay.
// A graph owns its buffers (an arena pool); inputs are copied into them before a replay and
// outputs copied out after, so callers may hold results across runs. A busy graph (a
// concurrent run of the same signature) makes the other run go eagerly.
#include <algorithm>
#include <list>
#include <numeric>
#include <set>
#include <unordered_map>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/fusion.h"
#include "backends/cuda/layout.h"
#include "backends/cuda/precision.h"
#include "backends/partition_graph.h"
#include "ir/check.h"
#include "ops/op_traits.h"
#include "runtime/profiler.h"

namespace switchyard::cuda {

namespace {

constexpr size_t kMaxGraphsPerPartition = 8;

// The nodes that run on the host with the cpu kernels: the small integer shape computations
// placement keeps inside this partition (docs/placement.md, rule 3). A node qualifies when its
// outputs are shape-like, it is Shape or Size (which read only their input's shape, known on the
// host without a sync) or every other input is a host step's result or a partition input that
// arrives on the host, and every reader takes its results on the host: another host step, or a
// kernel's host input (a Reshape target). Its results are never partition outputs, which must be
// in device memory; a node that misses a condition runs its CUDA kernel as before.
std::set<const ir::Node*> find_host_steps(const ir::Graph& g, const std::vector<char>& on_host,
                                          const runtime::KernelRegistry& kernels,
                                          const runtime::KernelRegistry* host_kernels) {
  if (host_kernels == nullptr) return {};
  const runtime::KernelRegistry& host = *host_kernels;
  std::set<const ir::Value*> host_inputs;
  for (size_t i = 0; i < g.inputs().size(); ++i)
    if (i < on_host.size() && on_host[i]) host_inputs.insert(g.inputs()[i]);
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
        std::vector<int> hi = kernels.host_inputs(*reader);
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

std::string tensor_signature(const ir::Tensor& t) {
  return fmt::format("{}{}", ir::dtype_name(t.dtype()), ir::shape_to_string(t.shape()));
}

// A captured graph with the buffers it reads and writes.
struct CapturedGraph {
  std::mutex busy;
  cudaGraphExec_t exec = nullptr;
  std::shared_ptr<runtime::HostPool> arena;
  std::vector<ir::Datum> inputs;   ///< where replays expect the partition inputs
  std::vector<ir::Datum> outputs;  ///< where replays leave the partition outputs
  std::vector<std::shared_ptr<void>> keepalive;
  int32_t* error_word = nullptr;  ///< the error word its kernels write (in the arena)
  ~CapturedGraph() {
    if (exec) cudaGraphExecDestroy(exec);
  }
};

struct GraphEntry {
  std::string signature;
  int eager_runs = 0;
  bool capturable = true;
  std::shared_ptr<CapturedGraph> graph;
};

class CudaPartition : public runtime::CompiledPartition {
 public:
  CudaPartition(const backends::Partition& p, const CudaBackend& backend,
                const backends::CompileOptions& options)
      : backend_(backend),
        precision_(options.precision),
        device_graphs_(options.device_graphs),
        memory_budget_(options.memory_budget),
        index_(p.index),
        input_on_host_(p.input_on_host),
        host_kernels_(p.host_kernels) {
    use_device(backend.index());
    std::map<const ir::Node*, const ir::Node*> origin;
    graph_ = backends::clone_partition(p, origin);
    if (options.fusion) {
      fusions_ = backends::fuse_conv_epilogues(*graph_);
      for (runtime::FusionGroup& g : backends::fuse_matmul_epilogues(*graph_))
        fusions_.push_back(std::move(g));
      fuse_elementwise_chains(*graph_);
    }
    std::map<const ir::Node*, std::string> precision;
    const Precision prec = precision_;
    if (prec == Precision::Fp16 || prec == Precision::Bf16)
      precision = apply_precision(
          *graph_, prec == Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16,
          cuda_kernels());
    // After the precision rewrite, which decides which convolutions run 16-bit.
    apply_channels_last(*graph_);
    // Every original node reports the partition's precision when it computes floats; a node
    // kept in float32 says so.
    for (const ir::Node* n : p.nodes) {
      bool floaty = false;
      for (const ir::Value* v : n->outputs())
        floaty = floaty || (v->type().is_tensor() && ir::dtype_is_float(v->type().dtype));
      if (!floaty) continue;
      // The rewrite's word for a node kept in another precision wins over the partition's.
      std::string name = precision_name(prec);
      for (const auto& [node, prec_name] : precision) {
        auto it = origin.find(node);
        if (it != origin.end() && it->second == n) name = prec_name;
      }
      precisions_.push_back({n->name(), std::move(name)});
    }
    build_steps();
  }

  // The error a kernel stored in the partition's error word (cuda_context.h: fault_code).
  [[noreturn]] void throw_kernel_fault(int32_t word) const {
    const int32_t step = word & ((1 << kFaultShift) - 1);
    const auto fault = static_cast<KernelFault>(word >> kFaultShift);
    SY_CHECK(step > 0 && static_cast<size_t>(step) <= steps_.size(), Internal,
             "partition {} on {}: a kernel reported fault word {:#x}", index_, backend_.device().id,
             word);
    const std::string node = steps_[static_cast<size_t>(step - 1)].node->describe();
    const std::string& dev = backend_.device().id;
    if (fault == KernelFault::IntegerDivisionByZero)
      SY_THROW(InvalidArgument,
               "{}: integer division by zero: input 1 holds a zero (found on {} by the kernel)",
               node, dev);
    SY_THROW(InvalidArgument, "{}: an index is out of range (found on {} by the kernel)", node,
             dev);
  }

  std::vector<runtime::FusionGroup> fusions() const override { return fusions_; }
  std::vector<runtime::NodePrecision> precisions() const override { return precisions_; }

  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs,
                             runtime::RunState& state) const override {
    const int device = backend_.index();
    use_device(device);
    for (size_t i = 0; i < inputs.size(); ++i) check_resident(inputs[i], i);
    StreamLease lease = device_state(device).lease_stream();
    std::vector<std::shared_ptr<void>> pending;
    CudaRunContext rc;
    rc.device = device;
    rc.stream = lease->stream;
    rc.cublaslt = lease->cublaslt;
    rc.cudnn = lease->cudnn;
    rc.workspace = lease->workspace;
    rc.workspace_bytes = lease->workspace_bytes;
    rc.precision = precision_;
    rc.pending = &pending;
    runtime::Stream* saved = state.stream;
    state.stream = &rc;
    struct Restore {
      runtime::RunState& s;
      runtime::Stream* v;
      ~Restore() { s.stream = v; }
    } restore{state, saved};
    try {
      // The caller's stream first (RunOptions.cuda_stream): its queued work, such as kernels
      // writing an input in place, comes before this partition's.
      if (state.caller_queue.kind == "cuda" && state.caller_queue.handle) {
        CudaStream caller;
        caller.stream = static_cast<cudaStream_t>(state.caller_queue.handle);
        try {
          rc.wait(*caller.record());
        } catch (const Error& e) {
          SY_THROW(InvalidArgument, "RunOptions.cuda_stream: {}: {}; give a stream of {}",
                   backend_.device().id, e.message(), backend_.device().id);
        }
      }
      rc.device_error = lease->error_word;
      SY_CUDA_CHECK(cudaMemsetAsync(rc.device_error, 0, sizeof(int32_t), rc.stream));
      std::vector<ir::Datum> out;
      if (device_graphs_ && capturable_ && !state.profiler) {
        out = run_with_graphs(std::move(inputs), state, rc);  // may use the graph's word
      } else {
        out = execute(std::move(inputs), state, rc);
      }
      SY_CUDA_CHECK(cudaMemcpyAsync(lease->error_host, rc.device_error, sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, rc.stream));
      SY_CUDA_CHECK(cudaStreamSynchronize(rc.stream));
      if (int32_t word = *lease->error_host; word != 0) throw_kernel_fault(word);
      return out;
    } catch (...) {
      // Queued work may still use this run's buffers: let it finish before they are freed.
      cudaStreamSynchronize(rc.stream);
      cudaGetLastError();
      throw;
    }
  }

 private:
  struct Step {
    const ir::Node* node;
    bool on_host = false;  // a shape computation run by the cpu kernel (find_host_steps)
    std::unique_ptr<runtime::Kernel> kernel;
    std::vector<int> input_slots;  // -1: omitted
    std::vector<char> host_input;  // read on the host
    std::vector<int> output_slots;
    std::vector<int> release_after;
  };

  void check_resident(const ir::Datum& d, size_t i) const {
    bool want_host = i < input_on_host_.size() && input_on_host_[i];
    auto ok = [&](const ir::Tensor& t) {
      return t.nbytes() == 0 || (want_host ? device_of_memory_space(runtime::memory_space_of(t)) < 0
                                           : backend_.owns(t));
    };
    bool resident = true;
    if (d.is_tensor()) resident = ok(d.tensor);
    for (const ir::Tensor& t : d.sequence) resident = resident && ok(t);
    SY_CHECK(resident, Internal, "value '{}' reached {} partition {} in the wrong memory",
             graph_->inputs()[i]->name(), backend_.device().id, index_);
  }

  void build_steps() {
    const runtime::KernelRegistry& kernels = cuda_kernels();
    std::unordered_map<const ir::Value*, int> slot_of;
    auto slot = [&](const ir::Value* v) {
      auto [it, fresh] = slot_of.emplace(v, static_cast<int>(slot_of.size()));
      return it->second;
    };
    for (const auto& v : graph_->values()) slot(v.get());
    num_slots_ = slot_of.size();
    constants_.resize(num_slots_);
    host_constants_.resize(num_slots_);
    constants_pool_ = backend_.create_pool(false, memory_budget_);
    for (const ir::Value* v : graph_->inputs()) input_slots_.push_back(slot(v));
    for (const ir::Value* v : graph_->outputs()) output_slots_.push_back(slot(v));
    for (const ir::Value* in : graph_->inputs())
      if (!in->type().is_tensor()) capturable_ = false;

    const std::set<const ir::Node*> host_steps =
        find_host_steps(*graph_, input_on_host_, kernels, host_kernels_);
    std::vector<int> last_use(num_slots_, -1);
    for (const auto& n : graph_->nodes()) {
      Step step;
      step.node = n.get();
      step.on_host = host_steps.count(n.get()) > 0;
      step.kernel = step.on_host ? host_kernels_->create(*n) : kernels.create(*n);
      std::vector<int> hi = kernels.host_inputs(*n);
      if (step.on_host) {
        hi.resize(n->num_inputs());
        std::iota(hi.begin(), hi.end(), 0);  // a host step reads every input on the host
        if (!host_pool_) host_pool_ = runtime::HostPool::create();
      }
      for (size_t k = 0; k < n->num_inputs(); ++k) {
        const ir::Value* v = n->input(k);
        bool host = std::find(hi.begin(), hi.end(), static_cast<int>(k)) != hi.end();
        step.input_slots.push_back(v ? slot(v) : -1);
        step.host_input.push_back(host ? 1 : 0);
        if (!v) continue;
        int s = slot(v);
        if (v->is_constant()) {
          // Constants live on the device for kernels, on the host for host reads.
          if (host) {
            host_constants_[static_cast<size_t>(s)] = ir::Datum(v->constant());
          } else if (!constants_[static_cast<size_t>(s)].is_tensor()) {
            constants_[static_cast<size_t>(s)] =
                backend_.copy_in(ir::Datum(v->constant()), *constants_pool_);
          }
        }
        last_use[static_cast<size_t>(s)] = static_cast<int>(steps_.size());
      }
      for (const ir::Value* v : n->outputs()) {
        int s = slot(v);
        step.output_slots.push_back(s);
        if (last_use[static_cast<size_t>(s)] < static_cast<int>(steps_.size()))
          last_use[static_cast<size_t>(s)] = static_cast<int>(steps_.size());
      }
      steps_.push_back(std::move(step));
    }
    std::set<int> keep(output_slots_.begin(), output_slots_.end());
    for (size_t s = 0; s < num_slots_; ++s) {
      if (last_use[s] < 0 || keep.count(static_cast<int>(s)) || constants_[s].is_tensor() ||
          host_constants_[s].is_tensor())
        continue;
      steps_[static_cast<size_t>(last_use[s])].release_after.push_back(static_cast<int>(s));
    }
  }

  // Runs every step on rc.stream; returns the outputs (work may still be queued).
  std::vector<ir::Datum> execute(std::vector<ir::Datum> inputs, runtime::RunState& state,
                                 CudaRunContext& rc) const {
    std::vector<ir::Datum> slots = constants_;
    for (size_t i = 0; i < inputs.size(); ++i)
      slots[static_cast<size_t>(input_slots_[i])] = std::move(inputs[i]);
    runtime::Profiler* profiler = state.profiler;
    std::vector<cudaEvent_t> events;
    int64_t host_start = profiler ? profiler->now_us() : 0;
    // Host steps allocate their small results in host memory.
    runtime::RunState host_state;
    host_state.pool = host_pool_;
    host_state.num_threads = 1;
    for (size_t index = 0; index < steps_.size(); ++index) {
      const Step& step = steps_[index];
      rc.error_code = static_cast<int32_t>(index + 1);
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
      runtime::KernelContext ctx(*step.node, in, out, step.on_host ? host_state : state, nullptr);
      if (profiler) {
        cudaEvent_t e;
        SY_CUDA_CHECK(cudaEventCreate(&e));
        SY_CUDA_CHECK(cudaEventRecord(e, rc.stream));
        events.push_back(e);
      }
      step.kernel->run(ctx);
      for (size_t k = 0; k < out.size(); ++k)
        slots[static_cast<size_t>(step.output_slots[k])] = std::move(out[k]);
      for (int s : step.release_after) slots[static_cast<size_t>(s)] = ir::Datum();
    }
    std::vector<ir::Datum> results;
    for (int s : output_slots_) results.push_back(slots[static_cast<size_t>(s)]);
    if (profiler) record_profile(*profiler, events, host_start, rc);
    return results;
  }

  // One "Node" event per step from CUDA events (device time), placed after the host time the
  // partition started.
  void record_profile(runtime::Profiler& profiler, std::vector<cudaEvent_t>& events,
                      int64_t host_start, CudaRunContext& rc) const {
    cudaEvent_t end;
    SY_CUDA_CHECK(cudaEventCreate(&end));
    SY_CUDA_CHECK(cudaEventRecord(end, rc.stream));
    SY_CUDA_CHECK(cudaEventSynchronize(end));
    events.push_back(end);
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      float from_start = 0, duration = 0;
      SY_CUDA_CHECK(cudaEventElapsedTime(&from_start, events[0], events[i]));
      SY_CUDA_CHECK(cudaEventElapsedTime(&duration, events[i], events[i + 1]));
      runtime::ProfileEvent e;
      e.name = steps_[i].node->name();
      e.op = steps_[i].node->op_type();
      e.device = backend_.device().id;
      e.category = "Node";
      e.start_us = host_start + static_cast<int64_t>(from_start * 1000);
      e.duration_us = static_cast<int64_t>(duration * 1000);
      for (const ir::Value* v : steps_[i].node->outputs())
        if (v->type().is_tensor() && v->type().shape)
          e.output_shapes.push_back(ir::Type(v->type()).to_string());
      profiler.record(std::move(e));
    }
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }

  std::string signature_of(const std::vector<ir::Datum>& inputs) const {
    std::string sig;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::Datum& d = inputs[i];
      if (!d.is_tensor()) return "";
      sig += tensor_signature(d.tensor);
      // Values read on the host shape the work (Reshape targets, Slice starts): part of it.
      if (i < input_on_host_.size() && input_on_host_[i] && d.tensor.numel() <= 64 &&
          d.tensor.dtype() != ir::DType::String) {
        sig += "=";
        for (int64_t k = 0; k < d.tensor.numel(); ++k)
          sig += fmt::format("{},", d.tensor.scalar_as_double(k));
      } else if (i < input_on_host_.size() && input_on_host_[i]) {
        return "";  // a large host-read value: not worth keying a graph on
      }
      sig += "|";
    }
    return sig;
  }

  std::vector<ir::Datum> run_with_graphs(std::vector<ir::Datum> inputs, runtime::RunState& state,
                                         CudaRunContext& rc) const {
    std::string sig = signature_of(inputs);
    if (sig.empty()) return execute(std::move(inputs), state, rc);
    std::shared_ptr<CapturedGraph> graph;
    bool capture = false;
    {
      std::lock_guard<std::mutex> lock(graphs_mutex_);
      auto it = std::find_if(graphs_.begin(), graphs_.end(),
                             [&](const GraphEntry& e) { return e.signature == sig; });
      if (it == graphs_.end()) {
        graphs_.push_front(GraphEntry{sig, 1, true, nullptr});
        while (graphs_.size() > kMaxGraphsPerPartition) graphs_.pop_back();
        return execute(std::move(inputs), state, rc);  // warm-up run
      }
      graphs_.splice(graphs_.begin(), graphs_, it);
      GraphEntry& e = graphs_.front();
      if (!e.capturable) return execute(std::move(inputs), state, rc);
      if (!e.graph) {
        e.graph = std::make_shared<CapturedGraph>();
        capture = true;
      }
      graph = e.graph;
    }
    std::unique_lock<std::mutex> busy(graph->busy, std::try_to_lock);
    if (!busy.owns_lock()) return execute(std::move(inputs), state, rc);
    if (capture) {
      if (!capture_graph(*graph, inputs, state, rc)) {
        std::lock_guard<std::mutex> lock(graphs_mutex_);
        for (auto& e : graphs_)
          if (e.signature == sig) {
            e.capturable = false;
            e.graph.reset();
          }
        return execute(std::move(inputs), state, rc);
      }
    } else {
      if (!graph->exec) return execute(std::move(inputs), state, rc);
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (i < input_on_host_.size() && input_on_host_[i]) continue;
        const ir::Tensor& src = inputs[i].tensor;
        ir::Tensor& dst = graph->inputs[i].tensor;
        if (src.nbytes())
          SY_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), src.nbytes(),
                                        cudaMemcpyDeviceToDevice, rc.stream));
      }
    }
    rc.device_error = graph->error_word;
    SY_CUDA_CHECK(cudaMemsetAsync(rc.device_error, 0, sizeof(int32_t), rc.stream));
    SY_CUDA_CHECK(cudaGraphLaunch(graph->exec, rc.stream));
    // Results leave the graph's buffers for the run's own, so the caller may keep them.
    std::vector<ir::Datum> out;
    for (const ir::Datum& d : graph->outputs) {
      const ir::Tensor& t = d.tensor;
      ir::Tensor copy = runtime::allocate_like(t, *state.pool);
      if (t.nbytes())
        SY_CUDA_CHECK(
            cudaMemcpyAsync(copy.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToDevice, rc.stream));
      out.emplace_back(std::move(copy));
    }
    return out;
  }

  // Captures one run into `graph` with its inputs staged in the graph's arena; false when the
  // partition cannot be captured (a kernel needed a host sync, say).
  bool capture_graph(CapturedGraph& graph, const std::vector<ir::Datum>& inputs,
                     runtime::RunState& state, CudaRunContext& rc) const {
    graph.arena = backend_.create_pool(false, memory_budget_);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (i < input_on_host_.size() && input_on_host_[i]) {
        graph.inputs.push_back(inputs[i]);
        continue;
      }
      const ir::Tensor& src = inputs[i].tensor;
      ir::Tensor staged = runtime::allocate_like(src, *graph.arena);
      if (src.nbytes())
        SY_CUDA_CHECK(cudaMemcpyAsync(staged.raw(), src.raw(), src.nbytes(),
                                      cudaMemcpyDeviceToDevice, rc.stream));
      graph.inputs.emplace_back(std::move(staged));
    }
    runtime::RunState capture_state = state;
    capture_state.pool = graph.arena;
    // Replays may run on any stream while this stream's own workspace serves other runs: the
    // graph gets a workspace of its own.
    std::shared_ptr<void> workspace = graph.arena->allocate(rc.workspace_bytes);
    graph.keepalive.push_back(workspace);
    std::shared_ptr<void> error_word = graph.arena->allocate(sizeof(int32_t));
    graph.keepalive.push_back(error_word);
    graph.error_word = static_cast<int32_t*>(error_word.get());
    int32_t* stream_error = rc.device_error;
    rc.device_error = graph.error_word;
    void* stream_workspace = rc.workspace;
    rc.workspace = workspace.get();
    rc.capturing = true;
    rc.keepalive = &graph.keepalive;
    struct Reset {
      CudaRunContext& rc;
      void* workspace;
      ~Reset() {
        rc.capturing = false;
        rc.keepalive = nullptr;
        rc.workspace = workspace;
      }
    } reset{rc, stream_workspace};
    struct ResetError {  // a failed capture runs eagerly, with the stream's word
      CudaRunContext& rc;
      int32_t* word;
      bool keep = false;
      ~ResetError() {
        if (!keep) rc.device_error = word;
      }
    } reset_error{rc, stream_error};
    SY_CUDA_CHECK(cudaStreamBeginCapture(rc.stream, cudaStreamCaptureModeRelaxed));
    cudaGraph_t captured = nullptr;
    try {
      graph.outputs = execute(graph.inputs, capture_state, rc);
    } catch (const Error&) {
      cudaStreamEndCapture(rc.stream, &captured);
      if (captured) cudaGraphDestroy(captured);
      cudaGetLastError();
      graph.outputs.clear();
      return false;
    }
    cudaError_t end = cudaStreamEndCapture(rc.stream, &captured);
    if (end != cudaSuccess || !captured) {
      cudaGetLastError();
      return false;
    }
    cudaError_t inst = cudaGraphInstantiate(&graph.exec, captured, 0);
    cudaGraphDestroy(captured);
    if (inst != cudaSuccess) {
      cudaGetLastError();
      graph.exec = nullptr;
      return false;
    }
    for (const ir::Datum& d : graph.outputs)
      if (!d.is_tensor()) return false;
    reset_error.keep = true;
    return true;
  }

  const CudaBackend& backend_;
  const Precision precision_;  // CompileOptions::precision
  const bool device_graphs_;   // CompileOptions::device_graphs: replay CUDA graphs
  // CompileOptions::memory_budget: constants and captured graphs' buffers count against it.
  const std::shared_ptr<runtime::MemoryBudget> memory_budget_;
  int index_;
  std::vector<char> input_on_host_;
  const runtime::KernelRegistry* host_kernels_;  // Partition::host_kernels (host steps)
  std::unique_ptr<ir::Graph> graph_;
  std::vector<runtime::FusionGroup> fusions_;       // the shared fusions it made (fusion.h)
  std::vector<runtime::NodePrecision> precisions_;  // per original node computing floats
  std::vector<Step> steps_;
  std::shared_ptr<runtime::HostPool> host_pool_;  // host steps' results (null: none)
  size_t num_slots_ = 0;
  std::vector<ir::Datum> constants_;       // device copies, per slot
  std::vector<ir::Datum> host_constants_;  // host tensors for host reads, per slot
  std::shared_ptr<runtime::HostPool> constants_pool_;
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  bool capturable_ = true;
  mutable std::mutex graphs_mutex_;
  mutable std::list<GraphEntry> graphs_;
};

}  // namespace

std::unique_ptr<runtime::CompiledPartition> compile_cuda_partition(
    const backends::Partition& partition, const CudaBackend& backend,
    const backends::CompileOptions& options) {
  return std::make_unique<CudaPartition>(partition, backend, options);
}

}  // namespace switchyard::cuda
