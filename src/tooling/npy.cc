#include "tooling/npy.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string_view>

#include "ir/check.h"
#include "tooling/npy_internal.h"

namespace switchyard::tooling {

using ir::DType;
using ir::Tensor;

static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

namespace {

constexpr uint8_t kNpyMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kNpyAlign = 64;

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
             "{}: dtype '{}' is an object array (Python pickles), which is not supported", what,
             printable(descr));
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
    case 'c':
    case 'M':
    case 'm':
    case 'V':
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

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 48)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 48) out += "...";
  return out;
}

std::vector<uint8_t> read_whole_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  SY_CHECK(!std::filesystem::is_directory(path, ec), InvalidArgument, "{}: is a directory", what);
  std::ifstream in(path, std::ios::binary);
  SY_CHECK(in.is_open(), InvalidArgument, "{}: cannot open file: {}", what, std::strerror(errno));
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  SY_CHECK(in && end >= 0, InvalidArgument, "{}: cannot determine the file size", what);
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> buf(static_cast<size_t>(end));
  if (!buf.empty()) in.read(reinterpret_cast<char*>(buf.data()), end);
  SY_CHECK(in && in.gcount() == end, InvalidArgument, "{}: could not read the file", what);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// .npy serialisation.

std::vector<uint8_t> serialize_npy(const Tensor& t, const std::string& what) {
  SY_CHECK(t.defined(), InvalidArgument, "{}: cannot serialise an undefined tensor", what);
  const int64_t numel = t.numel();
  std::string descr;
  size_t itemsize = 0;
  size_t width = 0;  // code points per string element
  switch (t.dtype()) {
    // clang-format off
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
    // clang-format on
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
           "{}: .npy header of {} bytes runs past the end of the data ({} bytes)", what, header_len,
           size);
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
                   "{}: string element {} holds invalid code point U+{:X}", what, i, code_point(k));
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

std::vector<uint8_t> serialize_npy(const Tensor& t) { return serialize_npy(t, "serialize_npy"); }

Tensor read_npy(const std::string& path) {
  const std::string what = fmt::format("npy '{}'", path);
  const std::vector<uint8_t> buf = read_whole_file(path, what);
  return parse_npy(buf.data(), buf.size(), what);
}

}  // namespace switchyard::tooling
