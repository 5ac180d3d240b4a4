#!/usr/bin/env bash
# shellcheck disable=SC2317 # the stage functions are called as "stage_$s"
# The GPU test suite, run ON the GPU machine from the repo root, from the bundle that
# scripts/gpu-bundle made here (.gpu/bundle.tar.xz, carried with the call). Builds nothing.
#
# usage: tests/gpu/run_gpu_suite.sh [STAGE...]     (default: every stage, in this order)
#   info         nvidia-smi -L, `switchyard devices` (did the CUDA backend load?), missing libraries
#   unit         every GPU GoogleTest executable of the bundle (unit_tests.txt), pass/fail per binary
#   conformance  the ONNX backend suite on cuda:0 (cases the CUDA backend claims), against
#                tests/gpu/expected_failures_cuda.txt
#   models       makes the five reference models there, then models_gpu_test (cpu vs cuda:0)
#   sanitize     compute-sanitizer memcheck on each GPU unit test executable
#   python       the Python package's tests (python/tests, pytest) with the bundle's package
#                (scripts/gpu-bundle --python), torch's CUDA tensors and cuda:0 among the devices
#   bench        bench/gpu/run_gpu_bench.sh: Switchyard beside PyTorch
#
# Writes each stage's full log to $OUT/<stage>.log (OUT defaults to /tmp/out), the summary table
# to $OUT/summary.txt and at the end of stdout. Keeps going after a failure; exit status 1 when a
# stage failed. Every step runs under `timeout`, inside a time budget for the whole call, so a
# hung step cannot eat the call: stages that no longer fit are reported "not run".
#
# Environment (all optional):
#   OUT                    where logs go (/tmp/out)
#   SY_DIR                 where the bundle is unpacked (/tmp/sy; unpacked again only when the
#                          bundle changed)
#   REFERENCE_MODELS       where the reference models are made and read (/tmp/models; kept
#                          between calls while the machine stays warm)
#   SY_BUDGET_S            seconds for the whole run (560: the call's limit is 600)
#   SY_<STAGE>_BUDGET_S    seconds one stage may take at most (defaults below)
#   SY_STEP_TIMEOUT_S      seconds one unit-test executable may take (120)
#   SY_SANITIZE_TIMEOUT_S  seconds one executable may take under compute-sanitizer (120)
#   SY_SANITIZE_FILTER     --gtest_filter for the sanitize stage (default: every test)
#   SY_SANITIZE_TOOLS      compute-sanitizer tools, space separated (memcheck)
#   SY_MODELS_FILTER       --gtest_filter for models_gpu_test
#   SY_CONFORMANCE_ARGS    extra conformance_runner arguments (e.g. "--folder node")
#   SY_CONFORMANCE_CASE_TIMEOUT_S  conformance_runner --timeout, seconds per case (30)
#   SY_BENCH_ARGS          extra bench/gpu/run_gpu_bench.sh arguments (e.g. "--quick")
#
# Our binaries get LD_LIBRARY_PATH=$SY_DIR/lib; python3 (torch) never does: the bundle's Debian
# libz/libgomp must not replace the GPU machine's own under torch.
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
OUT=${OUT:-/tmp/out}
SY=${SY_DIR:-/tmp/sy}
MODELS=${REFERENCE_MODELS:-/tmp/models}
BUDGET=${SY_BUDGET_S:-560}
bundle=$repo/.gpu/bundle.tar.xz
all_stages=(info unit conformance models sanitize python bench)
declare -A stage_budget=([info]=${SY_INFO_BUDGET_S:-60} [unit]=${SY_UNIT_BUDGET_S:-300}
  [conformance]=${SY_CONFORMANCE_BUDGET_S:-240} [models]=${SY_MODELS_BUDGET_S:-330}
  [sanitize]=${SY_SANITIZE_BUDGET_S:-240} [python]=${SY_PYTHON_BUDGET_S:-150}
  [bench]=${SY_BENCH_BUDGET_S:-290})
model_names=(resnet50 mobilenet_v2 squeezenet1_1 bert_base gpt_decoder)

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=("${all_stages[@]}")
for s in "${stages[@]}"; do
  [ -n "${stage_budget[$s]:-}" ] || { echo "run_gpu_suite: unknown stage '$s' (${all_stages[*]})"; exit 2; }
done

mkdir -p "$OUT"
start=$SECONDS
declare -A status=() note=() took=()

say() { echo "[$((SECONDS - start))s] $*"; }

