"""Switchyard from Python, with ONNX Runtime's API: ``import switchyard as ort``.

    import switchyard as ort
    session = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = session.run(None, {"input": image})

What Switchyard adds — placement keywords (``device="sim:0"``, ``pins=[...]``, ...),
``session.explain()``, saved executables — and what differs from ONNX Runtime are in
docs/python.md.
"""
try:
    from . import _switchyard
except ImportError as e:  # a source checkout without the built extension
    raise ImportError(
        "switchyard: the extension module _switchyard is missing or does not load "
        f"({e}); build it (cmake --build build, then PYTHONPATH=build/python) or install the "
        "package (pip install ./python); see docs/python.md") from e

from .capi.onnxruntime_pybind11_state import (  # noqa: F401
    ERROR_CLASSES, CancelledError, DeviceLostError, DeviceMismatchError, EngineError, EPFail,
    Fail, InternalError, InvalidArgument, InvalidGraph, InvalidModelError, InvalidProtobuf,
    MissingInputError, ModelLoaded, NoModel, NoSuchFile, NotImplemented, OutOfMemoryError,
    PlacementError, RuntimeException, SwitchyardError, UnknownProviderError, UnsupportedError)
from .options import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel,  # noqa: F401
                      RunOptions, SessionOptions, SwitchyardWarning)
from .providers import get_all_providers, get_available_providers, get_device  # noqa: F401
from .session import InferenceSession, ModelMetadata, NodeArg  # noqa: F401
from .values import IOBinding, OrtValue  # noqa: F401

_switchyard.set_error_classes(ERROR_CLASSES)

__version__ = _switchyard.__version__

_logger_severity = 2


def set_default_logger_severity(severity):
    """Kept for ORT code; Switchyard writes no log, so it has no effect."""
    global _logger_severity
    if isinstance(severity, bool) or not isinstance(severity, int) or not 0 <= severity <= 4:
        raise InvalidArgument(f"severity must be 0..4, got {severity!r}")
    _logger_severity = severity


def get_build_info():
    """The version and the backends this build has."""
    backends = ", ".join(f"{b['name']} ({'loaded' if b['loaded'] else b['detail']})"
                         for b in _switchyard.backend_status())
    return f"switchyard {__version__}; backends: {backends}"


def backend_status():
    """Each backend (cpu, sim, then plugins such as cuda): name, library, loaded, detail."""
    return _switchyard.backend_status()


def describe_devices(sim_devices=0, sim_config=""):
    """The devices found (and the simulated ones declared), as dicts: id, kind, name, uuid,
    memory_bytes, sm_count, compute_capability, peers, software."""
    options = _switchyard._Options()
    options.sim_devices = sim_devices
    options.sim_config = sim_config
    return _switchyard.describe_devices(options)
