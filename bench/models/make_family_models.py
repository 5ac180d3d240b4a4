"""Export test models of the architecture families beyond the five reference models.

Seeded random weights, no downloads; the same output format as
../shared/reference/make_models.py (beside the repo), so ort_bench.js (REFERENCE_MODELS=<this folder>) and
`switchyard bench --inputs <name>.ref.npz` run them unchanged.

Run with Debian's interpreter (python3-torch 1.13, python3-torchvision 0.14, python3-onnx 1.12):

    /usr/bin/python3 bench/models/make_family_models.py               # all models
    /usr/bin/python3 bench/models/make_family_models.py lstm_tagger   # a subset

Writes, under $FAMILY_MODELS (default <repo>/build/family_models):
    <name>.onnx         the model (fp32 weights unless quantized; batch dim symbolic)
    <name>.ref.npz      'in.<input>' arrays and 'out.<output>' = torch eager output (numpy for
                        quant_segmenter)
    <name>.ref/         the same arrays as plain .npy files (ort_bench.js reads these)
    manifest.json       per model: file size, params, MACs (Conv/MatMul/Gemm from flops.py plus
                        LSTM and ConvInteger counted here), op histogram, input/output specs

Models (batch 1 in the reference; opset 17):
    lstm_tagger            Embedding(10000, 128) -> 2-layer bidirectional LSTM, hidden 256 ->
                           Linear to 32 tags. tokens i64 [batch, 64] -> tags [batch, 64, 32]
    efficientnet_b0        torchvision EfficientNet-B0 (SiLU, squeeze-excitation, depthwise).
                           input [batch, 3, 224, 224] -> logits [batch, 1000]
    deeplabv3_mobilenetv3  torchvision DeepLabV3 on MobileNetV3-Large (hardswish, dilated
                           depthwise convs, ASPP with global pooling, bilinear upsampling),
                           no aux head. input [batch, 3, 320, 320] -> out [batch, 21, 320, 320]
    audio_stream           streaming-style audio model: Conv1d(80, 128, 3) + ReLU ->
                           Conv1d(128, 128, 3) + ReLU -> LSTM(128, 192) -> Linear(192, 40).
                           mel [batch, 80, 100] -> logits [batch, 100, 40]
    text_detector          DBNet-style FPN text detector: ResNet-18 trunk (layers 1-4) ->
                           torchvision FeaturePyramidNetwork([64, 128, 256, 512], 128) -> every
                           level upsampled to 1/4 (nearest x2, x4; bilinear x8) -> concat ->
                           3x3 conv 512->64 + BN + ReLU -> 1x1 conv -> sigmoid (probability
                           and threshold maps).
                           input [batch, 3, 512, 512] -> maps [batch, 2, 128, 128]
    convnext_tiny          torchvision ConvNeXt-Tiny (7x7 depthwise, LayerNorm over channels,
                           GELU, layer scale). input [batch, 3, 224, 224] -> logits [batch, 1000]
    densenet121            torchvision DenseNet-121 (dense concatenation). 224 -> 1000 logits
    vit_b_16               torchvision ViT-B/16 (patch conv, 12 pre-LN encoder blocks,
                           nn.MultiheadAttention). 224 -> 1000 logits
    quant_segmenter        dynamically quantized segmenter built with onnx.helper: float Conv
                           3->64 + Relu, then 4 blocks of DynamicQuantizeLinear -> ConvInteger
                           (64->64 3x3; int8 weights zero point 0 in blocks 0 and 2, uint8
                           weights zero point 128 in blocks 1 and 3) -> Cast -> Mul by
                           x_scale * per-channel w_scale -> Add bias -> Relu, then a float 1x1
                           Conv 64->2. input [batch, 3, 256, 256] -> logits [batch, 2, 256, 256].
                           The reference is computed in numpy, exactly per the ONNX spec
                           (integer convolution in int64); the input and the first conv's
                           weights lie on dyadic grids so that conv is exact in float32 in any
                           summation order (see _quant_weights). Every block's input follows a Relu,
                           so the activation zero point is always 0; only the uint8 weights
                           exercise a nonzero zero point.

Weight choices that differ from the constructors' defaults, for a meaningful numeric check:
conv/linear biases, LayerNorm affine parameters, ViT's class token and head get small random
values (zero or one everywhere would hide those paths and lets the exporter de-duplicate equal
initializers); ConvNeXt's layer scale (1e-6 at init, which makes every block an identity in
practice) is drawn from U(0.1, 1); BatchNorm statistics are calibrated on seeded random images
(make_models.py's helper).
"""
import argparse
import inspect
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODELS_DIR = os.environ.get("FAMILY_MODELS") or os.path.join(REPO, "build", "family_models")
REFERENCE = os.environ.get("SHARED_REFERENCE") or os.path.join(REPO, "..", "shared", "reference")
SEED = 1234
OPSET = 17

