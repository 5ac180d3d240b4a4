// GPU test helpers: run an OpCase (tests/support/op_test_util.h) on cuda:0 through the real
// pipeline (placement with fallback=strict, the CUDA partition, copies in and out) and compare
// with the CPU backend. Where no CUDA device is usable the tests skip with one clear line.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/op_test_util.h"

namespace switchyard::testing {

/// "" when cuda:0 is usable, else why not ("the CUDA backend did not load: ...").
std::string gpu_unavailable_reason();

/// Runs the op alone on cuda:0 (strict placement: throws PlacementFailed when the CUDA backend
/// does not claim the node) at `precision` ("fp32", "tf32", "fp16", "bf16"); outputs on the host.
std::vector<ir::Datum> run_op_gpu(const OpCase& c, const std::string& precision = "fp32");

/// Runs the op on the cpu and on cuda:0 and expects every output equal within
/// |gpu - cpu| <= atol + rtol * |cpu| (integer and bool outputs: exactly).
void expect_gpu_matches_cpu(const OpCase& c, double rtol = 1e-5, double atol = 1e-6,
                            const std::string& precision = "fp32");

}  // namespace switchyard::testing

/// First statement of every GPU test.
#define SY_SKIP_WITHOUT_GPU()                                                       \
  do {                                                                              \
    std::string sy_why_ = ::switchyard::testing::gpu_unavailable_reason();          \
    if (!sy_why_.empty()) GTEST_SKIP() << "no GPU, CUDA test skipped: " << sy_why_; \
  } while (0)
