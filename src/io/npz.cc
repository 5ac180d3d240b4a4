#include "io/npz.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <set>
#include <string_view>

#include "ir/check.h"

namespace switchyard::io {

using ir::DType;
using ir::Tensor;

static_assert(std::endian::native == std::endian::little, "npz I/O assumes a little-endian host");

namespace {

constexpr uint8_t kNpyMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kNpyAlign = 64;

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kMax16 = 0xFFFFu;
constexpr uint16_t kDosDate1980 = 0x0021;  // 1980-01-01, the earliest DOS date

uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t load_u64(const uint8_t* p) {
  return static_cast<uint64_t>(load_u32(p)) | (static_cast<uint64_t>(load_u32(p + 4)) << 32);
}

void put_u16(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u32(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

/// Replaces bytes that would garble an error message (controls, non-ASCII) and shortens it.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 48)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 48) out += "...";
  return out;
}

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

// ---------------------------------------------------------------------------------------------
// Unicode helpers (numpy 'U' arrays hold UTF-32 code points; String tensors hold UTF-8).

bool append_utf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return true;
}

/// Calls f(code_point) for each code point of strict UTF-8 `s`; false on invalid input.
template <typename F>
bool for_each_code_point(std::string_view s, F&& f) {
  size_t i = 0;
  while (i < s.size()) {
    uint8_t b = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    size_t len;
    uint32_t min;
    if (b < 0x80) {
      cp = b, len = 1, min = 0;
    } else if ((b & 0xE0) == 0xC0) {
      cp = b & 0x1F, len = 2, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
      cp = b & 0x0F, len = 3, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
      cp = b & 0x07, len = 4, min = 0x10000;
    } else {
      return false;
    }
    if (len > s.size() - i) return false;
    for (size_t k = 1; k < len; ++k) {
      uint8_t c = static_cast<uint8_t>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    f(cp);
    i += len;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// .npy header parsing.

enum class Kind { Numeric, Bool, Unicode, Bytes };

struct NpyType {
  DType dtype = DType::Undefined;
  Kind kind = Kind::Numeric;
  size_t itemsize = 0;  ///< bytes per element in the file
  size_t unit = 1;      ///< bytes per byte-swapped unit
  bool swap = false;    ///< big-endian data on this little-endian host
};

NpyType parse_descr(const std::string& descr, const std::string& what) {
  SY_CHECK(descr.size() >= 2, InvalidArgument, "{}: invalid dtype descr '{}'", what,
           printable(descr));
  char order = descr[0];
  char kind = descr[1];
  SY_CHECK(order == '<' || order == '>' || order == '|' || order == '=', InvalidArgument,
           "{}: invalid byte order in dtype descr '{}'", what, printable(descr));
  if (kind == 'O') {
    SY_THROW(Unsupported,
             "{}: dtype '{}' is an object array (Python pickles), which is not supported",
             what, printable(descr));
  }
  uint64_t n = 0;
  std::string_view digits = std::string_view(descr).substr(2);
  bool digits_ok = !digits.empty() && digits.size() <= 12;
  for (char c : digits) {
    if (c < '0' || c > '9') digits_ok = false;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  SY_CHECK(digits_ok, InvalidArgument, "{}: invalid dtype descr '{}'", what, printable(descr));

  NpyType t;
  auto pick = [&](std::initializer_list<std::pair<uint64_t, DType>> sizes) {
    for (auto [size, dtype] : sizes) {
      if (n == size) {
        t.dtype = dtype;
        t.itemsize = t.unit = static_cast<size_t>(size);
        return;
      }
    }
    SY_THROW(Unsupported, "{}: dtype '{}' is not supported", what, printable(descr));
  };
  switch (kind) {
    case 'f':
      pick({{2, DType::Float16}, {4, DType::Float32}, {8, DType::Float64}});
      break;
    case 'i':
      pick({{1, DType::Int8}, {2, DType::Int16}, {4, DType::Int32}, {8, DType::Int64}});
      break;
    case 'u':
      pick({{1, DType::UInt8}, {2, DType::UInt16}, {4, DType::UInt32}, {8, DType::UInt64}});
      break;
    case 'b':
      pick({{1, DType::Bool}});
      t.kind = Kind::Bool;
      break;
    case 'U':
      t.dtype = DType::String;
      t.kind = Kind::Unicode;
      t.itemsize = static_cast<size_t>(n) * 4;
      t.unit = 4;
      break;
    case 'S':
      t.dtype = DType::String;
      t.kind = Kind::Bytes;
      t.itemsize = static_cast<size_t>(n);
      t.unit = 1;
      break;
    case 'c': case 'M': case 'm': case 'V':
      SY_THROW(Unsupported, "{}: dtype '{}' is not supported", what, printable(descr));
    default:
      SY_THROW(InvalidArgument, "{}: unknown dtype descr '{}'", what, printable(descr));
  }
  t.swap = order == '>' && t.unit > 1;
  return t;
}

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

/// Parses the Python dict literal of an .npy header, e.g.
/// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& what) : text_(text), what_(what) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    for (;;) {
      skip_ws();
      if (consume('}')) break;
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr" && !have_descr) {
        if (peek() == '[') {
          SY_THROW(Unsupported, "{}: structured dtypes are not supported", what_);
        }
        h.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order" && !have_order) {
        h.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape" && !have_shape) {
        h.shape = parse_shape();
        have_shape = true;
      } else {
        fail(fmt::format("unexpected or repeated key '{}'", printable(key)));
      }
      skip_ws();
      if (!consume(',')) {
        skip_ws();
        expect('}');
        break;
      }
    }
    skip_ws();
    if (pos_ != text_.size()) fail("trailing characters after the dict");
    if (!have_descr || !have_order || !have_shape) {
      fail("missing one of the keys 'descr', 'fortran_order', 'shape'");
    }
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    SY_THROW(InvalidArgument, "{}: malformed .npy header: {} (at header offset {})", what_, msg,
             pos_);
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c)) fail(fmt::format("expected '{}'", c));
  }
  std::string parse_string() {
    char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a string");
    ++pos_;
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail("escape sequences are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return s;
  }
  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  int64_t parse_int() {
    if (peek() < '0' || peek() > '9') fail("expected a non-negative integer");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      int d = peek() - '0';
      if (v > (std::numeric_limits<int64_t>::max() - d) / 10) fail("dimension overflows int64");
      v = v * 10 + d;
      ++pos_;
    }
    consume('L');  // Python 2 long literal, written by very old numpy
    return v;
  }
  std::vector<int64_t> parse_shape() {
    expect('(');
    std::vector<int64_t> dims;
    bool trailing_comma = false;
    for (;;) {
      skip_ws();
      if (consume(')')) break;
      if (!dims.empty() && !trailing_comma) fail("expected ',' or ')' in shape");
      dims.push_back(parse_int());
      skip_ws();
      trailing_comma = consume(',');
    }
    if (dims.size() == 1 && !trailing_comma) fail("shape is not a tuple");
    return dims;
  }

