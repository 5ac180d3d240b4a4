// DeviceQueue: one device's queue of work. The partitions of every run in flight that reach a
// device wait here in the order they became ready and run on the device's own worker threads,
// so devices work at the same time: a run's independent branches on two devices, and the stages
// of successive runs of a pipeline split.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace switchyard::runtime {

/// The index of the calling thread among its device queue's workers (0 on a thread that is no
/// queue's worker): profiles put each worker on a track of its own.
int current_worker();

class DeviceQueue {
 public:
  /// A queue for `device` (its id, in thread names and errors) with at most `max_workers`
  /// threads, started as work arrives; each sets OpenMP's thread count to `omp_threads`.
  DeviceQueue(std::string device, int max_workers, int omp_threads);
  /// Lets the workers finish what is queued, then joins them. Must not run on a worker.
  ~DeviceQueue();
  DeviceQueue(const DeviceQueue&) = delete;
  DeviceQueue& operator=(const DeviceQueue&) = delete;

  /// Queues `task` (which must not throw); a worker runs it. Throws Internal naming the device
  /// when no worker exists and none can be started. When every worker is busy, waits up to
  /// kGrowAfter for one to take the task before starting another: a run's last step hands back
  /// its outputs just before its worker returns to the queue, so without the wait one run at a
  /// time would start a new worker per run, and the OpenMP teams of the idle ones (each thread
  /// that runs kernels has its own) would spin beside the busy one.
  static constexpr std::chrono::microseconds kGrowAfter{1000};
  void push(std::function<void()> task);
  int max_workers() const { return max_workers_; }
  const std::string& device() const { return device_; }

 private:
  void work(int index);
  std::string device_;
  int max_workers_;
  int omp_threads_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable taken_;  // a worker took a task (popped_ grew)
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> workers_;
  size_t idle_ = 0;                   // workers waiting for a task
  uint64_t pushed_ = 0, popped_ = 0;  // tasks queued and taken, ever
  bool stop_ = false;
};

}  // namespace switchyard::runtime
