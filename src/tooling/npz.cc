#include "tooling/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "ir/check.h"
#include "tooling/npy_internal.h"

namespace switchyard::tooling {

using ir::Tensor;

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint16_t kDosDate1980 = 0x0021;  // 1980-01-01, the earliest DOS date

uint32_t crc32_of(const uint8_t* p, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

struct ZipEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t local_offset = 0;
};

std::vector<ZipEntry> read_central_directory(const std::vector<uint8_t>& buf,
                                             const std::string& what) {
  const size_t n = buf.size();
  const uint8_t* b = buf.data();
  SY_CHECK(n >= 22, InvalidArgument, "{}: not a zip archive ({} bytes)", what, n);

  // End of central directory record: last 22 bytes plus a comment of up to 64 KiB.
  const size_t lowest = n - 22 > kMax16 ? n - 22 - kMax16 : 0;
  size_t eocd = std::numeric_limits<size_t>::max();
  for (size_t p = n - 22 + 1; p-- > lowest;) {
    if (load_u32(b + p) == kEndSig && load_u16(b + p + 20) <= n - 22 - p) {
      eocd = p;
      break;
    }
  }
  SY_CHECK(eocd != std::numeric_limits<size_t>::max(), InvalidArgument,
           "{}: not a zip archive (no end of central directory record)", what);
  uint64_t disk = load_u16(b + eocd + 4);
  uint64_t cd_disk = load_u16(b + eocd + 6);
  uint64_t entries = load_u16(b + eocd + 10);
  uint64_t cd_size = load_u32(b + eocd + 12);
  uint64_t cd_offset = load_u32(b + eocd + 16);
  size_t cd_limit = eocd;  // the central directory must end before this offset

  if (eocd >= 20 && load_u32(b + eocd - 20) == kZip64LocatorSig) {
    const size_t locator = eocd - 20;
    uint64_t z64 = load_u64(b + locator + 8);
    SY_CHECK(z64 <= locator && locator - z64 >= 56, InvalidArgument,
             "{}: zip64 end of central directory offset {} is out of range", what, z64);
    const uint8_t* r = b + z64;
    SY_CHECK(load_u32(r) == kZip64EndSig, InvalidArgument,
             "{}: zip64 end of central directory record is missing", what);
    disk = load_u32(r + 16);
    cd_disk = load_u32(r + 20);
    entries = load_u64(r + 32);
    cd_size = load_u64(r + 40);
    cd_offset = load_u64(r + 48);
    cd_limit = static_cast<size_t>(z64);
  }
  SY_CHECK(disk == 0 && cd_disk == 0, Unsupported, "{}: multi-disk zip archives are not supported",
           what);
  SY_CHECK(cd_offset <= cd_limit && cd_size <= cd_limit - cd_offset, InvalidArgument,
           "{}: central directory ({} bytes at offset {}) lies outside the archive", what, cd_size,
           cd_offset);
  SY_CHECK(entries <= cd_size / 46, InvalidArgument,
           "{}: central directory of {} bytes cannot hold {} entries", what, cd_size, entries);

  std::vector<ZipEntry> out;
  out.reserve(static_cast<size_t>(entries));
  size_t p = static_cast<size_t>(cd_offset);
  const size_t cd_end = static_cast<size_t>(cd_offset + cd_size);
  for (uint64_t i = 0; i < entries; ++i) {
    SY_CHECK(cd_end - p >= 46 && load_u32(b + p) == kCentralSig, InvalidArgument,
             "{}: central directory entry {} is corrupt", what, i);
    ZipEntry e;
    e.flags = load_u16(b + p + 8);
    e.method = load_u16(b + p + 10);
    e.crc = load_u32(b + p + 16);
    e.compressed_size = load_u32(b + p + 20);
    e.size = load_u32(b + p + 24);
    const size_t name_len = load_u16(b + p + 28);
    const size_t extra_len = load_u16(b + p + 30);
    const size_t comment_len = load_u16(b + p + 32);
    e.local_offset = load_u32(b + p + 42);
    const size_t entry_len = 46 + name_len + extra_len + comment_len;
    SY_CHECK(entry_len <= cd_end - p, InvalidArgument,
             "{}: central directory entry {} runs past the directory", what, i);
    e.name.assign(reinterpret_cast<const char*>(b + p + 46), name_len);

    const uint8_t* q = b + p + 46 + name_len;
    const uint8_t* extra_end = q + extra_len;
    while (extra_end - q >= 4) {
      const uint16_t id = load_u16(q);
      const size_t len = load_u16(q + 2);
      SY_CHECK(len <= static_cast<size_t>(extra_end - q - 4), InvalidArgument,
               "{}: extra field of member '{}' is corrupt", what, printable(e.name));
      if (id == 0x0001) {  // zip64: only the fields whose 32-bit slot is saturated, in order
        const uint8_t* z = q + 4;
        size_t left = len;
        auto take = [&](uint64_t& v) {
          if (v != kMax32) return;
          SY_CHECK(left >= 8, InvalidArgument, "{}: zip64 extra field of member '{}' is too short",
                   what, printable(e.name));
          v = load_u64(z);
          z += 8;
          left -= 8;
        };
        take(e.size);
        take(e.compressed_size);
        take(e.local_offset);
      }
      q += 4 + len;
    }
    out.push_back(std::move(e));
    p += entry_len;
  }
  return out;
}

/// Raw-inflates `csize` bytes at `src` that must expand to exactly `size` bytes.
std::vector<uint8_t> inflate_member(const uint8_t* src, uint64_t csize, uint64_t size,
                                    const std::string& what) {
  // Deflate cannot expand by more than about 1032:1; larger claims are corrupt headers and would
  // otherwise make us allocate absurd buffers.
  SY_CHECK(size <= csize * 1032 + 1024, InvalidArgument,
           "{}: claims {} bytes from {} deflated bytes, which deflate cannot produce", what, size,
           csize);
  z_stream zs{};
  SY_CHECK(inflateInit2(&zs, -MAX_WBITS) == Z_OK, Internal, "{}: inflateInit2 failed", what);
  struct Guard {
    z_stream* zs;
    ~Guard() { inflateEnd(zs); }
  } guard{&zs};

  std::vector<uint8_t> out(static_cast<size_t>(
      std::min<uint64_t>(size, std::max<uint64_t>(csize * 4, uint64_t{1} << 16))));
  uint64_t in_left = csize;
  const uint8_t* in_ptr = src;
  size_t produced = 0;
  uint8_t scratch = 0;
  for (;;) {
    if (zs.avail_in == 0 && in_left > 0) {
      uInt chunk = static_cast<uInt>(std::min<uint64_t>(in_left, UINT_MAX));
      zs.next_in = const_cast<Bytef*>(in_ptr);
      zs.avail_in = chunk;
      in_ptr += chunk;
      in_left -= chunk;
    }
    bool overflow_probe = false;
    if (produced == out.size()) {
      if (out.size() < size) {
        out.resize(static_cast<size_t>(std::min<uint64_t>(size, uint64_t{out.size()} * 2 + 1)));
      } else {
        overflow_probe = true;  // output complete: any further byte means a lying header
      }
    }
    if (overflow_probe) {
      zs.next_out = &scratch;
      zs.avail_out = 1;
    } else {
      zs.next_out = out.data() + produced;
      zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size() - produced, UINT_MAX));
    }
    const uInt before = zs.avail_out;
    const int ret = inflate(&zs, Z_NO_FLUSH);
    const size_t got = before - zs.avail_out;
    SY_CHECK(!(overflow_probe && got > 0), InvalidArgument,
             "{}: inflates to more than the declared {} bytes", what, size);
    if (!overflow_probe) produced += got;
    if (ret == Z_STREAM_END) break;
    if (ret != Z_OK && ret != Z_BUF_ERROR) {
      SY_THROW(InvalidArgument, "{}: corrupt deflate data ({})", what,
               zs.msg != nullptr ? zs.msg : "zlib error " + std::to_string(ret));
    }
    SY_CHECK(!(ret == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0), InvalidArgument,
             "{}: deflate data is truncated", what);
  }
  SY_CHECK(produced == size, InvalidArgument, "{}: inflates to {} bytes, expected {}", what,
           produced, size);
  out.resize(produced);
  return out;
}

