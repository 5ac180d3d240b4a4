"""InferenceSession: metadata, runs, results that never alias inputs or weights, model bytes,
saved executables, closing."""
import pathlib

import numpy as np
import pytest

import switchyard as ort


def test_inputs_outputs_are_node_args_with_ort_spellings(models):
    s = ort.InferenceSession(models["mixed"], providers=["CPUExecutionProvider"])
    inputs = {a.name: a for a in s.get_inputs()}
    assert [a.name for a in s.get_inputs()] == ["ids", "mask", "s"]
    assert inputs["ids"].type == "tensor(int64)" and inputs["ids"].shape == [None]
    assert inputs["mask"].type == "tensor(bool)" and inputs["mask"].shape == ["n"]
    assert inputs["s"].type == "tensor(double)" and inputs["s"].shape == []
    outputs = {a.name: a for a in s.get_outputs()}
    assert outputs["rows"].type == "tensor(float)" and outputs["rows"].shape == [None, 3]
    assert "NodeArg(name='ids', type='tensor(int64)', shape=[None])" == str(inputs["ids"])


def test_modelmeta_reads_the_file(models):
    meta = ort.InferenceSession(models["add"]).get_modelmeta()
    assert meta.producer_name == "switchyard-tests"
    assert meta.graph_name == "add_graph"
    assert meta.domain == "ai.switchyard.test"
    assert meta.description == "the add model"
    assert meta.graph_description == "adds two tensors"
    assert meta.version == 7
    assert meta.custom_metadata_map == {"author": "tests", "purpose": "metadata"}


def test_run_returns_outputs_in_the_order_asked(models, rng):
    s = ort.InferenceSession(models["add"])
    x = rng.standard_normal((4, 3)).astype(np.float32)
    y = rng.standard_normal((4, 3)).astype(np.float32)
    z, i = s.run(None, {"X": x, "Y": y})
    np.testing.assert_array_equal(z, x + y)
    np.testing.assert_array_equal(i, x)
    i2, z2 = s.run(["I", "Z"], {"X": x, "Y": y})
    np.testing.assert_array_equal(z2, x + y)
    np.testing.assert_array_equal(i2, x)
    (only,) = s.run(["Z"], {"X": x, "Y": y})
    np.testing.assert_array_equal(only, x + y)
    assert s.run([], {"X": x, "Y": y})[0].shape == (4, 3)


def test_results_never_share_memory_with_inputs_or_weights(models, rng):
    s = ort.InferenceSession(models["add"])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    _, passed = s.run(None, {"X": x, "Y": y})
    assert not np.shares_memory(passed, x)
    passed[:] = 100
    np.testing.assert_array_equal(s.run(None, {"X": x, "Y": y})[1], x)

    d = ort.InferenceSession(models["dense"])
    w, b, c = models["dense_weights"]
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y, const = d.run(None, {"X": x})
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(const, c)
    const[:] = -1  # writing a result must not change the model
    np.testing.assert_array_equal(d.run(["C"], {"X": x})[0], c)


def test_read_only_and_non_contiguous_inputs(models, rng):
    s = ort.InferenceSession(models["add"])
    x = rng.standard_normal((3, 6)).astype(np.float32)[:, ::2]  # strided: copied, as ORT does
    y = rng.standard_normal((3, 3)).astype(np.float32)
    y.flags.writeable = False
    before = y.copy()
    (z,) = s.run(["Z"], {"X": x, "Y": y})
    np.testing.assert_array_equal(z, x + y)
    np.testing.assert_array_equal(y, before)
    xf = np.asfortranarray(rng.standard_normal((3, 3)).astype(np.float32))
    np.testing.assert_array_equal(s.run(["Z"], {"X": xf, "Y": y})[0], xf + y)
    big_endian = x.astype(">f4")
    np.testing.assert_array_equal(s.run(["Z"], {"X": big_endian, "Y": y})[0], x + y)


def test_other_dtypes_scalars_and_lists(models):
    s = ort.InferenceSession(models["mixed"])
    table = models["mixed_table"]
    ids = np.array([3, 0, 9, 3], dtype=np.int64)
    mask = np.array([True, False, True])
    rows, inverted, s2 = s.run(None, {"ids": ids, "mask": mask, "s": np.array(1.5)})
    np.testing.assert_array_equal(rows, table[ids])
    np.testing.assert_array_equal(inverted, ~mask)
    assert s2.shape == () and s2.dtype == np.float64 and s2 == 2.25
    # Python lists and scalars become arrays as numpy makes them (no dtype conversion).
    rows, _, s2 = s.run(None, {"ids": [1, 2], "mask": [False], "s": 3.0})
    np.testing.assert_array_equal(rows, table[[1, 2]])
    assert s2 == 9.0


