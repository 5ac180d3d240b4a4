// The compiled model behind InferenceSession: an Executable compiled (or loaded from a .syx)
// under switchyard::Options, run with the GIL released.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "switchyard/switchyard.hpp"
#include "value.h"

namespace switchyard::python {

namespace py = pybind11;

class Session {
 public:
  /// compile_file(path, options) without the GIL: an ONNX model is compiled, a saved
  /// executable loaded. Throws what compile_file throws.
  Session(const std::string& path, const Options& options);

  /// The executable; InvalidArgument once the session was closed.
  const Executable& exe() const;
  void close() { exe_.reset(); }
  bool closed() const { return !exe_; }

  /// Runs with `inputs` in graph-input order (a _Value, None for an absent optional, a list of
  /// _Value for a sequence) and returns (outputs, stats): the outputs at `output_indices` (all
  /// when empty), each a _Value, None or a list; a host output never shares memory with an
  /// input or the model. `control` is a _RunControl or None, `profile` a _ProfileLog that
  /// collects the run's events or None; `outputs_on` the device whose memory the outputs are
  /// left in ("" = host); `output_buffers` the caller's _Values, by output name, those outputs
  /// are written into and returned as; `cuda_stream` a cudaStream_t the run's GPU work orders
  /// itself after (0: none).
  py::tuple run(const py::list& inputs, const std::vector<int>& output_indices, py::object control,
                py::object profile, const std::string& outputs_on, const py::dict& output_buffers,
                uintptr_t cuda_stream);

 private:
  /// The run's tensor for a bound value (an input or an output buffer): host memory as it is;
  /// device memory tagged as the device's (Executable::wrap_device_memory).
  Tensor input_tensor(const Value& value, const std::string& what) const;

  std::optional<Executable> exe_;
};

/// Registers _Options, _RunControl, _ProfileLog and _Session on the module.
void bind_session(py::module_& m);

}  // namespace switchyard::python
