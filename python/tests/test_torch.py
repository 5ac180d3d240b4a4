"""switchyard.torch.compile against eager torch: exported once, run at every shape the dynamic
axes allow, within the project's fp32 tolerance (max abs error <= 1e-4 x max|ref|)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import switchyard as ort  # noqa: E402
import switchyard.torch  # noqa: E402

TOLERANCE = 1e-4


def check_close(what, got, want):
    assert isinstance(got, torch.Tensor) and got.shape == want.shape, what
    scale = want.abs().max().item()
    error = (got.double() - want.double()).abs().max().item()
    assert error <= TOLERANCE * scale, f"{what}: max abs error {error}, max |ref| {scale}"


@pytest.fixture
def count_exports(monkeypatch):
    calls = []
    export = torch.onnx.export

    def counting(*args, **kwargs):
        calls.append(1)
        return export(*args, **kwargs)

    monkeypatch.setattr(torch.onnx, "export", counting)
    return calls


def test_resnet18_batch_1_and_2(count_exports):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    compiled = switchyard.torch.compile(model, torch.randn(1, 3, 224, 224),
                                        dynamic_axes={"input_0": {0: "batch"}}, num_threads=2)
    assert compiled.session.get_inputs()[0].shape == ["batch", 3, 224, 224]
    for batch in (1, 2):
        x = torch.randn(batch, 3, 224, 224)
        with torch.no_grad():
            want = model(x)
        check_close(f"resnet18 batch {batch}", compiled(x), want)
    assert len(count_exports) == 1 and compiled.exports == 1


def test_transformer_encoder_dynamic_sequence(count_exports):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                             dropout=0.0)
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    compiled = switchyard.torch.compile(model, torch.randn(10, 2, 64),
                                        dynamic_axes={0: {0: "seq", 1: "batch"}})
    for seq, batch in ((10, 2), (17, 2), (5, 3)):
        x = torch.randn(seq, batch, 64)
        with torch.no_grad():
            want = model(x)
        check_close(f"transformer seq {seq} batch {batch}", compiled(x), want)
    assert len(count_exports) == 1


class TwoOutputs(torch.nn.Module):
    def forward(self, x, mask):
        return x * 2, ~mask


def test_several_inputs_and_outputs_and_bool():
    compiled = switchyard.torch.compile(TwoOutputs(), (torch.randn(3), torch.tensor([True] * 3)),
                                        dynamic_axes={"input_0": [0], "input_1": [0]})
    x = torch.randn(5)
    mask = torch.tensor([True, False, True, False, False])
    doubled, inverted = compiled(x, mask)
    assert torch.equal(doubled, x * 2)
    assert inverted.dtype == torch.bool and torch.equal(inverted, ~mask)
    with pytest.raises(TypeError, match="takes 2 inputs"):
        compiled(x)


def test_placement_keywords_reach_the_session(fast_sim):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    compiled = switchyard.torch.compile(model, torch.randn(2, 8), sim_config=fast_sim,
                                        device="sim:0")
    assert compiled.session.placement_summary().startswith("sim:0:")
    x = torch.randn(2, 8)
    with torch.no_grad():
        check_close("linear on sim:0", compiled(x), model(x))


def test_outputs_share_memory_with_the_run():
    model = torch.nn.Linear(4, 3).eval()
    compiled = switchyard.torch.compile(model, torch.randn(2, 4))
    outputs = compiled.session.run_with_ort_values(None, {"input_0": np.ones((2, 4), np.float32)})
    t = torch.from_dlpack(outputs[0])
    assert t.data_ptr() == outputs[0].data_ptr()
    assert isinstance(ort.OrtValue.from_dlpack(t), ort.OrtValue)
