"""OrtValue and IOBinding as ONNX Runtime spells them, and the conversion of Python objects into
the tensors a run takes.

Memory is never copied on the way in: a C-contiguous numpy array, a DLPack tensor (torch,
numpy; on the host or a GPU) or a bound buffer pointer is read in place; outputs are numpy or
DLPack views of the memory the run produced. Device memory (``device_type`` "cuda", or
Switchyard's simulated devices "sim") is tagged as the device's by the session at run time
(Executable::wrap_device_memory, in python/src/session.cc), bound output memory is written by
the run (RunOptions.output_buffers); a copy between devices outside a run goes through
:func:`_device_value` and :func:`copy_value`.
"""
import numpy as np

from . import _switchyard as _C
from .capi.onnxruntime_pybind11_state import InvalidArgument

_STRING = 8  # DType::String
_BOOL = 9  # DType::Bool


def _device_name(device_type, device_id):
    """Switchyard's device id for ORT's (device_type, device_id): ("cpu", 0) -> "cpu",
    ("cuda", 1) -> "cuda:1", ("sim", 0) -> "sim:0" (Switchyard's simulated devices)."""
    if not isinstance(device_type, str):
        raise TypeError(f"device_type must be a str, got {type(device_type).__name__}")
    kind = device_type.lower()
    if kind == "cpu":
        return "cpu"
    if kind in ("cuda", "gpu", "sim"):
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise InvalidArgument(f"device_id must be an int >= 0, got {device_id!r}")
        return f"{'cuda' if kind == 'gpu' else kind}:{device_id}"
    raise InvalidArgument(f"device_type {device_type!r}: Switchyard knows 'cpu', 'cuda' and "
                          "'sim'")


def _torch_for(device, what):
    """torch, for copies to and from CUDA memory: Switchyard's public API moves data between
    devices inside runs only, so a copy outside a run goes through torch's CUDA runtime."""
    try:
        import torch
    except ImportError:
        raise InvalidArgument(f"{what}: copying to or from {device} outside a run needs torch "
                              "(Switchyard copies between devices inside runs only)") from None
    return torch


def _device_value(value, device, what):
    """`value` (host memory) copied into `device`'s memory, as ORT copies an OrtValue made
    for a device: a simulated device's memory is host memory, so its copy is a host copy
    labelled as the device's; a CUDA copy goes through torch."""
    if device == "cpu":
        return value
    if device.startswith("sim:"):
        return value.clone().as_simulated(device)
    torch = _torch_for(device, what)
    host = torch.from_numpy(np.ascontiguousarray(value_to_numpy(value)))
    return _C._Value.from_dlpack(host.to(device), value.dtype == _BOOL, what)


def host_array(value, what="value"):
    """A numpy array of a tensor anywhere: a view of host (and simulated-device) memory, a copy
    of a GPU's."""
    if value.device.startswith("cuda:"):
        torch = _torch_for(value.device, what)
        return torch.from_dlpack(value).cpu().numpy()
    return value_to_numpy(value)


def copy_value(source, target, what):
    """Writes `source` into `target`'s memory (same dtype and shape)."""
    if source.device.startswith("cuda:") or target.device.startswith("cuda:"):
        if source.shape != target.shape or source.dtype != target.dtype:
            source.copy_into(_C._Value.empty(target.dtype, target.shape), what)  # raises
        torch = _torch_for(target.device, what)
        torch.from_dlpack(target).copy_(torch.from_dlpack(source))
        return
    source.copy_into(target, what)


def _element_type_code(element_type, what="element_type"):
    """The DType code of ORT's element_type: a numpy type or dtype (np.float32), a dtype name
    ("float32"), or str for strings."""
    if element_type in (str, np.str_, np.object_):
        return _STRING
    try:
        dtype = np.dtype(element_type)
    except TypeError:
        raise InvalidArgument(f"{what}: {element_type!r} is not a numpy element type") from None
    if dtype.kind in "USO":
        return _STRING
    return _C._Value.dtype_of_numpy(dtype)


def _is_torch_bool(obj):
    return type(obj).__module__.startswith("torch") and str(getattr(obj, "dtype", "")) == \
        "torch.bool"


def _from_numpy(array, what):
    if array.dtype.kind in "US" or array.dtype == object:
        items = array.ravel(order="C").tolist()
        if not all(isinstance(s, str) for s in items):
            raise InvalidArgument(
                f"{what}: a numpy object array must hold str (for a string tensor); got "
                f"{type(next(s for s in items if not isinstance(s, str))).__name__}")
        return _C._Value.from_strings(items, list(array.shape))
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("="))
    if not (array.flags.c_contiguous and array.flags.aligned):
        array = np.ascontiguousarray(array)  # as ONNX Runtime does: a copy, in C order
    return _C._Value.from_numpy(array, what)


