// numpy and DLPack views of switchyard::Tensor, both ways, without copies (value.h).
#include "value.h"

#include <pybind11/stl.h>

#include <cstring>
#include <string_view>

#include "dlpack.h"

namespace switchyard::python {

namespace {

// Whether Python can still take references back: a release after the interpreter began to
// finalize leaks the reference instead of crashing.
bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

std::vector<int64_t> checked_shape(const std::vector<int64_t>& shape, const std::string& what) {
  for (int64_t d : shape)
    if (d < 0) invalid_argument(what + ": negative dim " + std::to_string(d) + " in the shape");
  checked_numel(shape);  // throws on overflow
  return shape;
}

// DLPack's dtype for `dtype`, or InvalidArgument for strings.
DLDataType dlpack_dtype_of(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {kDLFloat, 16, 1};
    case DType::Float32:
      return {kDLFloat, 32, 1};
    case DType::Float64:
      return {kDLFloat, 64, 1};
    case DType::BFloat16:
      return {kDLBfloat, 16, 1};
    case DType::Int8:
      return {kDLInt, 8, 1};
    case DType::Int16:
      return {kDLInt, 16, 1};
    case DType::Int32:
      return {kDLInt, 32, 1};
    case DType::Int64:
      return {kDLInt, 64, 1};
    case DType::UInt8:
      return {kDLUInt, 8, 1};
    case DType::UInt16:
      return {kDLUInt, 16, 1};
    case DType::UInt32:
      return {kDLUInt, 32, 1};
    case DType::UInt64:
      return {kDLUInt, 64, 1};
    case DType::Bool:
      return {kDLBool, 8, 1};
    default:
      invalid_argument("DLPack: a tensor of " + std::string(dtype_name(dtype)) +
                       " has no DLPack form");
  }
}

DType dtype_of_dlpack(DLDataType t, bool is_bool, const std::string& what) {
  if (t.lanes != 1)
    invalid_argument(what + ": DLPack tensor with " + std::to_string(t.lanes) +
                     " lanes per element; only scalar elements are supported");
  auto bits = [&](DType d8, DType d16, DType d32, DType d64) {
    switch (t.bits) {
      case 8:
        return d8;
      case 16:
        return d16;
      case 32:
        return d32;
      case 64:
        return d64;
    }
    return DType::Undefined;
  };
  DType d = DType::Undefined;
  if (t.code == kDLInt) d = bits(DType::Int8, DType::Int16, DType::Int32, DType::Int64);
  if (t.code == kDLUInt) d = bits(DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64);
  if (t.code == kDLFloat)
    d = bits(DType::Undefined, DType::Float16, DType::Float32, DType::Float64);
  if (t.code == kDLBfloat && t.bits == 16) d = DType::BFloat16;
  if (t.code == kDLBool && t.bits == 8) d = DType::Bool;
  if (is_bool && d == DType::UInt8) d = DType::Bool;
  if (d == DType::Undefined)
    invalid_argument(what + ": DLPack dtype (code " + std::to_string(t.code) + ", " +
                     std::to_string(t.bits) + " bits) has no Switchyard element type");
  return d;
}

// The device a DLPack tensor's memory is on, as Switchyard names it.
std::string device_of_dlpack(DLDevice device, const std::string& what) {
  switch (device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:  // pinned host memory: host code reads it
      return "cpu";
    case kDLCUDA:
      return "cuda:" + std::to_string(device.device_id);
    case kDLExtDev:
      return "sim:" + std::to_string(device.device_id);
    default:
      invalid_argument(what + ": DLPack device type " + std::to_string(device.device_type) +
                       " is not one Switchyard runs on (cpu, cuda, or its simulated devices)");
  }
}

// A compact row-major copy of a strided host DLPack tensor.
Tensor compact_copy(const DLTensor& t, DType dtype, const std::vector<int64_t>& shape) {
  Tensor out(dtype, shape);
  const size_t elem = dtype_size(dtype);
  const char* base = static_cast<const char*>(t.data) + t.byte_offset;
  char* dst = static_cast<char*>(out.raw());
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < out.numel(); ++n) {
    int64_t offset = 0;
    for (size_t k = 0; k < shape.size(); ++k) offset += index[k] * t.strides[k];
    std::memcpy(dst + static_cast<size_t>(n) * elem, base + offset * static_cast<int64_t>(elem),
                elem);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

bool is_compact(const DLTensor& t, const std::vector<int64_t>& shape) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] == 0) return true;
    if (shape[k] != 1 && t.strides[k] != expected) return false;
    expected *= shape[k];
  }
  return true;
}

