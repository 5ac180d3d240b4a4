// The cuDNN backend-API layer of conv_graph.h: owning descriptors, tensors, operation graphs and
// the heuristics-driven search for an execution plan.
#include "backends/cuda/kernels/conv_graph.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard::cuda {

namespace {

[[noreturn]] void fail_step(const char* what, cudnnStatus_t status) {
  throw CudnnGraphError(fmt::format("{}: {}", what, cudnn_status_text(status)));
}

void check_step(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) fail_step(what, status);
}

const char* note_name(cudnnBackendNumericalNote_t note) {
  switch (note) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
      return "tensor core";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
      return "down-converts inputs";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
      return "reduced precision reduction";
    case CUDNN_NUMERICAL_NOTE_FFT:
      return "fft";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
      return "nondeterministic";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD:
      return "winograd";
    default:
      return "numerical note";
  }
}

// The engine configurations cuDNN's heuristics `mode` proposes for `graph`, best first.
std::vector<CudnnDescriptor> engine_configs(const CudnnDescriptor& graph,
                                            cudnnBackendHeurMode_t mode) {
  CudnnDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendDescriptor_t raw_graph = graph.get();
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &raw_graph, "setting the heuristics' operation graph");
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode,
                 "setting the heuristics mode");
  heuristics.finalize("finalizing the heuristics");
  int64_t count = 0;
  check_step(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
             "counting the heuristics' results");
  std::vector<CudnnDescriptor> configs;
  if (count <= 0) return configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t returned = 0;
  check_step(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, raw.data()),
             "reading the heuristics' results");
  configs.resize(static_cast<size_t>(std::clamp<int64_t>(returned, 0, count)));
  return configs;
}

// The engine of a configuration: its global index and numerical notes.
struct EngineInfo {
  int64_t index = -1;
  std::vector<cudnnBackendNumericalNote_t> notes;
};

EngineInfo engine_info(const CudnnDescriptor& config) {
  EngineInfo info;
  CudnnDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw_engine = engine.get();
  int64_t n = 0;
  check_step(cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw_engine),
             "reading a configuration's engine");
  check_step(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                      CUDNN_TYPE_INT64, 1, &n, &info.index),
             "reading an engine's index");
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t num_notes = 0;
  check_step(cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                      CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                      &num_notes, notes),
             "reading an engine's numerical notes");
  num_notes = std::clamp<int64_t>(num_notes, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  info.notes.assign(notes, notes + num_notes);
  return info;
}

}  // namespace

std::string cudnn_status_text(cudnnStatus_t status) {
  char message[1024] = {};
  cudnnGetLastErrorString(message, sizeof(message));
  std::string text = cudnnGetErrorString(status);
  if (message[0] != '\0') text += fmt::format(" ({})", message);
  return text;
}

CudnnDescriptor::CudnnDescriptor(cudnnBackendDescriptorType_t type) {
  check_step(cudnnBackendCreateDescriptor(type, &desc_), "creating a cuDNN descriptor");
}

CudnnDescriptor::~CudnnDescriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);
}

CudnnDescriptor& CudnnDescriptor::operator=(CudnnDescriptor&& other) noexcept {
  if (this != &other) {
    if (desc_) cudnnBackendDestroyDescriptor(desc_);
    desc_ = other.desc_;
    other.desc_ = nullptr;
  }
  return *this;
}

void CudnnDescriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                          int64_t count, const void* values, const char* what) {
  check_step(cudnnBackendSetAttribute(desc_, name, type, count, values), what);
}

void CudnnDescriptor::set_int64(cudnnBackendAttributeName_t name, int64_t value, const char* what) {
  set(name, CUDNN_TYPE_INT64, 1, &value, what);
}

void CudnnDescriptor::set_int64s(cudnnBackendAttributeName_t name,
                                 const std::vector<int64_t>& values, const char* what) {
  set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data(), what);
}

void CudnnDescriptor::set_data_type(cudnnBackendAttributeName_t name, cudnnDataType_t value,
                                    const char* what) {
  set(name, CUDNN_TYPE_DATA_TYPE, 1, &value, what);
}

