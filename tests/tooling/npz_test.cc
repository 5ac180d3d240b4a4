// Tests for .npy / .npz I/O: round trips of every dtype, interop with real numpy (generated at
// run time through /usr/bin/python3), hand-built zip variants (zip64, deflate, data descriptors)
// and corrupt input.
#include "tooling/npz.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "ir/check.h"

namespace switchyard::tooling {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using ir::Tensor;

constexpr DType kAllDtypes[] = {
    DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Bool,
    DType::Int8,    DType::UInt8,   DType::Int16,   DType::UInt16,   DType::Int32,
    DType::UInt32,  DType::Int64,   DType::UInt64,  DType::String,
};

// ---------------------------------------------------------------------------------------------
// Helpers.

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

uint32_t crc_of(const void* p, size_t n) {
  return static_cast<uint32_t>(crc32(0L, static_cast<const Bytef*>(p), static_cast<uInt>(n)));
}

Tensor random_tensor(DType dtype, const std::vector<int64_t>& shape, std::mt19937_64& rng) {
  static const char* const kPieces[] = {"", "a", "héllo", "日本", "🙂", "Zürich", "x y", "ß"};
  Tensor t(dtype, shape);
  std::uniform_real_distribution<double> real(-100.0, 100.0);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DType::Float32:
        t.data<float>()[i] = static_cast<float>(real(rng));
        break;
      case DType::Float64:
        t.data<double>()[i] = real(rng);
        break;
      case DType::Float16:
        t.data<uint16_t>()[i] = ir::float_to_half(static_cast<float>(real(rng)));
        break;
      case DType::BFloat16:
        t.data<uint16_t>()[i] = ir::float_to_bfloat16(static_cast<float>(real(rng)));
        break;
      case DType::Bool:
        t.data<bool>()[i] = (rng() & 1) != 0;
        break;
      case DType::String: {
        std::string s;
        for (uint64_t k = rng() % 4; k > 0; --k) s += kPieces[rng() % std::size(kPieces)];
        t.data<std::string>()[i] = s;
        break;
      }
      default: {
        uint64_t bits = rng();
        std::memcpy(static_cast<uint8_t*>(t.raw()) +
                        static_cast<size_t>(i) * t.nbytes() / static_cast<size_t>(t.numel()),
                    &bits, ir::dtype_size(dtype));
      }
    }
  }
  return t;
}

/// What a tensor reads back as after a write: bfloat16 becomes float32, all else is unchanged.
Tensor expected_after_write(const Tensor& t) {
  if (t.dtype() != DType::BFloat16) return t;
  Tensor f(DType::Float32, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    f.data<float>()[i] = ir::bfloat16_to_float(t.data<uint16_t>()[i]);
  }
  return f;
}

void expect_same(const Tensor& expected, const Tensor& actual, const std::string& name) {
  ASSERT_EQ(expected.dtype(), actual.dtype()) << name;
  ASSERT_EQ(expected.shape(), actual.shape()) << name;
  if (expected.dtype() == DType::String) {
    for (int64_t i = 0; i < expected.numel(); ++i) {
      EXPECT_EQ(expected.data<std::string>()[i], actual.data<std::string>()[i])
          << name << " element " << i;
    }
  } else if (expected.numel() > 0) {
    EXPECT_EQ(0, std::memcmp(expected.raw(), actual.raw(), expected.nbytes())) << name;
  }
}

std::string join_strings(const Tensor& t) {
  std::string s;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i > 0) s += '\x1e';
    s += t.data<std::string>()[i];
  }
  return s;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool have_numpy() {
  static const bool ok = access("/usr/bin/python3", X_OK) == 0 &&
                         std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0;
  return ok;
}

/// Runs `/usr/bin/python3 -c script args...`; returns stdout+stderr and sets *rc.
std::string run_python(const std::string& script, const std::vector<std::string>& args, int* rc) {
  std::string cmd = "PYTHONIOENCODING=utf-8 /usr/bin/python3 -c " + shell_quote(script);
  for (const std::string& a : args) cmd += " " + shell_quote(a);
  cmd += " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return "popen failed";
  }
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, got);
  *rc = pclose(pipe);
  return out;
}

#define SKIP_WITHOUT_NUMPY()                                                              \
  do {                                                                                    \
    if (!have_numpy()) {                                                                  \
      GTEST_SKIP() << "/usr/bin/python3 with numpy is not available; skipping the numpy " \
                      "interop test";                                                     \
    }                                                                                     \
  } while (0)

