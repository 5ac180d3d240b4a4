"""A PyTorch module compiled by Switchyard: ``switchyard.torch.compile(module, example_inputs)``.

The module is exported once with ``torch.onnx.export`` (in memory, in eval mode), compiled once,
and the returned callable takes and returns torch tensors through DLPack — no copies on the way
in or out; CUDA tensors in, CUDA tensors out — at every shape its dynamic axes allow, without
exporting again.

    model = switchyard.torch.compile(resnet, torch.randn(1, 3, 224, 224),
                                     dynamic_axes={"input_0": {0: "batch"}})
    logits = model(torch.randn(4, 3, 224, 224))
"""
import inspect
import io

import torch as _torch

from .session import InferenceSession
from .values import OrtValue

#: The opset the export uses unless told otherwise (torch 1.13 exports up to 17).
DEFAULT_OPSET = 17


class CompiledModule:
    """A compiled torch module: call it with tensors as you would the module. ``session`` is the
    InferenceSession (explain(), placement_summary()); ``exports`` counts the ONNX exports (1)."""

    def __init__(self, session, input_names, output_names, exports):
        self.session = session
        self.input_names = input_names
        self.output_names = output_names
        self.exports = exports

    def __call__(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"the compiled module takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), {len(inputs)} were given")
        feed = {}
        cuda = None
        for name, value in zip(self.input_names, inputs):
            tensor = value if isinstance(value, _torch.Tensor) else _torch.as_tensor(value)
            tensor = tensor.detach()
            if not tensor.is_contiguous():
                tensor = tensor.contiguous()
            if tensor.is_cuda:
                cuda = tensor.device
            feed[name] = OrtValue.from_dlpack(tensor)
        if cuda is None:
            outputs = self.session.run_with_ort_values(self.output_names, feed)
        else:  # GPU tensors in: the results stay on that GPU
            binding = self.session.io_binding()
            for name, value in feed.items():
                binding.bind_ortvalue_input(name, value)
            for name in self.output_names:
                binding.bind_output(name, "cuda", cuda.index or 0)
            self.session.run_with_iobinding(binding)
            outputs = binding.get_outputs()
        results = tuple(_to_torch(v) for v in outputs)
        return results[0] if len(results) == 1 else results

    def explain(self, format="text"):  # noqa: A002
        return self.session.explain(format)


def _to_torch(value):
    if value.data_type() == "tensor(bool)" and value.device_name() == "cpu":
        # torch 1.13 takes no bool tensor through DLPack; its numpy path shares memory too.
        return _torch.from_numpy(value.numpy())
    return _torch.from_dlpack(value)


def _named_axes(dynamic_axes, input_names):
    """dynamic_axes with positional keys (0, 1, ...) replaced by the input names."""
    if dynamic_axes is None:
        return None
    named = {}
    for key, axes in dynamic_axes.items():
        if isinstance(key, int):
            if not 0 <= key < len(input_names):
                raise ValueError(f"dynamic_axes: input {key} does not exist "
                                 f"({len(input_names)} inputs)")
            key = input_names[key]
        named[key] = axes
    return named


def compile(module, example_inputs, dynamic_axes=None, *, input_names=None,  # noqa: A001
            output_names=None, opset_version=DEFAULT_OPSET, **placement):
    """Exports `module` on `example_inputs` (a tensor or a tuple of tensors) and compiles it.

    dynamic_axes: as torch.onnx.export takes it ({"input_0": {0: "batch"}}); keys may also be
    input positions. Inputs are named ``input_0``, ``input_1``, ... and outputs ``output_0``, ...
    unless `input_names` / `output_names` are given. `placement`: InferenceSession's keyword
    arguments (device="sim:0", providers=[...], pins=[...], sess_options=...).
    """
    if isinstance(example_inputs, _torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    input_names = list(input_names or [f"input_{i}" for i in range(len(example_inputs))])
    if output_names is None:
        with _torch.no_grad():
            produced = module(*example_inputs)
        count = len(produced) if isinstance(produced, (tuple, list)) else 1
        output_names = [f"output_{i}" for i in range(count)]
    output_names = list(output_names)
    buffer = io.BytesIO()
    was_training = module.training
    module.eval()
    extra = {}
    if "dynamo" in inspect.signature(_torch.onnx.export).parameters:
        extra["dynamo"] = False  # torch >= 2.5: the TorchScript exporter, which dynamic_axes suits
    try:
        with _torch.no_grad():
            _torch.onnx.export(module, example_inputs, buffer, input_names=input_names,
                               output_names=output_names,
                               dynamic_axes=_named_axes(dynamic_axes, input_names),
                               opset_version=opset_version, do_constant_folding=True, **extra)
    finally:
        module.train(was_training)
    session = InferenceSession(buffer.getvalue(), **placement)
    return CompiledModule(session, input_names, output_names, exports=1)
