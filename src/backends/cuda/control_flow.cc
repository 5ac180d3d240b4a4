#include "backends/cuda/control_flow.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "backends/cuda/control_flow_impl.h"
#include "backends/cuda/control_flow_shared.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device.h"
#include "ir/check.h"
#include "ir/checked_math.h"
#include "ops/scan_layout.h"
#include "ops/shape_inference.h"

namespace switchyard::cuda {

namespace {

using namespace control_flow_shared;  // the helpers of control_flow_shared.h
using ir::DType;

constexpr int64_t kNoTripCount = std::numeric_limits<int64_t>::max();

// With SWITCHYARD_CUDA_LOG_CONTROL_FLOW=1, says on stderr why a node's device-driven form did
// not hold (it then runs host-driven, or its partition uncaptured).
void log_host_driven(const ir::Node& node, const std::string& why) {
  static const bool enabled = [] {
    const char* v = std::getenv("SWITCHYARD_CUDA_LOG_CONTROL_FLOW");
    return v != nullptr && *v != '\0' && std::string(v) != "0";
  }();
  if (enabled) fmt::print(stderr, "switchyard: {}: not device-driven: {}\n", node.describe(), why);
}

// How deeply control flow nests in `node` (1: its bodies hold none).
int nesting_depth(const ir::Node& node) {
  int depth = 0;
  for (const ir::Graph* body : node.subgraphs())
    for (const auto& n : body->nodes())
      if (!n->subgraphs().empty()) depth = std::max(depth, nesting_depth(*n));
  return depth + 1;
}

// Follows Identity nodes back from `v`.
const ir::Value* through_identities(const ir::Value* v) {
  while (v && v->producer() && v->producer()->op_type() == "Identity" &&
         v->producer()->num_inputs() == 1)
    v = v->producer()->input(0);
  return v;
}

// ---- The steps

// What If, Loop and Scan share: the choice between device-driven and host-driven, and the
// implicit inputs. A device-driven attempt that fails while the node runs eagerly (a body that
// must read device data on the host, a carried value that changes shape) falls back to the
// host-driven form, and the input signature is remembered so later runs go there directly.
class ControlFlowStep : public CompositeStep {
 public:
  ControlFlowStep(const ir::Node& node, ProgramContext& context)
      : node_(node), context_(context), depth_(nesting_depth(node)) {
    implicit_inputs_ = implicit_inputs_of(node);
  }

