"""ONNX Runtime's exception classes, under the module path ORT users import them from.

``onnxruntime.capi.onnxruntime_pybind11_state.Fail`` becomes
``switchyard.capi.onnxruntime_pybind11_state.Fail`` (the same classes are at ``switchyard.Fail``).
Every error Switchyard raises is a :class:`SwitchyardError`; each ``switchyard::ErrorCode`` has
its own class, derived from the ORT class an ORT user would catch for that failure
(docs/python.md, "Errors"). Instances carry ``code`` (the ErrorCode's name, e.g.
``"InvalidArgument"``) and ``message`` (Switchyard's message, naming the node, input or file).
"""


class SwitchyardError(Exception):
    """Base of every Switchyard error. ``str(e)`` is ``"<Code>: <message>"``."""

    code = "Internal"

    def __init__(self, text=""):
        prefix = f"{type(self).code}: "
        if text.startswith(prefix):
            self.message = text[len(prefix):]
        else:
            self.message, text = text, prefix + text
        super().__init__(text)


# ONNX Runtime's classes (onnxruntime_pybind11_state): the ones an ORT user catches.
class Fail(SwitchyardError):
    """ORT's FAIL: a generic failure."""


class InvalidArgument(SwitchyardError):
    """ORT's INVALID_ARGUMENT: an input, option or argument is wrong."""

    code = "InvalidArgument"


class NoSuchFile(SwitchyardError):
    """ORT's NO_SUCHFILE: the model file does not exist."""

    code = "InvalidArgument"


class NoModel(SwitchyardError):
    """ORT's NO_MODEL: no model is loaded (Switchyard: the session was closed)."""

    code = "InvalidArgument"


class EngineError(SwitchyardError):
    """ORT's ENGINE_ERROR. Switchyard raises no error of this class (kept for except clauses)."""


class RuntimeException(SwitchyardError):
    """ORT's RUNTIME_EXCEPTION: running the model failed."""


class InvalidProtobuf(SwitchyardError):
    """ORT's INVALID_PROTOBUF: the model file does not parse."""

    code = "InvalidModel"


class ModelLoaded(SwitchyardError):
    """ORT's MODEL_LOADED. Switchyard raises no error of this class (kept for except clauses)."""


class NotImplemented(SwitchyardError):  # noqa: A001 (ORT's name, shadowing the builtin)
    """ORT's NOT_IMPLEMENTED: a valid construct this build cannot run."""

    code = "Unsupported"


class InvalidGraph(SwitchyardError):
    """ORT's INVALID_GRAPH: the model's graph is malformed."""

    code = "InvalidModel"


class EPFail(SwitchyardError):
    """ORT's EP_FAIL: an execution provider (a device) failed."""


# One class per switchyard::ErrorCode, each under the ORT class it corresponds to.
class InvalidModelError(InvalidGraph, InvalidProtobuf):
    """ErrorCode::InvalidModel: the model file or graph is malformed. Switchyard does not tell
    a file that does not parse from a graph that is invalid, so this is both ORT classes."""

    code = "InvalidModel"


class UnsupportedError(NotImplemented):
    """ErrorCode::Unsupported: an op, attribute or dtype this build cannot run."""

    code = "Unsupported"


class PlacementError(EPFail):
    """ErrorCode::PlacementFailed: placement could not satisfy the options (strict fallback, a
    pin onto a device that cannot run the node, weights past a memory limit)."""

    code = "PlacementFailed"


class OutOfMemoryError(RuntimeException):
    """ErrorCode::OutOfMemory: an allocation failed or a run would pass a memory limit; the
    session stays usable."""

    code = "OutOfMemory"


class DeviceLostError(EPFail):
    """ErrorCode::DeviceLost: a device reported a sticky fault."""

    code = "DeviceLost"


class InternalError(Fail):
    """ErrorCode::Internal: a Switchyard bug; please report it with the message."""

    code = "Internal"


class CancelledError(Fail):
    """ErrorCode::Cancelled: the run was terminated (RunOptions.terminate) or passed its
    deadline (RunOptions.deadline_ms)."""

    code = "Cancelled"


class DeviceMismatchError(EPFail):
    """ErrorCode::DeviceMismatch: a saved executable's devices are not all present (pass
    allow_relower=True to place it again)."""

    code = "DeviceMismatch"


# Raised by the Python layer where ONNX Runtime raises a builtin exception: both classes, so
# except clauses written for either keep working.
class MissingInputError(InvalidArgument, ValueError):
    """A required input is missing from the feed (ORT raises ValueError)."""


class UnknownProviderError(InvalidArgument, RuntimeError):
    """A provider name ORT does not know either (ORT raises RuntimeError)."""


#: The class raised for each switchyard::ErrorCode (every code is mapped; a test checks it).
ERROR_CLASSES = {
    "InvalidModel": InvalidModelError,
    "Unsupported": UnsupportedError,
    "PlacementFailed": PlacementError,
    "InvalidArgument": InvalidArgument,
    "OutOfMemory": OutOfMemoryError,
    "DeviceLost": DeviceLostError,
    "Internal": InternalError,
    "Cancelled": CancelledError,
    "DeviceMismatch": DeviceMismatchError,
}

__all__ = [
    "SwitchyardError", "Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError",
    "RuntimeException", "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph",
    "EPFail", "InvalidModelError", "UnsupportedError", "PlacementError", "OutOfMemoryError",
    "DeviceLostError", "InternalError", "CancelledError", "DeviceMismatchError",
    "MissingInputError", "UnknownProviderError", "ERROR_CLASSES",
]
