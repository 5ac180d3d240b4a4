#!/usr/bin/env bash
# Accuracy of Switchyard on the family models (bench/models/make_family_models.py): runs each
# model on its reference inputs and prints, per model, the max abs error against the reference
# output over the max |reference| (fp32 models: expect < 1e-4). Reports; never fails on error.
#
# usage: bench/check_family_models.sh [MODELS...]   (default: every <name>.onnx in the folder)
# env: FAMILY_MODELS (default <repo>/build/family_models), SWITCHYARD (default
#      <repo>/build/tools/switchyard), THREADS (default 1), LOCK (default /tmp/sy-bench.lock:
#      every run holds it, so it never overlaps a benchmark on this shared machine)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
models_dir=${FAMILY_MODELS:-$repo/build/family_models}
switchyard=${SWITCHYARD:-$repo/build/tools/switchyard}
threads=${THREADS:-1}
lock=${LOCK:-/tmp/sy-bench.lock}

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  for f in "$models_dir"/*.onnx; do
    [ -e "$f" ] || { echo "no models in $models_dir: run bench/models/make_family_models.py" >&2; exit 1; }
    models+=("$(basename "$f" .onnx)")
  done
fi

out=$(mktemp --suffix=.npz)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
for m in "${models[@]}"; do
  rm -f "$out"
  if ! flock "$lock" "$switchyard" run "$models_dir/$m.onnx" --inputs "$models_dir/$m.ref.npz" \
      --outputs "$out" --threads "$threads" >/dev/null 2>"$err"; then
    printf '%-22s switchyard failed: %s\n' "$m" "$(grep -v '^switchyard: note:' "$err" | head -n 1)"
    continue
  fi
  /usr/bin/python3 - "$m" "$models_dir/$m.ref.npz" "$out" <<'PY'
import sys
import numpy as np

name, ref_path, got_path = sys.argv[1:]
ref = np.load(ref_path)
got = np.load(got_path)
for key in (k for k in ref.files if k.startswith("out.")):
    want, oname = ref[key], key[len("out."):]
    if oname not in got.files:
        print(f"{name:22s} {oname}: missing from Switchyard's outputs {got.files}")
        continue
    have = got[oname]
    if have.shape != want.shape:
        print(f"{name:22s} {oname}: shape {have.shape}, reference {want.shape}")
        continue
    diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
    scale = float(np.abs(want).max())
    max_err = float(diff.max()) if diff.size else 0.0
    rel = max_err / scale if scale > 0 else float("nan")
    # Elements off by more than fp32 rounding noise: how far a difference spread.
    off = int((diff > 1e-5 * scale).sum())
    print(f"{name:22s} {oname}: max abs err {max_err:.3g} / max |ref| {scale:.3g} = {rel:.2e}"
          f"  ({off} of {diff.size} elements off by > 1e-5 max|ref|)"
          f"{'' if rel <= 1e-4 else '  ABOVE 1e-4'}")
PY
done
