// Records what ran, where and for how long, for `run --trace` (Chrome trace JSON).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace switchyard::backends {

struct ProfileEvent {
  std::string name;      ///< node name (or copy description)
  std::string op;        ///< op type, "Copy" for copies
  std::string device;    ///< "cpu", "sim:0", "cuda:0"
  std::string category;  ///< "Node", "Session", "Copy"
  int64_t start_us = 0;  ///< since the profiler's epoch
  int64_t duration_us = 0;
  std::vector<std::string> input_shapes;
  std::vector<std::string> output_shapes;
};

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

}  // namespace switchyard::backends

namespace switchyard::backends {
/// Chrome trace JSON (opens in Perfetto / chrome://tracing) with ONNX Runtime's field names:
/// complete events ("ph":"X") with `cat` Session/Node/Copy, `args.op_name`, `args.provider`,
/// `args.input_type_shape` / `args.output_type_shape`; one track (tid) per device, named by
/// thread_name metadata events.
std::string format_chrome_trace(const std::vector<ProfileEvent>& events);
}  // namespace switchyard::backends