/// Builds a v1.0 .npy image from a raw header dict and data bytes.
std::vector<uint8_t> make_npy(const std::string& dict, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  out.push_back(static_cast<uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A small zip writer used to build the archive variants numpy does not produce on its own.
struct ZipMember {
  std::string name;
  std::vector<uint8_t> data;
};
struct ZipOptions {
  bool deflate = false;
  bool zip64 = false;       ///< zip64 extras in the central directory and a zip64 end record
  bool descriptor = false;  ///< sizes and CRC in a data descriptor after the data
};

std::vector<uint8_t> raw_deflate(const std::vector<uint8_t>& in) {
  z_stream zs{};
  EXPECT_EQ(Z_OK, deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY));
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(in.size())));
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(Z_STREAM_END, deflate(&zs, Z_FINISH));
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::vector<uint8_t> build_zip(const std::vector<ZipMember>& members, const ZipOptions& o) {
  std::vector<uint8_t> out;
  auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  struct Entry {
    uint32_t crc;
    uint64_t csize, size, offset;
  };
  std::vector<Entry> entries;
  for (const ZipMember& m : members) {
    std::vector<uint8_t> body = o.deflate ? raw_deflate(m.data) : m.data;
    Entry e{crc_of(m.data.data(), m.data.size()), body.size(), m.data.size(), out.size()};
    put(0x04034b50, 4);
    put(45, 2);
    put(o.descriptor ? 8 : 0, 2);
    put(o.deflate ? 8 : 0, 2);
    put(0, 2);
    put(0x21, 2);
    put(o.descriptor ? 0 : e.crc, 4);
    put(o.descriptor ? 0 : (o.zip64 ? 0xFFFFFFFF : e.csize), 4);
    put(o.descriptor ? 0 : (o.zip64 ? 0xFFFFFFFF : e.size), 4);
    put(m.name.size(), 2);
    put(o.zip64 ? 20 : 0, 2);
    out.insert(out.end(), m.name.begin(), m.name.end());
    if (o.zip64) {
      put(1, 2);
      put(16, 2);
      put(o.descriptor ? 0 : e.size, 8);
      put(o.descriptor ? 0 : e.csize, 8);
    }
    out.insert(out.end(), body.begin(), body.end());
    if (o.descriptor) {
      put(0x08074b50, 4);
      put(e.crc, 4);
      put(e.csize, o.zip64 ? 8 : 4);
      put(e.size, o.zip64 ? 8 : 4);
    }
    entries.push_back(e);
  }
  const uint64_t cd_offset = out.size();
  for (size_t i = 0; i < members.size(); ++i) {
    const Entry& e = entries[i];
    const std::string& name = members[i].name;
    put(0x02014b50, 4);
    put(45, 2);
    put(45, 2);
    put(o.descriptor ? 8 : 0, 2);
    put(o.deflate ? 8 : 0, 2);
    put(0, 2);
    put(0x21, 2);
    put(e.crc, 4);
    put(o.zip64 ? 0xFFFFFFFF : e.csize, 4);
    put(o.zip64 ? 0xFFFFFFFF : e.size, 4);
    put(name.size(), 2);
    put(o.zip64 ? 28 : 0, 2);
    put(0, 2);
    put(0, 2);
    put(0, 2);
    put(0, 4);
    put(o.zip64 ? 0xFFFFFFFF : e.offset, 4);
    out.insert(out.end(), name.begin(), name.end());
    if (o.zip64) {
      put(1, 2);
      put(24, 2);
      put(e.size, 8);
      put(e.csize, 8);
      put(e.offset, 8);
    }
  }
  const uint64_t cd_size = out.size() - cd_offset;
  if (o.zip64) {
    const uint64_t z64 = out.size();
    put(0x06064b50, 4);
    put(44, 8);
    put(45, 2);
    put(45, 2);
    put(0, 4);
    put(0, 4);
    put(members.size(), 8);
    put(members.size(), 8);
    put(cd_size, 8);
    put(cd_offset, 8);
    put(0x07064b50, 4);
    put(0, 4);
    put(z64, 8);
    put(1, 4);
  }
  put(0x06054b50, 4);
  put(0, 2);
  put(0, 2);
  put(o.zip64 ? 0xFFFF : members.size(), 2);
  put(o.zip64 ? 0xFFFF : members.size(), 2);
  put(o.zip64 ? 0xFFFFFFFF : cd_size, 4);
  put(o.zip64 ? 0xFFFFFFFF : cd_offset, 4);
  put(0, 2);
  return out;
}