def _from_dlpack(obj, what, is_bool=False):
    if _is_torch_bool(obj) and obj.device.type == "cpu":
        # torch 1.13 exports no bool tensor through DLPack; its numpy view is just as direct.
        return _from_numpy(obj.detach().numpy(), what)
    try:
        return _C._Value.from_dlpack(obj, is_bool, what)
    except InvalidArgument:
        raise
    except Exception as e:  # the producer refused (a tensor requiring grad, ...)
        raise InvalidArgument(f"{what}: cannot read it through DLPack: {e}") from e


def to_value(obj, what):
    """A run's tensor for a Python object: an OrtValue, a numpy array, anything with
    __dlpack__ (torch tensors), or what numpy.asarray accepts (scalars, nested lists; no dtype
    conversion, as in ORT). Raises InvalidArgument naming `what`."""
    if isinstance(obj, OrtValue):
        if not obj.has_value():
            raise InvalidArgument(f"{what}: the OrtValue holds no value")
        return obj._value
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, what)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.generic):
        return _from_dlpack(obj, what)
    if obj is None or isinstance(obj, (dict, set)) or callable(obj):
        raise InvalidArgument(f"{what}: expected a numpy array, an OrtValue or a DLPack tensor, "
                              f"got {type(obj).__name__}")
    try:
        array = np.asarray(obj)
    except Exception as e:
        raise InvalidArgument(f"{what}: cannot make an array of {type(obj).__name__}: {e}") \
            from e
    if array.dtype == object and not all(isinstance(s, str) for s in array.ravel().tolist()):
        raise InvalidArgument(f"{what}: expected a numpy array, an OrtValue or a DLPack tensor, "
                              f"got {type(obj).__name__}")
    return _from_numpy(array, what)


def value_to_numpy(value):
    """The numpy form of a run's result: a view of its memory (no copy), an object array for
    strings, a list for a sequence, None for an absent optional."""
    if value is None:
        return None
    if isinstance(value, list):
        return [value_to_numpy(v) for v in value]
    if value.dtype == _STRING:
        return np.array(value.strings(), dtype=object).reshape(value.shape)
    return value.numpy()


class OrtValue:
    """ORT's OrtValue: a tensor in host memory (or, with the device-tensor API, a device's).
    Made from numpy it shares the array's memory, as ORT's does; from DLPack it shares the
    producer's. ``numpy()`` and ``__dlpack__`` are views, not copies."""

    def __init__(self, ortvalue, numpy_obj=None):
        if ortvalue is not None and not isinstance(ortvalue, _C._Value):
            raise TypeError("OrtValue wraps a switchyard value; use OrtValue.ortvalue_from_numpy "
                            "or OrtValue.from_dlpack")
        self._value = ortvalue
        self._numpy = numpy_obj  # keeps the source alive, as ORT's does

    @staticmethod
    def ortvalue_from_numpy(numpy_obj, device_type="cpu", device_id=0):
        """An OrtValue over `numpy_obj`'s memory (a contiguous copy if it is not C-contiguous)."""
        if not isinstance(numpy_obj, np.ndarray):
            raise TypeError(f"ortvalue_from_numpy takes a numpy array, got "
                            f"{type(numpy_obj).__name__}")
        device = _device_name(device_type, device_id)
        value = _device_value(_from_numpy(numpy_obj, "ortvalue_from_numpy"), device,
                              "ortvalue_from_numpy")
        return OrtValue(value, numpy_obj)

    @staticmethod
    def ortvalue_from_shape_and_type(shape=None, element_type=None, device_type="cpu",
                                     device_id=0):
        """A zero-filled tensor of `shape` and `element_type` (a numpy type)."""
        if shape is None or element_type is None:
            raise InvalidArgument("ortvalue_from_shape_and_type needs shape and element_type")
        device = _device_name(device_type, device_id)
        value = _C._Value.empty(_element_type_code(element_type), [int(d) for d in shape])
        return OrtValue(_device_value(value, device, "ortvalue_from_shape_and_type"))

    @staticmethod
    def from_dlpack(data, is_bool_tensor=False):
        """An OrtValue over a DLPack tensor's memory (an object with __dlpack__, or a "dltensor"
        capsule), without a copy. `is_bool_tensor`: read 8-bit data as bool."""
        return OrtValue(_from_dlpack(data, "from_dlpack", bool(is_bool_tensor)), data)

    ortvalue_from_dlpack = from_dlpack

    def _live(self):
        if self._value is None:
            raise InvalidArgument("the OrtValue holds no value")
        return self._value

    def has_value(self):
        return self._value is not None

    def is_tensor(self):
        return self._value is not None

    def is_tensor_sequence(self):
        return False

    def is_sparse_tensor(self):
        return False

    def data_ptr(self):
        """The address of the first element."""
        return self._live().data_ptr

    def device_name(self):
        """"cpu", "cuda" or "sim"."""
        return self._live().device.split(":")[0]

    def shape(self):
        return list(self._live().shape)

    def data_type(self):
        """ORT's spelling: "tensor(float)", "tensor(int64)"."""
        return f"tensor({self._live().dtype_name})"

    def element_type(self):
        """The numpy type of the elements (str for strings)."""
        value = self._live()
        if value.dtype == _STRING:
            return str
        return np.dtype(_C.numpy_dtype_name(value.dtype)).type

    def numpy(self):
        """A numpy view of the tensor's host memory (ORT returns a copy; write to it knowingly),
        or a copy of a GPU's."""
        return host_array(self._live(), "numpy()")

    def update_inplace(self, np_arr):
        """Copies `np_arr` (same shape and dtype) into the tensor's memory."""
        copy_value(_from_numpy(np.asarray(np_arr), "update_inplace"), self._live(),
                   "update_inplace")

    def to_dlpack(self):
        """A "dltensor" capsule viewing the tensor (no copy)."""
        return self._live().__dlpack__()

    def __dlpack__(self, stream=None):
        return self._live().__dlpack__(stream)

    def __dlpack_device__(self):
        return self._live().__dlpack_device__()

    def __repr__(self):
        if self._value is None:
            return "OrtValue(None)"
        return f"OrtValue({self.data_type()}, shape={self.shape()}, device={self._value.device})"


