"""The issue's ConvInteger case as two one-node models, for `switchyard bench`:

    conv_integer_const.onnx    uint8 x [1, 64, 512, 512] (zero point 3), int8 weights
                               [64, 64, 3, 3] as an initializer (zero point 0), pads 1:
                               the exact float32 path (constant weights)
    conv_integer_input.onnx    the same with the weights a graph input: the int32 loop

Run with Debian's interpreter: /usr/bin/python3 bench/models/make_conv_integer.py [OUT_DIR]
(default <repo>/build/micro_models). Inputs for `bench` come from --seed (random uint8/int8).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "build", "micro_models")


def model(constant_weights):
    rng = np.random.default_rng(5)
    w = rng.integers(-128, 128, size=(64, 64, 3, 3), dtype=np.int8)
    inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 64, 512, 512])]
    inits = [numpy_helper.from_array(np.array(3, dtype=np.uint8), "x_zero_point")]
    if constant_weights:
        inits.append(numpy_helper.from_array(w, "w"))
    else:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.INT8, [64, 64, 3, 3]))
    node = helper.make_node("ConvInteger", ["x", "w", "x_zero_point"], ["y"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "conv_integer", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 64, 512, 512])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


os.makedirs(OUT, exist_ok=True)
for name, const in (("conv_integer_const", True), ("conv_integer_input", False)):
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(model(const), path)
    print(path)
