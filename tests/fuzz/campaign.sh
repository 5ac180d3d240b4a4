#!/usr/bin/env bash
# Runs a fuzz campaign from the bundle campaign_bundle.sh made, on the machine it was carried
# to, from the repo root: every target at once in libFuzzer's fork mode with JOBS workers each
# (default: the cores / 4), for SECONDS (default 540), replaying tests/fuzz/regressions first.
# Crashes do not stop it (-ignore_crashes): each is saved. Leaves two files in $OUT, so a
# transfer that limits the file count brings both back: summary.txt (CPU seconds, executions,
# crashes per target) and campaign.tgz (the saved inputs under artifacts/, every target's log).
# Killed early (SIGTERM, as a call's time limit does), it packs what it has first: size
# SECONDS_PER_TARGET at least 60 s below the time the call really gets.
# usage: tests/fuzz/campaign.sh BUNDLE   (env: OUT, SECONDS_PER_TARGET, JOBS, TARGETS)
set -uo pipefail
bundle="${1:?usage: campaign.sh BUNDLE}"
out="${OUT:-/tmp/out}"
seconds="${SECONDS_PER_TARGET:-540}"
cores="$(nproc)"
jobs="${JOBS:-$(( cores / 4 > 0 ? cores / 4 : 1 ))}"
dir=/tmp/sy-fuzz
mkdir -p "$dir" "$out/artifacts"
tar -C "$dir" -xJf "$bundle"
export LD_LIBRARY_PATH="$dir/lib"
flags=(-rss_limit_mb=2048 -timeout=10 -max_len=1048576)
run() {
  local t="$1"
  local regressions=(tests/fuzz/regressions/"$t"/*)
  if [ -e "${regressions[0]}" ]; then
    "$dir/bin/$t" "${flags[@]}" "${regressions[@]}" > "$out/$t.regressions.log" 2>&1 ||
      echo "$t: a saved regression crashes again" >> "$out/summary.txt"
  fi
  local TIMEFORMAT="%U %S"
  { time "$dir/bin/$t" "${flags[@]}" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 \
      -ignore_ooms=1 -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$out/artifacts/$t-" "$dir/corpus/$t" > "$out/$t.log" 2>&1 ; } 2> "$out/$t.time"
  local cpu execs crashes
  cpu="$(awk '{printf "%.0f", $1 + $2}' "$out/$t.time")"
  execs="$(grep -o '#[0-9]*' "$out/$t.log" | tail -1 | tr -d '#')"
  crashes="$(ls "$out/artifacts" | grep -c "^$t-" || true)"
  echo "$t: wall ${seconds} s, ${jobs} workers, cpu ${cpu} s, execs ${execs:-?}, saved inputs ${crashes}" >> "$out/summary.txt"
}
# One file comes back however many inputs were saved; replay them here with
# `build-fuzz/tests/fuzz/<target> FILE` for symbolized reports.
pack() {
  (cd "$out" && tar -czf campaign.tgz artifacts ./*.log ./*.time 2>/dev/null &&
    rm -rf artifacts ./*.log ./*.time)
  cat "$out/summary.txt"
}
trap 'echo "campaign: stopped early; packing what there is" >> "$out/summary.txt"; jobs -p | xargs -r kill 2>/dev/null; pack; exit 124' TERM
echo "campaign on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" > "$out/summary.txt"
for t in ${TARGETS:-fuzz_import fuzz_compile_run fuzz_npz fuzz_sim_config fuzz_executable}; do run "$t" & done
wait
pack