# Seconds a step may take: at most $1, and within both the stage's and the whole run's budget
# (15 s kept for the reports). Prints 0 when less than 20 s are left.
stage_end=0
step_timeout() {
  local want=$1 left
  left=$((stage_end - SECONDS))
  [ $((start + BUDGET - SECONDS)) -lt "$left" ] && left=$((start + BUDGET - SECONDS))
  left=$((left - 15))
  [ "$left" -lt 20 ] && { echo 0; return; }
  [ "$want" -lt "$left" ] && left=$want
  echo "$left"
}

# run_sy SECONDS LOG CMD...: one of our binaries, with the bundle's libraries (and
# REFERENCE_MODELS), output appended to LOG. Returns the command's status (124: timed out).
run_sy() {
  local t=$1 log=$2
  shift 2
  timeout -k 10 "$t" env LD_LIBRARY_PATH="$SY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    REFERENCE_MODELS="$MODELS" "$@" >>"$log" 2>&1
}

# A log over 15 MiB (what a call brings back is 16 MiB a file) keeps its head and tail.
cap_log() {
  local f=$1 max=$((15 * 1048576))
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt $max ] || return 0
  { head -c $((5 * 1048576)) "$f"; printf '\n\n[... %s bytes cut ...]\n\n' "$(stat -c %s "$f")"
    tail -c $((9 * 1048576)) "$f"; } >"$f.cut" && mv "$f.cut" "$f"
}

# gtest_counts LOG -> "PASSED FAILED SKIPPED" from GoogleTest's closing lines (0 when absent).
# Failed = ran - passed - skipped: --gtest_brief=1 prints no failure count.
gtest_counts() {
  local ran p f s
  ran=$(sed -nE 's/^\[==========\] ([0-9]+) tests? from .* ran\..*/\1/p' "$1" | tail -1)
  p=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' "$1" | tail -1)
  s=$(sed -nE 's/^\[  SKIPPED \] ([0-9]+) tests?[.,].*/\1/p' "$1" | tail -1)
  if [ -n "$ran" ]; then
    f=$((ran - ${p:-0} - ${s:-0}))
  else
    f=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$1" | tail -1)
  fi
  echo "${p:-0} ${f:-0} ${s:-0}"
}

# run_gtest NAME SECONDS LOG [ARGS...]: runs bin/NAME, appends its output to LOG, prints one
# line about it; sets gt_ok (1/0), gt_passed, gt_failed, gt_skipped, gt_why (what was wrong).
run_gtest() {
  local name=$1 t=$2 log=$3 tmp rc why=""
  shift 3
  tmp=$SY/run/$name.log
  : >"$tmp"
  local t0=$SECONDS
  run_sy "$t" "$tmp" "$SY/bin/$name" --gtest_brief=1 "$@"
  rc=$?
  { echo "===== $name $* (exit $rc, $((SECONDS - t0)) s)"; cat "$tmp"; echo; } >>"$log"
  read -r gt_passed gt_failed gt_skipped < <(gtest_counts "$tmp")
  gt_ok=0
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    why=" — TIMED OUT after ${t} s"
  elif [ "$rc" -ne 0 ] && [ "$gt_failed" -eq 0 ]; then
    why=" — exit $rc without a GoogleTest failure (crash?): $(grep -v '^\s*$' "$tmp" | tail -1 | cut -c1-160)"
  elif [ "$rc" -eq 0 ] && [ "$gt_passed" -eq 0 ] && [ "$gt_skipped" -gt 0 ]; then
    why=$({ grep -m1 -o 'no GPU, CUDA test skipped.*' "$tmp" ||
            grep -m1 -A1 ': Skipped$' "$tmp" | tail -1; } | cut -c1-200)
    why=" — ALL SKIPPED: $why"
  elif [ "$rc" -eq 0 ] && [ "$gt_passed" -eq 0 ]; then
    why=" — NO TESTS RAN"
  elif [ "$rc" -eq 0 ]; then
    gt_ok=1
  fi
  gt_why=$why
  say "  $name: $gt_passed passed, $gt_failed failed, $gt_skipped skipped ($((SECONDS - t0)) s)$why"
  grep -E '^\[  FAILED  \] [A-Za-z_]' "$tmp" | sed -E 's/ \([0-9]+ ms\)$//; s/, where .*//' |
    sort -u | head -15 | sed 's/^/      /'
}