  void run(const std::vector<const ir::Datum*>& in, std::vector<ir::Datum>& out,
           runtime::RunState& state, CudaRunContext& rc) const override {
    state.check_stop(node_);
    std::vector<ir::Datum> results;
    const std::string host_reason = host_driven_reason(in, state);
    bool done = false;
    if (host_reason.empty() && rc.capturing) {
      try {
        results = embed_captured(in, state, rc);
      } catch (const Error& e) {
        log_host_driven(node_, e.message());
        throw;
      }
      done = true;
    } else if (host_reason.empty()) {
      const std::string sig = signature(in);
      if (!failed_before(sig)) {
        warm_side_streams(rc.device, depth_);
        try {
          results = run_device_eagerly(in, state, rc);
          done = true;
        } catch (const Error& e) {
          if (e.code() == ErrorCode::DeviceLost || e.code() == ErrorCode::Cancelled) throw;
          log_host_driven(node_, e.message());
          remember_failure(sig);
        }
      }
    } else if (rc.capturing) {
      SY_THROW(Unsupported, "{}: runs host-driven ({}), which a CUDA graph capture cannot hold",
               node_.describe(), host_reason);
    }
    if (!done) results = run_host_driven(in, state, rc);
    SY_CHECK(results.size() == out.size(), Internal, "{}: made {} outputs, expected {}",
             node_.describe(), results.size(), out.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::move(results[i]);
  }

 protected:
  // Why the node runs host-driven whatever its inputs, or "".
  virtual std::string host_driven_reason(const std::vector<const ir::Datum*>& in,
                                         const runtime::RunState& state) const {
    (void)in;
    (void)state;
    return context_.host_driven_control_flow() ? "SWITCHYARD_CUDA_HOST_LOOPS is set" : "";
  }
  // The device-driven form, added to the capture of rc.stream.
  virtual std::vector<ir::Datum> embed_captured(const std::vector<const ir::Datum*>& in,
                                                runtime::RunState& state,
                                                CudaRunContext& rc) const = 0;
  // The device-driven form outside a capture: as a graph of its own.
  virtual std::vector<ir::Datum> run_device_eagerly(const std::vector<const ir::Datum*>& in,
                                                    runtime::RunState& state,
                                                    CudaRunContext& rc) const {
    return run_as_graph(rc, [&] { return embed_captured(in, state, rc); });
  }
  virtual std::vector<ir::Datum> run_host_driven(const std::vector<const ir::Datum*>& in,
                                                 runtime::RunState& state,
                                                 CudaRunContext& rc) const = 0;

  std::vector<ir::Datum> implicit_values(const std::vector<const ir::Datum*>& in) const {
    std::vector<ir::Datum> out;
    for (size_t i = node_.num_inputs(); i < in.size(); ++i)
      out.push_back(in[i] ? *in[i] : ir::Datum());
    return out;
  }

  std::unique_ptr<StepProgram> compile_body(const ir::Graph& body, bool with_body_inputs) const {
    std::vector<const ir::Value*> inputs;
    if (with_body_inputs) inputs.assign(body.inputs().begin(), body.inputs().end());
    inputs.insert(inputs.end(), implicit_inputs_.begin(), implicit_inputs_.end());
    const std::vector<const ir::Value*> outputs(body.outputs().begin(), body.outputs().end());
    return std::make_unique<StepProgram>(body, inputs, outputs, std::vector<char>(), context_,
                                         /*record_profile=*/false);
  }

  const ir::Node& node_;
  ProgramContext& context_;
  const int depth_;  // nesting_depth: the side streams a device-driven capture leases at once

 private:
  // Dtypes and shapes of the inputs, with the values of small host tensors (a trip count).
  std::string signature(const std::vector<const ir::Datum*>& in) const {
    std::string sig;
    for (const ir::Datum* d : in) {
      if (d && d->is_tensor()) {
        sig += fmt::format("{}{}", ir::dtype_name(d->tensor.dtype()),
                           ir::shape_to_string(d->tensor.shape()));
        if (in_host_memory(d->tensor) && d->tensor.numel() <= 8 &&
            d->tensor.dtype() != DType::String)
          for (int64_t k = 0; k < d->tensor.numel(); ++k)
            sig += fmt::format("={}", d->tensor.scalar_as_double(k));
      }
      sig += "|";
    }
    return sig;
  }
  bool failed_before(const std::string& sig) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failed_.count(sig) > 0;
  }
  void remember_failure(const std::string& sig) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_.size() >= 64) failed_.clear();
    failed_.insert(sig);
  }

  mutable std::mutex mutex_;
  mutable std::set<std::string> failed_;  // signatures whose device-driven form failed
};

// If: an IF node with then and else bodies, each writing the outputs into the same buffers —
// so both branches must give the same dtypes and shapes; a condition in host memory picks the
// branch on the host.
class IfStep : public ControlFlowStep {
 public:
  IfStep(const ir::Node& node, ProgramContext& context) : ControlFlowStep(node, context) {
    then_ = compile_body(node.attr_graph("then_branch"), false);
    else_ = compile_body(node.attr_graph("else_branch"), false);
    for (const StepProgram* b : {then_.get(), else_.get()})
      SY_CHECK(b->graph().outputs().size() == node.num_outputs(), InvalidModel,
               "{}: branch '{}' has {} outputs, expected {}", node.describe(), b->graph().name(),
               b->graph().outputs().size(), node.num_outputs());
  }

  void run(const std::vector<const ir::Datum*>& in, std::vector<ir::Datum>& out,
           runtime::RunState& state, CudaRunContext& rc) const override {
    const ir::Datum* cond = given(in, 0);
    SY_CHECK(cond, InvalidArgument, "{}: the condition is missing", node_.describe());
    const ir::Tensor& c = scalar_input(*cond, DType::Bool, node_, "condition");
    if (!in_host_memory(c)) {
      ControlFlowStep::run(in, out, state, rc);
      return;
    }
    state.check_stop(node_);
    std::vector<ir::Datum> results =
        (c.data<bool>()[0] ? then_ : else_)->execute(implicit_values(in), state, rc);
    for (size_t i = 0; i < out.size(); ++i) out[i] = std::move(results[i]);
  }

