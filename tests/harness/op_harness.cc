#include "harness/op_harness.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "backends/cpu/cpu_backend.h"
#include "backends/sim/sim_backend.h"
#include "compiler/compiler.h"
#include "ops/schema.h"
#include "placement/policy.h"
#include "plugins.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing::harness {
namespace {

using Devices = std::vector<std::shared_ptr<const backends::Backend>>;

// The devices of this process, made once: the cpu, the plugins' (cuda:N), one sim device.
const Devices& devices() {
  static const Devices all = [] {
    Devices d{std::make_shared<cpu::CpuBackend>()};
    for (auto& p : plugins::create_plugin_backends()) d.push_back(std::move(p));
    for (auto& s : sim::create_sim_backends(1)) d.push_back(std::move(s));
    return d;
  }();
  return all;
}

// The backend whose skip list applies on `device`: "cuda:0" -> "cuda".
std::string backend_of(const std::string& device) { return device.substr(0, device.find(':')); }

bool matches(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*')
    return name.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return pattern == name;
}

const SkipEntry* find_skip(const std::string& backend, const std::string& key) {
  for (const SkipEntry& e : skip_list(backend))
    if (matches(e.pattern, key)) return &e;
  return nullptr;
}

bool is_constant(const Case& c, size_t i) {
  return i < c.constant_inputs.size() && c.constant_inputs[i];
}

std::unique_ptr<ir::Graph> build_graph(const Case& c) {
  auto g = std::make_unique<ir::Graph>("harness");
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i]) {
      ins.push_back(nullptr);
      continue;
    }
    const ir::Tensor& t = *c.inputs[i];
    std::string name = "in" + std::to_string(i);
    ins.push_back(is_constant(c, i)
                      ? g->add_constant(name, t)
                      : g->add_input(name, ir::Type::tensor(t.dtype(), ir::make_shape(t.shape()))));
  }
  if (c.prelude) ins = c.prelude(*g, ins);
  std::vector<std::string> outs;
  for (int i = 0; i < c.num_outputs; ++i) outs.push_back("out" + std::to_string(i));
  ir::Node* n = g->add_node(c.op, "node", ins, outs, c.domain);
  for (const auto& a : c.attributes) n->set_attribute(a);
  for (ir::Value* v : n->outputs()) g->add_output(v);
  return g;
}

// The one place that chooses the device: the node pinned there, strict fallback (a node the
// device cannot run fails the compile), fresh buffers poisoned. Throws what compile and run
// throw; throws Internal when the node ran anywhere else (folded away, or placed on the host).
std::vector<ir::Tensor> run_on(const Case& c, const std::string& device) {
  compiler::CompileOptions options;
  options.num_threads = 2;
  options.poison_buffers = true;
  options.policy.devices = placement::parse_device_list(device);
  options.policy.pins.push_back(placement::parse_pin("node=" + device));
  options.policy.fallback = placement::parse_fallback("strict");
  options.backend = compiler::backend_options("fp32", /*fusion=*/true, /*device_graphs=*/true);
  auto exe = compiler::compile(build_graph(c), devices(), options);
  std::string placed = "nowhere (folded away)";
  for (const placement::NodeDecision& d : exe->placement_report().nodes)
    if (d.node == "node") placed = d.device;
  SY_CHECK(placed == device, Internal, "the node ran on {}, not on {}", placed, device);
  std::vector<ir::Datum> feeds;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i] && !is_constant(c, i)) feeds.emplace_back(*c.inputs[i]);
  std::vector<ir::Datum> outs = exe->run(std::move(feeds));
  std::vector<ir::Tensor> tensors;
  for (size_t i = 0; i < outs.size(); ++i) {
    SY_CHECK(outs[i].is_tensor(), Internal, "output {} is not a tensor", i);
    tensors.push_back(std::move(outs[i].tensor));
  }
  return tensors;
}

// "" when every output matches, else what differs.
std::string compare_outputs(const Case& c, const std::vector<ir::Tensor>& got,
                            const std::vector<ir::Tensor>& want) {
  if (got.size() != want.size())
    return fmt::format("{} outputs, expected {}", got.size(), want.size());
  std::string diff;
  for (size_t i = 0; i < want.size(); ++i) {
    bool exact = !ir::dtype_is_float(want[i].dtype());
    std::string d = compare_tensors(got[i], want[i], exact ? 0 : c.tolerance.rtol,
                                    exact ? 0 : c.tolerance.atol);
    if (!d.empty()) diff += fmt::format("output {}: {} ", i, d);
  }
  return diff;
}

struct FamilyState {
  std::vector<Case> cases;
  std::map<size_t, std::vector<ir::Tensor>> cpu_results;  // cases without a reference
  std::map<size_t, std::vector<ir::Tensor>> references;   // small reference results
};

