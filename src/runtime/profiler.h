// Records what ran, where and for how long, for `run --trace` (Chrome trace JSON).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "switchyard/profile.hpp"

namespace switchyard::runtime {

using switchyard::ProfileEvent;

class Profiler {
 public:
  Profiler() : epoch_(std::chrono::steady_clock::now()) {}
  int64_t now_us() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                                 epoch_)
        .count();
  }
  void record(ProfileEvent e) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(e));
  }
  std::vector<ProfileEvent> events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }

 private:
  std::chrono::steady_clock::time_point epoch_;
  mutable std::mutex mutex_;
  std::vector<ProfileEvent> events_;
};

}  // namespace switchyard::runtime
