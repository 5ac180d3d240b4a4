// Runs in flight on one GPU (issue 16): run_async from several threads on cuda:0 with
// max_in_flight 4 gives the bits of one run at a time, while each run queues its partitions on a
// stream of its own and replays a graph instance of its own (or, past their bound, runs
// eagerly); a kernel's fault (a Gather index out of range, found on the device) fails that run
// only, naming the node, also with other runs in flight, and the next run succeeds; and two
// cuda:0 partitions with a cpu node between them, the second also reading the first's results
// on the device, stay correct, with a fault in either partition named.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "compiler/compiler.h"
#include "gpu/gpu_test_util.h"
#include "switchyard/builder.hpp"
#include "switchyard/switchyard.hpp"

namespace switchyard::testing {
namespace {

using Feeds = std::map<std::string, Tensor>;
using Outputs = std::map<std::string, Tensor>;

constexpr int kThreads = 4;
constexpr int kRunsPerThread = 24;
constexpr int64_t kRows = 64;
constexpr int64_t kWidth = 512;

Options gpu_options() {
  Options o;
  o.device = "cuda:0";
  o.fallback = "strict";
  o.max_in_flight = 4;
  o.num_threads = 2;
  return o;
}

// Row indices into a [kRows, ...] tensor: in range, or with one out of range when `bad`.
Tensor indices(uint64_t seed, bool bad) {
  std::vector<int64_t> rows(static_cast<size_t>(kRows));
  for (size_t i = 0; i < rows.size(); ++i)
    rows[i] = static_cast<int64_t>((seed * 7 + i * 13) % static_cast<uint64_t>(kRows));
  if (bad) rows[seed % rows.size()] = kRows + 5 + static_cast<int64_t>(seed);
  return int64_tensor(rows);
}

// Whether run `k` of a sequence feeds a bad index (about one run in five).
bool is_bad(int k) { return k % 5 == 3; }

// x[64,512], idx int64[64] → Relu(x + x) → Gather(rows idx) → Tanh → Softmax → · c → y: one
// cuda:0 partition of our own kernels (deterministic, so sequential and concurrent runs, eager
// or replayed, give the same bits). `gather` gets the Gather node's name.
Executable gather_model(std::string* gather) {
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {kRows, kWidth});
  Value idx = b.placeholder("idx", DType::Int64, {kRows});
  Value c = b.constant(random_tensor(DType::Float32, {kWidth}, 11), "c");
  Value a = b.relu(b.add(x, x));
  Value g = b.op("Gather", {a, idx}, {{"axis", int64_t{0}}})[0];
  *gather = g.name();
  Value y = b.mul(b.softmax(b.tanh(g)), c);
  b.outputs({{"y", y}});
  return std::move(b).build().compile(gpu_options());
}

Feeds gather_feeds(int k) {
  return {{"x", random_tensor(DType::Float32, {kRows, kWidth}, 100 + static_cast<uint64_t>(k))},
          {"idx", indices(static_cast<uint64_t>(k), is_bad(k))}};
}

// x, ia, ib → A on cuda:0: a = Relu(x + x); ga = Gather(a, ia); t = ga · c → on the cpu
// (pinned): s = Sigmoid(t) → B on cuda:0: gb = Gather(s + ga, ib); y = gb · t. B reads ga and t
// where A left them, on the device, with no copy; `gathers` gets A's and B's Gather names.
// The chain compiled with `options` (the GPU's pins, or the cpu alone for the reference).
Executable chain_model(std::string gathers[2], const Options& options) {
  GraphBuilder b;
  Value x = b.placeholder("x", DType::Float32, {kRows, kWidth});
  Value ia = b.placeholder("ia", DType::Int64, {kRows});
  Value ib = b.placeholder("ib", DType::Int64, {kRows});
  Value c = b.constant(random_tensor(DType::Float32, {kWidth}, 12), "c");
  Value a = b.relu(b.add(x, x));
  Value ga = b.op("Gather", {a, ia}, {{"axis", int64_t{0}}})[0];
  Value t = b.mul(ga, c);
  Value s = b.sigmoid(t);
  Value gb = b.op("Gather", {b.add(s, ga), ib}, {{"axis", int64_t{0}}})[0];
  Value y = b.mul(gb, t);
  gathers[0] = ga.name();
  gathers[1] = gb.name();
  b.outputs({{"y", y}});
  return std::move(b).build().compile(options);
}

Executable chain_model(std::string gathers[2]) {
  Options o = gpu_options();
  o.pins = {"op:Sigmoid=cpu"};
  return chain_model(gathers, o);
}

// Run k of the chain: a bad index in A (k % 5 == 3), in B (k % 5 == 1), or none.
Feeds chain_feeds(int k) {
  const uint64_t seed = static_cast<uint64_t>(k);
  return {{"x", random_tensor(DType::Float32, {kRows, kWidth}, 300 + seed)},
          {"ia", indices(seed, k % 5 == 3)},
          {"ib", indices(seed + 1, k % 5 == 1)}};
}

// The node whose fault run k of the chain hits ("" for none).
std::string chain_fault(int k, const std::string gathers[2]) {
  if (k % 5 == 3) return gathers[0];
  if (k % 5 == 1) return gathers[1];
  return "";
}

// What one run gives: its outputs, or the message of the Error it threw.
struct Result {
  Outputs outputs;
  std::string error;  // "" when it succeeded
};

Result result_of(std::future<Outputs>& run) {
  Result r;
  try {
    r.outputs = run.get();
  } catch (const Error& e) {
    r.error = e.what();  // "<Code>: <message>"
  }
  return r;
}

Result run_once(const Executable& exe, const Feeds& feeds) {
  std::future<Outputs> run = exe.run_async(feeds);
  return result_of(run);
}

// "" when `got` is what `want` says: the same bits, or a fault naming `fault_node` on cuda:0.
std::string check(const Result& got, const Result& want, const std::string& fault_node) {
  if (!fault_node.empty()) {
    if (got.error.empty()) return "succeeded, expected a fault in " + fault_node;
    if (got.error.rfind("InvalidArgument: ", 0) != 0 ||
        got.error.find("node '" + fault_node + "'") == std::string::npos ||
        got.error.find("out of range (found on cuda:0") == std::string::npos)
      return "failed with \"" + got.error + "\", expected an index fault in " + fault_node;
    return "";
  }
  if (!got.error.empty()) return "failed: " + got.error;
  for (const auto& [name, tensor] : want.outputs) {
    auto it = got.outputs.find(name);
    if (it == got.outputs.end()) return "no output " + name;
    if (!same_bits(it->second, tensor))
      return "output " + name + " differs from the sequential run";
  }
  return "";
}

// Every thread keeps its runs in flight (futures collected at its end), so with kThreads threads
// and max_in_flight 4 the runs overlap; run k of the sequence is `feeds(k)`.
std::vector<Result> run_from_threads(const Executable& exe,
                                     const std::function<Feeds(int)>& feeds) {
  std::vector<Result> results(kThreads * kRunsPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::pair<int, std::future<Outputs>>> runs;
      for (int r = 0; r < kRunsPerThread; ++r) {
        const int k = t * kRunsPerThread + r;
        runs.emplace_back(k, exe.run_async(feeds(k)));
      }
      for (auto& [k, run] : runs) results[static_cast<size_t>(k)] = result_of(run);
    });
  for (std::thread& t : threads) t.join();
  return results;
}

