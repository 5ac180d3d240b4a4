"""Errors: every switchyard::ErrorCode raises its class (under ONNX Runtime's), and every bad
input from Python raises — naming the input — instead of crashing the interpreter."""
import json
import threading
import time

import numpy as np
import pytest

import switchyard as ort
from switchyard import _switchyard as _C
from switchyard.capi import onnxruntime_pybind11_state as state

ORT_CLASS = {  # the ORT class each code must be catchable as
    "InvalidModel": (state.InvalidGraph, state.InvalidProtobuf),
    "Unsupported": (state.NotImplemented,),
    "PlacementFailed": (state.EPFail,),
    "InvalidArgument": (state.InvalidArgument,),
    "OutOfMemory": (state.RuntimeException,),
    "DeviceLost": (state.EPFail,),
    "Internal": (state.Fail,),
    "Cancelled": (state.Fail,),
    "DeviceMismatch": (state.EPFail,),
}


@pytest.mark.parametrize("code", _C.error_code_names())
def test_every_error_code_has_its_class(code):
    assert code in ORT_CLASS, f"ErrorCode {code} is new: map it in ERROR_CLASSES and docs"
    with pytest.raises(ort.ERROR_CLASSES[code]) as info:
        _C.raise_error(code, f"node 'n1': something about {code}")
    e = info.value
    assert isinstance(e, ORT_CLASS[code]) and isinstance(e, ort.SwitchyardError)
    assert e.code == code
    assert e.message == f"node 'n1': something about {code}"
    assert str(e) == f"{code}: node 'n1': something about {code}"


def test_subclasses_for_placement_and_memory():
    assert issubclass(ort.PlacementError, ort.EPFail)
    assert issubclass(ort.OutOfMemoryError, ort.RuntimeException)
    assert ort.Fail is state.Fail and ort.InvalidArgument is state.InvalidArgument


def test_missing_model_file(tmp_path):
    with pytest.raises(ort.NoSuchFile, match="nope.onnx"):
        ort.InferenceSession(str(tmp_path / "nope.onnx"))


def test_garbage_model_is_invalid_protobuf_and_invalid_graph(models):
    with pytest.raises(ort.InvalidProtobuf) as info:
        ort.InferenceSession(models["garbage"])
    assert isinstance(info.value, ort.InvalidGraph) and info.value.code == "InvalidModel"
    assert "garbage.onnx" in str(info.value)


def test_unsupported_op_is_not_implemented(models):
    with pytest.raises(ort.NotImplemented, match="Frobnicate"):
        ort.InferenceSession(models["custom"])


def test_model_argument_of_the_wrong_type():
    with pytest.raises(TypeError, match="Unable to load from type"):
        ort.InferenceSession(None)
    with pytest.raises(TypeError):
        ort.InferenceSession(42)


def feed(rng, batch=2):
    return {"X": rng.standard_normal((batch, 3)).astype(np.float32),
            "Y": rng.standard_normal((batch, 3)).astype(np.float32)}


@pytest.fixture
def add(models):
    return ort.InferenceSession(models["add"])


def test_missing_feed_names_the_input(add, rng):
    f = feed(rng)
    del f["Y"]
    with pytest.raises(ValueError, match=r"\['Y'\]") as info:
        add.run(None, f)
    assert isinstance(info.value, ort.InvalidArgument)


def test_extra_feed_is_refused_as_ort_does(add, rng):
    f = feed(rng)
    f["W"] = f["X"]
    with pytest.raises(ort.InvalidArgument, match="Invalid Feed Input Name: W"):
        add.run(None, f)


def test_wrong_dtype_names_the_input(add, rng):
    f = feed(rng)
    f["Y"] = f["Y"].astype(np.float64)
    with pytest.raises(ort.InvalidArgument, match="input 'Y': dtype double given, expected float"):
        add.run(None, f)
    f["Y"] = f["Y"].astype(np.complex64)
    with pytest.raises(ort.InvalidArgument, match="input 'Y'.*complex64"):
        add.run(None, f)


def test_wrong_shapes_name_the_input(add, rng):
    f = feed(rng)
    f["X"] = f["X"].reshape(2, 3, 1)
    with pytest.raises(ort.InvalidArgument, match="input 'X': rank 3"):
        add.run(None, f)
    f = feed(rng)
    f["Y"] = np.zeros((2, 4), np.float32)
    with pytest.raises(ort.InvalidArgument, match="input 'Y': dim 1 is 4, expected 3"):
        add.run(None, f)
    f = feed(rng)
    f["Y"] = feed(rng, batch=5)["Y"]
    with pytest.raises(ort.InvalidArgument, match="dim 'batch'"):
        add.run(None, f)