// A DLPack export: the managed tensor and what its pointers point into.
struct Exported {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

void delete_exported(DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); }

// A "dltensor" capsule that dies unconsumed releases the tensor itself.
void destroy_unconsumed_capsule(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kDLTensorCapsule)) return;  // consumed: the consumer owns it
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kDLTensorCapsule));
  if (managed && managed->deleter) managed->deleter(managed);
}

}  // namespace

void invalid_argument(const std::string& message) {
  throw Error(ErrorCode::InvalidArgument, message);
}

std::shared_ptr<void> hold_python_object(py::object object) {
  PyObject* raw = object.release().ptr();
  return std::shared_ptr<void>(raw, [](void* p) {
    if (!python_alive()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(static_cast<PyObject*>(p));
    PyGILState_Release(state);
  });
}

DType dtype_of_numpy(const py::dtype& dtype, const std::string& what) {
  // Through the dtype's Python attributes: pybind11 before 2.12 reads them from numpy 1.x's C
  // struct, whose layout numpy 2 changed (itemsize read so is garbage there).
  const std::string kinds = py::str(dtype.attr("kind")).cast<std::string>();
  const std::string orders = py::str(dtype.attr("byteorder")).cast<std::string>();
  const char kind = kinds.empty() ? '?' : kinds[0];
  const ssize_t size = dtype.attr("itemsize").cast<ssize_t>();
  const char order = orders.empty() ? '=' : orders[0];
  if (order == '>')
    invalid_argument(what + ": big-endian numpy arrays are not supported (use astype('=" +
                     std::string(1, kind) + std::to_string(size) + "'))");
  auto pick = [&](DType d1, DType d2, DType d4, DType d8) {
    switch (size) {
      case 1:
        return d1;
      case 2:
        return d2;
      case 4:
        return d4;
      case 8:
        return d8;
    }
    return DType::Undefined;
  };
  DType d = DType::Undefined;
  if (kind == 'f') d = pick(DType::Undefined, DType::Float16, DType::Float32, DType::Float64);
  if (kind == 'i') d = pick(DType::Int8, DType::Int16, DType::Int32, DType::Int64);
  if (kind == 'u') d = pick(DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64);
  if (kind == 'b' && size == 1) d = DType::Bool;
  if (d == DType::Undefined)
    invalid_argument(what + ": numpy dtype '" + py::str(py::handle(dtype)).cast<std::string>() +
                     "' has no Switchyard element type");
  return d;
}

std::string numpy_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::Float16:
      return "float16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int8:
      return "int8";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::UInt8:
      return "uint8";
    case DType::UInt16:
      return "uint16";
    case DType::UInt32:
      return "uint32";
    case DType::UInt64:
      return "uint64";
    default:
      throw Error(ErrorCode::Unsupported,
                  "a tensor of " + std::string(dtype_name(dtype)) +
                      " has no numpy dtype (bfloat16: read it through DLPack, e.g. "
                      "torch.from_dlpack)");
  }
}

Value value_from_numpy(const py::array& array, const std::string& what) {
  DType dtype = dtype_of_numpy(array.dtype(), what);
  constexpr int kAligned = 0x0100;  // NPY_ARRAY_ALIGNED
  if (!(array.flags() & py::array::c_style) || !(array.flags() & kAligned))
    invalid_argument(what + ": the numpy array is not C-contiguous and aligned");
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  void* data = const_cast<void*>(array.data());
  Value v;
  v.tensor = Tensor::wrap(dtype, checked_shape(shape, what), hold_python_object(array), data);
  return v;
}

Value value_from_dlpack(const py::object& object, bool is_bool, const std::string& what) {
  py::object capsule = object;
  if (!PyCapsule_CheckExact(object.ptr())) {
    if (!py::hasattr(object, "__dlpack__"))
      invalid_argument(what + ": " + py::str(py::type::of(object)).cast<std::string>() +
                       " has no __dlpack__");
    capsule = object.attr("__dlpack__")();
  }
  if (!PyCapsule_IsValid(capsule.ptr(), kDLTensorCapsule))
    invalid_argument(what + ": not a DLPack capsule, or one that was already consumed");
  auto* managed =
      static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kDLTensorCapsule));
  if (PyCapsule_SetName(capsule.ptr(), kUsedDLTensorCapsule) != 0) throw py::error_already_set();
  // From here on this tensor owns the managed tensor; its deleter may touch Python objects.
  std::shared_ptr<void> owner(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (!m->deleter || !python_alive()) return;
    PyGILState_STATE state = PyGILState_Ensure();
    m->deleter(m);
    PyGILState_Release(state);
  });
  const DLTensor& t = managed->dl_tensor;
  DType dtype = dtype_of_dlpack(t.dtype, is_bool, what);
  std::string device = device_of_dlpack(t.device, what);
  if (t.ndim < 0 || (t.ndim > 0 && t.shape == nullptr))
    invalid_argument(what + ": DLPack tensor without a shape");
  std::vector<int64_t> shape = checked_shape(std::vector<int64_t>(t.shape, t.shape + t.ndim), what);
  Value v;
  v.device = device;
  if (!is_compact(t, shape)) {
    if (device != "cpu")
      invalid_argument(what + ": a strided DLPack tensor on " + device +
                       " (make it contiguous first)");
    v.tensor = compact_copy(t, dtype, shape);
    return v;
  }
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  v.tensor = Tensor::wrap(dtype, std::move(shape), std::move(owner), data);
  return v;
}