TEST(CudaAsync, RunsInFlightFromManyThreadsGiveTheSequentialBits) {
  SY_SKIP_WITHOUT_GPU();
  std::string gather;
  Executable exe = gather_model(&gather);
  EXPECT_EQ(exe.placement_summary().rfind("cuda:0: ", 0), 0u) << exe.placement_summary();
  // One run at a time first: eager, captured, then replayed runs, good and bad alike.
  const int total = kThreads * kRunsPerThread;
  std::vector<Result> want;
  for (int k = 0; k < total; ++k) {
    want.push_back(run_once(exe, gather_feeds(k)));
    EXPECT_EQ(check(want.back(), want.back(), is_bad(k) ? gather : ""), "")
        << "sequential run " << k;
  }
  // Then all of them again with runs in flight: bad runs among good ones on the same graph
  // instances, each fault failing its run only.
  std::vector<Result> got = run_from_threads(exe, gather_feeds);
  int mismatches = 0;
  for (int k = 0; k < total; ++k) {
    const std::string m =
        check(got[static_cast<size_t>(k)], want[static_cast<size_t>(k)], is_bad(k) ? gather : "");
    if (!m.empty() && ++mismatches <= 5) ADD_FAILURE() << "run " << k << " in flight: " << m;
  }
  EXPECT_EQ(mismatches, 0);
  // A fault was the last thing that happened on some instance: the next run is clean.
  EXPECT_EQ(check(run_once(exe, gather_feeds(0)), want[0], ""), "");
}

