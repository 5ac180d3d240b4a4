// Latency statistics for `switchyard bench`: nearest-rank percentiles, mean and extremes of a
// set of run times. Header-only so the unit test (tests/tools/bench_test.cc) reaches it without
// linking the CLI.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "require.h"

namespace switchyard::tools {

/// Summary of run times in milliseconds.
struct LatencyStats {
  size_t count = 0;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0;
  double mean_ms = 0, min_ms = 0, max_ms = 0;
};

/// The nearest-rank `percent` percentile of ascending `sorted` (non-empty, percent in 1..100):
/// the ceil(percent / 100 * n)-th smallest value. Integer arithmetic, so 90 of 100 values is
/// rank 90 exactly.
inline double nearest_rank_percentile(const std::vector<double>& sorted, int percent) {
  size_t n = sorted.size();
  size_t rank = (static_cast<size_t>(percent) * n + 99) / 100;
  return sorted[std::clamp<size_t>(rank, 1, n) - 1];
}

/// p50/p90/p99 (nearest rank), mean, min and max of `times_ms`. Throws InvalidArgument when
/// `times_ms` is empty.
inline LatencyStats summarize_latencies(std::vector<double> times_ms) {
  require(!times_ms.empty(), "no run times to summarize");
  std::sort(times_ms.begin(), times_ms.end());
  LatencyStats s;
  s.count = times_ms.size();
  s.p50_ms = nearest_rank_percentile(times_ms, 50);
  s.p90_ms = nearest_rank_percentile(times_ms, 90);
  s.p99_ms = nearest_rank_percentile(times_ms, 99);
  double sum = 0;
  for (double t : times_ms) sum += t;
  s.mean_ms = sum / static_cast<double>(s.count);
  s.min_ms = times_ms.front();
  s.max_ms = times_ms.back();
  return s;
}

}  // namespace switchyard::tools