 protected:
  std::vector<ir::Datum> embed_captured(const std::vector<const ir::Datum*>& in,
                                        runtime::RunState& state,
                                        CudaRunContext& rc) const override {
    const ir::Tensor& cond = in[0]->tensor;
    const cudaGraphConditionalHandle handle = create_handle(rc.stream);
    SY_CUDA_CHECK(launch_if_select(cond.data<bool>(), handle, rc.stream));
    const std::vector<cudaGraph_t> bodies =
        add_conditional(rc.stream, handle, cudaGraphCondTypeIf, 2);
    SideStream side(rc, state);
    std::vector<ir::Datum> results;
    capture_into(bodies[0], side, [&] {
      std::vector<ir::Datum> outs = then_->execute(implicit_values(in), side.state, side.rc);
      for (size_t i = 0; i < outs.size(); ++i) {
        const ir::Tensor& t = device_result(outs[i], node_, "then_branch output", i);
        ir::Tensor r = runtime::allocate_like(t, *state.pool);
        copy_device(r.raw(), t.raw(), t.nbytes(), side.rc.stream);
        results.emplace_back(std::move(r));
      }
    });
    capture_into(bodies[1], side, [&] {
      std::vector<ir::Datum> outs = else_->execute(implicit_values(in), side.state, side.rc);
      for (size_t i = 0; i < outs.size(); ++i) {
        const ir::Tensor& t = device_result(outs[i], node_, "else_branch output", i);
        const ir::Tensor& r = results[i].tensor;
        SY_CHECK(t.dtype() == r.dtype() && t.shape() == r.shape(), Unsupported,
                 "{}: output {} is {} {} from then_branch but {} {} from else_branch",
                 node_.describe(), i, ir::dtype_name(r.dtype()), ir::shape_to_string(r.shape()),
                 ir::dtype_name(t.dtype()), ir::shape_to_string(t.shape()));
        copy_device(const_cast<void*>(r.raw()), t.raw(), t.nbytes(), side.rc.stream);
      }
    });
    return results;
  }

  std::vector<ir::Datum> run_host_driven(const std::vector<const ir::Datum*>& in,
                                         runtime::RunState& state,
                                         CudaRunContext& rc) const override {
    const ir::Tensor cond = to_host(in[0]->tensor, state, rc, node_, "the condition");
    return (cond.data<bool>()[0] ? then_ : else_)->execute(implicit_values(in), state, rc);
  }

 private:
  std::unique_ptr<StepProgram> then_;
  std::unique_ptr<StepProgram> else_;
};

// Loop: inputs (trip count M, condition, carried values...), body inputs (iteration number,
// condition, carried values...), body outputs (condition, carried values..., scan outputs...).
class LoopStep : public ControlFlowStep {
 public:
  LoopStep(const ir::Node& node, ProgramContext& context) : ControlFlowStep(node, context) {
    const ir::Graph& body = node.attr_graph("body");
    num_states_ = node.num_inputs() > 2 ? node.num_inputs() - 2 : 0;
    SY_CHECK(node.num_outputs() >= num_states_, InvalidModel,
             "{}: has {} outputs, fewer than its {} loop-carried values", node.describe(),
             node.num_outputs(), num_states_);
    SY_CHECK(
        body.inputs().size() == 2 + num_states_ && body.outputs().size() == 1 + node.num_outputs(),
        InvalidModel, "{}: body '{}' has {} inputs and {} outputs, expected {} and {}",
        node.describe(), body.name(), body.inputs().size(), body.outputs().size(), 2 + num_states_,
        1 + node.num_outputs());
    num_scans_ = node.num_outputs() - num_states_;
    for (size_t j = 0; j < num_scans_; ++j)
      scan_types_.push_back(body.outputs()[1 + num_states_ + j]->type());
    // A body that returns its condition input unchanged (a for loop) never ends the loop early.
    cond_passthrough_ = through_identities(body.outputs()[0]) == body.inputs()[1];
    body_ = compile_body(body, true);
  }

 protected:
  std::string host_driven_reason(const std::vector<const ir::Datum*>& in,
                                 const runtime::RunState& state) const override {
    std::string why = ControlFlowStep::host_driven_reason(in, state);
    if (why.empty() && !given(in, 0) &&
        state.deadline != std::chrono::steady_clock::time_point::max())
      why = "a loop without trip count in a run with a deadline";
    return why;
  }

  // Where the trip count and the first condition are, and the scan outputs' rows.
  struct Plan {
    const int64_t* max_trips = nullptr;  // on the device (null: max_trips_value)
    int64_t max_trips_value = kNoTripCount;
    const bool* cond = nullptr;  // on the device (null: cond_value)
    bool cond_value = true;
    int64_t rows = 0;        // rows of each scan output's buffer
    bool rows_exact = true;  // false: the trip count is read back after the loop
  };

