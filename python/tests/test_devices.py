"""Device-resident tensors: inputs bound in a device's memory are read there in place, outputs
bound to a device stay there, and neither is copied (RunStats). On simulated devices (sim:N,
host memory behind their own memory space) everywhere; on CUDA where a GPU exists."""
import numpy as np
import pytest

import switchyard as ort


@pytest.fixture
def on_sim(models, fast_sim):
    s = ort.InferenceSession(models["add"], sim_config=fast_sim, device="sim:0")
    assert s.placement_summary().startswith("sim:0: 2 of 2 nodes")
    return s


def test_host_inputs_are_copied_to_the_device(on_sim, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    on_sim.run(None, {"X": x, "Y": x})
    assert on_sim.last_run_stats()["copies"] >= 3  # X and Y in, the results out


def test_device_resident_inputs_and_outputs_copy_nothing(on_sim, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    x_sim = ort.OrtValue.ortvalue_from_numpy(x, "sim", 0)
    y_sim = ort.OrtValue.ortvalue_from_numpy(y, "sim", 0)
    assert x_sim.device_name() == "sim" and x_sim.data_ptr() != x.ctypes.data  # a copy, as ORT
    binding = on_sim.io_binding()
    binding.bind_ortvalue_input("X", x_sim)
    binding.bind_ortvalue_input("Y", y_sim)
    binding.bind_output("Z", "sim", 0)
    binding.bind_output("I", "sim", 0)
    on_sim.run_with_iobinding(binding)
    assert on_sim.last_run_stats()["copies"] == 0
    z, i = binding.get_outputs()
    assert z.device_name() == "sim" and z.__dlpack_device__() == (12, 0)  # kDLExtDev
    assert i.data_ptr() == x_sim.data_ptr()  # Identity on the device: the same memory
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], x + y)

    # Chained: the device result feeds the next run without leaving the device.
    chained = on_sim.io_binding()
    chained.bind_ortvalue_input("X", z)
    chained.bind_ortvalue_input("Y", y_sim)
    chained.bind_output("Z", "sim", 0)
    on_sim.run_with_iobinding(chained)
    assert on_sim.last_run_stats()["copies"] == 0
    np.testing.assert_allclose(chained.copy_outputs_to_cpu()[0], x + 2 * y, rtol=1e-6)


def test_a_bound_device_pointer_is_read_in_place(on_sim, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)  # a simulated device's memory is host's
    y = rng.standard_normal((2, 3)).astype(np.float32)
    out = np.full((2, 3), np.nan, np.float32)
    binding = on_sim.io_binding()
    binding.bind_input("X", "sim", 0, np.float32, [2, 3], x.ctypes.data)
    binding.bind_input("Y", "sim", 0, np.float32, [2, 3], y.ctypes.data)
    binding.bind_output("Z", "sim", 0, np.float32, [2, 3], out.ctypes.data)
    x += 1  # after binding
    on_sim.run_with_iobinding(binding)
    np.testing.assert_array_equal(out, x + y)
    assert binding.get_outputs()[0].data_ptr() == out.ctypes.data


