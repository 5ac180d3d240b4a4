"""SessionOptions, RunOptions, providers and Switchyard's placement keywords: each does what
docs/python.md says, and what Switchyard cannot honour warns or raises."""
import json
import os

import numpy as np
import pytest

import switchyard as ort
from switchyard import _switchyard as _C
from switchyard import providers as providers_module
from switchyard.session import SWITCHYARD_OPTIONS


def test_keywords_are_exactly_the_options_fields():
    fields = {name for name in dir(_C._Options()) if not name.startswith("_")}
    assert set(SWITCHYARD_OPTIONS) == fields


def test_unknown_attributes_raise():
    so = ort.SessionOptions()
    with pytest.raises(AttributeError, match="intra_op_threads"):
        so.intra_op_threads = 2
    with pytest.raises(AttributeError):
        so.nonsense  # noqa: B018
    ro = ort.RunOptions()
    with pytest.raises(AttributeError):
        ro.timeout = 3
    with pytest.raises(TypeError):
        so.intra_op_num_threads = "2"
    with pytest.raises(ort.InvalidArgument):
        so.graph_optimization_level = 5


@pytest.mark.parametrize("name,value", [
    ("enable_mem_pattern", False), ("enable_cpu_mem_arena", False), ("enable_mem_reuse", False),
    ("use_deterministic_compute", True), ("execution_mode", ort.ExecutionMode.ORT_PARALLEL),
    ("execution_order", ort.ExecutionOrder.PRIORITY_BASED), ("inter_op_num_threads", 4)])
def test_what_switchyard_cannot_honour_warns(name, value):
    so = ort.SessionOptions()
    with pytest.warns(ort.SwitchyardWarning, match=name):
        setattr(so, name, value)
    assert getattr(so, name) == value


def test_defaults_do_not_warn(recwarn):
    so = ort.SessionOptions()
    so.enable_mem_pattern = True
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    ro = ort.RunOptions()
    ro.log_severity_level = 1
    ro.logid = "tagged"
    assert not [w for w in recwarn if issubclass(w.category, ort.SwitchyardWarning)]


def test_unsupported_methods_raise():
    so = ort.SessionOptions()
    with pytest.raises(ort.NotImplemented):
        so.add_free_dimension_override_by_name("batch", 1)
    with pytest.raises(ort.NotImplemented):
        so.register_custom_ops_library("libfoo.so")
    with pytest.warns(ort.SwitchyardWarning):
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert so.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(ort.InvalidArgument):
        so.get_session_config_entry("missing")


def test_threads_and_optimization_level(models):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    assert ort.InferenceSession(models["dense"], so)._sess.num_threads() == 1
    assert ort.InferenceSession(models["dense"], num_threads=2)._sess.num_threads() == 2
    with pytest.raises(ort.InvalidArgument, match="contradicts SessionOptions.intra_op"):
        ort.InferenceSession(models["dense"], so, num_threads=2)
    fused = ort.InferenceSession(models["dense"]).explain("json")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(models["dense"], so).explain("json")
    assert "fused" in fused.lower()
    assert json.loads(plain) != json.loads(fused)
    assert "MatMul" in plain


def test_profiling_writes_a_chrome_trace(models, rng, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = "dense_profile"
    s = ort.InferenceSession(models["dense"], so)
    assert s.get_profiling_start_time_ns() > 0
    x = rng.standard_normal((3, 4)).astype(np.float32)
    s.run(None, {"X": x})
    s.run(None, {"X": x})
    name = s.end_profiling()
    assert name.startswith("dense_profile_") and name.endswith(".json")
    with open(name) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    complete = [e for e in events if e.get("ph") == "X"]
    runs = [e for e in complete if e.get("cat") == "Session"]
    nodes = [e for e in complete if e.get("cat") == "Node"]
    assert len(runs) == 2
    assert {"matmul", "relu"} <= {e["name"] for e in nodes} or len(nodes) >= 2
    assert runs[1]["ts"] >= runs[0]["ts"] + runs[0]["dur"]
    assert s.end_profiling() == ""  # profiling ended


def test_optimized_model_filepath_saves_a_loadable_executable(models, rng, tmp_path):
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "dense.syx")
    s = ort.InferenceSession(models["dense"], so)
    assert _C.is_executable_file(so.optimized_model_filepath)
    loaded = ort.InferenceSession(so.optimized_model_filepath)
    x = rng.standard_normal((6, 4)).astype(np.float32)
    for a, b in zip(s.run(None, {"X": x}), loaded.run(None, {"X": x})):
        np.testing.assert_array_equal(a, b)
    assert loaded.compile_stats()["compile_ms"] == 0


def test_providers_cpu_only(models):
    s = ort.InferenceSession(models["add"], providers=["CPUExecutionProvider"], sim_devices=1)
    assert s.get_providers() == ["CPUExecutionProvider"]
    assert s.get_provider_options() == {"CPUExecutionProvider": {}}
    assert s.placement_summary().startswith("cpu:")


