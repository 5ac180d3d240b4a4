"""Small ONNX models the package tests share, written with onnx.helper into a temporary folder.

Values are seeded random (never zeros or ones alone), so a result that ignores an input fails.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def save(model, folder, name):
    onnx.checker.check_model(model)
    path = folder / f"{name}.onnx"
    onnx.save(model, str(path))
    return str(path)


def tensor(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """name -> path of each small model."""
    folder = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(3)
    out = {}

    # Z = X + Y, I = Identity(X): symbolic batch; metadata set.
    g = helper.make_graph(
        [helper.make_node("Add", ["X", "Y"], ["Z"], name="add"),
         helper.make_node("Identity", ["X"], ["I"], name="pass")],
        "add_graph", [tensor("X", TensorProto.FLOAT, ["batch", 3]),
                      tensor("Y", TensorProto.FLOAT, ["batch", 3])],
        [tensor("Z", TensorProto.FLOAT, ["batch", 3]), tensor("I", TensorProto.FLOAT, ["batch", 3])],
        doc_string="adds two tensors")
    m = helper.make_model(g, opset_imports=OPSET, producer_name="switchyard-tests",
                          producer_version="1.2", domain="ai.switchyard.test",
                          doc_string="the add model")
    m.model_version = 7
    helper.set_model_props(m, {"author": "tests", "purpose": "metadata"})
    out["add"] = save(m, folder, "add")

    # Y = relu(X @ W + B) with W, B random weights; C = a constant output.
    w = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    c = rng.standard_normal((2, 2)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W"], ["XW"], name="matmul"),
         helper.make_node("Add", ["XW", "B"], ["XWB"], name="bias"),
         helper.make_node("Relu", ["XWB"], ["Y"], name="relu"),
         helper.make_node("Identity", ["C0"], ["C"], name="constant_out")],
        "dense", [tensor("X", TensorProto.FLOAT, ["batch", 4])],
        [tensor("Y", TensorProto.FLOAT, ["batch", 5]), tensor("C", TensorProto.FLOAT, [2, 2])],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"),
                     numpy_helper.from_array(c, "C0")])
    out["dense"] = save(helper.make_model(g, opset_imports=OPSET), folder, "dense")
    out["dense_weights"] = (w, b, c)

    # Y = relu(X @ W1) @ W2, 256 wide: enough work that placement keeps it on a GPU.
    w1 = rng.standard_normal((256, 256)).astype(np.float32) / 16
    w2 = rng.standard_normal((256, 256)).astype(np.float32) / 16
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W1"], ["H"], name="matmul1"),
         helper.make_node("Relu", ["H"], ["R"], name="relu"),
         helper.make_node("MatMul", ["R", "W2"], ["Y"], name="matmul2")],
        "wide", [tensor("X", TensorProto.FLOAT, ["batch", 256])],
        [tensor("Y", TensorProto.FLOAT, ["batch", 256])],
        initializer=[numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")])
    out["wide"] = save(helper.make_model(g, opset_imports=OPSET), folder, "wide")
    out["wide_weights"] = (w1, w2)

    # Mixed dtypes: int64 ids gathered from a float table, a bool mask, an unknown dim, a scalar.
    table = rng.standard_normal((10, 3)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("Gather", ["T", "ids"], ["rows"], name="gather"),
         helper.make_node("Not", ["mask"], ["inverted"], name="not"),
         helper.make_node("Mul", ["s", "s"], ["s2"], name="square")],
        "mixed", [tensor("ids", TensorProto.INT64, [None]),
                  tensor("mask", TensorProto.BOOL, ["n"]),
                  tensor("s", TensorProto.DOUBLE, [])],
        [tensor("rows", TensorProto.FLOAT, [None, 3]), tensor("inverted", TensorProto.BOOL, ["n"]),
         tensor("s2", TensorProto.DOUBLE, [])],
        initializer=[numpy_helper.from_array(table, "T")])
    out["mixed"] = save(helper.make_model(g, opset_imports=OPSET), folder, "mixed")
    out["mixed_table"] = table

    # A Loop that counts to M: long enough to cancel (10^9 iterations), stops when told.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body", [tensor("i", TensorProto.INT64, []), tensor("cond_in", TensorProto.BOOL, []),
                 tensor("v_in", TensorProto.FLOAT, [1])],
        [tensor("cond_out", TensorProto.BOOL, []), tensor("v_out", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.ones(1, np.float32), "one")])
    g = helper.make_graph(
        [helper.make_node("Loop", ["M", "cond", "v0"], ["v"], name="count", body=body)],
        "slow", [tensor("M", TensorProto.INT64, []), tensor("v0", TensorProto.FLOAT, [1])],
        [tensor("v", TensorProto.FLOAT, [1])],
        initializer=[numpy_helper.from_array(np.array(True), "cond")])
    out["loop"] = save(helper.make_model(g, opset_imports=OPSET), folder, "loop")

    # An op no backend runs (a custom domain), for Unsupported.
    g = helper.make_graph([helper.make_node("Frobnicate", ["X"], ["Y"], domain="ai.example")],
                          "custom", [tensor("X", TensorProto.FLOAT, [2])],
                          [tensor("Y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=OPSET + [helper.make_opsetid("ai.example", 1)])
    path = folder / "custom.onnx"
    onnx.save(m, str(path))
    out["custom"] = str(path)

    # A folder with a garbage "model".
    garbage = folder / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07 this is not a protobuf \xff\xff\xff\xff")
    out["garbage"] = str(garbage)
    return out


@pytest.fixture(scope="session")
def fast_sim(tmp_path_factory):
    """A --sim-config file declaring sim:0 with copies that cost nothing, so placement keeps
    even a tiny model there (the island rule would move it to the cpu otherwise)."""
    path = tmp_path_factory.mktemp("sim") / "fast_sim.json"
    path.write_text('[{"name": "fast", "copy_latency_us": 0, "copy_gbytes_per_s": 1000000, '
                    '"gflops": 1000000}]')
    return str(path)


@pytest.fixture
def rng():
    return np.random.default_rng(7)