sys.path.insert(0, REFERENCE)
try:
    import make_models  # noqa: E402  (its BatchNorm calibration and flops.py)
    import flops  # noqa: E402
except ImportError as e:  # the reference folder is absent: export without those helpers
    print(f"note: {REFERENCE}/make_models.py not importable ({e}); "
          "BatchNorm uses default statistics, no FLOP counts", flush=True)
    make_models = flops = None


class SkipModel(Exception):
    """The model cannot be built with the installed packages."""


# --------------------------------------------------------------------------------------
# torch models
# --------------------------------------------------------------------------------------
def _torch():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    return torch, nn, F


def _randomize_affine(model):
    """Small random biases and LayerNorm affine parameters (see the module docstring)."""
    _, nn, _ = _torch()
    for mod in model.modules():
        if isinstance(mod, (nn.Conv1d, nn.Conv2d, nn.Linear)) and mod.bias is not None:
            nn.init.normal_(mod.bias, std=0.01)
        elif isinstance(mod, nn.LayerNorm) and mod.elementwise_affine:
            nn.init.normal_(mod.weight, mean=1.0, std=0.02)
            nn.init.normal_(mod.bias, std=0.02)


def _calibrate(model):
    _, nn, _ = _torch()
    has_bn = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())
    if has_bn and make_models is not None:
        make_models._calibrate_bn(model)  # 4 batches of 8 random 224x224 images
    return model.eval()


def _torchvision(ctor, module="models", **kwargs):
    import torchvision
    mod = getattr(torchvision, module) if module == "models" else getattr(torchvision.models, module)
    if not hasattr(mod, ctor):
        raise SkipModel(f"torchvision {torchvision.__version__} has no {module}.{ctor}")
    return getattr(mod, ctor)(**kwargs)


def build_lstm_tagger():
    _, nn, _ = _torch()

    class LstmTagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(10000, 128)
            self.lstm = nn.LSTM(128, 256, num_layers=2, bidirectional=True, batch_first=True)
            self.tags = nn.Linear(2 * 256, 32)

        def forward(self, tokens):
            x, _ = self.lstm(self.embed(tokens))
            return self.tags(x)

    m = LstmTagger()
    _randomize_affine(m)
    return m.eval()


