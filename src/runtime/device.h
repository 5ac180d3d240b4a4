// The device side of the backend seam: what a device is (DeviceInfo) and what the runtime asks
// of it while running — memory pools, copies in and out, the stream a partition's work goes to —
// and what it runs (CompiledPartition). Backends implement it (src/backends/backend.h adds the
// compiler side: supports, estimate, compile); the runtime sees only this side.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "runtime/graph_program.h"
#include "runtime/memory.h"

namespace switchyard::runtime {

/// What a device is, for discovery, placement and reports.
struct DeviceInfo {
  std::string id;    ///< "cpu", "sim:0", "cuda:1": what --device and reports use
  std::string kind;  ///< "cpu", "sim", "cuda"
  int index = 0;     ///< N of sim:N / cuda:N
  std::string name;  ///< human-readable ("simulated accelerator 0", "NVIDIA H200")
  std::string uuid;
  uint64_t memory_bytes = 0;  ///< 0 = unknown / host memory
  bool is_host = false;       ///< values here are host memory (the cpu)
  bool is_gpu = false;        ///< counts as a GPU for compute units and defaults
  /// Host code may read values in this device's memory (cpu, sim); false for GPUs, whose
  /// values leave through Device::copy_out.
  bool host_addressable = true;
  int sm_count = 0;                ///< GPUs: multiprocessors
  std::string compute_capability;  ///< GPUs: "9.0"
  /// The driver and libraries behind the device ("oneDNN 2.6.3"; a GPU's driver, runtime,
  /// cuDNN and cuBLASLt versions): part of a compile's identity (the compile cache).
  std::string software;
  std::vector<std::string> peers;  ///< GPUs: ids of devices it can access directly
  /// Partitions the device runs at the same time, each on a worker thread of its queue (the
  /// runtime's DeviceQueue); 0: one for each run in flight (the cpu; GPUs, whose streams
  /// overlap). A simulated device runs one at a time, like one accelerator queue.
  int concurrent_partitions = 0;
  // Cost-model parameters (placement estimates; not promises).
  double gflops = 50.0;            ///< sustained arithmetic rate
  double gbytes_per_s = 20.0;      ///< sustained memory bandwidth
  double copy_latency_us = 0.0;    ///< fixed cost of one transfer to/from the host
  double copy_gbytes_per_s = 0.0;  ///< transfer bandwidth to/from the host (0: no copies)
};

/// A point in a stream's queue of work (Stream::record): the work queued before it.
class Event {
 public:
  virtual ~Event() = default;
  /// Blocks the calling thread until that work is done.
  virtual void synchronize() const = 0;
};

/// A device's queue of work for one partition run (the CUDA backend's stream with its library
/// handles): kernels reach it through RunState::stream while their partition runs; nullptr on
/// devices that run on the calling thread (cpu, sim).
class Stream {
 public:
  virtual ~Stream() = default;
  /// An event marking the work queued so far.
  virtual std::unique_ptr<Event> record() = 0;
  /// Work queued here from now on waits for `event` (recorded on a stream of the same device).
  virtual void wait(const Event& event) = 0;
};

/// One run's stream of work on a device (Device::open_run_stream): the run's partitions there
/// queue their work on it one after another and return without waiting for it, so a partition
/// that reads another's results on the same device simply follows it in the stream, and the host
/// does not wait between them. The runtime runs one of a run's partitions, or one copy into or
/// out of the device, at a time, and synchronizes the stream before a copy (a value leaving the
/// device may still be being written; a block a copy takes from the run's pool may still be read
/// by queued work) and at the run's end.
class RunStream {
 public:
  /// Waits for the work queued (its errors dropped) and lets go of what it held.
  virtual ~RunStream() = default;
  /// Blocks until the work queued so far is done, then throws the first error that work found
  /// (a kernel's fault, naming its node), in the order the partitions queued it. Either way
  /// the stream is clear for more work afterwards. Returns whether there was work to wait for
  /// (a host wait, RunStats::host_syncs).
  virtual bool synchronize() = 0;
};

/// The arithmetic precision one node of the user's graph runs at in a compiled partition.
struct NodePrecision {
  std::string node;       ///< the node's name in the user's graph
  std::string precision;  ///< "fp32", "fp16", ...
};

/// Nodes of the user's graph that run as one fused kernel: `members[0]` is the node that
/// remains (its name is the fused node's), the rest were absorbed into it.
struct FusionGroup {
  std::vector<std::string> members;
};

/// A partition lowered to one device.
class CompiledPartition {
 public:
  virtual ~CompiledPartition() = default;
  /// The groups of the partition's nodes it runs as fused kernels (for the placement report).
  virtual std::vector<FusionGroup> fusions() const { return {}; }
  /// The precision each node computes at, where the device has more than one (empty: the
  /// device's one precision, not reported).
  virtual std::vector<NodePrecision> precisions() const { return {}; }
  /// Runs with inputs in Partition::inputs order (already in this device's memory); returns
  /// outputs in Partition::outputs order, in this device's memory. With `state.run_stream` set
  /// (this device's RunStream for the run) it may return with its work still queued there: its
  /// outputs are then ready for work queued on that stream after it, and for anything else once
  /// the stream's synchronize() has returned; a fault that work finds surfaces there.
  virtual std::vector<ir::Datum> run(std::vector<ir::Datum> inputs, RunState& state) const = 0;
};

/// Deep copy of a value (tensors, sequences) into `pool`'s memory (host-addressable pools).
ir::Datum copy_datum(const ir::Datum& value, HostPool& pool);
/// An uninitialised tensor of `like`'s dtype and shape in `pool`'s memory.
ir::Tensor allocate_like(const ir::Tensor& like, HostPool& pool);
/// `value` with `f` applied to its tensor or to each tensor of its sequence (other kinds as
/// they are): how a device moves a value of any kind.
ir::Datum map_tensors(const ir::Datum& value,
                      const std::function<ir::Tensor(const ir::Tensor&)>& f);

/// One device as the runtime uses it.
class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& device() const = 0;
  /// A new pool of this device's memory (one run's values, a partition's constants); its
  /// blocks are charged to `budget` when one is given (runtime::budgeted).
  virtual std::shared_ptr<HostPool> create_pool(bool poison,
                                                std::shared_ptr<MemoryBudget> budget) const = 0;
  /// Copies a value (host memory or another device's) into this device's memory, allocating
  /// from `pool` (a pool this device created).
  virtual ir::Datum copy_in(const ir::Datum& value, HostPool& pool) const = 0;
  /// Copies a value in this device's memory to host memory allocated from `host_pool` (a pool
  /// of a host-addressable device). Only devices that are not host_addressable need this.
  virtual ir::Datum copy_out(const ir::Datum& value, HostPool& host_pool) const {
    return copy_datum(value, host_pool);
  }
  /// Copies the tensor `src` (this device's memory or host memory) into `dst`, a caller's buffer
  /// in this device's memory of the same dtype and shape (RunOptions.output_buffers). The
  /// default is a host memcpy, for devices whose memory host code reads.
  virtual void copy_into(const ir::Tensor& src, const ir::Tensor& dst) const;
  /// Simulated timing: the µs a copy of `bytes` to or from this device is modelled to take (the
  /// thread that made the copy is held until then); 0 for devices that take the time they take.
  virtual double simulated_copy_us(size_t /*bytes*/) const { return 0; }
  /// A stream for one run's partitions on this device (RunStream), or nullptr (the default):
  /// partitions here finish their work before they return.
  virtual std::unique_ptr<RunStream> open_run_stream() const { return nullptr; }
  /// The tag of this device's memory on pool blocks and caller buffers (memory_space_of).
  virtual int memory_space() const = 0;
  /// Whether a tensor's storage lives in this device's memory.
  bool owns(const ir::Tensor& tensor) const { return memory_space_of(tensor) == memory_space(); }
};

/// Finds a device by its --device spelling among `devices`: "cpu", "sim:N", "cuda:N",
/// "cuda:uuid=PREFIX", "cuda:name=SUBSTRING", "cuda:most-memory". Returns its index, or throws
/// InvalidArgument listing the devices there are.
int resolve_device(const std::string& spec, const std::vector<const DeviceInfo*>& devices);
/// "cpu, sim:0 (simulated accelerator 0), cuda:0 (NVIDIA H200)": the devices for messages.
std::string device_list_text(const std::vector<const DeviceInfo*>& devices);

}  // namespace switchyard::runtime