Value value_from_pointer(uintptr_t address, DType dtype, std::vector<int64_t> shape,
                         const std::string& device) {
  if (dtype == DType::String || dtype == DType::Undefined)
    invalid_argument("a buffer pointer cannot hold a tensor of " + std::string(dtype_name(dtype)));
  shape = checked_shape(shape, "buffer");
  if (address == 0 && checked_numel(shape) != 0) invalid_argument("buffer_ptr is null");
  Value v;
  v.device = device;
  v.tensor =
      Tensor::wrap(dtype, std::move(shape), nullptr, reinterpret_cast<void*>(address));  // NOLINT
  return v;
}

Value value_from_strings(const std::vector<std::string>& items, std::vector<int64_t> shape) {
  shape = checked_shape(shape, "string tensor");
  if (checked_numel(shape) != static_cast<int64_t>(items.size()))
    invalid_argument("string tensor: " + std::to_string(items.size()) + " items for shape " +
                     shape_to_string(shape));
  Value v;
  v.tensor = Tensor(DType::String, shape);
  for (size_t i = 0; i < items.size(); ++i) v.tensor.data<std::string>()[i] = items[i];
  return v;
}

py::array value_to_numpy(const Value& value) {
  if (!value.host_readable())
    invalid_argument("a tensor in " + value.device +
                     " memory has no numpy view; copy it to the host first");
  const Tensor& t = value.tensor;
  py::dtype dtype(numpy_dtype_name(t.dtype()));
  std::vector<ssize_t> shape(t.shape().begin(), t.shape().end());
  std::vector<ssize_t> strides(shape.size());
  ssize_t stride = static_cast<ssize_t>(dtype_size(t.dtype()));
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= shape[k];
  }
  if (t.numel() == 0 || t.raw() == nullptr) return py::array(dtype, shape, strides);
  auto* keep = new Tensor(t);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dtype, shape, strides, t.raw(), base);
}

std::pair<int, int> dlpack_device_of(const Value& value) {
  if (value.on_host()) return {kDLCPU, 0};
  auto colon = value.device.find(':');
  std::string kind = value.device.substr(0, colon);
  if (colon == std::string::npos || (kind != "cuda" && kind != "sim"))
    invalid_argument("a tensor in " + value.device + " memory has no DLPack device");
  int id = std::stoi(value.device.substr(colon + 1));
  return {kind == "cuda" ? kDLCUDA : kDLExtDev, id};
}

