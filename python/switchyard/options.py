"""SessionOptions and RunOptions as ONNX Runtime spells them, mapped onto Switchyard.

Every attribute ORT has is accepted; one whose value Switchyard cannot honour warns
(``SwitchyardWarning``) when set to anything but ORT's default, and an attribute ORT does not
have raises AttributeError. docs/python.md, "SessionOptions", lists what each one does.
"""
import enum
import warnings

from . import _switchyard as _C
from .capi.onnxruntime_pybind11_state import InvalidArgument, NotImplemented as _NotImplemented


class SwitchyardWarning(UserWarning):
    """An option or provider that Switchyard accepts but cannot honour as ORT would."""


class GraphOptimizationLevel(enum.IntEnum):
    """ORT's levels. DISABLE_ALL: no graph optimization and no fusion (Options.optimize and
    Options.fusion off); BASIC: constant folding and dead-node removal, no fusion; EXTENDED and
    ALL: both (Switchyard has no layout-only level beyond what its backends do)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """ORT's modes. Switchyard runs a model's nodes one after another (ORT_SEQUENTIAL);
    ORT_PARALLEL warns and runs sequentially."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """ORT's node orders. Switchyard keeps its own (the compiled plan's); others warn."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


def _warn(message):
    warnings.warn(message, SwitchyardWarning, stacklevel=4)


def _check_int(name, minimum=0):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < minimum:
            raise InvalidArgument(f"{name} must be >= {minimum}, got {value}")
        return value
    return check


def _check_type(name, kind):
    def check(value):
        if not isinstance(value, kind):
            raise TypeError(f"{name} must be {kind.__name__}, got {type(value).__name__}")
        return value
    return check


def _check_enum(name, enum_type):
    def check(value):
        try:
            return enum_type(value)
        except ValueError:
            raise InvalidArgument(
                f"{name}: {value!r} is not one of "
                f"{', '.join(f'{enum_type.__name__}.{m.name}' for m in enum_type)}") from None
    return check


class _Field:
    """An attribute: its ORT default, its check, and — when Switchyard cannot honour a value
    other than the default — the warning to give."""

    def __init__(self, default, check, unsupported=None):
        self.default, self.check, self.unsupported = default, check, unsupported


class _OptionsBase:
    _FIELDS = {}

    def __init__(self):
        object.__setattr__(self, "_values", {k: f.default for k, f in self._FIELDS.items()})
        object.__setattr__(self, "_config", {})

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        field = self._FIELDS.get(name)
        if field is None:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute '{name}' (Switchyard accepts "
                f"ONNX Runtime's: {', '.join(sorted(self._FIELDS))})")
        value = field.check(value)
        if field.unsupported and value != field.default:
            _warn(f"{type(self).__name__}.{name} = {value!r}: {field.unsupported}")
        self._values[name] = value
        self._after_set(name, value)

    def _after_set(self, name, value):
        pass

    def _is_set(self, name):
        return self._values[name] != self._FIELDS[name].default

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"{type(self).__name__}({fields})"


