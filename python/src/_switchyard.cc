// The extension module `switchyard._switchyard`: the public C++ API (include/switchyard/) as
// the pure-Python package (python/switchyard/) uses it. Thin by design: conversions and calls,
// no policy; the ONNX Runtime-compatible surface lives in Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>

#include "session.h"
#include "switchyard/switchyard.hpp"
#include "value.h"

#ifndef SWITCHYARD_PY_VERSION
#define SWITCHYARD_PY_VERSION "unknown"
#endif

namespace switchyard::python {

namespace {

const ErrorCode kErrorCodes[] = {
    ErrorCode::InvalidModel,    ErrorCode::Unsupported, ErrorCode::PlacementFailed,
    ErrorCode::InvalidArgument, ErrorCode::OutOfMemory, ErrorCode::DeviceLost,
    ErrorCode::Internal,        ErrorCode::Cancelled,   ErrorCode::DeviceMismatch,
};

// The Python exception class per error code name, set by the package at import. Never
// destroyed: releasing Python objects after the interpreter has gone would crash.
std::map<std::string, py::object>& error_classes() {
  static auto* classes = new std::map<std::string, py::object>();
  return *classes;
}

void raise_error(const Error& e) {
  const std::string code(error_code_name(e.code()));
  auto found = error_classes().find(code);
  if (found == error_classes().end()) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return;
  }
  py::object exception = found->second(py::str(e.what()));
  exception.attr("code") = code;
  exception.attr("message") = e.message();
  PyErr_SetObject(found->second.ptr(), exception.ptr());
}

py::dict device_dict(const DeviceDescription& d) {
  py::dict out;
  out["id"] = d.id;
  out["kind"] = d.kind;
  out["name"] = d.name;
  out["uuid"] = d.uuid;
  out["memory_bytes"] = d.memory_bytes;
  out["sm_count"] = d.sm_count;
  out["compute_capability"] = d.compute_capability;
  out["peers"] = d.peers;
  out["software"] = d.software;
  return out;
}

}  // namespace

}  // namespace switchyard::python

PYBIND11_MODULE(_switchyard, m) {
  namespace py = pybind11;
  using namespace switchyard;
  using namespace switchyard::python;
  m.doc() = "Switchyard's C++ API for the switchyard package (docs/python.md).";
  m.attr("__version__") = SWITCHYARD_PY_VERSION;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise_error(e);
    }
  });

  m.def(
      "set_error_classes",
      [](const py::dict& classes) {
        for (auto [code, cls] : classes)
          error_classes()[code.cast<std::string>()] = py::reinterpret_borrow<py::object>(cls);
      },
      "Sets the Python exception class raised per error code name.");
  m.def("error_code_names", [] {
    std::vector<std::string> names;
    for (ErrorCode code : kErrorCodes) names.emplace_back(error_code_name(code));
    return names;
  });
  m.def(
      "raise_error",
      [](const std::string& code, const std::string& message) {
        for (ErrorCode c : kErrorCodes)
          if (error_code_name(c) == code) throw Error(c, message);
        throw Error(ErrorCode::Internal, "unknown error code " + code);
      },
      "Throws switchyard::Error(code, message) (for tests of the translation).");

  m.def("dtype_name", [](int dtype) { return std::string(dtype_name(static_cast<DType>(dtype))); });
  m.def("numpy_dtype_name", [](int dtype) { return numpy_dtype_name(static_cast<DType>(dtype)); });
  m.def("is_executable_file", &is_executable_file, py::arg("path"));
  m.def(
      "describe_devices",
      [](const Options& options) {
        py::list out;
        for (const DeviceDescription& d : describe_devices(options)) out.append(device_dict(d));
        return out;
      },
      py::arg("options"));
  m.def("backend_status", [] {
    py::list out;
    for (const BackendStatus& b : backend_status()) {
      py::dict d;
      d["name"] = b.name;
      d["library"] = b.library;
      d["loaded"] = b.loaded;
      d["detail"] = b.detail;
      out.append(d);
    }
    return out;
  });

  bind_values(m);
  bind_session(m);
}
