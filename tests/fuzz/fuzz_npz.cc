// fuzz_npz: bytes -> a scratch file -> tooling::read_npz (zip, zip64, deflate, CRC) and
// tooling::read_npy (the .npy header and payload; npz members that pass their CRC reach the same
// parser).
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "tooling/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string path = switchyard::fuzz::write_scratch_file(data, size, ".npz");
  switchyard::fuzz::run_expecting_only_errors("fuzz_npz",
                                              [&] { switchyard::tooling::read_npz(path); });
  switchyard::fuzz::run_expecting_only_errors("fuzz_npz",
                                              [&] { switchyard::tooling::read_npy(path); });
  return 0;
}