  std::string_view text_;
  const std::string& what_;
  size_t pos_ = 0;
};

/// Copies a column-major tensor into a fresh row-major one with the same shape.
Tensor fortran_to_c(const Tensor& f) {
  Tensor c(f.dtype(), f.shape());
  const size_t r = static_cast<size_t>(f.rank());
  const std::vector<int64_t>& shape = f.shape();
  std::vector<int64_t> fstride(r, 1);
  for (size_t k = 1; k < r; ++k) fstride[k] = fstride[k - 1] * shape[k - 1];
  std::vector<int64_t> idx(r, 0);
  const bool strings = f.dtype() == DType::String;
  const size_t es = strings ? 0 : ir::dtype_size(f.dtype());
  const auto* src = static_cast<const uint8_t*>(f.raw());
  auto* dst = static_cast<uint8_t*>(c.raw());
  int64_t j = 0;  // source (Fortran order) index of C-order element i
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (strings) {
      c.data<std::string>()[i] = f.data<std::string>()[j];
    } else {
      std::memcpy(dst + static_cast<size_t>(i) * es, src + static_cast<size_t>(j) * es, es);
    }
    for (size_t k = r; k-- > 0;) {
      ++idx[k];
      j += fstride[k];
      if (idx[k] < shape[k]) break;
      j -= shape[k] * fstride[k];
      idx[k] = 0;
    }
  }
  return c;
}