FamilyState& state_of(const std::string& family,
                      const std::function<std::vector<Case>()>& make_cases) {
  static std::map<std::string, FamilyState> states;
  auto it = states.find(family);
  if (it == states.end()) it = states.emplace(family, FamilyState{make_cases(), {}, {}}).first;
  return it->second;
}

}  // namespace

std::string cuda_unavailable_reason() {
  static const std::string reason = [] {
    for (const auto& d : devices())
      if (d->device().id == "cuda:0") return std::string();
    for (const BackendStatus& b : backend_status()) {
      if (b.name != "cuda") continue;
      if (!b.loaded) return "the CUDA backend did not load: " + b.detail;
      return "the CUDA backend loaded but found no device: " + b.detail;
    }
    return std::string("this build has no CUDA backend");
  }();
  return reason;
}

void run_family(const std::string& family, const std::function<std::vector<Case>()>& make_cases,
                const std::string& device) {
  FamilyState& state = state_of(family, make_cases);
  const std::string backend = backend_of(device);
  auto start = std::chrono::steady_clock::now();
  int ran = 0, skipped = 0, failed = 0;
  for (size_t k = 0; k < state.cases.size(); ++k) {
    const Case& c = state.cases[k];
    const std::string key = family + "/" + c.name;
    if (find_skip(backend, key) || (!c.reference && backend != "cpu" && find_skip("cpu", key))) {
      ++skipped;
      continue;
    }
    ++ran;
    std::string diff;
    try {
      std::vector<ir::Tensor> want;
      if (c.reference) {
        // Kept for the next backend unless large (the family's references would not fit).
        auto it = state.references.find(k);
        if (it != state.references.end()) {
          want = it->second;
        } else {
          want = c.reference(c.inputs);
          int64_t elements = 0;
          for (const ir::Tensor& t : want) elements += t.numel();
          if (elements <= (int64_t{1} << 16)) state.references.emplace(k, want);
        }
      } else if (backend != "cpu") {
        auto it = state.cpu_results.find(k);
        if (it == state.cpu_results.end())
          it = state.cpu_results.emplace(k, run_on(c, "cpu")).first;
        want = it->second;
      }
      std::vector<ir::Tensor> got = run_on(c, device);
      if (backend == "cpu" && !c.reference) state.cpu_results.emplace(k, got);
      if (c.reference || backend != "cpu") diff = compare_outputs(c, got, want);
    } catch (const std::exception& e) {
      diff = std::string("threw: ") + e.what();
    }
    if (!diff.empty()) {
      ++failed;
      ADD_FAILURE() << key << " on " << device << ": " << diff;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format(
      "harness_{} on {}: {} cases run, {} failed, {} skipped (skip list) "
      "in {:.1f} s\n",
      family, device, ran, failed, skipped, seconds);
}

void check_skip_lists(const std::string& family,
                      const std::function<std::vector<Case>()>& make_cases) {
  FamilyState& state = state_of(family, make_cases);
  std::set<std::string> names;
  for (const Case& c : state.cases) {
    EXPECT_TRUE(names.insert(c.name).second) << family << ": two cases named '" << c.name << "'";
  }
  const std::set<std::string> families(known_families().begin(), known_families().end());
  EXPECT_TRUE(families.count(family)) << family << " is missing from known_families()";
  for (const char* backend : {"cpu", "sim", "cuda"}) {
    for (const SkipEntry& e : skip_list(backend)) {
      std::string prefix = e.pattern.substr(0, e.pattern.find('/'));
      EXPECT_TRUE(families.count(prefix))
          << "skip_" << backend << ": '" << e.pattern << "' names no known family";
      EXPECT_FALSE(e.reason.empty())
          << "skip_" << backend << ": '" << e.pattern << "' has no reason";
      if (prefix != family) continue;
      bool used = false;
      for (const Case& c : state.cases) used = used || matches(e.pattern, family + "/" + c.name);
      EXPECT_TRUE(used) << "skip_" << backend << ": stale entry '" << e.pattern
                        << "' matches no case of " << family;
    }
  }
}

std::vector<int64_t> broadcast_shapes(const std::vector<std::vector<int64_t>>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] != 1) o = s[i];
    }
  return out;
}

namespace {

// Calls f(flat output index, each input's flat offset) over the numpy broadcast of `shapes`,
// walking the output as an odometer; returns the output shape.
std::vector<int64_t> for_each_broadcast(
    const std::vector<std::vector<int64_t>>& shapes,
    const std::function<void(int64_t, const std::vector<int64_t>&)>& f) {
  const std::vector<int64_t> out_shape = broadcast_shapes(shapes);
  const size_t rank = out_shape.size();
  std::vector<std::vector<int64_t>> strides(shapes.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < shapes.size(); ++k) {
    const auto& s = shapes[k];
    int64_t stride = 1;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] != 1) strides[k][rank - s.size() + i] = stride;
      stride *= s[i];
    }
  }
  const int64_t n = product(out_shape);
  std::vector<int64_t> index(rank, 0), offset(shapes.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    f(flat, offset);
    for (size_t d = rank; d-- > 0;) {
      for (size_t k = 0; k < shapes.size(); ++k) offset[k] += strides[k][d];
      if (++index[d] < out_shape[d]) break;
      for (size_t k = 0; k < shapes.size(); ++k) offset[k] -= strides[k][d] * out_shape[d];
      index[d] = 0;
    }
  }
  return out_shape;
}

