#!/usr/bin/env bash
# A GPU model with a CPU-placed tail, pipelined (issue 16, point 4): resnet50 fp16 at batch 32 on
# cuda:0 with its classifier (/fc/Gemm) pinned to the cpu, `switchyard bench --in-flight N`
# (N runs in flight through run_async: frame n+1 on the GPU while frame n's tail runs on the
# cpu), against the anchor in the same call: the whole model on cuda:0. Target: with runs in
# flight the split's throughput within 10% of the GPU part alone. The anchor's rows at 1 and 4 in
# flight also measure runs in flight on the GPU alone (each on its own stream, replaying a CUDA
# graph instance of its own): at 4 they should not fall below 1 (before per-run instances, 3 of 4
# runs went kernel by kernel: 389 → 173 runs/s).
# usage: bench/gpu/cpu_tail_bench.sh [--sy DIR] [--models DIR]   (on the GPU machine, after the
#        suite unpacked the bundle and made resnet50; prints a Markdown table)
set -euo pipefail
sy=/tmp/sy
models=${REFERENCE_MODELS:-/tmp/models}
while [ $# -gt 0 ]; do
  case $1 in
    --sy) sy=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    *) echo "cpu_tail_bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
model=$models/resnet50.onnx
[ -f "$model" ] || { echo "cpu_tail_bench: $model not found" >&2; exit 1; }
bench() {  # in_flight extra-flags... -> throughput per second
  local n=$1
  shift
  LD_LIBRARY_PATH=$sy/lib "$sy/bin/switchyard" bench "$model" --device cuda:0 --precision fp16 \
    --dim batch=32 --warmup 40 --iterations 600 --in-flight "$n" --json "$@" 2>/dev/null |
    python3 -c 'import json, sys; j = json.load(sys.stdin); print("%.1f %s" % (j["throughput_per_s"], j["placement"]))'
}
echo "| configuration | in flight | runs/s | placement |"
echo "|---|---:|---:|---|"
for n in 1 4; do
  read -r gpu gpu_place <<<"$(bench "$n")"
  read -r tail tail_place <<<"$(bench "$n" --pin '/fc/Gemm=cpu')"
  echo "| all on cuda:0 (anchor) | $n | $gpu | $gpu_place |"
  echo "| /fc/Gemm on the cpu | $n | $tail | $tail_place |"
  python3 -c "import sys; t, g = float(sys.argv[1]), float(sys.argv[2]); print('| ratio (tail / anchor) | %s | %.2f | |' % (sys.argv[3], t / g))" "$tail" "$gpu" "$n"
done
