#include "backends/sim/sim_backend.h"

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_kernels.h"
#include "ir/check.h"

namespace switchyard::sim {

namespace {

constexpr int kSimMemorySpaceBase = 1000;

// "timing": "model": a node takes the time the device's cost model gives it, from its static
// types as placement estimates it; the worker sleeps out what the cpu kernel did not take.
class ModelledTime : public runtime::NodePacer {
 public:
  explicit ModelledTime(const SimBackend& backend) : backend_(backend) {}
  void after_node(const ir::Node& node,
                  std::chrono::steady_clock::time_point started) const override {
    double us = backend_.estimate(node, backends::CompileOptions{}).microseconds;
    std::this_thread::sleep_until(started +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double, std::micro>(us)));
  }

 private:
  const SimBackend& backend_;
};

class SimPartition : public runtime::CompiledPartition {
 public:
  SimPartition(const backends::Partition& p, const SimBackend& backend, bool fusion)
      : program_(cpu::compile_fused_partition(p, fusion)),
        backend_(backend),
        inputs_(p.inputs),
        pacer_(backend) {}

  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs,
                             runtime::RunState& state) const override {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ir::Datum& d = inputs[i];
      bool resident = true;
      if (d.is_tensor())
        resident = d.tensor.dtype() == ir::DType::String || backend_.owns(d.tensor);
      for (const ir::Tensor& t : d.sequence)
        resident = resident && (t.dtype() == ir::DType::String || backend_.owns(t));
      SY_CHECK(resident, Internal, "value '{}' reached {} without a copy into its memory",
               inputs_[i]->name(), backend_.device().id);
    }
    if (!backend_.config().modelled_timing) return program_->run(std::move(inputs), state);
    const runtime::NodePacer* saved = state.pacer;
    state.pacer = &pacer_;
    struct Restore {
      runtime::RunState& s;
      const runtime::NodePacer* v;
      ~Restore() { s.pacer = v; }
    } restore{state, saved};
    return program_->run(std::move(inputs), state);
  }
  std::vector<runtime::FusionGroup> fusions() const override { return program_->fusions(); }

 private:
  std::unique_ptr<runtime::CompiledPartition> program_;
  const SimBackend& backend_;
  std::vector<const ir::Value*> inputs_;
  ModelledTime pacer_;
};

}  // namespace

SimBackend::SimBackend(int index, SimDeviceConfig config)
    : index_(index), config_(std::move(config)) {
  info_.id = "sim:" + std::to_string(index);
  info_.kind = "sim";
  info_.index = index;
  info_.name =
      config_.name.empty() ? "simulated accelerator " + std::to_string(index) : config_.name;
  info_.memory_bytes = config_.memory_bytes;
  info_.gflops = config_.gflops;
  info_.gbytes_per_s = config_.gbytes_per_s;
  info_.copy_latency_us = config_.copy_latency_us;
  info_.copy_gbytes_per_s = config_.copy_gbytes_per_s;
  info_.software = "simulated (the cpu kernels)";
  info_.concurrent_partitions = 1;
}

double SimBackend::simulated_copy_us(size_t bytes) const {
  if (!config_.modelled_timing) return 0;
  return config_.copy_latency_us + static_cast<double>(bytes) / (config_.copy_gbytes_per_s * 1e3);
}

bool SimBackend::op_allowed(const std::string& op) const {
  if (config_.exclude_ops.count(op)) return false;
  return config_.all_ops || config_.ops.count(op) > 0;
}

runtime::Support SimBackend::supports(const ir::Node& node) const {
  if (!op_allowed(node.op_type()))
    return runtime::Support::no(fmt::format("not supported on {}", info_.id));
  std::string missing;
  std::function<void(const ir::Graph&)> walk = [&](const ir::Graph& g) {
    for (const auto& n : g.nodes()) {
      if (missing.empty() && !op_allowed(n->op_type())) missing = n->op_type();
      for (const ir::Graph* s : n->subgraphs()) walk(*s);
    }
  };
  for (const ir::Graph* s : node.subgraphs()) walk(*s);
  if (!missing.empty())
    return runtime::Support::no(
        fmt::format("its body uses {}, which is not supported on {}", missing, info_.id));
  runtime::Support s = cpu::cpu_kernels().supports(node);
  if (!s.ok) return runtime::Support::no(fmt::format("no kernel on {}: {}", info_.id, s.reason));
  return s;
}

std::unique_ptr<runtime::CompiledPartition> SimBackend::compile(
    const backends::Partition& partition, const backends::CompileOptions& options) const {
  return std::make_unique<SimPartition>(partition, *this, options.fusion);
}

std::shared_ptr<runtime::HostPool> SimBackend::create_pool(
    bool poison, std::shared_ptr<runtime::MemoryBudget> budget) const {
  return runtime::HostPool::create(poison, kSimMemorySpaceBase + index_,
                                   runtime::budgeted(runtime::host_allocator(), std::move(budget)));
}

