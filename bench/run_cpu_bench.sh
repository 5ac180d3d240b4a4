#!/usr/bin/env bash
# CPU latency: Switchyard beside ONNX Runtime (onnxruntime-node, CPU EP) in the same run,
# alternating the two, batch 1 (seq 128), 1 and 2 threads. Prints one JSON line per measurement
# and a Markdown table with ratios (Switchyard / ORT; < 1 means Switchyard is faster).
#
# usage: bench/run_cpu_bench.sh [BUILD_DIR] [MODELS...]   (default: build resnet50 bert_base)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet50 bert_base)
iters=${ITERS:-20}
reference=$repo/../shared/reference
ref_models=$build/reference_models
ort_dir=$build/ort_reference

mkdir -p "$ref_models"
for m in "${models[@]}"; do
  if [ ! -f "$ref_models/$m.onnx" ]; then
    (cd "$reference" && REFERENCE_MODELS=$ref_models /usr/bin/python3 make_models.py "$m")
  fi
done
if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ]; then
  mkdir -p "$ort_dir"
  cp "$reference"/{ort_bench.js,package.json,.npmrc} "$ort_dir/"
  (cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
fi

echo "| model | threads | Switchyard median ms | ORT median ms | ratio |"
echo "|---|---:|---:|---:|---:|"
for m in "${models[@]}"; do
  for t in 1 2; do
    sy=() ort=()
    # Alternate three rounds of each so drift on a shared machine hits both alike.
    for round in 1 2 3; do
      s=$(OMP_NUM_THREADS=$t "$build/tools/switchyard" bench "$ref_models/$m.onnx" \
            --inputs "$ref_models/$m.ref.npz" --threads "$t" --warmup 3 --iterations "$iters" \
            --json |
          /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["p50_ms"])')
      o=$(cd "$ort_dir" && REFERENCE_MODELS=$ref_models node ort_bench.js --model "$m" \
            --threads "$t" --iters "$iters" --warmup 3 |
          /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["median_ms"])')
      sy+=("$s") ort+=("$o")
    done
    read -r sm om ratio < <(/usr/bin/python3 - "${sy[*]}" "${ort[*]}" <<'PY'
import statistics, sys
s = statistics.median(map(float, sys.argv[1].split()))
o = statistics.median(map(float, sys.argv[2].split()))
print(f"{s:.1f} {o:.1f} {s / o:.2f}")
PY
)
    echo "| $m | $t | $sm | $om | $ratio |"
  done
done
