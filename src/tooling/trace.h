// A profiled run's events as a Chrome trace (`run --trace`, RunOptions.profile).
#pragma once

#include <string>
#include <vector>

#include "switchyard/profile.hpp"

namespace switchyard::tooling {

/// Chrome trace JSON (opens in Perfetto / chrome://tracing) with ONNX Runtime's field names:
/// complete events ("ph":"X") with `cat` Session/Node/Copy, `args.op_name`, `args.provider`,
/// `args.input_type_shape` / `args.output_type_shape`; one track (tid) per device worker
/// (ProfileEvent::worker), named by thread_name metadata events: the device's id for its first
/// worker, "<id> #N" for its N-th.
std::string format_chrome_trace(const std::vector<ProfileEvent>& events);

}  // namespace switchyard::tooling
