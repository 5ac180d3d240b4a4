#include "backends/cpu/cpu_backend.h"

#include <dnnl.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/fusion/fusion.h"
#include "backends/partition_graph.h"
#include "runtime/graph_program.h"

namespace switchyard::cpu {

namespace {

// A cpu partition compiled from a private clone of its nodes with the shared fusions applied
// (fusion.h): GELU patterns become Gelu, and Conv / MatMul / Gemm take their bias, residual,
// scale and activation as oneDNN post-ops (or, on paths oneDNN does not take, as a loop in the
// same kernel).
class FusedPartition : public runtime::CompiledPartition {
 public:
  FusedPartition(const backends::Partition& p, const runtime::KernelRegistry& kernels) {
    std::map<const ir::Node*, const ir::Node*> origin;
    graph_ = backends::clone_partition(p, origin);
    std::vector<runtime::FusionGroup> groups = backends::fuse_gelu(*graph_);
    using backends::fusion::Activation;
    for (runtime::FusionGroup& g : backends::fuse_conv_epilogues(
             *graph_, {Activation::Relu, Activation::Sigmoid, Activation::Tanh, Activation::Clip,
                       Activation::HardSwish, Activation::Swish}))
      groups.push_back(std::move(g));
    for (runtime::FusionGroup& g : backends::fuse_matmul_epilogues(*graph_))
      groups.push_back(std::move(g));
    for (runtime::FusionGroup& g : backends::fold_transposes_into_matmul(*graph_))
      groups.push_back(std::move(g));
    for (runtime::FusionGroup& g : backends::fuse_norm_activation(*graph_))
      groups.push_back(std::move(g));
    for (runtime::FusionGroup& g : backends::fuse_concat_norm(*graph_))
      groups.push_back(std::move(g));
    for (runtime::FusionGroup& g : backends::fuse_residual_layernorm(*graph_))
      groups.push_back(std::move(g));
    for (runtime::FusionGroup& g : backends::fuse_softmax_mask(*graph_))
      groups.push_back(std::move(g));
    fusions_ = backends::merge_fusion_groups(std::move(groups));
    // oneDNN's convolutions take NHWC activations as they are: a chain of convolutions and the
    // elementwise nodes between them keeps that layout, with transposes only at its edges
    // (instead of a reorder to oneDNN's blocked layout and back around every convolution).
    // Pools join too (oneDNN's pooling takes NHWC; their NaN-exact loops run on transposed
    // copies), inference BatchNormalization (DenseNet's BN -> ReLU -> Conv), Pad and Resize
    // (an FPN's upsampling).
    static const backends::ChannelsLastRules kRules{{ir::DType::Float32}, true, true, true, true};
    backends::apply_channels_last(*graph_, kRules);
    program_ = std::make_unique<runtime::GraphProgram>(*graph_, kernels);
  }
  std::vector<ir::Datum> run(std::vector<ir::Datum> inputs,
                             runtime::RunState& state) const override {
    return program_->run(std::move(inputs), state);
  }
  std::vector<runtime::FusionGroup> fusions() const override { return fusions_; }

 private:
  std::unique_ptr<ir::Graph> graph_;
  std::unique_ptr<runtime::GraphProgram> program_;
  std::vector<runtime::FusionGroup> fusions_;
};

}  // namespace

CpuBackend::CpuBackend() {
  info_.id = "cpu";
  info_.kind = "cpu";
  info_.name = "host CPU";
  const dnnl_version_t* v = dnnl_version();
  info_.software = fmt::format("oneDNN {}.{}.{} ({})", v->major, v->minor, v->patch, v->hash);
  info_.is_host = true;
  // Estimates only, and fixed rather than measured, so the same graph, options and devices
  // place the same way on every machine: about what oneDNN reaches on two AVX2 cores.
  info_.gflops = 80.0;
  info_.gbytes_per_s = 30.0;
}

runtime::Support CpuBackend::supports(const ir::Node& node) const {
  return cpu_kernels().supports(node);
}

std::unique_ptr<runtime::CompiledPartition> CpuBackend::compile(
    const backends::Partition& partition, const backends::CompileOptions& options) const {
  return compile_fused_partition(partition, options.fusion);
}

std::unique_ptr<runtime::CompiledPartition> compile_fused_partition(
    const backends::Partition& partition, bool fusion) {
  // Bodies of If / Loop / Scan read outer values by pointer: such partitions run as placed.
  if (!fusion || backends::has_graph_bodies(partition))
    return backends::compile_program_partition(partition, cpu_kernels());
  return std::make_unique<FusedPartition>(partition, cpu_kernels());
}

std::shared_ptr<runtime::HostPool> CpuBackend::create_pool(
    bool poison, std::shared_ptr<runtime::MemoryBudget> budget) const {
  return runtime::HostPool::create(poison, runtime::kHostMemorySpace,
                                   runtime::budgeted(runtime::host_allocator(), std::move(budget)));
}

ir::Datum CpuBackend::copy_in(const ir::Datum& value, runtime::HostPool& pool) const {
  return runtime::copy_datum(value, pool);
}

const runtime::KernelRegistry* CpuBackend::host_kernels() const { return &cpu_kernels(); }

}  // namespace switchyard::cpu
