// Device-resident tensors through the public API, on a simulated device (its own memory space,
// so CI tests what CUDA does): inputs already in the memory of the partition that reads them
// are read in place, outputs can stay on the device, and RunStats counts every copy.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/dense_model.h"
#include "support/op_test_util.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

Executable on_sim(std::vector<std::string> pins = {"*=sim:0"}) {
  Options o;
  o.num_threads = 1;
  o.sim_devices = 1;
  o.device = "sim:0";
  o.pins = std::move(pins);
  return Model::from_graph(dense_graph()).compile(o);
}

// `t`'s bytes in a fresh buffer the caller owns, described as memory of `device`.
Tensor to_device(const Executable& exe, const std::string& device, const Tensor& t) {
  auto owner = std::shared_ptr<char[]>(new char[t.nbytes()]);
  std::memcpy(owner.get(), t.raw(), t.nbytes());
  return exe.wrap_device_memory(device, t.dtype(), t.shape(), owner, owner.get());
}

TEST(DeviceTensors, ResidentInputsAndOutputsOnASimulatedDeviceCopyNothing) {
  Executable exe = on_sim();
  std::vector<std::string> devices = exe.devices();  // cuda:N too on a machine with GPUs
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices.front(), "cpu");
  EXPECT_EQ(devices.back(), "sim:0");
  Tensor x = dense_inputs().at("x");
  // From host memory to host memory: in, and out again.
  RunResult host = exe.run_values({Datum(x)});
  EXPECT_EQ(host.stats.copies, 2);
  EXPECT_EQ(host.stats.copied_bytes, x.nbytes() * 2);  // y has x's shape
  EXPECT_EQ(exe.device_of(host.outputs[0].tensor), "cpu");

  RunOptions stay;
  stay.outputs_on = "sim:0";
  Tensor resident = to_device(exe, "sim:0", x);
  EXPECT_EQ(exe.device_of(resident), "sim:0");
  RunResult r = exe.run_values({Datum(resident)}, stay);
  EXPECT_EQ(r.stats.copies, 0);
  EXPECT_EQ(r.stats.copied_bytes, 0u);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(exe.device_of(r.outputs[0].tensor), "sim:0");
  EXPECT_TRUE(same_bits(r.outputs[0].tensor, host.outputs[0].tensor));
  // The input was read in place: the caller's buffer is what the device partition saw, so
  // writing it changes the next result.
  std::memset(resident.raw(), 0, resident.nbytes());
  RunResult zero = exe.run_values({Datum(resident)}, stay);
  EXPECT_EQ(zero.stats.copies, 0);
  EXPECT_FALSE(same_bits(zero.outputs[0].tensor, host.outputs[0].tensor));

  // An output left on the device feeds the next run without a copy (y has x's shape).
  RunResult chained = exe.run_values({r.outputs[0]}, stay);
  EXPECT_EQ(chained.stats.copies, 0);
  RunResult chained_host = exe.run_values({Datum(host.outputs[0].tensor)});
  EXPECT_TRUE(same_bits(chained.outputs[0].tensor, chained_host.outputs[0].tensor));
  // The map API honours outputs_on too.
  auto named = exe.run({{"x", resident}}, stay);
  EXPECT_EQ(exe.device_of(named.at("y")), "sim:0");
}

TEST(DeviceTensors, ADeviceInputReadElsewhereIsCopiedThereOnce) {
  // The Softmax runs on the cpu: y is copied back as planned; a device-resident x reaches the
  // sim partition in place. A host-resident x is copied in as before.
  Executable exe = on_sim({"matmul=sim:0", "relu=sim:0", "add=sim:0", "softmax=cpu"});
  Tensor x = dense_inputs().at("x");
  RunResult host = exe.run_values({Datum(x)});
  RunResult device = exe.run_values({Datum(to_device(exe, "sim:0", x))});
  EXPECT_EQ(device.stats.copies, host.stats.copies - 1);
  EXPECT_EQ(exe.device_of(device.outputs[0].tensor), "cpu");
  EXPECT_TRUE(same_bits(device.outputs[0].tensor, host.outputs[0].tensor));
  // All on the cpu: a sim-resident input is copied to the host where the cpu reads it.
  Executable cpu = on_sim({"*=cpu"});
  RunResult moved = cpu.run_values({Datum(to_device(cpu, "sim:0", x))});
  EXPECT_EQ(moved.stats.copies, 1);
  EXPECT_EQ(moved.stats.copied_bytes, x.nbytes());
  EXPECT_TRUE(same_bits(moved.outputs[0].tensor, host.outputs[0].tensor));
  // Outputs asked on the device are copied there from the cpu.
  RunOptions stay;
  stay.outputs_on = "sim:0";
  RunResult there = cpu.run_values({Datum(x)}, stay);
  EXPECT_EQ(there.stats.copies, 1);
  EXPECT_EQ(cpu.device_of(there.outputs[0].tensor), "sim:0");
  EXPECT_TRUE(same_bits(there.outputs[0].tensor, host.outputs[0].tensor));
}

