// `switchyard bench MODEL.onnx [...]`: time loading, compiling and the first run, then many
// runs (optionally from several threads on one executable, each keeping several runs in flight
// through run_async), and print latency percentiles and throughput.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <future>
#include <latch>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "bench_stats.h"
#include "commands.h"
#include "input_options.h"
#include "placement_options.h"
#include "require.h"
#include "switchyard/switchyard.hpp"

namespace switchyard::tools {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

struct BenchArgs {
  std::string model;
  InputOptions inputs;
  int threads = 0;
  int warmup = 3;
  int iterations = 20;  // total timed runs over all threads, unless --duration
  double duration_s = 0;
  bool duration_given = false;
  int concurrency = 1;
  int in_flight = 1;        // runs each thread keeps in flight through run_async
  int64_t deadline_ms = 0;  // per run; 0 = none
  bool json = false;
  Options options;
};

// What the timed phase's threads share: every run's latency, the first failure, and the count
// of threads still running. One mutex: it is taken once per run, which costs far less than a run.
struct TimedPhase {
  std::mutex mutex;
  std::condition_variable finished;
  std::vector<double> times_ms;
  std::exception_ptr first_error;
  int running = 0;
  CancellationToken stop;  // cancelled on the first failure: stops the other threads' runs
  size_t peak_bytes = 0;
  // Every run happens on the workers, so each thread's OpenMP team is the one that also did its
  // warmup (a team left idle on another thread competes for the cores): worker 0 makes the first
  // run, then every worker warms up, then all start the timed phase together.
  double first_run_ms = 0;
  std::latch first_done{1};
  std::unique_ptr<std::latch> warmed;  // concurrency workers + the main thread
  std::latch go{1};
  Clock::time_point end;  // --duration: set by the main thread before `go`
};

void run_worker(const Executable& exe, const std::vector<Datum>& inputs,
                const RunOptions& base_options, int index, int warmup, int runs, bool until_end,
                int in_flight, TimedPhase& phase) {
  RunOptions options = base_options;
  options.cancel = phase.stop;
  bool arrived = false;
  try {
    if (index == 0) {
      auto start = Clock::now();
      RunResult first;
      try {
        first = exe.run_values(inputs, options);
      } catch (...) {
        phase.first_done.count_down();
        throw;
      }
      phase.first_run_ms = ms_between(start, Clock::now());
      phase.peak_bytes = first.stats.peak_bytes;
      phase.first_done.count_down();
    } else {
      phase.first_done.wait();
    }
    // `count` runs (or, with `until`, runs until `end_at`) with up to `in_flight` in flight
    // through run_async, oldest first (with one in flight: plain run()s, what a caller of run()
    // sees); `record` gets each run's latency, from its start to its outputs, and its result.
    auto pump = [&](int count, bool until, Clock::time_point end_at, auto&& record) {
      std::deque<std::pair<Clock::time_point, std::future<RunResult>>> pending;
      auto collect = [&] {
        auto [start, future] = std::move(pending.front());
        pending.pop_front();
        RunResult result = future.get();
        record(ms_between(start, Clock::now()), result);
      };
      try {
        for (int k = 0; until || k < count; ++k) {
          if (phase.stop.cancelled()) break;
          if (until && k > 0 && Clock::now() >= end_at) break;
          const Clock::time_point start = Clock::now();  // before the call, which may wait
          if (in_flight == 1) {
            RunResult result = exe.run_values(inputs, options);
            record(ms_between(start, Clock::now()), result);
            continue;
          }
          if (static_cast<int>(pending.size()) >= in_flight) collect();
          pending.emplace_back(start, exe.run_values_async(inputs, options));
        }
        while (!pending.empty()) collect();
      } catch (...) {
        for (auto& [start, future] : pending) future.wait();  // they read `inputs`
        throw;
      }
    };
    // The warm-up keeps as many runs in flight as the timed runs will: what a partition prepares
    // per concurrent run (a CUDA graph instance each) is made before the clock starts.
    pump(warmup, false, Clock::time_point{}, [](double, const RunResult&) {});
    arrived = true;
    phase.warmed->arrive_and_wait();
    phase.go.wait();
    pump(runs, until_end, phase.end, [&](double ms, const RunResult& result) {
      std::lock_guard<std::mutex> lock(phase.mutex);
      phase.times_ms.push_back(ms);
      phase.peak_bytes = std::max(phase.peak_bytes, result.stats.peak_bytes);
    });
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(phase.mutex);
      // Later failures are usually the Cancelled that the first one caused.
      if (!phase.first_error) phase.first_error = std::current_exception();
      phase.stop.cancel();
    }
    if (!arrived) phase.warmed->count_down();  // the others and the main thread go on
  }
  std::lock_guard<std::mutex> lock(phase.mutex);
  --phase.running;
  phase.finished.notify_all();
}

