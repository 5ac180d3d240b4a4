#!/usr/bin/env bash
# Compile once, measured: for each model, Switchyard's cold import + compile, a compile-cache
# hit, the load of a saved .syx, and the first run after each, beside ONNX Runtime's session
# creation (onnxruntime-node InferenceSession.create, CPU EP, graph optimization "all") and its
# first run, alternating in one run. Each figure is one fresh process (so every load pays what a
# process start pays: the plugin and library initialisation), the median over ROUNDS rounds.
# Prints one JSON line per measurement and a Markdown table.
#
# usage: bench/run_compile_bench.sh [BUILD_DIR] [MODELS...]   (default: build, the five models)
# env: ROUNDS (default 5), THREADS (default 1)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(resnet50 mobilenet_v2 squeezenet1_1 bert_base gpt_decoder)
rounds=${ROUNDS:-5}
threads=${THREADS:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# shellcheck source=bench/reference_setup.sh
. "$repo/bench/reference_setup.sh"
ensure_reference_models "${models[@]}"
ensure_ort
cp "$repo/bench/ort_session.js" "$ort_dir/"

sy() {  # mode model file [flags...]: one fresh process, one timed run
  local mode=$1 m=$2 file=$3
  shift 3
  "$build/tools/switchyard" bench "$file" --inputs "$ref_models/$m.ref.npz" --threads "$threads" \
    --warmup 0 --iterations 1 "$@" --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"model": sys.argv[1], "mode": sys.argv[2], "cache": j["cache"], "ready_ms": j["load_ms"] + j["compile_ms"], "first_run_ms": j["first_run_ms"]}))' "$m" "$mode"
}

results=$work/results.jsonl
for m in "${models[@]}"; do
  # The saved executable and the cache entry, made once before the rounds.
  "$build/tools/switchyard" compile "$ref_models/$m.onnx" -o "$work/$m.syx" >/dev/null
  "$build/tools/switchyard" bench "$ref_models/$m.onnx" --inputs "$ref_models/$m.ref.npz" \
    --iterations 1 --warmup 0 --cache-dir "$work/cache" --json >/dev/null 2>&1
  for r in $(seq "$rounds"); do
    sy cold "$m" "$ref_models/$m.onnx" --cache-dir off | tee -a "$results"
    sy cache_hit "$m" "$ref_models/$m.onnx" --cache-dir "$work/cache" | tee -a "$results"
    sy syx_load "$m" "$work/$m.syx" | tee -a "$results"
    node "$ort_dir/ort_session.js" --model "$ref_models/$m.onnx" --inputs "$ref_models/$m.ref" \
      --threads "$threads" |
      /usr/bin/python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({"model": sys.argv[1], "mode": "ort", "ready_ms": j["session_create_ms"], "first_run_ms": j["first_run_ms"]}))' "$m" |
      tee -a "$results"
  done
done

/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = {}
for r in rows:
    med.setdefault((r["model"], r["mode"]), []).append(r)
def m(model, mode, key):
    return statistics.median(x[key] for x in med[(model, mode)])
print()
print("| model | ORT create ms | cold import+compile ms | cache hit ms | .syx load ms | hit / ORT | load / ORT | first run ms: ORT / cold / hit / .syx |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
for model in dict.fromkeys(r["model"] for r in rows):
    ort, cold, hit, syx = (m(model, k, "ready_ms") for k in ("ort", "cold", "cache_hit", "syx_load"))
    first = " / ".join(f'{m(model, k, "first_run_ms"):.1f}' for k in ("ort", "cold", "cache_hit", "syx_load"))
    print(f"| {model} | {ort:.1f} | {cold:.1f} | {hit:.1f} | {syx:.1f} | {hit / ort:.2f} | {syx / ort:.2f} | {first} |")
PY
