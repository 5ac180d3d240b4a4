#include "runtime/device_queue.h"

#include <omp.h>
#include <pthread.h>

#include <system_error>

#include "ir/check.h"

namespace switchyard::runtime {

namespace {
thread_local int worker_index = 0;
}  // namespace

int current_worker() { return worker_index; }

DeviceQueue::DeviceQueue(std::string device, int max_workers, int omp_threads)
    : device_(std::move(device)),
      max_workers_(std::max(1, max_workers)),
      omp_threads_(std::max(1, omp_threads)) {}

DeviceQueue::~DeviceQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void DeviceQueue::push(std::function<void()> task) {
  std::unique_lock<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  const uint64_t seq = ++pushed_;
  // A task no idle worker will take: start another worker while the device allows one, once
  // no busy one has come back for it within kGrowAfter (header).
  if (tasks_.size() > idle_ && !workers_.empty() &&
      workers_.size() < static_cast<size_t>(max_workers_)) {
    taken_.wait_for(lock, kGrowAfter, [&] { return popped_ >= seq || stop_; });
    if (popped_ >= seq || stop_) return;
  }
  if (tasks_.size() > idle_ && workers_.size() < static_cast<size_t>(max_workers_)) {
    try {
      workers_.emplace_back(&DeviceQueue::work, this, static_cast<int>(workers_.size()));
      return;
    } catch (const std::system_error& e) {
      if (workers_.empty()) {
        tasks_.pop_back();
        SY_THROW(Internal, "{}: cannot start a worker thread: {}", device_, e.what());
      }
      // The workers there are take it in turn.
    }
  }
  // Under the lock: once the task has run, the queue may be destroyed, and with it the
  // condition variable a notify after the unlock would still touch.
  ready_.notify_one();
}

void DeviceQueue::work(int index) {
  worker_index = index;
  // OpenMP's thread count is per thread: every kernel run here uses the executable's count.
  omp_set_num_threads(omp_threads_);
  std::string name = "sy " + device_ + (index > 0 ? "#" + std::to_string(index) : "");
  name.resize(std::min<size_t>(name.size(), 15));  // the kernel's limit
  pthread_setname_np(pthread_self(), name.c_str());
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    while (tasks_.empty() && !stop_) {
      ++idle_;
      ready_.wait(lock);
      --idle_;
    }
    if (tasks_.empty()) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    ++popped_;
    taken_.notify_all();
    lock.unlock();
    task();
    task = nullptr;  // what it holds (a run's state) is released outside the lock
    lock.lock();
  }
}

}  // namespace switchyard::runtime