int SimBackend::memory_space() const { return kSimMemorySpaceBase + index_; }

ir::Datum SimBackend::copy_in(const ir::Datum& value, runtime::HostPool& pool) const {
  SY_ASSERT(pool.memory_space() == kSimMemorySpaceBase + index_);
  return runtime::copy_datum(value, pool);
}

const runtime::KernelRegistry* SimBackend::host_kernels() const { return &cpu::cpu_kernels(); }

std::vector<SimDeviceConfig> parse_sim_config(const std::string& path) {
  std::ifstream in(path);
  SY_CHECK(in.good(), InvalidArgument, "--sim-config '{}': cannot open the file", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    SY_THROW(InvalidArgument, "--sim-config '{}': not valid JSON: {}", path, e.what());
  }
  SY_CHECK(j.is_array() && !j.empty(), InvalidArgument,
           "--sim-config '{}': expected a non-empty JSON list of devices", path);
  std::vector<SimDeviceConfig> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& d = j[i];
    SY_CHECK(d.is_object(), InvalidArgument, "--sim-config '{}': device {} is not an object", path,
             i);
    SimDeviceConfig c;
    auto number = [&](const char* key, double& field, double min) {
      if (!d.contains(key)) return;
      SY_CHECK(d[key].is_number() && d[key].get<double>() >= min, InvalidArgument,
               "--sim-config '{}': device {} field '{}' must be a number >= {}", path, i, key, min);
      field = d[key].get<double>();
    };
    auto op_list = [&](const char* key, std::set<std::string>& field) {
      SY_CHECK(d[key].is_array(), InvalidArgument,
               "--sim-config '{}': device {} field '{}' must be a list of op types", path, i, key);
      for (const auto& op : d[key]) {
        SY_CHECK(op.is_string(), InvalidArgument,
                 "--sim-config '{}': device {} field '{}' must hold strings", path, i, key);
        field.insert(op.get<std::string>());
      }
    };
    for (auto it = d.begin(); it != d.end(); ++it) {
      const std::string& key = it.key();
      if (key == "name") {
        SY_CHECK(it->is_string(), InvalidArgument,
                 "--sim-config '{}': device {} field 'name' must be a string", path, i);
        c.name = it->get<std::string>();
      } else if (key == "ops") {
        if (it->is_string()) {
          SY_CHECK(it->get<std::string>() == "all", InvalidArgument,
                   "--sim-config '{}': device {} field 'ops' must be \"all\" or a list", path, i);
        } else {
          c.all_ops = false;
          op_list("ops", c.ops);
        }
      } else if (key == "exclude_ops") {
        op_list("exclude_ops", c.exclude_ops);
      } else if (key == "gflops") {
        number("gflops", c.gflops, 1e-6);
      } else if (key == "gbytes_per_s") {
        number("gbytes_per_s", c.gbytes_per_s, 1e-6);
      } else if (key == "copy_latency_us") {
        number("copy_latency_us", c.copy_latency_us, 0);
      } else if (key == "copy_gbytes_per_s") {
        number("copy_gbytes_per_s", c.copy_gbytes_per_s, 1e-6);
      } else if (key == "shape_steps_inline") {
        SY_CHECK(it->is_boolean(), InvalidArgument,
                 "--sim-config '{}': device {} field 'shape_steps_inline' must be true or false",
                 path, i);
        c.shape_steps_inline = it->get<bool>();
      } else if (key == "timing") {
        SY_CHECK(it->is_string() &&
                     (it->get<std::string>() == "real" || it->get<std::string>() == "model"),
                 InvalidArgument,
                 "--sim-config '{}': device {} field 'timing' must be \"real\" or \"model\"", path,
                 i);
        c.modelled_timing = it->get<std::string>() == "model";
      } else if (key == "memory_bytes") {
        SY_CHECK(it->is_number_unsigned(), InvalidArgument,
                 "--sim-config '{}': device {} field 'memory_bytes' must be a non-negative "
                 "integer",
                 path, i);
        c.memory_bytes = it->get<uint64_t>();
      } else {
        SY_THROW(InvalidArgument, "--sim-config '{}': device {} has unknown field '{}'", path, i,
                 key);
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<std::shared_ptr<backends::Backend>> create_sim_backends(int count) {
  SY_CHECK(count >= 0 && count <= 64, InvalidArgument, "--sim {}: expected 0..64 devices", count);
  std::vector<SimDeviceConfig> configs(static_cast<size_t>(count));
  return create_sim_backends(configs);
}

std::vector<std::shared_ptr<backends::Backend>> create_sim_backends(
    const std::vector<SimDeviceConfig>& configs) {
  std::vector<std::shared_ptr<backends::Backend>> out;
  for (size_t i = 0; i < configs.size(); ++i)
    out.push_back(std::make_shared<SimBackend>(static_cast<int>(i), configs[i]));
  return out;
}

}  // namespace switchyard::sim