void CudnnDescriptor::set_descriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& value,
                                     const char* what) {
  cudnnBackendDescriptor_t raw = value.get();
  set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
}

void CudnnDescriptor::finalize(const char* what) { check_step(cudnnBackendFinalize(desc_), what); }

CudnnDescriptor make_tensor_descriptor(int64_t uid, cudnnDataType_t dtype,
                                       const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& strides, int64_t alignment,
                                       bool is_virtual) {
  CudnnDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set_data_type(CUDNN_ATTR_TENSOR_DATA_TYPE, dtype, "setting a tensor's data type");
  t.set_int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, dims, "setting a tensor's dimensions");
  t.set_int64s(CUDNN_ATTR_TENSOR_STRIDES, strides, "setting a tensor's strides");
  t.set_int64(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid, "setting a tensor's unique id");
  t.set_int64(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, alignment, "setting a tensor's alignment");
  bool virtual_flag = is_virtual;
  t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virtual_flag,
        "setting whether a tensor is virtual");
  t.finalize("finalizing a tensor descriptor");
  return t;
}

CudnnDescriptor make_operation_graph(cudnnHandle_t handle,
                                     const std::vector<const CudnnDescriptor*>& ops) {
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const CudnnDescriptor* op : ops) raw.push_back(op->get());
  CudnnDescriptor graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
            static_cast<int64_t>(raw.size()), raw.data(), "setting the graph's operations");
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle,
            "setting the graph's handle");
  graph.finalize("finalizing the operation graph");
  return graph;
}

std::optional<ExecutionPlan> find_execution_plan(
    cudnnHandle_t handle, const CudnnDescriptor& graph,
    const std::vector<cudnnBackendNumericalNote_t>& excluded_notes, int64_t max_workspace_bytes,
    std::vector<std::string>& failures) {
  const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {
      {CUDNN_HEUR_MODE_A, "heuristics A"}, {CUDNN_HEUR_MODE_FALLBACK, "fallback heuristics"}};
  for (const auto& [mode, mode_name] : modes) {
    std::vector<CudnnDescriptor> configs;
    try {
      configs = engine_configs(graph, mode);
    } catch (const CudnnGraphError& e) {
      failures.push_back(fmt::format("{}: {}", mode_name, e.what()));
      continue;
    }
    if (configs.empty()) failures.push_back(fmt::format("{}: no engine proposed", mode_name));
    for (CudnnDescriptor& config : configs) {
      try {
        EngineInfo engine = engine_info(config);
        auto excluded = std::find_first_of(engine.notes.begin(), engine.notes.end(),
                                           excluded_notes.begin(), excluded_notes.end());
        if (excluded != engine.notes.end()) {
          failures.push_back(fmt::format("{} engine {}: skipped ({})", mode_name, engine.index,
                                         note_name(*excluded)));
          continue;
        }
        ExecutionPlan result;
        result.plan = CudnnDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        result.plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle,
                        "setting the plan's handle");
        result.plan.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config,
                                   "setting the plan's engine configuration");
        cudnnStatus_t status = cudnnBackendFinalize(result.plan.get());
        if (status != CUDNN_STATUS_SUCCESS) {
          failures.push_back(fmt::format("{} engine {}: finalize failed: {}", mode_name,
                                         engine.index, cudnn_status_text(status)));
          continue;
        }
        int64_t n = 0;
        check_step(
            cudnnBackendGetAttribute(result.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &n, &result.workspace_bytes),
            "reading the plan's workspace size");
        if (result.workspace_bytes < 0 || result.workspace_bytes > max_workspace_bytes) {
          failures.push_back(fmt::format("{} engine {}: skipped (workspace of {} bytes)", mode_name,
                                         engine.index, result.workspace_bytes));
          continue;
        }
        result.engine_index = engine.index;
        result.engine_config = std::move(config);
        return result;
      } catch (const CudnnGraphError& e) {
        failures.push_back(fmt::format("{}: {}", mode_name, e.what()));
      }
    }
  }
  return std::nullopt;
}

}  // namespace switchyard::cuda
