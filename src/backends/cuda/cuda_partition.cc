// A CUDA partition: the partition's nodes cloned into a private graph, fused (fusion.h) and
// retyped for --precision (precision.h), then run kernel by kernel (step_program.h; If, Loop and
// Scan run there too, control_flow.h) on the run's stream on the device (CudaRunStream,
// device.h), with no host sync: the partition returns with its work queued, and the read-back of
// its error word queued after it. The runtime waits for that stream where a value leaves or
// enters the device and at the run's end; a kernel's fault then fails the run naming the node,
// and the run's partitions on this device in between follow each other in the stream. (Given no
// run stream, a partition leases a stream of its own and waits for it before returning.)
//
// Static-shape runs replay CUDA graphs, kept per input-shape signature (8 signatures, least
// recently used dropped). A signature's first run runs eagerly (kernels build their cuDNN plans
// and cuBLASLt heuristics, the pool fills); once it has queued its work, each later run replays
// an instance of the captured graph: an idle one, or, when every instance is claimed by a run in
// flight, a new one it captures (up to 8 per signature: as many as runs replay it at the same
// time). A run holds its instance until its stream has passed the replay. An instance owns its
// buffers (an arena charged to the memory budget), its workspace and its error word; inputs are
// copied into them before a replay and outputs copied out after, so callers may hold results
// across runs. A capture that fails where the signature has other instances stops its growth at
// those (the memory budget ran out, say); one that fails alone makes the signature run eagerly.
// Captures are in relaxed mode, which forbids other threads nothing (runs replay, run eagerly and
// cudaMalloc while another instance is captured; the capture itself allocates its arena). What
// stays invalid during a capture is a wait on the whole device, which calls that synchronise
// implicitly may do: cudaFree, cudaFreeHost and cudaGraphExecDestroy are deferred until no capture
// is in progress (release_outside_captures) and new stream slots wait for that (device.h).
#include <algorithm>
#include <atomic>
#include <list>
#include <numeric>
#include <set>
#include <unordered_map>

#include "backends/cuda/control_flow.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/fusion.h"
#include "backends/cuda/kernels/data_impl.h"
#include "backends/cuda/layout.h"
#include "backends/cuda/precision.h"
#include "backends/cuda/step_program.h"
#include "backends/partition_graph.h"
#include "ir/check.h"
#include "ops/op_traits.h"
#include "runtime/profiler.h"

namespace switchyard::cuda {

namespace {

constexpr size_t kMaxGraphsPerPartition = 8;
// Instances of one signature's graph: one per run replaying it at the same time (the default
// Options.max_in_flight), each with buffers of its own.
constexpr size_t kMaxGraphInstances = 8;

std::string tensor_signature(const ir::Tensor& t) {
  return fmt::format("{}{}", ir::dtype_name(t.dtype()), ir::shape_to_string(t.shape()));
}

// One instance of a signature's captured graph, with the buffers, workspace and error word it
// reads and writes; replayed by one run at a time (the run's claim).
struct CapturedGraph {
  cudaGraphExec_t exec = nullptr;
  std::shared_ptr<runtime::HostPool> arena;
  std::vector<ir::Datum> inputs;   ///< where replays expect the partition inputs
  std::vector<ir::Datum> outputs;  ///< where replays leave the partition outputs
  std::vector<std::shared_ptr<void>> keepalive;
  int32_t* error_word = nullptr;  ///< the error word its kernels write (in the arena)
  bool ready = false;             ///< captured and instantiated (under graphs_mutex_)
  std::atomic<bool> busy{false};  ///< claimed by a run
  ~CapturedGraph() {
    if (exec) release_outside_captures([exec = exec] { cudaGraphExecDestroy(exec); });
  }
};

// A run's claim on `graph`: released when the claim is dropped, once the stream that replays it
// has passed its work (the partition's pending list, or the run stream's).
std::shared_ptr<void> claim(std::shared_ptr<CapturedGraph> graph) {
  CapturedGraph* raw = graph.get();
  return std::shared_ptr<void>(raw,
                               [graph = std::move(graph)](void*) { graph->busy.store(false); });
}

// One input-shape signature's state.
struct GraphEntry {
  std::string signature;
  bool capturable = true;  ///< false once a capture failed with no other instance: eager
  bool warm = false;       ///< its first (eager) run has queued all its work
  bool warming = false;    ///< that first run is under way
  size_t max_instances = kMaxGraphInstances;  ///< lowered when capturing one more failed
  std::vector<std::shared_ptr<CapturedGraph>> instances;
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
    clone_control_flow_bodies(*graph_);  // bodies read the clone's values (control_flow.h)
    if (options.fusion) fusions_ = fuse_partition(*graph_, options.precision);  // fusion.h
    std::map<const ir::Node*, std::string> precision;
    const Precision prec = precision_;
    if (prec == Precision::Fp16 || prec == Precision::Bf16) {
      // Control flow stays float32, and so do its bodies' reads of retyped values.
      const BodyReads body_reads = record_body_reads(*graph_);
      precision = apply_precision(
          *graph_, prec == Precision::Fp16 ? ir::DType::Float16 : ir::DType::BFloat16,
          cuda_kernels());
      restore_body_reads(*graph_, body_reads);
      // The residual stream's Casts into its LayerNormalizations, then the Casts that widen a
      // product's result into the product (precision.h). Not where control flow bodies may read
      // the values they replace.
      bool bodies = false;
      for (const auto& n : graph_->nodes()) bodies = bodies || !n->subgraphs().empty();
      if (options.fusion && !bodies) {
        absorb_layer_norm_casts(*graph_);
        absorb_product_casts(*graph_);
      }
    }
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
    context_->throw_kernel_fault(word, index_);
  }