DType dtype_of_descr(const std::string& descr) {
  const std::string d = descr.substr(1);
  if (d[0] == 'U' || d[0] == 'S') return DType::String;
  static const std::pair<const char*, DType> kMap[] = {
      {"f2", DType::Float16}, {"f4", DType::Float32}, {"f8", DType::Float64}, {"b1", DType::Bool},
      {"i1", DType::Int8},    {"u1", DType::UInt8},   {"i2", DType::Int16},   {"u2", DType::UInt16},
      {"i4", DType::Int32},   {"u4", DType::UInt32},  {"i8", DType::Int64},   {"u8", DType::UInt64},
  };
  for (auto [name, dtype] : kMap) {
    if (d == name) return dtype;
  }
  ADD_FAILURE() << "unexpected numpy descr " << descr;
  return DType::Undefined;
}

/// Calls f and requires that it throws nothing but switchyard::Error; returns true if it threw.
template <typename F>
bool throws_only_error(F&& f, const std::string& context) {
  try {
    f();
  } catch (const switchyard::Error&) {
    return true;
  } catch (const std::exception& e) {
    ADD_FAILURE() << context << ": unexpected exception " << e.what();
    return true;
  }
  return false;
}

class NpzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           fmt::format("switchyard_npz_{}_{}", static_cast<long>(getpid()), info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// A few random arrays of mixed dtypes, as write_npz takes them.
  std::vector<std::pair<std::string, Tensor>> sample_arrays(uint64_t seed) const {
    std::mt19937_64 rng(seed);
    return {{"in.input", random_tensor(DType::Float32, {2, 3, 4}, rng)},
            {"ids", random_tensor(DType::Int64, {5}, rng)},
            {"names", random_tensor(DType::String, {3}, rng)},
            {"flag", random_tensor(DType::Bool, {}, rng)}};
  }

  fs::path dir_;
};

// ---------------------------------------------------------------------------------------------
// Round trips.

TEST_F(NpzTest, RoundTripsEveryDtypeAndShape) {
  std::mt19937_64 rng(20240611);
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 4}, {}, {0, 3}, {7}, {1, 1, 5}};
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (DType dtype : kAllDtypes) {
    for (const auto& shape : shapes) {
      arrays.emplace_back(fmt::format("{}_{}", ir::dtype_name(dtype), ir::shape_to_string(shape)),
                          random_tensor(dtype, shape, rng));
    }
  }
  const std::string p = path("all.npz");
  write_npz(p, arrays);
  const auto loaded = read_npz(p);
  ASSERT_EQ(loaded.size(), arrays.size());
  for (const auto& [name, tensor] : arrays) {
    auto it = loaded.find(name);
    ASSERT_NE(it, loaded.end()) << name;
    expect_same(expected_after_write(tensor), it->second, name);
  }
}

TEST_F(NpzTest, SerializeNpyHeaderLayoutAndRoundTrip) {
  std::mt19937_64 rng(7);
  for (DType dtype : kAllDtypes) {
    const Tensor t = random_tensor(dtype, {3, 2}, rng);
    const std::vector<uint8_t> npy = serialize_npy(t);
    ASSERT_GE(npy.size(), 10u);
    EXPECT_EQ(0, std::memcmp(npy.data(), "\x93NUMPY\x01\x00", 8));
    const size_t header_end = 10 + (npy[8] | (npy[9] << 8));
    EXPECT_EQ(header_end % 64, 0u) << ir::dtype_name(dtype);
    EXPECT_EQ(npy[header_end - 1], '\n');
    expect_same(expected_after_write(t), parse_npy(npy.data(), npy.size(), "mem"),
                std::string(ir::dtype_name(dtype)));
  }
  // bfloat16 is written as float32.
  const std::vector<uint8_t> bf = serialize_npy(random_tensor(DType::BFloat16, {4}, rng));
  EXPECT_NE(std::string(bf.begin(), bf.end()).find("'descr': '<f4'"), std::string::npos);
  // Strings: width is the longest element in code points.
  Tensor s(DType::String, {2});
  s.data<std::string>()[0] = "日本語";
  s.data<std::string>()[1] = "ab";
  const std::vector<uint8_t> sn = serialize_npy(s);
  EXPECT_NE(std::string(sn.begin(), sn.end()).find("'descr': '<U3'"), std::string::npos);
}

TEST_F(NpzTest, LongHeaderUsesVersion2) {
  std::vector<int64_t> shape(25000, 1);
  shape[0] = 3;
  Tensor t(DType::Int32, shape);
  for (int i = 0; i < 3; ++i) t.data<int32_t>()[i] = 1000 * i - 7;
  const std::vector<uint8_t> npy = serialize_npy(t);
  EXPECT_EQ(npy[6], 2);
  expect_same(t, parse_npy(npy.data(), npy.size(), "mem"), "v2");
}

