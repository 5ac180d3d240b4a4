// Chrome trace JSON from profiler events, with ONNX Runtime's field names, one track per device
// worker.
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <string_view>

#include "tooling/trace.h"

namespace switchyard::tooling {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kProcessId = 1;

/// A recorded shape ("1x3x224x224", "scalar", "seq[3]", "none" or "" for an absent input) in
/// ORT's `{"<type>": [dims]}` form. The type is not recorded, so tensors are keyed "tensor".
Json type_shape(std::string_view text) {
  if (text.empty() || text == "none") return {{"none", Json::array()}};
  if (text == "scalar") return {{"tensor", Json::array()}};
  if (text.starts_with("seq[") && text.ends_with("]")) {
    std::string_view count = text.substr(4, text.size() - 5);
    int64_t length = 0;
    auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), length);
    if (error == std::errc() && end == count.data() + count.size())
      return {{"sequence", Json::array({length})}};
  }
  Json dims = Json::array();
  size_t start = 0;
  while (start <= text.size()) {
    size_t x = text.find('x', start);
    if (x == std::string_view::npos) x = text.size();
    std::string_view piece = text.substr(start, x - start);
    int64_t dim = 0;
    auto [end, error] = std::from_chars(piece.data(), piece.data() + piece.size(), dim);
    if (piece.empty() || error != std::errc() || end != piece.data() + piece.size())
      return {{"text", std::string(text)}};
    dims.push_back(dim);
    start = x + 1;
  }
  return {{"tensor", std::move(dims)}};
}

Json type_shapes(const std::vector<std::string>& shapes) {
  Json out = Json::array();
  for (const std::string& shape : shapes) out.push_back(type_shape(shape));
  return out;
}

Json metadata(const char* name, int tid, Json args) {
  Json event = {{"name", name}, {"ph", "M"}, {"pid", kProcessId}};
  if (tid > 0) event["tid"] = tid;
  event["args"] = std::move(args);
  return event;
}

}  // namespace

std::string format_chrome_trace(const std::vector<ProfileEvent>& events) {
  // One track per device worker, numbered from 1 in order of first appearance, so a trace reads
  // top-down in the order the devices came into play; work that overlaps on two devices (or on
  // two workers of one) shows side by side.
  using Track = std::pair<std::string, int>;
  std::map<Track, int> track_of;
  std::vector<Track> tracks;
  for (const ProfileEvent& event : events) {
    Track track{event.device, event.worker};
    if (track_of.emplace(track, static_cast<int>(tracks.size()) + 1).second)
      tracks.push_back(track);
  }

  Json trace_events = Json::array();
  trace_events.push_back(metadata("process_name", 0, {{"name", "switchyard"}}));
  for (size_t i = 0; i < tracks.size(); ++i) {
    int tid = static_cast<int>(i) + 1;
    const auto& [device, worker] = tracks[i];
    std::string name = device.empty() ? "unknown device" : device;
    // The first worker keeps the device's name; a device's others are "cpu #2", "cpu #3", ...
    if (worker > 0) name += " #" + std::to_string(worker + 1);
    trace_events.push_back(metadata("thread_name", tid, {{"name", name}}));
    trace_events.push_back(metadata("thread_sort_index", tid, {{"sort_index", tid}}));
  }
  for (const ProfileEvent& event : events) {
    trace_events.push_back({{"name", event.name},
                            {"cat", event.category},
                            {"ph", "X"},
                            {"ts", event.start_us},
                            {"dur", event.duration_us},
                            {"pid", kProcessId},
                            {"tid", track_of.at({event.device, event.worker})},
                            {"args",
                             {{"op_name", event.op},
                              {"provider", event.device},
                              {"input_type_shape", type_shapes(event.input_shapes)},
                              {"output_type_shape", type_shapes(event.output_shapes)}}}});
  }
  // One event per line, as ONNX Runtime writes its profiles: compact yet diffable.
  std::string out = "{\"traceEvents\":[\n";
  for (size_t i = 0; i < trace_events.size(); ++i) {
    out += trace_events[i].dump();
    out += i + 1 < trace_events.size() ? ",\n" : "\n";
  }
  return out + "]}\n";
}

}  // namespace switchyard::tooling
