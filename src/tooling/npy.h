// NumPy .npy reading and writing.
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
// Malformed input (truncated, garbage, inconsistent sizes) throws switchyard::Error with
// ErrorCode::InvalidArgument; every message names the source. The code assumes a little-endian
// host.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace switchyard::tooling {

/// Parses one .npy image (v1.0, v2.0, v3.0 headers) from memory. `what` names the source in errors.
ir::Tensor parse_npy(const uint8_t* data, size_t size, const std::string& what);

/// Serialises a tensor as .npy v1.0 (v2.0 if the header needs it), C order, little endian.
std::vector<uint8_t> serialize_npy(const ir::Tensor& t);

/// Reads one .npy file.
ir::Tensor read_npy(const std::string& path);

}  // namespace switchyard::tooling
