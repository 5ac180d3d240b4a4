#!/usr/bin/env bash
# CPU latency: Switchyard beside ONNX Runtime (onnxruntime-node, CPU EP) in the same run,
# alternating the two, batch 1 (seq 128), 1 and 2 threads. Prints one JSON line per measurement
# and a Markdown table with ratios (Switchyard / ORT; < 1 means Switchyard is faster).
#
# usage: bench/run_cpu_bench.sh [BUILD_DIR] [MODELS...]   (default: build resnet50 bert_base)
# env: ITERS (timed runs per round, default 20); BASELINE_FLAGS (e.g. "--no-fusion"): also
#      measure Switchyard with these flags in the same rounds, as the before of an optimization.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet50 bert_base)
iters=${ITERS:-20}
# shellcheck source=bench/reference_setup.sh
. "$repo/bench/reference_setup.sh"
ensure_reference_models "${models[@]}"
ensure_ort

baseline=${BASELINE_FLAGS:-}
sy_p50() {  # model threads [flags...]
  local m=$1 t=$2
  shift 2
  OMP_NUM_THREADS=$t "$build/tools/switchyard" bench "$ref_models/$m.onnx" \
    --inputs "$ref_models/$m.ref.npz" --threads "$t" --warmup 3 --iterations "$iters" "$@" \
    --json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["p50_ms"])'
}
if [ -n "$baseline" ]; then
  echo "| model | threads | Switchyard median ms | with $baseline ms | ORT median ms | ratio | ratio with $baseline |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
else
  echo "| model | threads | Switchyard median ms | ORT median ms | ratio |"
  echo "|---|---:|---:|---:|---:|"
fi
for m in "${models[@]}"; do
  for t in 1 2; do
    sy=() ort=() base=()
    # Alternate three rounds of each so drift on a shared machine hits both alike.
    for round in 1 2 3; do
      s=$(sy_p50 "$m" "$t")
      # shellcheck disable=SC2086 # the baseline flags split into words on purpose
      if [ -n "$baseline" ]; then base+=("$(sy_p50 "$m" "$t" $baseline)"); fi
      o=$(cd "$ort_dir" && REFERENCE_MODELS=$ref_models node ort_bench.js --model "$m" \
            --threads "$t" --iters "$iters" --warmup 3 |
          /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["median_ms"])')
      sy+=("$s") ort+=("$o")
    done
    read -r sm om ratio bm bratio < <(/usr/bin/python3 - "${sy[*]}" "${ort[*]}" "${base[*]:-0}" <<'PY'
import statistics, sys
s = statistics.median(map(float, sys.argv[1].split()))
o = statistics.median(map(float, sys.argv[2].split()))
b = statistics.median(map(float, sys.argv[3].split()))
print(f"{s:.1f} {o:.1f} {s / o:.2f} {b:.1f} {b / o:.2f}")
PY
)
    if [ -n "$baseline" ]; then
      echo "| $m | $t | $sm | $bm | $om | $ratio | $bratio |"
    else
      echo "| $m | $t | $sm | $om | $ratio |"
    fi
  done
done