TEST_F(NpzTest, ReadNpyFile) {
  std::mt19937_64 rng(3);
  const Tensor t = random_tensor(DType::Float64, {4, 4}, rng);
  const std::string p = path("x.npy");
  write_bytes(p, serialize_npy(t));
  expect_same(t, read_npy(p), "x.npy");
}

// Archives numpy does not write itself: zip64 central directory and end records, deflate, data
// descriptors, in every combination.
TEST_F(NpzTest, ReadsZip64DeflateAndDataDescriptorVariants) {
  std::mt19937_64 rng(11);
  const Tensor a = random_tensor(DType::Float32, {16, 9}, rng);
  const Tensor b = random_tensor(DType::String, {2, 2}, rng);
  const Tensor c = random_tensor(DType::UInt16, {0}, rng);
  const std::vector<ZipMember> members = {{"a.npy", serialize_npy(a)},
                                          {"dir/", {}},
                                          {"b.npy", serialize_npy(b)},
                                          {"notes.txt", {'h', 'i'}},
                                          {"c.npy", serialize_npy(c)}};
  std::vector<std::string> files;
  for (int mask = 0; mask < 8; ++mask) {
    ZipOptions o{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    const std::string p = path(fmt::format("variant{}.npz", mask));
    write_bytes(p, build_zip(members, o));
    files.push_back(p);
    const auto loaded = read_npz(p);
    ASSERT_EQ(loaded.size(), 3u) << p;
    expect_same(a, loaded.at("a"), p + " a");
    expect_same(b, loaded.at("b"), p + " b");
    expect_same(c, loaded.at("c"), p + " c");
  }
  if (have_numpy()) {  // cross-check that the hand-built archives are valid zips
    int rc = 0;
    const std::string out = run_python(
        "import sys, zipfile\n"
        "for p in sys.argv[1:]:\n"
        "    with zipfile.ZipFile(p) as z: print(z.testzip())\n",
        files, &rc);
    EXPECT_EQ(rc, 0) << out;
    std::string expected;
    for (size_t i = 0; i < files.size(); ++i) expected += "None\n";
    EXPECT_EQ(out, expected);
  }
}

// ---------------------------------------------------------------------------------------------
// Interop with numpy.

constexpr const char* kNumpyWriter = R"PY(
import io, os, sys, zipfile
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1234)
def ints(t, shape):
    i = np.iinfo(t)
    return rng.integers(i.min, i.max, shape, dtype=t, endpoint=True)
arrs = {
    'f32': rng.standard_normal((3, 4, 5)).astype(np.float32),
    'f64': rng.standard_normal((7,)),
    'f16': rng.standard_normal((2, 3)).astype(np.float16),
    'i8': ints(np.int8, (4, 4)), 'u8': ints(np.uint8, (5,)),
    'i16': ints(np.int16, (3, 2)), 'u16': ints(np.uint16, (6,)),
    'i32': ints(np.int32, (2, 2, 2)), 'u32': ints(np.uint32, (3,)),
    'i64': ints(np.int64, (4,)), 'u64': ints(np.uint64, (2, 3)),
    'b': rng.random((3, 3)) > 0.5,
    'scalar': np.array(rng.standard_normal()),
    'iscalar': np.array(np.int32(-123456)),
    'empty': np.zeros((0, 3), np.float32),
    'fortran': np.asfortranarray(rng.standard_normal((3, 4, 2)).astype(np.float32)),
    'fortran_i': np.asfortranarray(rng.integers(0, 1000, (5, 3), dtype=np.int64)),
    'big_f8': rng.standard_normal((2, 5)).astype('>f8'),
    'big_i4': rng.integers(-10**9, 10**9, (6,)).astype('>i4'),
    'big_f2': rng.standard_normal((4,)).astype('>f2'),
    'big_fortran': np.asfortranarray(rng.standard_normal((3, 2)).astype('>f4')),
    'text': np.array([['h\u00e9llo', '', '\u65e5\u672c\u8a9e'],
                      ['a\U0001F642b', 'x', 'longer one']]),
    'big_text': np.array(['ab', 'Z\u00fcrich'], dtype='>U7'),
    'fortran_text': np.asfortranarray(np.array([['a', 'bb', 'ccc'], ['dddd', 'e', '']])),
    'bytes': np.array([b'ab', b'', b'xyz']),
    'dotted.name': np.arange(6, dtype=np.int32).reshape(2, 3),
}
np.savez(os.path.join(d, 'plain.npz'), **arrs)
np.savez_compressed(os.path.join(d, 'compressed.npz'), **arrs)
with open(os.path.join(d, 'manifest.txt'), 'w') as m:
    for k, a in arrs.items():
        shape = 'x'.join(map(str, a.shape)) or 'scalar'
        m.write('%s %s %s\n' % (k, a.dtype.str, shape))
        if a.dtype.kind == 'U':
            data = '\x1e'.join(a.ravel(order='C').tolist()).encode('utf-8')
        elif a.dtype.kind == 'S':
            data = b'\x1e'.join(a.ravel(order='C').tolist())
        else:
            data = np.ascontiguousarray(a).astype(a.dtype.newbyteorder('<')).tobytes()
        with open(os.path.join(d, 'expect_' + k), 'wb') as f:
            f.write(data)