  Plan plan(const std::vector<const ir::Datum*>& in, runtime::RunState& state,
            CudaRunContext& rc) const {
    Plan p;
    bool trips_on_host = true;
    if (const ir::Datum* m = given(in, 0)) {
      const ir::Tensor& t = scalar_input(*m, DType::Int64, node_, "trip count");
      if (in_host_memory(t)) {
        p.max_trips_value = t.data<int64_t>()[0];
      } else if (num_scans_ > 0 && !rc.capturing) {
        p.max_trips_value = to_host(t, state, rc, node_, "the trip count").data<int64_t>()[0];
      } else {
        p.max_trips = t.data<int64_t>();
        trips_on_host = false;
      }
    }
    bool cond_on_host = true;
    if (const ir::Datum* c = given(in, 1)) {
      const ir::Tensor& t = scalar_input(*c, DType::Bool, node_, "condition");
      if (in_host_memory(t)) {
        p.cond_value = t.data<bool>()[0];
      } else {
        p.cond = t.data<bool>();
        cond_on_host = false;
      }
    }
    if (num_scans_ == 0) return p;
    SY_CHECK(trips_on_host && p.max_trips_value != kNoTripCount, Unsupported,
             "{}: its scan outputs need a trip count known on the host", node_.describe());
    p.rows = cond_on_host && !p.cond_value ? 0 : std::max<int64_t>(0, p.max_trips_value);
    p.rows_exact = cond_passthrough_ && cond_on_host;
    SY_CHECK(p.rows_exact || !rc.capturing, Unsupported,
             "{}: its number of iterations is known only once it ran, which a CUDA graph "
             "capture cannot read",
             node_.describe());
    return p;
  }

  struct Embedded {
    std::vector<ir::Datum> results;
    const LoopControl* control = nullptr;
  };

  Embedded embed(const std::vector<const ir::Datum*>& in, const Plan& p, runtime::RunState& state,
                 CudaRunContext& rc) const {
    runtime::HostPool& pool = *state.pool;
    std::vector<ir::Datum> carried;
    for (size_t k = 0; k < num_states_; ++k) {
      const ir::Datum* init = given(in, 2 + k);
      SY_CHECK(init && init->is_tensor(), Unsupported, "{}: loop-carried value {} is no tensor",
               node_.describe(), k);
      ir::Tensor c = runtime::allocate_like(init->tensor, pool);
      copy_device(c.raw(), init->tensor.raw(), init->tensor.nbytes(), rc.stream);
      carried.emplace_back(std::move(c));
    }
    ir::Tensor iter_in = new_tensor(pool, DType::Int64, {});
    ir::Tensor cond_in = new_tensor(pool, DType::Bool, {});
    std::shared_ptr<void> block = pool.allocate(sizeof(LoopControl));
    (rc.keepalive ? rc.keepalive : rc.pending)->push_back(block);
    auto* ctrl = static_cast<LoopControl*>(block.get());
    const cudaGraphConditionalHandle handle = create_handle(rc.stream);
    SY_CUDA_CHECK(launch_loop_init(ctrl, p.max_trips, p.max_trips_value, p.cond, p.cond_value,
                                   iter_in.data<int64_t>(), cond_in.data<bool>(), handle, true,
                                   rc.stream));
    const cudaGraph_t body = add_conditional(rc.stream, handle, cudaGraphCondTypeWhile, 1)[0];
    SideStream side(rc, state);
    std::vector<ir::Datum> scans;
    std::vector<ir::Datum> retain;  // every body value, until the scan buffers are allocated
    capture_into(body, side, [&] {
      std::vector<ir::Datum> args{ir::Datum(iter_in), ir::Datum(cond_in)};
      args.insert(args.end(), carried.begin(), carried.end());
      for (ir::Datum& d : implicit_values(in)) args.push_back(std::move(d));
      std::vector<ir::Datum> outs = body_->execute(std::move(args), side.state, side.rc, &retain);
      const bool* cond_out = nullptr;
      if (!cond_passthrough_)
        cond_out = scalar_input(device_result(outs[0], node_, "body output", 0), DType::Bool, node_,
                                "the body's condition output")
                       .data<bool>();
      std::vector<ir::Tensor> next;
      for (size_t k = 0; k < num_states_; ++k) {
        const ir::Tensor& t = device_result(outs[1 + k], node_, "body output", 1 + k);
        const ir::Tensor& c = carried[k].tensor;
        SY_CHECK(t.dtype() == c.dtype() && t.shape() == c.shape(), Unsupported,
                 "{}: loop-carried value {} is {} {} before an iteration and {} {} after it",
                 node_.describe(), k, ir::dtype_name(c.dtype()), ir::shape_to_string(c.shape()),
                 ir::dtype_name(t.dtype()), ir::shape_to_string(t.shape()));
        next.push_back(t);
      }
      for (size_t j = 0; j < num_scans_; ++j) {
        const size_t o = 1 + num_states_ + j;
        const ir::Tensor& item = device_result(outs[o], node_, "body output", o);
        std::vector<int64_t> shape = item.shape();
        shape.insert(shape.begin(), p.rows);
        ir::Tensor buffer = new_tensor(pool, item.dtype(), shape);
        IndexedCopy copy;
        copy.dst = buffer.raw();
        copy.src = item.raw();
        copy.block_bytes = static_cast<int64_t>(item.nbytes());
        copy.dst_step = copy.block_bytes;
        copy.counter = &ctrl->iter;
        copy.limit = p.rows;
        SY_CUDA_CHECK(launch_indexed_copy(copy, side.rc.stream));
        scans.emplace_back(std::move(buffer));
      }
      SY_CUDA_CHECK(launch_loop_latch(ctrl, cond_out, handle, true, side.rc.stream));
      copy_into_carried(next, carried, pool, side.rc.stream);
      SY_CUDA_CHECK(
          launch_loop_publish(ctrl, iter_in.data<int64_t>(), cond_in.data<bool>(), side.rc.stream));
    });
    retain.clear();
    Embedded e;
    e.results = std::move(carried);
    for (ir::Datum& s : scans) e.results.push_back(std::move(s));
    e.control = ctrl;
    return e;
  }