void byte_swap(uint8_t* p, size_t bytes, size_t unit) {
  for (size_t off = 0; off + unit <= bytes; off += unit) std::reverse(p + off, p + off + unit);
}

// ---------------------------------------------------------------------------------------------
// .npy serialisation.

std::vector<uint8_t> serialize(const Tensor& t, const std::string& what) {
  SY_CHECK(t.defined(), InvalidArgument, "{}: cannot serialise an undefined tensor", what);
  const int64_t numel = t.numel();
  std::string descr;
  size_t itemsize = 0;
  size_t width = 0;  // code points per string element
  switch (t.dtype()) {
    case DType::Float32: descr = "<f4", itemsize = 4; break;
    case DType::Float64: descr = "<f8", itemsize = 8; break;
    case DType::Float16: descr = "<f2", itemsize = 2; break;
    case DType::BFloat16: descr = "<f4", itemsize = 4; break;
    case DType::Bool: descr = "|b1", itemsize = 1; break;
    case DType::Int8: descr = "|i1", itemsize = 1; break;
    case DType::UInt8: descr = "|u1", itemsize = 1; break;
    case DType::Int16: descr = "<i2", itemsize = 2; break;
    case DType::UInt16: descr = "<u2", itemsize = 2; break;
    case DType::Int32: descr = "<i4", itemsize = 4; break;
    case DType::UInt32: descr = "<u4", itemsize = 4; break;
    case DType::Int64: descr = "<i8", itemsize = 8; break;
    case DType::UInt64: descr = "<u8", itemsize = 8; break;
    case DType::String: {
      for (int64_t i = 0; i < numel; ++i) {
        size_t len = 0;
        bool ok = for_each_code_point(t.data<std::string>()[i], [&](uint32_t) { ++len; });
        SY_CHECK(ok, InvalidArgument, "{}: string element {} is not valid UTF-8", what, i);
        width = std::max(width, len);
      }
      width = std::max<size_t>(width, 1);  // numpy has no zero-width unicode arrays
      SY_CHECK(width <= std::numeric_limits<size_t>::max() / 8, InvalidArgument,
               "{}: strings are too long", what);
      descr = fmt::format("<U{}", width);
      itemsize = width * 4;
      break;
    }
    default:
      SY_THROW(Unsupported, "{}: dtype {} has no numpy equivalent", what,
               ir::dtype_name(t.dtype()));
  }
  SY_CHECK(numel >= 0 && (numel == 0 || static_cast<uint64_t>(numel) <=
                                            std::numeric_limits<size_t>::max() / 2 / itemsize),
           InvalidArgument, "{}: tensor is too large to serialise", what);
  const size_t data_bytes = static_cast<size_t>(numel) * itemsize;

  std::string shape_repr;
  if (t.rank() == 1) {
    shape_repr = fmt::format("({},)", t.dim(0));
  } else {
    shape_repr = fmt::format("({})", fmt::join(t.shape(), ", "));
  }
  std::string dict =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape_repr);
  uint8_t major = 1;
  size_t prefix = 10;
  auto padded_end = [&] {
    return (prefix + dict.size() + 1 + kNpyAlign - 1) / kNpyAlign * kNpyAlign;
  };
  if (padded_end() - prefix > kMax16) {
    major = 2;
    prefix = 12;
  }
  const size_t header_end = padded_end();
  SY_CHECK(header_end - prefix <= kMax32, InvalidArgument, "{}: .npy header is too large", what);

  std::vector<uint8_t> out;
  out.reserve(header_end + data_bytes);
  out.insert(out.end(), kNpyMagic, kNpyMagic + 6);
  out.push_back(major);
  out.push_back(0);
  if (major == 1) {
    put_u16(out, header_end - prefix);
  } else {
    put_u32(out, header_end - prefix);
  }
  out.insert(out.end(), dict.begin(), dict.end());
  out.resize(header_end - 1, ' ');
  out.push_back('\n');
  out.resize(header_end + data_bytes, 0);
  uint8_t* dst = out.data() + header_end;

  switch (t.dtype()) {
    case DType::BFloat16: {
      const auto* src = t.data<uint16_t>();
      for (int64_t i = 0; i < numel; ++i) {
        float f = ir::bfloat16_to_float(src[i]);
        std::memcpy(dst + static_cast<size_t>(i) * 4, &f, 4);
      }
      break;
    }
    case DType::Bool: {
      const auto* src = static_cast<const uint8_t*>(t.raw());
      for (int64_t i = 0; i < numel; ++i) dst[i] = src[i] != 0 ? 1 : 0;
      break;
    }
    case DType::String: {
      for (int64_t i = 0; i < numel; ++i) {
        uint8_t* p = dst + static_cast<size_t>(i) * itemsize;
        for_each_code_point(t.data<std::string>()[i], [&](uint32_t cp) {
          std::memcpy(p, &cp, 4);
          p += 4;
        });
      }
      break;
    }
    default:
      if (data_bytes > 0) std::memcpy(dst, t.raw(), data_bytes);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Files and zip archives.

std::vector<uint8_t> read_whole_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  SY_CHECK(!std::filesystem::is_directory(path, ec), InvalidArgument, "{}: is a directory",
           what);
  std::ifstream in(path, std::ios::binary);
  SY_CHECK(in.is_open(), InvalidArgument, "{}: cannot open file: {}", what,
           std::strerror(errno));
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  SY_CHECK(in && end >= 0, InvalidArgument, "{}: cannot determine the file size", what);
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> buf(static_cast<size_t>(end));
  if (!buf.empty()) in.read(reinterpret_cast<char*>(buf.data()), end);
  SY_CHECK(in && in.gcount() == end, InvalidArgument, "{}: could not read the file", what);
  return buf;
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
           "{}: central directory ({} bytes at offset {}) lies outside the archive", what,
           cd_size, cd_offset);
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