# The GPU unit-test executables of the bundle (unit_tests.txt; else by name).
unit_list() {
  if [ -s "$SY/unit_tests.txt" ]; then
    grep -v '^\s*$' "$SY/unit_tests.txt"
  else
    find "$SY/bin" -maxdepth 1 -type f \( -name 'test_gpu_*' -o -name 'gpu_*_test' -o -name 'harness_*' \) \
      -printf '%f\n' |
      sort
  fi
}

unpack() {
  if [ ! -f "$bundle" ]; then
    echo "run_gpu_suite: $bundle not found: run scripts/gpu-bundle on the build machine and" \
         "name .gpu in the call's carry"
    return 1
  fi
  local sum
  sum=$(cksum <"$bundle")
  if [ -f "$SY/.bundle" ] && [ "$(cat "$SY/.bundle")" = "$sum" ]; then
    say "bundle already unpacked in $SY"
  else
    rm -rf "$SY"
    mkdir -p "$SY"
    if ! tar -C "$SY" -xJf "$bundle" 2>/dev/null; then
      # No xz(1) there: Python's tarfile reads .tar.xz through its lzma module.
      python3 - "$bundle" "$SY" <<'PY' || return 1
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    try:
        t.extractall(sys.argv[2], filter="fully_trusted")
    except TypeError:
        t.extractall(sys.argv[2])
PY
    fi
    echo "$sum" >"$SY/.bundle"
    say "bundle unpacked in $SY ($(du -sh "$SY" | cut -f1))"
  fi
  mkdir -p "$SY/run"
}