  std::vector<ir::Datum> embed_captured(const std::vector<const ir::Datum*>& in,
                                        runtime::RunState& state,
                                        CudaRunContext& rc) const override {
    return embed(in, plan(in, state, rc), state, rc).results;
  }

  std::vector<ir::Datum> run_device_eagerly(const std::vector<const ir::Datum*>& in,
                                            runtime::RunState& state,
                                            CudaRunContext& rc) const override {
    const Plan p = plan(in, state, rc);  // before the capture: it may read the trip count
    Embedded e = run_as_graph(rc, [&] { return embed(in, p, state, rc); });
    if (num_scans_ == 0 || p.rows_exact) return std::move(e.results);
    // The loop may have ended early: the scan outputs hold the iterations it ran.
    int64_t iterations = 0;
    SY_CUDA_CHECK(cudaMemcpyAsync(&iterations, &e.control->iter, sizeof(int64_t),
                                  cudaMemcpyDeviceToHost, rc.stream));
    SY_CUDA_CHECK(cudaStreamSynchronize(rc.stream));
    state.count_host_sync();
    iterations = std::clamp<int64_t>(iterations, 0, p.rows);
    for (size_t j = 0; j < num_scans_; ++j) {
      ir::Tensor& s = e.results[num_states_ + j].tensor;
      std::vector<int64_t> shape = s.shape();
      shape[0] = iterations;
      s = ir::Tensor::wrap(s.dtype(), std::move(shape), s.storage(), s.raw());
    }
    return std::move(e.results);
  }

