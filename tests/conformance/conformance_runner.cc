// Runs the ONNX backend test suite (Debian's libonnx-testdata) on the CPU and compares with the
// stored outputs (rtol 1e-3, atol 1e-7, as the ONNX runner does). Each case runs in a forked
// child, so a crash or hang in one case is reported as that case's failure.
//
//   conformance_runner [--data DIR] [--folder node,simple,...] [--filter SUBSTR] [--verbose]
//                      [--expected FILE --check] [--timeout SECONDS] [--jobs N]
//                      [--device cuda:0 [--claimed-only]] [--in-process]
//
// Prints one line per folder: "FOLDER: N passed, N failed, N skipped". With --check, the exit
// code is non-zero when a case fails that FILE does not list, or a listed case passes.
// --device places every node on that device (fallback allow, or strict with --claimed-only,
// where a case whose nodes the device does not all claim is skipped as "not claimed").
// --in-process runs the cases in this process (no fork, no time limit): on a GPU each child
// would set up its own CUDA context, which costs more than most cases.
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "compiler/compiler.h"
#include "ir/check.h"
#include "onnx/import.h"
#include "plugins.h"

namespace fs = std::filesystem;
using namespace switchyard;

namespace {

// Out of scope for this runtime: training ops and random generators.
const std::map<std::string, std::string> kOutOfScopeOps = {
    {"Gradient", "training op (out of scope)"},
    {"Adagrad", "training op (out of scope)"},
    {"Adam", "training op (out of scope)"},
    {"Momentum", "training op (out of scope)"},
    {"RandomNormal", "random generator (out of scope)"},
    {"RandomUniform", "random generator (out of scope)"},
    {"RandomNormalLike", "random generator (out of scope)"},
    {"RandomUniformLike", "random generator (out of scope)"},
    {"Bernoulli", "random generator (out of scope)"},
    {"Multinomial", "random generator (out of scope)"},
};

struct Outcome {
  enum Kind { Pass, Fail, Skip } kind = Fail;
  std::string reason;
};

std::string compare(const std::string& what, const ir::Datum& got, const ir::Datum& want) {
  if (want.is_empty() || got.is_empty()) {
    return got.kind == want.kind ? "" : fmt::format("{}: optional presence differs", what);
  }
  if (want.is_sequence()) {
    if (!got.is_sequence()) return fmt::format("{}: expected a sequence", what);
    if (got.sequence.size() != want.sequence.size())
      return fmt::format("{}: sequence length {} != {}", what, got.sequence.size(),
                         want.sequence.size());
    for (size_t i = 0; i < want.sequence.size(); ++i) {
      std::string r = compare(fmt::format("{}[{}]", what, i), ir::Datum(got.sequence[i]),
                              ir::Datum(want.sequence[i]));
      if (!r.empty()) return r;
    }
    return "";
  }
  if (!got.is_tensor()) return fmt::format("{}: expected a tensor", what);
  const ir::Tensor& a = got.tensor;
  const ir::Tensor& e = want.tensor;
  if (a.dtype() != e.dtype())
    return fmt::format("{}: dtype {} != expected {}", what, ir::dtype_name(a.dtype()),
                       ir::dtype_name(e.dtype()));
  if (a.shape() != e.shape())
    return fmt::format("{}: shape {} != expected {}", what, ir::shape_to_string(a.shape()),
                       ir::shape_to_string(e.shape()));
  if (a.dtype() == ir::DType::String) {
    for (int64_t i = 0; i < a.numel(); ++i)
      if (a.data<std::string>()[i] != e.data<std::string>()[i])
        return fmt::format("{}: [{}] '{}' != '{}'", what, i, a.data<std::string>()[i],
                           e.data<std::string>()[i]);
    return "";
  }
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.scalar_as_double(i);
    double y = e.scalar_as_double(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (std::fabs(x - y) <= 1e-7 + 1e-3 * std::fabs(y)) continue;
    if (bad++ == 0) first = fmt::format("[{}] {} != {}", i, x, y);
  }
  if (bad) return fmt::format("{}: {} of {} values differ, first {}", what, bad, a.numel(), first);
  return "";
}

std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0;; ++i) {
    fs::path p = dir / fmt::format("{}_{}.pb", prefix, i);
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

void find_ops(const ir::Graph& g, std::set<std::string>& ops) {
  for (const auto& n : g.nodes()) {
    ops.insert(n->op_type());
    for (const ir::Graph* s : n->subgraphs()) find_ops(*s, ops);
  }
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bits (numpy has no bfloat16):
// reinterpret them where the model says bfloat16.
ir::Datum as_bfloat16_if_expected(ir::Datum d, ir::DType expected) {
  if (expected == ir::DType::BFloat16 && d.is_tensor() && d.tensor.dtype() == ir::DType::UInt16) {
    ir::Tensor& t = d.tensor;
    return ir::Datum(ir::Tensor::wrap(ir::DType::BFloat16, t.shape(), t.storage(), t.raw()));
  }
  return d;
}

// Where cases run: "" = the cpu alone; else a device id, with strict placement when
// claimed_only.
std::string g_device;
bool g_claimed_only = false;

std::shared_ptr<const compiler::CompiledModel> compile_case(std::unique_ptr<ir::Graph> graph) {
  compiler::CompileOptions options;
  options.num_threads = 1;
  options.poison_buffers = true;
  std::vector<std::shared_ptr<const backends::Backend>> devices = {
      std::make_shared<cpu::CpuBackend>()};
  if (!g_device.empty()) {
    for (auto& gpu : plugins::create_plugin_backends()) devices.push_back(std::move(gpu));
    options.policy.devices = {g_device};
    if (g_claimed_only) options.policy.fallback = placement::Fallback::Strict;
  }
  return compiler::compile(std::move(graph), std::move(devices), options);
}

Outcome run_case(const fs::path& dir) {
  // Out-of-scope ops are found in the raw model, before anything could refuse it.
  std::unique_ptr<ir::Graph> graph;
  try {
    graph = onnx_import::import_model((dir / "model.onnx").string());
  } catch (const Error& e) {
    // Training ops live in a preview domain the importer refuses; classify by the message.
    for (const auto& [op, why] : kOutOfScopeOps)
      if (std::string(e.what()).find("'" + op + "'") != std::string::npos)
        return {Outcome::Skip, why};
    if (std::string(e.what()).find("ai.onnx.preview.training") != std::string::npos)
      return {Outcome::Skip, "training op (out of scope)"};
    return {Outcome::Fail, e.what()};
  }
  std::set<std::string> ops;
  find_ops(*graph, ops);
  for (const auto& op : ops) {
    auto it = kOutOfScopeOps.find(op);
    if (it != kOutOfScopeOps.end()) return {Outcome::Skip, it->second};
  }
  std::vector<ir::Type> input_types;
  for (const ir::Value* v : graph->inputs()) input_types.push_back(v->type());
  std::vector<ir::Type> output_types;
  for (const ir::Value* v : graph->outputs()) output_types.push_back(v->type());
  std::shared_ptr<const compiler::CompiledModel> exe;
  try {
    exe = compile_case(std::move(graph));
  } catch (const Error& e) {
    if (g_claimed_only && e.code() == ErrorCode::PlacementFailed)
      return {Outcome::Skip, std::string("not claimed by ") + g_device + ": " + e.message()};
    return {Outcome::Fail, e.what()};
  }
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set", 0) == 0)
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::Fail, "no test_data_set folders"};
  for (const fs::path& set : sets) {
    try {
      auto input_files = numbered_files(set, "input");
      auto output_files = numbered_files(set, "output");
      std::vector<ir::Datum> inputs;
      for (size_t i = 0; i < input_files.size(); ++i)
        inputs.push_back(as_bfloat16_if_expected(
            onnx_import::read_value_file(input_files[i].string(),
                                         i < input_types.size() ? input_types[i] : ir::Type{}),
            i < input_types.size() ? input_types[i].dtype : ir::DType::Undefined));
      // Tests may give fewer inputs than the graph declares (trailing optional inputs).
      while (inputs.size() < input_types.size()) inputs.emplace_back();
      std::vector<ir::Datum> outputs = exe->run(std::move(inputs));
      if (outputs.size() < output_files.size())
        return {Outcome::Fail,
                fmt::format("{} outputs, expected {}", outputs.size(), output_files.size())};
      for (size_t i = 0; i < output_files.size(); ++i) {
        ir::Datum want = onnx_import::read_value_file(
            output_files[i].string(), i < output_types.size() ? output_types[i] : ir::Type{});
        if (outputs[i].is_tensor()) want = as_bfloat16_if_expected(want, outputs[i].tensor.dtype());
        std::string diff =
            compare(fmt::format("{} output {}", set.filename().string(), i), outputs[i], want);
        if (!diff.empty()) return {Outcome::Fail, diff};
      }
    } catch (const Error& e) {
      return {Outcome::Fail, e.what()};
    }
  }
  return {Outcome::Pass, ""};
}

// A case running in a child process.
struct Child {
  pid_t pid = -1;
  int fd = -1;
};

// Starts a case in a child process with a time limit.
Child start_isolated(const fs::path& dir, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeout_s));
    Outcome o;
    try {
      o = run_case(dir);
    } catch (const std::exception& e) {
      o = {Outcome::Fail, std::string("exception: ") + e.what()};
    }
    std::string msg = std::to_string(static_cast<int>(o.kind)) + o.reason;
    ssize_t written = write(fds[1], msg.data(), msg.size());
    (void)written;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Waits for a child's outcome.