class _Output:
    """One bound output: the device it goes to and, when the caller gave memory, that memory."""

    def __init__(self, device, target=None):
        self.device, self.target = device, target


class IOBinding:
    """ORT's IOBinding: inputs bound to memory the run reads in place, outputs bound to a device
    or to caller memory. Runs are synchronous and host memory needs no synchronization, so the
    synchronize_* methods return at once."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = {}
        self._results = []

    def _check_input(self, name):
        if name not in self._session._input_index:
            raise InvalidArgument(f"bind_input: the model has no input '{name}' (inputs: "
                                  f"{', '.join(self._session._input_index)})")

    def _check_output(self, name):
        if name not in self._session._output_index:
            raise InvalidArgument(f"bind_output: the model has no output '{name}' (outputs: "
                                  f"{', '.join(self._session._output_index)})")

    def bind_cpu_input(self, name, arr_on_cpu):
        """Binds a numpy array (read in place when C-contiguous, as ORT does)."""
        self._check_input(name)
        self._inputs[name] = to_value(arr_on_cpu, f"input '{name}'")

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """Binds caller memory at `buffer_ptr`, read in place by the run; the caller keeps it
        alive and unchanged until the run returns."""
        self._check_input(name)
        device = _device_name(device_type, device_id)
        self._inputs[name] = _C._Value.from_pointer(
            int(buffer_ptr), _element_type_code(element_type), [int(d) for d in shape], device)

    def bind_ortvalue_input(self, name, ortvalue):
        self._check_input(name)
        self._inputs[name] = to_value(ortvalue, f"input '{name}'")

    def synchronize_inputs(self):
        """Nothing to wait for: a run's GPU work starts after what torch queued on its current
        stream (RunOptions.cuda_stream), and host memory needs nothing."""

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None,
                    buffer_ptr=None):
        """Binds an output to a device (its memory is allocated by the run) or, with
        `buffer_ptr`, `element_type` and `shape`, to caller memory the run writes it into."""
        self._check_output(name)
        device = _device_name(device_type, device_id)
        target = None
        if buffer_ptr is not None:
            if element_type is None or shape is None:
                raise InvalidArgument(f"bind_output '{name}': a buffer_ptr needs element_type "
                                      "and shape")
            target = _C._Value.from_pointer(int(buffer_ptr), _element_type_code(element_type),
                                            [int(d) for d in shape], device)
        self._outputs[name] = _Output(device, target)

    def bind_ortvalue_output(self, name, ortvalue):
        """Binds an output to an OrtValue's memory: the run writes the result into it."""
        self._check_output(name)
        if not isinstance(ortvalue, OrtValue):
            raise TypeError(f"bind_ortvalue_output takes an OrtValue, got "
                            f"{type(ortvalue).__name__}")
        value = ortvalue._live()
        self._outputs[name] = _Output(value.device, value)

    def synchronize_outputs(self):
        """Nothing to wait for: a run returns once its outputs are complete."""

    def get_outputs(self):
        """The outputs of the last run, as OrtValues, in the order they were bound."""
        return list(self._results)

    def get_outputs_as_ortvaluevector(self):
        return self.get_outputs()

    def copy_outputs_to_cpu(self):
        """The outputs of the last run as numpy arrays of their own (copies)."""
        return [None if v is None else np.array(host_array(v._value), copy=True)
                for v in self._results]

    def clear_binding_inputs(self):
        self._inputs.clear()

    def clear_binding_outputs(self):
        self._outputs.clear()
        self._results = []