def test_model_bytes_and_path_like(models, rng):
    data = pathlib.Path(models["add"]).read_bytes()
    x = rng.standard_normal((1, 3)).astype(np.float32)
    from_bytes = ort.InferenceSession(data).run(["Z"], {"X": x, "Y": x})[0]
    from_path = ort.InferenceSession(pathlib.Path(models["add"])).run(["Z"], {"X": x, "Y": x})[0]
    np.testing.assert_array_equal(from_bytes, 2 * x)
    np.testing.assert_array_equal(from_path, 2 * x)


def test_saved_executable_loads_and_runs_identically(models, rng, tmp_path, fast_sim):
    s = ort.InferenceSession(models["dense"], sim_config=fast_sim, device="sim:0")
    assert s.placement_summary().startswith("sim:0: 3 of 3 nodes")
    path = tmp_path / "dense.syx"
    s.save(path)
    with pytest.raises(ort.InvalidArgument, match="sim-config"):
        ort.InferenceSession(str(path))  # the simulated devices are this process's to declare
    loaded = ort.InferenceSession(str(path), sim_config=fast_sim)
    assert loaded.compile_stats()["compile_ms"] == 0
    assert loaded.placement_summary() == s.placement_summary()
    assert [a.name for a in loaded.get_inputs()] == ["X"]
    assert loaded.get_modelmeta().producer_name == ""  # a .syx keeps no ONNX metadata
    x = rng.standard_normal((5, 4)).astype(np.float32)
    for a, b in zip(s.run(None, {"X": x}), loaded.run(None, {"X": x})):
        np.testing.assert_array_equal(a, b)
    # ORT code passes providers: they cannot move a saved executable, and a warning says so.
    with pytest.warns(ort.SwitchyardWarning, match="placed on sim:0"):
        cpu = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"],
                                   sim_config=fast_sim)
    np.testing.assert_array_equal(cpu.run(["Y"], {"X": x})[0], s.run(["Y"], {"X": x})[0])


def test_close_and_context_manager(models, rng):
    x = rng.standard_normal((1, 3)).astype(np.float32)
    with ort.InferenceSession(models["add"]) as s:
        s.run(None, {"X": x, "Y": x})
    with pytest.raises(ort.NoModel, match="closed"):
        s.run(None, {"X": x, "Y": x})
    with pytest.raises(ort.NoModel):
        s.get_inputs()
    with pytest.raises(ort.NoModel):
        s.io_binding()


def test_set_providers_compiles_again(models, rng):
    s = ort.InferenceSession(models["add"], providers=["CPUExecutionProvider"])
    before = s._sess
    s.set_providers(["CPUExecutionProvider"])
    assert s._sess is not before and before.closed
    assert s.get_providers() == ["CPUExecutionProvider"]
    x = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_array_equal(s.run(["Z"], {"X": x, "Y": x})[0], 2 * x)


def test_run_with_ort_values(models, rng):
    s = ort.InferenceSession(models["add"])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    feed = {"X": ort.OrtValue.ortvalue_from_numpy(x), "Y": ort.OrtValue.ortvalue_from_numpy(y)}
    z, i = s.run_with_ort_values(None, feed)
    assert isinstance(z, ort.OrtValue) and z.shape() == [2, 3]
    assert z.data_type() == "tensor(float)" and z.element_type() is np.float32
    assert z.device_name() == "cpu" and z.is_tensor() and z.has_value()
    np.testing.assert_array_equal(z.numpy(), x + y)
    np.testing.assert_array_equal(i.numpy(), x)


def test_last_run_stats(models, rng):
    s = ort.InferenceSession(models["add"])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    s.run(None, {"X": x, "Y": x})
    first = s.last_run_stats()
    s.run(None, {"X": x, "Y": x})
    assert not first["shape_cache_hit"] and s.last_run_stats()["shape_cache_hit"]
    assert s.last_run_stats()["copies"] == 0


def test_concurrent_runs_share_one_session(models, rng):
    import threading
    s = ort.InferenceSession(models["dense"])
    w, b, _ = models["dense_weights"]
    errors = []

    def work(seed):
        x = np.random.default_rng(seed).standard_normal((8, 4)).astype(np.float32)
        for _ in range(20):
            (y,) = s.run(["Y"], {"X": x})
            if not np.allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
