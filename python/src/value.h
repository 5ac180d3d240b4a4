// The tensors the Python package passes to and from Switchyard: a switchyard::Tensor with the
// device whose memory holds it, made from numpy arrays, DLPack capsules or raw pointers without
// copying, and seen from Python as numpy arrays or DLPack capsules without copying either.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "switchyard/switchyard.hpp"

namespace switchyard::python {

namespace py = pybind11;

/// One tensor: its data (host memory unless `device` names another device's memory) and the
/// device holding it ("cpu", "cuda:0", "sim:1"). A default Value is an absent optional.
struct Value {
  Tensor tensor;
  std::string device = "cpu";
  bool on_host() const { return device == "cpu"; }
  /// Host code may read it: host memory, or a simulated device's (which lives in host memory).
  bool host_readable() const { return on_host() || device.rfind("sim:", 0) == 0; }
};

/// Throws Error(InvalidArgument) with `message`.
[[noreturn]] void invalid_argument(const std::string& message);

/// Storage that keeps `object` alive; the last release takes the GIL itself, so it may happen
/// on any thread (a run releases the GIL).
std::shared_ptr<void> hold_python_object(py::object object);

/// The DType of a numpy dtype, or InvalidArgument naming `what` (complex, object, datetime,
/// structured and non-native byte orders are refused).
DType dtype_of_numpy(const py::dtype& dtype, const std::string& what);
/// The numpy dtype name of `dtype` ("float32", "bool"); throws Unsupported for
/// bfloat16 and strings, which have no plain numpy dtype.
std::string numpy_dtype_name(DType dtype);

/// Wraps a C-contiguous, aligned, native-order numpy array in place (the array stays alive as
/// long as the tensor does). Throws InvalidArgument naming `what` for anything else.
Value value_from_numpy(const py::array& array, const std::string& what);
/// Takes a DLPack tensor from `object` (anything with __dlpack__, or a "dltensor" capsule)
/// without copying; non-compact strides are copied into a compact host tensor. `is_bool`
/// reads 8-bit unsigned data as bool (torch exports bool tensors that way). Throws
/// InvalidArgument naming `what`.
Value value_from_dlpack(const py::object& object, bool is_bool, const std::string& what);
/// A tensor over caller memory at `address`, which the caller keeps alive (IOBinding.bind_input).
Value value_from_pointer(uintptr_t address, DType dtype, std::vector<int64_t> shape,
                         const std::string& device);
/// A host tensor of UTF-8 strings in row-major order.
Value value_from_strings(const std::vector<std::string>& items, std::vector<int64_t> shape);

/// A numpy array viewing the value's host memory (no copy), keeping the tensor alive.
py::array value_to_numpy(const Value& value);
/// A "dltensor" capsule viewing the value's memory (no copy), keeping the tensor alive until the
/// consumer calls the deleter (or the capsule dies unconsumed).
py::capsule value_to_dlpack(const Value& value);
/// (device_type, device_id) as __dlpack_device__ returns them.
std::pair<int, int> dlpack_device_of(const Value& value);

/// Registers the _Value class and the value functions on the module.
void bind_values(py::module_& m);

}  // namespace switchyard::python