  std::vector<ir::Datum> run_host_driven(const std::vector<const ir::Datum*>& in,
                                         runtime::RunState& state,
                                         CudaRunContext& rc) const override {
    int64_t max_trips = kNoTripCount;
    if (const ir::Datum* m = given(in, 0))
      max_trips = to_host(scalar_input(*m, DType::Int64, node_, "trip count"), state, rc, node_,
                          "the trip count")
                      .data<int64_t>()[0];
    bool cond = true;
    if (const ir::Datum* c = given(in, 1))
      cond = to_host(scalar_input(*c, DType::Bool, node_, "condition"), state, rc, node_,
                     "the condition")
                 .data<bool>()[0];
    std::vector<ir::Datum> states;
    for (size_t k = 0; k < num_states_; ++k) {
      const ir::Datum* d = given(in, 2 + k);
      states.push_back(d ? *d : ir::Datum());
    }
    const std::vector<ir::Datum> outer = implicit_values(in);
    std::vector<std::vector<ir::Tensor>> scans(num_scans_);
    for (int64_t iter = 0; iter < max_trips && cond; ++iter) {
      state.check_stop(node_);
      // Fresh inputs each iteration: a body may carry them on as results.
      ir::Tensor iter_in = new_tensor(*state.pool, DType::Int64, {});
      ir::Tensor cond_in = new_tensor(*state.pool, DType::Bool, {});
      SY_CUDA_CHECK(launch_set_loop_inputs(iter_in.data<int64_t>(), cond_in.data<bool>(), iter,
                                           cond, rc.stream));
      std::vector<ir::Datum> args{ir::Datum(std::move(iter_in)), ir::Datum(std::move(cond_in))};
      for (ir::Datum& s : states) args.push_back(std::move(s));
      args.insert(args.end(), outer.begin(), outer.end());
      std::vector<ir::Datum> outs = body_->execute(std::move(args), state, rc);
      if (!cond_passthrough_) {
        SY_CHECK(outs[0].is_tensor(), InvalidArgument,
                 "{}: body output 0 (the condition) is not a tensor in iteration {}",
                 node_.describe(), iter);
        cond = to_host(scalar_input(outs[0], DType::Bool, node_, "the body's condition output"),
                       state, rc, node_, "the body's condition output")
                   .data<bool>()[0];
      }
      for (size_t k = 0; k < num_states_; ++k) states[k] = std::move(outs[1 + k]);
      for (size_t j = 0; j < num_scans_; ++j) {
        ir::Datum& d = outs[1 + num_states_ + j];
        SY_CHECK(d.is_tensor(), InvalidArgument,
                 "{}: scan output {} is not a tensor in iteration {}", node_.describe(), j, iter);
        scans[j].push_back(std::move(d.tensor));
      }
    }
    std::vector<ir::Datum> results = std::move(states);
    for (size_t j = 0; j < num_scans_; ++j)
      results.emplace_back(
          stack_on_device(scans[j], scan_types_[j], 0, false, j, *state.pool, rc.stream, node_));
    return results;
  }

 private:
  std::unique_ptr<StepProgram> body_;
  size_t num_states_ = 0;
  size_t num_scans_ = 0;
  bool cond_passthrough_ = false;
  std::vector<ir::Type> scan_types_;
};

// Scan (opset 9+): inputs (states..., scan inputs...), body inputs (states..., one slice of each
// scan input), body outputs (states..., scan output slices...). The trip count is the scan
// inputs' length, known on the host from their shapes.
class ScanStep : public ControlFlowStep {
 public:
  ScanStep(const ir::Node& node, ProgramContext& context) : ControlFlowStep(node, context) {
    const ir::Graph& body = node.attr_graph("body");
    layout_ = ops::scan_layout(node, body);
    body_ = compile_body(body, true);
  }

 protected:
  // One scan input's slicing: its length, and the blocks a slice takes from it.
  struct Slicing {
    const ir::Tensor* input = nullptr;
    std::vector<int64_t> slice_shape;
    int64_t outer = 1;        // blocks per slice
    int64_t block_bytes = 0;  // bytes per block (one slice's inner part)
  };

  std::vector<Slicing> slicing(const std::vector<const ir::Datum*>& in, int64_t* length) const {
    std::vector<Slicing> out;
    for (size_t j = 0; j < layout_.in_axes.size(); ++j) {
      const ir::Datum* d = given(in, layout_.num_states + j);
      SY_CHECK(d && d->is_tensor(), InvalidArgument, "{}: scan input {} is missing",
               node_.describe(), j);
      const ir::Tensor& x = d->tensor;
      SY_CHECK(x.rank() > 0, InvalidArgument, "{}: scan input {} is a scalar", node_.describe(), j);
      const auto axis =
          static_cast<size_t>(ops::normalize_axis(node_, layout_.in_axes[j], x.rank()));
      const int64_t len = x.dim(static_cast<int64_t>(axis));
      SY_CHECK(j == 0 || len == *length, InvalidArgument,
               "{}: scan input {} has length {} along its scan axis, scan input 0 has {}",
               node_.describe(), j, len, *length);
      *length = len;
      Slicing s;
      s.input = &x;
      s.slice_shape = x.shape();
      s.slice_shape.erase(s.slice_shape.begin() + static_cast<std::ptrdiff_t>(axis));
      s.outer = dims_product(x.shape(), 0, axis);
      s.block_bytes =
          ir::checked_mul(dims_product(x.shape(), axis + 1, x.shape().size()),
                          static_cast<int64_t>(ir::dtype_size(x.dtype())), "a scan slice's bytes");
      out.push_back(std::move(s));
    }
    return out;
  }