def test_outputs_on_the_host_and_the_device_at_once_are_refused(on_sim, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    binding = on_sim.io_binding()
    binding.bind_cpu_input("X", x)
    binding.bind_cpu_input("Y", x)
    binding.bind_output("Z", "sim", 0)
    binding.bind_output("I", "cpu")
    with pytest.raises(ort.InvalidArgument, match="several devices"):
        on_sim.run_with_iobinding(binding)


torch = pytest.importorskip("torch")
needs_gpu = pytest.mark.skipif("CUDAExecutionProvider" not in ort.get_available_providers(),
                               reason="no CUDA device (the CUDA backend did not load or found "
                                      "no GPU)")


@needs_gpu
def test_torch_cuda_tensors_in_and_out_copy_nothing(models, rng):
    # Pinned: the island rule would move so small a model to the cpu.
    s = ort.InferenceSession(models["wide"], providers=["CUDAExecutionProvider",
                                                        "CPUExecutionProvider"],
                             pins=["*=cuda:0"])
    assert s.placement_summary().startswith("cuda:0: 3 of 3 nodes"), s.explain()
    w1, w2 = models["wide_weights"]
    x = torch.from_numpy(rng.standard_normal((64, 256)).astype(np.float32)).cuda()
    v = ort.OrtValue.from_dlpack(x)
    assert v.device_name() == "cuda" and v.data_ptr() == x.data_ptr()
    binding = s.io_binding()
    binding.bind_ortvalue_input("X", v)
    binding.bind_output("Y", "cuda", 0)
    s.run_with_iobinding(binding)
    assert s.last_run_stats()["copies"] == 0, (s.last_run_stats(), s.explain())
    (y,) = binding.get_outputs()
    assert y.device_name() == "cuda"
    t = torch.from_dlpack(y)
    assert t.is_cuda and t.data_ptr() == y.data_ptr()
    want = np.maximum(x.cpu().numpy() @ w1, 0) @ w2
    scale = np.abs(want).max()
    assert np.abs(t.cpu().numpy() - want).max() <= 1e-4 * scale
    assert np.abs(binding.copy_outputs_to_cpu()[0] - want).max() <= 1e-4 * scale
    s.run(None, {"X": x.cpu().numpy()})  # host memory in: copied in, and the result out
    assert s.last_run_stats()["copies"] == 2


@needs_gpu
@pytest.mark.parametrize("side_stream", [False, True])
def test_a_run_starts_after_torchs_queued_work(models, rng, side_stream):
    s = ort.InferenceSession(models["wide"], providers=["CUDAExecutionProvider"],
                             pins=["*=cuda:0"])
    w1, w2 = models["wide_weights"]
    source = torch.from_numpy(rng.standard_normal((64, 256)).astype(np.float32)).cuda()
    x = torch.zeros(64, 256, device="cuda")
    torch.cuda.synchronize()
    # torch's default (legacy) stream, or a stream of its own made current.
    with torch.cuda.stream(torch.cuda.Stream() if side_stream else torch.cuda.default_stream()):
        torch.cuda._sleep(200_000_000)  # the GPU spins on torch's stream, then writes x
        x.copy_(source)
        (y,) = s.run(None, {"X": x})  # not synchronized by the caller
    want = np.maximum(source.cpu().numpy() @ w1, 0) @ w2
    assert np.abs(y - want).max() <= 1e-4 * np.abs(want).max()


@needs_gpu
def test_ortvalues_made_for_cuda(models, rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    v = ort.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
    assert v.device_name() == "cuda" and v.shape() == [3, 4]
    np.testing.assert_array_equal(v.numpy(), x)  # numpy() copies a GPU's memory back
    empty = ort.OrtValue.ortvalue_from_shape_and_type([3, 5], np.float32, "cuda", 0)
    s = ort.InferenceSession(models["dense"], providers=["CUDAExecutionProvider"])
    binding = s.io_binding()
    binding.bind_ortvalue_input("X", v)
    binding.bind_ortvalue_output("Y", empty)
    s.run_with_iobinding(binding)
    w, b, _ = models["dense_weights"]
    np.testing.assert_allclose(empty.numpy(), np.maximum(x @ w + b, 0), rtol=1e-4, atol=1e-5)


@needs_gpu
def test_torch_bridge_on_cuda():
    import switchyard.torch
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU()).eval()
    compiled = switchyard.torch.compile(model, torch.randn(4, 16),
                                        providers=["CUDAExecutionProvider"], pins=["*=cuda:0"])
    assert compiled.session.placement_summary().startswith("cuda:0")
    x = torch.randn(4, 16).cuda()
    y = compiled(x)
    assert y.is_cuda
    assert compiled.session.last_run_stats()["copies"] == 0
    with torch.no_grad():
        want = model(x.cpu())
    assert (y.cpu() - want).abs().max().item() <= 1e-4 * want.abs().max().item()


@needs_gpu
def test_resnet18_on_cuda_matches_eager_torch():
    torchvision = pytest.importorskip("torchvision")
    import switchyard.torch
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    compiled = switchyard.torch.compile(model, torch.randn(1, 3, 224, 224),
                                        dynamic_axes={0: {0: "batch"}},
                                        providers=["CUDAExecutionProvider"])
    assert compiled.session.placement_summary().startswith("cuda:0")
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        want = model(x)
    got = compiled(x.cuda()).cpu()
    assert (got - want).abs().max().item() <= 1e-4 * want.abs().max().item()