TEST(CudaAsync, ConcurrentRunsOfSeveralSignaturesKeepTheirBits) {
  SY_SKIP_WITHOUT_GPU();
  // Two batch sizes through a symbolic dim: each signature has its instances; runs of both are
  // in flight together, and every result is checked after all of them ended (a replay writing
  // into a buffer another run still reads would show).
  auto make = [] {
    GraphBuilder b;
    Value x = b.placeholder("x", DType::Float32, {Dim("n"), kWidth});
    Value c = b.constant(random_tensor(DType::Float32, {kWidth}, 21), "c");
    b.outputs({{"y", b.mul(b.softmax(b.tanh(b.add(x, x))), c)}});
    return std::move(b).build().compile(gpu_options());
  };
  Executable exe = make();
  auto feeds = [](int k) {
    return Feeds{{"x", random_tensor(DType::Float32, {k % 2 ? 8 : 32, kWidth},
                                     700 + static_cast<uint64_t>(k))}};
  };
  const int total = kThreads * kRunsPerThread;
  std::vector<Result> want;
  for (int k = 0; k < total; ++k) want.push_back(run_once(exe, feeds(k)));
  std::vector<Result> got = run_from_threads(exe, feeds);
  int mismatches = 0;
  for (int k = 0; k < total; ++k) {
    const std::string m = check(got[static_cast<size_t>(k)], want[static_cast<size_t>(k)], "");
    if (!m.empty() && ++mismatches <= 5) ADD_FAILURE() << "run " << k << " in flight: " << m;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CudaAsync, TwoCudaPartitionsAroundACpuNodeStayCorrectAndNameTheirFaults) {
  SY_SKIP_WITHOUT_GPU();
  std::string gathers[2];
  Executable exe = chain_model(gathers);
  // Two partitions on cuda:0 and the Sigmoid between them on the cpu.
  int on_gpu = 0;
  for (const auto& p : exe.internal().placement_report().partitions) on_gpu += p.device == "cuda:0";
  ASSERT_EQ(on_gpu, 2) << exe.explain("text");
  // Against the cpu: the same graph on the cpu alone, good runs only.
  Options cpu;
  cpu.compute_units = "cpu_only";
  cpu.num_threads = 2;
  std::string cpu_gathers[2];
  Executable on_cpu = chain_model(cpu_gathers, cpu);
  const int total = kThreads * kRunsPerThread;
  std::vector<Result> want;
  for (int k = 0; k < total; ++k) {
    want.push_back(run_once(exe, chain_feeds(k)));
    const std::string fault = chain_fault(k, gathers);
    EXPECT_EQ(check(want.back(), want.back(), fault), "") << "sequential run " << k;
    if (fault.empty() && k < 10) {
      Result reference = run_once(on_cpu, chain_feeds(k));
      ASSERT_TRUE(reference.error.empty()) << reference.error;
      EXPECT_TENSOR_NEAR(want.back().outputs.at("y"), reference.outputs.at("y"), 1e-5, 1e-6)
          << "run " << k;
    }
  }
  std::vector<Result> got = run_from_threads(exe, chain_feeds);
  int mismatches = 0;
  for (int k = 0; k < total; ++k) {
    const std::string m =
        check(got[static_cast<size_t>(k)], want[static_cast<size_t>(k)], chain_fault(k, gathers));
    if (!m.empty() && ++mismatches <= 5) ADD_FAILURE() << "run " << k << " in flight: " << m;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(check(run_once(exe, chain_feeds(0)), want[0], ""), "");
}

}  // namespace
}  // namespace switchyard::testing