void write_bytes(std::ofstream& out, const std::vector<uint8_t>& bytes) {
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

std::map<std::string, Tensor> read_npz(const std::string& path) {
  const std::string what = fmt::format("npz '{}'", path);
  const std::vector<uint8_t> buf = read_whole_file(path, what);
  const std::vector<ZipEntry> entries = read_central_directory(buf, what);
  const size_t n = buf.size();
  std::map<std::string, Tensor> out;
  for (const ZipEntry& e : entries) {
    if (e.name.ends_with('/') || !e.name.ends_with(".npy")) continue;
    const std::string key = e.name.substr(0, e.name.size() - 4);
    const std::string member = fmt::format("npz '{}' member '{}'", path, key);
    SY_CHECK(!out.contains(key), InvalidArgument, "{}: duplicate member", member);
    SY_CHECK((e.flags & 1) == 0, Unsupported, "{}: encrypted members are not supported", member);
    SY_CHECK(e.method == 0 || e.method == 8, Unsupported,
             "{}: compression method {} is not supported (only stored and deflate)", member,
             e.method);
    SY_CHECK(e.local_offset <= n && n - e.local_offset >= 30 &&
                 load_u32(buf.data() + e.local_offset) == kLocalSig,
             InvalidArgument, "{}: local header at offset {} is missing or truncated", member,
             e.local_offset);
    const uint8_t* local = buf.data() + e.local_offset;
    const uint64_t data_start = e.local_offset + 30 + load_u16(local + 26) + load_u16(local + 28);
    SY_CHECK(data_start <= n && e.compressed_size <= n - data_start, InvalidArgument,
             "{}: member data ({} bytes at offset {}) runs past the end of the archive ({} bytes)",
             member, e.compressed_size, data_start, n);
    const uint8_t* src = buf.data() + data_start;

    std::vector<uint8_t> inflated;
    const uint8_t* npy = src;
    if (e.method == 8) {
      inflated = inflate_member(src, e.compressed_size, e.size, member);
      npy = inflated.data();
    } else {
      SY_CHECK(e.compressed_size == e.size, InvalidArgument,
               "{}: stored member has compressed size {} but size {}", member, e.compressed_size,
               e.size);
    }
    const size_t npy_size = static_cast<size_t>(e.size);
    const uint32_t crc = crc32_of(npy, npy_size);
    SY_CHECK(crc == e.crc, InvalidArgument, "{}: CRC32 mismatch (stored {:08x}, computed {:08x})",
             member, e.crc, crc);
    out.emplace(key, parse_npy(npy, npy_size, member));
  }
  return out;
}

void write_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays) {
  const std::string what = fmt::format("npz '{}'", path);
  std::set<std::string> seen;
  for (const auto& [key, tensor] : arrays) {
    SY_CHECK(seen.insert(key).second, InvalidArgument, "{}: duplicate array name '{}'", what, key);
    SY_CHECK(key.size() + 4 <= kMax16, InvalidArgument, "{}: array name '{}' is too long", what,
             printable(key));
  }

  struct Central {
    std::string name;
    uint16_t flags;
    uint32_t crc;
    uint64_t size;
    uint64_t offset;
  };
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  SY_CHECK(out.is_open(), InvalidArgument, "{}: cannot open for writing: {}", what,
           std::strerror(errno));
  try {
    std::vector<Central> central;
    uint64_t pos = 0;
    std::vector<uint8_t> hdr;
    for (const auto& [key, tensor] : arrays) {
      const std::vector<uint8_t> npy =
          serialize_npy(tensor, fmt::format("npz '{}' member '{}'", path, key));
      Central c{key + ".npy", 0, crc32_of(npy.data(), npy.size()), npy.size(), pos};
      if (std::any_of(c.name.begin(), c.name.end(), [](char ch) { return ch & 0x80; })) {
        c.flags = 0x0800;  // name is UTF-8
      }
      const bool zip64 = c.size >= kMax32;
      hdr.clear();
      put_u32(hdr, kLocalSig);
      put_u16(hdr, zip64 ? 45 : 20);
      put_u16(hdr, c.flags);
      put_u16(hdr, 0);  // stored
      put_u16(hdr, 0);  // time 00:00
      put_u16(hdr, kDosDate1980);
      put_u32(hdr, c.crc);
      put_u32(hdr, zip64 ? kMax32 : c.size);
      put_u32(hdr, zip64 ? kMax32 : c.size);
      put_u16(hdr, c.name.size());
      put_u16(hdr, zip64 ? 20 : 0);
      hdr.insert(hdr.end(), c.name.begin(), c.name.end());
      if (zip64) {
        put_u16(hdr, 0x0001);
        put_u16(hdr, 16);
        put_u64(hdr, c.size);
        put_u64(hdr, c.size);
      }
      write_bytes(out, hdr);
      write_bytes(out, npy);
      pos += hdr.size() + npy.size();
      central.push_back(std::move(c));
    }

    const uint64_t cd_offset = pos;
    for (const Central& c : central) {
      const bool big_size = c.size >= kMax32;
      const bool big_offset = c.offset >= kMax32;
      const size_t extra = 8 * ((big_size ? 2 : 0) + (big_offset ? 1 : 0));
      hdr.clear();
      put_u32(hdr, kCentralSig);
      put_u16(hdr, 45);  // made by: spec 4.5, MS-DOS attributes
      put_u16(hdr, extra > 0 ? 45 : 20);
      put_u16(hdr, c.flags);
      put_u16(hdr, 0);
      put_u16(hdr, 0);
      put_u16(hdr, kDosDate1980);
      put_u32(hdr, c.crc);
      put_u32(hdr, big_size ? kMax32 : c.size);
      put_u32(hdr, big_size ? kMax32 : c.size);
      put_u16(hdr, c.name.size());
      put_u16(hdr, extra > 0 ? extra + 4 : 0);
      put_u16(hdr, 0);  // comment
      put_u16(hdr, 0);  // disk
      put_u16(hdr, 0);  // internal attributes
      put_u32(hdr, 0);  // external attributes
      put_u32(hdr, big_offset ? kMax32 : c.offset);
      hdr.insert(hdr.end(), c.name.begin(), c.name.end());
      if (extra > 0) {
        put_u16(hdr, 0x0001);
        put_u16(hdr, extra);
        if (big_size) {
          put_u64(hdr, c.size);
          put_u64(hdr, c.size);
        }
        if (big_offset) put_u64(hdr, c.offset);
      }
      write_bytes(out, hdr);
      pos += hdr.size();
    }
    const uint64_t cd_size = pos - cd_offset;
    const uint64_t count = central.size();

    hdr.clear();
    if (count >= kMax16 || cd_size >= kMax32 || cd_offset >= kMax32) {
      const uint64_t z64 = pos;
      put_u32(hdr, kZip64EndSig);
      put_u64(hdr, 44);  // size of the rest of this record
      put_u16(hdr, 45);
      put_u16(hdr, 45);
      put_u32(hdr, 0);
      put_u32(hdr, 0);
      put_u64(hdr, count);
      put_u64(hdr, count);
      put_u64(hdr, cd_size);
      put_u64(hdr, cd_offset);
      put_u32(hdr, kZip64LocatorSig);
      put_u32(hdr, 0);
      put_u64(hdr, z64);
      put_u32(hdr, 1);
    }
    put_u32(hdr, kEndSig);
    put_u16(hdr, 0);
    put_u16(hdr, 0);
    put_u16(hdr, std::min<uint64_t>(count, kMax16));
    put_u16(hdr, std::min<uint64_t>(count, kMax16));
    put_u32(hdr, std::min<uint64_t>(cd_size, kMax32));
    put_u32(hdr, std::min<uint64_t>(cd_offset, kMax32));
    put_u16(hdr, 0);  // comment
    write_bytes(out, hdr);
    out.close();
    SY_CHECK(!out.fail(), InvalidArgument, "{}: write failed: {}", what, std::strerror(errno));
  } catch (...) {
    out.close();
    std::remove(path.c_str());
    throw;
  }
}

}  // namespace switchyard::tooling
