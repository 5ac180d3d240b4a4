// fuzz_executable: bytes -> a scratch .syx file -> Executable::load (compiler::read_executable:
// header, section table, META JSON, the ONNX model through the checked importer, the weights
// mapped from the file, the placement record checked against the graph; then the partitions
// compiled as placed, or placed again with allow_relower) -> the saved placement report in every
// explain format -> one run on seeded inputs, as fuzz_compile_run does: one thread, a 64 MiB cap
// on the run's cpu memory and a deadline.
//
// A checksum guards the file, so a mutated input would almost never get past it: when the
// input starts with the magic and holds a whole header, the harness rewrites the file-size field
// (offset 16) and the checksum of bytes [32, size) (offset 24) before writing the file, so that
// the fuzzer explores what lies behind them. Bytes 24..31 are overwritten by that fix-up, so they
// steer the harness instead: one input in 16 (byte 24) is written as it is, keeping the size and
// checksum refusals covered, and byte 25 picks allow_relower (placing the saved graph again when
// a device it names is missing, instead of DeviceMismatch).
//
// The checksum is XXH3-64 (docs/executable-format.md). At start-up the harness saves a one-node
// model with the library and checks that its header is the one fixed up here, so a change of
// hash or layout cannot silently leave every mutated input stuck at the checksum: it stops with
// an ERROR instead.
#include <onnx/onnx_pb.h>
#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "fuzz_common.h"
#include "fuzz_inputs.h"
#include "ir/graph.h"
#include "onnx/import.h"
#include "switchyard/switchyard.hpp"
#include "tooling/inputs.h"

namespace {

using namespace switchyard;

// Larger files are refused before writing (-1: libFuzzer keeps them out of the corpus).
constexpr size_t kMaxFileBytes = size_t{1} << 20;
// The header of a saved executable (compiler/executable_file.cc, docs/executable-format.md).
constexpr char kMagic[8] = {'S', 'W', 'Y', 'D', 'S', 'Y', 'X', '\x1a'};
constexpr size_t kHeaderBytes = 32;
constexpr size_t kSizeAt = 16;
constexpr size_t kChecksumAt = 24;
// The harness's own bytes (inside the checksum field, which the fix-up overwrites).
constexpr size_t kKeepAsIsAt = 24;  // == 0 mod 16: written unfixed
constexpr size_t kRelowerAt = 25;   // odd: allow_relower
using fuzz_inputs::kDeadlineMs;
using fuzz_inputs::make_inputs;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "ERROR: fuzz_executable: %s\n", what.c_str());
  std::abort();
}

// Checks that the header this harness fixes up is the library's: a one-node model (Relu on
// float[2]), compiled and saved by the library, read back here.
void probe_header() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  onnx::OperatorSetIdProto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("probe");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Relu");
  n->add_input("x");
  n->add_output("y");
  for (auto [v, name] : {std::pair{g->add_input(), "x"}, std::pair{g->add_output(), "y"}}) {
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(2);
  }
  std::string model = m.SerializeAsString();
  std::string path = fuzz::write_scratch_file(nullptr, 0, ".probe.syx");
  std::vector<uint8_t> bytes;
  bool saved = fuzz::run_expecting_only_errors("fuzz_executable", [&] {
    Options options;
    options.num_threads = 1;
    options.cache_dir = "off";  // whatever $SWITCHYARD_CACHE_DIR says
    Model::from_graph(onnx_import::import_model_from_bytes(model.data(), model.size(), "", "probe"))
        .compile(options)
        .save(path);
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  });
  std::remove(path.c_str());
  if (!saved) fail("the start-up probe model did not compile and save");
  uint64_t size = 0, stored = 0;
  if (bytes.size() >= kHeaderBytes) {
    std::memcpy(&size, bytes.data() + kSizeAt, sizeof(size));
    std::memcpy(&stored, bytes.data() + kChecksumAt, sizeof(stored));
  }
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0 ||
      size != bytes.size())
    fail(
        "a saved probe file does not have the header this harness fixes up (magic, u64 size "
        "at 16): update the harness to docs/executable-format.md");
  if (XXH3_64bits(bytes.data() + kHeaderBytes, bytes.size() - kHeaderBytes) != stored)
    fail(
        "a saved probe file's checksum (offset 24) is not the XXH3-64 of bytes [32, size): "
        "update the harness's fix-up to docs/executable-format.md");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  probe_header();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxFileBytes) return -1;
  std::vector<uint8_t> file(data, data + size);
  bool relower = false;
  if (size >= kHeaderBytes && std::memcmp(data, kMagic, sizeof(kMagic)) == 0) {
    relower = (data[kRelowerAt] & 1) != 0;
    if (data[kKeepAsIsAt] % 16 != 0) {
      uint64_t file_size = size;
      uint64_t checksum = XXH3_64bits(file.data() + kHeaderBytes, size - kHeaderBytes);
      std::memcpy(file.data() + kSizeAt, &file_size, sizeof(file_size));
      std::memcpy(file.data() + kChecksumAt, &checksum, sizeof(checksum));
    }
  }
  std::string path = fuzz::write_scratch_file(file.data(), file.size(), ".syx");
  fuzz::run_expecting_only_errors("fuzz_executable", [&] {
    Options options;
    options.num_threads = 1;
    options.memory_limits = {"cpu=64M"};
    options.allow_relower = relower;
    Executable exe = Executable::load(path, options);
    // The placement report is the file's, as `switchyard explain FILE.syx` prints it.
    exe.placement_summary();
    for (const char* format : {"text", "json", "dot", "html"}) exe.explain(format);
    std::optional<std::map<std::string, Tensor>> inputs = make_inputs(exe.internal().graph());
    if (!inputs) return;
    RunOptions run_options;
    run_options.deadline_ms = kDeadlineMs;
    exe.run(*inputs, run_options);
  });
  return 0;
}