Tensor parse_npy(const uint8_t* data, size_t size, const std::string& what) {
  SY_CHECK(data != nullptr || size == 0, InvalidArgument, "{}: no data", what);
  SY_CHECK(size >= 10 && std::memcmp(data, kNpyMagic, 6) == 0, InvalidArgument,
           "{}: not a .npy file (missing magic string)", what);
  const uint8_t major = data[6];
  const uint8_t minor = data[7];
  SY_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, InvalidArgument,
           "{}: unsupported .npy format version {}.{}", what, major, minor);
  size_t prefix = 10;
  size_t header_len = load_u16(data + 8);
  if (major >= 2) {
    SY_CHECK(size >= 12, InvalidArgument, "{}: .npy header is truncated", what);
    prefix = 12;
    header_len = load_u32(data + 8);
  }
  SY_CHECK(header_len <= size - prefix, InvalidArgument,
           "{}: .npy header of {} bytes runs past the end of the data ({} bytes)", what,
           header_len, size);
  std::string_view text(reinterpret_cast<const char*>(data + prefix), header_len);
  const NpyHeader h = HeaderParser(text, what).parse();
  const NpyType type = parse_descr(h.descr, what);

  int64_t numel = 1;
  for (int64_t d : h.shape) {
    SY_CHECK(d == 0 || numel <= std::numeric_limits<int64_t>::max() / d, InvalidArgument,
             "{}: shape {} has too many elements", what, ir::shape_to_string(h.shape));
    numel *= d;
  }
  const size_t offset = prefix + header_len;
  const size_t avail = size - offset;
  if (type.itemsize == 0) {
    SY_CHECK(numel == 0, InvalidArgument, "{}: zero-width dtype '{}' with {} elements", what,
             h.descr, numel);
  } else {
    SY_CHECK(static_cast<uint64_t>(numel) <= avail / type.itemsize, InvalidArgument,
             "{}: array data is truncated: shape {} of '{}' needs {} elements of {} bytes, only "
             "{} bytes present",
             what, ir::shape_to_string(h.shape), h.descr, numel, type.itemsize, avail);
  }
  const size_t nbytes = static_cast<size_t>(numel) * type.itemsize;
  SY_CHECK(nbytes == avail, InvalidArgument, "{}: {} unexpected bytes after the array data", what,
           avail - nbytes);

  Tensor t(type.dtype, h.shape);
  const uint8_t* src = data + offset;
  switch (type.kind) {
    case Kind::Numeric:
      if (nbytes > 0) std::memcpy(t.raw(), src, nbytes);
      if (type.swap) byte_swap(static_cast<uint8_t*>(t.raw()), nbytes, type.unit);
      break;
    case Kind::Bool: {
      auto* dst = static_cast<uint8_t*>(t.raw());
      for (size_t i = 0; i < nbytes; ++i) dst[i] = src[i] != 0 ? 1 : 0;
      break;
    }
    case Kind::Unicode: {
      const size_t chars = type.itemsize / 4;
      for (int64_t i = 0; i < numel; ++i) {
        const uint8_t* e = src + static_cast<size_t>(i) * type.itemsize;
        auto code_point = [&](size_t k) {
          uint32_t cp;
          std::memcpy(&cp, e + 4 * k, 4);
          return type.swap ? __builtin_bswap32(cp) : cp;
        };
        size_t len = chars;
        while (len > 0 && code_point(len - 1) == 0) --len;
        std::string& s = t.data<std::string>()[i];
        for (size_t k = 0; k < len; ++k) {
          SY_CHECK(append_utf8(s, code_point(k)), InvalidArgument,
                   "{}: string element {} holds invalid code point U+{:X}", what, i,
                   code_point(k));
        }
      }
      break;
    }
    case Kind::Bytes: {
      for (int64_t i = 0; i < numel; ++i) {
        const char* e = reinterpret_cast<const char*>(src) + static_cast<size_t>(i) * type.itemsize;
        size_t len = type.itemsize;
        while (len > 0 && e[len - 1] == '\0') --len;
        t.data<std::string>()[i].assign(e, len);
      }
      break;
    }
  }
  if (h.fortran_order && t.rank() > 1 && numel > 1) t = fortran_to_c(t);
  return t;
}

std::vector<uint8_t> serialize_npy(const Tensor& t) { return serialize(t, "serialize_npy"); }

Tensor read_npy(const std::string& path) {
  const std::string what = fmt::format("npy '{}'", path);
  const std::vector<uint8_t> buf = read_whole_file(path, what);
  return parse_npy(buf.data(), buf.size(), what);
}

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

void write_npz(const std::string& path,
               const std::vector<std::pair<std::string, Tensor>>& arrays) {
  const std::string what = fmt::format("npz '{}'", path);
  std::set<std::string> seen;
  for (const auto& [key, tensor] : arrays) {
    SY_CHECK(seen.insert(key).second, InvalidArgument, "{}: duplicate array name '{}'", what,
             key);
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
          serialize(tensor, fmt::format("npz '{}' member '{}'", path, key));
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

}  // namespace switchyard::io
