#!/usr/bin/env bash
# Generates the reference models (once) into the build tree, then runs a model test.
# usage: run_models.sh BUILD_DIR [TEST_BINARY]   (without a binary: generate only)
set -euo pipefail
build_dir=$1
test_binary=${2:-}
repo=$(cd "$(dirname "$0")/../.." && pwd)
reference=$repo/../shared/reference
models=$build_dir/reference_models
need=0
for m in resnet50 mobilenet_v2 squeezenet1_1 bert_base gpt_decoder; do
  [ -f "$models/$m.onnx" ] && [ -f "$models/$m.ref.npz" ] || need=1
done
if [ $need -eq 1 ]; then
  if [ ! -f "$reference/make_models.py" ]; then
    echo "models: $reference/make_models.py not found (../shared must sit beside the repo)" >&2
    exit 1
  fi
  echo "models: generating the reference models into $models"
  # Into a fresh folder first, so an interrupted run never leaves half-written models behind.
  rm -rf "$models.partial"
  mkdir -p "$models.partial"
  (cd "$reference" && REFERENCE_MODELS=$models.partial /usr/bin/python3 make_models.py)
  rm -rf "$models"
  mv "$models.partial" "$models"
fi
[ -n "$test_binary" ] || exit 0
SWITCHYARD_REFERENCE_MODELS=$models exec "$test_binary"
