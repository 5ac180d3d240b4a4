// Whole-file reading, protobuf parsing, and the test-data readers (TensorProto, SequenceProto,
// OptionalProto files of the ONNX backend tests).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx-data_pb.h>
#include <xxhash.h>

#include "onnx/import.h"
#include "onnx/proto_convert.h"

namespace switchyard::onnx_import {

namespace detail {

bool parse_proto(google::protobuf::MessageLite& message, const void* data, size_t size,
                 int recursion_limit) {
  if (size > static_cast<size_t>(INT_MAX)) return false;
  google::protobuf::io::CodedInputStream in(static_cast<const uint8_t*>(data),
                                            static_cast<int>(size));
  in.SetRecursionLimit(recursion_limit);
  return message.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

namespace {

// A regular file open for reading, closed when this goes; throws InvalidArgument naming `what`
// when the path cannot be opened or is not a regular file.
class RegularFile {
 public:
  RegularFile(const std::string& path, const std::string& what)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    SY_CHECK(fd_ >= 0, InvalidArgument, "{}: cannot open: {}", what, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      SY_THROW(InvalidArgument, "{}: not a regular file", what);
    }
    size_ = st.st_size;
  }
  ~RegularFile() { ::close(fd_); }
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int fd() const { return fd_; }
  off_t size() const { return size_; }

 private:
  int fd_;
  off_t size_ = 0;
};

// A file descriptor read in chunks for protobuf, hashing every byte it hands out. A read error
// is kept, so the caller reports it instead of "not a valid model".
class HashingFileStream final : public google::protobuf::io::CopyingInputStream {
 public:
  explicit HashingFileStream(int fd) : fd_(fd), state_(XXH3_createState()) {
    SY_CHECK(state_ != nullptr, OutOfMemory, "cannot allocate a hash state");
    XXH3_64bits_reset(state_);
  }
  ~HashingFileStream() override { XXH3_freeState(state_); }
  HashingFileStream(const HashingFileStream&) = delete;
  HashingFileStream& operator=(const HashingFileStream&) = delete;

  int Read(void* buffer, int size) override {
    for (;;) {
      ssize_t n = ::read(fd_, buffer, static_cast<size_t>(size));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error_ = errno;
        return -1;
      }
      if (n > 0) XXH3_64bits_update(state_, buffer, static_cast<size_t>(n));
      total_ += static_cast<uint64_t>(n);
      return static_cast<int>(n);
    }
  }

  uint64_t digest() const { return XXH3_64bits_digest(state_); }
  uint64_t total() const { return total_; }
  int error() const { return error_; }

 private:
  int fd_;
  XXH3_state_t* state_;
  uint64_t total_ = 0;
  int error_ = 0;
};

}  // namespace

std::string read_file(const std::string& path, const std::string& what) {
  RegularFile file(path, what);
  std::string bytes;
  try {
    bytes.resize(static_cast<size_t>(file.size()));
  } catch (const std::exception&) {
    SY_THROW(OutOfMemory, "{}: cannot hold {} bytes in memory", what, file.size());
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(file.fd(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      SY_THROW(InvalidArgument, "{}: read {} of {} bytes{}", what, done, bytes.size(),
               n < 0 ? std::string(": ") + std::strerror(err) : "");
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

bool parse_proto_file(google::protobuf::MessageLite& message, const std::string& path,
                      const std::string& what, int recursion_limit, uint64_t* hash) {
  RegularFile file(path, what);
  if (file.size() > static_cast<off_t>(INT_MAX)) return false;
  HashingFileStream stream(file.fd());
  bool ok = false;
  {
    google::protobuf::io::CopyingInputStreamAdaptor adaptor(&stream, 1 << 20);
    google::protobuf::io::CodedInputStream in(&adaptor);
    in.SetRecursionLimit(recursion_limit);
    ok = message.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
  }
  SY_CHECK(stream.error() == 0, InvalidArgument, "{}: read {} of {} bytes: {}", what,
           stream.total(), file.size(), std::strerror(stream.error()));
  if (hash) *hash = stream.digest();
  return ok;
}

std::string parent_folder(const std::string& path) {
  std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace detail

namespace {

// Test-data files nest at most a sequence of tensors inside an optional.
constexpr int kValueFileRecursionLimit = 100;

std::string file_label(const std::string& path) { return fmt::format("file '{}'", path); }

ir::Datum sequence_to_datum(const onnx::SequenceProto& seq, const ir::Type& expected,
                            const std::string& folder, const std::string& label) {
  SY_CHECK(seq.elem_type() == onnx::SequenceProto::TENSOR ||
               (seq.elem_type() == onnx::SequenceProto::UNDEFINED && seq.tensor_values_size() == 0),
           Unsupported, "{}: sequences of element kind {} are not supported (only tensors)", label,
           static_cast<int>(seq.elem_type()));
  std::vector<ir::Tensor> items;
  items.reserve(static_cast<size_t>(seq.tensor_values_size()));
  for (int i = 0; i < seq.tensor_values_size(); ++i) {
    items.push_back(detail::tensor_from_proto(seq.tensor_values(i), folder,
                                              fmt::format("{}: sequence item {}", label, i)));
  }
  ir::DType dtype = ir::DType::Undefined;
  if (expected.is_sequence() && expected.element && expected.element->is_tensor())
    dtype = expected.element->dtype;
  if (dtype == ir::DType::Undefined && !items.empty()) dtype = items.front().dtype();
  for (size_t i = 0; i < items.size(); ++i) {
    SY_CHECK(items[i].dtype() == dtype, InvalidModel, "{}: sequence item {} is {}, expected {}",
             label, i, ir::dtype_name(items[i].dtype()), ir::dtype_name(dtype));
  }
  return ir::Datum::make_sequence(dtype, std::move(items));
}

}  // namespace

ir::Tensor read_tensor_proto_file(const std::string& path) {
  std::string label = file_label(path);
  std::string bytes = detail::read_file(path, label);
  onnx::TensorProto proto;
  SY_CHECK(detail::parse_proto(proto, bytes.data(), bytes.size(), kValueFileRecursionLimit),
           InvalidModel, "{}: not a valid serialized TensorProto (truncated or corrupt)", label);
  return detail::tensor_from_proto(proto, detail::parent_folder(path),
                                   fmt::format("{}: tensor '{}'", label, proto.name()));
}

ir::Datum read_value_file(const std::string& path, const ir::Type& expected) {
  if (expected.is_tensor() || expected.is_unknown()) return read_tensor_proto_file(path);
  std::string label = file_label(path);
  std::string folder = detail::parent_folder(path);
  std::string bytes = detail::read_file(path, label);
  if (expected.is_sequence()) {
    onnx::SequenceProto seq;
    SY_CHECK(detail::parse_proto(seq, bytes.data(), bytes.size(), kValueFileRecursionLimit),
             InvalidModel, "{}: not a valid serialized SequenceProto (truncated or corrupt)",
             label);
    return sequence_to_datum(seq, expected, folder, label);
  }
  onnx::OptionalProto opt;
  SY_CHECK(detail::parse_proto(opt, bytes.data(), bytes.size(), kValueFileRecursionLimit),
           InvalidModel, "{}: not a valid serialized OptionalProto (truncated or corrupt)", label);
  ir::Type inner = expected.element ? *expected.element : ir::Type{};
  switch (opt.elem_type()) {
    case onnx::OptionalProto::UNDEFINED:
      return ir::Datum{};
    case onnx::OptionalProto::TENSOR:
      if (!opt.has_tensor_value()) return ir::Datum{};
      return detail::tensor_from_proto(opt.tensor_value(), folder,
                                       fmt::format("{}: optional tensor", label));
    case onnx::OptionalProto::SEQUENCE:
      if (!opt.has_sequence_value()) return ir::Datum{};
      return sequence_to_datum(opt.sequence_value(), inner, folder, label);
    default:
      SY_THROW(Unsupported, "{}: optionals of element kind {} are not supported", label,
               static_cast<int>(opt.elem_type()));
  }
}

}  // namespace switchyard::onnx_import