template <typename F>
void with_int_type(ir::DType dtype, F&& f) {
  using ir::DType;
  switch (dtype) {
    // clang-format off
    case DType::Int8: f(int8_t{}); break;
    case DType::Int16: f(int16_t{}); break;
    case DType::Int32: f(int32_t{}); break;
    case DType::Int64: f(int64_t{}); break;
    case DType::UInt8: f(uint8_t{}); break;
    case DType::UInt16: f(uint16_t{}); break;
    case DType::UInt32: f(uint32_t{}); break;
    case DType::UInt64: f(uint64_t{}); break;
    case DType::Bool: f(bool{}); break;
    default: SY_THROW(Internal, "harness: {} is not an integer dtype", ir::dtype_name(dtype));
      // clang-format on
  }
}

}  // namespace

ir::Tensor map_broadcast(const std::vector<const ir::Tensor*>& inputs, ir::DType dtype,
                         const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<double>> values;
  for (const ir::Tensor* t : inputs) {
    shapes.push_back(t->shape());
    values.push_back(to_doubles(*t));
  }
  std::vector<double> out;
  std::vector<double> args(inputs.size());
  std::vector<int64_t> out_shape = for_each_broadcast(shapes, [&](int64_t, const auto& offset) {
    for (size_t k = 0; k < inputs.size(); ++k) args[k] = values[k][static_cast<size_t>(offset[k])];
    out.push_back(f(args));
  });
  return tensor_of(dtype, out_shape, out);
}

ir::Tensor map_broadcast_int(const std::vector<const ir::Tensor*>& inputs, ir::DType dtype,
                             const std::function<int64_t(const std::vector<int64_t>&)>& f) {
  std::vector<std::vector<int64_t>> shapes;
  for (const ir::Tensor* t : inputs) shapes.push_back(t->shape());
  std::vector<int64_t> out;
  std::vector<int64_t> args(inputs.size());
  std::vector<int64_t> out_shape = for_each_broadcast(shapes, [&](int64_t, const auto& offset) {
    for (size_t k = 0; k < inputs.size(); ++k) args[k] = int_at(*inputs[k], offset[k]);
    out.push_back(f(args));
  });
  ir::Tensor t(dtype, out_shape);
  for (size_t i = 0; i < out.size(); ++i) set_int(t, static_cast<int64_t>(i), out[i]);
  return t;
}

int64_t int_at(const ir::Tensor& t, int64_t i) {
  int64_t v = 0;
  with_int_type(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    v = static_cast<int64_t>(t.data<T>()[i]);
  });
  return v;
}

void set_int(ir::Tensor& t, int64_t i, int64_t bits) {
  with_int_type(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      t.data<bool>()[i] = bits != 0;
    } else {
      t.data<T>()[i] = static_cast<T>(static_cast<uint64_t>(bits));
    }
  });
}

ir::Tensor move_elements(const ir::Tensor& x, const std::vector<int64_t>& out_shape,
                         const std::function<int64_t(const std::vector<int64_t>&)>& source,
                         const ir::Tensor* fill) {
  ir::Tensor out(x.dtype(), out_shape);
  const size_t size = ir::dtype_size(x.dtype());
  const char* from = static_cast<const char*>(x.raw());
  char* to = static_cast<char*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t s = source(unravel(i, out_shape));
    const char* p = nullptr;
    if (s >= 0) {
      SY_ASSERT(s < x.numel());
      p = from + static_cast<size_t>(s) * size;
    } else if (fill) {
      p = static_cast<const char*>(fill->raw());
    }
    if (p) {
      std::memcpy(to + static_cast<size_t>(i) * size, p, size);
    } else {
      std::memset(to + static_cast<size_t>(i) * size, 0, size);
    }
  }
  return out;
}

double wrap_to(ir::DType dtype, double value) {
  if (!ir::dtype_is_integer(dtype) || ir::dtype_size(dtype) >= 8) return value;
  double m = std::pow(2.0, 8.0 * static_cast<double>(ir::dtype_size(dtype)));
  double r = std::fmod(value, m);
  if (r < 0) r += m;
  if (ir::dtype_is_signed(dtype) && r >= m / 2) r -= m;
  return r;
}

std::string dtype_tag(ir::DType dtype) { return std::string(ir::dtype_name(dtype)); }

std::string shape_tag(const std::vector<int64_t>& shape) { return ir::shape_to_string(shape); }

int64_t normalize_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

}  // namespace switchyard::testing::harness
