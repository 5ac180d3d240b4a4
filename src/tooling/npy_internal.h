// Internals shared by the .npy reader/writer (npy.cc) and the .npz archive code (npz.cc):
// little-endian byte access, error-message helpers, whole-file reads and member serialisation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/tensor.h"

namespace switchyard::tooling {

inline constexpr uint32_t kMax32 = 0xFFFFFFFFu;
inline constexpr uint16_t kMax16 = 0xFFFFu;

/// Little-endian loads.
inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline uint64_t load_u64(const uint8_t* p) {
  return static_cast<uint64_t>(load_u32(p)) | (static_cast<uint64_t>(load_u32(p + 4)) << 32);
}

/// Little-endian appends of the low 2, 4 or 8 bytes of v.
inline void put_u16(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put_u32(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

/// Replaces bytes that would garble an error message (controls, non-ASCII) and shortens it.
std::string printable(std::string_view s);

/// The bytes of the file at `path`; `what` names it in errors (InvalidArgument).
std::vector<uint8_t> read_whole_file(const std::string& path, const std::string& what);

/// serialize_npy with `what` naming the tensor in errors.
std::vector<uint8_t> serialize_npy(const ir::Tensor& t, const std::string& what);

}  // namespace switchyard::tooling