def test_placement_keywords_replace_what_providers_imply(models, fast_sim):
    s = ort.InferenceSession(models["add"], providers=["CPUExecutionProvider"],
                             sim_config=fast_sim, device="sim:0")
    assert s.placement_summary().startswith("sim:0: 2 of 2 nodes")


def test_providers_ort_knows_but_switchyard_lacks_warn_and_are_skipped(models):
    with pytest.warns(ort.SwitchyardWarning, match="TensorrtExecutionProvider"):
        s = ort.InferenceSession(models["add"], providers=["TensorrtExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]


def test_unknown_provider_raises(models):
    with pytest.raises(RuntimeError, match="Unknown Provider Type: FastExecutionProvider") as info:
        ort.InferenceSession(models["add"], providers=["FastExecutionProvider"])
    assert isinstance(info.value, ort.InvalidArgument)
    with pytest.raises(ValueError, match="same length"):
        ort.InferenceSession(models["add"], providers=["CPUExecutionProvider"],
                             provider_options=[{}, {}])
    with pytest.raises(ort.InvalidArgument, match="unknown provider option"):
        ort.InferenceSession(models["add"], providers=[("CPUExecutionProvider", {"x": 1})])


def test_cuda_provider_maps_to_placement(monkeypatch):
    monkeypatch.setattr(providers_module, "_cuda_device_ids", lambda: ("cuda:0", "cuda:1"))
    plan = providers_module.resolve(["CUDAExecutionProvider", "CPUExecutionProvider"],
                                    [{"device_id": 1, "gpu_mem_limit": 2 << 30,
                                      "enable_cuda_graph": "0"}, {}])
    assert plan.options == {"device": "cuda:1", "memory_limits": [f"cuda:1={2 << 30}"],
                            "cuda_graphs": False}
    assert plan.providers == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert plan.provider_options["CUDAExecutionProvider"]["device_id"] == "1"
    plan = providers_module.resolve([("CUDAExecutionProvider", {"use_tf32": 1})], None)
    assert plan.options == {"device": "cuda:0", "precision": "tf32"}
    assert plan.providers == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    with pytest.warns(ort.SwitchyardWarning, match="cudnn_conv_algo_search"):
        providers_module.resolve([("CUDAExecutionProvider",
                                   {"cudnn_conv_algo_search": "EXHAUSTIVE"})], None)
    with pytest.raises(ort.NotImplemented):
        providers_module.resolve([("CUDAExecutionProvider", {"user_compute_stream": "1"})], None)


def test_cuda_provider_without_a_gpu_warns_and_falls_back(models, monkeypatch):
    monkeypatch.setattr(providers_module, "_cuda_device_ids", lambda: ())
    with pytest.warns(ort.SwitchyardWarning, match="Specified provider 'CUDAExecutionProvider' "
                                                   "is not in available provider names"):
        s = ort.InferenceSession(models["add"], providers=["CUDAExecutionProvider",
                                                           "CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]


def test_available_providers():
    available = ort.get_available_providers()
    assert available[-1] == "CPUExecutionProvider"
    cuda = any(d["kind"] == "cuda" for d in ort.describe_devices())
    assert ("CUDAExecutionProvider" in available) == cuda
    assert ort.get_device() == ("GPU" if cuda else "CPU")
    assert set(available) <= set(ort.get_all_providers())


def test_placement_keywords_and_explain(models, rng, fast_sim):
    s = ort.InferenceSession(models["dense"], sim_config=fast_sim, device="sim:0")
    assert s.placement_summary().startswith("sim:0:")
    report = json.loads(s.explain("json"))
    assert {n["device"] for n in report["nodes"]} == {"sim:0"}
    assert "digraph" in s.explain("dot")
    assert "<html" in s.explain("html").lower()
    assert "sim:0" in s.explain()
    with pytest.raises(ort.InvalidArgument, match="pdf"):
        s.explain("pdf")
    x = rng.standard_normal((2, 4)).astype(np.float32)
    w, b, _ = models["dense_weights"]
    np.testing.assert_allclose(s.run(["Y"], {"X": x})[0], np.maximum(x @ w + b, 0), rtol=1e-5,
                               atol=1e-6)
    pinned = ort.InferenceSession(models["dense"], sim_config=fast_sim, device="sim:0",
                                  pins={"relu": "cpu"})
    devices = {n["name"]: n["device"] for n in json.loads(pinned.explain("json"))["nodes"]}
    assert devices["relu"] == "cpu" and devices["matmul"] == "sim:0"
    assert pinned.last_run_stats() == {}
    pinned.run(["Y"], {"X": x})
    assert pinned.last_run_stats()["copies"] == 2  # X to sim:0, its result back to the cpu
    with pytest.raises(ort.InvalidArgument, match="sim:1"):
        ort.InferenceSession(models["dense"], sim_devices=1, device="sim:1")


def test_cache_dir_keyword(models, tmp_path):
    first = ort.InferenceSession(models["dense"], cache_dir=tmp_path)
    second = ort.InferenceSession(models["dense"], cache_dir=str(tmp_path))
    assert first.compile_stats()["cache"] == "miss"
    assert second.compile_stats()["cache"] == "hit"
    assert os.listdir(tmp_path)