# ensure_models LOG SECONDS NAME...: makes the missing reference models in $MODELS (through a
# fresh folder, so a killed run leaves no half-written model behind).
ensure_models() {
  local log=$1 t=$2 need=() m rc
  shift 2
  for m in "$@"; do
    [ -f "$MODELS/$m.onnx" ] && [ -f "$MODELS/$m.ref.npz" ] || need+=("$m")
  done
  if [ ${#need[@]} -eq 0 ]; then
    echo "models: all of $* already in $MODELS" >>"$log"
    return 0
  fi
  [ -f "$SY/reference/make_models.py" ] || { echo "no reference/make_models.py in the bundle" >>"$log"; return 1; }
  say "  making ${need[*]} in $MODELS (python3 make_models.py)"
  rm -rf "$MODELS.partial"
  mkdir -p "$MODELS.partial" "$MODELS"
  (cd "$SY/reference" && REFERENCE_MODELS=$MODELS.partial PYTHONUNBUFFERED=1 \
     timeout -k 10 "$t" python3 make_models.py --threads "$(nproc)" "${need[@]}") >>"$log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "make_models.py failed (exit $rc)" >>"$log"
    return 1
  fi
  for m in "${need[@]}"; do
    rm -rf "${MODELS:?}/$m".*
    mv "$MODELS.partial/$m".* "$MODELS/"
  done
  rm -rf "$MODELS.partial"
}

# --- stages: each sets status[...] (PASS, FAIL, SKIP) and note[...] ----------------------------

stage_info() {
  local log=$OUT/info.log rc missing="" f line tmp=$SY/run/devices.log cuda gpus
  for f in "$SY"/bin/* "$SY"/lib/libswitchyard*.so*; do
    if [ -f "$f" ] && [ ! -L "$f" ]; then
      line=$(LD_LIBRARY_PATH="$SY/lib" ldd "$f" 2>&1 | awk '/not found/ {print $1}' | paste -sd' ')
      [ -z "$line" ] || missing="$missing $(basename "$f"): $line;"
    fi
  done
  {
    echo "== bundle"; cat "$SY/MANIFEST"
    echo "== host"; uname -a; nproc
    echo "== nvidia-smi -L"; timeout 30 nvidia-smi -L
    echo "== nvidia-smi (query)"
    timeout 30 nvidia-smi --format=csv \
      --query-gpu=index,name,driver_version,memory.total,memory.used,clocks.max.sm
    echo "== compute-sanitizer"
    command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer
    echo "== python3 / torch"
    timeout 60 python3 -c 'import torch; print("torch", torch.__version__, "cuda",
      torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "gpus", torch.cuda.device_count())'
    echo "== unresolved libraries (ldd with LD_LIBRARY_PATH=$SY/lib)"
    echo "${missing:-none}"
  } >>"$log" 2>&1
  : >"$tmp"
  run_sy 60 "$tmp" "$SY/bin/switchyard" devices
  rc=$?
  { echo "== switchyard devices (exit $rc)"; cat "$tmp"; } >>"$log"
  say "  $(timeout 30 nvidia-smi -L 2>&1 | head -4 | paste -sd';')"
  sed 's/^/    /' "$tmp" | head -20
  cuda=$(grep -i 'cuda' "$tmp" | sed 's/^ *//' | cut -c1-100 | paste -sd';')
  gpus=$(timeout 30 nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  status[info]=FAIL
  if [ "$rc" -ne 0 ] || [ -n "$missing" ]; then
    note[info]="switchyard devices exit $rc${missing:+; unresolved:$missing}"
  elif [ "$gpus" -eq 0 ]; then
    note[info]="nvidia-smi lists no GPU; ${cuda:-no cuda line in switchyard devices}"
  elif ! grep -q 'cuda:0' "$tmp"; then
    note[info]="$gpus GPU(s), but switchyard devices lists no cuda:0: ${cuda:-no cuda line}"
  else
    status[info]=PASS
    note[info]="$gpus GPU(s); $cuda"
  fi
}

stage_unit() {
  local log=$OUT/unit.log name t n=0 bad=0 tp=0 tf=0 ts=0 notrun=()
  while IFS= read -r name; do
    [ -x "$SY/bin/$name" ] || { say "  $name: not in the bundle"; bad=$((bad + 1)); continue; }
    t=$(step_timeout "${SY_STEP_TIMEOUT_S:-120}")
    if [ "$t" -eq 0 ]; then notrun+=("$name"); continue; fi
    run_gtest "$name" "$t" "$log"
    n=$((n + 1)) tp=$((tp + gt_passed)) tf=$((tf + gt_failed)) ts=$((ts + gt_skipped))
    [ "$gt_ok" -eq 1 ] || bad=$((bad + 1))
  done < <(unit_list)
  note[unit]="$n executables: $tp passed, $tf failed, $ts skipped tests"
  [ ${#notrun[@]} -eq 0 ] || note[unit]+="; not run (time budget): ${notrun[*]}"
  if [ "$n" -eq 0 ] && [ ${#notrun[@]} -eq 0 ]; then
    status[unit]=FAIL note[unit]="no GPU unit-test executables in the bundle"
  elif [ "$bad" -gt 0 ] || [ ${#notrun[@]} -gt 0 ]; then
    status[unit]=FAIL
    note[unit]+="; $bad executable(s) not clean"
  else
    status[unit]=PASS
  fi
}

stage_conformance() {
  local log=$OUT/conformance.log t rc expected=tests/gpu/expected_failures_cuda.txt args
  [ -x "$SY/bin/conformance_runner" ] || { status[conformance]=FAIL note[conformance]="no conformance_runner in the bundle"; return; }
  [ -d "$SY/testdata" ] || { status[conformance]=FAIL note[conformance]="no testdata/ in the bundle"; return; }
  args=(--data "$SY/testdata" --device cuda:0 --claimed-only
        --in-process)
  if [ -f "$expected" ]; then
    args+=(--expected "$expected" --check)
  else
    say "  $expected not found: running without --expected/--check"
  fi
  # shellcheck disable=SC2206 # word splitting of the extra arguments is intended
  args+=(${SY_CONFORMANCE_ARGS:-})
  t=$(step_timeout 100000)
  [ "$t" -gt 0 ] || { status[conformance]=SKIP note[conformance]="not run (time budget)"; return; }
  echo "===== conformance_runner ${args[*]} (timeout $t s)" >>"$log"
  run_sy "$t" "$log" "$SY/bin/conformance_runner" "${args[@]}"
  rc=$?
  grep -E '^(FAIL|STALE) ' "$log" | head -25 | sed 's/^/    /'
  grep -E '^[a-z-]+: [0-9]+ passed, |^conformance check:' "$log" | sed 's/^/    /'
  local line
  line=$(grep -E '^conformance check:' "$log" | tail -1)
  [ -n "$line" ] || line=$(grep -E '^[a-z-]+: [0-9]+ passed, ' "$log" | paste -sd';')
  [ -n "$line" ] || line="no summary: $(grep -v '^\s*$' "$log" | tail -1 | cut -c1-160)"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    status[conformance]=FAIL note[conformance]="TIMED OUT after $t s; ${line:-no summary}"
  elif [ "$rc" -ne 0 ]; then
    status[conformance]=FAIL note[conformance]="exit $rc; ${line:-no summary}"
  else
    status[conformance]=PASS note[conformance]=${line:-no summary line}
  fi
}

stage_models() {
  local log=$OUT/models.log t rc
  t=$(step_timeout 240)
  if [ "$t" -eq 0 ] || ! ensure_models "$log" "$t" "${model_names[@]}"; then
    status[models]=FAIL note[models]="the reference models could not be made (see models.log)"
    tail -5 "$log" | sed 's/^/    /'
    return
  fi
  [ -x "$SY/bin/models_gpu_test" ] || { status[models]=FAIL note[models]="no models_gpu_test in the bundle"; return; }
  # PyTorch's own fp16/bf16 error on each model: the yardstick models_gpu_test reads.
  if [ ! -f "$MODELS/torch_precision_error.json" ]; then
    t=$(step_timeout 120)
    (cd "$SY/reference" && REFERENCE_MODELS=$MODELS timeout -k 10 "$t" \
       python3 "$repo/tests/gpu/torch_precision_error.py" "$SY/reference" "${model_names[@]}") \
      2>&1 | tee -a "$log" | sed 's/^/    /'
  fi
  t=$(step_timeout 100000)
  [ "$t" -gt 0 ] || { status[models]=SKIP note[models]="models made; test not run (time budget)"; return; }
  local filter=()
  [ -n "${SY_MODELS_FILTER:-}" ] && filter=(--gtest_filter="$SY_MODELS_FILTER")
  run_gtest models_gpu_test "$t" "$log" "${filter[@]}"
  # The test's own per-case lines: ratio and placement.
  grep -E '^\[ *(MODEL|PIPELINE) ' "$SY/run/models_gpu_test.log" | cut -c1-220 | sed 's/^/    /'
  note[models]="$gt_passed passed, $gt_failed failed, $gt_skipped skipped$gt_why"
  if [ "$gt_ok" -eq 1 ]; then status[models]=PASS; else status[models]=FAIL; fi
}

stage_sanitize() {
  local log=$OUT/sanitize.log cs f name t rc errors tool clean=0 dirty=0 skipped=0 notrun=() tmp
  cs=$(command -v compute-sanitizer)
  for f in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
    [ -z "$cs" ] && [ -x "$f" ] && cs=$f
  done
  [ -n "$cs" ] || { status[sanitize]=SKIP note[sanitize]="compute-sanitizer not found"; return; }
  local filter=()
  [ -n "${SY_SANITIZE_FILTER:-}" ] && filter=(--gtest_filter="$SY_SANITIZE_FILTER")
  while IFS= read -r name; do
    case $name in gpu_device_lost_test) continue ;; test_gpu_* | gpu_*_test) ;; *) continue ;; esac
    for tool in ${SY_SANITIZE_TOOLS:-memcheck}; do
      t=$(step_timeout "${SY_SANITIZE_TIMEOUT_S:-120}")
      if [ "$t" -eq 0 ]; then notrun+=("$name/$tool"); continue; fi
      tmp=$SY/run/sanitize.$name.$tool.log
      : >"$tmp"
      local t0=$SECONDS
      run_sy "$t" "$tmp" "$cs" --tool "$tool" --report-api-errors no --error-exitcode 1 --print-limit 20 \
        "$SY/bin/$name" --gtest_brief=1 "${filter[@]}"
      rc=$?
      { echo "===== $tool $name (exit $rc, $((SECONDS - t0)) s)"; cat "$tmp"; echo; } >>"$log"
      errors=$(sed -nE 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/p' "$tmp" | tail -1)
      local what
      if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        what="TIMED OUT after $t s (${errors:-no} errors reported so far)"
        dirty=$((dirty + 1))
      elif [ "${errors:-x}" = 0 ] && [ "$rc" -eq 0 ]; then
        what="clean"
        clean=$((clean + 1))
      elif grep -q '^\[==========\] 0 tests from 0 test suites ran' "$tmp"; then
        # SY_SANITIZE_FILTER matched none of its tests: compute-sanitizer then reports that the
        # program ended before any CUDA call, which is not a finding.
        what="no test matched the filter"
        skipped=$((skipped + 1))
      elif [ -n "$errors" ] && [ "$errors" != 0 ]; then
        what="$errors ERRORS"
        dirty=$((dirty + 1))
      else
        what="exit $rc (test failures under the sanitizer?)"
        dirty=$((dirty + 1))
      fi
      say "  $tool $name: $what ($((SECONDS - t0)) s)"
      grep -m3 -E '^========= (Invalid|Program hit|Uninitialized|Race|Barrier|Leaked)' "$tmp" |
        cut -c1-200 | sed 's/^/      /'
    done
  done < <(unit_list)
  note[sanitize]="$clean clean, $dirty not clean"
  [ "$skipped" -eq 0 ] || note[sanitize]+=", $skipped with no test matching SY_SANITIZE_FILTER"
  [ ${#notrun[@]} -eq 0 ] || note[sanitize]+="; not run (time budget): ${notrun[*]}"
  if [ "$dirty" -gt 0 ]; then status[sanitize]=FAIL
  elif [ "$clean" -eq 0 ]; then status[sanitize]=SKIP note[sanitize]+="; nothing sanitized"
  else status[sanitize]=PASS; fi
}

# The package's tests run in python3 (torch's process) with PYTHONPATH at the bundle's package
# and LD_LIBRARY_PATH at pylib/ only (our libraries and the Debian-only ones, never libz or
# libgomp, which torch's process takes from the machine).
stage_python() {
  local log=$OUT/python.log t rc summary
  if [ ! -d "$SY/python/switchyard" ]; then
    status[python]=SKIP note[python]="the bundle has no Python package (scripts/gpu-bundle --python)"
    return
  fi
  if ! python3 -c 'import pytest' 2>/dev/null; then
    status[python]=SKIP note[python]="no pytest in this machine's python3"
    return
  fi
  t=$(step_timeout 100000)
  [ "$t" -gt 0 ] || { status[python]=SKIP note[python]="not run (time budget)"; return; }
  PYTHONPATH=$SY/python LD_LIBRARY_PATH=$SY/pylib SWITCHYARD_CACHE_DIR=off \
    REFERENCE_MODELS=$MODELS timeout -k 10 "$t" python3 -m pytest -q -p no:cacheprovider \
    python/tests >>"$log" 2>&1
  rc=$?
  summary=$(grep -E '[0-9]+ (passed|failed|error)' "$log" | tail -n 1)
  tail -n 15 "$log"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status[python]=FAIL note[python]="TIMED OUT after $t s"
  elif [ "$rc" -ne 0 ]; then status[python]=FAIL note[python]="${summary:-exit $rc} (see python.log)"
  else status[python]=PASS note[python]="$summary"; fi
}

stage_bench() {
  local log=$OUT/bench.log t rc
  t=$(step_timeout 100000)
  [ "$t" -gt 0 ] || { status[bench]=SKIP note[bench]="not run (time budget)"; return; }
  # shellcheck disable=SC2086 # SY_BENCH_ARGS is split on purpose
  timeout -k 10 "$t" bench/gpu/run_gpu_bench.sh --sy "$SY" --models "$MODELS" --out "$OUT" \
    ${SY_BENCH_ARGS:-} >>"$log" 2>&1
  rc=$?
  if [ -f "$OUT/bench.md" ]; then cat "$OUT/bench.md"; else tail -20 "$log"; fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then status[bench]=FAIL note[bench]="TIMED OUT after $t s"
  elif [ "$rc" -ne 0 ]; then status[bench]=FAIL note[bench]="exit $rc (see bench.log)"
  else status[bench]=PASS note[bench]="table in bench.md"; fi
}

# --- main ----------------------------------------------------------------------------------
say "run_gpu_suite: stages ${stages[*]}; logs in $OUT; budget ${BUDGET} s"
if ! unpack; then
  for s in "${stages[@]}"; do status[$s]=FAIL note[$s]="bundle missing or not unpacked"; done
  stages_run=()
else
  stages_run=("${stages[@]}")
fi
for s in "${stages_run[@]}"; do
  : >"$OUT/$s.log"
  stage_start=$SECONDS
  stage_end=$((SECONDS + ${stage_budget[$s]}))
  if [ $((start + BUDGET - SECONDS)) -lt 35 ]; then
    status[$s]=SKIP note[$s]="not run (time budget): call again with: tests/gpu/run_gpu_suite.sh $s"
  else
    say "== $s"
    "stage_$s"
  fi
  took[$s]=$((SECONDS - stage_start))
  cap_log "$OUT/$s.log"
done

{
  echo
  echo "| stage | status | s | note |"
  echo "|---|---|---:|---|"
  for s in "${stages[@]}"; do
    echo "| $s | ${status[$s]:-?} | ${took[$s]:-0} | ${note[$s]:-} |"
  done
  echo
  echo "total $((SECONDS - start)) s; logs: $OUT/<stage>.log"
} | tee "$OUT/summary.txt"

for s in "${stages[@]}"; do
  [ "${status[$s]:-}" = FAIL ] && exit 1
done
exit 0
