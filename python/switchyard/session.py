"""InferenceSession: ONNX Runtime's session over a Switchyard executable.

``InferenceSession(path_or_bytes, sess_options, providers, provider_options, **switchyard)``
compiles the model once (or loads a saved .syx) with the GIL released; ``run`` takes numpy
arrays, OrtValues or DLPack tensors without copying them and returns numpy views of the
results. The Switchyard keyword arguments are switchyard::Options fields; they win over what
``sess_options`` and ``providers`` imply. docs/python.md has the whole mapping.
"""
import contextlib
import datetime
import json
import os
import sys
import tempfile
import warnings

from . import _switchyard as _C
from ._modelmeta import empty_model_metadata, read_model_metadata
from .capi.onnxruntime_pybind11_state import (InvalidArgument, MissingInputError, NoModel,
                                               NoSuchFile)
from .options import GraphOptimizationLevel, RunOptions, SessionOptions, SwitchyardWarning
from .providers import ProviderPlan
from .providers import resolve as _resolve_providers
from .values import IOBinding, OrtValue, to_value, value_to_numpy


def _as_list(name, value):
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [f"{k}={v}" for k, v in value.items()]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError(f"{name} must be a str, a list of str or a dict, got {type(value).__name__}")


def _path(name, value):
    if isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    raise TypeError(f"{name} must be a str or a path, got {type(value).__name__}")


def _kind(kind, minimum=None):
    def convert(name, value):
        if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if kind is not int and not isinstance(value, kind):
            raise TypeError(f"{name} must be {kind.__name__}, got {type(value).__name__}")
        if minimum is not None and value < minimum:
            raise InvalidArgument(f"{name} must be >= {minimum}, got {value}")
        return value
    return convert


def _device(name, value):
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    return _kind(str)(name, value)


_CUDA_STREAM_LEGACY = 0x1  # cudaStreamLegacy (cuda_runtime_api.h)

#: The keyword arguments of InferenceSession: switchyard::Options, field by field.
SWITCHYARD_OPTIONS = {
    "num_threads": _kind(int, 0),
    "shape_cache_capacity": _kind(int, 0),
    "max_in_flight": _kind(int),
    "optimize": _kind(bool),
    "compute_units": _kind(str),
    "device": _device,
    "pins": _as_list,
    "fallback": _kind(str),
    "min_partition_nodes": _kind(int),
    "memory_limits": _as_list,
    "split": _kind(str),
    "sim_devices": _kind(int),
    "sim_config": _path,
    "precision": _kind(str),
    "cuda_graphs": _kind(bool),
    "fusion": _kind(bool),
    "allow_relower": _kind(bool),
    "cache_dir": _path,
    "cache_max_bytes": _kind(int, 0),
}


def _compile_options(sess_options, plan, keywords):
    """The switchyard::Options of a session: SessionOptions, then the providers' placement,
    then the keywords (which must not contradict a SessionOptions value that was set)."""
    for name in keywords:
        if name not in SWITCHYARD_OPTIONS:
            raise TypeError(f"InferenceSession() got an unexpected keyword argument '{name}' "
                            f"(Switchyard's: {', '.join(SWITCHYARD_OPTIONS)})")
    fields = {"num_threads": sess_options.intra_op_num_threads}
    level = sess_options.graph_optimization_level
    fields["optimize"] = level != GraphOptimizationLevel.ORT_DISABLE_ALL
    fields["fusion"] = level >= GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    placement = dict(plan.options)
    if "device" in keywords or "compute_units" in keywords:
        # The keywords say where to run: what the providers implied goes, all of it.
        placement.pop("device", None)
        placement.pop("compute_units", None)
    fields.update(placement)
    conflicts = {"num_threads": "intra_op_num_threads", "optimize": "graph_optimization_level",
                 "fusion": "graph_optimization_level"}
    for name, value in keywords.items():
        value = SWITCHYARD_OPTIONS[name](name, value)
        source = conflicts.get(name)
        if source and sess_options._is_set(source) and fields[name] != value:
            raise InvalidArgument(f"{name}={value!r} contradicts SessionOptions.{source} = "
                                  f"{getattr(sess_options, source)!r}; give one of them")
        fields[name] = value
    options = _C._Options()
    for name, value in fields.items():
        setattr(options, name, value)
    return options


