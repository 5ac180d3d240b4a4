// NumPy .npz archives: zip files of .npy members (the .npy format itself is in io/npy.h, included
// here).
//
// Malformed archives (truncated, garbage, inconsistent sizes, CRC mismatch) throw
// switchyard::Error with ErrorCode::InvalidArgument; every message names the file and the member.
// The code assumes a little-endian host.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "tooling/npy.h"

namespace switchyard::tooling {

/// Reads every array of an .npz archive; key = member name without the ".npy" suffix.
/// Supports stored and deflate members (zlib, raw inflate), zip64 (numpy's savez writes zip64
/// extra fields), data descriptors. Directory entries and members not ending in ".npy" are
/// skipped (numpy.load does not treat them as arrays either). CRC32 is verified.
std::map<std::string, ir::Tensor> read_npz(const std::string& path);

/// Writes an .npz (stored, no compression) that numpy.load reads; keeps the given order.
/// Member names are key + ".npy"; keys must be unique. Uses zip64 records only when needed.
void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, ir::Tensor>>& arrays);

}  // namespace switchyard::tooling