py::capsule value_to_dlpack(const Value& value) {
  const Tensor& t = value.tensor;
  DLDataType dtype = dlpack_dtype_of(t.dtype());
  auto [device_type, device_id] = dlpack_device_of(value);
  auto* ex = new Exported;
  ex->tensor = t;
  ex->shape = t.shape();
  ex->strides.resize(ex->shape.size());
  int64_t stride = 1;
  for (size_t k = ex->shape.size(); k-- > 0;) {
    ex->strides[k] = stride;
    stride *= ex->shape[k];
  }
  DLTensor& dl = ex->managed.dl_tensor;
  dl.data = ex->tensor.raw();
  dl.device = {static_cast<DLDeviceType>(device_type), device_id};
  dl.ndim = static_cast<int32_t>(ex->shape.size());
  dl.dtype = dtype;
  dl.shape = ex->shape.data();
  dl.strides = ex->strides.data();
  dl.byte_offset = 0;
  ex->managed.manager_ctx = ex;
  ex->managed.deleter = delete_exported;
  PyObject* capsule = PyCapsule_New(&ex->managed, kDLTensorCapsule, destroy_unconsumed_capsule);
  if (!capsule) {
    delete ex;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

void bind_values(py::module_& m) {
  py::class_<Value>(m, "_Value", "A tensor and the device holding it (OrtValue's core).")
      .def_static("from_numpy", &value_from_numpy, py::arg("array"), py::arg("what") = "value")
      .def_static("from_dlpack", &value_from_dlpack, py::arg("object"), py::arg("is_bool") = false,
                  py::arg("what") = "value")
      .def_static(
          "from_pointer",
          [](uintptr_t address, int dtype, std::vector<int64_t> shape, const std::string& device) {
            return value_from_pointer(address, static_cast<DType>(dtype), std::move(shape), device);
          },
          py::arg("address"), py::arg("dtype"), py::arg("shape"), py::arg("device") = "cpu")
      .def_static("from_strings", &value_from_strings, py::arg("items"), py::arg("shape"))
      .def_static(
          "empty",
          [](int dtype, std::vector<int64_t> shape) {
            Value v;
            v.tensor = Tensor(static_cast<DType>(dtype), checked_shape(shape, "empty tensor"));
            return v;
          },
          py::arg("dtype"), py::arg("shape"), "A zero-filled host tensor.")
      .def_static(
          "dtype_of_numpy",
          [](const py::dtype& dtype) { return static_cast<int>(dtype_of_numpy(dtype, "dtype")); },
          py::arg("dtype"))
      .def_property_readonly("shape", [](const Value& v) { return v.tensor.shape(); })
      .def_property_readonly("dtype",
                             [](const Value& v) { return static_cast<int>(v.tensor.dtype()); })
      .def_property_readonly(
          "dtype_name", [](const Value& v) { return std::string(dtype_name(v.tensor.dtype())); })
      .def_property_readonly("device", [](const Value& v) { return v.device; })
      .def_property_readonly("defined", [](const Value& v) { return v.tensor.defined(); })
      .def_property_readonly(
          "data_ptr", [](const Value& v) { return reinterpret_cast<uintptr_t>(v.tensor.raw()); })
      .def_property_readonly("nbytes", [](const Value& v) { return v.tensor.nbytes(); })
      .def("numpy", &value_to_numpy, "A numpy view of host memory (no copy).")
      .def("strings",
           [](const Value& v) {
             if (v.tensor.dtype() != DType::String) invalid_argument("not a string tensor");
             std::vector<std::string> out(v.tensor.data<std::string>(),
                                          v.tensor.data<std::string>() + v.tensor.numel());
             return out;
           })
      .def("clone",
           [](const Value& v) {
             if (!v.host_readable())
               invalid_argument("clone: the tensor is in " + v.device + " memory");
             Value c;
             c.tensor = v.tensor.clone();
             return c;
           })
      .def(
          "as_simulated",
          [](const Value& v, const std::string& device) {
            // A simulated device's memory is host memory: a host tensor becomes its data by
            // being labelled so (a run tags it for its executable, Session::input_tensor).
            if (!v.on_host() || device.rfind("sim:", 0) != 0)
              invalid_argument("as_simulated: a host tensor onto a sim:N device, not " + v.device +
                               " onto " + device);
            return Value{v.tensor, device};
          },
          py::arg("device"))
      .def(
          "copy_into",
          [](const Value& v, Value& dst, const std::string& what) {
            if (!v.host_readable() || !dst.host_readable())
              invalid_argument(what + ": copies between host-readable buffers only, not " +
                               v.device + " to " + dst.device);
            if (v.tensor.dtype() != dst.tensor.dtype() || v.tensor.shape() != dst.tensor.shape())
              invalid_argument(what + ": the result is " +
                               std::string(dtype_name(v.tensor.dtype())) + " " +
                               shape_to_string(v.tensor.shape()) + ", the buffer is " +
                               std::string(dtype_name(dst.tensor.dtype())) + " " +
                               shape_to_string(dst.tensor.shape()));
            if (v.tensor.dtype() == DType::String) {
              for (int64_t i = 0; i < v.tensor.numel(); ++i)
                dst.tensor.data<std::string>()[i] = v.tensor.data<std::string>()[i];
            } else if (v.tensor.nbytes() > 0 && dst.tensor.raw() != v.tensor.raw()) {
              std::memcpy(dst.tensor.raw(), v.tensor.raw(), v.tensor.nbytes());
            }
          },
          py::arg("dst"), py::arg("what") = "copy")
      .def(
          "__dlpack__",
          [](const Value& v, py::object stream) {
            // Host memory needs no stream; a CUDA stream handoff needs the device-tensor API.
            (void)stream;
            return value_to_dlpack(v);
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const Value& v) { return dlpack_device_of(v); });
}

}  // namespace switchyard::python
