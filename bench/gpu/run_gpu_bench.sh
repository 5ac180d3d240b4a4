#!/usr/bin/env bash
# GPU latency, Switchyard beside PyTorch in the same call, on the GPU machine (bench/gpu/
# torch_bench.py says what is measured and how). Uses the bundle unpacked by
# tests/gpu/run_gpu_suite.sh (`tests/gpu/run_gpu_suite.sh bench` runs this) and makes the
# reference models it needs when they are missing. About 2-4 minutes.
#
# usage: bench/gpu/run_gpu_bench.sh [--sy DIR] [--models DIR] [--out DIR] [--quick]
#                                   [--iters N] [--configs MODEL:BATCH:PRECISION,...]
#   --sy DIR      the unpacked bundle (bin/switchyard, lib/, reference/); default /tmp/sy
#   --models DIR  the reference models (made here when missing); default $REFERENCE_MODELS or
#                 /tmp/models
#   --out DIR     where bench.md goes; default $OUT or /tmp/out
#   --quick       10 timed iterations instead of 30 (a smoke run)
# Writes the Markdown table to stdout and OUT/bench.md. python3 (torch) runs WITHOUT the
# bundle's LD_LIBRARY_PATH; only the switchyard process gets it.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
sy=/tmp/sy
models=${REFERENCE_MODELS:-/tmp/models}
out=${OUT:-/tmp/out}
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --sy) sy=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) extra+=(--iters 10 --warmup 5); shift ;;
    --iters | --configs | --warmup) extra+=("$1" "$2"); shift 2 ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "run_gpu_bench: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ ! -x "$sy/bin/switchyard" ]; then
  echo "run_gpu_bench: $sy/bin/switchyard not found: run tests/gpu/run_gpu_suite.sh bench" \
       "(it unpacks .gpu/bundle.tar.xz)" >&2
  exit 1
fi

# The models the configurations use, made through a fresh folder so that a killed run leaves
# no half-written model behind.
need=()
bench_models=(resnet50 mobilenet_v2 bert_base)
[ -d "$sy/python/switchyard" ] && bench_models+=(gpt_decoder)  # the device-resident table's
for m in "${bench_models[@]}"; do
  [ -f "$models/$m.onnx" ] && [ -f "$models/$m.pt" ] || need+=("$m")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "run_gpu_bench: making ${need[*]} in $models"
  rm -rf "$models.partial"
  mkdir -p "$models.partial" "$models"
  (cd "$sy/reference" && REFERENCE_MODELS=$models.partial \
     python3 make_models.py --threads "$(nproc)" "${need[@]}")
  for m in "${need[@]}"; do
    rm -rf "${models:?}/$m".*
    mv "$models.partial/$m".* "$models/"
  done
  rm -rf "$models.partial"
fi

mkdir -p "$out"
rc=0
PYTHONUNBUFFERED=1 python3 "$repo/bench/gpu/torch_bench.py" \
  --switchyard "$sy/bin/switchyard" --lib "$sy/lib" --models "$models" \
  --reference "$sy/reference" --out "$out" "${extra[@]}" || rc=$?
# Device-resident inputs and outputs on both sides, through the bundle's Python package
# (scripts/gpu-bundle --python); torch's process gets pylib/ only (no libz, no libgomp).
if [ -d "$sy/python/switchyard" ]; then
  PYTHONUNBUFFERED=1 PYTHONPATH=$sy/python LD_LIBRARY_PATH=$sy/pylib SWITCHYARD_CACHE_DIR=off \
    python3 "$repo/bench/gpu/device_resident_bench.py" --models "$models" \
    --reference "$sy/reference" --out "$out" "${extra[@]}" || rc=$?
  [ -f "$out/bench_device.md" ] && cat "$out/bench_device.md" >>"$out/bench.md"
else
  echo "run_gpu_bench: no Python package in the bundle: the device-resident table is not made"
fi
exit "$rc"
