// Kernels and the registry a backend keeps them in. A kernel object is created once per node
// at compile time (validate attributes, pick the typed function) and its run() is const, so one
// compiled program serves concurrent runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/check.h"
#include "ir/graph.h"
#include "ops/op_kind.h"
#include "runtime/memory.h"

namespace switchyard::runtime {

/// Whether a backend can run a node; `reason` is user-facing when !ok.
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

class GraphProgram;
struct Frame;
struct RunState;

/// What a running kernel sees: its node, input values, and where outputs go.
class KernelContext {
 public:
  KernelContext(const ir::Node& node, std::vector<const ir::Datum*> inputs,
                std::vector<ir::Datum>& outputs, RunState& state, const Frame* frame)
      : node_(node), inputs_(std::move(inputs)), outputs_(outputs), state_(state), frame_(frame) {}

  const ir::Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  /// True when input i is given and is not an empty optional.
  bool has_input(size_t i) const {
    return i < inputs_.size() && inputs_[i] && !inputs_[i]->is_empty();
  }
  /// Input i as any value kind; throws InvalidArgument naming the node when absent.
  const ir::Datum& input_datum(size_t i) const;
  /// Input i as a tensor; throws InvalidArgument naming the node when absent or not a tensor.
  const ir::Tensor& input(size_t i) const;
  /// Allocates output i from the run's pool (strings: heap) and returns it for writing.
  ir::Tensor& allocate_output(size_t i, ir::DType dtype, std::vector<int64_t> shape);
  /// Sets output i to a value made elsewhere (an alias of an input, a sequence, ...).
  void set_output(size_t i, ir::Datum value);
  /// Fresh scratch memory from the run's pool, freed when the returned pointer is dropped.
  std::shared_ptr<void> scratch(size_t bytes) const;
  /// Threads the kernel may use.
  int num_threads() const;
  RunState& state() const { return state_; }
  /// The value table of the running graph (for control flow bodies that read outer values).
  const Frame* frame() const { return frame_; }

  /// Throws InvalidArgument with the node's description prefixed.
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    SY_THROW(InvalidArgument, "{}: {}", node_.describe(),
             fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  const ir::Node& node_;
  std::vector<const ir::Datum*> inputs_;
  std::vector<ir::Datum>& outputs_;
  RunState& state_;
  const Frame* frame_;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  /// Computes the node's outputs. Checks every index read from tensor data.
  virtual void run(KernelContext& ctx) const = 0;
};

class KernelRegistry;

/// What a kernel factory gets at compile time.
struct KernelInit {
  const ir::Node& node;
  /// The registry the node's kernel came from, to compile subgraph bodies (If/Loop/Scan).
  const KernelRegistry& registry;
};

/// One registered kernel: an op, the dtypes it accepts on one input, extra checks, a factory.
struct KernelDef {
  ops::OpKind op{};
  /// Accepted dtypes of input `dtype_input` (output 0 when dtype_input is -1); empty = any.
  std::vector<ir::DType> dtypes;
  int dtype_input = 0;
  /// Attribute or shape checks beyond dtype; absent = always ok.
  std::function<Support(const ir::Node&)> check;
  std::function<std::unique_ptr<Kernel>(const KernelInit&)> create;
  /// Inputs the kernel reads on the host (shape-like values: Reshape's shape, Slice's starts):
  /// a device backend receives these in host memory, so no device sync is needed to read them.
  std::vector<int> host_inputs = {};
};

/// Helper for the common case: a kernel class constructible from KernelInit.
template <typename K>
std::function<std::unique_ptr<Kernel>(const KernelInit&)> make_factory() {
  return
      [](const KernelInit& init) -> std::unique_ptr<Kernel> { return std::make_unique<K>(init); };
}

class KernelRegistry {
 public:
  explicit KernelRegistry(std::string backend_name) : backend_name_(std::move(backend_name)) {}
  /// Adds a kernel. Several defs per op are tried in registration order.
  void add(KernelDef def);
  /// Shorthand: add({op, dtypes, 0, {}, make_factory<K>()}).
  template <typename K>
  void add(ops::OpKind op, std::vector<ir::DType> dtypes, int dtype_input = 0) {
    add(KernelDef{op, std::move(dtypes), dtype_input, {}, make_factory<K>()});
  }
  /// Whether some kernel accepts the node (its dtype and checks); the reason names what is
  /// missing ("no Conv kernel for int64 on cpu").
  Support supports(const ir::Node& node) const;
  /// Creates the node's kernel; throws Unsupported with the supports() reason.
  std::unique_ptr<Kernel> create(const ir::Node& node) const;
  /// The inputs of the node's kernel that it reads on the host (KernelDef::host_inputs).
  std::vector<int> host_inputs(const ir::Node& node) const;
  /// Ops with at least one kernel.
  std::vector<ops::OpKind> ops() const;
  const std::string& backend_name() const { return backend_name_; }

 private:
  const KernelDef* find(const ir::Node& node, Support* why) const;
  std::string backend_name_;
  std::vector<std::vector<KernelDef>> by_op_ =
      std::vector<std::vector<KernelDef>>(ops::kNumOpKinds);
};

}  // namespace switchyard::runtime