# Data descriptors: zipfile uses them when the output cannot seek.
class Unseekable(io.RawIOBase):
    def __init__(self, f): self.f = f
    def writable(self): return True
    def write(self, b): return self.f.write(b)
for name, method in (('dd_deflate.npz', zipfile.ZIP_DEFLATED),
                     ('dd_stored.npz', zipfile.ZIP_STORED)):
    with open(os.path.join(d, name), 'wb') as raw:
        with zipfile.ZipFile(Unseekable(raw), 'w', compression=method) as zf:
            for k in ('f32', 'text', 'fortran', 'big_f8'):
                with zf.open(k + '.npy', 'w', force_zip64=True) as f:
                    np.lib.format.write_array(f, arrs[k])
for version in ((1, 0), (2, 0), (3, 0)):
    with open(os.path.join(d, 'v%d.npy' % version[0]), 'wb') as f:
        np.lib.format.write_array(f, arrs['f64'], version=version)
obj = np.array([1, 'a', None], dtype=object)
np.save(os.path.join(d, 'obj.npy'), obj, allow_pickle=True)
np.savez(os.path.join(d, 'obj.npz'), good=arrs['f32'], obj=obj)
print('ok')
)PY";

struct ManifestEntry {
  std::string key, descr, shape;
};

std::vector<ManifestEntry> read_manifest(const std::string& p) {
  std::ifstream in(p);
  std::vector<ManifestEntry> out;
  ManifestEntry e;
  while (in >> e.key >> e.descr >> e.shape) out.push_back(e);
  return out;
}

void check_against_numpy(const Tensor& t, const ManifestEntry& e, const std::string& dir,
                         const std::string& context) {
  const std::string what = context + " " + e.key;
  EXPECT_EQ(t.dtype(), dtype_of_descr(e.descr)) << what;
  EXPECT_EQ(ir::shape_to_string(t.shape()), e.shape) << what;
  const std::vector<uint8_t> expect = read_bytes(dir + "/expect_" + e.key);
  if (t.dtype() == DType::String) {
    EXPECT_EQ(join_strings(t), std::string(expect.begin(), expect.end())) << what;
  } else {
    ASSERT_EQ(t.nbytes(), expect.size()) << what;
    if (!expect.empty()) {
      EXPECT_EQ(0, std::memcmp(t.raw(), expect.data(), expect.size())) << what;
    }
  }
}