  std::vector<ir::Datum> embed_captured(const std::vector<const ir::Datum*>& in,
                                        runtime::RunState& state,
                                        CudaRunContext& rc) const override {
    runtime::HostPool& pool = *state.pool;
    int64_t length = 0;
    const std::vector<Slicing> slices = slicing(in, &length);
    std::vector<ir::Datum> carried;
    for (size_t k = 0; k < layout_.num_states; ++k) {
      const ir::Datum* init = given(in, k);
      SY_CHECK(init && init->is_tensor(), Unsupported, "{}: state value {} is no tensor",
               node_.describe(), k);
      ir::Tensor c = runtime::allocate_like(init->tensor, pool);
      copy_device(c.raw(), init->tensor.raw(), init->tensor.nbytes(), rc.stream);
      carried.emplace_back(std::move(c));
    }
    std::vector<ir::Tensor> slice_buffers;
    for (const Slicing& s : slices)
      slice_buffers.push_back(new_tensor(pool, s.input->dtype(), s.slice_shape));
    std::shared_ptr<void> block = pool.allocate(sizeof(LoopControl));
    (rc.keepalive ? rc.keepalive : rc.pending)->push_back(block);
    auto* ctrl = static_cast<LoopControl*>(block.get());
    const cudaGraphConditionalHandle handle = create_handle(rc.stream);
    SY_CUDA_CHECK(launch_loop_init(ctrl, nullptr, length, nullptr, true, nullptr, nullptr, handle,
                                   true, rc.stream));
    const cudaGraph_t body = add_conditional(rc.stream, handle, cudaGraphCondTypeWhile, 1)[0];
    SideStream side(rc, state);
    std::vector<ir::Datum> scans;
    std::vector<ir::Datum> retain;  // every body value, until the scan buffers are allocated
    capture_into(body, side, [&] {
      for (size_t j = 0; j < slices.size(); ++j) {
        IndexedCopy copy;
        copy.dst = slice_buffers[j].raw();
        copy.src = slices[j].input->raw();
        copy.blocks = slices[j].outer;
        copy.block_bytes = slices[j].block_bytes;
        copy.dst_stride = slices[j].block_bytes;
        copy.src_stride = ir::checked_mul(length, slices[j].block_bytes, "a scan input's bytes");
        copy.src_step = slices[j].block_bytes;
        copy.counter = &ctrl->iter;
        copy.limit = length;
        copy.reverse = layout_.in_reverse[j];
        SY_CUDA_CHECK(launch_indexed_copy(copy, side.rc.stream));
      }
      std::vector<ir::Datum> args = carried;
      for (const ir::Tensor& t : slice_buffers) args.emplace_back(t);
      for (ir::Datum& d : implicit_values(in)) args.push_back(std::move(d));
      std::vector<ir::Datum> outs = body_->execute(std::move(args), side.state, side.rc, &retain);
      std::vector<ir::Tensor> next;
      for (size_t k = 0; k < layout_.num_states; ++k) {
        const ir::Tensor& t = device_result(outs[k], node_, "body output", k);
        const ir::Tensor& c = carried[k].tensor;
        SY_CHECK(t.dtype() == c.dtype() && t.shape() == c.shape(), Unsupported,
                 "{}: state value {} is {} {} before an iteration and {} {} after it",
                 node_.describe(), k, ir::dtype_name(c.dtype()), ir::shape_to_string(c.shape()),
                 ir::dtype_name(t.dtype()), ir::shape_to_string(t.shape()));
        next.push_back(t);
      }
      for (size_t j = 0; j < layout_.out_axes.size(); ++j) {
        const ir::Tensor& item = device_result(outs[layout_.num_states + j], node_, "body output",
                                               layout_.num_states + j);
        const auto axis =
            static_cast<size_t>(ops::normalize_axis(node_, layout_.out_axes[j], item.rank() + 1));
        std::vector<int64_t> shape = item.shape();
        shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), length);
        ir::Tensor buffer = new_tensor(pool, item.dtype(), shape);
        const int64_t inner = ir::checked_mul(dims_product(item.shape(), axis, item.shape().size()),
                                              static_cast<int64_t>(ir::dtype_size(item.dtype())),
                                              "a scan output's bytes");
        IndexedCopy copy;
        copy.dst = buffer.raw();
        copy.src = item.raw();
        copy.blocks = dims_product(item.shape(), 0, axis);
        copy.block_bytes = inner;
        copy.dst_stride = ir::checked_mul(length, inner, "a scan output's bytes");
        copy.src_stride = inner;
        copy.dst_step = inner;
        copy.counter = &ctrl->iter;
        copy.limit = length;
        copy.reverse = layout_.out_reverse[j];
        SY_CUDA_CHECK(launch_indexed_copy(copy, side.rc.stream));
        scans.emplace_back(std::move(buffer));
      }
      SY_CUDA_CHECK(launch_loop_latch(ctrl, nullptr, handle, true, side.rc.stream));
      copy_into_carried(next, carried, pool, side.rc.stream);
    });
    retain.clear();
    std::vector<ir::Datum> results = std::move(carried);
    for (ir::Datum& s : scans) results.push_back(std::move(s));
    return results;
  }

  std::vector<ir::Datum> run_host_driven(const std::vector<const ir::Datum*>& in,
                                         runtime::RunState& state,
                                         CudaRunContext& rc) const override {
    int64_t length = 0;
    const std::vector<Slicing> slices = slicing(in, &length);
    std::vector<ir::Datum> states;
    for (size_t k = 0; k < layout_.num_states; ++k) {
      const ir::Datum* d = given(in, k);
      states.push_back(d ? *d : ir::Datum());
    }
    const std::vector<ir::Datum> outer = implicit_values(in);
    std::vector<std::vector<ir::Tensor>> scans(layout_.out_axes.size());
    for (int64_t t = 0; t < length; ++t) {
      state.check_stop(node_);
      std::vector<ir::Datum> args;
      for (ir::Datum& s : states) args.push_back(std::move(s));
      for (size_t j = 0; j < slices.size(); ++j) {
        const Slicing& s = slices[j];
        const int64_t index = layout_.in_reverse[j] ? length - 1 - t : t;
        const char* from =
            static_cast<const char*>(s.input->raw()) + static_cast<size_t>(index * s.block_bytes);
        if (s.outer == 1) {  // a contiguous slice: a view
          args.emplace_back(ir::Tensor::wrap(s.input->dtype(), s.slice_shape, s.input->storage(),
                                             const_cast<char*>(from)));
          continue;
        }
        ir::Tensor slice = new_tensor(*state.pool, s.input->dtype(), s.slice_shape);
        if (slice.nbytes())
          SY_CUDA_CHECK(cudaMemcpy2DAsync(
              slice.raw(), static_cast<size_t>(s.block_bytes), from,
              static_cast<size_t>(length * s.block_bytes), static_cast<size_t>(s.block_bytes),
              static_cast<size_t>(s.outer), cudaMemcpyDeviceToDevice, rc.stream));
        args.emplace_back(std::move(slice));
      }
      args.insert(args.end(), outer.begin(), outer.end());
      std::vector<ir::Datum> outs = body_->execute(std::move(args), state, rc);
      states.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(layout_.num_states));
      for (size_t j = 0; j < scans.size(); ++j) {
        ir::Datum& d = outs[layout_.num_states + j];
        SY_CHECK(d.is_tensor(), InvalidArgument,
                 "{}: scan output {} is not a tensor in iteration {}", node_.describe(), j, t);
        scans[j].push_back(std::move(d.tensor));
      }
    }
    std::vector<ir::Datum> results = std::move(states);
    for (size_t j = 0; j < scans.size(); ++j)
      results.emplace_back(stack_on_device(scans[j], layout_.scan_output_types[j],
                                           layout_.out_axes[j], layout_.out_reverse[j], j,
                                           *state.pool, rc.stream, node_));
    return results;
  }

 private:
  std::unique_ptr<StepProgram> body_;
  ops::ScanLayout layout_;  // ops/scan_layout.h
};

}  // namespace

std::unique_ptr<CompositeStep> make_control_flow_step(const ir::Node& node,
                                                      ProgramContext& context) {
  const runtime::Support s = control_flow_support(node);
  SY_CHECK(s.ok, Unsupported, "{}: cannot run on {}: {}", node.describe(),
           context.backend().device().id, s.reason);
  if (node.op_type() == "If") return std::make_unique<IfStep>(node, context);
  if (node.op_type() == "Loop") return std::make_unique<LoopStep>(node, context);
  return std::make_unique<ScanStep>(node, context);
}

}  // namespace switchyard::cuda
