// Shared pieces of the normalization family's CPU kernels (normalization*.cc).
#pragma once

#include "backends/cpu/kernels/common.h"

namespace switchyard::cpu {

/// Registers Softmax, LogSoftmax and Hardmax (normalization_softmax.cc).
void register_softmax_kernels(runtime::KernelRegistry& r);

/// Sum of n contiguous values in eight independent lanes (vectorizes; fixed order, so results
/// do not depend on the thread count).
template <typename C>
inline C lane_sum(const C* p, int64_t n) {
  constexpr int kLanes = 8;
  C lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += p[i + j];
  for (int j = 0; i < n; ++i, ++j) lanes[j] += p[i];
  C s = 0;
  for (C l : lanes) s += l;
  return s;
}

/// Sum of (p[i] - mean)^2 in eight independent lanes.
template <typename C>
inline C lane_sum_sq_dev(const C* p, int64_t n, C mean) {
  constexpr int kLanes = 8;
  C lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      C d = p[i + j] - mean;
      lanes[j] += d * d;
    }
  for (int j = 0; i < n; ++i, ++j) {
    C d = p[i] - mean;
    lanes[j] += d * d;
  }
  C s = 0;
  for (C l : lanes) s += l;
  return s;
}

/// The mean of n contiguous values and 1 / sqrt(variance + epsilon).
template <typename C>
struct MeanInvStd {
  C mean;
  C inv;
};

template <typename C>
inline MeanInvStd<C> mean_inv_std(const C* p, int64_t n, C epsilon) {
  C mean = lane_sum(p, n) / static_cast<C>(n);
  C var = lane_sum_sq_dev(p, n, mean) / static_cast<C>(n);
  return {mean, C(1) / std::sqrt(var + epsilon)};
}

}  // namespace switchyard::cpu