@pytest.mark.parametrize("bad", [None, {"a": 1}, object(), "text", print, [[1.0], "x"]])
def test_non_tensor_feed_names_the_input(add, rng, bad):
    f = feed(rng)
    f["X"] = bad
    with pytest.raises(ort.InvalidArgument, match="input 'X'"):
        add.run(None, f)


def test_torch_tensor_requiring_grad_names_the_input(add, rng):
    torch = pytest.importorskip("torch")
    f = feed(rng)
    f["X"] = torch.from_numpy(f["X"]).requires_grad_()
    with pytest.raises(ort.InvalidArgument, match="input 'X': cannot read it through DLPack"):
        add.run(None, f)


def test_bad_output_names_and_arguments(add, rng):
    with pytest.raises(ort.InvalidArgument, match="Invalid Output Name: nope"):
        add.run(["nope"], feed(rng))
    with pytest.raises(TypeError):
        add.run("Z", feed(rng))
    with pytest.raises(TypeError):
        add.run(None, [feed(rng)["X"]])
    with pytest.raises(TypeError):
        add.run(None, feed(rng), run_options="fast")


def test_unknown_keyword_names_it(models):
    with pytest.raises(TypeError, match="unexpected keyword argument 'devices'"):
        ort.InferenceSession(models["add"], devices="cpu")
    with pytest.raises(TypeError, match="sim_devices must be an int"):
        ort.InferenceSession(models["add"], sim_devices="1")
    with pytest.raises(ort.InvalidArgument, match="num_threads must be >= 0"):
        ort.InferenceSession(models["add"], num_threads=-1)


def test_bad_option_values_are_the_librarys_invalid_argument(models):
    with pytest.raises(ort.InvalidArgument, match="fallback"):
        ort.InferenceSession(models["add"], fallback="never")
    with pytest.raises(ort.InvalidArgument, match="cuda:7"):
        ort.InferenceSession(models["add"], device="cuda:7")


def test_strict_placement_failure_is_a_placement_error(models, tmp_path):
    config = tmp_path / "sim.json"
    config.write_text(json.dumps([{"name": "adds only", "ops": ["Add"]}]))
    with pytest.raises(ort.PlacementError, match="strict placement failed") as info:
        ort.InferenceSession(models["dense"], sim_config=str(config), device="sim:0",
                             fallback="strict")
    assert isinstance(info.value, ort.EPFail) and info.value.code == "PlacementFailed"
    with pytest.raises(ort.PlacementError, match="matmul"):
        ort.InferenceSession(models["dense"], sim_config=str(config), pins=["matmul=sim:0"])


def test_out_of_memory_leaves_the_session_usable(models, rng):
    s = ort.InferenceSession(models["dense"], memory_limits=["cpu=256K"])
    small = rng.standard_normal((1, 4)).astype(np.float32)
    s.run(["Y"], {"X": small})
    with pytest.raises(ort.OutOfMemoryError, match="cpu") as info:  # a 2 MB result
        s.run(["Y"], {"X": rng.standard_normal((100000, 4)).astype(np.float32)})
    assert isinstance(info.value, ort.RuntimeException)
    s.run(["Y"], {"X": small})


def test_terminate_stops_a_running_run(models):
    s = ort.InferenceSession(models["loop"])
    options = ort.RunOptions()
    outcome = {}

    def run():
        started = time.monotonic()
        try:
            s.run(None, {"M": np.array(10**9, np.int64), "v0": np.zeros(1, np.float32)},
                  options)
            outcome["error"] = None
        except ort.Fail as e:
            outcome["error"] = e
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)  # the run holds no GIL: this thread gets to set the flag
    options.terminate = True
    thread.join(30)
    assert not thread.is_alive(), "the run did not stop"
    assert isinstance(outcome["error"], ort.CancelledError), outcome
    assert outcome["seconds"] < 10
    # Terminated options fail at once; reset, they run.
    with pytest.raises(ort.CancelledError):
        s.run(None, {"M": np.array(3, np.int64), "v0": np.zeros(1, np.float32)}, options)
    options.terminate = False
    (v,) = s.run(None, {"M": np.array(3, np.int64), "v0": np.full(1, 0.5, np.float32)}, options)
    assert v[0] == 3.5


def test_deadline(models):
    s = ort.InferenceSession(models["loop"])
    options = ort.RunOptions()
    options.deadline_ms = 100
    started = time.monotonic()
    with pytest.raises(ort.CancelledError):
        s.run(None, {"M": np.array(10**9, np.int64), "v0": np.zeros(1, np.float32)}, options)
    assert time.monotonic() - started < 10
