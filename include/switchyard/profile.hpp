// switchyard/profile.hpp — what one run reports about itself: statistics and, when asked for,
// the timed steps it ran (RunOptions.profile).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace switchyard {

/// Statistics of one run.
struct RunStats {
  size_t peak_bytes = 0;         ///< peak bytes of intermediate values, all devices together
  bool shape_cache_hit = false;  ///< prepared state for this input-shape signature was reused
  std::string shape_signature;   ///< the inputs' dtypes and shapes, as the cache keys them
  int copies = 0;                ///< values copied between devices in this run
  size_t copied_bytes = 0;
  /// Times the host waited for a GPU during the run: waits for the run's streams (before a copy
  /// leaves the device, at the run's end), each read of device data on the host (a host-driven
  /// loop's condition, a shape value a kernel had to read back) and profiling's event waits. A
  /// Loop whose condition the device computes adds none per iteration (docs/cuda.md).
  int64_t host_syncs = 0;
  /// Steps handed to a device's worker thread. A synchronous run of a plan whose steps form one
  /// chain runs them on the calling thread (0); an asynchronous run, or a plan with branches
  /// that can run at once, hands each step to its device's worker.
  int worker_handoffs = 0;
};

/// One timed step of a profiled run: a node, a copy between devices, or the whole run.
struct ProfileEvent {
  std::string name;      ///< node name (or copy description, or "model_run")
  std::string op;        ///< op type, "Copy" for copies, "run" for the whole run
  std::string device;    ///< "cpu", "sim:0", "cuda:0"
  std::string category;  ///< "Node", "Session", "Copy"
  int64_t start_us = 0;  ///< since the start of the profile
  int64_t duration_us = 0;
  std::vector<std::string> input_shapes;  ///< "1x3x224x224", "scalar", "seq[3]", "none"
  std::vector<std::string> output_shapes;
  /// Which of the device's workers ran it (0: the first): a device that runs several partitions
  /// at once (the cpu, a GPU, for runs in flight together) has a worker for each. A GPU's node
  /// events give the CUDA stream their kernels ran on instead (each run in flight has its own).
  int worker = 0;
};

}  // namespace switchyard
