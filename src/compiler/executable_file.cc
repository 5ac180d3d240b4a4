#include "compiler/executable_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/check.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "ops/op_traits.h"
#include "ops/schema.h"

namespace switchyard::compiler {

namespace {

using Json = nlohmann::json;

// The layout (docs/executable-format.md), little-endian:
//   [0, 32)   header: magic[8], u32 format version, u32 section count, u64 file size,
//             u64 XXH3-64 (seed 0) of every byte after the header
//   [32, ...) section table: per section u32 kind, u32 reserved (0), u64 offset, u64 length
//   sections, each starting on a 64-byte boundary: META (JSON), MODEL (ONNX ModelProto), WEIGHTS
constexpr char kMagic[8] = {'S', 'W', 'Y', 'D', 'S', 'Y', 'X', '\x1a'};
constexpr size_t kHeaderBytes = 32;
constexpr size_t kEntryBytes = 24;
constexpr uint64_t kAlign = 64;
constexpr uint32_t kMaxSections = 16;
enum SectionKind : uint32_t { kMeta = 1, kModel = 2, kWeights = 3 };
constexpr const char* kWeightsLocation = "weights";

uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

template <typename T>
void put(std::string& out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <typename T>
T get(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// ---- the placement report, field by field (the display JSON of tooling drops some) ----

const char* kCauseNames[] = {"pinned", "unsupported", "host_shape", "preferred", "split", "island"};

Json report_to_json(const placement::PlacementReport& r) {
  Json nodes = Json::array();
  for (const auto& n : r.nodes)
    nodes.push_back({{"node", n.node},
                     {"op", n.op},
                     {"device", n.device},
                     {"cause", placement::cause_name(n.cause)},
                     {"reason", n.reason},
                     {"partition", n.partition},
                     {"copy_cost_us", n.copy_cost_us},
                     {"saving_us", n.saving_us},
                     {"precision", n.precision},
                     {"fused_into", n.fused_into}});
  Json parts = Json::array();
  for (const auto& p : r.partitions)
    parts.push_back({{"index", p.index},
                     {"device", p.device},
                     {"nodes", p.nodes},
                     {"estimated_us", p.estimated_us}});
  Json copies = Json::array();
  for (const auto& c : r.copies)
    copies.push_back({{"value", c.value},
                      {"from_device", c.from_device},
                      {"to_device", c.to_device},
                      {"from_partition", c.from_partition},
                      {"to_partition", c.to_partition},
                      {"bytes", c.bytes}});
  Json edges = Json::array();
  for (const auto& e : r.edges)
    edges.push_back({{"from_node", e.from_node},
                     {"to_node", e.to_node},
                     {"value", e.value},
                     {"copy", e.copy},
                     {"control", e.control}});
  Json fusions = Json::array();
  for (const auto& f : r.fusions)
    fusions.push_back({{"partition", f.partition}, {"device", f.device}, {"nodes", f.nodes}});
  return {{"model", r.model},   {"target", r.target},  {"devices", r.devices}, {"policy", r.policy},
          {"nodes", nodes},     {"partitions", parts}, {"copies", copies},     {"edges", edges},
          {"fusions", fusions}, {"notes", r.notes}};
}

// Reads one saved field with its type checked; errors name the file and the field.
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  const Json& field(const Json& j, const char* key, const std::string& where) const {
    SY_CHECK(j.is_object() && j.contains(key), InvalidModel,
             "executable '{}': {} has no '{}' (a corrupted or foreign file)", path_, where, key);
    return j.at(key);
  }
  std::string str(const Json& j, const char* key, const std::string& where) const {
    const Json& v = field(j, key, where);
    SY_CHECK(v.is_string(), InvalidModel, "executable '{}': {}.{} is not a string", path_, where,
             key);
    return v.get<std::string>();
  }
  int64_t num(const Json& j, const char* key, const std::string& where) const {
    const Json& v = field(j, key, where);
    SY_CHECK(v.is_number_integer(), InvalidModel, "executable '{}': {}.{} is not an integer", path_,
             where, key);
    return v.get<int64_t>();
  }
  double real(const Json& j, const char* key, const std::string& where) const {
    const Json& v = field(j, key, where);
    SY_CHECK(v.is_number(), InvalidModel, "executable '{}': {}.{} is not a number", path_, where,
             key);
    return v.get<double>();
  }
  bool boolean(const Json& j, const char* key, const std::string& where) const {
    const Json& v = field(j, key, where);
    SY_CHECK(v.is_boolean(), InvalidModel, "executable '{}': {}.{} is not a boolean", path_, where,
             key);
    return v.get<bool>();
  }
  const Json& array(const Json& j, const char* key, const std::string& where) const {
    const Json& v = field(j, key, where);
    SY_CHECK(v.is_array(), InvalidModel, "executable '{}': {}.{} is not a list", path_, where, key);
    return v;
  }
  std::vector<std::string> strings(const Json& j, const char* key, const std::string& where) const {
    std::vector<std::string> out;
    for (const Json& v : array(j, key, where)) {
      SY_CHECK(v.is_string(), InvalidModel, "executable '{}': {}.{} holds a non-string", path_,
               where, key);
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  std::vector<int> ints(const Json& j, const char* key, const std::string& where) const {
    std::vector<int> out;
    for (const Json& v : array(j, key, where)) {
      SY_CHECK(
          v.is_number_integer() && v.get<int64_t>() >= -1 && v.get<int64_t>() < (int64_t{1} << 30),
          InvalidModel, "executable '{}': {}.{} holds a bad index", path_, where, key);
      out.push_back(static_cast<int>(v.get<int64_t>()));
    }
    return out;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

placement::Cause cause_from(const Reader& rd, const std::string& name, const std::string& where) {
  for (size_t i = 0; i < std::size(kCauseNames); ++i)
    if (name == kCauseNames[i]) return static_cast<placement::Cause>(i);
  SY_THROW(InvalidModel, "executable '{}': {}: unknown cause '{}'", rd.path(), where, name);
}

placement::PlacementReport report_from_json(const Reader& rd, const Json& j) {
  const std::string w = "the placement report";
  placement::PlacementReport r;
  r.model = rd.str(j, "model", w);
  r.target = rd.str(j, "target", w);
  r.devices = rd.strings(j, "devices", w);
  r.policy = rd.str(j, "policy", w);
  for (const Json& n : rd.array(j, "nodes", w)) {
    const std::string wn = w + " node";
    placement::NodeDecision d;
    d.node = rd.str(n, "node", wn);
    d.op = rd.str(n, "op", wn);
    d.device = rd.str(n, "device", wn);
    d.cause = cause_from(rd, rd.str(n, "cause", wn), wn);
    d.reason = rd.str(n, "reason", wn);
    d.partition = static_cast<int>(rd.num(n, "partition", wn));
    d.copy_cost_us = rd.real(n, "copy_cost_us", wn);
    d.saving_us = rd.real(n, "saving_us", wn);
    d.precision = rd.str(n, "precision", wn);
    d.fused_into = rd.str(n, "fused_into", wn);
    r.nodes.push_back(std::move(d));
  }
  for (const Json& p : rd.array(j, "partitions", w)) {
    const std::string wp = w + " partition";
    r.partitions.push_back({static_cast<int>(rd.num(p, "index", wp)), rd.str(p, "device", wp),
                            rd.strings(p, "nodes", wp), rd.real(p, "estimated_us", wp)});
  }
  for (const Json& c : rd.array(j, "copies", w)) {
    const std::string wc = w + " copy";
    r.copies.push_back({rd.str(c, "value", wc), rd.str(c, "from_device", wc),
                        rd.str(c, "to_device", wc),
                        static_cast<int>(rd.num(c, "from_partition", wc)),
                        static_cast<int>(rd.num(c, "to_partition", wc)), rd.num(c, "bytes", wc)});
  }
  for (const Json& e : rd.array(j, "edges", w)) {
    const std::string we = w + " edge";
    r.edges.push_back({rd.str(e, "from_node", we), rd.str(e, "to_node", we), rd.str(e, "value", we),
                       rd.boolean(e, "copy", we),
                       e.contains("control") && rd.boolean(e, "control", we)});
  }
  r.notes = rd.strings(j, "notes", w);
  for (const Json& f : rd.array(j, "fusions", w)) {
    const std::string wf = w + " fusion";
    r.fusions.push_back({static_cast<int>(rd.num(f, "partition", wf)), rd.str(f, "device", wf),
                         rd.strings(f, "nodes", wf)});
  }
  return r;
}

// ---- devices and the placement record ----

Json device_to_json(const runtime::DeviceInfo& d) {
  return {{"id", d.id},
          {"kind", d.kind},
          {"name", d.name},
          {"uuid", d.uuid},
          {"compute_capability", d.compute_capability},
          {"software", d.software},
          {"memory_bytes", d.memory_bytes}};
}

Json record_to_json(const PlacementRecord& r) {
  Json devices = Json::array();
  for (const auto& d : r.devices) devices.push_back(device_to_json(d));
  Json parts = Json::array();
  for (const auto& p : r.partitions) {
    std::vector<int> on_host(p.input_on_host.begin(), p.input_on_host.end());
    parts.push_back({{"device", p.device},
                     {"nodes", p.nodes},
                     {"inputs", p.inputs},
                     {"outputs", p.outputs},
                     {"input_on_host", on_host}});
  }
  auto copies = [](const std::vector<PlacementRecord::Copy>& list) {
    Json out = Json::array();
    for (const auto& c : list)
      out.push_back({{"value", c.value},
                     {"from", c.from_device},
                     {"to", c.to_device},
                     {"before", c.before_partition}});
    return out;
  };
  return {{"devices", devices},
          {"node_device", r.node_device},
          {"partitions", parts},
          {"copies", copies(r.copies)},
          {"shape_transfers", copies(r.shape_transfers)}};
}

PlacementRecord record_from_json(const Reader& rd, const Json& j) {
  const std::string w = "the placement";
  PlacementRecord r;
  for (const Json& d : rd.array(j, "devices", w)) {
    runtime::DeviceInfo info;
    const std::string wd = w + " device";
    info.id = rd.str(d, "id", wd);
    info.kind = rd.str(d, "kind", wd);
    info.name = rd.str(d, "name", wd);
    info.uuid = rd.str(d, "uuid", wd);
    info.compute_capability = rd.str(d, "compute_capability", wd);
    info.software = rd.str(d, "software", wd);
    int64_t memory = rd.num(d, "memory_bytes", wd);
    SY_CHECK(memory >= 0, InvalidModel, "executable '{}': {}: negative memory", rd.path(), wd);
    info.memory_bytes = static_cast<uint64_t>(memory);
    r.devices.push_back(std::move(info));
  }
  r.node_device = rd.ints(j, "node_device", w);
  for (const Json& p : rd.array(j, "partitions", w)) {
    const std::string wp = w + " partition";
    PlacementRecord::Partition part;
    part.device = static_cast<int>(rd.num(p, "device", wp));
    part.nodes = rd.ints(p, "nodes", wp);
    part.inputs = rd.strings(p, "inputs", wp);
    part.outputs = rd.strings(p, "outputs", wp);
    for (int v : rd.ints(p, "input_on_host", wp)) part.input_on_host.push_back(v ? 1 : 0);
    r.partitions.push_back(std::move(part));
  }
  auto copies = [&](const char* key) {
    std::vector<PlacementRecord::Copy> out;
    for (const Json& c : rd.array(j, key, w)) {
      const std::string wc = w + " " + key;
      out.push_back({rd.str(c, "value", wc), static_cast<int>(rd.num(c, "from", wc)),
                     static_cast<int>(rd.num(c, "to", wc)),
                     static_cast<int>(rd.num(c, "before", wc))});
    }
    return out;
  };
  r.copies = copies("copies");
  r.shape_transfers = copies("shape_transfers");
  return r;
}

// The record must describe a plan the runtime can run on `graph`: indices in range, every
// top-level node in exactly one partition on its device, names that resolve, and — walked in
// order as the runtime will — every partition input present where it is read.
void check_record(const Reader& rd, const PlacementRecord& r, const ir::Graph& graph) {
  const std::string file = fmt::format("executable '{}'", rd.path());
  const size_t num_devices = r.devices.size();
  const size_t num_nodes = graph.nodes().size();
  SY_CHECK(num_devices >= 1 && r.devices[0].kind == "cpu", InvalidModel,
           "{}: the placement's first device is not the cpu", file);
  SY_CHECK(r.node_device.size() == num_nodes, InvalidModel,
           "{}: the placement places {} nodes, the graph has {}", file, r.node_device.size(),
           num_nodes);
  auto device_ok = [&](int d) { return d >= 0 && static_cast<size_t>(d) < num_devices; };
  for (int d : r.node_device)
    SY_CHECK(device_ok(d), InvalidModel, "{}: a node's device index {} is out of range", file, d);
  auto value = [&](const std::string& name) {
    ir::Value* v = graph.find_local_value(name);
    SY_CHECK(v != nullptr, InvalidModel,
             "{}: the placement names value '{}', which the graph lacks", file, name);
    return v;
  };
  // Where each value is, walking the plan: graph inputs start on the host.
  std::map<const ir::Value*, std::set<int>> where;
  for (const ir::Value* v : graph.inputs()) where[v].insert(0);
  std::vector<char> seen(num_nodes, 0);
  std::set<const ir::Value*> made;  // what earlier partitions made (an ordering input's source)
  auto apply_copies = [&](const std::vector<PlacementRecord::Copy>& list, int before,
                          bool shape_only) {
    for (const auto& c : list) {
      if (c.before_partition != before) continue;
      SY_CHECK(device_ok(c.from_device) && device_ok(c.to_device), InvalidModel,
               "{}: a copy of '{}' names a device out of range", file, c.value);
      const ir::Value* v = value(c.value);
      SY_CHECK(!v->is_constant(), InvalidModel, "{}: the placement copies the constant '{}'", file,
               c.value);
      SY_CHECK(where[v].count(c.from_device), InvalidModel,
               "{}: value '{}' is copied from {} before it is there", file, c.value,
               r.devices[static_cast<size_t>(c.from_device)].id);
      if (!shape_only) where[v].insert(c.to_device);
    }
  };
  for (const auto& c : r.copies)
    SY_CHECK(c.before_partition >= -1 && c.before_partition < static_cast<int>(r.partitions.size()),
             InvalidModel, "{}: a copy of '{}' comes before partition {}, which does not exist",
             file, c.value, c.before_partition);
  for (const auto& c : r.shape_transfers)
    SY_CHECK(c.before_partition >= 0 && c.before_partition < static_cast<int>(r.partitions.size()),
             InvalidModel, "{}: a shape transfer of '{}' names partition {}, which does not exist",
             file, c.value, c.before_partition);
  for (size_t p = 0; p < r.partitions.size(); ++p) {
    const auto& part = r.partitions[p];
    SY_CHECK(device_ok(part.device), InvalidModel, "{}: partition {} names device index {}", file,
             p, part.device);
    apply_copies(r.copies, static_cast<int>(p), false);
    std::set<const ir::Value*> shape_only;
    for (const auto& c : r.shape_transfers)
      if (c.before_partition == static_cast<int>(p)) shape_only.insert(value(c.value));
    apply_copies(r.shape_transfers, static_cast<int>(p), true);
    SY_CHECK(part.input_on_host.size() == part.inputs.size(), InvalidModel,
             "{}: partition {} has {} inputs but {} host flags", file, p, part.inputs.size(),
             part.input_on_host.size());
    std::set<const ir::Value*> local;
    for (size_t k = 0; k < part.inputs.size(); ++k) {
      const ir::Value* v = value(part.inputs[k]);
      // Constants live in every partition that reads them; they never cross as inputs.
      SY_CHECK(!v->is_constant(), InvalidModel,
               "{}: partition {} takes the constant '{}' as an input", file, p, part.inputs[k]);
      int at = part.input_on_host[k] ? 0 : part.device;
      SY_CHECK(where[v].count(at) || shape_only.count(v), InvalidModel,
               "{}: partition {} reads '{}' on {} before it is there", file, p, part.inputs[k],
               r.devices[static_cast<size_t>(at)].id);
      local.insert(v);
    }
    for (int n : part.nodes) {
      SY_CHECK(n >= 0 && static_cast<size_t>(n) < num_nodes && !seen[static_cast<size_t>(n)],
               InvalidModel, "{}: partition {} names node index {} (out of range or twice)", file,
               p, n);
      seen[static_cast<size_t>(n)] = 1;
      SY_CHECK(r.node_device[static_cast<size_t>(n)] == part.device, InvalidModel,
               "{}: partition {} holds node {} of another device", file, p, n);
      const ir::Node& node = *graph.nodes()[static_cast<size_t>(n)];
      const ops::OpTraits& traits = ops::traits(node);
      for (size_t i = 0; i < node.num_inputs(); ++i) {
        const ir::Value* in = node.input(i);
        // An ordering input made by an earlier partition is no input: it only orders the two.
        if (!in || in->is_constant() || local.count(in)) continue;
        SY_CHECK(traits.is_ordering_input(i) && (in->is_graph_input() || made.count(in)),
                 InvalidModel,
                 "{}: partition {}: {} reads '{}', which the partition neither takes nor makes",
                 file, p, node.describe(), in->name());
      }
      for (const ir::Value* out : node.outputs())
        if (out) local.insert(out);
    }
    made.insert(local.begin(), local.end());
    for (const std::string& name : part.outputs) {
      const ir::Value* v = value(name);
      SY_CHECK(local.count(v), InvalidModel,
               "{}: partition {} outputs '{}', which it does not make", file, p, name);
      where[v].insert(part.device);
    }
  }
  for (size_t n = 0; n < num_nodes; ++n)
    SY_CHECK(seen[n], InvalidModel, "{}: node {} is in no partition", file, n);
  apply_copies(r.copies, -1, false);
  for (const ir::Value* v : graph.outputs())
    SY_CHECK(v->is_constant() || where[v].count(0), InvalidModel,
             "{}: output '{}' never reaches the host", file, v->name());
}

// The file, mapped read-only into memory (copy-on-write): big constants wrap it.
struct Mapping {
  void* base = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (base) ::munmap(base, size);
  }
};

std::shared_ptr<Mapping> map_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  SY_CHECK(fd >= 0, InvalidArgument, "executable '{}': cannot open the file: {}", path,
           std::strerror(errno));
  struct stat st {};
  bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!regular) ::close(fd);
  SY_CHECK(regular, InvalidArgument, "executable '{}': not a regular file", path);
  auto m = std::make_shared<Mapping>();
  m->size = static_cast<size_t>(st.st_size);
  if (m->size > 0) {
    void* p = ::mmap(nullptr, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    SY_CHECK(p != MAP_FAILED, InvalidArgument, "executable '{}': cannot map the file: {}", path,
             std::strerror(err));
    m->base = p;
  } else {
    ::close(fd);
  }
  return m;
}

}  // namespace

bool is_executable_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(kMagic)] = {};
  if (!in.read(magic, sizeof(magic))) return false;
  return std::memcmp(magic, kMagic, sizeof(kMagic)) == 0;
}

void write_executable(const std::string& path, const CompiledModel& model,
                      const std::string& options, const std::string& cache) {
  // The weights: every constant of 1 KiB or more, 64-byte aligned in their section.
  std::vector<std::pair<const ir::Tensor*, uint64_t>> weights;  // each with its offset
  uint64_t weights_bytes = 0;
  onnx_import::ExportOptions eo;
  eo.external = [&](const ir::Tensor& t) {
    uint64_t at = align_up(weights_bytes);
    weights.emplace_back(&t, at);
    weights_bytes = at + t.nbytes();
    return std::make_pair(std::string(kWeightsLocation), at);
  };
  // The variables as they are now (one committed state): a loaded executable goes on from it.
  std::shared_ptr<const runtime::VariableValues> variables = model.executable().variables();
  eo.variable_values = variables.get();
  std::string model_bytes = onnx_import::export_model(model.graph(), eo);
  Json meta = {{"format_version", kExecutableFormatVersion},
               {"switchyard_version", SWITCHYARD_VERSION},
               {"options", Json::parse(options)},
               {"placement", record_to_json(model.placement_record())},
               {"report", report_to_json(model.placement_report())},
               {"cache", Json::parse(cache)}};
  std::string meta_bytes = meta.dump();

  const uint32_t sections = 3;
  uint64_t meta_at = align_up(kHeaderBytes + sections * kEntryBytes);
  uint64_t model_at = align_up(meta_at + meta_bytes.size());
  uint64_t weights_at = align_up(model_at + model_bytes.size());
  uint64_t file_size = weights_at + weights_bytes;

  std::string head(static_cast<size_t>(meta_at), '\0');
  std::memcpy(head.data(), kMagic, sizeof(kMagic));
  put<uint32_t>(head, 8, kExecutableFormatVersion);
  put<uint32_t>(head, 12, sections);
  put<uint64_t>(head, 16, file_size);
  const std::pair<uint64_t, uint64_t> where[] = {
      {meta_at, meta_bytes.size()}, {model_at, model_bytes.size()}, {weights_at, weights_bytes}};
  const uint32_t kinds[] = {kMeta, kModel, kWeights};
  for (uint32_t s = 0; s < sections; ++s) {
    size_t at = kHeaderBytes + s * kEntryBytes;
    put<uint32_t>(head, at, kinds[s]);
    put<uint32_t>(head, at + 4, 0);
    put<uint64_t>(head, at + 8, where[s].first);
    put<uint64_t>(head, at + 16, where[s].second);
  }

  // Written to a temporary file beside the target and renamed, with the checksum of
  // everything after the header computed on the way.
  std::filesystem::path target(path);
  std::filesystem::path tmp = target;
  static std::atomic<uint64_t> serial{0};
  tmp += fmt::format(".tmp.{}.{}", ::getpid(), serial.fetch_add(1));
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  SY_CHECK(out.good(), InvalidArgument, "executable '{}': cannot write '{}'", path, tmp.string());
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  // The header's own 32 bytes are outside the checksum (it is written into them at the end).
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  XXH3_64bits_update(state, head.data() + kHeaderBytes, head.size() - kHeaderBytes);
  uint64_t written = head.size();
  auto emit = [&](const void* data, size_t n) {
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
    XXH3_64bits_update(state, data, n);
    written += n;
  };
  const std::string zeros(kAlign, '\0');
  auto pad_to = [&](uint64_t at) { emit(zeros.data(), static_cast<size_t>(at - written)); };
  emit(meta_bytes.data(), meta_bytes.size());
  pad_to(model_at);
  emit(model_bytes.data(), model_bytes.size());
  pad_to(weights_at);
  for (const auto& [t, at] : weights) {
    pad_to(weights_at + at);
    emit(t->raw(), t->nbytes());
  }
  uint64_t checksum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  out.seekp(24);
  out.write(reinterpret_cast<const char*>(&checksum), sizeof(checksum));
  out.close();
  if (!out.good()) {
    std::filesystem::remove(tmp);
    SY_THROW(InvalidArgument, "executable '{}': writing '{}' failed (disk full?)", path,
             tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    SY_THROW(InvalidArgument, "executable '{}': cannot rename the written file into place: {}",
             path, ec.message());
  }
}

SavedExecutable read_executable(const std::string& path) {
  const std::string file = fmt::format("executable '{}'", path);
  std::shared_ptr<Mapping> m = map_file(path);
  const auto* bytes = static_cast<const unsigned char*>(m->base);
  const uint64_t size = m->size;
  SY_CHECK(size > 0, InvalidModel, "{}: the file is empty", file);
  SY_CHECK(size >= kHeaderBytes && std::memcmp(bytes, kMagic, sizeof(kMagic)) == 0, InvalidModel,
           "{}: not a saved Switchyard executable (no .syx header)", file);
  uint32_t version = get<uint32_t>(bytes + 8);
  SY_CHECK(version == kExecutableFormatVersion, Unsupported,
           "{}: format version {}; this build ({}) reads version {} only: compile the model "
           "again",
           file, version, SWITCHYARD_VERSION, kExecutableFormatVersion);
  uint64_t declared_size = get<uint64_t>(bytes + 16);
  SY_CHECK(declared_size == size, InvalidModel,
           "{}: the header says {} bytes, the file has {} (truncated or appended to)", file,
           declared_size, size);
  uint64_t checksum = XXH3_64bits(bytes + kHeaderBytes, static_cast<size_t>(size - kHeaderBytes));
  SY_CHECK(checksum == get<uint64_t>(bytes + 24), InvalidModel,
           "{}: the checksum does not match: the file is corrupted", file);
  uint32_t sections = get<uint32_t>(bytes + 12);
  SY_CHECK(sections >= 3 && sections <= kMaxSections &&
               kHeaderBytes + uint64_t{sections} * kEntryBytes <= size,
           InvalidModel, "{}: {} sections in the table", file, sections);
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> found;
  for (uint32_t s = 0; s < sections; ++s) {
    const unsigned char* e = bytes + kHeaderBytes + s * kEntryBytes;
    uint32_t kind = get<uint32_t>(e);
    uint64_t offset = get<uint64_t>(e + 8), length = get<uint64_t>(e + 16);
    SY_CHECK(offset <= size && length <= size - offset, InvalidModel,
             "{}: section {} (offset {}, {} bytes) lies outside the file ({} bytes)", file, kind,
             offset, length, size);
    SY_CHECK(offset % kAlign == 0, InvalidModel, "{}: section {} is not 64-byte aligned", file,
             kind);
    SY_CHECK(found.emplace(kind, std::make_pair(offset, length)).second, InvalidModel,
             "{}: section {} appears twice", file, kind);
  }
  for (uint32_t kind : {kMeta, kModel, kWeights})
    SY_CHECK(found.count(kind), InvalidModel, "{}: section {} is missing", file, kind);

  Reader rd(path);
  auto [meta_at, meta_len] = found[kMeta];
  Json meta;
  try {
    meta = Json::parse(bytes + meta_at, bytes + meta_at + meta_len);
  } catch (const Json::exception& e) {
    SY_THROW(InvalidModel, "{}: the metadata is not valid JSON: {}", file, e.what());
  }
  SavedExecutable saved;
  saved.path = path;
  saved.format_version = version;
  saved.switchyard_version = rd.str(meta, "switchyard_version", "the metadata");
  const Json& options = rd.field(meta, "options", "the metadata");
  SY_CHECK(options.is_object(), InvalidModel, "{}: the options are not an object", file);
  saved.options = options.dump();
  const Json& cache = rd.field(meta, "cache", "the metadata");
  SY_CHECK(cache.is_object(), InvalidModel, "{}: the cache record is not an object", file);
  saved.cache = cache.dump();
  saved.report = report_from_json(rd, rd.field(meta, "report", "the metadata"));

  auto [weights_at, weights_len] = found[kWeights];
  onnx_import::ImportOptions io;
  io.external_data = [m, bytes, weights_at = weights_at, weights_len = weights_len, file](
                         const std::string& location, uint64_t offset, uint64_t length) {
    SY_CHECK(location == kWeightsLocation, InvalidModel,
             "external data '{}' is not in the file's weights", location);
    SY_CHECK(offset <= weights_len && length <= weights_len - offset, InvalidModel,
             "its {} bytes at offset {} lie outside the weights ({} bytes)", length, offset,
             weights_len);
    SY_CHECK(offset % kAlign == 0, InvalidModel, "its offset {} is not 64-byte aligned", offset);
    onnx_import::ExternalBytes out;
    out.owner = m;
    out.data = const_cast<unsigned char*>(bytes) + weights_at + offset;
    return out;
  };
  auto [model_at, model_len] = found[kModel];
  saved.graph =
      onnx_import::import_model_from_bytes(bytes + model_at, model_len, "", path, nullptr, io);
  ops::infer_types(*saved.graph);
  saved.placement = record_from_json(rd, rd.field(meta, "placement", "the metadata"));
  check_record(rd, saved.placement, *saved.graph);
  SY_CHECK(saved.report.nodes.size() == saved.graph->nodes().size(), InvalidModel,
           "{}: the report has {} nodes, the graph {}", file, saved.report.nodes.size(),
           saved.graph->nodes().size());
  return saved;
}

std::vector<std::string> missing_devices(
    const SavedExecutable& saved,
    const std::vector<std::shared_ptr<const backends::Backend>>& devices) {
  std::vector<std::string> missing;
  std::set<int> used = {0};
  for (const auto& p : saved.placement.partitions) used.insert(p.device);
  for (int d : used) {
    const runtime::DeviceInfo& want = saved.placement.devices[static_cast<size_t>(d)];
    bool present = false;
    for (const auto& dev : devices) {
      const runtime::DeviceInfo& have = dev->device();
      if (have.id != want.id || have.kind != want.kind) continue;
      if (want.kind == "cuda" && (have.uuid != want.uuid || have.name != want.name)) continue;
      present = true;
    }
    if (!present)
      missing.push_back(want.name.empty() || want.name == want.id
                            ? want.id
                            : fmt::format("{} ({}{})", want.id, want.name,
                                          want.uuid.empty() ? "" : ", " + want.uuid));
  }
  return missing;
}

std::shared_ptr<const CompiledModel> instantiate(
    SavedExecutable saved, std::vector<std::shared_ptr<const backends::Backend>> devices,
    const CompileOptions& options) {
  std::vector<std::string> missing = missing_devices(saved, devices);
  if (!missing.empty()) {
    std::string present;
    for (const auto& d : devices) present += (present.empty() ? "" : ", ") + d->device().id;
    SY_THROW(DeviceMismatch,
             "executable '{}' was compiled for {}, which {} not present here (devices: {}); "
             "compile again, or load with allow_relower (--relower) to place it on these",
             saved.path, fmt::join(missing, ", "), missing.size() == 1 ? "is" : "are", present);
  }
  const PlacementRecord& r = saved.placement;
  std::vector<int> index_of(r.devices.size(), -1);
  for (size_t i = 0; i < r.devices.size(); ++i)
    for (size_t k = 0; k < devices.size(); ++k)
      if (devices[k]->device().id == r.devices[i].id) index_of[i] = static_cast<int>(k);
  auto map = [&](int d) {
    int k = index_of[static_cast<size_t>(d)];
    SY_CHECK(k >= 0, DeviceMismatch, "executable '{}': device {} is not present", saved.path,
             r.devices[static_cast<size_t>(d)].id);
    return k;
  };
  const ir::Graph& graph = *saved.graph;
  // An input read from host memory must be one every reading kernel of its device takes on the
  // host (Backend::host_inputs); anything else would reach the device outside its memory.
  for (size_t p = 0; p < r.partitions.size(); ++p) {
    const auto& rp = r.partitions[p];
    const backends::Backend& dev = *devices[static_cast<size_t>(map(rp.device))];
    if (dev.device().is_host) continue;
    for (size_t k = 0; k < rp.inputs.size(); ++k) {
      if (!rp.input_on_host[k]) continue;
      const ir::Value* v = graph.find_local_value(rp.inputs[k]);
      bool read = false;
      for (int n : rp.nodes) {
        const ir::Node& node = *graph.nodes()[static_cast<size_t>(n)];
        std::vector<int> host = dev.host_inputs(node);
        for (size_t i = 0; i < node.num_inputs(); ++i) {
          if (node.input(i) != v) continue;
          read = true;
          SY_CHECK(std::find(host.begin(), host.end(), static_cast<int>(i)) != host.end(),
                   InvalidModel,
                   "executable '{}': partition {} reads '{}' in host memory, which {} does not "
                   "take there ({})",
                   saved.path, p, rp.inputs[k], dev.device().id, node.describe());
        }
        SY_CHECK(node.subgraphs().empty() || !read, InvalidModel,
                 "executable '{}': partition {} reads '{}' in host memory inside a graph body",
                 saved.path, p, rp.inputs[k]);
      }
      SY_CHECK(read, InvalidModel,
               "executable '{}': partition {} takes '{}' in host memory but no node reads it",
               saved.path, p, rp.inputs[k]);
    }
  }
  placement::Placement pl;
  for (const auto& d : devices) pl.devices.push_back(d.get());
  for (size_t n = 0; n < r.node_device.size(); ++n) pl.node_device.push_back(map(r.node_device[n]));
  for (size_t p = 0; p < r.partitions.size(); ++p) {
    const auto& rp = r.partitions[p];
    backends::Partition part;
    part.index = static_cast<int>(p);
    part.device = devices[static_cast<size_t>(map(rp.device))]->device().id;
    part.graph = &graph;
    for (int n : rp.nodes) part.nodes.push_back(graph.nodes()[static_cast<size_t>(n)].get());
    for (const auto& name : rp.inputs) part.inputs.push_back(graph.find_local_value(name));
    for (const auto& name : rp.outputs) part.outputs.push_back(graph.find_local_value(name));
    part.input_on_host = rp.input_on_host;
    pl.partitions.push_back(std::move(part));
    pl.partition_device.push_back(map(rp.device));
  }
  auto copies = [&](const std::vector<PlacementRecord::Copy>& list) {
    std::vector<placement::PlannedCopy> out;
    for (const auto& c : list)
      out.push_back({graph.find_local_value(c.value), map(c.from_device), map(c.to_device),
                     c.before_partition});
    return out;
  };
  pl.copies = copies(r.copies);
  pl.shape_transfers = copies(r.shape_transfers);
  // The compile adds fusions and precisions again, as it did when the file was written.
  pl.report = std::move(saved.report);
  pl.report.fusions.clear();
  for (auto& n : pl.report.nodes) {
    n.fused_into.clear();
    n.precision.clear();
  }
  return lower_placed(std::move(saved.graph), std::move(devices), std::move(pl), options);
}

}  // namespace switchyard::compiler