  std::vector<runtime::FusionGroup> fusions() const override { return fusions_; }
  std::vector<runtime::NodePrecision> precisions() const override { return precisions_; }

  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs,
                             runtime::RunState& state) const override {
    const int device = backend_.index();
    use_device(device);
    for (size_t i = 0; i < inputs.size(); ++i) check_resident(inputs[i], i);
    if (auto* run_stream = dynamic_cast<CudaRunStream*>(state.run_stream)) {
      SY_CHECK(run_stream->device() == device, Internal,
               "partition {} on {} was given cuda:{}'s run stream", index_, backend_.device().id,
               run_stream->device());
      return run_on(run_stream->slot(), run_stream, std::move(inputs), state);
    }
    StreamLease lease = device_state(device).lease_stream();
    return run_on(*lease, nullptr, std::move(inputs), state);
  }

 private:
  // Queues the partition's work on `slot`'s stream. On the run's stream (`run_stream`) it returns
  // with the work, and the read-back of its error word, queued there, and leaves what that work
  // still uses (pinned uploads, a graph instance's claim) held there; on a stream of its own it
  // waits and throws a kernel's fault itself.
  std::vector<ir::Datum> run_on(StreamSlot& slot, CudaRunStream* run_stream,
                                std::vector<ir::Datum> inputs, runtime::RunState& state) const {
    // The inputs stay alive until the stream has passed the work that reads them: the runtime
    // lets go of them when the partition returns, and a caller's device buffer or an earlier
    // run's result may then be reused elsewhere.
    std::vector<std::shared_ptr<void>> pending{std::make_shared<std::vector<ir::Datum>>(inputs)};
    CudaRunContext rc;
    rc.device = slot.device;
    rc.stream_index = slot.index;
    rc.stream = slot.stream;
    rc.cublaslt = slot.cublaslt;
    rc.cudnn = slot.cudnn;
    rc.workspace = slot.workspace;
    rc.workspace_bytes = slot.workspace_bytes;
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
      rc.device_error = slot.error_word;  // cleared by execute(); a replay uses the graph's
      std::vector<ir::Datum> out;
      if (device_graphs_ && capturable_ && !state.profiler) {
        out = run_with_graphs(std::move(inputs), state, rc);  // may use the graph's word
      } else {
        out = execute(std::move(inputs), state, rc);
      }
      if (run_stream) {
        run_stream->defer_fault_check(rc.device_error,
                                      [this](int32_t word) { throw_kernel_fault(word); });
        for (std::shared_ptr<void>& p : pending) run_stream->hold(std::move(p));
        return out;
      }
      SY_CUDA_CHECK(
          data::launch_device_copy(slot.error_host, rc.device_error, sizeof(int32_t), rc.stream));
      SY_CUDA_CHECK(cudaStreamSynchronize(rc.stream));
      state.count_host_sync();
      if (int32_t word = *slot.error_host; word != 0) throw_kernel_fault(word);
      return out;
    } catch (...) {
      // Queued work may still use this run's buffers: let it finish before they are freed.
      cudaStreamSynchronize(rc.stream);
      cudaGetLastError();
      // A fault the run's earlier partitions left on its stream is the run's first error.
      if (run_stream) run_stream->synchronize();
      throw;
    }
  }

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

  // The partition's steps (step_program.h): one per node, control flow with its bodies.
  void build_steps() {
    context_ = std::make_unique<ProgramContext>(backend_, memory_budget_, host_kernels_);
    const std::vector<const ir::Value*> inputs(graph_->inputs().begin(), graph_->inputs().end());
    const std::vector<const ir::Value*> outputs(graph_->outputs().begin(), graph_->outputs().end());
    program_ = std::make_unique<StepProgram>(*graph_, inputs, outputs, input_on_host_, *context_,
                                             /*record_profile=*/true);
    for (const ir::Value* in : graph_->inputs())
      if (!in->type().is_tensor()) capturable_ = false;
  }

  // Runs every step on rc.stream after clearing rc.device_error, the word its kernels report
  // faults in; returns the outputs (work may still be queued). Inside a capture the clear is the
  // graph's first node, so each replay clears the graph's own word without a call of its own.
  std::vector<ir::Datum> execute(std::vector<ir::Datum> inputs, runtime::RunState& state,
                                 CudaRunContext& rc) const {
    SY_CUDA_CHECK(data::launch_fill(rc.device_error, 1, sizeof(int32_t), 0, rc.stream));
    return program_->execute(std::move(inputs), state, rc);
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

  // Runs a static-shape signature from an instance of its captured graph (capturing one when
  // every instance is claimed), or eagerly: its first run, a signature that cannot be captured,
  // one whose instances are all claimed and at their bound. The instance's claim goes to
  // rc.pending, dropped once the stream has passed the replay.
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
        graphs_.emplace_front();
        graphs_.front().signature = sig;
        while (graphs_.size() > kMaxGraphsPerPartition) graphs_.pop_back();
        it = graphs_.begin();
      } else {
        graphs_.splice(graphs_.begin(), graphs_, it);
      }
      GraphEntry& e = *it;
      if (!e.capturable) return execute(std::move(inputs), state, rc);
      if (!e.warm) {
        // Captures wait for the first run to have queued its work (and built what its kernels
        // cache); runs meanwhile go eagerly.
        if (e.warming) return execute(std::move(inputs), state, rc);
        e.warming = true;
      } else {
        for (const std::shared_ptr<CapturedGraph>& g : e.instances)
          if (g->ready && !g->busy.exchange(true)) {
            graph = g;
            break;
          }
        if (!graph) {
          if (e.instances.size() >= e.max_instances) return execute(std::move(inputs), state, rc);
          graph = std::make_shared<CapturedGraph>();
          graph->busy = true;
          e.instances.push_back(graph);
          capture = true;
        }
      }
    }
    if (!graph) return warm_up(sig, std::move(inputs), state, rc);
    rc.pending->push_back(claim(graph));
    if (capture) {
      bool captured = false;
      try {
        captured = capture_graph(*graph, inputs, state, rc);
      } catch (...) {
        drop_instance(sig, graph);
        throw;
      }
      if (!captured) {
        drop_instance(sig, graph);
        return execute(std::move(inputs), state, rc);
      }
      std::lock_guard<std::mutex> lock(graphs_mutex_);
      graph->ready = true;
    } else {
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (i < input_on_host_.size() && input_on_host_[i]) continue;
        const ir::Tensor& src = inputs[i].tensor;
        ir::Tensor& dst = graph->inputs[i].tensor;
        SY_CUDA_CHECK(data::launch_device_copy(dst.raw(), src.raw(), src.nbytes(), rc.stream));
      }
    }
    rc.device_error = graph->error_word;  // the graph clears it first
    SY_CUDA_CHECK(cudaGraphLaunch(graph->exec, rc.stream));
    // Results leave the graph's buffers for the run's own, so the caller may keep them. Copies
    // here and above are kernels, not copy-engine memcpys (data_impl.h: launch_device_copy).
    std::vector<ir::Datum> out;
    for (const ir::Datum& d : graph->outputs) {
      const ir::Tensor& t = d.tensor;
      ir::Tensor copy = runtime::allocate_like(t, *state.pool);
      SY_CUDA_CHECK(data::launch_device_copy(copy.raw(), t.raw(), t.nbytes(), rc.stream));
      out.emplace_back(std::move(copy));
    }
    return out;
  }

  // A signature's first run, eager; once it has queued its work the signature may be captured
  // (a failed one leaves that to the next run).
  std::vector<ir::Datum> warm_up(const std::string& sig, std::vector<ir::Datum> inputs,
                                 runtime::RunState& state, CudaRunContext& rc) const {
    auto end = [&](bool warm) {
      std::lock_guard<std::mutex> lock(graphs_mutex_);
      for (GraphEntry& e : graphs_)
        if (e.signature == sig) {
          e.warming = false;
          e.warm = warm;
        }
    };
    std::vector<ir::Datum> out;
    try {
      out = execute(std::move(inputs), state, rc);
    } catch (...) {
      end(false);
      throw;
    }
    end(true);
    return out;
  }

  // A capture of `graph` failed: it leaves its signature, which stops growing at the instances
  // it has, or, with none left, runs eagerly from now on.
  void drop_instance(const std::string& sig, const std::shared_ptr<CapturedGraph>& graph) const {
    std::lock_guard<std::mutex> lock(graphs_mutex_);
    for (GraphEntry& e : graphs_) {
      if (e.signature != sig) continue;
      std::erase(e.instances, graph);
      if (e.instances.empty()) {
        e.capturable = false;
      } else {
        e.max_instances = e.instances.size();
      }
    }
  }

  // Captures one run into `graph` with its inputs staged in the graph's arena; false when the
  // partition cannot be captured (a kernel needed a host sync, say) or the capture's buffers
  // do not fit (OutOfMemory).
  bool capture_graph(CapturedGraph& graph, const std::vector<ir::Datum>& inputs,
                     runtime::RunState& state, CudaRunContext& rc) const {
    void* graph_workspace = nullptr;
    try {
      graph.arena = backend_.create_pool(false, memory_budget_);
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (i < input_on_host_.size() && input_on_host_[i]) {
          graph.inputs.push_back(inputs[i]);
          continue;
        }
        const ir::Tensor& src = inputs[i].tensor;
        ir::Tensor staged = runtime::allocate_like(src, *graph.arena);
        SY_CUDA_CHECK(data::launch_device_copy(staged.raw(), src.raw(), src.nbytes(), rc.stream));
        graph.inputs.emplace_back(std::move(staged));
      }
      // Replays may run on any stream while this stream's own workspace serves other runs: the
      // graph gets a workspace of its own.
      std::shared_ptr<void> workspace = graph.arena->allocate(rc.workspace_bytes);
      graph.keepalive.push_back(workspace);
      graph_workspace = workspace.get();
      std::shared_ptr<void> error_word = graph.arena->allocate(sizeof(int32_t));
      graph.keepalive.push_back(error_word);
      graph.error_word = static_cast<int32_t*>(error_word.get());
    } catch (const Error& e) {
      if (e.code() != ErrorCode::OutOfMemory) throw;
      cudaGetLastError();
      return false;
    }
    runtime::RunState capture_state = state;
    capture_state.pool = graph.arena;
    int32_t* stream_error = rc.device_error;
    rc.device_error = graph.error_word;
    void* stream_workspace = rc.workspace;
    rc.workspace = graph_workspace;
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
    cudaGraph_t captured = nullptr;
    {
      CaptureScope scope;  // no implicitly synchronising call until the capture ends
      SY_CUDA_CHECK(cudaStreamBeginCapture(rc.stream, cudaStreamCaptureModeRelaxed));
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
  std::unique_ptr<ProgramContext> context_;         // what the partition's programs share
  std::unique_ptr<StepProgram> program_;            // its steps
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