TEST_F(NpzTest, ReadsFilesWrittenByNumpy) {
  SKIP_WITHOUT_NUMPY();
  int rc = 0;
  const std::string out = run_python(kNumpyWriter, {dir_.string()}, &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string dir = dir_.string();
  const std::vector<ManifestEntry> manifest = read_manifest(path("manifest.txt"));
  ASSERT_EQ(manifest.size(), 26u);

  for (const char* name : {"plain.npz", "compressed.npz"}) {
    const auto loaded = read_npz(path(name));
    ASSERT_EQ(loaded.size(), manifest.size()) << name;
    for (const ManifestEntry& e : manifest) {
      auto it = loaded.find(e.key);
      ASSERT_NE(it, loaded.end()) << name << " " << e.key;
      check_against_numpy(it->second, e, dir, name);
    }
  }
  // Spot-check a fortran array against its C-order values computed here.
  const auto plain = read_npz(path("plain.npz"));
  const Tensor& ft = plain.at("fortran_text");
  ASSERT_EQ(ft.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ft.data<std::string>()[1], "bb");
  EXPECT_EQ(ft.data<std::string>()[3], "dddd");
  EXPECT_EQ(plain.at("dotted.name").data<int32_t>()[5], 5);

  for (const char* name : {"dd_deflate.npz", "dd_stored.npz"}) {
    const std::vector<uint8_t> raw = read_bytes(path(name));
    ASSERT_GT(raw.size(), 8u);
    EXPECT_TRUE(raw[6] & 8) << name << " was expected to use data descriptors";
    const auto loaded = read_npz(path(name));
    ASSERT_EQ(loaded.size(), 4u) << name;
    for (const ManifestEntry& e : manifest) {
      auto it = loaded.find(e.key);
      if (it != loaded.end()) check_against_numpy(it->second, e, dir, name);
    }
  }
  const ManifestEntry f64 = manifest[1];
  ASSERT_EQ(f64.key, "f64");
  for (const char* name : {"v1.npy", "v2.npy", "v3.npy"}) {
    check_against_numpy(read_npy(path(name)), f64, dir, name);
  }
  try {
    read_npy(path("obj.npy"));
    ADD_FAILURE() << "object array was accepted";
  } catch (const switchyard::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(e.message().find("obj.npy"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("pickle"), std::string::npos) << e.message();
  }
  try {
    read_npz(path("obj.npz"));
    ADD_FAILURE() << "object array was accepted";
  } catch (const switchyard::Error& e) {
    EXPECT_NE(e.message().find("member 'obj'"), std::string::npos) << e.message();
  }
}

constexpr const char* kNumpyReader = R"PY(
import sys, zlib
import numpy as np
with np.load(sys.argv[1]) as z:
    print('order ' + ' '.join(z.files))
    for k in z.files:
        a = z[k]
        if a.dtype.kind == 'U':
            data = '\x1e'.join(a.ravel().tolist()).encode('utf-8')
        else:
            data = np.ascontiguousarray(a).tobytes()
        print(k, a.dtype.str, 'x'.join(map(str, a.shape)) or 'scalar', zlib.crc32(data))
)PY";

TEST_F(NpzTest, NumpyReadsWhatWriteNpzWrites) {
  SKIP_WITHOUT_NUMPY();
  std::mt19937_64 rng(424242);
  std::vector<std::pair<std::string, Tensor>> arrays;
  const std::vector<std::vector<int64_t>> shapes = {{3, 5}, {}, {2, 0}};
  for (DType dtype : kAllDtypes) {
    for (const auto& shape : shapes) {
      const std::string name = fmt::format("z{}.{}_{}", arrays.size(), ir::dtype_name(dtype),
                                           ir::shape_to_string(shape));
      arrays.emplace_back(name, random_tensor(dtype, shape, rng));
    }
  }
  arrays.emplace_back("größe", random_tensor(DType::Float32, {2}, rng));
  const std::string p = path("ours.npz");
  write_npz(p, arrays);

  std::string expected = "order";
  for (const auto& [name, tensor] : arrays) expected += " " + name;
  expected += "\n";
  for (const auto& [name, tensor] : arrays) {
    const Tensor t = expected_after_write(tensor);
    std::string descr;
    uint32_t crc;
    if (t.dtype() == DType::String) {
      size_t width = 1;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const std::string& s = t.data<std::string>()[i];
        width = std::max<size_t>(
            width, std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
      }
      descr = fmt::format("<U{}", width);
      const std::string joined = join_strings(t);
      crc = crc_of(joined.data(), joined.size());
    } else {
      const std::vector<uint8_t> npy = serialize_npy(t);
      const std::string text(npy.begin(), npy.end());
      const size_t start = text.find("'descr': '") + 10;
      descr = text.substr(start, text.find('\'', start) - start);
      crc = crc_of(t.raw(), t.nbytes());
    }
    expected += fmt::format("{} {} {} {}\n", name, descr,
                            t.rank() == 0 ? "scalar" : ir::shape_to_string(t.shape()), crc);
  }
  int rc = 0;
  const std::string out = run_python(kNumpyReader, {p}, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out, expected);
}

// ---------------------------------------------------------------------------------------------
// Hand-written .npy headers.

TEST_F(NpzTest, ParsesHandWrittenHeaders) {
  // Fortran order, big endian, Python 2 long literals, no trailing comma: [[1, 2, 3], [4, 5, 6]]
  // stored column by column.
  const auto f = make_npy("{'descr': '>i4', 'fortran_order': True, 'shape': (2L, 3L)}",
                          {0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0, 6});
  const Tensor ft = parse_npy(f.data(), f.size(), "f");
  ASSERT_EQ(ft.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ft.to_int_vector(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));

  // Double quotes, keys in another order; bool bytes other than 0/1 read as true.
  const auto b =
      make_npy("{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"|b1\"}", {0, 2, 1});
  const Tensor bt = parse_npy(b.data(), b.size(), "b");
  ASSERT_EQ(bt.dtype(), DType::Bool);
  EXPECT_FALSE(bt.data<bool>()[0]);
  EXPECT_TRUE(bt.data<bool>()[1]);
  EXPECT_TRUE(bt.data<bool>()[2]);

  // Big-endian float16 scalar.
  const uint16_t half = ir::float_to_half(-2.5f);
  const auto h = make_npy("{'descr': '>f2', 'fortran_order': False, 'shape': ()}",
                          {static_cast<uint8_t>(half >> 8), static_cast<uint8_t>(half & 0xff)});
  const Tensor ht = parse_npy(h.data(), h.size(), "h");
  ASSERT_EQ(ht.dtype(), DType::Float16);
  EXPECT_EQ(ht.rank(), 0);
  EXPECT_EQ(ht.scalar_as_double(), -2.5);
}

TEST_F(NpzTest, RejectsBadHeaders) {
  struct Case {
    std::string dict;
    std::vector<uint8_t> data;
    ErrorCode code;
  };
  const std::vector<uint8_t> four(4, 0);
  const std::vector<Case> cases = {
      {"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", std::vector<uint8_t>(8),
       ErrorCode::Unsupported},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", four,
       ErrorCode::Unsupported},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::vector<uint8_t>(8),
       ErrorCode::Unsupported},
      {"{'descr': '<f4', 'shape': (1,), }", four, ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", std::vector<uint8_t>(5),
       ErrorCode::InvalidArgument},
      {"{'descr': '<U0', 'fortran_order': False, 'shape': (1000000000,), }",
       {},
       ErrorCode::InvalidArgument},
      {"{'descr': '<U1', 'fortran_order': False, 'shape': (1,), }",
       {0x00, 0xD8, 0, 0},
       ErrorCode::InvalidArgument},
      {"{'descr': '<q9', 'fortran_order': False, 'shape': (1,), }", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } junk", four,
       ErrorCode::InvalidArgument},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", four,
       ErrorCode::InvalidArgument},
      {"", four, ErrorCode::InvalidArgument},
  };
  for (const Case& c : cases) {
    const std::vector<uint8_t> npy = make_npy(c.dict, c.data);
    try {
      parse_npy(npy.data(), npy.size(), "hand 'x.npy'");
      ADD_FAILURE() << "accepted: " << c.dict;
    } catch (const switchyard::Error& e) {
      EXPECT_EQ(e.code(), c.code) << c.dict << " -> " << e.what();
      EXPECT_NE(e.message().find("hand 'x.npy'"), std::string::npos) << e.message();
    }
  }
  // An empty '<U0' array is fine.
  const auto empty = make_npy("{'descr': '<U0', 'fortran_order': False, 'shape': (0,), }", {});
  EXPECT_EQ(parse_npy(empty.data(), empty.size(), "e").numel(), 0);
}

