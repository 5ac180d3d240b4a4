#include "onnx/external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "ir/check.h"

namespace switchyard::onnx_import::detail {

namespace {

// Closes a descriptor on scope exit unless released.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

std::optional<uint64_t> parse_decimal(const std::string& text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// Splits a relative location into normalised components; refuses absolute paths and any
// location that normalises to outside the base folder.
std::vector<std::string> split_location(const std::string& location, const std::string& context,
                                        const std::string& base_dir) {
  SY_CHECK(!location.empty(), InvalidModel, "{}: external data has no 'location'", context);
  SY_CHECK(location.find('\0') == std::string::npos, InvalidModel,
           "{}: external data location contains a NUL byte", context);
  std::filesystem::path p(location);
  SY_CHECK(!p.is_absolute() && location.front() != '/', InvalidModel,
           "{}: external data location '{}' is an absolute path; it must be relative to the "
           "model's folder '{}'",
           context, location, base_dir);
  std::filesystem::path normal = p.lexically_normal();
  std::vector<std::string> parts;
  for (const auto& part : normal) {
    std::string s = part.string();
    SY_CHECK(s != "..", InvalidModel,
             "{}: external data location '{}' leaves the model's folder '{}'", context, location,
             base_dir);
    if (s == "." || s.empty()) continue;
    parts.push_back(std::move(s));
  }
  SY_CHECK(!parts.empty() && !location.ends_with('/'), InvalidModel,
           "{}: external data location '{}' does not name a file", context, location);
  return parts;
}

}  // namespace

ExternalRef parse_external_ref(const onnx::TensorProto& tensor, size_t expected_bytes,
                               const std::string& context) {
  ExternalRef ref;
  std::optional<std::string> offset_text, length_text;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") ref.location = entry.value();
    if (entry.key() == "offset") offset_text = entry.value();
    if (entry.key() == "length") length_text = entry.value();
  }
  SY_CHECK(!ref.location.empty(), InvalidModel, "{}: external data has no 'location'", context);
  if (offset_text) {
    auto v = parse_decimal(*offset_text);
    SY_CHECK(v.has_value(), InvalidModel,
             "{}: external data '{}': offset '{}' is not a non-negative integer", context,
             ref.location, *offset_text);
    ref.offset = *v;
  }
  ref.length = expected_bytes;
  if (length_text) {
    auto v = parse_decimal(*length_text);
    SY_CHECK(v.has_value() && *v == expected_bytes, InvalidModel,
             "{}: external data '{}': length '{}' is not the tensor's {} bytes", context,
             ref.location, *length_text, expected_bytes);
  }
  return ref;
}

ExternalRegion::ExternalRegion(const onnx::TensorProto& tensor, const std::string& base_dir,
                               size_t expected_bytes, const std::string& context)
    : bytes_(expected_bytes), context_(context) {
  std::string location;
  std::optional<std::string> offset_text;
  std::optional<std::string> length_text;
  for (const auto& entry : tensor.external_data()) {
    if (entry.key() == "location") location = entry.value();
    if (entry.key() == "offset") offset_text = entry.value();
    if (entry.key() == "length") length_text = entry.value();
  }
  SY_CHECK(!base_dir.empty(), InvalidModel,
           "{}: has external data in '{}', but the model was loaded from memory without a base "
           "folder, so external data is refused",
           context, location);
  std::vector<std::string> parts = split_location(location, context, base_dir);
  path_ = (std::filesystem::path(base_dir) / location).lexically_normal().string();

  // Walk the components with openat and O_NOFOLLOW so that no symlink (file or folder) below
  // the model's folder is followed, even if the tree changes while we look.
  FdGuard dir(::open(base_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  SY_CHECK(dir.get() >= 0, InvalidModel, "{}: cannot open the model's folder '{}': {}", context,
           base_dir, std::strerror(errno));
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    bool last = i + 1 == parts.size();
    struct stat st {};
    if (::fstatat(dir.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      SY_THROW(InvalidModel, "{}: external data file '{}' cannot be found ('{}': {})", context,
               path_, part, std::strerror(errno));
    }
    SY_CHECK(!S_ISLNK(st.st_mode), InvalidModel,
             "{}: external data path '{}' goes through the symlink '{}'; symlinks below the "
             "model's folder are refused",
             context, path_, part);
    if (!last) {
      SY_CHECK(S_ISDIR(st.st_mode), InvalidModel,
               "{}: external data path '{}': '{}' is not a folder", context, path_, part);
      int next = ::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      SY_CHECK(next >= 0, InvalidModel, "{}: external data path '{}': cannot open '{}': {}",
               context, path_, part, std::strerror(errno));
      dir.reset(next);
      continue;
    }
    SY_CHECK(S_ISREG(st.st_mode), InvalidModel, "{}: external data file '{}' is not a regular file",
             context, path_);
    FdGuard file(::openat(dir.get(), part.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    SY_CHECK(file.get() >= 0, InvalidModel, "{}: cannot open external data file '{}': {}", context,
             path_, std::strerror(errno));
    SY_CHECK(::fstat(file.get(), &st) == 0 && S_ISREG(st.st_mode), InvalidModel,
             "{}: external data file '{}' is not a regular file", context, path_);
    fd_ = file.release();
    // Sizes are checked below in unsigned arithmetic: offset <= size, length <= size - offset.
    uint64_t file_size = static_cast<uint64_t>(st.st_size);
    uint64_t offset = 0;
    if (offset_text) {
      auto v = parse_decimal(*offset_text);
      SY_CHECK(v.has_value(), InvalidModel,
               "{}: external data file '{}': offset '{}' is not a non-negative integer", context,
               path_, *offset_text);
      offset = *v;
    }
    SY_CHECK(offset <= file_size, InvalidModel,
             "{}: external data file '{}': offset {} is past the end of the file ({} bytes)",
             context, path_, offset, file_size);
    uint64_t available = file_size - offset;
    uint64_t length = available;
    if (length_text) {
      auto v = parse_decimal(*length_text);
      SY_CHECK(v.has_value(), InvalidModel,
               "{}: external data file '{}': length '{}' is not a non-negative integer", context,
               path_, *length_text);
      length = *v;
      SY_CHECK(length <= available, InvalidModel,
               "{}: external data file '{}': offset {} + length {} is past the end of the file "
               "({} bytes)",
               context, path_, offset, length, file_size);
    }
    SY_CHECK(length == expected_bytes, InvalidModel,
             "{}: external data file '{}' holds {} bytes at offset {}, expected {}", context, path_,
             length, offset, expected_bytes);
    offset_ = offset;
  }
}

ExternalRegion::~ExternalRegion() {
  if (fd_ >= 0) ::close(fd_);
}

void ExternalRegion::read_into(void* dst) const {
  auto* out = static_cast<char*>(dst);
  size_t done = 0;
  while (done < bytes_) {
    ssize_t n = ::pread(fd_, out + done, bytes_ - done, static_cast<off_t>(offset_ + done));
    if (n < 0 && errno == EINTR) continue;
    SY_CHECK(n > 0, InvalidModel, "{}: external data file '{}': read {} of {} bytes at offset {}{}",
             context_, path_, done, bytes_, offset_,
             n < 0 ? std::string(": ") + std::strerror(errno) : "");
    done += static_cast<size_t>(n);
  }
}

}  // namespace switchyard::onnx_import::detail
