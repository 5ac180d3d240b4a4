#!/usr/bin/env bash
# Runs the fuzz targets built in BUILD_FUZZ (default build-fuzz): for each target, first replays
# tests/fuzz/regressions/<target>/* (every saved crash must now be refused cleanly), then fuzzes
# for FUZZ_SECONDS (default 60) from its corpus (make_corpus.sh seeds it). FUZZ_JOBS targets run
# at once (default 2, one per core). Crash inputs land in BUILD_FUZZ/artifacts/, logs in
# BUILD_FUZZ/logs/. Exits non-zero when a regression fails or any target finds a crash, leak or
# timeout. Usage: run_fuzz.sh [TARGET...] (default: every target).
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD_FUZZ:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
jobs="${FUZZ_JOBS:-2}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] ||
  targets=(fuzz_import fuzz_compile_run fuzz_npz fuzz_sim_config fuzz_executable)

mkdir -p "$build/artifacts" "$build/logs"
# Symbolized stack traces in the logs (Debian's llvm package installs llvm-symbolizer).
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && command -v llvm-symbolizer > /dev/null; then
  export ASAN_SYMBOLIZER_PATH="$(command -v llvm-symbolizer)"
fi
BUILD_FUZZ="$build" "$root/tests/fuzz/make_corpus.sh" "$build/corpus"

# The limits of every run: 2 GiB of RSS, 10 s per input; models and files up to 1 MiB.
flags=(-rss_limit_mb=2048 -timeout=10 -max_len=1048576)

run_target() {
  local target="$1"
  local bin="$build/tests/fuzz/$target" log="$build/logs/$target.log"
  local regressions=("$root/tests/fuzz/regressions/$target"/*)
  if [ -e "${regressions[0]}" ]; then
    if ! "$bin" "${flags[@]}" "${regressions[@]}" > "$build/logs/$target.regressions.log" 2>&1; then
      echo "$target: a saved regression input crashes again; see $build/logs/$target.regressions.log"
      return 1
    fi
  fi
  local rc=0
  "$bin" "${flags[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$target-" "$build/corpus/$target" > "$log" 2>&1 || rc=$?
  local execs
  execs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || true)"
  if [ "$rc" -ne 0 ]; then
    echo "$target: FOUND A CRASH after ${execs:-?} runs (exit $rc); input and log:"
    grep -o "Test unit written to .*" "$log" || true
    grep -m1 -E "ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:|escaped" "$log" || true
    echo "  $log"
    return 1
  fi
  echo "$target: ${seconds}s, ${execs:-?} runs, corpus $(ls "$build/corpus/$target" | wc -l) files, no crash"
}
export -f run_target
export build seconds root
export FLAGS_STRING="${flags[*]}"

status=0
printf '%s\n' "${targets[@]}" |
  xargs -P "$jobs" -I{} bash -c 'flags=($FLAGS_STRING); run_target "$1"' _ {} || status=1
exit $status
