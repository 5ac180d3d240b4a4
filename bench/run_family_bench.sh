#!/usr/bin/env bash
# CPU latency on the family models (bench/models/make_family_models.py): Switchyard beside
# ONNX Runtime (onnxruntime-node, CPU EP) in the same run, alternating three rounds of each,
# batch 1. Prints a Markdown table (ratio = Switchyard p50 / ORT median; < 1 means Switchyard
# is faster) and the geometric mean of the ratios per thread count. A model Switchyard or ORT
# fails on gets a row with the first line of its error.
#
# usage: bench/run_family_bench.sh [MODELS...]   (default: every <name>.onnx in the folder)
# env: ITERS (timed runs per round, default 10); THREADS (default "1"; e.g. "1 2");
#      FAMILY_MODELS (default <repo>/build/family_models); BUILD_DIR (default <repo>/build);
#      LOCK (default /tmp/sy-bench.lock: every benchmark holds it, so none overlap)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${BUILD_DIR:-$repo/build}" && pwd)
models_dir=$(cd "${FAMILY_MODELS:-$build/family_models}" && pwd)
iters=${ITERS:-10}
read -r -a threads <<<"${THREADS:-1}"
lock=${LOCK:-/tmp/sy-bench.lock}
# shellcheck source=bench/reference_setup.sh
. "$repo/bench/reference_setup.sh"

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  for f in "$models_dir"/*.onnx; do
    [ -e "$f" ] || { echo "no models in $models_dir: run bench/models/make_family_models.py" >&2; exit 1; }
    models+=("$(basename "$f" .onnx)")
  done
fi
ensure_ort

err=$(mktemp)
trap 'rm -f "$err"' EXIT
first_error() { grep -v '^switchyard: note:' "$err" | grep -v '^\s*$' | head -n 1; }

sy_p50() {  # model threads -> p50 ms, or "error: ..." (Switchyard's stderr kept only for that)
  local json
  if json=$(OMP_NUM_THREADS=$2 flock "$lock" "$build/tools/switchyard" bench \
      "$models_dir/$1.onnx" --inputs "$models_dir/$1.ref.npz" --threads "$2" --warmup 3 \
      --iterations "$iters" --json 2>"$err"); then
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["p50_ms"])' <<<"$json" 2>/dev/null ||
      echo "error: no p50_ms in switchyard bench --json output"
  else
    echo "error: $(first_error)"
  fi
}
ort_median() {  # model threads -> median ms, or "error: ..."
  local json
  if json=$(cd "$ort_dir" && REFERENCE_MODELS=$models_dir flock "$lock" node ort_bench.js \
      --model "$1" --threads "$2" --iters "$iters" --warmup 3 2>"$err"); then
    /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["median_ms"])' \
      <<<"$json" 2>/dev/null || echo "error: no median_ms in ort_bench.js output"
  else
    echo "error: $(first_error)"
  fi
}

echo "| model | threads | Switchyard p50 ms | ORT median ms | ratio |"
echo "|---|---:|---:|---:|---:|"
ratios=()  # "threads ratio" per measured row
for m in "${models[@]}"; do
  for t in "${threads[@]}"; do
    sy=() ort=() failed=""
    # Alternate the two so drift on a shared machine hits both alike.
    for _ in 1 2 3; do
      s=$(sy_p50 "$m" "$t")
      if [[ $s == error:* ]]; then failed="Switchyard $s"; break; fi
      o=$(ort_median "$m" "$t")
      if [[ $o == error:* ]]; then failed="ORT $o"; break; fi
      sy+=("$s") ort+=("$o")
    done
    if [ -n "$failed" ]; then
      echo "| $m | $t | ${failed//|/\\|} | | |"
      continue
    fi
    read -r sm om ratio < <(/usr/bin/python3 - "${sy[*]}" "${ort[*]}" <<'PY'
import statistics, sys
s = statistics.median(map(float, sys.argv[1].split()))
o = statistics.median(map(float, sys.argv[2].split()))
print(f"{s:.2f} {o:.2f} {s / o:.3f}")
PY
)
    echo "| $m | $t | $sm | $om | $ratio |"
    ratios+=("$t $ratio")
  done
done

echo
printf '%s\n' "${ratios[@]}" | /usr/bin/python3 -c '
import math, sys
by_threads = {}
for line in sys.stdin:
    if line.strip():
        t, r = line.split()
        by_threads.setdefault(int(t), []).append(float(r))
for t, rs in sorted(by_threads.items()):
    gm = math.exp(sum(map(math.log, rs)) / len(rs))
    unit = "thread" if t == 1 else "threads"
    print(f"geometric mean of ratios at {t} {unit}: {gm:.3f} over {len(rs)} models")
' || true
