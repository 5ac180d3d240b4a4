// NumPy .npy / .npz reading and writing.
//
// Supported numpy dtypes: '<f2' (float16), '<f4', '<f8', '|b1', '|i1', '|u1', '<i2', '<u2', '<i4',
// '<u4', '<i8', '<u8', fixed-width unicode '<U{n}' (UTF-32, read into and written from String
// tensors holding UTF-8; trailing NULs are dropped as numpy does) and, on read only, byte strings
// '|S{n}' (into String tensors). Big-endian ('>') arrays are byte-swapped and fortran_order arrays
// are transposed to C order on read. Object arrays ('|O', Python pickles), complex, datetime and
// structured dtypes are refused with ErrorCode::Unsupported.
//
// bfloat16 has no numpy dtype: bfloat16 tensors are written as float32 ('<f4'), which is exact, so
// they read back as Float32 tensors with the same values.
//
// Malformed input (truncated, garbage, inconsistent sizes, CRC mismatch) throws switchyard::Error
// with ErrorCode::InvalidArgument; every message names the file and, for archives, the member.
// The code assumes a little-endian host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"

namespace switchyard::io {

/// Parses one .npy image (v1.0, v2.0, v3.0 headers) from memory. `what` names the source in errors.
ir::Tensor parse_npy(const uint8_t* data, size_t size, const std::string& what);

/// Serialises a tensor as .npy v1.0 (v2.0 if the header needs it), C order, little endian.
std::vector<uint8_t> serialize_npy(const ir::Tensor& t);

/// Reads one .npy file.
ir::Tensor read_npy(const std::string& path);

/// Reads every array of an .npz archive; key = member name without the ".npy" suffix.
/// Supports stored and deflate members (zlib, raw inflate), zip64 (numpy's savez writes zip64
/// extra fields), data descriptors. Directory entries and members not ending in ".npy" are
/// skipped (numpy.load does not treat them as arrays either). CRC32 is verified.
std::map<std::string, ir::Tensor> read_npz(const std::string& path);

/// Writes an .npz (stored, no compression) that numpy.load reads; keeps the given order.
/// Member names are key + ".npy"; keys must be unique. Uses zip64 records only when needed.
void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, ir::Tensor>>& arrays);

}  // namespace switchyard::io
