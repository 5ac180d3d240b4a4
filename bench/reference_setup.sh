# Sourced by the bench scripts that run beside ONNX Runtime: makes the reference models they
# name (../shared/reference's make_models.py) and installs onnxruntime-node (npm) once, in the
# build tree. Needs `repo` and `build` set by the caller.
reference=$repo/../shared/reference
ref_models=$build/reference_models
ort_dir=$build/ort_reference

# ensure_reference_models MODEL...: each model's .onnx and reference inputs/outputs.
ensure_reference_models() {
  mkdir -p "$ref_models"
  local m
  for m in "$@"; do
    if [ ! -f "$ref_models/$m.onnx" ]; then
      (cd "$reference" && REFERENCE_MODELS=$ref_models /usr/bin/python3 make_models.py "$m")
    fi
  done
}

# ensure_ort: onnxruntime-node and the reference runner (ort_bench.js) in $ort_dir.
ensure_ort() {
  if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ]; then
    mkdir -p "$ort_dir"
    cp "$reference"/{ort_bench.js,package.json,.npmrc} "$ort_dir/"
    (cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund >/dev/null)
  fi
}