class SessionOptions(_OptionsBase):
    """ORT's SessionOptions. The ones with an effect: intra_op_num_threads (threads per run,
    0 = every core), graph_optimization_level, enable_profiling and profile_file_prefix (a
    Chrome trace, written by InferenceSession.end_profiling), optimized_model_filepath (the
    compiled executable, saved as a Switchyard .syx). Others warn when set to a value
    Switchyard cannot honour."""

    _FIELDS = {
        "intra_op_num_threads": _Field(0, _check_int("intra_op_num_threads")),
        # Warned about in _after_set: 0 and 1 are what Switchyard does.
        "inter_op_num_threads": _Field(0, _check_int("inter_op_num_threads")),
        "graph_optimization_level": _Field(
            GraphOptimizationLevel.ORT_ENABLE_ALL,
            _check_enum("graph_optimization_level", GraphOptimizationLevel)),
        "execution_mode": _Field(
            ExecutionMode.ORT_SEQUENTIAL, _check_enum("execution_mode", ExecutionMode),
            "Switchyard runs the nodes of a run one after another; runs go sequentially"),
        "execution_order": _Field(
            ExecutionOrder.DEFAULT, _check_enum("execution_order", ExecutionOrder),
            "Switchyard runs nodes in its compiled plan's order"),
        "enable_profiling": _Field(False, _check_type("enable_profiling", bool)),
        "profile_file_prefix": _Field("switchyard_profile",
                                      _check_type("profile_file_prefix", str)),
        "optimized_model_filepath": _Field("", _check_type("optimized_model_filepath", str)),
        "log_severity_level": _Field(2, _check_int("log_severity_level")),
        "log_verbosity_level": _Field(0, _check_int("log_verbosity_level")),
        "logid": _Field("", _check_type("logid", str)),
        "enable_cpu_mem_arena": _Field(
            True, _check_type("enable_cpu_mem_arena", bool),
            "Switchyard's per-run memory pools always recycle buffers"),
        "enable_mem_pattern": _Field(
            True, _check_type("enable_mem_pattern", bool),
            "Switchyard plans memory per input-shape signature and cannot turn that off"),
        "enable_mem_reuse": _Field(
            True, _check_type("enable_mem_reuse", bool),
            "Switchyard always reuses buffers after a value's last use"),
        "use_deterministic_compute": _Field(
            False, _check_type("use_deterministic_compute", bool),
            "Switchyard has no deterministic-kernel mode (its placement is always "
            "deterministic)"),
    }

    def _after_set(self, name, value):
        if name == "inter_op_num_threads" and value > 1:
            _warn(f"SessionOptions.inter_op_num_threads = {value}: Switchyard runs the nodes of "
                  "a run one after another (as ORT_SEQUENTIAL does), so only "
                  "intra_op_num_threads matters")

    def add_session_config_entry(self, key, value):
        """Kept (get_session_config_entry returns it); Switchyard reads no config entry, so
        this warns."""
        _warn(f"session config entry {key!r}: Switchyard reads no session config entries; "
              "it has no effect")
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise InvalidArgument(f"SessionOptions does not have configuration with key: {key}")
        return self._config[key]

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        raise _NotImplemented(
            "add_free_dimension_override_by_name: Switchyard compiles for every value of a "
            "symbolic dim; give inputs of that shape instead")

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        raise _NotImplemented("add_free_dimension_override_by_denotation is not supported")

    def add_initializer(self, name, ort_value):
        raise _NotImplemented("add_initializer: Switchyard cannot replace a model's weights")

    def add_external_initializers(self, names, ort_values):
        raise _NotImplemented("add_external_initializers: Switchyard cannot replace weights")

    def register_custom_ops_library(self, library_path):
        raise _NotImplemented("register_custom_ops_library: Switchyard has no custom-op ABI")

    def _copy(self):
        other = SessionOptions()
        other._values.update(self._values)
        other._config.update(self._config)
        return other


class RunOptions(_OptionsBase):
    """ORT's RunOptions. ``terminate = True`` stops every run using this object (it raises
    CancelledError, a Fail) and makes later runs fail at once until it is set back to False.
    Switchyard adds ``deadline_ms``: a run taking longer stops the same way (0 = none)."""

    _FIELDS = {
        "log_severity_level": _Field(2, _check_int("log_severity_level")),
        "log_verbosity_level": _Field(0, _check_int("log_verbosity_level")),
        "logid": _Field("", _check_type("logid", str)),
        "run_tag": _Field("", _check_type("run_tag", str)),
        "terminate": _Field(False, _check_type("terminate", bool)),
        "only_execute_path_to_fetches": _Field(
            False, _check_type("only_execute_path_to_fetches", bool),
            "Switchyard runs every node of the compiled graph; the results are the same"),
        "training_mode": _Field(
            False, _check_type("training_mode", bool),
            "Switchyard runs inference only (Dropout and BatchNormalization in eval mode)"),
        "deadline_ms": _Field(0, _check_int("deadline_ms")),
    }

    def __init__(self):
        super().__init__()
        object.__setattr__(self, "_control", _C._RunControl())

    def _after_set(self, name, value):
        if name == "terminate" and value:
            self._control.cancel()
        elif name == "terminate":
            self._control.reset()
        elif name == "deadline_ms":
            self._control.deadline_ms = value

    def add_run_config_entry(self, key, value):
        """Kept (get_run_config_entry returns it); Switchyard reads no run config entry, so
        this warns."""
        _warn(f"run config entry {key!r}: Switchyard reads no run config entries; it has no "
              "effect")
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        if key not in self._config:
            raise InvalidArgument(f"RunOptions does not have configuration with key: {key}")
        return self._config[key]