// ---------------------------------------------------------------------------------------------
// Corrupt input never crashes.

TEST_F(NpzTest, TruncatedNpyAndNpzThrow) {
  const std::string p = path("good.npz");
  write_npz(p, sample_arrays(5));
  const std::vector<uint8_t> good = read_bytes(p);
  const std::string cut = path("cut.npz");
  for (size_t len = 0; len < good.size(); ++len) {
    write_bytes(cut, std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(len)));
    try {
      read_npz(cut);
      ADD_FAILURE() << "truncation to " << len << " bytes was accepted";
    } catch (const switchyard::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
      EXPECT_NE(e.message().find(cut), std::string::npos) << e.message();
    }
  }
  std::mt19937_64 rng(8);
  const std::vector<uint8_t> npy = serialize_npy(random_tensor(DType::String, {3, 2}, rng));
  for (size_t len = 0; len < npy.size(); ++len) {
    EXPECT_THROW(parse_npy(npy.data(), len, "cut"), switchyard::Error) << len;
  }
}

TEST_F(NpzTest, RandomBytesThrow) {
  std::mt19937_64 rng(99);
  const std::string p = path("random.npz");
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<uint8_t> junk(rng() % 3000);
    for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
    if (iter % 3 == 1 && junk.size() >= 10) {  // plausible npy prefix, garbage after it
      std::memcpy(junk.data(), "\x93NUMPY\x01\x00", 8);
    }
    if (iter % 3 == 2 && junk.size() >= 22) {  // plausible end record, garbage offsets
      std::memcpy(junk.data() + junk.size() - 22, "PK\x05\x06", 4);
      junk[junk.size() - 2] = junk[junk.size() - 1] = 0;
    }
    EXPECT_THROW(parse_npy(junk.data(), junk.size(), "junk"), switchyard::Error);
    write_bytes(p, junk);
    EXPECT_TRUE(throws_only_error([&] { read_npz(p); }, "random npz")) << iter;
    EXPECT_THROW(read_npy(p), switchyard::Error);
  }
}