def build_audio_stream():
    _, nn, F = _torch()

    class AudioStream(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv1d(80, 128, 3, padding=1)
            self.conv2 = nn.Conv1d(128, 128, 3, padding=1)
            self.lstm = nn.LSTM(128, 192, num_layers=1, batch_first=True)
            self.out = nn.Linear(192, 40)

        def forward(self, mel):
            x = F.relu(self.conv2(F.relu(self.conv1(mel))))
            x, _ = self.lstm(x.transpose(1, 2))
            return self.out(x)

    m = AudioStream()
    _randomize_affine(m)
    return m.eval()


def build_text_detector():
    torch, nn, F = _torch()
    import torchvision.ops
    from collections import OrderedDict

    if not hasattr(torchvision.ops, "FeaturePyramidNetwork"):
        raise SkipModel("torchvision.ops has no FeaturePyramidNetwork")
    trunk = _torchvision("resnet18", weights=None)

    class TextDetector(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(trunk.conv1, trunk.bn1, trunk.relu, trunk.maxpool)
            self.layers = nn.ModuleList([trunk.layer1, trunk.layer2, trunk.layer3, trunk.layer4])
            self.fpn = torchvision.ops.FeaturePyramidNetwork([64, 128, 256, 512], 128)
            self.fuse = nn.Sequential(nn.Conv2d(4 * 128, 64, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(64), nn.ReLU(inplace=True))
            self.head = nn.Conv2d(64, 2, 1)  # probability and threshold maps

        def forward(self, x):
            x = self.stem(x)
            feats = OrderedDict()
            for i, layer in enumerate(self.layers):
                x = layer(x)
                feats[f"c{i + 2}"] = x
            p2, p3, p4, p5 = self.fpn(feats).values()
            up = [p2,
                  F.interpolate(p3, scale_factor=2.0, mode="nearest"),
                  F.interpolate(p4, scale_factor=4.0, mode="nearest"),
                  F.interpolate(p5, scale_factor=8.0, mode="bilinear", align_corners=False)]
            return torch.sigmoid(self.head(self.fuse(torch.cat(up, dim=1))))

    m = TextDetector()
    _randomize_affine(m)
    return _calibrate(m)


def build_deeplabv3_mobilenetv3():
    _, nn, _ = _torch()
    net = _torchvision("deeplabv3_mobilenet_v3_large", module="segmentation",
                       weights=None, weights_backbone=None, aux_loss=False)

    class OutOnly(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)["out"]

    m = OutOnly(net)
    _randomize_affine(m)
    return _calibrate(m)


def _vision(ctor):
    def build():
        m = _torchvision(ctor, weights=None)
        _randomize_affine(m)
        return _calibrate(m)
    return build


def build_convnext_tiny():
    torch, _, _ = _torch()
    m = _torchvision("convnext_tiny", weights=None)
    _randomize_affine(m)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("layer_scale"):
                p.uniform_(0.1, 1.0)
    return m.eval()


def build_vit_b_16():
    _, nn, _ = _torch()
    m = _torchvision("vit_b_16", weights=None)
    _randomize_affine(m)
    nn.init.normal_(m.class_token, std=0.02)
    nn.init.normal_(m.heads.head.weight, std=0.02)  # zero-initialised by torchvision
    return m.eval()


def _normal(shape):
    import torch
    return lambda g: torch.randn(shape, generator=g)


def _tokens(shape, vocab):
    import torch
    return lambda g: torch.randint(0, vocab, shape, generator=g, dtype=torch.int64)


# name -> spec. inputs: name -> (dtype, shape with symbolic 'batch', generator of the batch-1
# value). 'grad_export': export with autograd on, so nn.MultiheadAttention traces its
# decomposed path instead of the fused inference kernel, which has no ONNX symbolic.
IMAGE_224 = {"input": ("float32", ["batch", 3, 224, 224], _normal([1, 3, 224, 224]))}
LOGITS = {"logits": ["batch", 1000]}
MODELS = {
    "lstm_tagger": dict(build=build_lstm_tagger,
                        inputs={"tokens": ("int64", ["batch", 64], _tokens([1, 64], 10000))},
                        outputs={"tags": ["batch", 64, 32]}),
    "efficientnet_b0": dict(build=_vision("efficientnet_b0"), inputs=IMAGE_224, outputs=LOGITS),
    "deeplabv3_mobilenetv3": dict(
        build=build_deeplabv3_mobilenetv3,
        inputs={"input": ("float32", ["batch", 3, 320, 320], _normal([1, 3, 320, 320]))},
        outputs={"out": ["batch", 21, 320, 320]}),
    "audio_stream": dict(build=build_audio_stream,
                         inputs={"mel": ("float32", ["batch", 80, 100], _normal([1, 80, 100]))},
                         outputs={"logits": ["batch", 100, 40]}),
    "text_detector": dict(
        build=build_text_detector,
        inputs={"input": ("float32", ["batch", 3, 512, 512], _normal([1, 3, 512, 512]))},
        outputs={"maps": ["batch", 2, 128, 128]}),
    "convnext_tiny": dict(build=build_convnext_tiny, inputs=IMAGE_224, outputs=LOGITS),
    "densenet121": dict(build=_vision("densenet121"), inputs=IMAGE_224, outputs=LOGITS),
    "vit_b_16": dict(build=build_vit_b_16, inputs=IMAGE_224, outputs=LOGITS, grad_export=True),
    "quant_segmenter": dict(build=None, onnx_only=True,
                            inputs={"input": ("float32", ["batch", 3, 256, 256], None)},
                            outputs={"logits": ["batch", 2, 256, 256]}),
}


def export_torch(name, spec, onnx_path):
    """Export spec's torch model to onnx_path; returns (input arrays, output array, params)."""
    torch, _, _ = _torch()
    torch.manual_seed(SEED)
    model = spec["build"]()
    g = torch.Generator().manual_seed(SEED + 2)
    feeds = {n: gen(g) for n, (_, _, gen) in spec["inputs"].items()}
    with torch.inference_mode():
        ref = model(*feeds.values())

    dyn = {n: {i: d for i, d in enumerate(shape) if isinstance(d, str)}
           for n, (_, shape, _) in spec["inputs"].items()}
    dyn.update({n: {i: d for i, d in enumerate(shape) if isinstance(d, str)}
                for n, shape in spec["outputs"].items()})
    # The TorchScript exporter, as in make_models.py (torch >= 2.9 defaults to dynamo).
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    with torch.set_grad_enabled(spec.get("grad_export", False)):
        torch.onnx.export(model, tuple(feeds.values()), onnx_path,
                          input_names=list(spec["inputs"]), output_names=list(spec["outputs"]),
                          dynamic_axes=dyn, opset_version=OPSET, do_constant_folding=True, **legacy)
    arrays = {f"in.{k}": v.numpy() for k, v in feeds.items()}
    (oname,) = spec["outputs"]
    arrays[f"out.{oname}"] = ref.numpy()
    return arrays, int(sum(p.numel() for p in model.parameters()))


# --------------------------------------------------------------------------------------
# quant_segmenter: onnx.helper graph and its exact numpy reference
# --------------------------------------------------------------------------------------
QUANT_BLOCKS = [np.int8, np.uint8, np.int8, np.uint8]  # weight dtype per block


def _quant_weights(rng):
    """All constants of quant_segmenter, by initializer name."""
    # conv0's weights and bias (and the input) lie on dyadic grids, so every partial sum is
    # exact in float32 and any summation order or FMA gives the same x0; otherwise 1-ulp
    # differences flip roundings in the first DynamicQuantizeLinear and the flips compound.
    w = {"conv0.w": (rng.integers(-16, 17, (64, 3, 3, 3)) / 64).astype(np.float32),
         "conv0.b": (rng.integers(-64, 65, 64) / 1024).astype(np.float32)}
    q_std = np.sqrt((256 ** 2 - 1) / 12)  # std of integers uniform over 256 values
    for i, dt in enumerate(QUANT_BLOCKS):
        if dt == np.int8:
            w[f"q{i}.w"] = rng.integers(-127, 128, (64, 64, 3, 3)).astype(np.int8)
            w[f"q{i}.w_zp"] = np.array(0, np.int8)
        else:
            w[f"q{i}.w"] = rng.integers(0, 256, (64, 64, 3, 3)).astype(np.uint8)
            w[f"q{i}.w_zp"] = np.array(128, np.uint8)
        # He-like effective float weights: std sqrt(2 / fan_in), a little per-channel spread.
        w[f"q{i}.w_scale"] = (np.sqrt(2 / 576) / q_std *
                              rng.uniform(0.8, 1.2, (1, 64, 1, 1))).astype(np.float32)
        w[f"q{i}.b"] = rng.normal(0, 0.05, (1, 64, 1, 1)).astype(np.float32)
    w["head.w"] = rng.normal(0, np.sqrt(1 / 64), (2, 64, 1, 1)).astype(np.float32)
    w["head.b"] = rng.normal(0, 0.1, 2).astype(np.float32)
    return w


def _quant_graph(w):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Conv", ["input", "conv0.w", "conv0.b"], ["conv0"], name="conv0",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["conv0"], ["x0"], name="relu0")]
    for i in range(len(QUANT_BLOCKS)):
        x, p = f"x{i}", f"q{i}."
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [p + "x_q", p + "x_scale", p + "x_zp"],
                             name=p + "quantize"),
            helper.make_node("ConvInteger", [p + "x_q", p + "w", p + "x_zp", p + "w_zp"],
                             [p + "acc"], name=p + "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            helper.make_node("Cast", [p + "acc"], [p + "acc_f"], name=p + "cast",
                             to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "x_scale", p + "w_scale"], [p + "scale"],
                             name=p + "scale"),
            helper.make_node("Mul", [p + "acc_f", p + "scale"], [p + "scaled"], name=p + "dequant"),
            helper.make_node("Add", [p + "scaled", p + "b"], [p + "biased"], name=p + "bias"),
            helper.make_node("Relu", [p + "biased"], [f"x{i + 1}"], name=p + "relu"),
        ]
    nodes.append(helper.make_node("Conv", [f"x{len(QUANT_BLOCKS)}", "head.w", "head.b"],
                                  ["logits"], name="head", kernel_shape=[1, 1]))
    graph = helper.make_graph(
        nodes, "quant_segmenter",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 256, 256])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2, 256, 256])],
        initializer=[numpy_helper.from_array(v, k) for k, v in w.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="make_family_models.py")
    onnx.checker.check_model(model, full_check=True)
    return model