std::string threads_per_run(int threads) {
  if (threads == 0) return "all cores per run";
  return fmt::format("{} thread{} per run", threads, threads == 1 ? "" : "s");
}

int bench_command(const BenchArgs& args) {
  require_usage(args.threads >= 0, "--threads must be >= 0, got {}", args.threads);
  require_usage(args.warmup >= 0, "--warmup must be >= 0, got {}", args.warmup);
  require_usage(args.iterations >= 1, "--iterations must be at least 1, got {}", args.iterations);
  require_usage(!args.duration_given || (std::isfinite(args.duration_s) && args.duration_s > 0),
                "--duration must be > 0 seconds, got {}", args.duration_s);
  require_usage(args.concurrency >= 1, "--concurrency must be at least 1, got {}",
                args.concurrency);
  require_usage(args.deadline_ms >= 0, "--deadline-ms must be >= 0, got {}", args.deadline_ms);
  require_usage(args.in_flight >= 1 && args.in_flight <= 1024,
                "--in-flight must be 1 to 1024, got {}", args.in_flight);
  require_usage(static_cast<int64_t>(args.in_flight) * args.concurrency <= 1024,
                "--in-flight {} x --concurrency {} is over 1024 runs in flight", args.in_flight,
                args.concurrency);
  RunOptions run_options;
  run_options.deadline_ms = args.deadline_ms;
  Options options = args.options;
  options.num_threads = args.threads;
  // Every run the threads keep in flight is admitted at once.
  options.max_in_flight = std::max(options.max_in_flight, args.in_flight * args.concurrency);

  // A saved executable or a compile-cache hit is loaded (load_ms, compile_ms 0); a model is
  // imported (load_ms) and compiled (compile_ms).
  Executable exe = warn_unhonoured(compile_file(args.model, options));
  const CompileStats& compiled = exe.compile_stats();
  std::vector<Datum> inputs = resolve_input_options(args.inputs, exe).values;

  TimedPhase phase;
  phase.running = args.concurrency;
  phase.warmed = std::make_unique<std::latch>(args.concurrency + 1);
  std::vector<std::thread> workers;
  try {
    for (int t = 0; t < args.concurrency; ++t) {
      // --iterations is the total: split as evenly as possible, the first threads one more.
      int runs = args.iterations / args.concurrency + (t < args.iterations % args.concurrency);
      workers.emplace_back(run_worker, std::cref(exe), std::cref(inputs), std::cref(run_options), t,
                           args.warmup, runs, args.duration_given, args.in_flight, std::ref(phase));
    }
  } catch (...) {
    // A thread that could not start: stop and release those that did before reporting it.
    phase.stop.cancel();
    phase.first_done.count_down();
    for (size_t i = workers.size(); i < static_cast<size_t>(args.concurrency) + 1; ++i)
      phase.warmed->count_down();
    phase.go.count_down();
    for (auto& w : workers) w.join();
    throw;
  }
  phase.warmed->arrive_and_wait();
  auto phase_start = Clock::now();
  phase.end = phase_start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(args.duration_s));
  phase.go.count_down();
  const double first_run_ms = phase.first_run_ms;
  // The main thread waits, drawing a progress line on a terminal once the phase passes 2 s.
  bool progress = !args.json && isatty(STDERR_FILENO) == 1;
  bool progress_drawn = false;
  auto last_progress = phase_start;
  {
    std::unique_lock<std::mutex> lock(phase.mutex);
    while (phase.running > 0) {
      phase.finished.wait_for(lock, std::chrono::milliseconds(100));
      auto now = Clock::now();
      if (!progress || phase.running == 0 || phase.times_ms.empty() ||
          now - phase_start < std::chrono::seconds(2) ||
          now - last_progress < std::chrono::milliseconds(500))
        continue;
      std::vector<double> so_far = phase.times_ms;
      lock.unlock();
      fmt::print(stderr, "\rbench: {} runs, {:.1f} s, p50 {:.3f} ms\033[K", so_far.size(),
                 ms_between(phase_start, now) / 1000, summarize_latencies(so_far).p50_ms);
      std::fflush(stderr);
      progress_drawn = true;
      last_progress = now;
      lock.lock();
    }
  }
  for (auto& w : workers) w.join();
  double phase_s = ms_between(phase_start, Clock::now()) / 1000;
  if (progress_drawn) fmt::print(stderr, "\r\033[K");
  if (phase.first_error) std::rethrow_exception(phase.first_error);

  LatencyStats stats = summarize_latencies(phase.times_ms);
  double load_ms = compiled.load_ms;
  double compile_ms = compiled.compile_ms;
  double throughput = static_cast<double>(stats.count) / phase_s;
  if (args.json) {
    nlohmann::json j;
    j["model"] = args.model;
    j["placement"] = exe.placement_summary();
    j["threads"] = args.threads;
    j["concurrency"] = args.concurrency;
    j["in_flight"] = args.in_flight;
    j["warmup"] = args.warmup;
    j["iterations"] = stats.count;
    j["duration_s"] = phase_s;
    j["load_ms"] = load_ms;
    j["compile_ms"] = compile_ms;
    j["cache"] = compiled.cache;
    j["first_run_ms"] = first_run_ms;
    j["p50_ms"] = stats.p50_ms;
    j["p90_ms"] = stats.p90_ms;
    j["p99_ms"] = stats.p99_ms;
    j["mean_ms"] = stats.mean_ms;
    j["min_ms"] = stats.min_ms;
    j["max_ms"] = stats.max_ms;
    j["throughput_per_s"] = throughput;
    j["peak_bytes"] = phase.peak_bytes;
    fmt::print("{}\n", j.dump());
    return 0;
  }
  fmt::print("model: {}\n", args.model);
  fmt::print("placement: {}\n", exe.placement_summary());
  fmt::print("load {:.1f} ms, compile {:.1f} ms (cache {}), first run {:.1f} ms\n", load_ms,
             compile_ms, compiled.cache, first_run_ms);
  fmt::print(
      "timed: {} run{} ({} warmup), {} x concurrency {}{}, {:.2f} s\n", stats.count,
      stats.count == 1 ? "" : "s", args.warmup, threads_per_run(args.threads), args.concurrency,
      args.in_flight > 1 ? fmt::format(" x {} in flight", args.in_flight) : std::string(), phase_s);
  fmt::print("latency ms: p50 {:.3f}  p90 {:.3f}  p99 {:.3f}  mean {:.3f}  min {:.3f}\n",
             stats.p50_ms, stats.p90_ms, stats.p99_ms, stats.mean_ms, stats.min_ms);
  fmt::print("throughput: {:.1f} runs/s\n", throughput);
  fmt::print("peak intermediate memory {:.2f} MB\n", static_cast<double>(phase.peak_bytes) / 1e6);
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Time a model: load, compile, latency and throughput");
  cmd->add_option("model", args->model, "ONNX model or saved executable (.syx)")->required();
  add_inputs_file_option(cmd, args->inputs);
  add_input_shape_options(cmd, args->inputs);
  cmd->add_option("--warmup", args->warmup, "untimed runs after the first run (default 3)");
  auto* iterations = cmd->add_option("--iterations", args->iterations,
                                     "timed runs in all, over every thread (default 20)");
  auto* duration = cmd->add_option("--duration", args->duration_s,
                                   "time runs for this many seconds instead of --iterations");
  iterations->excludes(duration);
  duration->excludes(iterations);
  cmd->add_option("--concurrency", args->concurrency,
                  "threads calling run at once on the one executable (default 1)");
  cmd->add_option("--in-flight", args->in_flight,
                  "runs each thread keeps in flight through run_async (default 1): what a "
                  "pipeline split needs to overlap its stages");
  cmd->add_option("--threads", args->threads, "threads per run (0 = all cores)");
  cmd->add_option("--deadline-ms", args->deadline_ms,
                  "stop a run that takes longer than this many milliseconds (error Cancelled)");
  cmd->add_flag("--json", args->json, "print one JSON object");
  add_placement_options(cmd, args->options);
  cmd->callback([args, duration, &exit_code] {
    args->duration_given = duration->count() > 0;
    exit_code = bench_command(*args);
  });
}

}  // namespace switchyard::tools