TEST_F(NpzTest, MutatedArchivesNeverCrash) {
  std::mt19937_64 rng(1234);
  std::vector<ZipMember> members;
  for (const auto& [name, t] : sample_arrays(6)) {
    members.push_back({name + ".npy", serialize_npy(t)});
  }
  const std::string ours = path("ours.npz");
  write_npz(ours, sample_arrays(6));
  const std::vector<std::vector<uint8_t>> bases = {read_bytes(ours),
                                                   build_zip(members, {true, true, true}),
                                                   build_zip(members, {true, false, false})};
  const std::string p = path("mutated.npz");
  int threw = 0, total = 0;
  for (const std::vector<uint8_t>& base : bases) {
    for (int iter = 0; iter < 400; ++iter) {
      std::vector<uint8_t> m = base;
      for (uint64_t k = 1 + rng() % 4; k > 0; --k) {
        m[rng() % m.size()] = static_cast<uint8_t>(rng());
      }
      write_bytes(p, m);
      threw += throws_only_error([&] { read_npz(p); }, fmt::format("mutation {}", iter));
      ++total;
    }
  }
  EXPECT_GT(threw, total / 4);  // most mutations are caught (CRC, structure)
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint8_t> m = members[static_cast<size_t>(iter) % members.size()].data;
    for (uint64_t k = 1 + rng() % 3; k > 0; --k) m[rng() % m.size()] = static_cast<uint8_t>(rng());
    throws_only_error([&] { parse_npy(m.data(), m.size(), "mutated"); }, "mutated npy");
  }
}

TEST_F(NpzTest, CrcMismatchNamesFileAndMember) {
  std::mt19937_64 rng(17);
  const std::string p = path("crc.npz");
  write_npz(p, {{"in.input", random_tensor(DType::Float32, {8}, rng)}});
  std::vector<uint8_t> bytes = read_bytes(p);
  const size_t name_len = bytes[26] | (bytes[27] << 8);
  const size_t size = bytes[18] | (bytes[19] << 8);
  bytes[30 + name_len + size - 1] ^= 0x5A;  // last byte of the array data
  write_bytes(p, bytes);
  try {
    read_npz(p);
    ADD_FAILURE() << "corrupted data was accepted";
  } catch (const switchyard::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(e.message().find(fmt::format("npz '{}' member 'in.input'", p)), std::string::npos)
        << e.message();
    EXPECT_NE(e.message().find("CRC"), std::string::npos) << e.message();
  }
}

TEST_F(NpzTest, WriteErrors) {
  std::mt19937_64 rng(2);
  const Tensor t = random_tensor(DType::Int32, {2}, rng);
  EXPECT_THROW(write_npz(path("dup.npz"), {{"a", t}, {"a", t}}), switchyard::Error);
  Tensor bad(DType::String, {2});
  bad.data<std::string>()[1] = "\xff\xfe";
  const std::string p = path("bad.npz");
  try {
    write_npz(p, {{"ok", t}, {"bad", bad}});
    ADD_FAILURE() << "invalid UTF-8 was accepted";
  } catch (const switchyard::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(e.message().find("member 'bad'"), std::string::npos) << e.message();
  }
  EXPECT_FALSE(fs::exists(p)) << "a partial archive was left behind";
  EXPECT_THROW(serialize_npy(Tensor()), switchyard::Error);
  EXPECT_THROW(write_npz(path("no/such/dir/x.npz"), {{"a", t}}), switchyard::Error);
  try {
    read_npz(path("missing.npz"));
    ADD_FAILURE() << "missing file was accepted";
  } catch (const switchyard::Error& e) {
    EXPECT_NE(e.message().find("missing.npz"), std::string::npos) << e.message();
  }
  EXPECT_THROW(read_npz(dir_.string()), switchyard::Error);
}

TEST_F(NpzTest, EmptyArchive) {
  const std::string p = path("empty.npz");
  write_npz(p, {});
  EXPECT_TRUE(read_npz(p).empty());
}

}  // namespace
}  // namespace switchyard::tooling
