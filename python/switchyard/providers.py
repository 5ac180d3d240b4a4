"""ONNX Runtime's execution providers, mapped onto Switchyard's placement.

The first provider of the list picks the preferred device — CUDAExecutionProvider with
``device_id`` N is ``device="cuda:N"``, CPUExecutionProvider is the cpu alone — and nodes the
device cannot run fall back to the cpu, as ORT falls back to its CPU provider. A name ORT has
but this machine lacks (TensorrtExecutionProvider, or CUDA without a GPU) warns with ORT's words
and is skipped; a name ORT does not know either raises. docs/python.md, "Providers".
"""
import functools
import warnings

from . import _switchyard as _C
from .capi.onnxruntime_pybind11_state import InvalidArgument, UnknownProviderError
from .capi.onnxruntime_pybind11_state import NotImplemented as _NotImplemented
from .options import SwitchyardWarning

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"

#: Every provider name ONNX Runtime defines (onnxruntime.get_all_providers()).
ORT_PROVIDERS = (
    "TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider",
    "ROCMExecutionProvider", "OpenVINOExecutionProvider", "DnnlExecutionProvider",
    "TvmExecutionProvider", "VitisAIExecutionProvider", "QNNExecutionProvider",
    "NnapiExecutionProvider", "JsExecutionProvider", "CoreMLExecutionProvider",
    "ArmNNExecutionProvider", "ACLExecutionProvider", "DmlExecutionProvider",
    "RknpuExecutionProvider", "WebNNExecutionProvider", "XnnpackExecutionProvider",
    "CANNExecutionProvider", "AzureExecutionProvider", "CPUExecutionProvider",
)

# CUDA provider options with no Switchyard counterpart that change only speed or memory
# strategy, never results: accepted with a warning.
_CUDA_IGNORED = {
    "arena_extend_strategy", "cudnn_conv_algo_search", "do_copy_in_default_stream",
    "cudnn_conv_use_max_workspace", "cudnn_conv1d_pad_to_nc1d", "tunable_op_enable",
    "tunable_op_tuning_enable", "tunable_op_max_tuning_duration_ms",
    "enable_skip_layer_norm_strict_mode", "prefer_nhwc", "gpu_external_alloc",
    "gpu_external_free", "gpu_external_empty_cache", "use_ep_level_unified_stream",
}
_CUDA_HANDLED = {"device_id", "gpu_mem_limit", "enable_cuda_graph", "use_tf32",
                 "has_user_compute_stream", "user_compute_stream"}
_CPU_IGNORED = {"use_arena"}


@functools.lru_cache(maxsize=None)
def _cuda_device_ids():
    return tuple(d["id"] for d in _C.describe_devices(_C._Options()) if d["kind"] == "cuda")


def get_available_providers():
    """CUDAExecutionProvider when a CUDA device is present (the CUDA backend plugin loaded and
    found one), then CPUExecutionProvider."""
    return ([CUDA] if _cuda_device_ids() else []) + [CPU]


def get_all_providers():
    """Every provider name ONNX Runtime defines."""
    return list(ORT_PROVIDERS)


def get_device():
    """"GPU" when a CUDA device is present, else "CPU" (ORT names its build's device)."""
    return "GPU" if _cuda_device_ids() else "CPU"


def _flag(name, value):
    text = str(value).strip().lower()
    if text in ("1", "true"):
        return True
    if text in ("0", "false"):
        return False
    raise InvalidArgument(f"provider option {name}={value!r}: expected 0 or 1")


def _warn(message):
    warnings.warn(message, SwitchyardWarning, stacklevel=5)


class ProviderPlan:
    """What a provider list means for one session: the providers in effect (``providers``),
    their options as ORT reports them (``provider_options``), and the Options fields they set
    (``options``; Switchyard keyword arguments replace them)."""

    def __init__(self, providers, provider_options, options):
        self.providers, self.provider_options, self.options = providers, provider_options, options