def _conv_float(x, w, b, pad):
    """float32 NCHW convolution, stride 1, accumulated in float64 then rounded once."""
    n, c, h, wd = x.shape
    k = w.shape[2]
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((n, w.shape[0], h * wd), np.float64)
    for kh in range(k):
        for kw in range(k):
            tap = xp[:, :, kh:kh + h, kw:kw + wd].reshape(n, c, h * wd)
            out += np.einsum("oc,ncp->nop", w[:, :, kh, kw].astype(np.float64), tap)
    out += b.astype(np.float64).reshape(1, -1, 1)
    return out.reshape(n, -1, h, wd).astype(np.float32)


def dynamic_quantize_linear(x):
    """ONNX DynamicQuantizeLinear (uint8): y, y_scale, y_zero_point, in float32 throughout."""
    x = x.astype(np.float32)
    x_min = np.minimum(np.float32(0), x.min())
    x_max = np.maximum(np.float32(0), x.max())
    scale = np.float32(np.float32(x_max - x_min) / np.float32(255))
    zp = np.clip(np.rint(np.float32(0) - np.float32(x_min / scale)), 0, 255).astype(np.uint8)
    y = np.clip(np.rint(x / scale) + np.float32(zp), 0, 255).astype(np.uint8)  # rint: half-even
    return y, scale, zp


