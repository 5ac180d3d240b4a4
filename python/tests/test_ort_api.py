"""The five reference models through ONNX Runtime's documented Python API only: this file is
ORT code with its import changed, and must stay so (no Switchyard-only call below).

The models and their torch references come from ../shared/reference/make_models.py, made once
into the build tree by tests/models/run_models.sh (ctest's reference_models fixture), which sets
SWITCHYARD_REFERENCE_MODELS. Tolerance as in tests/models: max abs error <= 1e-4 x max|ref|.
"""
import os

import numpy as np
import pytest

import switchyard as ort

MODELS = ["resnet50", "mobilenet_v2", "squeezenet1_1", "bert_base", "gpt_decoder"]
TOLERANCE = 1e-4


def reference_files(name):
    folder = os.environ.get("SWITCHYARD_REFERENCE_MODELS")
    if not folder:
        pytest.skip("SWITCHYARD_REFERENCE_MODELS is not set: run through ctest, whose "
                    "reference_models fixture makes the models (tests/models/run_models.sh)")
    model = os.path.join(folder, f"{name}.onnx")
    reference = os.path.join(folder, f"{name}.ref.npz")
    if not (os.path.exists(model) and os.path.exists(reference)):
        pytest.skip(f"{model} or {reference} is missing: run tests/models/run_models.sh")
    return model, reference


def load_reference(path):
    with np.load(path) as data:
        inputs = {k[3:]: data[k] for k in data.files if k.startswith("in.")}
        outputs = {k[4:]: data[k] for k in data.files if k.startswith("out.")}
    return inputs, outputs


def check_close(name, got, want):
    assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
    scale = float(np.max(np.abs(want)))
    error = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    assert error <= TOLERANCE * scale, f"{name}: max abs error {error}, max |ref| {scale}"


@pytest.mark.parametrize("name", MODELS)
def test_reference_model(name):
    model, reference = reference_files(name)
    inputs, expected = load_reference(reference)

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, sess_options=options,
                                   providers=["CPUExecutionProvider"])
    assert session.get_providers() == ["CPUExecutionProvider"]

    declared = {i.name: i for i in session.get_inputs()}
    assert set(declared) == set(inputs)
    for input_name, array in inputs.items():
        want = {np.float32: "tensor(float)", np.int64: "tensor(int64)"}[array.dtype.type]
        assert declared[input_name].type == want
        assert len(declared[input_name].shape) == array.ndim
        assert isinstance(declared[input_name].shape[0], str)  # the symbolic batch axis
    output_names = [o.name for o in session.get_outputs()]
    assert set(expected) <= set(output_names)

    results = session.run(None, inputs)
    for output_name, result in zip(output_names, results):
        if output_name in expected:
            check_close(f"{name} {output_name}", result, expected[output_name])

    # The same run with OrtValues and an IOBinding gives the same bits.
    binding = session.io_binding()
    for input_name, array in inputs.items():
        binding.bind_ortvalue_input(input_name, ort.OrtValue.ortvalue_from_numpy(array))
    for output_name in output_names:
        binding.bind_output(output_name, "cpu")
    session.run_with_iobinding(binding)
    for output_name, bound, result in zip(output_names, binding.copy_outputs_to_cpu(), results):
        np.testing.assert_array_equal(bound, result, err_msg=f"{name} {output_name}")


def test_model_bytes_and_run_options():
    model, reference = reference_files("squeezenet1_1")
    inputs, expected = load_reference(reference)
    with open(model, "rb") as f:
        session = ort.InferenceSession(f.read(), providers=["CPUExecutionProvider"])
    run_options = ort.RunOptions()
    run_options.log_severity_level = 3
    name = session.get_outputs()[0].name
    (result,) = session.run([name], inputs, run_options)
    check_close(f"squeezenet1_1 {name}", result, expected[name])
