// The harness's skip lists, one per backend: each entry names a case ("<family>/<case name>",
// a trailing '*' matching any rest) that the backend does not run, and says why. An entry that
// matches no case fails harness_<family>'s SkipListsNameCases test, so the lists cannot go
// stale. Prefer fixing the kernel to adding an entry; an entry is a known, explained gap.
#include "harness/op_harness.h"

namespace switchyard::testing::harness {

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> families = {
      "elementwise", "reduce", "pool",           "normalization", "matmul",
      "conv",        "shape",  "gather_scatter", "image",         "stencil"};
  return families;
}

namespace {

const std::vector<SkipEntry> kCpu = {};

const std::vector<SkipEntry> kSim = {};

const std::vector<SkipEntry> kCuda = {
    {"conv/Conv/double/*",
     "the CUDA Conv kernel (cuDNN) is registered for float32, float16 and "
     "bfloat16 only; float64 convolutions run on the cpu"},
    {"conv/ConvTranspose/*",
     "no CUDA ConvTranspose kernel yet (src/backends/cuda/kernels has "
     "none); it runs on the cpu"},
};

}  // namespace

const std::vector<SkipEntry>& skip_list(const std::string& backend) {
  static const std::vector<SkipEntry> none;
  if (backend == "cpu") return kCpu;
  if (backend == "sim") return kSim;
  if (backend == "cuda") return kCuda;
  return none;
}

}  // namespace switchyard::testing::harness