def _warn_if_placed_elsewhere(sess, plan):
    """Warns when a saved executable runs on devices its session's providers exclude."""
    used = {node["device"] for node in json.loads(sess.explain("json"))["nodes"]}
    wanted = plan.options.get("device", "cpu")
    allowed = {"cpu", wanted}
    if not used <= allowed:
        warnings.warn(f"providers {plan.providers} ask for {wanted}, but this saved executable "
                      f"was placed on {', '.join(sorted(used))} when it was compiled; it runs "
                      "there (compile the model again to place it elsewhere)", SwitchyardWarning,
                      stacklevel=4)


def _caller_cuda_stream(values):
    """torch's current CUDA stream on the device of the first CUDA value, as an int (0 where
    there is none): the run orders its GPU work after what torch queued there
    (RunOptions.cuda_stream)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return 0
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            if item is None or not item.device.startswith("cuda:"):
                continue
            index = int(item.device.split(":")[1])
            if index >= torch.cuda.device_count():
                return 0  # not torch's: the run refuses a device it does not have
            stream = torch.cuda.current_stream(index).cuda_stream
            # The legacy default stream's handle is 0, which RunOptions reads as "none":
            # name it by its other handle, cudaStreamLegacy.
            return stream if stream != 0 else _CUDA_STREAM_LEGACY
    return 0


@contextlib.contextmanager
def _model_file(path_or_bytes):
    """A path to the model: the given one, or a temporary file holding the given bytes."""
    if isinstance(path_or_bytes, (str, os.PathLike)):
        path = os.fspath(path_or_bytes)
        if not os.path.exists(path):
            raise NoSuchFile(f"Load model from {path} failed: File doesn't exist")
        yield path
        return
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        with tempfile.TemporaryDirectory(prefix="switchyard-") as folder:
            path = os.path.join(folder, "model.onnx")
            with open(path, "wb") as f:
                f.write(path_or_bytes)
            yield path
        return
    raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")


class NodeArg:
    """ORT's NodeArg: an input's or output's name, ``type`` ("tensor(float)") and ``shape``
    (ints, symbolic dims as str, None for an unknown dim; [] when the model declares none)."""

    def __init__(self, info):
        self.name = info["name"]
        element = f"tensor({info['dtype_name']})"
        self.type = {"sequence": f"seq({element})", "optional": f"optional({element})"}.get(
            info["kind"], element)
        self.shape = [None if d == "?" else int(d) if d.lstrip("-").isdigit() else d
                      for d in info["dims"]] if info["has_shape"] else []
        self._kind = info["kind"]
        self._dtype = info["dtype"]

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    __str__ = __repr__


class ModelMetadata:
    """ORT's ModelMetadata, read from the ONNX file (empty for a saved .syx, which keeps none):
    producer_name, graph_name, domain, description (the model's doc string),
    graph_description, version (model_version), custom_metadata_map (metadata_props)."""

    def __init__(self, meta):
        self.producer_name = meta["producer_name"]
        self.graph_name = meta["graph_name"]
        self.domain = meta["domain"]
        self.description = meta["description"]
        self.graph_description = meta["graph_description"]
        self.version = meta["version"]
        self.custom_metadata_map = dict(meta["custom_metadata_map"])

    def __repr__(self):
        return (f"ModelMetadata(producer_name={self.producer_name!r}, "
                f"graph_name={self.graph_name!r}, domain={self.domain!r}, "
                f"version={self.version!r})")


class InferenceSession:
    """ORT's InferenceSession over a Switchyard executable (docs/python.md)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **switchyard_options):
        self._sess = None
        self._profile = None
        if sess_options is None:
            sess_options = SessionOptions()
        if not isinstance(sess_options, SessionOptions):
            raise TypeError(f"sess_options must be a SessionOptions, got "
                            f"{type(sess_options).__name__}")
        self._sess_options = sess_options._copy()
        self._source = path_or_bytes
        self._keywords = dict(switchyard_options)
        self._create(providers, provider_options)

    def _create(self, providers, provider_options):
        plan = _resolve_providers(providers, provider_options)
        with _model_file(self._source) as path:
            saved = _C.is_executable_file(path)
            # A saved executable was placed when it was compiled: providers cannot move it.
            placement = ProviderPlan(plan.providers, plan.provider_options, {}) if saved else plan
            sess = _C._Session(path, _compile_options(self._sess_options, placement,
                                                      self._keywords))
            self._meta = empty_model_metadata() if saved else read_model_metadata(path)
        if saved and providers is not None:
            _warn_if_placed_elsewhere(sess, plan)
        for line in sess.warnings():  # what the compile could not honour
            warnings.warn(line, SwitchyardWarning, stacklevel=3)
        if providers is None:  # the providers in effect: the devices it was compiled for
            names = (["CUDAExecutionProvider"] if any(d.startswith("cuda:")
                                                      for d in sess.devices()) else [])
            plan = ProviderPlan(names + ["CPUExecutionProvider"],
                                {n: {} for n in names + ["CPUExecutionProvider"]}, {})
        if self._sess is not None:
            self._sess.close()
        self._sess, self._plan = sess, plan
        self._inputs_meta = [NodeArg(i) for i in sess.inputs()]
        self._outputs_meta = [NodeArg(o) for o in sess.outputs()]
        self._input_index = {a.name: i for i, a in enumerate(self._inputs_meta)}
        self._output_index = {a.name: i for i, a in enumerate(self._outputs_meta)}
        saved_path = self._sess_options.optimized_model_filepath
        if saved_path:
            if saved_path.endswith((".onnx", ".ort")):
                warnings.warn(f"optimized_model_filepath {saved_path}: the file written is a "
                              "Switchyard executable (.syx), not an ONNX model",
                              SwitchyardWarning, stacklevel=3)
            sess.save(saved_path)
        if self._sess_options.enable_profiling and self._profile is None:
            self._profile = _C._ProfileLog()

    # -- ORT's InferenceSession ------------------------------------------------------------

    def _live(self):
        if self._sess is None or self._sess.closed:
            raise NoModel("the session was closed")
        return self._sess

    def get_inputs(self):
        self._live()
        return list(self._inputs_meta)

    def get_outputs(self):
        self._live()
        return list(self._outputs_meta)

    def get_overridable_initializers(self):
        """Always empty: Switchyard does not let a feed replace a weight."""
        return []

    def get_modelmeta(self):
        self._live()
        return ModelMetadata(self._meta)

    def get_providers(self):
        return list(self._plan.providers)

    def get_provider_options(self):
        return {name: dict(options) for name, options in self._plan.provider_options.items()}

    def get_session_options(self):
        return self._sess_options

    def set_providers(self, providers=None, provider_options=None):
        """Compiles the model again for `providers` (the keyword arguments still apply)."""
        self._live()
        self._create(providers, provider_options)

    def _control(self, run_options):
        if run_options is None:
            return None
        if not isinstance(run_options, RunOptions):
            raise TypeError(f"run_options must be a RunOptions, got {type(run_options).__name__}")
        return run_options._control

    def _output_indices(self, output_names):
        if not output_names:
            return []
        if isinstance(output_names, str):
            raise TypeError("output_names must be a list of names, not a str")
        indices = []
        for name in output_names:
            if name not in self._output_index:
                raise InvalidArgument(f"Invalid Output Name: {name} (outputs: "
                                      f"{', '.join(self._output_index)})")
            indices.append(self._output_index[name])
        return indices

    def _feed(self, input_feed):
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed must be a dict of input name to value, got "
                            f"{type(input_feed).__name__}")
        for name in input_feed:
            if name not in self._input_index:
                raise InvalidArgument(f"Invalid Feed Input Name: {name} (inputs: "
                                      f"{', '.join(self._input_index)})")
        missing = [a.name for a in self._inputs_meta
                   if a.name not in input_feed and a._kind != "optional"]
        if missing:
            raise MissingInputError(f"Required inputs ({missing}) are missing from input feed "
                                    f"({list(input_feed)}).")
        values = []
        for arg in self._inputs_meta:
            item = input_feed.get(arg.name)
            what = f"input '{arg.name}'"
            if item is None and arg._kind == "optional":
                values.append(None)
            elif arg._kind == "sequence":
                if not isinstance(item, (list, tuple)):
                    raise InvalidArgument(f"{what}: a sequence input takes a list of tensors, "
                                          f"got {type(item).__name__}")
                values.append([to_value(x, f"{what} item {k}") for k, x in enumerate(item)])
            else:
                values.append(to_value(item, what))
        return values

    def _run(self, output_names, values, run_options, outputs_on="", output_buffers=None):
        sess = self._live()
        indices = self._output_indices(output_names)
        buffers = output_buffers or {}
        outputs, stats = sess.run(values, indices, self._control(run_options), self._profile,
                                  outputs_on, buffers,
                                  _caller_cuda_stream(values + list(buffers.values())))
        self._last_run_stats = stats
        return outputs

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (all when None or empty), in that order, as numpy arrays."""
        self._live()
        return [value_to_numpy(v)
                for v in self._run(output_names, self._feed(input_feed), run_options)]

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """As run(), with OrtValues in and out (a sequence output is a list of OrtValues)."""
        self._live()
        outputs = self._run(output_names, self._feed(input_dict_ort_values), run_options)
        return [None if v is None else [OrtValue(x) for x in v] if isinstance(v, list)
                else OrtValue(v) for v in outputs]

    def io_binding(self):
        self._live()
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        """Runs with the binding's inputs; its outputs get the results (get_outputs)."""
        if not isinstance(iobinding, IOBinding) or iobinding._session is not self:
            raise InvalidArgument("run_with_iobinding takes an IOBinding of this session")
        self._live()
        if not iobinding._outputs:
            raise InvalidArgument("run_with_iobinding: bind at least one output")
        missing = [a.name for a in self._inputs_meta
                   if a.name not in iobinding._inputs and a._kind != "optional"]
        if missing:
            raise MissingInputError(f"run_with_iobinding: inputs {missing} are not bound")
        buffers = {n: o.target for n, o in iobinding._outputs.items() if o.target is not None}
        devices = {o.device for o in iobinding._outputs.values() if o.target is None}
        if len(devices) > 1:
            raise InvalidArgument(f"run_with_iobinding: outputs bound to several devices "
                                  f"({', '.join(sorted(devices))}); Switchyard leaves the "
                                  "outputs of a run that have no buffer of their own on one "
                                  "device")
        device = devices.pop() if devices else "cpu"
        values = [iobinding._inputs.get(a.name) for a in self._inputs_meta]
        names = list(iobinding._outputs)
        # Outputs bound to memory are written into it by the run (RunOptions.output_buffers).
        outputs = self._run(names, values, run_options, "" if device == "cpu" else device,
                            buffers)
        iobinding._results = [OrtValue(v) for v in outputs]

    def end_profiling(self):
        """Writes the profile of every run since the session began (or since the last
        end_profiling) as a Chrome trace JSON, ``<profile_file_prefix>_<date>_<time>.json`` in
        the current folder, and returns its name; "" when profiling is off."""
        if self._profile is None:
            return ""
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        name = f"{self._sess_options.profile_file_prefix}_{stamp}.json"
        with open(name, "w", encoding="utf-8") as f:
            f.write(self._profile.chrome_trace())
        self._profile = None
        return name

    def get_profiling_start_time_ns(self):
        return self._profile.start_ns if self._profile is not None else 0

    # -- What Switchyard adds --------------------------------------------------------------

    def explain(self, format="text"):  # noqa: A002 (the C++ API's word)
        """The placement report: "text", "json", "dot" or "html" (docs/placement.md)."""
        return self._live().explain(format)

    def placement_summary(self):
        """One line: where the nodes run."""
        return self._live().placement_summary()

    def save(self, path):
        """Saves the compiled executable (.syx); InferenceSession(path) loads it back without
        compiling."""
        self._live().save(os.fspath(path))

    def compile_stats(self):
        """load_ms, compile_ms and cache ("hit", "miss", "off")."""
        return self._live().compile_stats()

    def last_run_stats(self):
        """Statistics of the last run of this session: peak_bytes, copies (values copied
        between devices), copied_bytes, shape_cache_hit, shape_signature."""
        return dict(getattr(self, "_last_run_stats", {}))

    def close(self):
        """Frees the executable; later calls raise NoModel. A profile not yet written is
        written first, as ORT does when a profiling session ends."""
        if self._profile is not None:
            self.end_profiling()
        if self._sess is not None:
            self._sess.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["InferenceSession", "NodeArg", "ModelMetadata"]