def _conv_integer(x_q, x_zp, w_q, w_zp, pad):
    """ONNX ConvInteger, stride 1: int64 sums over (x - x_zp) * (w - w_zp), returned as int32
    (padding contributes 0, i.e. pads with the zero point)."""
    n, c, h, wd = x_q.shape
    k = w_q.shape[2]
    xs = np.pad(x_q.astype(np.int64) - np.int64(x_zp), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ws = w_q.astype(np.int64) - np.int64(w_zp)
    out = np.zeros((n, w_q.shape[0], h * wd), np.int64)
    for i in range(n):
        for kh in range(k):
            for kw in range(k):
                out[i] += ws[:, :, kh, kw] @ xs[i, :, kh:kh + h, kw:kw + wd].reshape(c, h * wd)
    assert np.abs(out).max() < 2 ** 31
    return out.reshape(n, -1, h, wd).astype(np.int32)


def quant_reference(x, w):
    y = np.maximum(_conv_float(x, w["conv0.w"], w["conv0.b"], 1), np.float32(0))
    for i in range(len(QUANT_BLOCKS)):
        p = f"q{i}."
        x_q, x_scale, x_zp = dynamic_quantize_linear(y)
        acc = _conv_integer(x_q, x_zp, w[p + "w"], w[p + "w_zp"], 1)
        scale = (x_scale * w[p + "w_scale"]).astype(np.float32)
        y = np.maximum(acc.astype(np.float32) * scale + w[p + "b"], np.float32(0))
        assert y.dtype == np.float32
    return _conv_float(y, w["head.w"], w["head.b"], 0)


def export_quant_segmenter(onnx_path):
    import onnx
    rng = np.random.default_rng(SEED)
    w = _quant_weights(rng)
    onnx.save(_quant_graph(w), onnx_path)
    x = (np.random.default_rng(SEED + 2).integers(-64, 65, (1, 3, 256, 256)) / 32).astype(np.float32)
    arrays = {"in.input": x, "out.logits": quant_reference(x, w)}
    return arrays, int(sum(v.size for v in w.values()))


# --------------------------------------------------------------------------------------
def _extra_macs(model, dims):
    """MACs of LSTM and ConvInteger nodes, which flops.py does not count."""
    import onnx
    from onnx import shape_inference

    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in list(m.graph.input) + list(m.graph.output):
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param") and d.dim_param in dims:
                d.dim_value = dims[d.dim_param]
    m = shape_inference.infer_shapes(m)
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    shapes.update({t.name: list(t.dims) for t in m.graph.initializer})
    macs = {}
    for node in m.graph.node:
        if node.op_type == "LSTM":
            seq, batch, inp = shapes.get(node.input[0], [0, 0, 0])
            dirs, gates, hidden = shapes.get(node.input[2], [0, 0, 0])  # R: [dirs, 4h, h]
            macs["LSTM"] = macs.get("LSTM", 0) + seq * batch * dirs * gates * (inp + hidden)
        elif node.op_type == "ConvInteger":
            out, wsh = shapes.get(node.output[0], []), shapes.get(node.input[1], [])
            if out and wsh:
                macs["ConvInteger"] = macs.get("ConvInteger", 0) + int(
                    np.prod(out) * np.prod(wsh[1:]))
    return macs


def export(name):
    spec = MODELS[name]
    t0 = time.time()
    onnx_path = os.path.join(MODELS_DIR, f"{name}.onnx")
    if spec.get("onnx_only"):
        arrays, n_params = export_quant_segmenter(onnx_path)
    else:
        arrays, n_params = export_torch(name, spec, onnx_path)
    np.savez(os.path.join(MODELS_DIR, f"{name}.ref.npz"), **arrays)
    ref_dir = os.path.join(MODELS_DIR, f"{name}.ref")
    os.makedirs(ref_dir, exist_ok=True)
    for f in os.listdir(ref_dir):  # a stale array would be read by ort_bench.js
        os.remove(os.path.join(ref_dir, f))
    for k, v in arrays.items():
        np.save(os.path.join(ref_dir, f"{k}.npy"), np.ascontiguousarray(v))

    import onnx
    onnx.checker.check_model(onnx_path)
    m = onnx.load(onnx_path)
    dims = {"batch": 1}
    fl = flops.count(m, dims) if flops else {"macs": 0, "flops": 0, "by_op": {}, "unresolved": []}
    extra = _extra_macs(m, dims)
    macs = fl["macs"] + sum(extra.values())
    (oname,) = spec["outputs"]
    info = {
        "file": f"{name}.onnx",
        "file_bytes": os.path.getsize(onnx_path),
        "opset": OPSET,
        "params": n_params,
        "dims": dims,
        "macs": int(macs),
        "flops": int(2 * macs),
        "macs_by_op": {**fl["by_op"], **extra},
        "flops_unresolved": fl["unresolved"],
        "inputs": {k: {"dtype": d, "shape": s} for k, (d, s, _) in spec["inputs"].items()},
        "outputs": {k: {"shape": s} for k, s in spec["outputs"].items()},
        "ref_output_absmax": float(np.abs(arrays[f"out.{oname}"]).max()),
        "op_histogram": flops.op_histogram(m) if flops else {},
        "nodes": len(m.graph.node),
        "export_seconds": round(time.time() - t0, 1),
    }
    print(f"{name:22s} {info['file_bytes'] / 2**20:7.1f} MiB  {n_params / 1e6:7.2f} M params  "
          f"{macs / 1e9:7.3f} GMAC  {info['nodes']:4d} nodes  ({info['export_seconds']} s)",
          flush=True)
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"subset of {list(MODELS)}")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    args = ap.parse_args()
    names = args.names or list(MODELS)
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model {n}")
    import torch
    torch.set_num_threads(args.threads)
    os.makedirs(MODELS_DIR, exist_ok=True)
    man_path = os.path.join(MODELS_DIR, "manifest.json")
    manifest = {}
    if os.path.exists(man_path):
        with open(man_path) as f:
            manifest = json.load(f)
    for n in names:
        try:
            manifest[n] = export(n)
        except SkipModel as e:
            print(f"{n:22s} skipped: {e}", flush=True)
            continue
        with open(man_path, "w") as f:
            json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
