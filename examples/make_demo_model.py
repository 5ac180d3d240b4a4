#!/usr/bin/env python3
"""Builds the demo model: SqueezeNet 1.1 (the torchvision architecture) with seeded random
weights, as an ONNX file with a symbolic batch dim. Needs only numpy and onnx (Debian's
python3-numpy, python3-onnx); no downloads. About 5 MB.

usage: make_demo_model.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(20261130)
nodes = []
initializers = []


def conv(x, name, cin, cout, k, stride=1, pad=0, relu=True):
    fan_in = cin * k * k
    w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.01).astype(np.float32)
    initializers.append(numpy_helper.from_array(w, f"{name}.weight"))
    initializers.append(numpy_helper.from_array(b, f"{name}.bias"))
    y = f"{name}.out"
    nodes.append(helper.make_node("Conv", [x, f"{name}.weight", f"{name}.bias"], [y], name=name,
                                  kernel_shape=[k, k], strides=[stride, stride],
                                  pads=[pad] * 4))
    if relu:
        nodes.append(helper.make_node("Relu", [y], [f"{name}.relu"], name=f"{name}.relu"))
        y = f"{name}.relu"
    return y


def maxpool(x, name):
    nodes.append(helper.make_node("MaxPool", [x], [f"{name}.out"], name=name, kernel_shape=[3, 3],
                                  strides=[2, 2], ceil_mode=1))
    return f"{name}.out"


def fire(x, name, cin, squeeze, e1, e3):
    s = conv(x, f"{name}.squeeze", cin, squeeze, 1)
    a = conv(s, f"{name}.expand1x1", squeeze, e1, 1)
    b = conv(s, f"{name}.expand3x3", squeeze, e3, 3, pad=1)
    nodes.append(helper.make_node("Concat", [a, b], [f"{name}.out"], name=f"{name}.concat", axis=1))
    return f"{name}.out"


def main():
    out_path = sys.argv[1]
    x = conv("input", "features.0", 3, 64, 3, stride=2)
    x = maxpool(x, "features.2")
    x = fire(x, "features.3", 64, 16, 64, 64)
    x = fire(x, "features.4", 128, 16, 64, 64)
    x = maxpool(x, "features.5")
    x = fire(x, "features.6", 128, 32, 128, 128)
    x = fire(x, "features.7", 256, 32, 128, 128)
    x = maxpool(x, "features.8")
    x = fire(x, "features.9", 256, 48, 192, 192)
    x = fire(x, "features.10", 384, 48, 192, 192)
    x = fire(x, "features.11", 384, 64, 256, 256)
    x = fire(x, "features.12", 512, 64, 256, 256)
    x = conv(x, "classifier.1", 512, 1000, 1)
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="classifier.3"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["logits"], name="flatten", axis=1))
    graph = helper.make_graph(
        nodes, "squeezenet1_1",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="switchyard-demo")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, out_path)
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