def _cuda_options(options):
    device_id = options.get("device_id", 0)
    try:
        device_id = int(device_id)
    except (TypeError, ValueError):
        raise InvalidArgument(f"CUDAExecutionProvider device_id={device_id!r}: expected an "
                              "integer") from None
    fields = {"device": f"cuda:{device_id}"}
    for key, value in options.items():
        if key == "gpu_mem_limit":
            fields["memory_limits"] = [f"cuda:{device_id}={int(value)}"]
        elif key == "enable_cuda_graph":
            fields["cuda_graphs"] = _flag(key, value)
        elif key == "use_tf32":
            fields["precision"] = "tf32" if _flag(key, value) else "fp32"
        elif key == "has_user_compute_stream" and _flag(key, value):
            raise _NotImplemented("CUDAExecutionProvider has_user_compute_stream: Switchyard "
                                  "runs on its own streams")
        elif key == "user_compute_stream":
            raise _NotImplemented("CUDAExecutionProvider user_compute_stream: Switchyard runs "
                                  "on its own streams")
        elif key in _CUDA_IGNORED:
            _warn(f"CUDAExecutionProvider option {key}={value!r} has no Switchyard equivalent; "
                  "it is ignored")
        elif key not in _CUDA_HANDLED:
            raise InvalidArgument(f"CUDAExecutionProvider: unknown provider option {key!r}")
    return fields


def _cpu_options(options):
    for key, value in options.items():
        if key in _CPU_IGNORED:
            _warn(f"CPUExecutionProvider option {key}={value!r} has no Switchyard equivalent; "
                  "it is ignored")
        else:
            raise InvalidArgument(f"CPUExecutionProvider: unknown provider option {key!r}")
    return {"device": "cpu", "compute_units": "cpu_only"}


def _entries(providers, provider_options):
    if not isinstance(providers, (list, tuple)):
        raise ValueError("'providers' should be a sequence.")
    if provider_options is not None:
        if not isinstance(provider_options, (list, tuple)):
            raise ValueError("'provider_options' should be a sequence.")
        if len(provider_options) != len(providers):
            raise ValueError("'providers' and 'provider_options' should be the same length if "
                             "both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if "
                             "'provider_options' is given.")
        return list(zip(providers, provider_options))
    entries = []
    for p in providers:
        if isinstance(p, str):
            entries.append((p, {}))
        elif isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str):
            entries.append((p[0], p[1]))
        else:
            raise ValueError("'providers' values must be either strings or (string, dict) "
                             "tuples.")
    return entries


def resolve(providers, provider_options):
    """The ProviderPlan for InferenceSession's ``providers`` and ``provider_options``."""
    available = get_available_providers()
    if providers is None:
        if provider_options is not None:
            raise ValueError("'provider_options' is given without 'providers'")
        # Switchyard's own default: the first GPU by memory, else the cpu.
        return ProviderPlan(available, {p: {} for p in available}, {})
    accepted = {}
    for name, options in _entries(providers, provider_options):
        if not isinstance(name, str):
            raise ValueError(f"provider names are strings, got {type(name).__name__}")
        if not isinstance(options, dict):
            raise ValueError(f"options of {name} must be a dict, got {type(options).__name__}")
        if name not in ORT_PROVIDERS:
            raise UnknownProviderError(
                f"Unknown Provider Type: {name} (providers: {', '.join(ORT_PROVIDERS)})")
        if name not in available:
            _warn(f"Specified provider '{name}' is not in available provider names."
                  f"Available providers: '{', '.join(available)}'")
            continue
        if name in accepted:
            _warn(f"Duplicate provider '{name}' encountered, ignoring.")
            continue
        accepted[name] = {str(k): v for k, v in options.items()}
    if CPU not in accepted:
        accepted[CPU] = {}  # ORT always keeps its CPU provider as the fallback
    names = list(accepted)
    first = names[0]
    fields = _cuda_options(accepted[first]) if first == CUDA else _cpu_options(accepted[first])
    for name in names[1:]:  # validate the others' options too
        (_cuda_options if name == CUDA else _cpu_options)(accepted[name])
    reported = {n: {k: str(v) for k, v in o.items()} for n, o in accepted.items()}
    if CUDA in reported:
        reported[CUDA].setdefault("device_id", "0")
    return ProviderPlan(names, reported, fields)