TEST(DeviceTensors, ADeviceInputThatTheCpuOnlyMeasuresCrossesAsItsShape) {
  // y = Reshape(Relu(x), Shape(x)) with the Shape on the cpu and the rest on sim:0: a
  // device-resident x reaches the cpu step as its shape alone (no copy of its data); only the
  // shape value crosses to the device. A host x is copied in as before.
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {"n", 64});
  Value shape = b.op("Shape", {x}).at(0);
  Value y = b.op("Reshape", {b.relu(x), shape}).at(0);
  b.outputs({{"y", y}});
  const std::string shape_node = shape.name();
  Options o;
  o.num_threads = 1;
  o.sim_devices = 1;
  o.device = "sim:0";
  o.pins = {shape_node + "=cpu", "*=sim:0"};
  Executable exe = std::move(b).build().compile(o);
  Tensor host_x = random_tensor(DType::Float32, {5, 64}, 71);
  RunResult host = exe.run_values({Datum(host_x)});
  RunOptions stay;
  stay.outputs_on = "sim:0";
  RunResult device = exe.run_values({Datum(to_device(exe, "sim:0", host_x))}, stay);
  EXPECT_EQ(device.stats.copies, 1) << "the shape to sim:0 only";
  EXPECT_EQ(device.stats.copied_bytes, 2 * sizeof(int64_t));
  ASSERT_EQ(device.outputs.size(), 1u);
  EXPECT_EQ(exe.device_of(device.outputs[0].tensor), "sim:0");
  EXPECT_TRUE(same_bits(device.outputs[0].tensor, host.outputs[0].tensor));
  EXPECT_EQ(host.stats.copies, 3);  // x in, the shape in, y out
}

TEST(DeviceTensors, OutputsAreWrittenIntoCallerBuffers) {
  Executable exe = on_sim();
  Tensor x = dense_inputs().at("x");
  RunResult host = exe.run_values({Datum(x)});
  // A host buffer: the output is written into it and returned as it (one more copy).
  Tensor into(DType::Float32, {3, 64});
  RunOptions o;
  o.output_buffers = {{"y", into}};
  RunResult r = exe.run_values({Datum(x)}, o);
  EXPECT_EQ(r.outputs[0].tensor.raw(), into.raw());
  EXPECT_TRUE(same_bits(into, host.outputs[0].tensor));
  EXPECT_EQ(r.stats.copies, host.stats.copies + 1);
  // A buffer on the device, from a device-resident input: the one copy is the write into it.
  Tensor on_device = to_device(exe, "sim:0", Tensor(DType::Float32, {3, 64}));
  RunOptions d;
  d.outputs_on = "sim:0";
  d.output_buffers = {{"y", on_device}};
  RunResult rd = exe.run_values({Datum(to_device(exe, "sim:0", x))}, d);
  EXPECT_EQ(rd.stats.copies, 1);
  EXPECT_EQ(rd.stats.copied_bytes, on_device.nbytes());
  EXPECT_EQ(rd.outputs[0].tensor.raw(), on_device.raw());
  EXPECT_EQ(exe.device_of(rd.outputs[0].tensor), "sim:0");
  EXPECT_TRUE(same_bits(on_device, host.outputs[0].tensor));
  // A device buffer while the outputs go to the host: copied from the host to the device.
  RunOptions mixed;
  mixed.output_buffers = {{"y", on_device}};
  std::memset(on_device.raw(), 0, on_device.nbytes());
  exe.run_values({Datum(x)}, mixed);
  EXPECT_TRUE(same_bits(on_device, host.outputs[0].tensor));
  // Wrong buffers are errors naming the output.
  RunOptions shape;
  shape.output_buffers = {{"y", Tensor(DType::Float32, {2, 64})}};
  expect_error([&] { exe.run_values({Datum(x)}, shape); }, ErrorCode::InvalidArgument,
               "output 'y' is float 3x64; the buffer given for it is float 2x64");
  RunOptions dtype;
  dtype.output_buffers = {{"y", Tensor(DType::Int64, {3, 64})}};
  expect_error([&] { exe.run_values({Datum(x)}, dtype); }, ErrorCode::InvalidArgument,
               "output 'y' is float; the buffer given for it is int64");
  RunOptions name;
  name.output_buffers = {{"z", into}};
  expect_error([&] { exe.run_values({Datum(x)}, name); }, ErrorCode::InvalidArgument,
               "'z' is not an output of the model (its outputs: y)");
}

TEST(DeviceTensors, UnknownDevicesAreErrorsNamingThem) {
  Executable exe = on_sim();
  Tensor x = dense_inputs().at("x");
  RunOptions bad;
  bad.outputs_on = "sim:3";
  expect_error([&] { exe.run_values({Datum(x)}, bad); }, ErrorCode::InvalidArgument,
               "RunOptions.outputs_on 'sim:3'");
  expect_error([&] { to_device(exe, "cuda:7", x); }, ErrorCode::InvalidArgument,
               "wrap_device_memory 'cuda:7'");
  expect_error(
      [&] {
        exe.wrap_device_memory("sim:0", DType::Float32, {3, 64}, nullptr, nullptr);
      },
      ErrorCode::InvalidArgument, "null pointer");
  // Memory of a device another executable uses (sim:1 here) is not this one's.
  Options two;
  two.num_threads = 1;
  two.sim_devices = 2;
  two.device = "sim:1";
  two.pins = {"*=sim:1"};
  Executable other = Model::from_graph(dense_graph()).compile(two);
  Tensor foreign = to_device(other, "sim:1", x);
  EXPECT_EQ(exe.device_of(foreign), "unknown");
  expect_error([&] { exe.run_values({Datum(foreign)}); }, ErrorCode::InvalidArgument,
               "input 'x' is in the memory of a device this executable does not use");
}

}  // namespace
}  // namespace switchyard::testing
