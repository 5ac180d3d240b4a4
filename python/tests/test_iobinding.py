"""IOBinding: bound host memory is read in place and bound output memory receives the results;
device binding says what it needs."""
import numpy as np
import pytest

import switchyard as ort


@pytest.fixture
def add(models):
    return ort.InferenceSession(models["add"])


def test_bind_cpu_input_and_output(add, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    binding = add.io_binding()
    binding.bind_cpu_input("X", x)
    binding.bind_cpu_input("Y", y)
    binding.bind_output("Z")
    add.run_with_iobinding(binding)
    (z,) = binding.get_outputs()
    assert isinstance(z, ort.OrtValue) and z.device_name() == "cpu"
    np.testing.assert_array_equal(z.numpy(), x + y)
    (copied,) = binding.copy_outputs_to_cpu()
    assert not np.shares_memory(copied, z.numpy())
    np.testing.assert_array_equal(copied, x + y)


def test_bind_input_pointer_is_read_in_place(add, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    binding = add.io_binding()
    binding.bind_input("X", "cpu", 0, np.float32, list(x.shape), x.ctypes.data)
    binding.bind_input("Y", "cpu", 0, np.float32, list(y.shape), y.ctypes.data)
    assert binding._inputs["X"].data_ptr == x.ctypes.data
    binding.bind_output("Z")
    x[:] = rng.standard_normal((2, 3))  # after binding: the run must see the new values
    add.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.get_outputs()[0].numpy(), x + y)


def test_bound_cpu_array_is_not_copied(add, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    binding = add.io_binding()
    binding.bind_cpu_input("X", x)
    binding.bind_ortvalue_input("Y", ort.OrtValue.ortvalue_from_numpy(y))
    binding.bind_output("Z")
    y *= 3  # the OrtValue shares y's memory
    add.run_with_iobinding(binding)
    np.testing.assert_array_equal(binding.copy_outputs_to_cpu()[0], x + y)


def test_bind_output_into_caller_memory(add, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((2, 3)).astype(np.float32)
    out = np.full((2, 3), np.nan, np.float32)
    binding = add.io_binding()
    binding.bind_cpu_input("X", x)
    binding.bind_cpu_input("Y", y)
    binding.bind_output("Z", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
    add.run_with_iobinding(binding)
    np.testing.assert_array_equal(out, x + y)
    assert binding.get_outputs()[0].data_ptr() == out.ctypes.data

    target = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    binding.clear_binding_outputs()
    binding.bind_ortvalue_output("I", target)
    add.run_with_iobinding(binding)
    np.testing.assert_array_equal(target.numpy(), x)
    assert binding.get_outputs()[0].data_ptr() == target.data_ptr()


def test_bound_output_of_the_wrong_shape_is_refused(add, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    binding = add.io_binding()
    binding.bind_cpu_input("X", x)
    binding.bind_cpu_input("Y", x)
    binding.bind_ortvalue_output("Z", ort.OrtValue.ortvalue_from_shape_and_type([3, 3], np.float32))
    with pytest.raises(ort.InvalidArgument, match=r"output 'Z'.*2x3.*3x3"):
        add.run_with_iobinding(binding)


def test_binding_errors(add, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    binding = add.io_binding()
    with pytest.raises(ort.InvalidArgument, match="no input 'W'"):
        binding.bind_cpu_input("W", x)
    with pytest.raises(ort.InvalidArgument, match="no output 'W'"):
        binding.bind_output("W")
    binding.bind_cpu_input("X", x)
    binding.bind_output("Z")
    with pytest.raises(ort.InvalidArgument, match=r"\['Y'\]"):
        add.run_with_iobinding(binding)
    binding.bind_cpu_input("Y", x)
    binding.clear_binding_outputs()
    with pytest.raises(ort.InvalidArgument, match="bind at least one output"):
        add.run_with_iobinding(binding)
    binding.clear_binding_inputs()
    binding.bind_output("Z")
    with pytest.raises(ort.InvalidArgument, match="not bound"):
        add.run_with_iobinding(binding)
    with pytest.raises(ort.InvalidArgument, match="device_type"):
        binding.bind_output("Z", "tpu")
    with pytest.raises(ort.InvalidArgument, match="null"):
        binding.bind_input("X", "cpu", 0, np.float32, [2, 3], 0)
    binding.synchronize_inputs()
    binding.synchronize_outputs()


def test_memory_of_a_device_the_session_lacks_is_refused(add, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    binding = add.io_binding()
    binding.bind_input("X", "cuda", 7, np.float32, [2, 3], x.ctypes.data)
    binding.bind_cpu_input("Y", x)
    binding.bind_output("Z")
    with pytest.raises(ort.InvalidArgument, match="input 'X'.*cuda:7.*no such device"):
        add.run_with_iobinding(binding)
    binding.bind_cpu_input("X", x)
    binding.bind_output("Z", "sim", 0)
    with pytest.raises(ort.InvalidArgument, match="sim:0"):
        add.run_with_iobinding(binding)


def test_ortvalue_basics(rng):
    x = rng.standard_normal((3, 2)).astype(np.float32)
    v = ort.OrtValue.ortvalue_from_numpy(x)
    assert v.data_ptr() == x.ctypes.data and v.shape() == [3, 2]
    assert v.data_type() == "tensor(float)" and v.element_type() is np.float32
    assert np.shares_memory(v.numpy(), x)
    v.update_inplace(np.ones((3, 2), np.float32) * 2)
    np.testing.assert_array_equal(x, 2)
    with pytest.raises(ort.InvalidArgument):
        v.update_inplace(np.ones((2, 2), np.float32))
    z = ort.OrtValue.ortvalue_from_shape_and_type((4,), np.int64)
    assert z.data_type() == "tensor(int64)" and (z.numpy() == 0).all()
    s = ort.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"], dtype=object))
    assert s.data_type() == "tensor(string)" and list(s.numpy()) == ["a", "bc"]
    with pytest.raises(TypeError):
        ort.OrtValue.ortvalue_from_numpy([1, 2])
