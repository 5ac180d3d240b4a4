"""DLPack both ways: tensors come in and go out without copies (same data pointers), capsules
are consumed as the protocol says, and the memory lives as long as any side uses it."""
import ctypes
import gc
import sys
import weakref

import numpy as np
import pytest

import switchyard as ort

torch = pytest.importorskip("torch")

_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid.restype = ctypes.c_int


def test_torch_tensor_in_shares_memory(rng):
    t = torch.from_numpy(rng.standard_normal((3, 4)).astype(np.float32))
    v = ort.OrtValue.from_dlpack(t)
    assert v.data_ptr() == t.data_ptr()
    assert v.shape() == [3, 4] and v.data_type() == "tensor(float)"
    np.testing.assert_array_equal(v.numpy(), t.numpy())


def test_numpy_array_in_through_dlpack_shares_memory(rng):
    a = rng.standard_normal((5,)).astype(np.float64)
    v = ort.OrtValue.ortvalue_from_dlpack(a)
    assert v.data_ptr() == a.ctypes.data and v.data_type() == "tensor(double)"


def test_a_torch_feed_is_read_in_place(models, rng):
    s = ort.InferenceSession(models["add"])
    x = torch.from_numpy(rng.standard_normal((2, 3)).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal((2, 3)).astype(np.float32))
    binding = s.io_binding()
    binding.bind_ortvalue_input("X", ort.OrtValue.from_dlpack(x))
    binding.bind_ortvalue_input("Y", ort.OrtValue.from_dlpack(y))
    binding.bind_output("Z")
    x.mul_(-2)  # after binding: only a view of x's memory sees this
    s.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.get_outputs()[0].numpy(), (x + y).numpy())
    # run() takes torch tensors directly too.
    (z,) = s.run(["Z"], {"X": x, "Y": y})
    np.testing.assert_array_equal(z, (x + y).numpy())


def test_outputs_out_share_memory(models, rng):
    s = ort.InferenceSession(models["add"])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    (z,) = s.run_with_ort_values(["Z"], {"X": x, "Y": x})
    assert z.__dlpack_device__() == (1, 0)  # kDLCPU
    t = torch.from_dlpack(z)
    assert t.data_ptr() == z.data_ptr()
    a = np.from_dlpack(z)
    assert a.ctypes.data == z.data_ptr()
    np.testing.assert_array_equal(a, 2 * x)
    np.testing.assert_array_equal(t.numpy(), 2 * x)


def test_output_memory_outlives_the_ortvalue(models, rng):
    s = ort.InferenceSession(models["add"])
    x = rng.standard_normal((64, 3)).astype(np.float32)
    (z,) = s.run_with_ort_values(["Z"], {"X": x, "Y": x})
    t = torch.from_dlpack(z)
    del z
    gc.collect()
    for _ in range(3):  # reuse of freed memory would show here
        s.run_with_ort_values(["Z"], {"X": -x, "Y": -x})
    np.testing.assert_array_equal(t.numpy(), 2 * x)


def test_capsules_follow_the_protocol(rng):
    a = rng.standard_normal((4,)).astype(np.float32)
    v = ort.OrtValue.ortvalue_from_numpy(a)
    capsule = v.__dlpack__()
    assert _is_valid(capsule, b"dltensor")
    back = ort.OrtValue.from_dlpack(capsule)
    assert not _is_valid(capsule, b"dltensor") and _is_valid(capsule, b"used_dltensor")
    assert back.data_ptr() == a.ctypes.data
    with pytest.raises(ort.InvalidArgument, match="already consumed"):
        ort.OrtValue.from_dlpack(capsule)
    # An unconsumed capsule releases its tensor when it dies; a consumed one when its
    # consumer does.
    refs = sys.getrefcount(a)
    unconsumed = ort.OrtValue.ortvalue_from_dlpack(a).__dlpack__()
    del unconsumed
    gc.collect()
    assert sys.getrefcount(a) == refs


def test_producer_memory_is_released_with_the_value():
    t = torch.arange(10, dtype=torch.float32)
    alive = weakref.ref(t)
    v = ort.OrtValue.from_dlpack(t)
    del t
    gc.collect()
    assert alive() is not None  # the OrtValue keeps the producer's tensor
    np.testing.assert_array_equal(v.numpy(), np.arange(10, dtype=np.float32))
    del v
    gc.collect()
    assert alive() is None


def test_strided_torch_tensor_is_copied_in_order():
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()
    v = ort.OrtValue.from_dlpack(t)
    np.testing.assert_array_equal(v.numpy(), t.numpy())


def test_dtypes_round_trip_through_torch():
    for dtype in (torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int32,
                  torch.int64, torch.uint8):
        t = (torch.arange(6) - 2).to(dtype).reshape(2, 3)
        back = torch.from_dlpack(ort.OrtValue.from_dlpack(t))
        assert back.dtype == dtype and torch.equal(back, t) and back.data_ptr() == t.data_ptr()


def test_bool_tensors(models):
    s = ort.InferenceSession(models["mixed"])
    mask = torch.tensor([True, False, False])
    v = ort.OrtValue.from_dlpack(mask)
    assert v.data_type() == "tensor(bool)" and v.data_ptr() == mask.data_ptr()
    _, inverted, _ = s.run(None, {"ids": np.zeros(1, np.int64), "mask": mask,
                                  "s": np.array(1.0)})
    np.testing.assert_array_equal(inverted, [False, True, True])