Outcome finish_isolated(const Child& child, int timeout_s) {
  if (child.pid < 0) return {Outcome::Fail, "pipe() failed"};
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(child.fd, buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(child.fd);
  int status = 0;
  waitpid(child.pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return {Outcome::Fail, sig == SIGALRM ? fmt::format("timed out after {} s", timeout_s)
                                          : fmt::format("crashed with signal {}", sig)};
  }
  if (msg.empty()) return {Outcome::Fail, "no result from the child process"};
  Outcome o;
  o.kind = static_cast<Outcome::Kind>(msg[0] - '0');
  o.reason = msg.substr(1);
  std::replace(o.reason.begin(), o.reason.end(), '\n', ' ');
  return o;
}

// Why --device is unusable ("" when it is). Asked in a child process: CUDA initialised in this
// process would not survive the fork of each case.
std::string device_problem() {
  int fds[2];
  if (pipe(fds) != 0) return "pipe() failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string status;
    bool found = false;
    try {
      std::vector<std::string> statuses;
      for (const auto& d : plugins::create_plugin_backends(&statuses))
        found = found || d->device().id == g_device;
      for (const std::string& line : statuses) status += (status.empty() ? "" : "; ") + line;
    } catch (const std::exception& e) {
      status = e.what();
    }
    std::string msg = found ? "" : (status.empty() ? "not found" : status);
    ssize_t written = write(fds[1], msg.data(), msg.size());
    (void)written;
    _exit(0);
  }
  close(fds[1]);
  std::string msg;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return msg;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "/usr/share/libonnx-testdata/data";
  std::string folders = "node,pytorch-converted,pytorch-operator,simple";
  std::string filter;
  std::string expected_path;
  bool verbose = false;
  bool check = false;
  int timeout_s = 120;
  int jobs = 1;
  bool in_process = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data")
      data = next();
    else if (a == "--folder")
      folders = next();
    else if (a == "--filter")
      filter = next();
    else if (a == "--expected")
      expected_path = next();
    else if (a == "--timeout")
      timeout_s = std::stoi(next());
    else if (a == "--verbose")
      verbose = true;
    else if (a == "--check")
      check = true;
    else if (a == "--jobs")
      jobs = std::max(1, std::stoi(next()));
    else if (a == "--device")
      g_device = next();
    else if (a == "--claimed-only")
      g_claimed_only = true;
    else if (a == "--in-process")
      in_process = true;
    else {
      fmt::print(stderr, "unknown argument '{}'\n", a);
      return 2;
    }
  }
  if (!fs::exists(data)) {
    fmt::print(
        "conformance: test data folder {} not found (install libonnx-testdata); "
        "0 passed, 0 failed\n",
        data);
    return check ? 1 : 0;
  }
  if (!g_device.empty() && !in_process) {
    std::string problem = device_problem();
    if (!problem.empty()) {
      fmt::print("conformance: device {} is not available ({}); 0 passed, 0 failed\n", g_device,
                 problem);
      return check ? 1 : 0;
    }
  }
  // Expected failures: "folder/case  reason".
  std::map<std::string, std::string> expected;
  if (!expected_path.empty()) {
    std::ifstream in(expected_path);
    if (!in) {
      fmt::print(stderr, "cannot read {}\n", expected_path);
      return 2;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto space = line.find_first_of(" \t");
      std::string key = line.substr(0, space);
      expected[key] = space == std::string::npos ? "" : line.substr(space + 1);
    }
  }
  int unexpected_failures = 0, stale = 0;
  int total_pass = 0, total_fail = 0, total_skip = 0;
  for (const std::string& folder : split(folders, ',')) {
    fs::path root = fs::path(data) / folder;
    std::vector<fs::path> cases;
    if (fs::exists(root))
      for (const auto& entry : fs::directory_iterator(root))
        if (entry.is_directory() && fs::exists(entry.path() / "model.onnx") &&
            entry.path().filename().string().find(filter) != std::string::npos)
          cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    int pass = 0, fail = 0, skip = 0;
    // Up to `jobs` cases run at once; results are reported in case order.
    std::vector<Outcome> outcomes(cases.size());
    for (size_t k = 0; in_process && k < cases.size(); ++k) {
      try {
        outcomes[k] = run_case(cases[k]);
      } catch (const std::exception& e) {
        outcomes[k] = {Outcome::Fail, std::string("exception: ") + e.what()};
      }
      std::replace(outcomes[k].reason.begin(), outcomes[k].reason.end(), '\n', ' ');
    }
    for (size_t first = 0; !in_process && first < cases.size();
         first += static_cast<size_t>(jobs)) {
      size_t last = std::min(cases.size(), first + static_cast<size_t>(jobs));
      std::vector<Child> children;
      for (size_t k = first; k < last; ++k) children.push_back(start_isolated(cases[k], timeout_s));
      for (size_t k = first; k < last; ++k)
        outcomes[k] = finish_isolated(children[k - first], timeout_s);
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      const fs::path& c = cases[k];
      std::string key = folder + "/" + c.filename().string();
      const Outcome& o = outcomes[k];
      bool listed = expected.count(key) > 0;
      if (o.kind == Outcome::Pass) {
        ++pass;
        if (listed && check) {
          ++stale;
          fmt::print("STALE  {}: passes but is listed as failing ({})\n", key, expected[key]);
        } else if (verbose) {
          fmt::print("PASS   {}\n", key);
        }
      } else if (o.kind == Outcome::Skip) {
        ++skip;
        if (verbose) fmt::print("SKIP   {}: {}\n", key, o.reason);
      } else {
        ++fail;
        if (!listed && check) {
          ++unexpected_failures;
          fmt::print("FAIL   {}: {} (not in the expected-failure list)\n", key, o.reason);
        } else if (verbose) {
          fmt::print("FAIL   {}: {}\n", key, o.reason);
        }
      }
      std::fflush(stdout);
    }
    fmt::print("{}: {} passed, {} failed, {} skipped\n", folder, pass, fail, skip);
    total_pass += pass;
    total_fail += fail;
    total_skip += skip;
  }
  if (check) {
    fmt::print("conformance check: {} unexpected failures, {} stale expected-failure entries\n",
               unexpected_failures, stale);
  }
  return check && (unexpected_failures > 0 || stale > 0) ? 1 : 0;
}
